# expect_run.cmake — what expect.cmake and expect_layout.cmake share: running the command and
# checking its exit code and its whole output. Both include() it.

# The command line to run: COMMAND (a list), under `cmake -E env` when ENV (VAR=VALUE items)
# is given.
function(expect_command out_var)
  set(run ${COMMAND})
  if(ENV)
    set(run ${CMAKE_COMMAND} -E env ${ENV} ${COMMAND})
  endif()
  set(${out_var} "${run}" PARENT_SCOPE)
endfunction()

# Runs the command and fails unless it exits with EXPECT_RC, its stdout+stderr (newlines read as
# blanks) match EXPECT_REGEX and, when REJECT_REGEX is given, do not match that. COMMAND, ENV,
# EXPECT_RC, EXPECT_REGEX and REJECT_REGEX are the script's -D variables. Sets `out_var` to
# stdout and `all_var` to stdout+stderr.
function(expect_run out_var all_var)
  expect_command(run)
  execute_process(COMMAND ${run} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(all "${out}${err}")
  string(REPLACE "\n" " " flat "${all}")
  if(NOT rc STREQUAL "${EXPECT_RC}")
    message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}; output:\n${all}")
  endif()
  if(NOT flat MATCHES "${EXPECT_REGEX}")
    message(FATAL_ERROR "output does not match '${EXPECT_REGEX}':\n${all}")
  endif()
  if(REJECT_REGEX AND flat MATCHES "${REJECT_REGEX}")
    message(FATAL_ERROR "output matches '${REJECT_REGEX}' ('${CMAKE_MATCH_0}'):\n${all}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${all_var} "${all}" PARENT_SCOPE)
endfunction()
