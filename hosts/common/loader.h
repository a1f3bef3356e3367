/* loader.h — how the host programs reach libclops: the rule that finds the plugin, loading it
 * (dlopen, or LoadLibraryA on Windows), clops_plugin_entry, ABI checks, and a log callback that
 * prints to stderr. Hosts never link the library.
 *
 * Finding the plugin: the rule every clops host follows (C, C++, Fortran, Julia, Python, the
 * programs; each host's README refers here). The first of these that applies is taken:
 *
 *   1. $CLOPS_LIBRARY, when it is set: the path of the plugin's file, and that file alone. A
 *      library the user named that fails to load is an error naming the variable and the path,
 *      never a reason to pick another one.
 *   2. The plugin beside the program or module: the one it was built or installed with.
 *      Windows: clops.dll in the directory of the running .exe (GetModuleFileNameA).
 *      Linux: the install's libclops.so.1 seen from the host's own file (PREFIX/bin/../lib, or
 *      the directory of the host's own library), this build tree's library for a host in the
 *      build tree; in the bindings, the path recorded when they were built or installed
 *      (C++: CLOPS_PLUGIN_PATH; Python: clops/_install.py and the prefix it is installed in).
 *   3. The installed plugin through the system's search. Linux: the soname libclops.so.1
 *      through the dynamic loader (the run path, LD_LIBRARY_PATH, the ld.so cache).
 *      Windows: clops.dll through the DLL search order (the .exe's directory, the system
 *      directories, then PATH).
 *
 * A candidate of 2 or 3 that does not load, or does not serve this host's ABI, is passed over
 * and the next one tried; when none loads, the error lists each and why. */
#ifndef CLOPS_HOST_LOADER_H
#define CLOPS_HOST_LOADER_H

#include <stddef.h>

#include "clops.h"

/* The plugin's file name on this system: what step 3 searches for. */
#ifdef _WIN32
#define HOST_PLUGIN_NAME "clops.dll"
#else
#define HOST_PLUGIN_NAME "libclops.so.1"
#endif

struct host_library {
    void *handle; /* dlopen()'s handle, or the HMODULE on Windows; never unloaded */
    const struct clops_api *api;
    char path[4096]; /* the file that was loaded */
};

/* Loads the plugin by the rule above, negotiates ABI CLOPS_ABI_MAJOR and checks that the table
 * holds every member this host uses. Returns 0, or -1 with the reasons (one per attempt) in
 * `why`. */
int host_library_load(struct host_library *lib, char *why, size_t why_size);

/* Sends the plugin's diagnostics to stderr as "<program>: <level>: <message>": warnings and
 * errors always, info and debug too when `verbose`. */
void host_library_log_to_stderr(const struct host_library *lib, int verbose);

#endif
