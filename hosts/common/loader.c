/* loader.c — loading libclops by dlopen and negotiating its ABI, for the host programs. */
#include "loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Appends "<candidate>: <text>" to the accumulated reasons; a NULL candidate for texts that
 * already name it (dlerror()'s). */
static void add_reason(char *why, size_t size, const char *candidate, const char *text)
{
    size_t used = strlen(why);
    snprintf(why + used, size - used, "%s%s%s%s", used ? "; " : "", candidate ? candidate : "",
             candidate ? ": " : "", text);
}

/* The table must serve our major version and hold every member up to the last one this host
 * calls (invoke); a shorter table comes from a plugin older than our header. Returns 0, or -1
 * with the problem in `text`. */
static int check_table(const struct clops_api *api, char *text, size_t size)
{
    if (api == NULL) {
        snprintf(text, size, "clops_plugin_entry(%d) returned NULL: ABI %d is not served",
                 CLOPS_ABI_MAJOR, CLOPS_ABI_MAJOR);
        return -1;
    }
    if (api->abi_major != CLOPS_ABI_MAJOR) {
        snprintf(text, size, "the table is for ABI %u, this host needs %d",
                 (unsigned)api->abi_major, CLOPS_ABI_MAJOR);
        return -1;
    }
    if (!CLOPS_API_HAS(api, invoke)) {
        snprintf(text, size, "the table has %u bytes, this host needs %zu (ABI %d.%d)",
                 (unsigned)api->struct_size,
                 offsetof(struct clops_api, invoke) + sizeof api->invoke, CLOPS_ABI_MAJOR,
                 CLOPS_ABI_MINOR);
        return -1;
    }
    return 0;
}

static int try_load(struct host_library *lib, const char *candidate, char *why, size_t size)
{
    void *handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        add_reason(why, size, NULL, dlerror());
        return -1;
    }
    /* POSIX guarantees a data pointer from dlsym() converts to a function pointer. */
    clops_plugin_entry_fn entry = (clops_plugin_entry_fn)dlsym(handle, "clops_plugin_entry");
    if (entry == NULL) {
        add_reason(why, size, candidate, "no symbol clops_plugin_entry");
        dlclose(handle);
        return -1;
    }
    const struct clops_api *api = entry(CLOPS_ABI_MAJOR);
    char problem[160];
    if (check_table(api, problem, sizeof problem) != 0) {
        add_reason(why, size, candidate, problem);
        dlclose(handle);
        return -1;
    }
    lib->handle = handle;
    lib->api = api;
    /* The file dlopen() found (a bare SONAME names none), for messages and --version. */
    struct link_map *map = NULL;
    const char *found = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL &&
                                map->l_name != NULL && map->l_name[0] != '\0'
                            ? map->l_name
                            : candidate;
    snprintf(lib->path, sizeof lib->path, "%s", found);
    return 0;
}

/* The real path of the object this code is linked into: the program (clops, clops-bench) or the
 * library (libclops_lapack). Returns 0, or -1 when it cannot be told. */
static int own_object(char *out)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (dladdr1((void *)&host_library_load, &info, (void **)&map, RTLD_DL_LINKMAP) == 0)
        return -1;
    /* The main program's link map has no name (dladdr's is argv[0]'s). */
    const char *name = map != NULL && map->l_name != NULL && map->l_name[0] != '\0'
                           ? map->l_name
                           : "/proc/self/exe";
    return realpath(name, out) != NULL ? 0 : -1;
}

/* Tries `dir`/`relative`/libclops.so.1 when that file exists. */
static int try_beside(struct host_library *lib, const char *dir, const char *relative, char *why,
                      size_t why_size)
{
    char path[PATH_MAX + 64];
    int n = snprintf(path, sizeof path, "%s/%s%slibclops.so.1", dir, relative,
                     relative[0] != '\0' ? "/" : "");
    if (n < 0 || (size_t)n >= sizeof path || access(path, F_OK) != 0)
        return -1;
    return try_load(lib, path, why, why_size);
}

int host_library_load(struct host_library *lib, char *why, size_t why_size)
{
    memset(lib, 0, sizeof *lib);
    why[0] = '\0';
    const char *named = getenv("CLOPS_LIBRARY");
    if (named != NULL && named[0] != '\0') {
        if (try_load(lib, named, why, why_size) == 0)
            return 0;
        size_t used = strlen(why);
        snprintf(why + used, why_size - used, " (from $CLOPS_LIBRARY)");
        return -1;
    }
    /* The plugin this host was installed or built with, found from the host's own file (not
     * from its run path: a dlopen() interposed by a sanitizer's runtime searches the runtime's):
     * installed, the library directory seen from the program's directory (CLOPS_BIN_TO_LIB) or
     * the directory libclops_lapack is in; in the build tree, the tree's library. */
    char self[PATH_MAX];
    if (own_object(self) == 0) {
        const size_t build_dir = strlen(CLOPS_BUILD_DIR);
        const int in_build_tree =
            strncmp(self, CLOPS_BUILD_DIR, build_dir) == 0 && self[build_dir] == '/';
        char *slash = strrchr(self, '/');
        *slash = '\0';
        if (try_beside(lib, self, CLOPS_BIN_TO_LIB, why, why_size) == 0 ||
            try_beside(lib, self, "", why, why_size) == 0)
            return 0;
        if (in_build_tree && access(CLOPS_BUILD_LIBRARY, F_OK) == 0 &&
            try_load(lib, CLOPS_BUILD_LIBRARY, why, why_size) == 0)
            return 0;
    }
    if (try_load(lib, "libclops.so.1", why, why_size) == 0)
        return 0;
    size_t used = strlen(why);
    snprintf(why + used, why_size - used,
             " (searched beside this program, its run path and the system's library path; set "
             "CLOPS_LIBRARY to the plugin's file to name it)");
    return -1;
}

static const char *level_name(int32_t level)
{
    switch (level) {
    case CLOPS_LOG_ERROR: return "error";
    case CLOPS_LOG_WARNING: return "warning";
    case CLOPS_LOG_INFO: return "info";
    default: return "debug";
    }
}

static void log_to_stderr(int32_t level, const char *message, void *user)
{
    (void)user;
    fprintf(stderr, "%s: %s: %s\n", host_program_name, level_name(level), message);
}

void host_library_log_to_stderr(const struct host_library *lib, int verbose)
{
    lib->api->set_log_callback(log_to_stderr, NULL, verbose ? CLOPS_LOG_DEBUG : CLOPS_LOG_WARNING);
}
