# Helpers for the hosts' CMakeLists: optional languages and tests checked by expect.cmake.

# clops_enable_optional_language(<lang> [<what is skipped without it>])
# Enables LANG where a compiler for it is installed; CMAKE_<LANG>_COMPILER says whether it was.
# Where it is not, a status message says so and what is skipped ("hosts/cpp: no CXX compiler
# found; the C++ binding's test is skipped").
# A macro, because enable_language belongs in the calling directory's scope.
macro(clops_enable_optional_language lang)
  include(CheckLanguage)
  check_language(${lang})
  if(CMAKE_${lang}_COMPILER)
    enable_language(${lang})
  elseif(${ARGC} GREATER 1)
    file(RELATIVE_PATH clops_host_dir ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
    message(STATUS "${clops_host_dir}: no ${lang} compiler found; ${ARGV1}")
  endif()
endmacro()

# clops_add_expect_test(<name> RC <code> REGEX <regex> [REJECT <regex>] COMMAND <command...>
#                       [ENVIRONMENT <VAR=value...>] [TIMEOUT <seconds>])
# A test that runs COMMAND through hosts/cli/tests/expect.cmake: it passes when the command
# exits with RC and its output matches REGEX, and not REJECT (ctest alone checks one or the
# other).
function(clops_add_expect_test name)
  cmake_parse_arguments(arg "" "RC;REGEX;REJECT;TIMEOUT" "COMMAND;ENVIRONMENT" ${ARGN})
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DEXPECT_RC=${arg_RC} "-DEXPECT_REGEX=${arg_REGEX}"
                   "-DREJECT_REGEX=${arg_REJECT}" "-DCOMMAND=${arg_COMMAND}"
                   -P ${PROJECT_SOURCE_DIR}/hosts/cli/tests/expect.cmake)
  if(DEFINED arg_ENVIRONMENT)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
  endif()
  if(DEFINED arg_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${arg_TIMEOUT})
  endif()
endfunction()

# clops_sanitizer_runtimes(<var>): the AddressSanitizer and UBSan runtimes of the C compiler, as
# a list, for LD_PRELOAD in programs that are not built with the sanitizers (or must load them
# before a preloaded library) when they load the sanitized libclops (CLOPS_SANITIZE).
function(clops_sanitizer_runtimes var)
  set(runtimes "")
  foreach(runtime libasan.so libubsan.so)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${runtime}
                    OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND runtimes ${path})
  endforeach()
  set(${var} ${runtimes} PARENT_SCOPE)
endfunction()
