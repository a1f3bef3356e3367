/* formats_atomic.c — the writer every format's writer goes through: the tensor checked, the
 * file written to a temporary beside the destination, synced and renamed over it, so that a
 * reader never sees a partial file; temporaries that killed writers left are cleaned up. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "formats_internal.h"
#include "host_os.h"

/* mkdir -p of the directories leading to `path`. */
static int make_parents(const char *path, char *err, size_t errsize)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return fmt_fail(err, errsize, "%s: out of memory", path);
    int rc = 0;
    for (char *p = copy + 1; *p != '\0' && rc == 0; p++) {
        if (!host_is_path_separator(*p))
            continue;
        char separator = *p;
        *p = '\0';
        if (host_make_dir(copy) != 0 && errno != EEXIST)
            rc = fmt_fail(err, errsize, "%s: cannot create directory '%s': %s", path, copy,
                          strerror(errno));
        *p = separator;
    }
    free(copy);
    return rc;
}

/* The directory of `path` ("." for a bare name), malloc'd; NULL when out of memory. */
static char *parent_dir(const char *path)
{
    const char *slash = host_last_path_separator(path);
    if (slash == NULL)
        return strdup(".");
    size_t length = slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(length + 1);
    if (dir != NULL) {
        memcpy(dir, path, length);
        dir[length] = '\0';
    }
    return dir;
}

/* A writer's temporary file is "<dir>/.<name>.<pid>.XXXXXX": the pid says whose it is, so that
 * one left by a killed writer (kill -9 between mkstemp and rename) can be told from one that a
 * running writer is filling. */
enum { STALE_TEMP_AGE_S = 60 };

/* The pid in `entry` if it is a temporary file of destination `name` (".<name>.<digits>.XXXXXX"
 * with mkstemp's six letters and digits), else 0. */
static long temp_file_pid(const char *entry, const char *name)
{
    size_t length = strlen(name);
    if (entry[0] != '.' || strncmp(entry + 1, name, length) != 0 || entry[1 + length] != '.')
        return 0;
    const char *digits = entry + 2 + length, *p = digits;
    long pid = 0;
    for (; *p >= '0' && *p <= '9' && p - digits < 10; p++)
        pid = pid * 10 + (*p - '0');
    if (p == digits || *p != '.' || strlen(p + 1) != 6)
        return 0;
    for (const char *c = p + 1; *c != '\0'; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            return 0;
    return pid;
}

/* Removes the temporary files of destination `name` in `dir` that killed writers left: those
 * whose writer's pid is not a live process and that nobody has written for STALE_TEMP_AGE_S
 * seconds. A writer that is still running keeps its file: on this machine its pid is alive; on
 * another one sharing the directory (NFS, a container) it writes its file, which keeps the
 * file young. Best effort: nothing here makes the write fail. */
static void remove_stale_temps(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        long pid = temp_file_pid(e->d_name, name);
        if (pid > 0 && pid != host_process_id() && host_process_gone(pid) &&
            host_file_older_than(dir, e->d_name, STALE_TEMP_AGE_S))
            host_remove_in_dir(dir, e->d_name);
    }
    closedir(d);
}

/* The temporary file a writer fills before renaming it over the destination. */
struct atomic_file {
    char *tmp;
    FILE *f;
};

static int atomic_open(const char *path, struct atomic_file *af, char *err, size_t errsize)
{
    af->tmp = NULL;
    af->f = NULL;
    const char *slash = host_last_path_separator(path);
    const char *name = slash != NULL ? slash + 1 : path;
    if (*name == '\0')
        return fmt_fail(err, errsize, "%s: the path names a directory, not a file", path);
    if (make_parents(path, err, errsize) != 0)
        return -1;
    char *dir = parent_dir(path);
    if (dir != NULL)
        remove_stale_temps(dir, name);
    free(dir);
    if (asprintf(&af->tmp, "%.*s.%s.%ld.XXXXXX", (int)(name - path), path, name,
                 host_process_id()) < 0) {
        af->tmp = NULL;
        return fmt_fail(err, errsize, "%s: out of memory", path);
    }
    af->f = host_create_temp(af->tmp);
    if (af->f == NULL) {
        fmt_fail(err, errsize, "%s: cannot create a temporary file in '%.*s': %s", path,
                 slash != NULL ? (int)(slash - path) : 1, slash != NULL ? path : ".",
                 strerror(errno));
        free(af->tmp);
        af->tmp = NULL;
        return -1;
    }
    return 0;
}

static void atomic_abort(struct atomic_file *af)
{
    if (af->f != NULL)
        fclose(af->f);
    if (af->tmp != NULL)
        remove(af->tmp);
    free(af->tmp);
    af->f = NULL;
    af->tmp = NULL;
}

/* A crash right after the rename should not leave the directory without the new name. */
static void sync_parent(const char *path)
{
    char *dir = parent_dir(path);
    if (dir != NULL)
        host_sync_dir(dir);
    free(dir);
}

/* Flushes, fsyncs and renames the temporary file over `path`; on failure removes it. */
static int atomic_commit(const char *path, struct atomic_file *af, char *err, size_t errsize)
{
    int rc = 0;
    if (fflush(af->f) != 0 || ferror(af->f))
        rc = fmt_fail(err, errsize, "%s: write error: %s", path, strerror(errno));
    else if (host_sync_file(af->f) != 0)
        rc = fmt_fail(err, errsize, "%s: cannot sync: %s", path, strerror(errno));
    FILE *f = af->f;
    af->f = NULL;
    if (fclose(f) != 0 && rc == 0)
        rc = fmt_fail(err, errsize, "%s: write error: %s", path, strerror(errno));
    if (rc == 0 && host_replace_file(af->tmp, path) != 0)
        rc = fmt_fail(err, errsize, "%s: cannot rename the temporary file over it: %s", path,
                      strerror(errno));
    if (rc == 0) {
        free(af->tmp);
        af->tmp = NULL;
        sync_parent(path);
        return 0;
    }
    atomic_abort(af);
    return -1;
}

int fmt_check_tensor(const char *path, const struct fmt_tensor *t, int64_t *elements, char *err,
                     size_t errsize)
{
    int64_t bytes = 0;
    char why[256];
    if (t == NULL)
        return fmt_fail(err, errsize, "%s: no tensor to write", path);
    if (fmt_tensor_size(t->dtype, t->rank, t->shape, elements, &bytes, why, sizeof why) != 0)
        return fmt_fail(err, errsize, "%s: cannot write the tensor: %s", path, why);
    if (bytes > 0 && t->data == NULL)
        return fmt_fail(err, errsize, "%s: cannot write the tensor: its data is NULL", path);
    return 0;
}

int fmt_write_atomic(const char *path, const struct fmt_tensor *t, fmt_emit_fn emit, char *err,
                     size_t errsize)
{
    int64_t elements = 0;
    struct atomic_file af;
    if (fmt_check_tensor(path, t, &elements, err, errsize) != 0 ||
        atomic_open(path, &af, err, errsize) != 0)
        return -1;
    char why[256];
    if (emit(af.f, t, elements, why, sizeof why) != 0) {
        atomic_abort(&af);
        return fmt_fail(err, errsize, "%s: %s", path, why);
    }
    return atomic_commit(path, &af, err, errsize);
}

int fmt_write_bytes(const char *path, const void *data, size_t size, char *err, size_t errsize)
{
    struct atomic_file af;
    if (atomic_open(path, &af, err, errsize) != 0)
        return -1;
    if (size > 0 && fwrite(data, 1, size, af.f) != size) {
        int e = errno;
        atomic_abort(&af);
        return fmt_fail(err, errsize, "%s: write error: %s", path, strerror(e));
    }
    return atomic_commit(path, &af, err, errsize);
}
