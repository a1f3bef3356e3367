# install.cmake — what `cmake --install` puts where (GNUInstallDirs), the CMake package
# (find_package(clops 1 CONFIG)), the pkg-config files, and the Debian packages (CPack).
#
# Components, one Debian package each (cmake/packaging.cmake):
#   runtime  libclops.so.1 and libclops_lapack.so.1
#   dev      headers, the Fortran module source, the linker names, clops.pc, the CMake package
#   tools    the clops and clops-bench programs, their man pages, example configs and pipelines
#   python   the Python package (hosts/python/CMakeLists.txt)
include(CMakePackageConfigHelpers)

set(CLOPS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/clops)

install(TARGETS clops EXPORT clopsTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                NAMELINK_COMPONENT dev)
if(TARGET clops_lapack)
  install(TARGETS clops_lapack EXPORT clopsTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                  NAMELINK_COMPONENT dev)
endif()
install(TARGETS clops_headers EXPORT clopsTargets)
install(FILES ${PROJECT_SOURCE_DIR}/abi/clops.h ${PROJECT_SOURCE_DIR}/hosts/cpp/clops.hpp
              ${PROJECT_SOURCE_DIR}/hosts/fortran/clops.f90
              ${PROJECT_SOURCE_DIR}/hosts/fortran/clops_real.inc
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/clops COMPONENT dev)

set(clops_programs clops_cli)
if(TARGET clops_bench) # built where CLBlast is installed
  list(APPEND clops_programs clops_bench)
endif()
install(TARGETS ${clops_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/clops
        COMPONENT tools)

# The installed programs (and libclops_lapack) dlopen "libclops.so.1": found through their run
# path when the library directory is not one the system searches anyway.
list(FIND CMAKE_C_IMPLICIT_LINK_DIRECTORIES ${CMAKE_INSTALL_FULL_LIBDIR} clops_libdir_implicit)
if(clops_libdir_implicit LESS 0)
  file(RELATIVE_PATH clops_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  set_target_properties(${clops_programs} PROPERTIES INSTALL_RPATH "$ORIGIN/${clops_bin_to_lib}")
  if(TARGET clops_lapack)
    set_target_properties(clops_lapack PROPERTIES INSTALL_RPATH "$ORIGIN")
  endif()
endif()

# The CMake package: clops::headers (with CLOPS_PLUGIN_PATH defined to the installed plugin),
# clops::plugin (the library, for its path: $<TARGET_FILE:clops::plugin>), clops::lapack.
install(EXPORT clopsTargets NAMESPACE clops:: DESTINATION ${CLOPS_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/clopsConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/clopsConfig.cmake
                              INSTALL_DESTINATION ${CLOPS_CMAKE_DIR})
# Same major version: the ABI promises that minor versions only grow.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/clopsConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/clopsConfig.cmake ${PROJECT_BINARY_DIR}/clopsConfigVersion.cmake
        DESTINATION ${CLOPS_CMAKE_DIR} COMPONENT dev)

# pkg-config: clops (the headers, and the plugin's path as the variable `plugin`) and
# clops-lapack (linking the BLAS/LAPACK drop-in).
# The prefix relative to the .pc file: the files hold true paths wherever --prefix puts them.
file(RELATIVE_PATH CLOPS_PC_PREFIX_FROM_PCDIR ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" CLOPS_PC_PREFIX_FROM_PCDIR "${CLOPS_PC_PREFIX_FROM_PCDIR}")
set(CLOPS_PC_DL_LIBS "")
if(CMAKE_DL_LIBS)
  set(CLOPS_PC_DL_LIBS "-l${CMAKE_DL_LIBS}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/clops.pc.in ${PROJECT_BINARY_DIR}/clops.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/clops-lapack.pc.in ${PROJECT_BINARY_DIR}/clops-lapack.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/clops.pc ${PROJECT_BINARY_DIR}/clops-lapack.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

include(${PROJECT_SOURCE_DIR}/cmake/packaging.cmake)

# Tests: the consumer project of tests/consumer, built and run each way a user would.
if(CLOPS_BUILD_TESTS)
  set(clops_consumer_preload "")
  if(CLOPS_SANITIZE)
    # The consumer's programs are not built with the sanitizers; the libclops they load is.
    include(${PROJECT_SOURCE_DIR}/cmake/hosts.cmake)
    clops_sanitizer_runtimes(runtimes)
    string(JOIN " " runtimes ${runtimes})
    set(clops_consumer_preload "-DPRELOAD=${runtimes}")
  endif()
  foreach(mode package pkgconfig subdirectory fetchcontent)
    add_test(NAME consumer_${mode}
             COMMAND ${CMAKE_COMMAND} -DMODE=${mode} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                     -DBUILD_DIR=${PROJECT_BINARY_DIR} -DWORK=${PROJECT_BINARY_DIR}/consumer-${mode}
                     ${clops_consumer_preload}
                     -P ${PROJECT_SOURCE_DIR}/tests/consumer/run.cmake)
    set_tests_properties(consumer_${mode} PROPERTIES TIMEOUT 900
      ENVIRONMENT "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache")
  endforeach()
endif()
