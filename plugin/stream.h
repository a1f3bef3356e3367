/* stream.h — clops_stream (ABI 1.4): an in-order queue of a pool device and the two threads
 * that run what is submitted to it. The starter takes jobs in submission order, waits for what
 * each waits for, and enqueues its work (call_start: stage, enqueue, download) without waiting
 * for the device; the completer takes started jobs in the same order, waits for each one's end
 * marker, finishes it (call_complete: the commit into host memory, the statistics), settles its
 * event and delivers its callback. So a call's uploads and kernels overlap the one before it,
 * and callbacks run on a thread of clops, under no lock of it. */
#ifndef CLOPS_STREAM_H
#define CLOPS_STREAM_H

#include <stdint.h>

#include "op.h"

struct clops_event;

/* A stream on device `device` of `pool`, on `host_queue` (retained; in order, on the pool's
 * context and that device) or on a queue of its own (NULL). Holds the pool. */
int32_t stream_create(struct clops_pool *pool, int32_t device, cl_command_queue host_queue,
                      struct clops_stream **out);
/* The host's release (stream_release in clops.h). */
int32_t stream_release(struct clops_stream *s);
void stream_hold(struct clops_stream *s);
void stream_unhold(struct clops_stream *s);

cl_context stream_context(const struct clops_stream *s);
struct clops_pool *stream_pool(const struct clops_stream *s);
int32_t stream_device(const struct clops_stream *s);

/* What a job waits for before it starts: events (held by the job until it ends) and the host's
 * cl_events (retained). Copied by the submit functions. */
struct stream_waits {
    struct clops_event *const *events;
    int32_t count;
    const cl_event *cl_events;
    int32_t cl_count;
};

/* Submits a call of the operator at `index` with `values`: checked on the caller's thread
 * (refused: its status, the thread's message, nothing queued), else queued with a new event in
 * *out, the host's. `fn` (NULL: none) is its completion callback. */
int32_t stream_submit(struct clops_stream *s, int32_t index, const union op_value *values,
                      const struct stream_waits *waits, clops_event_fn fn, void *user,
                      struct clops_event **out);

/* Device work that is no operator call (buffer_copy): `start` enqueues it on the stream's queue
 * without waiting (a failure: its status and the thread's message); `release` frees `ctx` once
 * the work has ended or will never start. */
struct stream_work {
    int32_t (*start)(void *ctx, cl_command_queue queue);
    void (*release)(void *ctx);
    void *ctx;
};
/* Queues `work` like a call (after the stream's earlier jobs and `waits`), with a new event in
 * *out. On a refusal `work.release` has run. */
int32_t stream_submit_work(struct clops_stream *s, const struct stream_work *work,
                           const struct stream_waits *waits, struct clops_event **out);

/* Calls submitted to `s` after this start once `events` have their outcome (stream_wait). */
int32_t stream_wait_events(struct clops_stream *s, struct clops_event *const *events,
                           int32_t count);

/* Has the completer deliver the callback registered on `e` (of `s`) after its outcome. */
int32_t stream_post_callback(struct clops_stream *s, struct clops_event *e);

#endif
