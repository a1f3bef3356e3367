/* event.c — clops_event (event.h): the outcome of a submitted call, waited for through one
 * process-wide lock and condition, which every outcome wakes (waits on several events, of
 * several streams, need one condition; outcomes are rare next to the work they end). */
#include "event.h"

#include "platform.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stream.h"

enum { CALLBACK_NONE = 0, CALLBACK_REGISTERED = 1, CALLBACK_TAKEN = 2 };

struct clops_event {
    atomic_int holds;
    struct clops_stream *stream; /* held while the event lives */
    struct call_control control;
    /* Guarded by events_lock. */
    int32_t state;       /* enum clops_event_state */
    int32_t status;      /* the outcome's, once settled */
    char *message;       /* the outcome's, or NULL for "" */
    cl_event done;       /* the device work's end marker, retained; NULL before it starts */
    int32_t writes_host; /* the call writes host memory after `done` */
    cl_event exported;   /* event_cl_event's user event, or NULL */
    int32_t callback;    /* CALLBACK_* */
    clops_event_fn fn;
    void *user;
};

static os_mutex events_lock = OS_MUTEX_INIT;
static os_cond events_changed;
static os_once events_once = OS_ONCE_INIT;
static _Thread_local int on_stream_thread;

/* os_cond_init's conditions measure timeouts on the monotonic clock: a host's clock change does
 * not shorten or stretch event_wait. */
static void init_condition(void)
{
    os_cond_init(&events_changed);
}

static int has_outcome(const struct clops_event *e)
{
    return e->state >= CLOPS_EVENT_COMPLETE;
}

void event_mark_stream_thread(void)
{
    on_stream_thread = 1;
}

int32_t event_new(struct clops_stream *stream, const char *what, struct clops_event **out)
{
    os_call_once(&events_once, init_condition);
    struct clops_event *e = calloc(1, sizeof *e);
    if (e == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: cannot allocate an event", what);
    atomic_init(&e->holds, 2);
    atomic_init(&e->control.cancel, 0);
    atomic_init(&e->control.done, 0);
    atomic_init(&e->control.total, 0);
    e->control.submitted = 1;
    e->control.part = 0;
    e->state = CLOPS_EVENT_QUEUED;
    e->stream = stream;
    stream_hold(stream);
    *out = e;
    return CLOPS_OK;
}

void event_hold(struct clops_event *e)
{
    atomic_fetch_add(&e->holds, 1);
}

void event_unhold(struct clops_event *e)
{
    if (e == NULL || atomic_fetch_sub(&e->holds, 1) != 1)
        return;
    if (e->done != NULL)
        clReleaseEvent(e->done);
    if (e->exported != NULL)
        clReleaseEvent(e->exported);
    struct clops_stream *stream = e->stream;
    free(e->message);
    free(e);
    stream_unhold(stream);
}

struct call_control *event_control(struct clops_event *e)
{
    return &e->control;
}

struct clops_stream *event_stream(const struct clops_event *e)
{
    return e->stream;
}

void event_started(struct clops_event *e, cl_event done, int32_t writes_host)
{
    /* Without a reference of its own the event has no marker: waiters then wait on the host. */
    if (done != NULL && clRetainEvent(done) != CL_SUCCESS)
        done = NULL;
    os_mutex_lock(&events_lock);
    e->done = done;
    e->writes_host = writes_host;
    if (e->state == CLOPS_EVENT_QUEUED)
        e->state = CLOPS_EVENT_RUNNING;
    os_cond_broadcast(&events_changed);
    os_mutex_unlock(&events_lock);
}

void event_settle(struct clops_event *e, int32_t status, const char *message, clops_event_fn *fn,
                  void **user)
{
    /* Allocated before the lock; without memory the status still tells the outcome. */
    char *copy = status != CLOPS_OK && message != NULL ? strdup(message) : NULL;
    os_mutex_lock(&events_lock);
    e->status = status;
    e->message = copy;
    e->state = status == CLOPS_OK              ? CLOPS_EVENT_COMPLETE
               : status == CLOPS_ERR_CANCELLED ? CLOPS_EVENT_CANCELLED
                                               : CLOPS_EVENT_FAILED;
    if (status == CLOPS_OK)
        atomic_store(&e->control.done, atomic_load(&e->control.total));
    *fn = NULL;
    *user = NULL;
    if (e->callback == CALLBACK_REGISTERED) {
        e->callback = CALLBACK_TAKEN;
        *fn = e->fn;
        *user = e->user;
    }
    cl_event exported = e->exported;
    os_cond_broadcast(&events_changed);
    os_mutex_unlock(&events_lock);
    /* A negative status tells the host's waiters that the call did not succeed. */
    if (exported != NULL)
        clSetUserEventStatus(exported, status == CLOPS_OK ? CL_COMPLETE : CL_INVALID_OPERATION);
}

void event_take_callback(struct clops_event *e, clops_event_fn *fn, void **user)
{
    os_mutex_lock(&events_lock);
    *fn = NULL;
    *user = NULL;
    if (e->callback == CALLBACK_REGISTERED && has_outcome(e)) {
        e->callback = CALLBACK_TAKEN;
        *fn = e->fn;
        *user = e->user;
    }
    os_mutex_unlock(&events_lock);
}

void event_deliver(struct clops_event *e, clops_event_fn fn, void *user)
{
    if (fn == NULL)
        return;
    os_mutex_lock(&events_lock);
    const int32_t status = e->status;
    os_mutex_unlock(&events_lock);
    fn(e, status, user);
    err_clear(); /* what the callback's own clops calls left is not the stream's */
}

/* e's failure as a dependency's: "a call it waits for failed: <its message>". */
static int32_t dependency_failed(const struct clops_event *e, char *message, size_t size)
{
    snprintf(message, size, "a call it waits for %s: %s",
             e->state == CLOPS_EVENT_CANCELLED ? "was cancelled" : "failed",
             e->message != NULL ? e->message : err_status_name(e->status));
    return CLOPS_ERR_CANCELLED;
}

int32_t event_await_for(struct clops_event *waiter, struct clops_event *e, cl_context context,
                        cl_event *device_wait, char *message, size_t size)
{
    *device_wait = NULL;
    int32_t status = CLOPS_OK;
    os_mutex_lock(&events_lock);
    for (;;) {
        if (has_outcome(e)) {
            if (e->state != CLOPS_EVENT_COMPLETE)
                status = dependency_failed(e, message, size);
            break;
        }
        if (e->done != NULL && !e->writes_host && stream_context(e->stream) == context &&
            clRetainEvent(e->done) == CL_SUCCESS) {
            *device_wait = e->done;
            break;
        }
        if (waiter != NULL && atomic_load(&waiter->control.cancel)) {
            snprintf(message, size, "cancelled while it waited for another call");
            status = CLOPS_ERR_CANCELLED;
            break;
        }
        os_cond_wait(&events_changed, &events_lock);
    }
    os_mutex_unlock(&events_lock);
    return status;
}

int32_t event_await(struct clops_event *e, cl_context context, cl_event *device_wait, char *message,
                    size_t size)
{
    return event_await_for(NULL, e, context, device_wait, message, size);
}

int32_t event_await_outcome(struct clops_event *e, char *message, size_t size)
{
    os_mutex_lock(&events_lock);
    while (!has_outcome(e))
        os_cond_wait(&events_changed, &events_lock);
    int32_t status =
        e->state == CLOPS_EVENT_COMPLETE ? CLOPS_OK : dependency_failed(e, message, size);
    os_mutex_unlock(&events_lock);
    return status;
}

/* ---- The table's functions ---- */

int32_t event_query(struct clops_event_query_args *args)
{
    struct clops_event *e = args->event;
    os_mutex_lock(&events_lock);
    args->state = e->state;
    args->status = has_outcome(e) ? e->status : CLOPS_OK;
    args->message = e->message != NULL ? e->message : "";
    os_mutex_unlock(&events_lock);
    const int64_t done = atomic_load(&e->control.done), total = atomic_load(&e->control.total);
    args->progress = args->state == CLOPS_EVENT_COMPLETE ? 1.0
                     : total > 0 ? (double)(done < total ? done : total) / (double)total
                                 : 0.0;
    return CLOPS_OK;
}

/* How many of `events` have their outcome, and one of them (*ready, -1 if none). */
static int32_t count_settled(struct clops_event *const *events, int32_t count, int32_t *ready)
{
    int32_t settled = 0;
    *ready = -1;
    for (int32_t i = 0; i < count; i++)
        if (has_outcome(events[i])) {
            settled++;
            if (*ready < 0)
                *ready = i;
        }
    return settled;
}

int32_t event_wait(struct clops_event_wait_args *args)
{
    const int32_t want = args->wait_all ? args->count : (args->count > 0 ? 1 : 0);
    /* Far enough never to overflow: a "no limit" wait is 100 years. */
    const int64_t limit =
        args->timeout_ns < 0 ? (int64_t)3155760000 * 1000000000 : args->timeout_ns;
    const int64_t now = os_monotonic_ns();
    const int64_t deadline = limit > INT64_MAX - now ? INT64_MAX : now + limit;
    /* Refused whether or not the events have their outcome, so that a callback that would
     * deadlock some day fails every time. */
    if (args->timeout_ns != 0 && on_stream_thread)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "event_wait: called from a completion callback with timeout_ns = %lld; "
                       "a callback may only look (timeout_ns = 0): a wait there could wait "
                       "for its own stream",
                       (long long)args->timeout_ns);
    os_mutex_lock(&events_lock);
    int32_t ready = -1;
    int32_t settled = count_settled(args->events, args->count, &ready);
    int timed_out = 0;
    while (settled < want && args->timeout_ns != 0 && !timed_out) {
        timed_out = os_cond_wait_until(&events_changed, &events_lock, deadline);
        settled = count_settled(args->events, args->count, &ready);
    }
    os_mutex_unlock(&events_lock);
    args->ready = ready;
    if (settled < want)
        return err_set(CLOPS_ERR_TIMEOUT,
                       "event_wait: %d of the %d events have their outcome after %lld ns; "
                       "waited for %s",
                       (int)settled, (int)args->count, (long long)args->timeout_ns,
                       args->wait_all ? "all" : "one");
    return CLOPS_OK;
}

int32_t event_on_complete(struct clops_event_callback_args *args)
{
    struct clops_event *e = args->event;
    os_mutex_lock(&events_lock);
    if (e->callback != CALLBACK_NONE) {
        os_mutex_unlock(&events_lock);
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "event_on_complete: the event has a completion callback already "
                       "(one per event)");
    }
    e->callback = CALLBACK_REGISTERED;
    e->fn = args->fn;
    e->user = args->user;
    const int late = has_outcome(e);
    os_mutex_unlock(&events_lock);
    /* Settled already: its stream's thread delivers it, as it would have. */
    return late ? stream_post_callback(e->stream, e) : CLOPS_OK;
}

int32_t event_cancel(struct clops_event_cancel_args *args)
{
    atomic_store(&args->event->control.cancel, 1);
    /* Wakes a stream thread waiting, for this call, for another. */
    os_mutex_lock(&events_lock);
    os_cond_broadcast(&events_changed);
    os_mutex_unlock(&events_lock);
    return CLOPS_OK;
}

void event_release(struct clops_event *e)
{
    event_unhold(e);
}

int32_t event_cl_event(struct clops_event_cl_args *args)
{
    struct clops_event *e = args->event;
    args->cl_event = NULL;
    os_mutex_lock(&events_lock);
    cl_event user = e->exported;
    os_mutex_unlock(&events_lock);
    if (user == NULL) {
        cl_int rc = CL_SUCCESS;
        cl_event made = clCreateUserEvent(stream_context(e->stream), &rc);
        if (rc != CL_SUCCESS)
            return err_cl(rc, "event_cl_event: clCreateUserEvent failed");
        os_mutex_lock(&events_lock);
        if (e->exported == NULL) {
            e->exported = made;
            made = NULL;
        }
        user = e->exported;
        const int settled = has_outcome(e) && made == NULL;
        const int32_t status = e->status;
        os_mutex_unlock(&events_lock);
        if (made != NULL)
            clReleaseEvent(made); /* another thread made one first */
        else if (settled)
            clSetUserEventStatus(user, status == CLOPS_OK ? CL_COMPLETE : CL_INVALID_OPERATION);
    }
    cl_int rc = clRetainEvent(user);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "event_cl_event: clRetainEvent failed");
    args->cl_event = user;
    return CLOPS_OK;
}
