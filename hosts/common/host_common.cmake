# The host programs' shared sources (plugin loader, text tables, utilities, the OS layer of
# host_os.h, one file per OS): one static library used by the hosts, defined by whichever
# includes this file first.
if(NOT TARGET clops_host_common)
  add_library(clops_host_common STATIC
    ${CMAKE_CURRENT_LIST_DIR}/loader.c
    ${CMAKE_CURRENT_LIST_DIR}/table.c
    ${CMAKE_CURRENT_LIST_DIR}/util.c
    ${CMAKE_CURRENT_LIST_DIR}/$<IF:$<BOOL:${WIN32}>,host_os_win32.c,host_os_posix.c>)
  target_include_directories(clops_host_common PUBLIC
    ${PROJECT_SOURCE_DIR}/abi ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(clops_host_common PUBLIC ${CMAKE_DL_LIBS})
  # Where the loader finds the plugin (loader.c): this tree's, for hosts in the build tree; the
  # library directory seen from the programs' directory, for installed ones.
  include(GNUInstallDirs)
  file(RELATIVE_PATH clops_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  set(clops_build_library "") # the fuzzing build (tests/fuzz) has no plugin to load
  if(TARGET clops)
    set(clops_build_library "$<TARGET_FILE:clops>")
  endif()
  target_compile_definitions(clops_host_common PRIVATE
    CLOPS_BUILD_DIR="${PROJECT_BINARY_DIR}" CLOPS_BUILD_LIBRARY="${clops_build_library}"
    CLOPS_BIN_TO_LIB="${clops_bin_to_lib}")
endif()
