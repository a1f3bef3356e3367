/* loader.c — finding libclops by the rule of loader.h, loading it (dlopen on POSIX, LoadLibraryA
 * on Windows) and negotiating its ABI, for the host programs. */
#include "loader.h"

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <link.h>
#endif
#endif
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Set by host_common.cmake; a loader compiled on its own knows no build tree. */
#ifndef CLOPS_BUILD_DIR
#define CLOPS_BUILD_DIR ""
#endif
#ifndef CLOPS_BUILD_LIBRARY
#define CLOPS_BUILD_LIBRARY ""
#endif
#ifndef CLOPS_BIN_TO_LIB
#define CLOPS_BIN_TO_LIB "../lib"
#endif

enum { HOST_PATH_SIZE = 4096 };

/* ---- The system's loader: open a file, find the entry, close, name the file loaded ---------- */

#ifdef _WIN32

static void *library_open(const char *path, char *text, size_t size)
{
    HMODULE module = LoadLibraryA(path);
    if (module != NULL)
        return module;
    DWORD code = GetLastError();
    char message[256];
    DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, code,
                             0, message, sizeof message, NULL);
    /* The system's messages end in ".\r\n". */
    while (n > 0 && strchr(".\r\n ", message[n - 1]) != NULL)
        message[--n] = '\0';
    snprintf(text, size, "%s: %s (error %lu)", path, n > 0 ? message : "LoadLibraryA failed",
             (unsigned long)code);
    return NULL;
}

static clops_plugin_entry_fn library_entry(void *handle)
{
    /* GetProcAddress's FARPROC goes through void (*)(void), which converts to every function
     * pointer type and back. */
    return (clops_plugin_entry_fn)(void (*)(void))GetProcAddress((HMODULE)handle,
                                                                 "clops_plugin_entry");
}

static void library_close(void *handle)
{
    FreeLibrary((HMODULE)handle);
}

static void library_file(void *handle, const char *candidate, char *out, size_t size)
{
    DWORD n = GetModuleFileNameA((HMODULE)handle, out, (DWORD)size);
    if (n == 0 || n >= size)
        snprintf(out, size, "%s", candidate);
}

/* The directory of the running .exe, where step 2 looks for clops.dll. */
static int own_directory(char *out, size_t size)
{
    DWORD n = GetModuleFileNameA(NULL, out, (DWORD)size);
    if (n == 0 || n >= size)
        return -1;
    char *slash = strrchr(out, '\\');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    return 0;
}

static int file_exists(const char *path)
{
    return GetFileAttributesA(path) != INVALID_FILE_ATTRIBUTES;
}

#else

static void *library_open(const char *path, char *text, size_t size)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL)
        snprintf(text, size, "%s", dlerror()); /* it names the file */
    return handle;
}

static clops_plugin_entry_fn library_entry(void *handle)
{
    /* POSIX guarantees a data pointer from dlsym() converts to a function pointer. */
    return (clops_plugin_entry_fn)dlsym(handle, "clops_plugin_entry");
}

static void library_close(void *handle)
{
    dlclose(handle);
}

/* The file dlopen() found (a bare soname names none), for messages and --version. dlinfo is a
 * GNU extension; elsewhere the name asked for is reported. */
static void library_file(void *handle, const char *candidate, char *out, size_t size)
{
    const char *found = candidate;
#if defined(__GLIBC__)
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name != NULL &&
        map->l_name[0] != '\0')
        found = map->l_name;
#else
    (void)handle;
#endif
    snprintf(out, size, "%s", found);
}

/* The real directory of the object this code is linked into: the program (clops, clops-bench)
 * or the library (libclops_lapack). Returns 0, or -1 when it cannot be told. */
static int own_directory(char *out, size_t size)
{
    char real[PATH_MAX];
#if defined(__GLIBC__)
    Dl_info info;
    struct link_map *map = NULL;
    if (dladdr1((void *)&host_library_load, &info, (void **)&map, RTLD_DL_LINKMAP) == 0)
        return -1;
    /* The main program's link map has no name (dladdr's is argv[0]'s). */
    const char *name = map != NULL && map->l_name != NULL && map->l_name[0] != '\0'
                           ? map->l_name
                           : "/proc/self/exe";
#else
    Dl_info info;
    if (dladdr((void *)&host_library_load, &info) == 0 || info.dli_fname == NULL)
        return -1;
    const char *name = info.dli_fname;
#endif
    if (realpath(name, real) == NULL)
        return -1;
    char *slash = strrchr(real, '/');
    if (slash == NULL || (size_t)(slash - real) >= size)
        return -1;
    *slash = '\0';
    snprintf(out, size, "%s", real);
    return 0;
}

static int file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

#endif

/* ---- Candidates and the ABI ----------------------------------------------------------------- */

/* Appends "<text>" to the accumulated reasons, "; "-separated. */
static void add_reason(char *why, size_t size, const char *text)
{
    size_t used = strlen(why);
    snprintf(why + used, size - used, "%s%s", used ? "; " : "", text);
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
    char text[HOST_PATH_SIZE + 256];
    void *handle = library_open(candidate, text, sizeof text);
    if (handle == NULL) {
        add_reason(why, size, text);
        return -1;
    }
    clops_plugin_entry_fn entry = library_entry(handle);
    if (entry == NULL) {
        snprintf(text, sizeof text, "%s: no symbol clops_plugin_entry", candidate);
        add_reason(why, size, text);
        library_close(handle);
        return -1;
    }
    const struct clops_api *api = entry(CLOPS_ABI_MAJOR);
    char problem[160];
    if (check_table(api, problem, sizeof problem) != 0) {
        snprintf(text, sizeof text, "%s: %s", candidate, problem);
        add_reason(why, size, text);
        library_close(handle);
        return -1;
    }
    lib->handle = handle;
    lib->api = api;
    library_file(handle, candidate, lib->path, sizeof lib->path);
    return 0;
}

#ifdef _WIN32
#define DIR_SEPARATOR "\\"
#else
#define DIR_SEPARATOR "/"
#endif

/* Tries `dir`/`relative`/HOST_PLUGIN_NAME when that file exists. */
static int try_beside(struct host_library *lib, const char *dir, const char *relative, char *why,
                      size_t why_size)
{
    char path[HOST_PATH_SIZE + 64];
    int n = snprintf(path, sizeof path, "%s" DIR_SEPARATOR "%s%s" HOST_PLUGIN_NAME, dir, relative,
                     relative[0] != '\0' ? DIR_SEPARATOR : "");
    if (n < 0 || (size_t)n >= sizeof path || !file_exists(path))
        return -1;
    return try_load(lib, path, why, why_size);
}

static int same_path_char(char a, char b)
{
#ifdef _WIN32
    /* Windows paths: either separator, any case (CMake writes the build directory with '/'). */
    if ((a == '\\' || a == '/') && (b == '\\' || b == '/'))
        return 1;
    return tolower((unsigned char)a) == tolower((unsigned char)b);
#else
    return a == b;
#endif
}

/* Whether the directory `path` is `dir` or lies under it. */
static int path_is_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (path[i] == '\0' || !same_path_char(path[i], dir[i]))
            return 0;
    return path[n] == '\0' || same_path_char(path[n], '/');
}

/* Step 2 of the rule: the plugin this host was installed or built with, found from the host's
 * own file (not from its run path: a dlopen() interposed by a sanitizer's runtime searches the
 * runtime's). Windows: clops.dll beside the .exe. Linux: the install's library directory seen
 * from the program's directory (CLOPS_BIN_TO_LIB), or the directory libclops_lapack is in. In
 * the build tree, the tree's library. */
static int try_own_plugin(struct host_library *lib, char *why, size_t why_size)
{
    char self[HOST_PATH_SIZE];
    if (own_directory(self, sizeof self) != 0)
        return -1;
#ifndef _WIN32
    if (try_beside(lib, self, CLOPS_BIN_TO_LIB, why, why_size) == 0)
        return 0;
#endif
    if (try_beside(lib, self, "", why, why_size) == 0)
        return 0;
    if (path_is_under(self, CLOPS_BUILD_DIR) && CLOPS_BUILD_LIBRARY[0] != '\0' &&
        file_exists(CLOPS_BUILD_LIBRARY))
        return try_load(lib, CLOPS_BUILD_LIBRARY, why, why_size);
    return -1;
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
    if (try_own_plugin(lib, why, why_size) == 0)
        return 0;
    if (try_load(lib, HOST_PLUGIN_NAME, why, why_size) == 0)
        return 0;
    size_t used = strlen(why);
#ifdef _WIN32
    snprintf(why + used, why_size - used,
             " (searched beside this program and the DLL search order, PATH included; set "
             "CLOPS_LIBRARY to the plugin's file to name it)");
#else
    snprintf(why + used, why_size - used,
             " (searched beside this program, its run path and the system's library path; set "
             "CLOPS_LIBRARY to the plugin's file to name it)");
#endif
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
