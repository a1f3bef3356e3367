# ctest: the library and its drivers print nothing on the host's behalf (issue 25, item 4), even
# on a first run that compiles every kernel: PoCL's compiler writes "N warnings generated." to
# stderr itself when a kernel warns (gemm.cl's 16-wide vectors did on CPUs without AVX-512).
# `clops run --quiet` on the demo pipeline (gemm f32 and f64, lu, lu_solve, solve, mandelbrot)
# with an empty kernel cache must leave stderr empty.
#   cmake -DCLOPS=<clops> -DLIB=<libclops.so> -DPIPELINE=<demo.cfg> -DWORK=<dir> -P this
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/cache)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env XDG_CACHE_HOME=${WORK}/cache POCL_CACHE_DIR=${WORK}/cache/pocl
          CLOPS_LIBRARY=${LIB} ${CLOPS} run --quiet --output-dir ${WORK}/out ${PIPELINE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clops run failed (${rc}):\n${out}\n${err}")
endif()
file(GLOB built RELATIVE ${WORK}/cache ${WORK}/cache/*)
if(built STREQUAL "")
  message(FATAL_ERROR "the run built nothing into ${WORK}/cache: the cache was not empty?")
endif()
if(NOT err STREQUAL "")
  message(FATAL_ERROR "a first run printed on stderr:\n${err}")
endif()
if(NOT out MATCHES "mandelbrot")
  message(FATAL_ERROR "the run's table names no mandelbrot step:\n${out}")
endif()
message(STATUS "first run with an empty cache: nothing on stderr; cache: ${built}")
