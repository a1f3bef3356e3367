# ctest: `clops build` (issue 25, item 3): into an empty cache it compiles the kernels of the
# operators and dtypes named (its table's row says how many), and a second process loads them
# and compiles none; a name it does not know is a usage error naming it, exit 2.
#   cmake -DCLOPS=<clops> -DLIB=<libclops.so> -DWORK=<dir> -P this
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(env ${CMAKE_COMMAND} -E env XDG_CACHE_HOME=${WORK} CLOPS_LIBRARY=${LIB})
foreach(round first second)
  execute_process(COMMAND ${env} ${CLOPS} build --ops transpose,reduce --dtypes u8
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${round} clops build failed (${rc}):\n${out}\n${err}")
  endif()
  # transpose takes u8: a row with its counts; reduce does not: a row saying so.
  if(NOT out MATCHES "transpose +u8 +([0-9]+) +([0-9]+) +[0-9.]+")
    message(FATAL_ERROR "${round} clops build: no counts for transpose u8:\n${out}")
  endif()
  set(compiled ${CMAKE_MATCH_1})
  set(loaded ${CMAKE_MATCH_2})
  if(round STREQUAL "first" AND (compiled LESS 1 OR NOT loaded EQUAL 0))
    message(FATAL_ERROR "into an empty cache: ${compiled} compiled, ${loaded} loaded:\n${out}")
  endif()
  if(round STREQUAL "second" AND (NOT compiled EQUAL 0 OR loaded LESS 1))
    message(FATAL_ERROR "from the cache: ${compiled} compiled, ${loaded} loaded:\n${out}")
  endif()
  if(NOT out MATCHES "reduce +u8 +takes none of these dtypes")
    message(FATAL_ERROR "${round} clops build: reduce's row does not say it takes no u8:\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${env} ${CLOPS} build --ops qr
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "no operator 'qr'")
  message(FATAL_ERROR "clops build --ops qr: exit ${rc}, expected 2 naming qr:\n${err}")
endif()
execute_process(COMMAND ${env} ${CLOPS} build --dtypes f16
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "unknown dtype 'f16'")
  message(FATAL_ERROR "clops build --dtypes f16: exit ${rc}, expected 2 naming f16:\n${err}")
endif()
message(STATUS "clops build: compiled into an empty cache, loaded from it by a second process")
