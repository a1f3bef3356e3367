/* pool_devices.c — the pool's devices: discovery of the system's OpenCL devices (once per
 * process), the choice of those the configuration asks for, opening them (a context and queues
 * each), and what operators may ask of a device. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pool_internal.h"
#include "registry.h"

/* From cl_ext.h / the ICD loader: clGetPlatformIDs finds no ICD at all. */
#define CLOPS_PLATFORM_NOT_FOUND_KHR (-1001)

enum { MAX_PLATFORMS = 16, MAX_DEVICES_PER_PLATFORM = 64 };

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

/* From cl_ext.h's cl_nv_device_attribute_query, spelled out so that no vendor header is needed. */
#define CLOPS_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CLOPS_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001

/* Whether the space-separated `list` holds the word `name` (not merely a longer name that starts
 * with it). */
static int list_has_word(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *at = strstr(list, name); at != NULL; at = strstr(at + 1, name))
        if ((at == list || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0'))
            return 1;
    return 0;
}

/* Whether `device` lists the extension `name` in CL_DEVICE_EXTENSIONS (whose length has no
 * bound, hence read at its own size). */
static int32_t device_has_extension(cl_device_id device, const char *name, int *out)
{
    *out = 0;
    size_t size = 0;
    cl_int rc = clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, NULL, &size);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "clGetDeviceInfo(CL_DEVICE_EXTENSIONS) failed");
    char *list = malloc(size + 1);
    if (list == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "out of host memory reading %s",
                       "CL_DEVICE_EXTENSIONS");
    rc = clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, size, list, NULL);
    list[size] = '\0';
    if (rc == CL_SUCCESS)
        *out = list_has_word(list, name);
    free(list);
    return rc == CL_SUCCESS ? CLOPS_OK : err_cl(rc, "clGetDeviceInfo(CL_DEVICE_EXTENSIONS) failed");
}

/* NVIDIA's compute capability of `device` as major * 10 + minor, through
 * cl_nv_device_attribute_query; 0 where the device does not offer it (every other vendor). */
static int32_t read_nv_compute_capability(cl_device_id device, int32_t *out)
{
    *out = 0;
    int nv = 0;
    cl_uint major = 0, minor = 0;
    int32_t status = device_has_extension(device, "cl_nv_device_attribute_query", &nv);
    if (status != CLOPS_OK || !nv)
        return status;
    status = device_value(device, CLOPS_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major, &major,
                          "CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV");
    if (status == CLOPS_OK)
        status = device_value(device, CLOPS_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor,
                              &minor, "CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV");
    if (status == CLOPS_OK)
        *out = (int32_t)(major * 10 + minor);
    return status;
}

/* Fails, naming the property, when one cannot be read. */
static int32_t fill_device_info(cl_platform_id platform, cl_device_id device,
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
    const struct {
        cl_platform_id platform; /* set for a property of the platform, NULL for the device's */
        cl_uint param;
        const char *what;
        char *out;
        size_t size;
    } strings[] = {
        {NULL, CL_DEVICE_NAME, "CL_DEVICE_NAME", out->name, sizeof out->name},
        {NULL, CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR", out->vendor, sizeof out->vendor},
        {platform, CL_PLATFORM_NAME, "CL_PLATFORM_NAME", out->platform, sizeof out->platform},
        {NULL, CL_DRIVER_VERSION, "CL_DRIVER_VERSION", out->driver_version,
         sizeof out->driver_version},
        {NULL, CL_DEVICE_VERSION, "CL_DEVICE_VERSION", out->opencl_version,
         sizeof out->opencl_version},
    };
    const struct {
        cl_device_info param;
        const char *what;
        void *value;
        size_t size;
    } values[] = {
        {CL_DEVICE_GLOBAL_MEM_SIZE, "CL_DEVICE_GLOBAL_MEM_SIZE", &mem, sizeof mem},
        {CL_DEVICE_LOCAL_MEM_SIZE, "CL_DEVICE_LOCAL_MEM_SIZE", &local, sizeof local},
        {CL_DEVICE_MAX_COMPUTE_UNITS, "CL_DEVICE_MAX_COMPUTE_UNITS", &units, sizeof units},
        {CL_DEVICE_DOUBLE_FP_CONFIG, "CL_DEVICE_DOUBLE_FP_CONFIG", &fp64, sizeof fp64},
    };
    int32_t status = device_value(device, CL_DEVICE_TYPE, sizeof type, &type, "CL_DEVICE_TYPE");
    for (size_t i = 0; status == CLOPS_OK && i < sizeof strings / sizeof strings[0]; i++)
        status =
            copy_info_string(strings[i].platform, strings[i].platform ? NULL : device,
                             strings[i].param, strings[i].what, strings[i].out, strings[i].size);
    for (size_t i = 0; status == CLOPS_OK && i < sizeof values / sizeof values[0]; i++)
        status =
            device_value(device, values[i].param, values[i].size, values[i].value, values[i].what);
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
            int32_t status = fill_device_info(platforms[p], devices[d], &list[n].info);
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
static os_mutex discovery_lock = OS_MUTEX_INIT;
static const struct candidate *discovered; /* under discovery_lock; read-only once set */
static int32_t discovered_count;

/* The discovered devices (*list is shared and read-only; NULL when there are none). */
static int32_t discover_devices(const struct candidate **list, int32_t *count)
{
    int32_t status = CLOPS_OK;
    log_defer_begin(); /* a log callback may call devices_list */
    os_mutex_lock(&discovery_lock);
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
    os_mutex_unlock(&discovery_lock);
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
    /* The host's elements lie its sizeof apart, which it states in struct_size: stepping by
     * the plugin's would overrun the array of a host built against a smaller struct. */
    const size_t stride = capacity > 0 ? out[0].struct_size : 0;
    for (int32_t i = 0; i < n && i < capacity; i++) {
        void *element = (char *)out + (size_t)i * stride;
        uint32_t size;
        memcpy(&size, element, sizeof size);
        if (size != stride)
            return err_set(CLOPS_ERR_ABI_MISMATCH,
                           "devices_list: out[%d].struct_size = %u but out[0]'s is %u; every "
                           "element holds sizeof(struct clops_device_info)",
                           (int)i, (unsigned)size, (unsigned)stride);
        status = pool_copy_sized(element, &list[i].info, sizeof list[i].info);
        if (status != CLOPS_OK)
            return status;
    }
    *count = n;
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

static cl_command_queue_properties queue_properties(const struct clops_pool *pool)
{
    return pool->cfg.profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
}

int32_t pool_open_queue(const struct clops_pool *pool, struct pool_device *dev, const char *op,
                        cl_command_queue *out)
{
    cl_int rc;
    *out = clCreateCommandQueue(dev->context, dev->device, queue_properties(pool), &rc);
    if (rc == CL_SUCCESS)
        return CLOPS_OK;
    *out = NULL;
    return err_cl(rc, "%s: clCreateCommandQueue on '%s' failed", op, dev->info.name);
}

/* Opens `queues` in-order queues of clops' own on dev's context. */
static int32_t open_queues(struct clops_pool *pool, struct pool_device *dev, int32_t queues)
{
    dev->queues = calloc((size_t)queues, sizeof *dev->queues);
    if (dev->queues == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
    const cl_command_queue_properties qprops = queue_properties(pool);
    for (int32_t q = 0; q < queues; q++) {
        cl_int rc;
        /* clCreateCommandQueue is deprecated in 2.0 but is the call every 1.2 driver has. */
        dev->queues[q] = clCreateCommandQueue(dev->context, dev->device, qprops, &rc);
        if (rc != CL_SUCCESS)
            return err_cl(rc, "pool: clCreateCommandQueue on '%s' failed", dev->info.name);
        dev->queue_count++;
    }
    dev->info.queues = queues;
    return CLOPS_OK;
}

/* What operators and the accounting need of an opened device (dev->device, its context and
 * queues set): its limits, NVIDIA's compute capability, its memory count. */
static int32_t describe_device(struct clops_pool *pool, struct pool_device *dev)
{
    cl_ulong max_alloc = 0;
    int32_t status = device_value(dev->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc,
                                  &max_alloc, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
    if (status != CLOPS_OK)
        return status;
    dev->max_alloc_bytes = (int64_t)max_alloc;
    status = device_value(dev->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dev->max_work_group,
                          &dev->max_work_group, "CL_DEVICE_MAX_WORK_GROUP_SIZE");
    if (status != CLOPS_OK)
        return status;
    cl_uint clock = 0; /* optional: a driver that does not say leaves the estimate to a guess */
    if (clGetDeviceInfo(dev->device, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof clock, &clock, NULL) ==
        CL_SUCCESS)
        dev->clock_mhz = (int32_t)clock;
    status = read_nv_compute_capability(dev->device, &dev->nv_compute_capability);
    if (status != CLOPS_OK)
        return status;
    if (dev->nv_compute_capability > 0)
        log_msg(CLOPS_LOG_INFO, "pool: '%s' has NVIDIA compute capability %d.%d", dev->info.name,
                (int)(dev->nv_compute_capability / 10), (int)(dev->nv_compute_capability % 10));
    status = pool_memory_attach(dev, pool->cfg.device_memory_percent);
    if (status != CLOPS_OK)
        return status;
    atomic_init(&dev->next_queue, 0);
    atomic_init(&dev->tasks, 0);
    atomic_init(&dev->busy_ns, 0);
    return CLOPS_OK;
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
    int32_t status = open_queues(pool, dev, queues);
    return status != CLOPS_OK ? status : describe_device(pool, dev);
}

/* The host's device as devices_list describes it (its platform and device indexes included);
 * one the discovery did not see (a loader of the host's own) is read directly, its indexes -1. */
static int32_t describe_host_device(struct pool_device *dev)
{
    const struct candidate *list = NULL;
    int32_t n = 0;
    int32_t status = discover_devices(&list, &n);
    for (int32_t i = 0; status == CLOPS_OK && i < n; i++)
        if (list[i].device == dev->device) {
            dev->info = list[i].info;
            return CLOPS_OK;
        }
    if (status == CLOPS_OK)
        status = fill_device_info(dev->platform, dev->device, &dev->info);
    dev->info.platform_index = dev->info.device_index = -1;
    return status;
}

int32_t pool_open_host_device(struct clops_pool *pool, cl_context context, cl_device_id device,
                              cl_command_queue queue, struct pool_device *dev)
{
    memset(dev, 0, sizeof *dev);
    dev->index = pool->device_count;
    /* Retained first, so that close_device's releases match on every path; a retain that
     * failed is not released. */
    cl_int rc = clRetainContext(context);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "pool_create_from_cl: clRetainContext failed");
    dev->context = context;
    dev->device = device;
    rc = clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof dev->platform, &dev->platform, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "pool_create_from_cl: clGetDeviceInfo(CL_DEVICE_PLATFORM) failed");
    int32_t status = describe_host_device(dev);
    if (status == CLOPS_OK && queue == NULL)
        status = open_queues(pool, dev, 2);
    if (status == CLOPS_OK && queue != NULL) {
        dev->queues = malloc(sizeof *dev->queues);
        if (dev->queues == NULL)
            return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
        rc = clRetainCommandQueue(queue);
        if (rc != CL_SUCCESS)
            return err_cl(rc, "pool_create_from_cl: clRetainCommandQueue failed");
        dev->queues[0] = queue;
        dev->queue_count = dev->info.queues = 1;
    }
    return status != CLOPS_OK ? status : describe_device(pool, dev);
}

static void close_device(struct pool_device *dev)
{
    /* What the pool enqueued last without a wait (unmapping its pinned blocks) is submitted:
     * a host's queue that outlives the pool may not be flushed again for a while. */
    for (int32_t q = 0; q < dev->queue_count; q++) {
        clFlush(dev->queues[q]);
        clReleaseCommandQueue(dev->queues[q]);
    }
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

/* Discovers the system's devices, opens those the configuration chooses as pool->devices and
 * logs them. On failure, pool->device_count counts the devices to close (pool_close_devices). */
int32_t pool_open_devices(struct clops_pool *pool)
{
    const struct candidate *list = NULL;
    int32_t n = 0, n_chosen = 0;
    int32_t chosen[CONFIG_MAX_DEVICES], queues[CONFIG_MAX_DEVICES];
    int32_t status = discover_devices(&list, &n);
    if (status == CLOPS_OK)
        status = choose_devices(&pool->cfg, list, n, chosen, queues, &n_chosen);
    if (status == CLOPS_OK) {
        pool->devices = calloc((size_t)n_chosen, sizeof *pool->devices);
        if (pool->devices == NULL)
            status = err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
    }
    for (int32_t i = 0; status == CLOPS_OK && i < n_chosen; i++) {
        status = open_device(pool, &list[chosen[i]], queues[i], &pool->devices[i]);
        pool->device_count++; /* counted even on failure, so release closes what was opened */
    }
    return status;
}

void pool_close_devices(struct clops_pool *pool)
{
    for (int32_t i = 0; i < pool->device_count; i++)
        close_device(&pool->devices[i]);
    free(pool->devices);
}

struct pool_device *pool_device_for_op(struct clops_pool *pool, int32_t op_index)
{
    const struct config_op *settings =
        op_index >= 0 && op_index < registry_count() ? pool->op_counters[op_index].settings : NULL;
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

int32_t pool_device_nv_compute_capability(const struct pool_device *dev)
{
    return dev->nv_compute_capability;
}

double pool_device_peak_flops(const struct pool_device *dev, int f64)
{
    /* Flops per compute unit and cycle: a GPU's unit (an NVIDIA SM, an AMD CU) does 64-128
     * f32 fused multiply-adds a cycle, a CPU core 16-32 flops with FMA vectors; f64 at half
     * of that on a CPU, and a 16th on most GPUs (equal to half on data-centre ones: a lower
     * estimate only makes work look longer). */
    const int gpu = dev->info.type == CLOPS_DEVICE_GPU;
    const double per_cycle = gpu ? (f64 ? 128.0 : 256.0) : (f64 ? 16.0 : 32.0);
    const double mhz = dev->clock_mhz > 0 ? dev->clock_mhz : 1000.0;
    const double units = dev->info.compute_units > 0 ? dev->info.compute_units : 1.0;
    return units * mhz * 1e6 * per_cycle;
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

cl_context pool_device_context(const struct pool_device *dev)
{
    return dev->context;
}

cl_device_id pool_device_id(const struct pool_device *dev)
{
    return dev->device;
}

int32_t pool_queue_count(const struct pool_device *dev)
{
    return dev->queue_count;
}

/* Whether `needle` occurs in `text`, ASCII letters compared without case (strcasestr is GNU's). */
static int contains_ignoring_case(const char *text, const char *needle)
{
    const size_t n = strlen(needle);
    for (; *text != '\0'; text++) {
        size_t i = 0;
        while (i < n && text[i] != '\0' &&
               tolower((unsigned char)text[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

int pool_device_matches(const struct pool_device *dev, const char *vendor, int32_t type)
{
    return (type == 0 || type == dev->info.type) &&
           (vendor[0] == '\0' || contains_ignoring_case(dev->info.vendor, vendor));
}
