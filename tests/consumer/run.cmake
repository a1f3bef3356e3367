# run.cmake — builds and runs tests/consumer the way a user of clops would, with no
# CLOPS_LIBRARY and no LD_LIBRARY_PATH, and checks the numbers each program prints.
#   cmake -DMODE=package|pkgconfig|subdirectory -DSOURCE_DIR=<clops tree> -DBUILD_DIR=<its build>
#         -DWORK=<scratch dir> [-DPRELOAD="<sanitizer runtimes>"] -P run.cmake
#   package       cmake --install into WORK/prefix, then find_package(clops 1 CONFIG)
#   pkgconfig     cmake --install into WORK/prefix, then cc with pkg-config's flags
#   subdirectory  the source tree added with add_subdirectory()
#   fetchcontent  the source tree added with FetchContent_MakeAvailable()
#   system        clops installed in /usr (from the .deb packages: .ci/debs), both ways, and
#                 the Fortran example of hosts/fortran/README.md with the installed module source
cmake_minimum_required(VERSION 3.19)
foreach(var MODE SOURCE_DIR BUILD_DIR WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()
set(here ${CMAKE_CURRENT_LIST_DIR})
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# Runs a command; stops the test with its output when it fails.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# Runs a program as a user would (no CLOPS_LIBRARY, no LD_LIBRARY_PATH); its output must match.
# With -DPRELOAD=..., the sanitizer runtimes a sanitized libclops needs in a program that was not
# built with them (the sanitizer build's ctest), and leak checking off for that program.
set(preload "")
if(PRELOAD)
  set(preload "LD_PRELOAD=${PRELOAD}" "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0")
endif()
function(expect program regex)
  step("${program}" ${CMAKE_COMMAND} -E env --unset=CLOPS_LIBRARY --unset=LD_LIBRARY_PATH
       ${preload} ${program} ${ARGN})
  if(NOT step_output MATCHES "${regex}")
    message(FATAL_ERROR "${program}: expected output matching '${regex}', got:\n${step_output}")
  endif()
  message(STATUS "${program}: ${step_output}")
endfunction()

# Writes to OUT the first ```LANG block of the Markdown file DOC that follows the line AFTER:
# a program exactly as the documentation shows it.
function(code_block doc after lang out)
  file(READ ${doc} text)
  string(FIND "${text}" "${after}" at)
  string(SUBSTRING "${text}" ${at} -1 text)
  string(FIND "${text}" "```${lang}\n" begin)
  string(LENGTH "```${lang}\n" fence)
  math(EXPR begin "${begin} + ${fence}")
  string(SUBSTRING "${text}" ${begin} -1 text)
  string(FIND "${text}" "\n```" end)
  string(SUBSTRING "${text}" 0 ${end} text)
  file(WRITE ${out} "${text}\n")
endfunction()

# The README's C program.
code_block(${SOURCE_DIR}/README.md "## A tour of the API" c ${WORK}/tour.c)

set(tour_c "C = \\[8 10; 20 22\\]")
set(tour_cpp "C = \\[4 5; 10 11\\]")
set(blas "C = \\[4 5; 10 11\\] x = \\[0.8 1.4\\] info = 0")
set(prefix ${WORK}/prefix)
set(prefix_re ${prefix})
set(pc "PKG_CONFIG_PATH=${prefix}/lib/pkgconfig:${prefix}/share/pkgconfig")
set(use_cmake OFF)
set(use_pkgconfig OFF)
if(MODE STREQUAL "package")
  set(use_cmake ON)
  set(cmake_args -DCMAKE_PREFIX_PATH=${prefix})
elseif(MODE STREQUAL "pkgconfig")
  set(use_pkgconfig ON)
elseif(MODE STREQUAL "subdirectory")
  set(use_cmake ON)
  set(cmake_args -DCLOPS_TREE=${SOURCE_DIR})
elseif(MODE STREQUAL "fetchcontent")
  set(use_cmake ON)
  set(cmake_args -DCLOPS_FETCH=${SOURCE_DIR})
elseif(MODE STREQUAL "system")
  set(use_cmake ON)
  set(use_pkgconfig ON)
  set(prefix /usr)
  set(prefix_re "(/usr)?") # merged /usr: the dynamic linker may report /lib/...
  set(pc "CLOPS_CONSUMER=system") # pkg-config's own search path
else()
  message(FATAL_ERROR
          "run.cmake: MODE=${MODE}: expected package, pkgconfig, subdirectory, fetchcontent or system")
endif()

if(MODE STREQUAL "package" OR MODE STREQUAL "pkgconfig")
  step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  file(GLOB pcdirs ${prefix}/lib/*/pkgconfig)
  foreach(dir ${pcdirs})
    string(APPEND pc ":${dir}")
  endforeach()
endif()

set(CLOPS_TREE_MODE OFF)
if(MODE STREQUAL "subdirectory" OR MODE STREQUAL "fetchcontent")
  set(CLOPS_TREE_MODE ON)
endif()
if(use_cmake)
  step("configuring the consumer" ${CMAKE_COMMAND} -S ${here} -B ${WORK}/build ${cmake_args}
       -DTOUR_SOURCE=${WORK}/tour.c)
  step("building the consumer" ${CMAKE_COMMAND} --build ${WORK}/build -j2
       --target tour tour_cpp blas)
  expect(${WORK}/build/tour "${tour_c}")
  expect(${WORK}/build/tour_cpp "${tour_cpp}")
  expect(${WORK}/build/blas "${blas}")
  file(READ ${WORK}/build/plugin_path.txt plugin)
  if(NOT CLOPS_TREE_MODE AND NOT plugin MATCHES "^${prefix}/lib[^/]*(/[^/]+)?/libclops\\.so")
    message(FATAL_ERROR "$<TARGET_FILE:clops::plugin> is ${plugin}, not under ${prefix}")
  endif()
  if(NOT EXISTS ${plugin})
    message(FATAL_ERROR "$<TARGET_FILE:clops::plugin> is ${plugin}, which does not exist")
  endif()
endif()

if(use_pkgconfig)
  set(pkg ${CMAKE_COMMAND} -E env ${pc} sh -c)
  set(plugin_define "-DCLOPS_PLUGIN_PATH=\"\\\"$(pkg-config --variable=plugin clops)\\\"\"")
  step("cc with pkg-config clops" ${pkg} "cc ${WORK}/tour.c -o ${WORK}/tour_pc \
$(pkg-config --cflags --libs clops) ${plugin_define}")
  expect(${WORK}/tour_pc "${tour_c}")
  step("c++ with pkg-config clops" ${pkg} "c++ -std=c++17 ${here}/tour.cpp -o ${WORK}/tour_cpp_pc \
$(pkg-config --cflags --libs clops) ${plugin_define}")
  expect(${WORK}/tour_cpp_pc "${tour_cpp}")
  step("cc with pkg-config clops-lapack" ${pkg} "cc ${here}/blas.c -o ${WORK}/blas_pc \
$(pkg-config --libs clops-lapack) -Wl,-rpath,$(pkg-config --variable=libdir clops-lapack)")
  expect(${WORK}/blas_pc "${blas}")
  step("pkg-config --modversion clops" ${pkg} "pkg-config --modversion clops")
  if(NOT step_output MATCHES "^1\\.")
    message(FATAL_ERROR "pkg-config --modversion clops: ${step_output}")
  endif()
  # The installed programs find the installed plugin by themselves.
  expect(${prefix}/bin/clops "clops 1\\.[0-9]+\\.[0-9]+.*libclops 1\\.[0-9.]+ .* from ${prefix_re}/(bin/\\.\\./)?lib[^ ]*/libclops\\.so\\.1" --version)
  expect(${prefix}/bin/clops "gemm" ops)
endif()

# Fortran: the README's example program, compiled with the installed module source as
# README.md's "Installing" says; the module finds libclops.so.1 on the system's library path.
if(MODE STREQUAL "system")
  code_block(${SOURCE_DIR}/hosts/fortran/README.md "## Fortran" fortran ${WORK}/example.f90)
  step("gfortran with the installed module" sh -c "cd ${WORK} && gfortran \
$(pkg-config --variable=includedir clops)/clops/clops.f90 example.f90 -ldl -o example")
  expect(${WORK}/example "c\\(1,:\\) = +21\\.0+ +21\\.0+ +16\\.0+")
endif()
