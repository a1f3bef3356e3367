# Runs COMMAND (a list) and fails unless it exits with EXPECT_RC and its stdout+stderr match
# EXPECT_REGEX: ctest alone can check one or the other, and the CLI's exit codes are API.
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
string(REPLACE "\n" " " flat "${all}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}; output:\n${all}")
endif()
if(NOT flat MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}':\n${all}")
endif()
message(STATUS "exit code ${rc} as expected; output:\n${all}")
