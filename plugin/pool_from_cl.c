/* pool_from_cl.c — a pool on the host's OpenCL objects (ABI 1.4 interop, oneDNN's rules): its
 * context, devices and optional queues are checked before anything is touched, retained while
 * the pool lives and released, never freed, at its end. */
#include <stdio.h>
#include <stdlib.h>

#include "cl_names.h"
#include "pool_internal.h"

static const char entry[] = "pool_create_from_cl";

/* An OpenCL query on a host object that failed: the host handed a wrong object (an invalid
 * handle is its error, named as its parameter), or the driver failed (a device error). */
static int32_t refuse_query(cl_int rc, const char *param, int32_t index, const char *query)
{
    const int invalid =
        rc == CL_INVALID_CONTEXT || rc == CL_INVALID_DEVICE || rc == CL_INVALID_COMMAND_QUEUE;
    if (!invalid)
        return err_cl(rc, "%s: %s failed", entry, query);
    if (index < 0)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter '%s' is not valid: %s gives %s",
                       entry, param, query, cl_error_name(rc));
    return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter '%s[%d]' is not valid: %s gives %s",
                   entry, param, (int)index, query, cl_error_name(rc));
}

/* The devices of the host's context, in memory the caller frees. */
static int32_t context_devices(cl_context context, cl_device_id **out, size_t *count)
{
    *out = NULL;
    size_t bytes = 0;
    cl_int rc = clGetContextInfo(context, CL_CONTEXT_DEVICES, 0, NULL, &bytes);
    if (rc != CL_SUCCESS)
        return refuse_query(rc, "cl_context", -1, "clGetContextInfo(CL_CONTEXT_DEVICES)");
    *count = bytes / sizeof **out;
    *out = malloc(bytes > 0 ? bytes : 1);
    if (*out == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", entry);
    rc = clGetContextInfo(context, CL_CONTEXT_DEVICES, bytes, *out, NULL);
    return rc == CL_SUCCESS
               ? CLOPS_OK
               : refuse_query(rc, "cl_context", -1, "clGetContextInfo(CL_CONTEXT_DEVICES)");
}

/* cl_devices[i] is a device of the context, and not one listed before it. */
static int32_t check_device(void *const *devices, int32_t i, const cl_device_id *in_context,
                            size_t count)
{
    if (devices[i] == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'cl_devices[%d]' is NULL", entry,
                       (int)i);
    for (int32_t k = 0; k < i; k++)
        if (devices[k] == devices[i])
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter 'cl_devices[%d]' repeats cl_devices[%d]; each device "
                           "is in the pool once",
                           entry, (int)i, (int)k);
    for (size_t k = 0; k < count; k++)
        if ((void *)in_context[k] == devices[i])
            return CLOPS_OK;
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter 'cl_devices[%d]' is not a device of 'cl_context' (which has "
                   "%zu; CL_CONTEXT_DEVICES)",
                   entry, (int)i, count);
}

/* A fixed-size property of the host's queue cl_queues[i]. */
static int32_t queue_value(cl_command_queue queue, int32_t i, cl_command_queue_info param,
                           const char *query, size_t size, void *value)
{
    cl_int rc = clGetCommandQueueInfo(queue, param, size, value, NULL);
    return rc == CL_SUCCESS ? CLOPS_OK : refuse_query(rc, "cl_queues", i, query);
}

/* cl_queues[i] is an in-order queue of the context on cl_devices[i], which profiles when the
 * configuration asks for kernel times (they are read from the queue's events). */
static int32_t check_queue(const struct clops_pool_from_cl_args *a, int32_t i, int32_t profiling)
{
    cl_command_queue queue = a->cl_queues[i];
    if (queue == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'cl_queues[%d]' is NULL (give device_count queues, or "
                       "cl_queues = NULL for queues of clops' own)",
                       entry, (int)i);
    cl_context context = NULL;
    cl_device_id device = NULL;
    cl_command_queue_properties props = 0;
    int32_t status =
        queue_value(queue, i, CL_QUEUE_CONTEXT, "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)",
                    sizeof context, &context);
    if (status == CLOPS_OK)
        status = queue_value(queue, i, CL_QUEUE_DEVICE, "clGetCommandQueueInfo(CL_QUEUE_DEVICE)",
                             sizeof device, &device);
    if (status == CLOPS_OK)
        status = queue_value(queue, i, CL_QUEUE_PROPERTIES,
                             "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)", sizeof props, &props);
    if (status != CLOPS_OK)
        return status;
    if ((void *)context != a->cl_context)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'cl_queues[%d]' is a queue of another context than "
                       "'cl_context'",
                       entry, (int)i);
    if ((void *)device != a->cl_devices[i])
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'cl_queues[%d]' is a queue of another device than "
                       "cl_devices[%d]",
                       entry, (int)i, (int)i);
    /* The lifecycle orders a call's steps by the queue's order alone. */
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'cl_queues[%d]' is out of order "
                       "(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE); clops needs in-order queues",
                       entry, (int)i);
    if (profiling && !(props & CL_QUEUE_PROFILING_ENABLE))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'cl_queues[%d]' does not profile "
                       "(CL_QUEUE_PROFILING_ENABLE), which config_text's profiling or "
                       "kernel_times asks for",
                       entry, (int)i);
    return CLOPS_OK;
}

/* The configuration: config_text's, or the defaults; never devices, which are the host's. */
static int32_t read_config(const char *text, struct pool_config *cfg)
{
    config_defaults(cfg);
    snprintf(cfg->source, sizeof cfg->source, "%s", "<pool_create_from_cl>");
    if (text == NULL)
        return CLOPS_OK;
    int32_t status = config_parse_string(text, cfg);
    if (status == CLOPS_OK && cfg->devices_line > 0)
        status = err_set(CLOPS_ERR_CONFIG,
                         "%s:%d: devices: refused by %s, whose devices are the host's "
                         "(cl_devices); leave the devices section out of config_text",
                         cfg->source, (int)cfg->devices_line, entry);
    return status;
}

/* Every argument, before anything is retained or made. */
static int32_t check_args(const struct clops_pool_from_cl_args *a, const struct pool_config *cfg)
{
    if (a->cl_context == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'cl_context' is NULL", entry);
    if (a->device_count <= 0)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'device_count' = %d; expected at least 1", entry,
                       (int)a->device_count);
    if (a->cl_devices == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'cl_devices' is NULL", entry);
    cl_device_id *in_context = NULL;
    size_t count = 0;
    int32_t status = context_devices(a->cl_context, &in_context, &count);
    for (int32_t i = 0; status == CLOPS_OK && i < a->device_count; i++)
        status = check_device(a->cl_devices, i, in_context, count);
    free(in_context);
    for (int32_t i = 0; status == CLOPS_OK && a->cl_queues != NULL && i < a->device_count; i++)
        status = check_queue(a, i, cfg->profiling);
    return status;
}

static int32_t open_host_devices(struct clops_pool *pool, const void *ctx)
{
    const struct clops_pool_from_cl_args *a = ctx;
    pool->devices = calloc((size_t)a->device_count, sizeof *pool->devices);
    if (pool->devices == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", entry);
    int32_t status = CLOPS_OK;
    for (int32_t i = 0; status == CLOPS_OK && i < a->device_count; i++) {
        status =
            pool_open_host_device(pool, a->cl_context, a->cl_devices[i],
                                  a->cl_queues != NULL ? a->cl_queues[i] : NULL, &pool->devices[i]);
        pool->device_count++; /* counted even on failure, so release closes what was opened */
    }
    return status;
}

int32_t pool_create_from_cl(struct clops_pool_from_cl_args *args)
{
    args->pool = NULL;
    struct pool_config cfg;
    int32_t status = read_config(args->config_text, &cfg);
    if (status == CLOPS_OK)
        status = check_args(args, &cfg);
    if (status == CLOPS_OK)
        status = pool_create_with(&cfg, open_host_devices, args, &args->pool);
    return status;
}
