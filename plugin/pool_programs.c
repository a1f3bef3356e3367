/* pool_programs.c — the pool's programs: kernel sources (embedded or from kernel_dir), built
 * once per pool and device through the binary cache, and kernels created from them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_names.h"
#include "kernels.h"
#include "platform.h"
#include "pool_internal.h"

enum { PROGRAM_KEY_MAX = 4096 };

/* PoCL compiles into a kernel cache of its own, and when a write there fails for want of space
 * its LLVM ends the process ("LLVM ERROR: IO failure on output stream", status 1) or it aborts;
 * loading a binary from clops's cache writes there too. So a build on PoCL is refused when that
 * directory's filesystem has less than this free: 16 times what clops's largest program takes
 * there (LU's, about 4 MB with its work-group functions). */
#define POCL_CACHE_MIN_FREE ((int64_t)64 << 20)
#define POCL_PLATFORM_NAME "Portable Computing Language"

struct pool_program {
    struct pool_program *next;
    const struct pool_device *dev;
    char *source_name;
    char *options;
    cl_program program;
    int from_cache; /* built from a cached binary: a kernel missing from it means a bad entry */
    int stale;      /* replaced after that happened; released with the pool, not before, as
                     * another thread may still be creating a kernel from it */
};

/* One kernel source file: from the configured override directory, else embedded. malloc'd. */
static int32_t load_one(const struct clops_pool *pool, const char *op_name, const char *source_name,
                        char **text, size_t *size)
{
    if (pool->cfg.kernel_dir[0] == '\0') {
        const char *embedded = kernels_find(source_name, size);
        if (embedded == NULL)
            return err_set(CLOPS_ERR_NOT_FOUND, "%s: no embedded kernel source '%s.cl'", op_name,
                           source_name);
        *text = malloc(*size + 1);
        if (*text == NULL)
            return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                           "%s: out of host memory copying kernels/%s.cl", op_name, source_name);
        memcpy(*text, embedded, *size);
        (*text)[*size] = '\0';
        return CLOPS_OK;
    }
    char path[CONFIG_PATH_MAX + 160]; /* the directory, '/', a name of less than 128, ".cl" */
    snprintf(path, sizeof path, "%s/%s.cl", pool->cfg.kernel_dir, source_name);
    struct os_file_info info;
    FILE *f = os_open_regular(path, 0, &info);
    if (f == NULL)
        return err_set(CLOPS_ERR_IO, "%s: kernel_dir: cannot open '%s': %s%s", op_name, path,
                       errno == EINVAL ? os_file_kind_name(info.kind) : strerror(errno),
                       errno == EINVAL ? ", not a regular file" : "");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (len >= 0 && *text == NULL) {
        fclose(f);
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory reading '%s'", op_name,
                       path);
    }
    if (*text == NULL || fread(*text, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        free(*text);
        return err_set(CLOPS_ERR_IO, "%s: kernel_dir: cannot read '%s'", op_name, path);
    }
    fclose(f);
    (*text)[len] = '\0';
    *size = (size_t)len;
    return CLOPS_OK;
}

/* The program's source: `source_name` names one file of kernels/ ("gemm"), or several joined by
 * '+' ("gemm_pipeline+gemm_simt"), which are built as one text in that order (a file a job,
 * with what several kernels share in a file of its own). malloc'd. */
static int32_t load_source(const struct clops_pool *pool, const char *op_name,
                           const char *source_name, char **text, size_t *size)
{
    *text = NULL;
    *size = 0;
    const char *at = source_name;
    while (*at != '\0') {
        const char *end = strchr(at, '+');
        const size_t len = end != NULL ? (size_t)(end - at) : strlen(at);
        char name[128];
        if (len == 0 || len >= sizeof name) {
            free(*text);
            return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: kernel source name '%s' is malformed",
                           op_name, source_name);
        }
        memcpy(name, at, len);
        name[len] = '\0';
        char *part = NULL;
        size_t part_size = 0;
        int32_t status = load_one(pool, op_name, name, &part, &part_size);
        if (status != CLOPS_OK) {
            free(*text);
            return status;
        }
        if (*text == NULL) {
            *text = part;
            *size = part_size;
        } else {
            char *joined = realloc(*text, *size + part_size + 2);
            if (joined == NULL) {
                free(*text);
                free(part);
                return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                               "%s: out of host memory joining kernel sources '%s'", op_name,
                               source_name);
            }
            joined[*size] = '\n'; /* a file may end without one */
            memcpy(joined + *size + 1, part, part_size + 1);
            *size += part_size + 1;
            *text = joined;
            free(part);
        }
        at = end != NULL ? end + 1 : at + len;
        if (end != NULL && *at == '\0') { /* a name may not end with '+' */
            free(*text);
            return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: kernel source name '%s' is malformed",
                           op_name, source_name);
        }
    }
    if (*text == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: no kernel source named", op_name);
    return CLOPS_OK;
}

/* The directory of PoCL's kernel cache, chosen as PoCL does (pocl_cache_init_topdir, PoCL 1.x to
 * 6): $POCL_CACHE_DIR when set, else pocl/kcache (pocl/uncached with POCL_KERNEL_CACHE=0) under
 * $XDG_CACHE_HOME when set and not empty, else under $HOME/.cache, else under /tmp. */
static void pocl_cache_dir(char *out, size_t size)
{
    const char *dir = getenv("POCL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME"), *cache = getenv("POCL_KERNEL_CACHE");
    const char *leaf = cache != NULL && cache[0] == '0' ? "pocl/uncached" : "pocl/kcache";
    if (dir != NULL)
        snprintf(out, size, "%s", dir);
    else if (xdg != NULL && xdg[0] != '\0')
        snprintf(out, size, "%s/%s", xdg, leaf);
    else if (home != NULL)
        snprintf(out, size, "%s/.cache/%s", home, leaf);
    else
        snprintf(out, size, "/tmp/%s", leaf);
}

/* The bytes an unprivileged writer may still write on the filesystem of `path`, or of its nearest
 * existing ancestor (PoCL creates the directory on first use); -1 when none answers. */
static int64_t free_bytes_at(const char *path)
{
    char dir[PROGRAM_KEY_MAX];
    snprintf(dir, sizeof dir, "%s", path[0] != '\0' ? path : ".");
    for (;;) {
        const int64_t bytes = os_free_bytes(dir);
        if (bytes >= 0)
            return bytes;
        char *slash = strrchr(dir, '/');
        if (slash == NULL)
            return strcmp(dir, ".") == 0 ? -1 : free_bytes_at(".");
        if (slash == dir && dir[1] == '\0')
            return -1;
        slash[slash == dir] = '\0'; /* "/a" becomes "/" */
    }
}

/* Refuses to build on a PoCL device while PoCL's kernel cache has under POCL_CACHE_MIN_FREE bytes
 * free (see there): an error the host can act on instead of the end of its process. */
static int32_t check_pocl_cache_space(const struct pool_device *dev, const char *op_name)
{
    if (strcmp(dev->info.platform, POCL_PLATFORM_NAME) != 0)
        return CLOPS_OK;
    char dir[PROGRAM_KEY_MAX];
    pocl_cache_dir(dir, sizeof dir);
    const int64_t free_bytes = free_bytes_at(dir);
    if (free_bytes < 0 || free_bytes >= POCL_CACHE_MIN_FREE)
        return CLOPS_OK;
    return err_set(CLOPS_ERR_IO,
                   "%s: PoCL's kernel cache '%s' has %lld bytes free, under the %lld MiB clops "
                   "requires before PoCL compiles there (PoCL ends the process when it runs out "
                   "of space); set POCL_CACHE_DIR to a directory on a filesystem with space",
                   op_name, dir, (long long)free_bytes, (long long)(POCL_CACHE_MIN_FREE >> 20));
}

/* The program's build log for dev (the caller frees it), or NULL: none, or only blanks. */
static char *build_log(cl_program program, const struct pool_device *dev)
{
    size_t log_size = 0;
    clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size);
    char *log = malloc(log_size + 1);
    if (log != NULL && clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, log_size,
                                             log, NULL) == CL_SUCCESS) {
        log[log_size] = '\0';
        if (log[strspn(log, " \t\r\n")] != '\0')
            return log;
    }
    free(log);
    return NULL;
}

static int32_t fail_build(cl_program program, const struct pool_device *dev, cl_int rc,
                          const char *op_name, const char *source_name, const char *options)
{
    int32_t status = err_cl(rc, "%s: building kernels/%s.cl for '%s' with options \"%s\" failed",
                            op_name, source_name, dev->info.name, options);
    if (rc != CL_BUILD_PROGRAM_FAILURE)
        return status;
    char *log = build_log(program, dev);
    if (log != NULL) {
        err_append("\nbuild log:\n");
        err_append(log);
    }
    free(log);
    return CLOPS_ERR_BUILD;
}

/* A build that succeeded with something to say (warnings, a driver's notes): to the host's log
 * callback, never its stderr; a warning at CLOPS_LOG_WARNING, anything else at DEBUG. */
static void report_build_log(cl_program program, const struct pool_device *dev, const char *op_name,
                             const char *source_name, const char *options)
{
    char *log = build_log(program, dev);
    if (log == NULL)
        return;
    log_msg(strstr(log, "warning") != NULL ? CLOPS_LOG_WARNING : CLOPS_LOG_DEBUG,
            "%s: building kernels/%s.cl for '%s' with options \"%s\": %s", op_name, source_name,
            dev->info.name, options, log);
    free(log);
}

static cl_program build_from_binary(const struct pool_device *dev, const unsigned char *binary,
                                    size_t size, const char *options)
{
    cl_int rc, binary_status;
    cl_program program = clCreateProgramWithBinary(dev->context, 1, &dev->device, &size, &binary,
                                                   &binary_status, &rc);
    if (rc != CL_SUCCESS || binary_status != CL_SUCCESS) {
        /* A driver may return a program whose only device rejected the binary. */
        if (program != NULL)
            clReleaseProgram(program);
        return NULL;
    }
    if (clBuildProgram(program, 1, &dev->device, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(program);
        return NULL;
    }
    return program;
}

static void store_binary(const struct clops_pool *pool, const struct pool_device *dev,
                         cl_program program, const char *key)
{
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
            CL_SUCCESS ||
        size == 0)
        return;
    unsigned char *binary = malloc(size);
    if (binary == NULL)
        return;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binary, &binary, NULL) == CL_SUCCESS)
        cache_store(&pool->cache, key, binary, size);
    (void)dev;
    free(binary);
}

/* Builds the program, from its cached binary when there is a good one (*from_cache set), else
 * from source (then cached). `discard_cached`: the cached binary is known bad; drop it and build
 * from source. */
static int32_t build_program(struct clops_pool *pool, const struct pool_device *dev,
                             const char *op_name, const char *source_name, const char *options,
                             int discard_cached, cl_program *out, int *from_cache)
{
    *from_cache = 0;
    int32_t status = check_pocl_cache_space(dev, op_name);
    if (status != CLOPS_OK)
        return status;
    char *source = NULL;
    size_t source_size = 0;
    status = load_source(pool, op_name, source_name, &source, &source_size);
    if (status != CLOPS_OK)
        return status;
    char key[PROGRAM_KEY_MAX];
    snprintf(key, sizeof key, "platform=%s|device=%s|driver=%s|source=%s:%016llx|options=%s",
             dev->info.platform, dev->info.name, dev->info.driver_version, source_name,
             (unsigned long long)cache_hash(source, source_size, 0), options);
    if (discard_cached) {
        cache_discard(&pool->cache, key);
        atomic_fetch_add(&pool->cache_rejected, 1);
    } else {
        unsigned char *binary = NULL;
        size_t size = 0;
        enum cache_result r = cache_load(&pool->cache, key, &binary, &size);
        if (r == CACHE_HIT) {
            *out = build_from_binary(dev, binary, size, options);
            free(binary);
            if (*out != NULL) {
                atomic_fetch_add(&pool->programs_loaded, 1);
                *from_cache = 1;
                free(source);
                return CLOPS_OK;
            }
            log_msg(CLOPS_LOG_WARNING,
                    "cache: driver rejected the cached binary of %s.cl; "
                    "rebuilding",
                    source_name);
            cache_discard(&pool->cache, key);
            r = CACHE_CORRUPT;
        }
        if (r == CACHE_CORRUPT)
            atomic_fetch_add(&pool->cache_rejected, 1);
    }
    cl_int rc;
    const char *text = source;
    cl_program program = clCreateProgramWithSource(dev->context, 1, &text, &source_size, &rc);
    free(source);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clCreateProgramWithSource failed", op_name);
    rc = clBuildProgram(program, 1, &dev->device, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        status = fail_build(program, dev, rc, op_name, source_name, options);
        clReleaseProgram(program);
        return status;
    }
    report_build_log(program, dev, op_name, source_name, options);
    atomic_fetch_add(&pool->programs_built, 1);
    if (pool->cache.enabled)
        store_binary(pool, dev, program, key);
    *out = program;
    return CLOPS_OK;
}

/* build_program, its time (compiling, or loading a cached binary, failed or not) counted in the
 * pool's build_ns: how hosts tell compilation apart from the run of a first call. */
static int32_t timed_build(struct clops_pool *pool, const struct pool_device *dev,
                           const char *op_name, const char *source_name, const char *options,
                           int discard_cached, cl_program *out, int *from_cache)
{
    const int64_t start = os_monotonic_ns();
    int32_t status =
        build_program(pool, dev, op_name, source_name, options, discard_cached, out, from_cache);
    atomic_fetch_add(&pool->build_ns, (long long)(os_monotonic_ns() - start));
    return status;
}

/* PoCL before 7 keeps the libraries of compiled kernels in a process-wide cache whose release,
 * at the end of each kernel run, finds its entry by program hash and work-group size alone. A
 * query of a program's binaries (store_binary) adds an entry for every kernel, at the work-group
 * size the kernel requires, with no reference held; when another program of the same source
 * (another pool, or another device of this one) has a run of that kernel in flight, its release
 * can land on that entry and PoCL aborts the process (common.c, "found->ref_count > 0"; fixed
 * in PoCL 7 by c9ac4c0c). Without reqd_work_group_size the added entries have work-group size
 * 0 and no run matches them, so on those versions the kernels are built without it
 * (-DCLOPS_NO_REQD_WG, see kernels/transpose.cl); every launch passes that size all the same. */
static int pocl_before_7(const struct pool_device *dev)
{
    return strcmp(dev->info.platform, POCL_PLATFORM_NAME) == 0 &&
           strtol(dev->info.driver_version, NULL, 10) < 7;
}

/* The same PoCL before 7 has a second defect there, which a pool of several of its devices
 * meets: a cache entry is chosen by program hash, work-group size and the widest grid it was
 * compiled for (a launch takes the first entry at least as wide as its grid), but released by
 * program hash and work-group size alone, so two launches in flight of one kernel at one
 * work-group size on grids of different widths can release each other's entry, and PoCL aborts
 * the process (the same assertion). Within one device the launches end in order; across
 * devices they do not, and devices of one name share the hash (it is made of the build's and
 * the kernel's). So the second and later device of a name in a pool builds with
 * -DCLOPS_POCL_TWIN=<k>, a define no kernel reads, which gives its programs a hash of their
 * own: a pool of four identical CPU devices aborted in every LU across them at N = 640, NB = 8,
 * and ran with it. The first such device builds as a pool of one would. */
static int pocl_twin(const struct clops_pool *pool, const struct pool_device *dev)
{
    if (!pocl_before_7(dev))
        return 0;
    int twin = 0;
    for (int32_t i = 0; i < dev->index; i++) {
        const struct pool_device *other = pool_device_at(pool, i);
        twin += strcmp(other->info.platform, dev->info.platform) == 0 &&
                strcmp(other->info.name, dev->info.name) == 0;
    }
    return twin;
}

/* The pool's program of `source_name` with `options` (before the configured ones) on `dev`,
 * built on first use. `stale`: a program built from a cached binary that then lacked a kernel;
 * if the pool still holds it, it is retired and the program rebuilt from source with its cache
 * entry dropped (if another thread did so first, that one's program is returned). */
static int32_t find_program(struct clops_pool *pool, struct pool_device *dev, const char *op_name,
                            const char *source_name, const char *options, cl_program stale,
                            cl_program *out, int *from_cache)
{
    const struct config_op *settings = config_find_op(&pool->cfg, op_name);
    char full[2048], twin[40] = "";
    const int k = pocl_twin(pool, dev);
    if (k > 0)
        snprintf(twin, sizeof twin, "-DCLOPS_POCL_TWIN=%d ", k);
    int n = snprintf(full, sizeof full, "%s%s%s %s %s",
                     pocl_before_7(dev) ? "-DCLOPS_NO_REQD_WG " : "", twin, pool->cfg.build_options,
                     settings != NULL ? settings->build_options : "", options);
    if (n < 0 || (size_t)n >= sizeof full)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: build options are too long (%d bytes)",
                       op_name, n);
    int32_t status = CLOPS_OK;
    log_defer_begin(); /* a log callback may call an operator, which wants programs_lock */
    os_mutex_lock(&pool->programs_lock);
    struct pool_program *p = pool->programs;
    while (p != NULL && !(!p->stale && p->dev == dev && strcmp(p->source_name, source_name) == 0 &&
                          strcmp(p->options, full) == 0))
        p = p->next;
    const int discard_cached = p != NULL && stale != NULL && p->program == stale;
    if (discard_cached) {
        p->stale = 1;
        p = NULL;
    }
    if (p == NULL) {
        /* Builds hold the lock: a second thread wanting the same program waits for it instead
         * of compiling it twice. */
        cl_program program = NULL;
        int cached = 0;
        status =
            timed_build(pool, dev, op_name, source_name, full, discard_cached, &program, &cached);
        if (status == CLOPS_OK) {
            p = calloc(1, sizeof *p);
            char *name = strdup(source_name), *opts = strdup(full);
            if (p == NULL || name == NULL || opts == NULL) {
                free(p);
                free(name);
                free(opts);
                clReleaseProgram(program);
                p = NULL;
                status = err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                                 "%s: out of host memory keeping the program of kernels/%s.cl",
                                 op_name, source_name);
            } else {
                p->dev = dev;
                p->source_name = name;
                p->options = opts;
                p->program = program;
                p->from_cache = cached;
                p->next = pool->programs;
                pool->programs = p;
            }
        }
    }
    if (p != NULL) {
        *out = p->program;
        *from_cache = p->from_cache;
    }
    os_mutex_unlock(&pool->programs_lock);
    log_defer_end();
    return status;
}

/* A kernel given back earlier of `program` named `name`, now the caller's; NULL if none. */
static cl_kernel take_idle_kernel(struct clops_pool *pool, cl_program program, const char *name)
{
    cl_kernel kernel = NULL;
    os_mutex_lock(&pool->kernels_lock);
    for (int i = 0; i < POOL_IDLE_KERNELS && kernel == NULL; i++) {
        struct idle_kernel *k = &pool->idle_kernels[i];
        if (k->kernel != NULL && k->program == program && strcmp(k->name, name) == 0) {
            kernel = k->kernel;
            k->kernel = NULL;
        }
    }
    os_mutex_unlock(&pool->kernels_lock);
    return kernel;
}

void pool_release_kernel(struct clops_pool *pool, cl_kernel kernel)
{
    if (kernel == NULL)
        return;
    struct idle_kernel given = {.kernel = kernel};
    size_t length = 0;
    if (clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof given.program, &given.program, NULL) !=
            CL_SUCCESS ||
        clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof given.name, given.name, &length) !=
            CL_SUCCESS ||
        length == 0 || length > sizeof given.name) {
        clReleaseKernel(kernel); /* a name too long to keep is only not reused */
        return;
    }
    os_mutex_lock(&pool->kernels_lock);
    for (int i = 0; i < POOL_IDLE_KERNELS && given.kernel != NULL; i++)
        if (pool->idle_kernels[i].kernel == NULL) {
            pool->idle_kernels[i] = given;
            given.kernel = NULL;
        }
    os_mutex_unlock(&pool->kernels_lock);
    if (given.kernel != NULL)
        clReleaseKernel(given.kernel);
}

int32_t pool_create_kernel(struct clops_pool *pool, struct pool_device *dev, const char *op_name,
                           const char *source_name, const char *options, const char *kernel_name,
                           cl_kernel *out)
{
    cl_program program;
    int from_cache = 0;
    int32_t status =
        find_program(pool, dev, op_name, source_name, options, NULL, &program, &from_cache);
    if (status != CLOPS_OK)
        return status;
    *out = take_idle_kernel(pool, program, kernel_name);
    if (*out != NULL)
        return CLOPS_OK;
    cl_int rc;
    *out = clCreateKernel(program, kernel_name, &rc);
    if (rc != CL_SUCCESS && from_cache) {
        /* An entry with the right key and checksum can still hold another program's binary (a
         * cache copied between machines, a driver that reuses a version string): rebuilt from
         * source once, or every later run would fail the same way. */
        log_msg(CLOPS_LOG_WARNING,
                "cache: the cached binary of %s.cl for '%s' fails clCreateKernel(%s) with %s; "
                "rebuilding it from source",
                source_name, dev->info.name, kernel_name, cl_error_name(rc));
        status =
            find_program(pool, dev, op_name, source_name, options, program, &program, &from_cache);
        if (status != CLOPS_OK)
            return status;
        *out = clCreateKernel(program, kernel_name, &rc);
    }
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clCreateKernel(%s) on '%s' failed", op_name, kernel_name,
                      dev->info.name);
    atomic_fetch_add(&pool->kernels_created, 1);
    return CLOPS_OK;
}

int64_t pool_kernels_created(const struct clops_pool *pool)
{
    return atomic_load(&pool->kernels_created);
}

void pool_release_programs(struct clops_pool *pool)
{
    for (int i = 0; i < POOL_IDLE_KERNELS; i++)
        if (pool->idle_kernels[i].kernel != NULL) {
            clReleaseKernel(pool->idle_kernels[i].kernel);
            pool->idle_kernels[i].kernel = NULL;
        }
    struct pool_program *p = pool->programs;
    while (p != NULL) {
        struct pool_program *next = p->next;
        clReleaseProgram(p->program);
        free(p->source_name);
        free(p->options);
        free(p);
        p = next;
    }
    pool->programs = NULL;
}
