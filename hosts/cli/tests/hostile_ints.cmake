# hostile_ints.cmake — included by hosts/cli/CMakeLists.txt inside if(CLOPS_BUILD_TESTS).
# libconfig 1.5 reads an integer without the L suffix as 32 bits and keeps the low bits without a
# word (4294967299 is 3, 4294967296 is 0, 9223372036854775807 is -1): every such literal a user
# writes, in a pipeline or a --set, is refused where it stands, never run wrapped.
set(wide "does not fit in 32 bits; write")
# A shape that would run as 3 x 2.
clops_pipeline_test(cli_ints_wide_shape_is_refused_at_its_line 4
  "wide_shape.cfg:4: 4294967299 ${wide} 4294967299L.*wide_shape.cfg: 1 error; nothing was run"
  RUN --dry-run ${cases}/wide_shape.cfg)
# A sweep whose second value would read 1, as the first: the width is the problem, not the names.
clops_pipeline_test(cli_ints_wide_sweep_value_is_refused_at_its_line 4
  "wide_sweep.cfg:4: 4294967297 ${wide} 4294967297L.*wide_sweep.cfg: 1 error; nothing was run"
  RUN --dry-run ${cases}/wide_sweep.cfg)
clops_pipeline_test(cli_ints_wide_sweep_set_is_refused 2
  "--set sweep.n=\\[1, 4294967297\\]: 4294967297 ${wide} 4294967297L"
  RUN --dry-run "--set=sweep.n=[1, 4294967297]" ${cases}/sweep.cfg)
# --set of a param (0 and -1 once wrapped) and of any other setting (a seed of 2^64 - 1).
clops_pipeline_test(cli_ints_wide_param_set_is_refused 2
  "--set params.n=4294967296: 4294967296 ${wide} 4294967296L"
  RUN --dry-run --set params.n=4294967296 ${cases}/wide_ints.cfg)
clops_pipeline_test(cli_ints_int64_max_param_set_is_refused 2
  "--set params.n=9223372036854775807: 9223372036854775807 ${wide} 9223372036854775807L"
  RUN --dry-run --set params.n=9223372036854775807 ${cases}/wide_ints.cfg)
clops_pipeline_test(cli_ints_wide_setting_set_is_refused 2
  "--set tensors.\\[0\\].seed=9223372036854775807: 9223372036854775807 ${wide} 9223372036854775807L"
  RUN --dry-run "--set=tensors.[0].seed=9223372036854775807" ${cases}/wide_ints.cfg)
# Written with L, 64-bit values are read whole, in the file and in a --set: 4294967299L -
# 4294967297 is an extent of 2, 4294967300L one of 3.
clops_pipeline_test(cli_ints_l_suffix_reads_64_bits 0
  "A +random \\(seed 4294967299\\) +2x2 +f64.*Valid; nothing was run"
  RUN --dry-run ${cases}/wide_ints.cfg)
clops_pipeline_test(cli_ints_l_suffix_in_a_set_reads_64_bits 0
  "A +random \\(seed 8589934592\\) +3x2 +f64.*Valid; nothing was run"
  RUN --dry-run --set params.big=4294967300L "--set=tensors.[0].seed=8589934592L"
      ${cases}/wide_ints.cfg)
