# The host programs' shared sources (plugin loader, text tables, utilities): one static library
# used by hosts/cli and hosts/bench, defined by whichever includes this file first.
if(NOT TARGET clops_host_common)
  add_library(clops_host_common STATIC
    ${CMAKE_CURRENT_LIST_DIR}/loader.c
    ${CMAKE_CURRENT_LIST_DIR}/table.c
    ${CMAKE_CURRENT_LIST_DIR}/util.c)
  target_include_directories(clops_host_common PUBLIC
    ${PROJECT_SOURCE_DIR}/abi ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(clops_host_common PUBLIC ${CMAKE_DL_LIBS})
endif()
