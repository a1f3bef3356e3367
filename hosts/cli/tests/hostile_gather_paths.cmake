# hostile_gather_paths.cmake — included by hosts/cli/CMakeLists.txt inside if(CLOPS_BUILD_TESTS).
# What `clops gather` and the resume check of `clops run --shard` open when a manifest or the
# files it lists are hostile (tests/check_gather_paths.py, one case a test): a FIFO as an output
# or as the manifest is refused without blocking (the TIMEOUT and the script's own limit turn a
# hang into a failure), a manifest linked to /dev/zero or over 1 GiB is refused unread, a name
# that is absolute or leaves the output directory is refused even when the file it points to is
# intact, missing and changed files are not counted intact, control characters are escaped.
foreach(case fifo_output fifo_manifest dev_zero_manifest huge_manifest absolute_name dot_dot_name
             intact_counts control_characters)
  add_test(NAME cli_gather_paths_${case}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_gather_paths.py ${case}
                   $<TARGET_FILE:clops_cli> ${CMAKE_CURRENT_SOURCE_DIR}/tests/gather_paths.cfg
                   ${PROJECT_BINARY_DIR}/cli-test-gather-paths/${case}/out
           WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(cli_gather_paths_${case} PROPERTIES
    ENVIRONMENT "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache" TIMEOUT 300)
  if(CLOPS_SANITIZE)
    set_property(TEST cli_gather_paths_${case} APPEND PROPERTY ENVIRONMENT CLOPS_TEST_SANITIZED=1)
  endif()
endforeach()
# More shards than a sweep can have runs: refused at the option, with the limit, instead of
# writing a manifest that its own reader refuses.
clops_cli_test(cli_shard_count_over_the_limit_is_refused 2
               "--shard 0/1000001: 1000001 shards; at most 1000000 \\(as many as a sweep can have runs\\)"
               run --shard 0/1000001 --output-dir ${PROJECT_BINARY_DIR}/cli-test-gather-paths/over
               ${CMAKE_CURRENT_SOURCE_DIR}/tests/gather_paths.cfg)
