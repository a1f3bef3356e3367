/* stream.c — clops_stream (stream.h): a queue, its jobs in two lists (queued, started) and the
 * two threads that move them along: the starter enqueues, the completer finishes. */
#include "stream.h"

#include "platform.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "event.h"
#include "registry.h"

/* Jobs started and not yet finished, at most: enough for a call's transfers to overlap the
 * kernels of the one before it and the download of the one before that, few enough that the
 * staging blocks they hold (pinned host memory) stay a handful. */
enum { STREAM_DEPTH = 3, STREAM_MESSAGE_MAX = 1024 };

enum job_kind { JOB_CALL, JOB_WORK, JOB_WAIT, JOB_CALLBACK };

struct stream_job {
    struct stream_job *next;
    enum job_kind kind;
    const char *name;          /* the operator's, or the function's, for messages (static) */
    struct clops_event *event; /* held by the job; NULL for JOB_WAIT */
    struct call *call;         /* JOB_CALL */
    struct stream_work work;   /* JOB_WORK */
    cl_event done;             /* JOB_WORK: its end marker */
    int32_t status;            /* JOB_WORK: its status so far */
    /* What it waits for: events held until it starts, or, those it waits for on the device,
     * until it ends (their outcome is checked then); the host's cl_events, retained. */
    struct clops_event **waits;
    int32_t wait_count;
    cl_event *cl_waits;
    int32_t cl_wait_count;
    int32_t *device_wait; /* wait_count flags: waits[i] is waited for on the device */
    char message[STREAM_MESSAGE_MAX];
};

struct clops_stream {
    atomic_int holds; /* the host's until stream_release, and one per event */
    struct clops_pool *pool;
    struct pool_device *dev;
    int32_t device;
    cl_command_queue queue;
    cl_context context;
    os_mutex lock; /* guards what follows */
    os_cond changed;
    struct stream_job *queued, *queued_tail;   /* submitted, not started */
    struct stream_job *started, *started_tail; /* started, not finished */
    int32_t started_count;
    int32_t starting;   /* the starter holds a job it took off `queued` */
    int32_t delivering; /* jobs retired whose callback has not returned or holds not gone yet */
    int32_t released, stopping, starter_done, free_on_exit;
    os_thread starter, completer;
};

static _Thread_local struct clops_stream *own_stream; /* the stream whose thread this is */

/* ---- Jobs ---- */

static void append(struct stream_job **head, struct stream_job **tail, struct stream_job *job)
{
    job->next = NULL;
    if (*tail != NULL)
        (*tail)->next = job;
    else
        *head = job;
    *tail = job;
}

static struct stream_job *pop(struct stream_job **head, struct stream_job **tail)
{
    struct stream_job *job = *head;
    *head = job->next;
    if (*head == NULL)
        *tail = NULL;
    return job;
}

/* Lets go of what the job still holds of what it waited for. */
static void drop_waits(struct stream_job *job)
{
    for (int32_t i = 0; i < job->wait_count; i++)
        if (job->waits[i] != NULL)
            event_unhold(job->waits[i]);
    for (int32_t i = 0; i < job->cl_wait_count; i++)
        clReleaseEvent(job->cl_waits[i]);
    job->wait_count = job->cl_wait_count = 0;
}

static void free_job(struct stream_job *job)
{
    drop_waits(job);
    if (job->call != NULL)
        call_free(job->call);
    if (job->kind == JOB_WORK && job->work.release != NULL)
        job->work.release(job->work.ctx);
    if (job->done != NULL)
        clReleaseEvent(job->done);
    if (job->event != NULL)
        event_unhold(job->event);
    free(job->waits);
    free(job->cl_waits);
    free(job->device_wait);
    free(job);
}

/* A job with copies of `waits` (each event held, each cl_event retained). */
static int32_t new_job(enum job_kind kind, const struct stream_waits *waits, const char *what,
                       struct stream_job **out)
{
    struct stream_job *job = calloc(1, sizeof *job);
    const int32_t n = waits != NULL ? waits->count : 0, m = waits != NULL ? waits->cl_count : 0;
    if (job != NULL && n > 0) {
        job->waits = calloc((size_t)n, sizeof *job->waits);
        job->device_wait = calloc((size_t)n, sizeof *job->device_wait);
    }
    if (job != NULL && m > 0)
        job->cl_waits = calloc((size_t)m, sizeof *job->cl_waits);
    if (job == NULL || (n > 0 && (job->waits == NULL || job->device_wait == NULL)) ||
        (m > 0 && job->cl_waits == NULL)) {
        if (job != NULL)
            free_job(job);
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: cannot allocate a job", what);
    }
    job->kind = kind;
    for (int32_t i = 0; i < n; i++) {
        job->waits[i] = waits->events[i];
        event_hold(job->waits[i]);
    }
    job->wait_count = n;
    for (int32_t i = 0; i < m; i++) {
        cl_int rc = clRetainEvent(waits->cl_events[i]);
        if (rc != CL_SUCCESS) {
            free_job(job);
            return err_cl(rc, "%s: cl_wait_events[%d]: clRetainEvent failed", what, (int)i);
        }
        job->cl_waits[job->cl_wait_count++] = waits->cl_events[i];
    }
    *out = job;
    return CLOPS_OK;
}

/* ---- The starter ---- */

/* Waits, for a job about to start, until no started call of the stream writes host memory
 * that it reads or writes, or writes device buffers after its parts (call_writes_back): the
 * stream's promise that a job sees the results of the calls submitted before it, host outputs
 * included (those are written when a call finishes). */
static void wait_for_host_writers(struct clops_stream *s, struct stream_job *job)
{
    for (;;) {
        struct clops_event *writer = NULL;
        os_mutex_lock(&s->lock);
        for (struct stream_job *j = s->started; j != NULL && writer == NULL; j = j->next)
            if (j->kind == JOB_CALL &&
                (call_writes_back(j->call) ||
                 (job->kind == JOB_CALL && call_host_overlaps(j->call, job->call)))) {
                writer = j->event;
                event_hold(writer);
            }
        os_mutex_unlock(&s->lock);
        if (writer == NULL)
            return;
        char ignored[8];
        event_await_outcome(writer, ignored, sizeof ignored); /* its outcome is its own */
        event_unhold(writer);
    }
}

/* Waits for what the job waits for: on the host where it must (an event writing host memory,
 * or of another context), else through a barrier on the stream's queue. CLOPS_OK, or why the
 * job must not start (in job->message). */
static int32_t resolve_waits(struct clops_stream *s, struct stream_job *job)
{
    int32_t status = CLOPS_OK;
    if (job->wait_count == 0 && job->cl_wait_count == 0)
        return CLOPS_OK;
    cl_event *device = calloc((size_t)job->wait_count + (size_t)job->cl_wait_count, sizeof *device);
    if (device == NULL) {
        snprintf(job->message, sizeof job->message, "%s: cannot allocate its wait list", job->name);
        return CLOPS_ERR_OUT_OF_HOST_MEMORY;
    }
    cl_uint n = 0;
    /* A call stops at the first wait that failed; stream_wait waits for every outcome. */
    for (int32_t i = 0; i < job->wait_count && status == CLOPS_OK; i++) {
        cl_event w = NULL;
        status = event_await_for(job->event, job->waits[i], s->context, &w, job->message,
                                 sizeof job->message);
        if (job->kind == JOB_WAIT)
            status = CLOPS_OK;
        if (w != NULL) {
            device[n++] = w;
            job->device_wait[i] = 1; /* kept: its outcome is checked when the job ends */
        } else {
            event_unhold(job->waits[i]);
            job->waits[i] = NULL;
        }
    }
    for (int32_t i = 0; i < job->cl_wait_count; i++)
        device[n++] = job->cl_waits[i];
    if (status == CLOPS_OK && n > 0) {
        cl_int rc = clEnqueueBarrierWithWaitList(s->queue, n, device, NULL);
        if (rc != CL_SUCCESS)
            status =
                err_cl(rc, "%s: its wait list: clEnqueueBarrierWithWaitList failed", job->name);
        if (rc != CL_SUCCESS)
            snprintf(job->message, sizeof job->message, "%s", err_last());
    }
    for (cl_uint i = 0; i < n - (cl_uint)job->cl_wait_count; i++)
        clReleaseEvent(device[i]);
    free(device);
    return status;
}

/* Enqueues the job's work (nothing waits for the device here). */
static void start_job(struct clops_stream *s, struct stream_job *job)
{
    err_clear();
    if (job->kind == JOB_CALLBACK)
        return;
    int32_t status = resolve_waits(s, job);
    if (job->kind == JOB_WAIT)
        return;
    if (job->kind == JOB_CALL) {
        if (status != CLOPS_OK) {
            call_fail(job->call, status, job->message);
            return;
        }
        wait_for_host_writers(s, job);
        if (call_split_submit(job->call, s->queue)) {
            event_started(job->event, NULL, 1); /* waited for on the host (call.h says why) */
            return;
        }
        call_start(job->call, s->queue);
        /* Submitted to the device now, not when the completer first waits for it. */
        clFlush(s->queue);
        event_started(job->event, call_done_marker(job->call), call_writes_host(job->call));
        return;
    }
    if (status == CLOPS_OK)
        wait_for_host_writers(s, job);
    if (status == CLOPS_OK && atomic_load(&event_control(job->event)->cancel))
        status = err_set(CLOPS_ERR_CANCELLED, "buffer_copy: cancelled before it started");
    else if (status == CLOPS_OK)
        status = job->work.start(job->work.ctx, s->queue);
    if (status != CLOPS_OK && job->message[0] == '\0')
        snprintf(job->message, sizeof job->message, "%s", err_last());
    if (status == CLOPS_OK) {
        cl_int rc = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &job->done);
        if (rc != CL_SUCCESS) {
            job->done = NULL;
            status = err_cl(rc, "buffer_copy: clEnqueueMarkerWithWaitList failed");
            snprintf(job->message, sizeof job->message, "%s", err_last());
        }
    }
    job->status = status;
    event_started(job->event, job->done, 0);
}

static void *starter_main(void *arg)
{
    struct clops_stream *s = arg;
    own_stream = s;
    event_mark_stream_thread();
    os_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stopping &&
               (s->queued == NULL || (s->started_count >= STREAM_DEPTH && s->queued != NULL)))
            os_cond_wait(&s->changed, &s->lock);
        if (s->queued == NULL)
            break; /* stopping, and nothing left */
        struct stream_job *job = pop(&s->queued, &s->queued_tail);
        s->starting = 1; /* in neither list while it starts: stream_release waits for it */
        os_mutex_unlock(&s->lock);
        start_job(s, job);
        os_mutex_lock(&s->lock);
        if (job->kind == JOB_WAIT) {
            os_mutex_unlock(&s->lock);
            free_job(job);
            os_mutex_lock(&s->lock);
        } else {
            append(&s->started, &s->started_tail, job);
            s->started_count++;
        }
        s->starting = 0;
        os_cond_broadcast(&s->changed);
    }
    s->starter_done = 1;
    os_cond_broadcast(&s->changed);
    os_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- The completer ---- */

/* A started job's end: waits for its work and finishes it; its status, the message in the
 * call's error (a call) or job->message. */
static int32_t finish_job(struct stream_job *job)
{
    err_clear();
    /* What it waited for on the device may have failed after its device work (a check done at
     * its finish): then this job's results are not to be committed either. */
    for (int32_t i = 0; i < job->wait_count; i++) {
        char why[STREAM_MESSAGE_MAX];
        if (job->waits[i] == NULL || !job->device_wait[i] ||
            event_await_outcome(job->waits[i], why, sizeof why) == CLOPS_OK)
            continue;
        if (job->kind == JOB_CALL)
            call_fail(job->call, CLOPS_ERR_CANCELLED, why);
        else if (job->status == CLOPS_OK) {
            job->status = CLOPS_ERR_CANCELLED;
            snprintf(job->message, sizeof job->message, "%s", why);
        }
    }
    if (job->kind == JOB_CALL)
        return call_complete(job->call);
    if (job->done != NULL) {
        cl_int rc = pool_wait_event(job->done);
        if (rc != CL_SUCCESS && job->status == CLOPS_OK) {
            job->status = err_cl(rc, "buffer_copy: waiting for the device failed");
            snprintf(job->message, sizeof job->message, "%s", err_last());
        }
    }
    if (job->status == CLOPS_OK && atomic_load(&event_control(job->event)->cancel)) {
        job->status = CLOPS_ERR_CANCELLED;
        snprintf(job->message, sizeof job->message,
                 "buffer_copy: cancelled after it was enqueued; the copy may have been made");
    }
    return job->status;
}

static void stream_destroy(struct clops_stream *s);

/* Takes the oldest started job off the list, once it has finished (its host outputs written):
 * from then on the starter no longer waits for it. */
static void retire(struct clops_stream *s, struct stream_job *job)
{
    os_mutex_lock(&s->lock);
    pop(&s->started, &s->started_tail);
    s->started_count--;
    s->delivering++;
    os_cond_broadcast(&s->changed);
    os_mutex_unlock(&s->lock);
    (void)job;
}

/* Finishes the oldest started job, settles its event and delivers its callback, under no lock. */
static void complete_job(struct clops_stream *s, struct stream_job *job)
{
    clops_event_fn fn = NULL;
    void *user = NULL;
    if (job->kind == JOB_CALLBACK) {
        retire(s, job);
        event_take_callback(job->event, &fn, &user);
    } else {
        int32_t status = finish_job(job);
        retire(s, job);
        const char *message =
            job->kind == JOB_CALL ? call_error_of(job->call)->message : job->message;
        event_settle(job->event, status, message, &fn, &user);
    }
    event_deliver(job->event, fn, user);
    /* The job's holds go before stream_release, which waits for `delivering`, may return: were
     * the last of them dropped here after it returned, this thread would free the stream (and
     * its pool) while the host goes on, unloads the library or ends the process. It may still
     * drop the last hold here when no host thread waits (a release in a callback): then this
     * thread frees the stream as it exits (completer_main). */
    free_job(job);
    os_mutex_lock(&s->lock);
    s->delivering--;
    os_cond_broadcast(&s->changed);
    os_mutex_unlock(&s->lock);
}

static void *completer_main(void *arg)
{
    struct clops_stream *s = arg;
    own_stream = s;
    event_mark_stream_thread();
    os_mutex_lock(&s->lock);
    for (;;) {
        while (s->started == NULL && !(s->stopping && s->starter_done))
            os_cond_wait(&s->changed, &s->lock);
        if (s->started == NULL)
            break;
        struct stream_job *job = s->started;
        os_mutex_unlock(&s->lock);
        complete_job(s, job);
        os_mutex_lock(&s->lock);
    }
    const int free_here = s->free_on_exit;
    os_mutex_unlock(&s->lock);
    if (free_here) {
        os_thread_join(s->starter);
        os_thread_detach(s->completer);
        stream_destroy(s);
    }
    return NULL;
}

/* ---- The stream ---- */

static void stream_destroy(struct clops_stream *s)
{
    clReleaseCommandQueue(s->queue);
    os_cond_destroy(&s->changed);
    os_mutex_destroy(&s->lock);
    struct clops_pool *pool = s->pool;
    free(s);
    pool_unhold(pool);
}

/* Stops the threads once what is queued has ended, and frees the stream: here, or, on a thread
 * of the stream itself (its last hold dropped in a callback), by its completer as it exits. */
static void stream_stop(struct clops_stream *s)
{
    os_mutex_lock(&s->lock);
    s->stopping = 1;
    s->free_on_exit = own_stream == s;
    os_cond_broadcast(&s->changed);
    os_mutex_unlock(&s->lock);
    if (own_stream == s)
        return;
    os_thread_join(s->starter);
    os_thread_join(s->completer);
    stream_destroy(s);
}

void stream_hold(struct clops_stream *s)
{
    atomic_fetch_add(&s->holds, 1);
}

void stream_unhold(struct clops_stream *s)
{
    if (atomic_fetch_sub(&s->holds, 1) == 1)
        stream_stop(s);
}

/* A queue for the stream: the host's, checked to be of the pool's context and device and in
 * order, or one of its own. */
static int32_t stream_queue(struct clops_pool *pool, struct pool_device *dev, cl_command_queue host,
                            cl_command_queue *out)
{
    if (host == NULL)
        return pool_open_queue(pool, dev, "stream_create", out);
    cl_context context = NULL;
    cl_device_id device = NULL;
    cl_command_queue_properties props = 0;
    cl_int rc = clGetCommandQueueInfo(host, CL_QUEUE_CONTEXT, sizeof context, &context, NULL);
    if (rc == CL_SUCCESS)
        rc = clGetCommandQueueInfo(host, CL_QUEUE_DEVICE, sizeof device, &device, NULL);
    if (rc == CL_SUCCESS)
        rc = clGetCommandQueueInfo(host, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "stream_create: parameter 'cl_queue' is not a command queue");
    if (context != pool_device_context(dev) || device != pool_device_id(dev))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "stream_create: parameter 'cl_queue' belongs to another context or device "
                       "than the pool's device %d",
                       (int)pool_device_index(dev));
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "stream_create: parameter 'cl_queue' is an out-of-order queue; a stream "
                       "needs an in-order one");
    rc = clRetainCommandQueue(host);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "stream_create: clRetainCommandQueue failed");
    *out = host;
    return CLOPS_OK;
}

int32_t stream_create(struct clops_pool *pool, int32_t device, cl_command_queue host_queue,
                      struct clops_stream **out)
{
    *out = NULL;
    if (device < 0 || device >= pool_device_count(pool))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "stream_create: parameter 'device' = %d; the pool has %d device(s)",
                       (int)device, (int)pool_device_count(pool));
    struct clops_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "stream_create: out of host memory");
    int32_t status = pool_hold(pool, "stream_create");
    if (status != CLOPS_OK) {
        free(s);
        return status;
    }
    s->pool = pool;
    s->device = device;
    s->dev = pool_device_at(pool, device);
    s->context = pool_device_context(s->dev);
    atomic_init(&s->holds, 1);
    status = stream_queue(pool, s->dev, host_queue, &s->queue);
    if (status != CLOPS_OK) {
        free(s);
        pool_unhold(pool);
        return status;
    }
    os_mutex_init(&s->lock);
    os_cond_init(&s->changed);
    if (os_thread_start(&s->starter, starter_main, s) != 0) {
        stream_destroy(s);
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "stream_create: cannot start a thread");
    }
    if (os_thread_start(&s->completer, completer_main, s) != 0) {
        os_mutex_lock(&s->lock);
        s->stopping = 1;
        os_cond_broadcast(&s->changed);
        os_mutex_unlock(&s->lock);
        os_thread_join(s->starter);
        stream_destroy(s);
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "stream_create: cannot start a thread");
    }
    *out = s;
    return CLOPS_OK;
}

int32_t stream_release(struct clops_stream *s)
{
    os_mutex_lock(&s->lock);
    if (s->released) {
        os_mutex_unlock(&s->lock);
        return CLOPS_OK; /* a second release does nothing */
    }
    s->released = 1;
    /* Waits until every job submitted has ended, but on a thread of a stream (a callback),
     * where waiting could wait for itself. */
    while (own_stream == NULL &&
           (s->queued != NULL || s->starting || s->started != NULL || s->delivering > 0))
        os_cond_wait(&s->changed, &s->lock);
    os_mutex_unlock(&s->lock);
    stream_unhold(s);
    return CLOPS_OK;
}

cl_context stream_context(const struct clops_stream *s)
{
    return s->context;
}

struct clops_pool *stream_pool(const struct clops_stream *s)
{
    return s->pool;
}

int32_t stream_device(const struct clops_stream *s)
{
    return s->device;
}

/* ---- Submitting ---- */

/* Refuses waits on events of another pool, and NULL entries: `what` names the function. */
static int32_t check_waits(const struct clops_stream *s, const struct stream_waits *w,
                           const char *what)
{
    if (w == NULL)
        return CLOPS_OK;
    if (w->count < 0 || (w->count > 0 && w->events == NULL) || w->cl_count < 0 ||
        (w->cl_count > 0 && w->cl_events == NULL))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: wait lists: %d events at %p, %d cl_events at %p; expected counts >= "
                       "0 and arrays non-NULL when their count is > 0",
                       what, (int)w->count, (const void *)w->events, (int)w->cl_count,
                       (const void *)w->cl_events);
    for (int32_t i = 0; i < w->count; i++) {
        if (w->events[i] == NULL)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: wait event %d is NULL", what, (int)i);
        if (stream_pool(event_stream(w->events[i])) != s->pool)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: wait event %d is of another pool's stream; calls wait only "
                           "for calls of their pool",
                           what, (int)i);
    }
    for (int32_t i = 0; i < w->cl_count; i++)
        if (w->cl_events[i] == NULL)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: cl_wait_events[%d] is NULL", what,
                           (int)i);
    return CLOPS_OK;
}

/* Queues `job` (with a new event in *out when it has one) for the starter. */
static int32_t enqueue_job(struct clops_stream *s, struct stream_job *job, const char *what)
{
    os_mutex_lock(&s->lock);
    if (s->released) {
        os_mutex_unlock(&s->lock);
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: the stream was released", what);
    }
    append(&s->queued, &s->queued_tail, job);
    os_cond_broadcast(&s->changed);
    os_mutex_unlock(&s->lock);
    return CLOPS_OK;
}

/* A job of `kind` with its waits and a new event: the event is the job's and, once queued, the
 * host's (event_new's two holds). */
static int32_t new_job_with_event(struct clops_stream *s, enum job_kind kind,
                                  const struct stream_waits *waits, const char *what,
                                  struct stream_job **out)
{
    int32_t status = check_waits(s, waits, what);
    if (status == CLOPS_OK)
        status = new_job(kind, waits, what, out);
    if (status != CLOPS_OK)
        return status;
    status = event_new(s, what, &(*out)->event);
    if (status != CLOPS_OK) {
        free_job(*out);
        *out = NULL;
    }
    return status;
}

int32_t stream_submit(struct clops_stream *s, int32_t index, const union op_value *values,
                      const struct stream_waits *waits, clops_event_fn fn, void *user,
                      struct clops_event **out)
{
    *out = NULL;
    struct stream_job *job = NULL;
    const struct clops_op *op = registry_at(index);
    char what[96];
    snprintf(what, sizeof what, "%s: submit", op != NULL ? op->name : "?");
    int32_t status = new_job_with_event(s, JOB_CALL, waits, what, &job);
    if (status == CLOPS_OK) {
        job->name = op->name;
        status = call_prepare(s->pool, index, s->dev, values, &job->call);
    }
    if (status == CLOPS_OK) {
        call_set_control(job->call, event_control(job->event));
        if (fn != NULL) {
            struct clops_event_callback_args cb = {sizeof cb, 0, job->event, fn, user};
            status = event_on_complete(&cb);
        }
    }
    struct clops_event *e = job != NULL ? job->event : NULL;
    if (status == CLOPS_OK)
        status = enqueue_job(s, job, what);
    if (status != CLOPS_OK) {
        if (job != NULL) {
            event_unhold(e); /* the host's hold; free_job drops the job's */
            free_job(job);
        }
        return status;
    }
    *out = e;
    return CLOPS_OK;
}

int32_t stream_submit_work(struct clops_stream *s, const struct stream_work *work,
                           const struct stream_waits *waits, struct clops_event **out)
{
    *out = NULL;
    struct stream_job *job = NULL;
    int32_t status = new_job_with_event(s, JOB_WORK, waits, "buffer_copy", &job);
    if (status != CLOPS_OK) {
        work->release(work->ctx);
        return status;
    }
    job->name = "buffer_copy";
    job->work = *work;
    struct clops_event *e = job->event;
    status = enqueue_job(s, job, "buffer_copy");
    if (status != CLOPS_OK) {
        event_unhold(e);
        free_job(job); /* releases the work */
        return status;
    }
    *out = e;
    return CLOPS_OK;
}

int32_t stream_wait_events(struct clops_stream *s, struct clops_event *const *events, int32_t count)
{
    const struct stream_waits waits = {events, count, NULL, 0};
    int32_t status = check_waits(s, &waits, "stream_wait");
    struct stream_job *job = NULL;
    if (status == CLOPS_OK)
        status = new_job(JOB_WAIT, &waits, "stream_wait", &job);
    if (status == CLOPS_OK)
        job->name = "stream_wait";
    if (status == CLOPS_OK)
        status = enqueue_job(s, job, "stream_wait");
    if (status != CLOPS_OK && job != NULL)
        free_job(job);
    return status;
}

int32_t stream_post_callback(struct clops_stream *s, struct clops_event *e)
{
    struct stream_job *job = NULL;
    int32_t status = new_job(JOB_CALLBACK, NULL, "event_on_complete", &job);
    if (status != CLOPS_OK)
        return status;
    job->event = e;
    event_hold(e);
    /* Straight to the completer, after the jobs started before it: a released stream still
     * delivers the callbacks of its events. */
    os_mutex_lock(&s->lock);
    append(&s->started, &s->started_tail, job);
    s->started_count++;
    os_cond_broadcast(&s->changed);
    os_mutex_unlock(&s->lock);
    return CLOPS_OK;
}
