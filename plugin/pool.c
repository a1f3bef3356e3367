/* pool.c — the device pool: picks devices from the configuration, opens a context and queues on
 * each, builds programs once (through the binary cache) and keeps the statistics. */
#include "pool.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "file.h"
#include "kernels.h"
#include "registry.h"

/* From cl_ext.h / the ICD loader: clGetPlatformIDs finds no ICD at all. */
#define CLOPS_PLATFORM_NOT_FOUND_KHR (-1001)

enum { MAX_PLATFORMS = 16, MAX_DEVICES_PER_PLATFORM = 64, PROGRAM_KEY_MAX = 4096 };

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

/* One OpenCL device seen on the system, before it is opened. */
struct candidate {
    cl_platform_id platform;
    cl_device_id device;
    struct clops_device_info info;
};

/* Copies an info string, truncated to `size`: drivers reject a short buffer outright (PoCL's
 * CL_DEVICE_VERSION is longer than our 64 bytes), so ask for the length first. */
static int32_t copy_info_string(cl_platform_id platform, cl_device_id device, cl_uint param,
                                const char *what, char *out, size_t size)
{
    size_t needed = 0;
    cl_int rc = device != NULL ? clGetDeviceInfo(device, param, 0, NULL, &needed)
                               : clGetPlatformInfo(platform, param, 0, NULL, &needed);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s(%s) failed", device != NULL ? "clGetDeviceInfo" : "clGetPlatformInfo",
                      what);
    char *full = malloc(needed + 1);
    if (full == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "out of host memory reading %s", what);
    rc = device != NULL ? clGetDeviceInfo(device, param, needed, full, NULL)
                        : clGetPlatformInfo(platform, param, needed, full, NULL);
    full[needed] = '\0';
    if (rc == CL_SUCCESS)
        snprintf(out, size, "%s", full);
    free(full);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s(%s) failed", device != NULL ? "clGetDeviceInfo" : "clGetPlatformInfo",
                      what);
    return CLOPS_OK;
}

/* A fixed-size device property; `what` names it in the message. */
static int32_t device_value(cl_device_id device, cl_device_info param, size_t size, void *value,
                            const char *what)
{
    cl_int rc = clGetDeviceInfo(device, param, size, value, NULL);
    return rc == CL_SUCCESS ? CLOPS_OK : err_cl(rc, "clGetDeviceInfo(%s) failed", what);
}

int32_t pool_fill_device_info(cl_platform_id platform, cl_device_id device,
                              struct clops_device_info *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    cl_device_type type = 0;
    cl_ulong mem = 0, local = 0;
    cl_uint units = 0;
    cl_device_fp_config fp64 = 0;
    /* A property that cannot be read fails the listing: a guessed name, size or fp64 would
     * choose the wrong device or refuse every call. */
    int32_t status = device_value(device, CL_DEVICE_TYPE, sizeof type, &type, "CL_DEVICE_TYPE");
    if (status == CLOPS_OK)
        status = copy_info_string(NULL, device, CL_DEVICE_NAME, "CL_DEVICE_NAME", out->name,
                                  sizeof out->name);
    if (status == CLOPS_OK)
        status = copy_info_string(NULL, device, CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR",
                                  out->vendor, sizeof out->vendor);
    if (status == CLOPS_OK)
        status = copy_info_string(platform, NULL, CL_PLATFORM_NAME, "CL_PLATFORM_NAME",
                                  out->platform, sizeof out->platform);
    if (status == CLOPS_OK)
        status = copy_info_string(NULL, device, CL_DRIVER_VERSION, "CL_DRIVER_VERSION",
                                  out->driver_version, sizeof out->driver_version);
    if (status == CLOPS_OK)
        status = copy_info_string(NULL, device, CL_DEVICE_VERSION, "CL_DEVICE_VERSION",
                                  out->opencl_version, sizeof out->opencl_version);
    if (status == CLOPS_OK)
        status = device_value(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem,
                              "CL_DEVICE_GLOBAL_MEM_SIZE");
    if (status == CLOPS_OK)
        status = device_value(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local,
                              "CL_DEVICE_LOCAL_MEM_SIZE");
    if (status == CLOPS_OK)
        status = device_value(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units,
                              "CL_DEVICE_MAX_COMPUTE_UNITS");
    if (status == CLOPS_OK)
        status = device_value(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64,
                              "CL_DEVICE_DOUBLE_FP_CONFIG");
    out->type = (type & CL_DEVICE_TYPE_GPU)   ? CLOPS_DEVICE_GPU
                : (type & CL_DEVICE_TYPE_CPU) ? CLOPS_DEVICE_CPU
                                              : CLOPS_DEVICE_OTHER;
    out->global_mem_bytes = (int64_t)mem;
    out->local_mem_bytes = (int64_t)local;
    out->compute_units = (int32_t)units;
    out->fp64 = fp64 != 0;
    return status;
}

/* All devices of all platforms, in platform then device order. */
static int32_t list_candidates(struct candidate **out, int32_t *count)
{
    *out = NULL;
    *count = 0;
    cl_platform_id platforms[MAX_PLATFORMS];
    cl_uint nplatforms = 0;
    cl_int rc = clGetPlatformIDs(MAX_PLATFORMS, platforms, &nplatforms);
    if (rc == CLOPS_PLATFORM_NOT_FOUND_KHR || nplatforms == 0)
        return CLOPS_OK; /* no ICD installed: an empty list, the caller decides */
    if (rc != CL_SUCCESS)
        return err_cl(rc, "clGetPlatformIDs failed");
    if (nplatforms > MAX_PLATFORMS)
        nplatforms = MAX_PLATFORMS;
    struct candidate *list = calloc((size_t)nplatforms * MAX_DEVICES_PER_PLATFORM, sizeof *list);
    if (list == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "out of host memory listing devices");
    int32_t n = 0;
    for (cl_uint p = 0; p < nplatforms; p++) {
        cl_device_id devices[MAX_DEVICES_PER_PLATFORM];
        cl_uint ndevices = 0;
        rc = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES_PER_PLATFORM, devices,
                            &ndevices);
        if (rc == CL_DEVICE_NOT_FOUND) /* a platform without devices */
            continue;
        if (rc != CL_SUCCESS) {
            free(list);
            return err_cl(rc, "clGetDeviceIDs on platform %u failed", (unsigned)p);
        }
        if (ndevices > MAX_DEVICES_PER_PLATFORM)
            ndevices = MAX_DEVICES_PER_PLATFORM;
        for (cl_uint d = 0; d < ndevices; d++) {
            list[n].platform = platforms[p];
            list[n].device = devices[d];
            int32_t status = pool_fill_device_info(platforms[p], devices[d], &list[n].info);
            if (status != CLOPS_OK) {
                free(list);
                return status;
            }
            list[n].info.platform_index = (int32_t)p;
            list[n].info.device_index = (int32_t)d;
            n++;
        }
    }
    *out = list;
    *count = n;
    return CLOPS_OK;
}

/* The system's devices are discovered once per process, under a lock: PoCL 3.1 and the ICD loader
 * crash, or find no platform for the rest of the process, when several threads make their first
 * OpenCL calls at once. The list then lives as long as the process, as OpenCL's platform and
 * device handles do. A discovery that fails, or finds no device, keeps nothing: the next caller
 * tries again. */
static pthread_mutex_t discovery_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct candidate *discovered; /* under discovery_lock; read-only once set */
static int32_t discovered_count;

/* The discovered devices (*list is shared and read-only; NULL when there are none). */
static int32_t discover_devices(const struct candidate **list, int32_t *count)
{
    int32_t status = CLOPS_OK;
    log_defer_begin(); /* a log callback may call devices_list */
    pthread_mutex_lock(&discovery_lock);
    if (discovered == NULL) {
        struct candidate *found = NULL;
        int32_t n = 0;
        status = list_candidates(&found, &n);
        if (status == CLOPS_OK && n > 0) {
            discovered = found;
            discovered_count = n;
        } else {
            free(found);
        }
    }
    *list = discovered;
    *count = discovered_count;
    pthread_mutex_unlock(&discovery_lock);
    log_defer_end();
    return status;
}

int32_t pool_list_devices(struct clops_device_info *out, int32_t capacity, int32_t *count)
{
    const struct candidate *list;
    int32_t n;
    int32_t status = discover_devices(&list, &n);
    if (status != CLOPS_OK)
        return status;
    for (int32_t i = 0; i < n && i < capacity; i++)
        pool_copy_sized(&out[i], &list[i].info, sizeof list[i].info);
    *count = n;
    return CLOPS_OK;
}

int32_t pool_copy_sized(void *dst, const void *src, size_t full_size)
{
    uint32_t host_size;
    memcpy(&host_size, dst, sizeof host_size);
    if (host_size < 2 * sizeof(uint32_t))
        return err_set(CLOPS_ERR_ABI_MISMATCH,
                       "struct_size = %u is too small (set it to sizeof the struct)",
                       (unsigned)host_size);
    size_t n = host_size < full_size ? host_size : full_size;
    memcpy((char *)dst + sizeof(uint32_t), (const char *)src + sizeof(uint32_t),
           n - sizeof(uint32_t));
    return CLOPS_OK;
}

static int contains_nocase(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *h = haystack; *h != '\0'; h++)
        if (strncasecmp(h, needle, n) == 0)
            return 1;
    return n == 0;
}

static int candidate_matches(const struct candidate *c, const struct config_device *sel)
{
    if (sel->type != 0 && c->info.type != sel->type)
        return 0;
    if (sel->platform_index >= 0 && c->info.platform_index != sel->platform_index)
        return 0;
    if (sel->vendor[0] != '\0' && !contains_nocase(c->info.vendor, sel->vendor) &&
        !contains_nocase(c->info.platform, sel->vendor) &&
        !contains_nocase(c->info.name, sel->vendor))
        return 0;
    return 1;
}

static const char *type_word(int32_t type)
{
    return type == CLOPS_DEVICE_GPU ? "gpu" : type == CLOPS_DEVICE_CPU ? "cpu" : "any";
}

/* The candidate a selector picks, or -1. */
static int32_t select_candidate(const struct candidate *list, int32_t n,
                                const struct config_device *sel)
{
    int32_t seen = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!candidate_matches(&list[i], sel))
            continue;
        if (seen++ == sel->index)
            return i;
    }
    return -1;
}

static int32_t first_of_type(const struct candidate *list, int32_t n, int32_t type)
{
    for (int32_t i = 0; i < n; i++)
        if (list[i].info.type == type)
            return i;
    return -1;
}

/* ---- Device memory ------------------------------------------------------------------------- */

enum { MEMORY_COUNTS_MAX = 256 };

/* The bytes clops holds on each OpenCL device, for the whole process: pools opened on one device
 * share its memory, so they share its count. A device handle lives as long as the process, and
 * so do the entries (never removed, at most one per device on the system). */
static struct {
    cl_device_id device;
    atomic_llong in_use;
} memory_counts[MEMORY_COUNTS_MAX];
static int32_t memory_count_entries;
static pthread_mutex_t memory_counts_lock = PTHREAD_MUTEX_INITIALIZER;

static atomic_llong *memory_count_for(cl_device_id device)
{
    atomic_llong *found = NULL;
    pthread_mutex_lock(&memory_counts_lock);
    for (int32_t i = 0; i < memory_count_entries && found == NULL; i++)
        if (memory_counts[i].device == device)
            found = &memory_counts[i].in_use;
    if (found == NULL && memory_count_entries < MEMORY_COUNTS_MAX) {
        memory_counts[memory_count_entries].device = device;
        found = &memory_counts[memory_count_entries++].in_use;
    }
    pthread_mutex_unlock(&memory_counts_lock);
    return found;
}

/* `percent` of what the device reports, without overflow; no limit when it reports nothing. */
static int64_t memory_limit(int64_t global_mem_bytes, int32_t percent)
{
    if (global_mem_bytes <= 0)
        return INT64_MAX;
    return global_mem_bytes / 100 * percent + global_mem_bytes % 100 * percent / 100;
}

/* Takes `bytes` of dev's limit, or returns 0 and what is held when they do not fit. A
 * compare-and-swap, so that two threads cannot both see room for the last bytes. */
static int reserve_device_memory(struct pool_device *dev, int64_t bytes, int64_t *held)
{
    long long in_use = atomic_load(dev->memory_in_use);
    do {
        if (bytes > dev->memory_limit_bytes - in_use) {
            *held = in_use;
            return 0;
        }
    } while (!atomic_compare_exchange_weak(dev->memory_in_use, &in_use, in_use + bytes));
    return 1;
}

int32_t pool_alloc_device_memory(struct pool_device *dev, int64_t bytes, const char *op,
                                 const char *what, cl_mem *out)
{
    *out = NULL;
    if (bytes <= 0)
        return err_set(CLOPS_ERR_INTERNAL, "%s: %s: asked for %lld bytes of device memory", op,
                       what, (long long)bytes);
    /* Checked here because lazy drivers (NVIDIA's, PoCL) accept any size now, to fail at first
     * use. */
    if (bytes > dev->max_alloc_bytes)
        return err_set(CLOPS_ERR_OUT_OF_DEVICE_MEMORY,
                       "%s: %s: %lld bytes exceed the largest allocation '%s' allows (%lld bytes)",
                       op, what, (long long)bytes, dev->info.name, (long long)dev->max_alloc_bytes);
    int64_t held = 0;
    if (!reserve_device_memory(dev, bytes, &held))
        return err_set(CLOPS_ERR_OUT_OF_DEVICE_MEMORY,
                       "%s: %s: %lld bytes do not fit in the memory of '%s': %lld bytes in use, "
                       "limit %lld bytes (device_memory_percent of the %lld bytes it reports)",
                       op, what, (long long)bytes, dev->info.name, (long long)held,
                       (long long)dev->memory_limit_bytes, (long long)dev->info.global_mem_bytes);
    cl_int rc;
    *out = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &rc);
    if (rc != CL_SUCCESS) {
        *out = NULL;
        atomic_fetch_sub(dev->memory_in_use, (long long)bytes);
        return err_cl(rc, "%s: %s: allocating %lld bytes on '%s' failed", op, what,
                      (long long)bytes, dev->info.name);
    }
    return CLOPS_OK;
}

void pool_free_device_memory(struct pool_device *dev, cl_mem mem)
{
    if (mem == NULL)
        return;
    /* The size it was created with, so that callers need not keep it. */
    size_t bytes = 0;
    if (clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS)
        atomic_fetch_sub(dev->memory_in_use, (long long)bytes);
    clReleaseMemObject(mem);
}

static int32_t open_device(struct clops_pool *pool, const struct candidate *c, int32_t queues,
                           struct pool_device *dev)
{
    cl_int rc;
    memset(dev, 0, sizeof *dev);
    dev->platform = c->platform;
    dev->device = c->device;
    dev->info = c->info;
    dev->index = pool->device_count;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)c->platform, 0};
    dev->context = clCreateContext(props, 1, &c->device, NULL, NULL, &rc);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "pool: clCreateContext on '%s' failed", c->info.name);
    dev->queues = calloc((size_t)queues, sizeof *dev->queues);
    if (dev->queues == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
    cl_command_queue_properties qprops = pool->cfg.profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
    for (int32_t q = 0; q < queues; q++) {
        /* clCreateCommandQueue is deprecated in 2.0 but is the call every 1.2 driver has. */
        dev->queues[q] = clCreateCommandQueue(dev->context, c->device, qprops, &rc);
        if (rc != CL_SUCCESS)
            return err_cl(rc, "pool: clCreateCommandQueue on '%s' failed", c->info.name);
        dev->queue_count++;
    }
    dev->info.queues = queues;
    cl_ulong max_alloc = 0;
    int32_t status = device_value(c->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc,
                                  &max_alloc, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
    if (status != CLOPS_OK)
        return status;
    dev->max_alloc_bytes = (int64_t)max_alloc;
    status = device_value(c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dev->max_work_group,
                          &dev->max_work_group, "CL_DEVICE_MAX_WORK_GROUP_SIZE");
    if (status != CLOPS_OK)
        return status;
    dev->memory_limit_bytes =
        memory_limit(dev->info.global_mem_bytes, pool->cfg.device_memory_percent);
    dev->memory_in_use = memory_count_for(c->device);
    if (dev->memory_in_use == NULL)
        return err_set(CLOPS_ERR_INTERNAL, "pool: more than %d OpenCL devices",
                       (int)MEMORY_COUNTS_MAX);
    atomic_init(&dev->next_queue, 0);
    atomic_init(&dev->tasks, 0);
    atomic_init(&dev->busy_ns, 0);
    return CLOPS_OK;
}

static void close_device(struct pool_device *dev)
{
    for (int32_t q = 0; q < dev->queue_count; q++)
        clReleaseCommandQueue(dev->queues[q]);
    free(dev->queues);
    if (dev->context != NULL)
        clReleaseContext(dev->context);
}

/* Which candidates the configuration asks for, in pool order; *n_chosen <= CONFIG_MAX_DEVICES. */
static int32_t choose_devices(const struct pool_config *cfg, const struct candidate *list,
                              int32_t n, int32_t *chosen, int32_t *queues, int32_t *n_chosen)
{
    *n_chosen = 0;
    if (cfg->device_count == 0) {
        int32_t pick = first_of_type(list, n, CLOPS_DEVICE_GPU);
        if (pick < 0)
            pick = first_of_type(list, n, CLOPS_DEVICE_CPU);
        if (pick < 0 && n > 0)
            pick = 0;
        if (pick >= 0) {
            chosen[0] = pick;
            queues[0] = 2;
            *n_chosen = 1;
        }
    }
    for (int32_t s = 0; s < cfg->device_count; s++) {
        const struct config_device *sel = &cfg->devices[s];
        int32_t pick = select_candidate(list, n, sel);
        int duplicate = 0;
        for (int32_t k = 0; pick >= 0 && k < *n_chosen; k++)
            duplicate |= chosen[k] == pick;
        if (pick < 0 || duplicate) {
            const char *why = duplicate ? "is already in the pool" : "was not found";
            if (sel->required && !cfg->cpu_fallback)
                return err_set(CLOPS_ERR_NO_DEVICE,
                               "%s: devices[%d] (type %s, vendor \"%s\", index %d) %s", cfg->source,
                               (int)s, type_word(sel->type), sel->vendor, (int)sel->index, why);
            /* An optional device that is absent is the configuration working as meant. */
            log_msg(sel->required ? CLOPS_LOG_WARNING : CLOPS_LOG_INFO,
                    "%s: devices[%d] (type %s, vendor \"%s\") %s; skipped", cfg->source, (int)s,
                    type_word(sel->type), sel->vendor, why);
            continue;
        }
        chosen[*n_chosen] = pick;
        queues[*n_chosen] = sel->queues;
        (*n_chosen)++;
    }
    if (*n_chosen == 0 && cfg->cpu_fallback) {
        int32_t pick = first_of_type(list, n, CLOPS_DEVICE_CPU);
        if (pick >= 0) {
            log_msg(CLOPS_LOG_INFO, "pool: falling back to the CPU device '%s'",
                    list[pick].info.name);
            chosen[0] = pick;
            queues[0] = 2;
            *n_chosen = 1;
        }
    }
    if (*n_chosen == 0)
        return err_set(CLOPS_ERR_NO_DEVICE,
                       "%s: no OpenCL device found (%d device(s) on the system; is an ICD such "
                       "as pocl-opencl-icd installed?)",
                       cfg->source, (int)n);
    return CLOPS_OK;
}

int32_t pool_create(const struct pool_config *cfg, struct clops_pool **out)
{
    *out = NULL;
    struct clops_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
    pool->cfg = *cfg;
    if (pthread_mutex_init(&pool->programs_lock, NULL) != 0) {
        free(pool);
        return err_set(CLOPS_ERR_INTERNAL, "pool: pthread_mutex_init failed");
    }
    pool->op_counters = calloc((size_t)registry_count(), sizeof *pool->op_counters);
    const struct candidate *list = NULL;
    int32_t n = 0, n_chosen = 0;
    int32_t chosen[CONFIG_MAX_DEVICES], queues[CONFIG_MAX_DEVICES];
    int32_t status = pool->op_counters == NULL
                         ? err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory")
                         : discover_devices(&list, &n);
    if (status == CLOPS_OK)
        status = choose_devices(cfg, list, n, chosen, queues, &n_chosen);
    if (status == CLOPS_OK) {
        pool->devices = calloc((size_t)n_chosen, sizeof *pool->devices);
        if (pool->devices == NULL)
            status = err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
    }
    for (int32_t i = 0; status == CLOPS_OK && i < n_chosen; i++) {
        status = open_device(pool, &list[chosen[i]], queues[i], &pool->devices[i]);
        pool->device_count++; /* counted even on failure, so release closes what was opened */
    }
    if (status != CLOPS_OK) {
        pool_release(pool);
        return status;
    }
    cache_init(&pool->cache, cfg->cache_enabled, cfg->cache_dir);
    for (int32_t i = 0; i < pool->device_count; i++)
        log_msg(CLOPS_LOG_INFO, "pool: device %d: %s (%s)", (int)i, pool->devices[i].info.name,
                pool->devices[i].info.platform);
    *out = pool;
    return CLOPS_OK;
}

void pool_release(struct clops_pool *pool)
{
    if (pool == NULL)
        return;
    struct pool_program *p = pool->programs;
    while (p != NULL) {
        struct pool_program *next = p->next;
        clReleaseProgram(p->program);
        free(p->source_name);
        free(p->options);
        free(p);
        p = next;
    }
    for (int32_t i = 0; i < pool->device_count; i++)
        close_device(&pool->devices[i]);
    free(pool->devices);
    free(pool->op_counters);
    pthread_mutex_destroy(&pool->programs_lock);
    free(pool);
}

struct pool_device *pool_device_for_op(struct clops_pool *pool, const char *op_name)
{
    const struct config_op *settings = config_find_op(&pool->cfg, op_name);
    if (settings != NULL && settings->device >= 0 && settings->device < pool->device_count)
        return &pool->devices[settings->device];
    return &pool->devices[0];
}

cl_command_queue pool_acquire_queue(struct pool_device *dev)
{
    unsigned q = atomic_fetch_add(&dev->next_queue, 1u);
    return dev->queues[q % (unsigned)dev->queue_count];
}

int32_t pool_device_count(const struct clops_pool *pool)
{
    return pool->device_count;
}

struct pool_device *pool_device_at(const struct clops_pool *pool, int32_t index)
{
    return &pool->devices[index];
}

const struct clops_device_info *pool_device_info(const struct pool_device *dev)
{
    return &dev->info;
}

int32_t pool_device_index(const struct pool_device *dev)
{
    return dev->index;
}

size_t pool_device_max_work_group(const struct pool_device *dev)
{
    return dev->max_work_group;
}

int32_t pool_kernel_max_work_group(const struct pool_device *dev, cl_kernel kernel, const char *op,
                                   size_t *out)
{
    *out = 0;
    cl_int rc = clGetKernelWorkGroupInfo(kernel, dev->device, CL_KERNEL_WORK_GROUP_SIZE,
                                         sizeof *out, out, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clGetKernelWorkGroupInfo on '%s' failed", op, dev->info.name);
    return CLOPS_OK;
}

int32_t pool_queue_count(const struct pool_device *dev)
{
    return dev->queue_count;
}

const struct config_op *pool_op_settings(const struct clops_pool *pool, const char *op_name)
{
    return config_find_op(&pool->cfg, op_name);
}

const char *pool_build_options(const struct clops_pool *pool)
{
    return pool->cfg.build_options;
}

/* ---- Programs -------------------------------------------------------------------------------- */

/* The kernel source: from the configured override directory, else embedded. malloc'd. */
static int32_t load_source(const struct clops_pool *pool, const char *op_name,
                           const char *source_name, char **text, size_t *size)
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
    char path[CONFIG_PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s.cl", pool->cfg.kernel_dir, source_name);
    struct stat st;
    FILE *f = file_open_regular(path, 0, &st);
    if (f == NULL)
        return err_set(CLOPS_ERR_IO, "%s: kernel_dir: cannot open '%s': %s%s", op_name, path,
                       errno == EINVAL ? file_type_name(st.st_mode) : strerror(errno),
                       errno == EINVAL ? ", not a regular file" : "");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (len >= 0 && *text == NULL) {
        fclose(f);
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory reading '%s'",
                       op_name, path);
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

static int32_t fail_build(cl_program program, const struct pool_device *dev, cl_int rc,
                          const char *op_name, const char *source_name, const char *options)
{
    int32_t status = err_cl(rc, "%s: building kernels/%s.cl for '%s' with options \"%s\" failed",
                            op_name, source_name, dev->info.name, options);
    if (rc != CL_BUILD_PROGRAM_FAILURE)
        return status;
    size_t log_size = 0;
    clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size);
    char *log = malloc(log_size + 1);
    if (log != NULL && clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, log_size,
                                             log, NULL) == CL_SUCCESS) {
        log[log_size] = '\0';
        err_append("\nbuild log:\n");
        err_append(log);
    }
    free(log);
    return CLOPS_ERR_BUILD;
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
    char *source = NULL;
    size_t source_size = 0;
    int32_t status = load_source(pool, op_name, source_name, &source, &source_size);
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
    atomic_fetch_add(&pool->programs_built, 1);
    if (pool->cache.enabled)
        store_binary(pool, dev, program, key);
    *out = program;
    return CLOPS_OK;
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
    char full[2048];
    int n = snprintf(full, sizeof full, "%s %s %s", pool->cfg.build_options,
                     settings != NULL ? settings->build_options : "", options);
    if (n < 0 || (size_t)n >= sizeof full)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: build options are too long (%d bytes)",
                       op_name, n);
    int32_t status = CLOPS_OK;
    log_defer_begin(); /* a log callback may call an operator, which wants programs_lock */
    pthread_mutex_lock(&pool->programs_lock);
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
        cl_program program;
        int cached = 0;
        status =
            build_program(pool, dev, op_name, source_name, full, discard_cached, &program, &cached);
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
    pthread_mutex_unlock(&pool->programs_lock);
    log_defer_end();
    return status;
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
    cl_int rc;
    *out = clCreateKernel(program, kernel_name, &rc);
    if (rc != CL_SUCCESS && from_cache) {
        /* An entry with the right key and checksum can still hold another program's binary (a
         * cache copied between machines, a driver that reuses a version string): rebuilt from
         * source once, or every later run would fail the same way. */
        log_msg(CLOPS_LOG_WARNING,
                "cache: the cached binary of %s.cl for '%s' fails clCreateKernel(%s) with %s; "
                "rebuilding it from source",
                source_name, dev->info.name, kernel_name, err_cl_name(rc));
        status =
            find_program(pool, dev, op_name, source_name, options, program, &program, &from_cache);
        if (status != CLOPS_OK)
            return status;
        *out = clCreateKernel(program, kernel_name, &rc);
    }
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clCreateKernel(%s) on '%s' failed", op_name, kernel_name,
                      dev->info.name);
    return CLOPS_OK;
}

int pool_device_matches(const struct pool_device *dev, const char *vendor, int32_t type)
{
    return (type == 0 || type == dev->info.type) &&
           (vendor[0] == '\0' || strcasestr(dev->info.vendor, vendor) != NULL);
}

int32_t pool_op_option_int(const struct clops_pool *pool, const char *op_name, const char *key,
                           int32_t fallback)
{
    const struct config_op *settings = config_find_op(&pool->cfg, op_name);
    const char *at = settings != NULL ? strstr(settings->build_options, key) : NULL;
    if (at == NULL)
        return fallback;
    /* Clamped, not wrapped: a huge value must stay out of every operator's valid range. */
    long long v = strtoll(at + strlen(key), NULL, 10);
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/* ---- Kernel times (kernel_times = true) ----------------------------------------------------- */

enum { TRACE_NAME_MAX = 48 };

struct traced_launch {
    cl_event event;
    char kernel[TRACE_NAME_MAX];
};

/* The launches of the chain running on this thread, while one is traced: a chain's kernels all
 * go on one thread's queue between pool_chain_begin and pool_chain_end. */
static _Thread_local struct {
    int on;
    int count, capacity;
    struct traced_launch *launches;
} trace;

static void kernel_name(cl_kernel kernel, char name[TRACE_NAME_MAX])
{
    if (clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, TRACE_NAME_MAX, name, NULL) != CL_SUCCESS)
        snprintf(name, TRACE_NAME_MAX, "?");
    name[TRACE_NAME_MAX - 1] = '\0';
}

/* An event's run time in ms, or 0 when the driver gives none. */
static double event_ms(cl_event event)
{
    cl_ulong start = 0, end = 0;
    if (clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) !=
            CL_SUCCESS ||
        end < start)
        return 0;
    return (double)(end - start) * 1e-6;
}

/* Keeps `event` for the traced chain; returns 0 when it could not (then it is released). */
static int trace_keep(cl_kernel kernel, cl_event event)
{
    if (trace.count == trace.capacity) {
        int capacity = trace.capacity ? 2 * trace.capacity : 256;
        struct traced_launch *grown = realloc(trace.launches, (size_t)capacity * sizeof *grown);
        if (grown == NULL)
            return 0;
        trace.launches = grown;
        trace.capacity = capacity;
    }
    trace.launches[trace.count].event = event;
    kernel_name(kernel, trace.launches[trace.count].kernel);
    trace.count++;
    return 1;
}

/* Drops the traced launches (a chain that failed, or one never ended). */
static void trace_reset(void)
{
    for (int i = 0; i < trace.count; i++)
        clReleaseEvent(trace.launches[i].event);
    free(trace.launches);
    trace.launches = NULL;
    trace.count = trace.capacity = 0;
    trace.on = 0;
}

/* Logs the traced chain's device time by kernel, in the order the kernels first ran, and
 * releases its events. */
static void trace_report(const char *what)
{
    for (int i = 0; i < trace.count; i++) {
        const char *name = trace.launches[i].kernel;
        if (name[0] == '\0')
            continue; /* counted with an earlier launch of its kernel */
        int launches = 0;
        double ms = 0;
        for (int j = i; j < trace.count; j++) {
            if (strcmp(trace.launches[j].kernel, name) != 0)
                continue;
            launches++;
            ms += event_ms(trace.launches[j].event);
            clReleaseEvent(trace.launches[j].event);
            if (j != i)
                trace.launches[j].kernel[0] = '\0';
        }
        log_msg(CLOPS_LOG_INFO, "%s: kernel %s: %d launches, %.3f ms", what, name, launches, ms);
        trace.launches[i].kernel[0] = '\0';
    }
    trace.count = 0; /* every event is released */
    trace_reset();
}

int32_t pool_run_kernel(struct clops_pool *pool, cl_command_queue queue, cl_kernel kernel,
                        cl_uint dims, const size_t *global, const size_t *local, int64_t *device_ns,
                        const char *what)
{
    cl_event event;
    cl_int rc = clEnqueueNDRangeKernel(queue, kernel, dims, NULL, global, local, 0, NULL, &event);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clEnqueueNDRangeKernel failed", what);
    rc = clWaitForEvents(1, &event);
    if (rc == CL_SUCCESS && pool->cfg.profiling && device_ns != NULL) {
        cl_ulong start = 0, end = 0;
        if (clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                    NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
                CL_SUCCESS &&
            end >= start)
            *device_ns += (int64_t)(end - start);
    }
    if (rc == CL_SUCCESS && pool->cfg.profiling && pool->cfg.kernel_times) {
        char name[TRACE_NAME_MAX];
        kernel_name(kernel, name);
        log_msg(CLOPS_LOG_INFO, "%s: kernel %s: 1 launch, %.3f ms", what, name, event_ms(event));
    }
    clReleaseEvent(event);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: kernel execution failed", what);
    return CLOPS_OK;
}

int32_t pool_set_kernel_args(cl_kernel kernel, cl_uint first, const struct kernel_arg *args,
                             cl_uint count, const char *op)
{
    for (cl_uint i = 0; i < count; i++) {
        cl_int rc = clSetKernelArg(kernel, first + i, args[i].size, args[i].value);
        if (rc != CL_SUCCESS)
            return err_cl(rc, "%s: clSetKernelArg(%u) failed", op, (unsigned)(first + i));
    }
    return CLOPS_OK;
}

int32_t pool_enqueue_kernel(cl_command_queue queue, cl_kernel kernel, cl_uint dims,
                            const size_t *global, const size_t *local, const char *what)
{
    cl_event event = NULL;
    cl_int rc = clEnqueueNDRangeKernel(queue, kernel, dims, NULL, global, local, 0, NULL,
                                       trace.on ? &event : NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clEnqueueNDRangeKernel failed", what);
    if (event != NULL && !trace_keep(kernel, event))
        clReleaseEvent(event);
    return CLOPS_OK;
}

int32_t pool_chain_begin(struct clops_pool *pool, cl_command_queue queue, cl_event *start,
                         const char *what)
{
    *start = NULL;
    trace_reset();
    trace.on = pool->cfg.profiling && pool->cfg.kernel_times;
    if (!pool->cfg.profiling)
        return CLOPS_OK;
    cl_int rc = clEnqueueMarkerWithWaitList(queue, 0, NULL, start);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clEnqueueMarkerWithWaitList failed", what);
    return CLOPS_OK;
}

/* A marker's profiling time, or 0 when the driver gives none. */
static cl_ulong event_time(cl_event event, cl_profiling_info what)
{
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(event, what, sizeof t, &t, NULL) != CL_SUCCESS)
        return 0;
    return t;
}

int32_t pool_chain_end(struct clops_pool *pool, cl_command_queue queue, cl_event start,
                       int64_t *device_ns, const char *what)
{
    cl_event end = NULL;
    cl_int rc = start != NULL ? clEnqueueMarkerWithWaitList(queue, 0, NULL, &end) : CL_SUCCESS;
    if (rc == CL_SUCCESS)
        rc = clFinish(queue);
    if (rc == CL_SUCCESS && end != NULL && device_ns != NULL) {
        cl_ulong t0 = event_time(start, CL_PROFILING_COMMAND_START);
        cl_ulong t1 = event_time(end, CL_PROFILING_COMMAND_END);
        if (t0 != 0 && t1 > t0)
            *device_ns += (int64_t)(t1 - t0);
    }
    if (end != NULL)
        clReleaseEvent(end);
    if (start != NULL)
        clReleaseEvent(start);
    if (rc == CL_SUCCESS && trace.on)
        trace_report(what);
    trace_reset();
    (void)pool;
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: waiting for the device failed", what);
    return CLOPS_OK;
}

void pool_record_upload(struct clops_pool *pool, int64_t bytes)
{
    atomic_fetch_add(&pool->bytes_uploaded, (long long)bytes);
}

void pool_record_download(struct clops_pool *pool, int64_t bytes)
{
    atomic_fetch_add(&pool->bytes_downloaded, (long long)bytes);
}

void pool_read_stats(const struct clops_pool *pool, struct clops_stats *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->programs_built = atomic_load(&pool->programs_built);
    out->programs_loaded = atomic_load(&pool->programs_loaded);
    out->cache_rejected = atomic_load(&pool->cache_rejected);
    out->calls = atomic_load(&pool->calls);
    out->bytes_uploaded = atomic_load(&pool->bytes_uploaded);
    out->bytes_downloaded = atomic_load(&pool->bytes_downloaded);
}

void pool_read_op_stats(const struct clops_pool *pool, int32_t index, struct clops_op_stats *out)
{
    const struct pool_op_counters *c = &pool->op_counters[index];
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->name = registry_at(index)->name;
    out->calls = atomic_load(&c->calls);
    out->failures = atomic_load(&c->failures);
    out->device_ns = atomic_load(&c->device_ns);
}

void pool_read_device_stats(const struct pool_device *dev, struct clops_device_stats *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->tasks = atomic_load(&dev->tasks);
    out->busy_ns = atomic_load(&dev->busy_ns);
}

void pool_record_device_work(struct pool_device *dev, int64_t tasks, int64_t busy_ns)
{
    atomic_fetch_add(&dev->tasks, tasks);
    atomic_fetch_add(&dev->busy_ns, busy_ns);
}

void pool_record_call(struct clops_pool *pool, const char *op_name, int32_t status,
                      int64_t device_ns)
{
    atomic_fetch_add(&pool->calls, 1);
    int32_t i = registry_index_by_name(op_name);
    if (i < 0)
        return;
    atomic_fetch_add(&pool->op_counters[i].calls, 1);
    if (status != CLOPS_OK)
        atomic_fetch_add(&pool->op_counters[i].failures, 1);
    atomic_fetch_add(&pool->op_counters[i].device_ns, device_ns);
}
