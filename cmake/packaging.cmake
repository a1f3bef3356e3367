# packaging.cmake — Debian packages from the tree with CPack, one per install component
# (cmake/install.cmake). Configure with -DCMAKE_INSTALL_PREFIX=/usr so that GNUInstallDirs picks
# Debian's multiarch library directory, then `cpack -G DEB` in the build directory (.ci/debs
# builds them and installs them into a fresh Debian root).
#   libclops1      the plugin and the BLAS/LAPACK drop-in
#   libclops-dev   headers, Fortran module source, clops.pc, the CMake package
#   clops-tools    clops, clops-bench, man pages, example configs and pipelines
#   python3-clops  the Python package
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME clops)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "clops")
set(CPACK_PACKAGE_CONTACT "clops developers <clops-dev@lists.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OpenCL compute operators behind a stable, versioned C ABI")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools python)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Library dependencies (OpenCL's ICD loader, libconfig, libpng) from dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)

set(clops_exact "(= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libclops1)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# The plugin needs an OpenCL device: any ICD; PoCL gives one on every CPU.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "pocl-opencl-icd | opencl-icd")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "clops plugin (libclops.so.1) and the BLAS/LAPACK drop-in (libclops_lapack.so.1)")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libclops-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libclops1 ${clops_exact}")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "clops development files: the C ABI and C++ headers, the Fortran module source, pkg-config and CMake package files")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME clops-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libclops1 ${clops_exact}")
# clops-bench --chart draws with matplotlib.
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "python3-matplotlib")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
    "clops programs: clops (devices, operators, pipelines) and clops-bench, with man pages and examples")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-clops)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3, python3-numpy, libclops1 ${clops_exact}")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "clops for Python: a NumPy-first API over libclops")

include(CPack)
