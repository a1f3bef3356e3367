/* event.h — the outcome of one submitted call (clops_event, ABI 1.4): its state, status and
 * message, its progress and cancel request, its completion callback, and the cl_events that
 * stand for it. Made and settled by its stream (stream.c); read, waited for, cancelled and
 * released by the host through the table. */
#ifndef CLOPS_EVENT_H
#define CLOPS_EVENT_H

#include <stdint.h>

#include "op.h"

struct clops_stream;

/* A new event of `stream` (held by it), queued, with two holds: the host's and its job's.
 * `what` names the function in the message. */
int32_t event_new(struct clops_stream *stream, const char *what, struct clops_event **out);
void event_hold(struct clops_event *e);
/* Drops a hold; the last frees the event and lets go of its stream. */
void event_unhold(struct clops_event *e);

/* What the call's steps read and write: the cancel request and the progress. */
struct call_control *event_control(struct clops_event *e);
struct clops_stream *event_stream(const struct clops_event *e);

/* The call's device work is enqueued: `done` (retained here; NULL: none) completes when it has,
 * `writes_host` whether the call then writes host memory. The state becomes running. */
void event_started(struct clops_event *e, cl_event done, int32_t writes_host);

/* The outcome: state complete (status CLOPS_OK), cancelled (CLOPS_ERR_CANCELLED) or failed,
 * with `message`. Wakes the waiters and completes the cl_event handed out. Returns the
 * callback to deliver now (*fn NULL: none registered yet), which the caller runs with no lock
 * held (event_deliver). Once only. */
void event_settle(struct clops_event *e, int32_t status, const char *message, clops_event_fn *fn,
                  void **user);
/* Runs a callback taken from event_settle or event_take_callback on the calling stream thread. */
void event_deliver(struct clops_event *e, clops_event_fn fn, void *user);
/* A callback registered after the outcome, for its stream's thread to deliver (stream.c):
 * *fn NULL when there is none to deliver. */
void event_take_callback(struct clops_event *e, clops_event_fn *fn, void **user);

/* What a call that waits for `e` needs, blocking until it is known. Returns CLOPS_OK with
 * *device_wait NULL (e completed), or with *device_wait a retained cl_event that the waiting
 * work can wait for on the device instead (e's device work is enqueued, it writes no host
 * memory and its queue shares `context`): e's outcome may still be a failure found after its
 * device work, which call_complete checks with event_failed. Or e failed or was cancelled:
 * CLOPS_ERR_CANCELLED and the reason in `message`. */
int32_t event_await(struct clops_event *e, cl_context context, cl_event *device_wait, char *message,
                    size_t size);
/* The same, for the call of `waiter`, which stops waiting once that call is cancelled:
 * CLOPS_ERR_CANCELLED, "cancelled while it waited for another call". */
int32_t event_await_for(struct clops_event *waiter, struct clops_event *e, cl_context context,
                        cl_event *device_wait, char *message, size_t size);
/* Blocks until e has its outcome; CLOPS_OK, or CLOPS_ERR_CANCELLED with the reason, as above. */
int32_t event_await_outcome(struct clops_event *e, char *message, size_t size);

/* Whether the calling thread is a stream's (where waits are refused): set by stream.c. */
void event_mark_stream_thread(void);

/* The table's functions (abi/clops.h), their args checked for NULL and size by entry.c. */
int32_t event_query(struct clops_event_query_args *args);
int32_t event_wait(struct clops_event_wait_args *args);
int32_t event_on_complete(struct clops_event_callback_args *args);
int32_t event_cancel(struct clops_event_cancel_args *args);
void event_release(struct clops_event *e);
int32_t event_cl_event(struct clops_event_cl_args *args);

#endif
