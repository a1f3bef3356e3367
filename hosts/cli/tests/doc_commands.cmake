# Runs every example command the documentation shows, as written, and fails unless each exits 0
# (test cli_documented_commands_run): the lines of ```sh blocks in the Markdown files of DOCS,
# and in the .cfg files of DOCS the header lines "#     clops ..." or
# "#     ./build/hosts/cli/clops ...". They run through sh in WORK, a fresh directory laid out as
# the repository's root is for them: configs/ (a link to SOURCE/configs) and
# build/hosts/cli/clops (a link to CLOPS), that directory also first on PATH for a bare `clops`.
# Their outputs stay in WORK. Fewer than MIN_COMMANDS commands found fails too: a change of
# layout must not leave this test running nothing.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/build/hosts/cli")
file(CREATE_LINK "${SOURCE}/configs" "${WORK}/configs" SYMBOLIC)
file(CREATE_LINK "${CLOPS}" "${WORK}/build/hosts/cli/clops" SYMBOLIC)
set(ENV{PATH} "${WORK}/build/hosts/cli:$ENV{PATH}")

set(commands "")
foreach(doc IN LISTS DOCS)
  file(STRINGS "${doc}" lines)
  set(in_sh FALSE)
  foreach(line IN LISTS lines)
    if(doc MATCHES "\\.md$")
      if(line MATCHES "^```sh")
        set(in_sh TRUE)
      elseif(line MATCHES "^```")
        set(in_sh FALSE)
      elseif(in_sh AND NOT line MATCHES "^[ \t]*(#|$)")
        list(APPEND commands "${line}")
      endif()
    elseif(line MATCHES "^#     ((\\./build/hosts/cli/)?clops .*)$")
      list(APPEND commands "${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()

list(LENGTH commands count)
if(count LESS MIN_COMMANDS)
  message(FATAL_ERROR "found ${count} documented commands, expected at least ${MIN_COMMANDS}")
endif()
set(failed 0)
foreach(command IN LISTS commands)
  execute_process(COMMAND sh -c "${command}" WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(STATUS "ok: ${command}")
  else()
    message(STATUS "FAILED (exit ${rc}): ${command}\n${out}${err}")
    math(EXPR failed "${failed} + 1")
  endif()
endforeach()
if(failed GREATER 0)
  message(FATAL_ERROR "${failed} of ${count} documented commands failed")
endif()
message(STATUS "all ${count} documented commands ran")
