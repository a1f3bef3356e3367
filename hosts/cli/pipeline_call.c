/* pipeline_call.c — one operator call of a step: submitted on the run's stream (ABI 1.4) and
 * waited for in short slices, so that the progress display shows how far the call is (LU's
 * panels, a large GEMM's blocks, Mandelbrot's tiles); through invoke where the library has no
 * streams. Its outcome reads as the synchronous call's: the same status and message. A SIGINT or
 * SIGTERM caught meanwhile (interrupt.h) cancels the call, which is still waited for: its host
 * memory is in use until it ends. */
#include <stdio.h>

#include "interrupt.h"
#include "pipeline_run.h"

/* How long one wait lasts before the call's progress is read again: well under the display's
 * redraw (200 ms), and long enough that waiting costs nothing next to the call. */
enum { WAIT_SLICE_NS = 100 * 1000 * 1000 };

/* ABI 1.4's stream_create .. event_release. */
static int has_streams(const struct clops_api *api)
{
    return CLOPS_API_HAS(api, event_release);
}

int run_stream_open(struct run *r)
{
    const struct clops_api *api = r->cli->lib.api;
    if (!has_streams(api))
        return CLI_OK;
    struct clops_stream_create_args a = {.struct_size = sizeof a, .pool = r->pool->pool};
    if (api->stream_create(&a) != CLOPS_OK)
        return run_error(r, CLI_FAILED, "%scannot open a stream on the pool: %s", r->prefix,
                         api->last_error());
    r->stream = a.stream;
    return CLI_OK;
}

void run_stream_close(struct run *r)
{
    if (r->stream == NULL)
        return;
    struct clops_stream_release_args a = {.struct_size = sizeof a, .stream = r->stream};
    r->cli->lib.api->stream_release(&a);
    r->stream = NULL;
}

/* The event's outcome once it has one, its progress fed to the display until then; cancelled
 * within a slice of a signal caught. */
static void wait_for(struct run *r, struct clops_event *event, struct clops_event_query_args *q)
{
    const struct clops_api *api = r->cli->lib.api;
    struct clops_event_wait_args w = {
        .struct_size = sizeof w, .count = 1, .events = &event, .timeout_ns = WAIT_SLICE_NS};
    int cancelled = 0;
    for (;;) {
        if (!cancelled && interrupt_signal() != 0) {
            struct clops_event_cancel_args c = {.struct_size = sizeof c, .event = event};
            api->event_cancel(&c);
            cancelled = 1;
        }
        int32_t waited = api->event_wait(&w);
        *q = (struct clops_event_query_args){.struct_size = sizeof *q, .event = event};
        if (api->event_query(q) != CLOPS_OK) {
            q->status = CLOPS_ERR_INTERNAL;
            q->message = api->last_error();
            return;
        }
        if (q->state >= CLOPS_EVENT_COMPLETE)
            return;
        if (waited != CLOPS_OK && waited != CLOPS_ERR_TIMEOUT) {
            /* A wait that cannot be made would spin: the call is left to finish at release. */
            q->status = waited;
            q->message = api->last_error();
            return;
        }
        progress_call_fraction(r->progress, q->progress);
    }
}

int32_t run_call(struct run *r, const struct clops_op *op, const struct clops_arg *args,
                 int32_t count)
{
    const struct clops_api *api = r->cli->lib.api;
    if (interrupt_signal() != 0) {
        snprintf(r->call_error, sizeof r->call_error, "not started: %s came first",
                 interrupt_signal_name(interrupt_signal()));
        return CLOPS_ERR_CANCELLED;
    }
    if (r->stream == NULL) {
        int32_t status = api->invoke(r->pool->pool, op, args, count);
        if (status != CLOPS_OK)
            snprintf(r->call_error, sizeof r->call_error, "%s", api->last_error());
        return status;
    }
    struct clops_submit_args s = {.struct_size = sizeof s,
                                  .op_index = api->op_index(op),
                                  .stream = r->stream,
                                  .args = args,
                                  .nargs = count,
                                  .arg_size = sizeof(struct clops_arg)};
    int32_t status = api->submit(&s);
    if (status != CLOPS_OK) {
        /* Refused by its checks: nothing was queued, and the message is the thread's. */
        snprintf(r->call_error, sizeof r->call_error, "%s", api->last_error());
        return status;
    }
    struct clops_event_query_args q;
    wait_for(r, s.event, &q);
    status = q.status;
    /* The message lives until the event's release. */
    if (status != CLOPS_OK)
        snprintf(r->call_error, sizeof r->call_error, "%s", q.message);
    struct clops_event_release_args release = {.struct_size = sizeof release, .event = s.event};
    api->event_release(&release);
    return status;
}
