/* pool_launch.c — kernel launches: enqueued for a call's one wait at its end (pool_work), chained
 * on an in-order queue (LU), or one at a time and waited for; with their device time when
 * profiling, and per-kernel times when kernel_times is on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"
#include "pool_internal.h"

/* The launches of the chain running on this thread, while one is traced: a chain's kernels all
 * go on one thread's queue between pool_chain_begin and pool_chain_end. */
static _Thread_local struct {
    int on;
    int count, capacity;
    struct pool_launch_event *launches;
} trace;

static void kernel_name(cl_kernel kernel, char name[POOL_KERNEL_NAME_MAX])
{
    if (clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, POOL_KERNEL_NAME_MAX, name, NULL) !=
        CL_SUCCESS)
        snprintf(name, POOL_KERNEL_NAME_MAX, "?");
    name[POOL_KERNEL_NAME_MAX - 1] = '\0';
}

/* An event's start and end in the device's ns; 0 when the driver gives none. */
static int event_span(cl_event event, cl_ulong *start, cl_ulong *end)
{
    return clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof *start, start, NULL) ==
               CL_SUCCESS &&
           clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof *end, end, NULL) ==
               CL_SUCCESS &&
           *end >= *start;
}

/* An event's run time in ns, or 0 when the driver gives none. */
static int64_t event_ns(cl_event event)
{
    cl_ulong start = 0, end = 0;
    return event_span(event, &start, &end) ? (int64_t)(end - start) : 0;
}

/* Keeps `event` for the traced chain; returns 0 when it could not (then it is released). */
static int trace_keep(cl_kernel kernel, cl_event event)
{
    if (trace.count == trace.capacity) {
        int capacity = trace.capacity ? 2 * trace.capacity : 256;
        struct pool_launch_event *grown = realloc(trace.launches, (size_t)capacity * sizeof *grown);
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

static void release_events(struct pool_launch_event *launches, int count)
{
    for (int i = 0; i < count; i++)
        clReleaseEvent(launches[i].event);
}

/* Drops the traced launches (a chain that failed, or one never ended). */
static void trace_reset(void)
{
    release_events(trace.launches, trace.count);
    free(trace.launches);
    trace.launches = NULL;
    trace.count = trace.capacity = 0;
    trace.on = 0;
}

/* The device whose queue ran `event`, or NULL. */
static cl_device_id event_device(cl_event event)
{
    cl_command_queue queue = NULL;
    cl_device_id device = NULL;
    if (clGetEventInfo(event, CL_EVENT_COMMAND_QUEUE, sizeof queue, &queue, NULL) != CL_SUCCESS ||
        queue == NULL ||
        clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, NULL) != CL_SUCCESS)
        return NULL;
    return device;
}

enum { TIMES_DEVICES = 16 }; /* devices told apart by kernel_times; more are counted as the last */

/* Logs the device time of completed `launches` by kernel, in the order the kernels first ran.
 * Launches on several devices (a call across devices) are logged by device, in the order the
 * devices first ran one, each with its busy time and the span from its first launch's start to
 * its last's end: their difference is the time the device stood idle inside the call. Their
 * names are used up (emptied). */
static void log_kernel_times(const char *what, struct pool_launch_event *launches, int count)
{
    cl_device_id devices[TIMES_DEVICES];
    int device_count = 0;
    unsigned char *index = malloc(count > 0 ? (size_t)count : 1);
    for (int i = 0; i < count && index != NULL; i++) {
        cl_device_id device = event_device(launches[i].event);
        int d = 0;
        while (d < device_count && devices[d] != device)
            d++;
        if (d == device_count && device_count < TIMES_DEVICES)
            devices[device_count++] = device;
        index[i] = (unsigned char)(d < device_count ? d : device_count - 1);
    }
    const int split = index != NULL && device_count > 1;
    for (int d = 0; d < (split ? device_count : 1); d++) {
        int launched = 0;
        double busy = 0;
        cl_ulong first = 0, last = 0;
        for (int i = 0; i < count; i++) {
            const char *name = launches[i].kernel;
            if (name[0] == '\0' || (split && index[i] != d))
                continue; /* counted with an earlier launch of its kernel, or another device's */
            int n = 0;
            double ms = 0;
            for (int j = i; j < count; j++) {
                if ((split && index[j] != d) || strcmp(launches[j].kernel, name) != 0)
                    continue;
                n++;
                cl_ulong start = 0, end = 0;
                if (event_span(launches[j].event, &start, &end)) {
                    ms += (double)(end - start) * 1e-6;
                    first = first == 0 || start < first ? start : first;
                    last = end > last ? end : last;
                }
                if (j != i)
                    launches[j].kernel[0] = '\0';
            }
            if (split)
                log_msg(CLOPS_LOG_INFO, "%s: device %d: kernel %s: %d launches, %.3f ms", what, d,
                        name, n, ms);
            else
                log_msg(CLOPS_LOG_INFO, "%s: kernel %s: %d launches, %.3f ms", what, name, n, ms);
            launched += n;
            busy += ms;
            launches[i].kernel[0] = '\0';
        }
        if (split)
            log_msg(CLOPS_LOG_INFO, "%s: device %d: %d launches, busy %.3f ms of a span of %.3f ms",
                    what, d, launched, busy, (double)(last - first) * 1e-6);
    }
    free(index);
}

void pool_chain_drop(void)
{
    trace_reset();
}

/* Logs the traced chain's device time by kernel and releases its events. */
static void trace_report(const char *what)
{
    log_kernel_times(what, trace.launches, trace.count);
    trace_reset();
}

/* Waits for one launch, adds its device time to *device_ns (when profiling and device_ns is not
 * NULL) and logs it (kernel_times); releases the event. */
static int32_t wait_launch(struct clops_pool *pool, cl_kernel kernel, cl_event event,
                           int64_t *device_ns, const char *what)
{
    cl_int rc = pool_wait_event(event);
    if (rc == CL_SUCCESS && pool->cfg.profiling && device_ns != NULL)
        *device_ns += event_ns(event);
    if (rc == CL_SUCCESS && pool->cfg.profiling && pool->cfg.kernel_times) {
        char name[POOL_KERNEL_NAME_MAX];
        kernel_name(kernel, name);
        log_msg(CLOPS_LOG_INFO, "%s: kernel %s: 1 launch, %.3f ms", what, name,
                (double)event_ns(event) * 1e-6);
    }
    clReleaseEvent(event);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: kernel execution failed", what);
    return CLOPS_OK;
}

/* ---- A call's work -------------------------------------------------------------------------- */

int32_t pool_launch_kernel(struct clops_pool *pool, struct pool_work *work, cl_command_queue queue,
                           cl_kernel kernel, cl_uint dims, const size_t *global,
                           const size_t *local, const char *what)
{
    /* Without profiling no event is asked for: the driver then need not make one. */
    cl_event event = NULL;
    cl_int rc = clEnqueueNDRangeKernel(queue, kernel, dims, NULL, global, local, 0, NULL,
                                       pool->cfg.profiling ? &event : NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clEnqueueNDRangeKernel failed", what);
    if (event == NULL)
        return CLOPS_OK;
    if (work->events == work->event_capacity) {
        const int32_t capacity = work->event_capacity ? 2 * work->event_capacity : POOL_WORK_EVENTS;
        struct pool_launch_event *grown =
            realloc(work->event, (size_t)capacity * sizeof *work->event);
        if (grown == NULL)
            return wait_launch(pool, kernel, event, &work->device_ns, what);
        work->event = grown;
        work->event_capacity = capacity;
    }
    struct pool_launch_event *kept = &work->event[work->events++];
    kept->event = event;
    kept->kernel[0] = '\0';
    if (pool->cfg.kernel_times)
        kernel_name(kernel, kept->kernel);
    return CLOPS_OK;
}

void pool_work_give_scratch(struct clops_pool *pool, struct pool_work *work, cl_command_queue queue,
                            struct pool_device *dev, cl_mem mem, int64_t zero_at,
                            int64_t zero_bytes)
{
    if (mem == NULL)
        return;
    if (work->scratches == work->scratch_capacity) {
        const int32_t capacity =
            work->scratch_capacity ? 2 * work->scratch_capacity : POOL_WORK_SCRATCH;
        struct pool_work_scratch *grown =
            realloc(work->scratch, (size_t)capacity * sizeof *work->scratch);
        if (grown != NULL) {
            work->scratch = grown;
            work->scratch_capacity = capacity;
        }
    }
    if (work->scratches < work->scratch_capacity) {
        work->scratch[work->scratches++] =
            (struct pool_work_scratch){dev, mem, zero_at, zero_bytes};
        return;
    }
    if (clFinish(queue) == CL_SUCCESS)
        pool_scratch_give(pool, dev, mem, zero_at, zero_bytes);
    else
        pool_free_device_memory(dev, mem);
}

/* Gives the call's scratch back to the pool after its work succeeded, else releases it. */
static void settle_scratch(struct clops_pool *pool, struct pool_work *work, int succeeded)
{
    for (int i = 0; i < work->scratches; i++) {
        if (succeeded)
            pool_scratch_give(pool, work->scratch[i].dev, work->scratch[i].mem,
                              work->scratch[i].zero_at, work->scratch[i].zero_bytes);
        else
            pool_free_device_memory(work->scratch[i].dev, work->scratch[i].mem);
    }
    work->scratches = 0;
    free(work->scratch);
    work->scratch = NULL;
    work->scratch_capacity = 0;
}

int32_t pool_work_end(struct pool_work *work, cl_command_queue queue, const char *what)
{
    cl_int rc = clEnqueueMarkerWithWaitList(queue, 0, NULL, &work->done);
    if (rc != CL_SUCCESS) {
        work->done = NULL;
        return err_cl(rc, "%s: clEnqueueMarkerWithWaitList failed", what);
    }
    return CLOPS_OK;
}

int pool_event_over(cl_event event)
{
    cl_int state = CL_COMPLETE;
    if (event != NULL && clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state,
                                        &state, NULL) != CL_SUCCESS)
        state = CL_COMPLETE;
    return state == CL_COMPLETE || state < 0;
}

cl_int pool_wait_event(cl_event event)
{
    cl_int rc = clWaitForEvents(1, &event);
    cl_command_queue queue = NULL;
    int64_t pause_ns = 20000;
    while (rc == CL_SUCCESS) {
        cl_int state = CL_COMPLETE;
        if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, NULL) !=
            CL_SUCCESS)
            break; /* the wait succeeded; the state is only a check */
        if (state <= CL_COMPLETE) {
            rc = state; /* CL_COMPLETE (0), or the event's command failed */
            break;
        }
        if (queue == NULL &&
            clGetEventInfo(event, CL_EVENT_COMMAND_QUEUE, sizeof queue, &queue, NULL) != CL_SUCCESS)
            queue = NULL;
        if (queue != NULL)
            clFlush(queue);
        os_sleep_ns(pause_ns);
        pause_ns = pause_ns < 1000000 ? pause_ns * 2 : 1000000;
    }
    return rc;
}

void pool_work_poll(struct pool_device *dev, cl_command_queue queue)
{
    if (dev == NULL || dev->info.type != CLOPS_DEVICE_CPU)
        return;
    if (atomic_load(&dev->poll_score) < 0) {
        atomic_fetch_add(&dev->poll_score, 1); /* sitting out: one call fewer to go */
        return;
    }
    cl_event marker = NULL;
    if (clEnqueueMarkerWithWaitList(queue, 0, NULL, &marker) != CL_SUCCESS)
        return;
    cl_int state = CL_QUEUED;
    if (clFlush(queue) == CL_SUCCESS) {
        const int64_t start = os_monotonic_ns();
        /* No yield between looks: a yielding thread measured slower (the driver's threads
         * were then scheduled behind it), and the look is bounded. */
        while (clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state,
                              NULL) == CL_SUCCESS &&
               state > CL_COMPLETE && os_monotonic_ns() - start < POOL_POLL_NS) {
        }
    }
    clReleaseEvent(marker);
    if (state == CL_COMPLETE) {
        atomic_fetch_add(&dev->polled_ends, 1);
        if (atomic_load(&dev->poll_score) < 8)
            atomic_fetch_add(&dev->poll_score, 1);
    } else if (state > CL_COMPLETE) {
        atomic_fetch_add(&dev->poll_timeouts, 1);
        atomic_store(&dev->poll_score, -POOL_POLL_REST);
    }
}

void pool_device_poll_counts(const struct pool_device *dev, int64_t *ends, int64_t *timeouts)
{
    *ends = atomic_load(&dev->polled_ends);
    *timeouts = atomic_load(&dev->poll_timeouts);
}

/* Waits until nothing the call enqueued on `queue` runs any more: its end marker, where it has
 * one (pool_wait_event), else the whole queue. A wait that failed may have returned before the
 * work ended: the host blocks and buffers the call gives back next must not be in use any more,
 * so it waits for the queue once again. */
static cl_int wait_work(struct pool_work *work, cl_command_queue queue)
{
    cl_int rc = work->done != NULL ? pool_wait_event(work->done) : clFinish(queue);
    if (rc != CL_SUCCESS)
        clFinish(queue);
    if (work->done != NULL)
        clReleaseEvent(work->done);
    work->done = NULL;
    return rc;
}

static void settle_chain(struct pool_work *work, int succeeded, int64_t *device_ns,
                         const char *what);

int32_t pool_work_finish(struct clops_pool *pool, struct pool_work *work, cl_command_queue queue,
                         int32_t status, int64_t *device_ns, const char *what)
{
    cl_int rc = wait_work(work, queue);
    const int succeeded = status == CLOPS_OK && rc == CL_SUCCESS;
    if (succeeded) {
        int64_t ns = work->device_ns;
        for (int i = 0; i < work->events; i++)
            ns += event_ns(work->event[i].event);
        *device_ns += ns;
        if (pool->cfg.kernel_times)
            log_kernel_times(what, work->event, work->events);
    }
    release_events(work->event, work->events);
    free(work->event);
    work->event = NULL;
    work->events = work->event_capacity = 0;
    work->device_ns = 0;
    settle_chain(work, succeeded, device_ns, what);
    settle_scratch(pool, work, succeeded);
    if (status == CLOPS_OK && rc != CL_SUCCESS)
        status = err_cl(rc, "%s: waiting for the device failed", what);
    return status;
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

int32_t pool_chain_close(struct clops_pool *pool, struct pool_work *work, cl_command_queue queue,
                         cl_event start, const char *what)
{
    (void)pool;
    cl_event end = NULL;
    cl_int rc = start != NULL ? clEnqueueMarkerWithWaitList(queue, 0, NULL, &end) : CL_SUCCESS;
    if (rc != CL_SUCCESS) {
        if (start != NULL)
            clReleaseEvent(start);
        trace_reset();
        return err_cl(rc, "%s: clEnqueueMarkerWithWaitList failed", what);
    }
    work->chain_start = start;
    work->chain_end = end;
    /* The traced launches change hands: trace_reset must not release them. */
    work->chain_launches = trace.launches;
    work->chain_count = trace.count;
    trace.launches = NULL;
    trace.count = trace.capacity = 0;
    trace.on = 0;
    return CLOPS_OK;
}

/* After the call's wait: the closed chain's device time into *device_ns, and its kernels'
 * times logged, when it succeeded; its events released either way. */
static void settle_chain(struct pool_work *work, int succeeded, int64_t *device_ns,
                         const char *what)
{
    if (succeeded && work->chain_start != NULL && work->chain_end != NULL) {
        cl_ulong t0 = event_time(work->chain_start, CL_PROFILING_COMMAND_START);
        cl_ulong t1 = event_time(work->chain_end, CL_PROFILING_COMMAND_END);
        if (t0 != 0 && t1 > t0)
            *device_ns += (int64_t)(t1 - t0);
    }
    if (succeeded && work->chain_count > 0)
        log_kernel_times(what, work->chain_launches, work->chain_count);
    release_events(work->chain_launches, work->chain_count);
    free(work->chain_launches);
    if (work->chain_start != NULL)
        clReleaseEvent(work->chain_start);
    if (work->chain_end != NULL)
        clReleaseEvent(work->chain_end);
    work->chain_launches = NULL;
    work->chain_count = 0;
    work->chain_start = work->chain_end = NULL;
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
