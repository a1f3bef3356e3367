/* pace.c — cancellation and progress between an operator's units of work (pace.h). */
#include "pace.h"

void pace_begin(struct pace *p, struct op_call *call, cl_command_queue queue, int64_t total,
                const char *unit)
{
    *p = (struct pace){
        .call = call, .queue = queue, .unit = unit, .total = total, .lag = PACE_LAG_MIN};
    call_progress(call, 0, total);
}

/* 1 when step s's marker (not retired) reports its work done, without waiting. */
static int step_complete(const struct pace *p, int64_t s)
{
    cl_int state = CL_QUEUED;
    return clGetEventInfo(p->marks[s % PACE_RING], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state,
                          &state, NULL) == CL_SUCCESS &&
           state == CL_COMPLETE;
}

/* Retires the steps before `end` (their markers released), the last of them waited for when
 * `wait` (the in-order queue finished the others before it); the call's progress is then the
 * units queued with it. */
static cl_int retire_through(struct pace *p, int64_t end, int wait)
{
    if (end <= p->retired)
        return CL_SUCCESS;
    cl_event *last = &p->marks[(end - 1) % PACE_RING];
    cl_int rc = wait ? pool_wait_event(*last) : CL_SUCCESS;
    for (; p->retired < end; p->retired++) {
        cl_event *mark = &p->marks[p->retired % PACE_RING];
        clReleaseEvent(*mark);
        *mark = NULL;
    }
    if (rc == CL_SUCCESS)
        call_progress(p->call, p->marked[(end - 1) % PACE_RING], p->total);
    return rc;
}

/* A submitted call: the step just queued marked and flushed (the device works on while the
 * host waits); the lag doubled when the device had finished the step before it already; then
 * the marker of the step `lag` before it waited for. */
static int32_t keep_lag(struct pace *p)
{
    const char *op = p->call->impl->desc->name;
    const int64_t step = p->steps;
    cl_int rc = clEnqueueMarkerWithWaitList(p->queue, 0, NULL, &p->marks[step % PACE_RING]);
    if (rc != CL_SUCCESS) {
        p->marks[step % PACE_RING] = NULL;
        return err_cl(rc, "%s: pacing its %s on the device failed", op, p->unit);
    }
    p->marked[step % PACE_RING] = p->queued;
    p->steps++;
    rc = clFlush(p->queue);
    if (rc == CL_SUCCESS && step > p->retired && step_complete(p, step - 1)) {
        p->lag = p->lag * 2 < PACE_LAG_MAX ? p->lag * 2 : PACE_LAG_MAX;
        rc = retire_through(p, step, 0);
    }
    if (rc == CL_SUCCESS)
        rc = retire_through(p, step + 1 - p->lag, 1);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: pacing its %s on the device failed", op, p->unit);
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
    for (; p->retired < p->steps; p->retired++) {
        cl_event *mark = &p->marks[p->retired % PACE_RING];
        if (*mark != NULL)
            clReleaseEvent(*mark);
        *mark = NULL;
    }
}
