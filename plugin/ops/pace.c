/* pace.c — cancellation and progress between an operator's units of work (pace.h). */
#include "pace.h"

void pace_begin(struct pace *p, struct op_call *call, cl_command_queue queue, int64_t total,
                const char *unit)
{
    *p = (struct pace){.call = call, .queue = queue, .unit = unit, .total = total};
    call_progress(call, 0, total);
}

/* A submitted call: the step just queued marked and flushed (the device works on while the
 * host waits), then the marker of the step PACE_LAG before it waited for. */
static int32_t keep_lag(struct pace *p)
{
    const char *op = p->call->impl->desc->name;
    const int slot = (int)(p->steps++ % PACE_LAG);
    cl_event *mark = &p->marks[slot];
    cl_event older = *mark; /* step steps - 1 - PACE_LAG's, or NULL */
    const int64_t older_units = p->marked[slot];
    *mark = NULL;
    p->marked[slot] = p->queued;
    cl_int rc = clEnqueueMarkerWithWaitList(p->queue, 0, NULL, mark);
    if (rc == CL_SUCCESS)
        rc = clFlush(p->queue);
    if (rc == CL_SUCCESS && older != NULL)
        rc = clWaitForEvents(1, &older);
    if (older != NULL)
        clReleaseEvent(older);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: pacing its %s on the device failed", op, p->unit);
    if (older != NULL)
        call_progress(p->call, older_units, p->total);
    return CLOPS_OK;
}

int32_t pace_unit_queued(struct pace *p)
{
    return pace_units_queued(p, 1);
}

int32_t pace_units_queued(struct pace *p, int64_t units)
{
    if (p->call == NULL)
        return CLOPS_OK;
    p->queued += units;
    if (p->call->control != NULL && p->call->control->submitted) {
        int32_t status = keep_lag(p);
        if (status != CLOPS_OK)
            return status;
    }
    if (call_cancel_requested(p->call))
        return call_refuse_cancelled(p->call, p->queued, p->total, p->unit);
    return CLOPS_OK;
}

void pace_complete(struct pace *p)
{
    if (p->call != NULL)
        call_progress(p->call, p->total, p->total);
}

void pace_release(struct pace *p)
{
    for (int i = 0; i < PACE_LAG; i++)
        if (p->marks[i] != NULL) {
            clReleaseEvent(p->marks[i]);
            p->marks[i] = NULL;
        }
}
