# Runs COMMAND (a list) and fails unless it exits with EXPECT_RC and its stdout+stderr match
# EXPECT_REGEX: ctest alone can check one or the other, and the CLI's exit codes are API.
# Optional: CLEAN, a directory emptied first (no file of an earlier run can pass for this
# one's); AFTER, a command (a list) that must then succeed, run in CLEAN, e.g. check_outputs
# reading the files written; ABSENT, files that must not exist afterwards; MKFIFO, paths made
# FIFOs (named pipes) first, for inputs that must be refused rather than block on.
include(${CMAKE_CURRENT_LIST_DIR}/expect_run.cmake)

if(CLEAN)
  file(REMOVE_RECURSE "${CLEAN}")
endif()
foreach(fifo IN LISTS MKFIFO)
  file(REMOVE "${fifo}")
  execute_process(COMMAND mkfifo "${fifo}" RESULT_VARIABLE made)
  if(NOT made EQUAL 0)
    message(FATAL_ERROR "mkfifo ${fifo} failed")
  endif()
endforeach()
expect_run(out all)
message(STATUS "exit code ${EXPECT_RC} as expected; output:\n${all}")
foreach(path IN LISTS ABSENT)
  if(EXISTS "${path}")
    message(FATAL_ERROR "${path} exists; the run must not write it")
  endif()
endforeach()
if(AFTER)
  execute_process(COMMAND ${AFTER} WORKING_DIRECTORY "${CLEAN}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the output files are wrong (exit code ${rc})")
  endif()
endif()
