# record_install.cmake — run by `cmake --install` (component python) after the package's files:
# writes clops/_install.py, naming the libclops installed with the package, which `import clops`
# tries after $CLOPS_LIBRARY and before the dynamic linker's search path. Paths are those of the
# install (its CMAKE_INSTALL_PREFIX, which --prefix sets), and the file goes under DESTDIR as
# every installed file does, while its contents name the path the library will have at run time.
#
# Set before it by install(CODE) in CMakeLists.txt: CLOPS_PYTHON_RECORD_LIBDIR
# (CMAKE_INSTALL_LIBDIR), CLOPS_PYTHON_RECORD_SONAME (the library's file name, libclops.so.1),
# CLOPS_PYTHON_RECORD_PACKAGE_DIR (CLOPS_PYTHON_INSTALL_DIR), CLOPS_PYTHON_RECORD_STAGE (a
# build directory to write the file in before it is installed).

foreach(dir LIBDIR PACKAGE_DIR)
  set(path "${CLOPS_PYTHON_RECORD_${dir}}")
  if(NOT IS_ABSOLUTE "${path}")
    set(path "${CMAKE_INSTALL_PREFIX}/${path}")
  endif()
  set(record_${dir} "${path}")
endforeach()

# A Python string literal: backslashes and double quotes escaped.
set(library "${record_LIBDIR}/${CLOPS_PYTHON_RECORD_SONAME}")
foreach(name library record_LIBDIR)
  string(REPLACE "\\" "\\\\" ${name} "${${name}}")
  string(REPLACE "\"" "\\\"" ${name} "${${name}}")
endforeach()

file(WRITE "${CLOPS_PYTHON_RECORD_STAGE}/_install.py"
     "\"\"\"_install.py — written by `cmake --install` (hosts/python/record_install.cmake): where "
     "the\nlibclops installed with this package is. import clops tries LIBRARY after "
     "$CLOPS_LIBRARY.\"\"\"\n\nLIBDIR = \"${record_LIBDIR}\"\n"
     "LIBRARY = \"${library}\"\n")
file(INSTALL DESTINATION "${record_PACKAGE_DIR}/clops" TYPE FILE
     FILES "${CLOPS_PYTHON_RECORD_STAGE}/_install.py")
