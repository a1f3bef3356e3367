# hostile_gather_paths.cmake — included by hosts/cli/CMakeLists.txt inside if(CLOPS_BUILD_TESTS).
# More shards than a sweep can have runs: refused at the option, with the limit, instead of
# writing a manifest that its own reader refuses.
clops_cli_test(cli_shard_count_over_the_limit_is_refused 2
               "--shard 0/1000001: 1000001 shards; at most 1000000 \\(as many as a sweep can have runs\\)"
               run --shard 0/1000001 --output-dir ${PROJECT_BINARY_DIR}/cli-test-gather-paths/over
               ${CMAKE_CURRENT_SOURCE_DIR}/tests/gather_paths.cfg)
