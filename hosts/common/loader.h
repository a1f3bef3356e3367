/* loader.h — how the host programs reach libclops: dlopen, clops_plugin_entry, ABI checks,
 * and a log callback that prints to stderr. Hosts never link the library. */
#ifndef CLOPS_HOST_LOADER_H
#define CLOPS_HOST_LOADER_H

#include <stddef.h>

#include "clops.h"

struct host_library {
    void *handle;
    const struct clops_api *api;
    char path[4096]; /* the file dlopen() loaded */
};

/* Loads the plugin from $CLOPS_LIBRARY when it is set (alone: a library the user named that
 * fails to load is an error, not a reason to pick another one), else the one this host was built
 * with or installed beside: this build tree's library when the host's own file is in the build
 * tree, else libclops.so.1 in the install's library directory seen from the host's directory;
 * else "libclops.so.1" as dlopen() searches for it (the run path, then the system's). Negotiates
 * ABI CLOPS_ABI_MAJOR and checks that the table holds every member this host uses. Returns 0,
 * or -1 with the reasons (one per attempt) in `why`. */
int host_library_load(struct host_library *lib, char *why, size_t why_size);

/* Sends the plugin's diagnostics to stderr as "<program>: <level>: <message>": warnings and
 * errors always, info and debug too when `verbose`. */
void host_library_log_to_stderr(const struct host_library *lib, int verbose);

#endif
