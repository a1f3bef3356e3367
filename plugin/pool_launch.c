/* pool_launch.c — kernel launches: one at a time (waited for) or chained on an in-order queue,
 * with their device time when profiling, and per-kernel times when kernel_times is on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool_internal.h"

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
