# The `clops` command's end-to-end tests in the Windows build (cmake/mingw-w64.cmake), run by
# ctest under Wine on PoCL through CMAKE_CROSSCOMPILING_EMULATOR (.ci/wine-run). Included by
# ../CMakeLists.txt after the unit suites (test_json, test_sha256, test_shard, the params and
# progress suites), which run under Wine as they are. Windows programs see the tree on drive Z:.
# Left to Linux: test_formats (fork, setrlimit, FIFOs), the Slurm and MPI tests (clops slurm is
# refused on Windows: slurm_win32.c), SIGTERM (Windows has none; Ctrl-C is tested), FIFO inputs,
# and the Python and shell checks of the JSON documents and shards.
set(wine_run ${CMAKE_CROSSCOMPILING_EMULATOR})
set(win_env "CLOPS_LIBRARY=Z:$<TARGET_FILE:clops>" "LOCALAPPDATA=Z:${PROJECT_BINARY_DIR}/test-cache")

# clops_wine_test(NAME RC REGEX [RUN args...] [AFTER check_outputs args...]): clops.exe under
# Wine with `args`, its exit code and output checked by expect.cmake; AFTER: check_outputs.exe
# then reads the files it wrote in the test's own directory, which `run` writes as --output-dir.
function(clops_wine_test name rc regex)
  cmake_parse_arguments(T "" "" "RUN;AFTER" ${ARGN})
  set(dir ${PROJECT_BINARY_DIR}/cli-test-out/${name})
  set(after "")
  if(T_AFTER)
    set(after "${wine_run};$<TARGET_FILE:check_outputs>;${T_AFTER}")
  endif()
  string(REPLACE "@DIR@" "Z:${dir}" run "${T_RUN}")
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DEXPECT_RC=${rc} "-DEXPECT_REGEX=${regex}"
                   "-DCOMMAND=${wine_run};$<TARGET_FILE:clops_cli>;${run}" "-DCLEAN=${dir}"
                   "-DAFTER=${after}" -P ${expect}
           WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${win_env}" TIMEOUT 600)
endfunction()

clops_wine_test(cli_wine_version_names_the_dll 0 "libclops [0-9.]+ \\(ABI 1\\.[0-9]+.*clops\\.dll"
  RUN --version)
clops_wine_test(cli_wine_devices_marks_pool_device 0 "\\* device 0 \\(primary\\)" RUN devices)
clops_wine_test(cli_wine_ops_gemm_lists_parameters 0 "trans_a.*enum" RUN ops gemm)
# Every problem of a bad pipeline, each with its file and line, before anything runs.
clops_wine_test(cli_wine_pipeline_errors_name_file_and_line 4
  "bad_pipeline.cfg:4: .*unknown key 'sahpe'.*unknown operator 'gemmm'.*nothing was run"
  RUN run Z:${cases}/bad_pipeline.cfg)
clops_wine_test(cli_wine_slurm_is_refused_naming_why 1
  "clops: slurm: not available in the Windows build: .*Linux clops.*Slurm cluster"
  RUN slurm Z:${cases}/zoom_shards.cfg)

# Ctrl-C in the middle of a long LU (Wine turns SIGINT into the console's CTRL_C_EVENT): the
# call cancelled and waited for, exit status 130, the step named, its output not written, as
# cli_sigINT_cancels_the_running_step on Linux.
add_test(NAME cli_wine_ctrl_c_cancels_the_running_step
         COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${wine_run};$<TARGET_FILE:clops_cli>"
                 -DPIPELINE=${cases}/interrupted_lu.cfg -DOUT_DIR=${PROJECT_BINARY_DIR}/cli-test-ctrl-c
                 -DSIGNAL=INT -DEXPECT_RC=130 -DOUTPUT=lu.npy
                 "-DEXPECT_REGEX=clops: interrupted \\(Ctrl-C \\(SIGINT\\)\\): steps\\[0\\] \\(lu, [^)]*interrupted_lu.cfg:11\\) cancelled; outputs not written"
                 -P ${cases}/interrupt_run.cmake
         WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(cli_wine_ctrl_c_cancels_the_running_step PROPERTIES
  ENVIRONMENT "${win_env}" TIMEOUT 300)

# The demo pipeline as on Linux (cli_demo_pipeline_passes_checks): 64 x 64 matrices through
# GEMM, LU, lu_solve and solve, each residual within LAPACK's tests' bound, and every pixel of
# the Mandelbrot image the host reference's; then the files read back: shapes, the CSV the same
# numbers as the .npy, the PNG the reference image. A build without libpng refuses .png outputs
# (formats_png_none.c), so the image goes to a .raw file there and the run's check stands for it.
set(demo_run run --output-dir @DIR@ ${small_demo})
set(demo_after ${demo_files})
if(PNG_FOUND)
  list(PREPEND demo_after ${demo_png} --)
else()
  list(APPEND demo_run --set "outputs.[4].file=\"out/mandelbrot.raw\"")
  clops_wine_test(cli_wine_png_output_refused_without_libpng 4
    "outputs\\[4\\].*cannot write 'out/mandelbrot.png': this clops was built without libpng.*nothing was run"
    RUN run --output-dir @DIR@ Z:${pipelines}/demo.cfg)
endif()
clops_wine_test(cli_demo_pipeline_runs_under_wine 0 "${demo_checks}"
  RUN ${demo_run} Z:${pipelines}/demo.cfg AFTER ${demo_after})

# One lasting Wine server for them all (tests/windows.cmake's fixture), the unit suites too.
if(wine_run)
  get_property(cli_windows_tests DIRECTORY PROPERTY TESTS)
  set_tests_properties(${cli_windows_tests} PROPERTIES FIXTURES_REQUIRED wine)
endif()
