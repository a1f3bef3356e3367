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
