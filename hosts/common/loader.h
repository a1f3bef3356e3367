/* loader.h — how the host programs reach libclops: dlopen, clops_plugin_entry, ABI checks,
 * and a log callback that prints to stderr. Hosts never link the library. */
#ifndef CLOPS_HOST_LOADER_H
#define CLOPS_HOST_LOADER_H

#include <stddef.h>

#include "clops.h"

struct host_library {
    void *handle;
    const struct clops_api *api;
    char path[4096]; /* what was passed to dlopen() */
};

/* Loads the plugin from, in order: $CLOPS_LIBRARY (alone: a library the user named that fails
 * to load is an error, not a reason to pick another one), `build_tree_path` (the library built
 * next to the host; may be NULL), then "libclops.so.1" through the system search path.
 * Negotiates ABI CLOPS_ABI_MAJOR and checks that the table holds every member this host uses.
 * Returns 0, or -1 with the reasons (one per attempt) in `why`. */
int host_library_load(struct host_library *lib, const char *build_tree_path, char *why,
                      size_t why_size);

/* Sends the plugin's diagnostics to stderr as "<program>: <level>: <message>": warnings and
 * errors always, info and debug too when `verbose`. */
void host_library_log_to_stderr(const struct host_library *lib, int verbose);

#endif
