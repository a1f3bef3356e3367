# CLBlast (Debian/Ubuntu: libclblast-dev), the BLAS nobody here wrote: clops-bench measures
# clops' GEMM against it and test_clblast_interop runs clops between two of its calls. Defines
# the target clops_clblast where CLBlast is installed and nothing elsewhere; each directory that
# uses it includes this file and asks `if(TARGET clops_clblast)`.
include_guard(GLOBAL)
pkg_check_modules(CLBLAST QUIET IMPORTED_TARGET GLOBAL clblast)
if(CLBLAST_FOUND)
  add_library(clops_clblast INTERFACE)
  target_link_libraries(clops_clblast INTERFACE PkgConfig::CLBLAST)
else()
  # Some CLBlast packages ship no .pc file.
  find_library(CLBLAST_LIBRARY clblast)
  find_path(CLBLAST_INCLUDE_DIR clblast_c.h)
  if(CLBLAST_LIBRARY AND CLBLAST_INCLUDE_DIR)
    add_library(clops_clblast INTERFACE)
    target_link_libraries(clops_clblast INTERFACE ${CLBLAST_LIBRARY})
    target_include_directories(clops_clblast INTERFACE ${CLBLAST_INCLUDE_DIR})
  endif()
endif()
