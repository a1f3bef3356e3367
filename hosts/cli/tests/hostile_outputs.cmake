# hostile_outputs.cmake — included by hosts/cli/CMakeLists.txt inside if(CLOPS_BUILD_TESTS).
# An output name is validated as the run writes it, a sweep's values in it: ".npy" swept over
# name = "" becomes ".npy-name=", which no writer takes. Refused with file:line before any run,
# as --dry-run refuses it, rather than by the writer after the steps have run.
set(bad_swept_name "sweep_output_name.cfg:10: outputs\\[1\\]: cannot write '[.]npy-name=': unknown format; the file name must end in [.]npy")
clops_pipeline_test(cli_sweep_output_name_refused_before_running 4
  "${bad_swept_name}.*2 of 2 runs are invalid \\(0, 1\\); nothing was run"
  RUN ${cases}/sweep_output_name.cfg
  ABSENT ${out}/cli_sweep_output_name_refused_before_running/t-name=.npy)
clops_pipeline_test(cli_sweep_output_name_refused_by_dry_run 4
  "${bad_swept_name}.*nothing was run"
  RUN --dry-run ${cases}/sweep_output_name.cfg)
# Three outputs that name one file (x.npy, ./x.npy, sub/../x.npy): each would replace the one
# before, its data lost with exit 0, and a shard's manifest would list the file three times.
# Names are compared normalised, and refused at file:line before anything runs, --dry-run too.
string(CONCAT same_output
       "same_output.cfg:10: outputs\\[1\\]: '[.]/x[.]npy' is the file outputs\\[0\\] writes "
       "\\('x[.]npy', [^)]*same_output.cfg:9\\): each output needs a file of its own"
       ".*same_output.cfg:11: outputs\\[2\\]: 'sub/[.][.]/x[.]npy' is the file outputs\\[0\\] "
       "writes \\('x[.]npy', [^)]*same_output.cfg:9\\).*same_output.cfg: 2 errors; nothing was run")
clops_pipeline_test(cli_same_output_file_refused_by_dry_run 4 "${same_output}"
  RUN --dry-run ${cases}/same_output.cfg)
clops_pipeline_test(cli_same_output_file_refused_before_running 4 "${same_output}"
  RUN ${cases}/same_output.cfg ABSENT ${PROJECT_BINARY_DIR}/cli-test-out/cli_same_output_file_refused_before_running/x.npy)
# A name that is not UTF-8 could never be gathered: the manifest records it with U+FFFD.
# Refused at validation, its bytes shown escaped.
clops_pipeline_test(cli_non_utf8_output_name_refused 4
  "non_utf8_output.cfg:8: outputs\\[0\\]: 'x\\\\xff[.]npy' is not UTF-8 \\(byte 1 is 0xff\\); output names must be UTF-8.*nothing was run"
  RUN --dry-run ${cases}/non_utf8_output.cfg)
# A shard's manifest lists its outputs relative to the output directory, and gather reads only
# there: an absolute name or one that leaves the directory would be written, then refused by
# gather and the resume check, and the shard would run again on every resume. Refused at
# validation under --shard (a run of its own may still write anywhere).
foreach(case absolute parent)
  if(case STREQUAL "absolute")
    set(name ${PROJECT_BINARY_DIR}/cli-test-out/shard_absolute.npy)
  else()
    set(name ../shard_parent.npy)
  endif()
  clops_pipeline_test(cli_shard_output_${case}_name_refused 4
    "one_output.cfg: outputs\\[0\\]: '[^']*shard_${case}[.]npy' is not under the output directory: a shard's outputs must be.*nothing was run"
    RUN --shard 0/1 "--set=outputs.[0].file=\"${name}\"" ${cases}/one_output.cfg
    ABSENT ${name})
endforeach()
clops_pipeline_test(cli_unsharded_output_may_be_absolute 0 "Valid; nothing was run"
  RUN --dry-run "--set=outputs.[0].file=\"${PROJECT_BINARY_DIR}/cli-test-out/unsharded.npy\""
      ${cases}/one_output.cfg)
