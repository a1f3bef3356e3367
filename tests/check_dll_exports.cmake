# Fails unless clops.dll's export table names clops_plugin_entry and nothing else (objdump -p
# prints the table as "[Ordinal/Name Pointer] Table" rows: "[   0] clops_plugin_entry").
execute_process(COMMAND ${OBJDUMP} -p ${DLL} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJDUMP} -p failed on ${DLL}")
endif()
string(REGEX MATCH "\\[Ordinal/Name Pointer\\] Table[^\n]*\n(([ \t]*\\[[ 0-9]+\\][^\n]*\n)*)"
       table "${out}")
string(REGEX MATCHALL "\\[[ 0-9]+\\] [A-Za-z_0-9@]+" rows "${CMAKE_MATCH_1}")
set(names "")
foreach(row IN LISTS rows)
  string(REGEX REPLACE "^\\[[ 0-9]+\\] " "" name "${row}")
  list(APPEND names ${name})
endforeach()
if(NOT names STREQUAL "clops_plugin_entry")
  message(FATAL_ERROR "clops.dll exports [${names}]; expected clops_plugin_entry alone")
endif()
message(STATUS "exports OK: ${names}")
