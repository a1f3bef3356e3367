# The rule that finds the plugin (hosts/common/loader.h), one CASE per ctest test, seen through
# `clops --version` (CLOPS), whose last line names the file it loaded. LIBRARY is the build tree's
# plugin, BIN_TO_LIB the install's library directory seen from its programs' directory, WORK a
# scratch directory of the case.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# Copies `from` to the file `to`, making its directory.
function(copy_as from to)
  get_filename_component(dir ${to} DIRECTORY)
  get_filename_component(name ${from} NAME)
  file(MAKE_DIRECTORY ${dir})
  file(COPY ${from} DESTINATION ${dir} FOLLOW_SYMLINK_CHAIN)
  if(NOT "${dir}/${name}" STREQUAL "${to}")
    file(RENAME ${dir}/${name} ${to})
  endif()
endfunction()

# Runs `program --version` with CLOPS_LIBRARY set to `named` ("": unset); fails unless it exits
# with `rc`. Sets `output` (stdout and stderr) in the caller.
function(run_version rc named program)
  if(named STREQUAL "")
    set(env --unset=CLOPS_LIBRARY)
  else()
    set(env CLOPS_LIBRARY=${named})
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${program} --version
                  RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "CLOPS_LIBRARY=${named} ${program} --version\n  -> exit ${got}\n${out}${err}")
  if(NOT got STREQUAL "${rc}")
    message(FATAL_ERROR "exit code ${got}, expected ${rc}")
  endif()
  set(output "${out}${err}" PARENT_SCOPE)
endfunction()

# Fails unless `program` (CLOPS_LIBRARY as in run_version) loads the file `expected`: the same
# file once links and `..` are resolved.
function(expect_loads named program expected)
  run_version(0 "${named}" ${program})
  if(NOT output MATCHES "libclops [0-9.]+ \\(ABI 1\\.[0-9]+, table of [0-9]+ bytes\\) from ([^\n]+)")
    message(FATAL_ERROR "no 'libclops ... from PATH' line")
  endif()
  file(REAL_PATH "${CMAKE_MATCH_1}" loaded)
  file(REAL_PATH "${expected}" wanted)
  if(NOT loaded STREQUAL wanted)
    message(FATAL_ERROR "loaded ${loaded}, expected ${wanted}")
  endif()
endfunction()

# A program with the plugin beside it, for the cases where another candidate must lose to it or
# win over it.
copy_as(${CLOPS} ${WORK}/side/clops)
copy_as(${LIBRARY} ${WORK}/side/libclops.so.1)

if(CASE STREQUAL "clops_library_copy_wins")
  # $CLOPS_LIBRARY comes first: a copy elsewhere, under another name, beats the plugin beside
  # the program.
  copy_as(${LIBRARY} ${WORK}/named/libclops-copy.so)
  expect_loads(${WORK}/named/libclops-copy.so ${WORK}/side/clops ${WORK}/named/libclops-copy.so)
elseif(CASE STREQUAL "bad_clops_library_names_variable_and_path")
  # A library the user named that does not load is an error naming the variable and the path,
  # not a reason to load the plugin beside the program.
  run_version(3 ${WORK}/no-such-dir/libclops.so.1 ${WORK}/side/clops)
  string(REPLACE "." "\\." path_re "${WORK}/no-such-dir/libclops.so.1")
  if(NOT output MATCHES "cannot load libclops: [^\n]*${path_re}[^\n]*\\$CLOPS_LIBRARY")
    message(FATAL_ERROR "the message does not name both the path and $CLOPS_LIBRARY")
  endif()
  if(output MATCHES "from ${WORK}/side")
    message(FATAL_ERROR "another library was loaded instead")
  endif()
elseif(CASE STREQUAL "build_tree_library_found")
  # Without $CLOPS_LIBRARY a program of the build tree loads the tree's plugin (by its path, not
  # by the soname through its run path).
  run_version(0 "" ${CLOPS})
  string(REPLACE "." "\\." library_re "${LIBRARY}")
  if(NOT output MATCHES "from ${library_re}\n")
    message(FATAL_ERROR "the build tree's ${LIBRARY} was not the one loaded")
  endif()
elseif(CASE STREQUAL "plugin_beside_program_found")
  expect_loads("" ${WORK}/side/clops ${WORK}/side/libclops.so.1)
elseif(CASE STREQUAL "install_library_directory_found")
  # An installed layout: PREFIX/bin/clops loads PREFIX/<libdir>/libclops.so.1, before the one
  # beside it.
  copy_as(${CLOPS} ${WORK}/prefix/bin/clops)
  copy_as(${LIBRARY} ${WORK}/prefix/bin/${BIN_TO_LIB}/libclops.so.1)
  copy_as(${LIBRARY} ${WORK}/prefix/bin/libclops.so.1)
  expect_loads("" ${WORK}/prefix/bin/clops ${WORK}/prefix/bin/${BIN_TO_LIB}/libclops.so.1)
else()
  message(FATAL_ERROR "unknown CASE ${CASE}")
endif()
