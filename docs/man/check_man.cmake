# check_man.cmake — checks the manual pages of docs/man; ctest runs it as man_pages_render.
#
#   cmake -DMAN_DIR=docs/man [-DCLOPS_EXE=clops] [-DCLOPS_BENCH_EXE=clops-bench]
#         [-DMAN_RENDERER=groff|man] -P docs/man/check_man.cmake
#
# 1. Every page (MAN_DIR/*.[1-9]) renders without a warning: `groff -man -Tutf8 -ww -z PAGE` and
#    the same with -Tascii (a terminal without UTF-8 lacks glyphs such as \(*S), or
#    `man --warnings=w -l PAGE` where groff is not installed (MAN_RENDERER picks one), must exit
#    0 and print nothing on stderr. With neither installed this part is skipped, and the last
#    line says so (the test's SKIP_REGULAR_EXPRESSION).
# 2. With CLOPS_EXE: clops.1 cannot fall behind the program. Every option of `clops --help` is in
#    its OPTIONS section; every command it lists has a `.SS "clops COMMAND ..."` section that
#    names every option of `clops COMMAND --help` (or OPTIONS does, for the shared ones); every
#    environment variable it lists is in ENVIRONMENT, and every exit status in EXIT STATUS.
# 3. With CLOPS_BENCH_EXE: likewise, every area of `clops-bench --areas` has a .SS section of
#    clops-bench.1 naming every option of `clops-bench AREA --help` (or COMMON OPTIONS does).
# Options are found in the page's source with its escapes taken out (\- is -, font changes go).
cmake_minimum_required(VERSION 3.18)

if(NOT MAN_DIR)
  message(FATAL_ERROR "check_man.cmake: pass -DMAN_DIR=<the directory of the pages>")
endif()
file(GLOB pages ${MAN_DIR}/*.[1-9])
if(NOT pages)
  message(FATAL_ERROR "check_man.cmake: no manual pages in ${MAN_DIR}")
endif()

set(failures "")
macro(fail text)
  string(APPEND failures "  ${text}\n")
endmacro()

# ---- the program's help against its page --------------------------------------------------------

# The page's source with the escapes that hide an option's spelling removed.
function(read_page page out)
  file(READ ${page} text)
  string(REPLACE "\\-" "-" text "${text}")
  string(REGEX REPLACE "\\\\f[BIRP]" "" text "${text}")
  string(REPLACE "\\&" "" text "${text}")
  string(REPLACE "\\c" "" text "${text}")
  set(${out} "\n${text}" PARENT_SCOPE)
endfunction()

# The section of `text` whose heading line starts with `heading` (".SH OPTIONS", ".SS \"clops
# run"), up to the next .SH or .SS line; empty when there is none.
function(page_section text heading out)
  set(section "")
  string(FIND "${text}" "\n${heading}" start)
  if(start GREATER_EQUAL 0)
    string(LENGTH "\n${heading}" skip)
    math(EXPR body "${start} + ${skip}")
    string(SUBSTRING "${text}" ${body} -1 rest)
    # The heading must end here: ".SS lu" is not ".SS lu_solve".
    if(rest MATCHES "^[ \"\n]")
      string(REGEX MATCH "^[^\n]*\n" heading_end "${rest}")
      string(LENGTH "${heading_end}" skip)
      string(SUBSTRING "${rest}" ${skip} -1 rest)
      set(end -1)
      foreach(next "\n.SH " "\n.SS ")
        string(FIND "${rest}" "${next}" at)
        if(at GREATER_EQUAL 0 AND (end LESS 0 OR at LESS end))
          set(end ${at})
        endif()
      endforeach()
      string(SUBSTRING "${rest}" 0 ${end} section)
      set(section "\n${section}\n")
    endif()
  endif()
  set(${out} "${section}" PARENT_SCOPE)
endfunction()

# The options a help text names: -x and --long-name, not the hyphens inside words or numbers.
function(help_options help out)
  # Every other character becomes a space first: a '[' would also end up inside list items,
  # where CMake stops splitting the list at ';'.
  string(REGEX REPLACE "[^A-Za-z0-9_-]" " " words " ${help}")
  string(REGEX MATCHALL " --?[A-Za-z][A-Za-z0-9-]*" found "${words}")
  set(options "")
  foreach(item IN LISTS found)
    string(STRIP "${item}" item)
    list(APPEND options ${item})
  endforeach()
  list(REMOVE_DUPLICATES options)
  set(${out} "${options}" PARENT_SCOPE)
endfunction()

# Whether `option` is in `text` as a word of its own (-c is not in -cl-mad-enable).
function(has_option text option out)
  if("${text}" MATCHES "[^A-Za-z0-9_-]${option}([^A-Za-z0-9_-]|$)")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# The lines of `help`'s block `title` (e.g. "Commands:"): from that line to the next empty one.
function(help_block help title out)
  set(block "")
  string(FIND "${help}" "\n${title}\n" start)
  if(start GREATER_EQUAL 0)
    string(SUBSTRING "${help}" ${start} -1 block)
    string(REGEX REPLACE "^\n[^\n]*\n" "\n" block "${block}")
    string(REGEX REPLACE "\n\n.*" "\n" block "${block}")
  endif()
  set(${out} "${block}" PARENT_SCOPE)
endfunction()

# The first words of a block's lines indented by two spaces ("  devices [--config FILE] ...").
function(block_names block pattern out)
  string(REGEX MATCHALL "\n  ${pattern}" found "${block}")
  set(names "")
  foreach(item IN LISTS found)
    string(REGEX REPLACE "^\n  " "" item "${item}")
    list(APPEND names ${item})
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

function(run_help out)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE help ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR help STREQUAL "")
    message(FATAL_ERROR "check_man.cmake: `${ARGN}` failed (${rc}): ${err}")
  endif()
  set(${out} "\n${help}" PARENT_SCOPE)
endfunction()

# Every option of `help` is in `section` or in `shared`; `where` names them in messages.
function(check_options help section shared where)
  help_options("${help}" options)
  foreach(option IN LISTS options)
    has_option("${section}" ${option} here)
    has_option("${shared}" ${option} there)
    if(NOT here AND NOT there)
      string(APPEND failures "  ${where}: no ${option}\n")
    endif()
  endforeach()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

# One command's section of a page (`section`, empty when the page has none: a failure, `missing`)
# names every option of its help, the output of the command line ARGN, or `shared` does; `where`
# names the section in messages.
function(check_command_section section shared missing where)
  if(section STREQUAL "")
    fail("${missing}")
  else()
    run_help(help ${ARGN})
    check_options("${help}" "${section}" "${shared}" "${where}")
  endif()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

if(CLOPS_EXE)
  read_page(${MAN_DIR}/clops.1 page)
  page_section("${page}" ".SH OPTIONS" global_options)
  run_help(help ${CLOPS_EXE} --help)
  help_block("${help}" "Options:" block)
  check_options("${block}" "${global_options}" "" "clops.1 OPTIONS (clops --help)")

  help_block("${help}" "Commands:" block)
  block_names("${block}" "[a-z][a-z0-9_-]*" commands)
  if(NOT commands)
    fail("clops --help lists no commands: has its format changed?")
  endif()
  foreach(command IN LISTS commands)
    page_section("${page}" ".SS \"clops ${command}" section)
    check_command_section("${section}" "${global_options}"
      "clops.1 has no section .SS \"clops ${command} ...\" (clops --help lists it)"
      "clops.1 section 'clops ${command}' (clops ${command} --help)"
      ${CLOPS_EXE} ${command} --help)
  endforeach()

  help_block("${help}" "Environment:" block)
  block_names("${block}" "[A-Z][A-Z0-9_]*" variables)
  page_section("${page}" ".SH ENVIRONMENT" section)
  foreach(variable IN LISTS variables)
    if(NOT section MATCHES "\n\\.B ${variable}\n")
      fail("clops.1 ENVIRONMENT: no .B ${variable} (clops --help lists it)")
    endif()
  endforeach()

  help_block("${help}" "Exit status:" block)
  block_names("${block}" "[0-9]+" statuses)
  page_section("${page}" ".SH EXIT STATUS" section)
  foreach(status IN LISTS statuses)
    if(NOT section MATCHES "\n\\.B ${status}\n")
      fail("clops.1 EXIT STATUS: no .B ${status} (clops --help lists it)")
    endif()
  endforeach()
endif()

if(CLOPS_BENCH_EXE)
  read_page(${MAN_DIR}/clops-bench.1 page)
  page_section("${page}" ".SH \"COMMON OPTIONS\"" common)
  if(common STREQUAL "")
    page_section("${page}" ".SH COMMON OPTIONS" common)
  endif()
  run_help(help ${CLOPS_BENCH_EXE} --areas)
  help_block("${help}" "Areas:" block)
  block_names("${block}" "[a-z][a-z0-9_-]*" areas)
  if(NOT areas)
    fail("clops-bench --areas lists no areas: has its format changed?")
  endif()
  foreach(area IN LISTS areas)
    page_section("${page}" ".SS ${area}" section)
    if(section STREQUAL "")
      page_section("${page}" ".SS \"${area}" section)
    endif()
    check_command_section("${section}" "${common}"
      "clops-bench.1 has no section .SS ${area} (clops-bench --areas lists it)"
      "clops-bench.1 section '${area}' (clops-bench ${area} --help)"
      ${CLOPS_BENCH_EXE} ${area} --help)
  endforeach()
endif()

if(NOT failures STREQUAL "")
  message(FATAL_ERROR "The manual pages have fallen behind the programs:\n${failures}")
endif()

# ---- rendering ------------------------------------------------------------------------------------

if(NOT MAN_RENDERER OR MAN_RENDERER STREQUAL "groff")
  find_program(GROFF groff)
endif()
if(NOT GROFF AND (NOT MAN_RENDERER OR MAN_RENDERER STREQUAL "man"))
  find_program(MAN man)
endif()
if(NOT GROFF AND NOT MAN)
  message("man pages not rendered: neither groff nor man is installed "
          "(Debian/Ubuntu: groff-base, man-db)")
  return()
endif()
if(GROFF)
  set(renderers "${GROFF} -man -Tutf8 -ww -z" "${GROFF} -man -Tascii -ww -z")
else()
  set(renderers "${MAN} --warnings=w -l")
endif()
foreach(page IN LISTS pages)
  foreach(renderer IN LISTS renderers)
    separate_arguments(command UNIX_COMMAND "${renderer}")
    execute_process(COMMAND ${command} ${page} RESULT_VARIABLE rc OUTPUT_QUIET
                    ERROR_VARIABLE warnings)
    if(NOT rc EQUAL 0 OR NOT warnings STREQUAL "")
      string(APPEND failures "  ${page}: `${renderer} ${page}` exited ${rc}:\n${warnings}\n")
    endif()
  endforeach()
endforeach()
if(NOT failures STREQUAL "")
  message(FATAL_ERROR "The manual pages do not render cleanly:\n${failures}")
endif()
list(LENGTH pages count)
message("${count} manual pages render without a warning")
