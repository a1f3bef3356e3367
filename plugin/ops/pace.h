/* pace.h — an operator's long work cut into units of work on one in-order queue (LU's panels, a
 * large GEMM's blocks of C), for cancellation and progress (op.h): between units its enqueue
 * asks whether the host wants the call stopped, and the call's progress counts the units done.
 *
 * Enqueue only enqueues, and runs far ahead of the device: without a brake, a submitted call
 * would have every unit queued before the first one ran, a cancel would stop nothing and its
 * progress would count units queued, not done. So a submitted call keeps at most PACE_LAG units
 * queued beyond those the device has finished: after unit u it marks the queue, and waits for
 * the marker of unit u - PACE_LAG, which the device has usually reached already (the queue
 * never runs dry: PACE_LAG units stay queued). A synchronous call, which nobody can cancel and
 * whose progress nobody reads, never waits there: it runs exactly as without pacing. */
#ifndef CLOPS_OPS_PACE_H
#define CLOPS_OPS_PACE_H

#include <stdint.h>

#include "op.h"

enum { PACE_LAG = 2 };

struct pace {
    struct op_call *call; /* NULL: no pacing (pace_begin not called) */
    cl_command_queue queue;
    const char *unit; /* what a unit is, plural, in the cancel message ("panels") */
    int64_t total, queued;
    int64_t steps;            /* markers enqueued (steps of work, a unit each or more) */
    cl_event marks[PACE_LAG]; /* step s's marker at [s % PACE_LAG], until waited for */
    int64_t marked[PACE_LAG]; /* the units queued when that marker was enqueued */
};

/* Starts pacing `total` units of `call` on its in-order `queue` (progress 0 of total). */
void pace_begin(struct pace *p, struct op_call *call, cl_command_queue queue, int64_t total,
                const char *unit);
/* The work of the next unit is enqueued: for a submitted call, marks it and waits for the unit
 * PACE_LAG before it, whose completion is then the call's progress. Then, whatever the call,
 * CLOPS_ERR_CANCELLED (call_refuse_cancelled) when the host asked it to stop: the caller
 * enqueues nothing more and returns it; what is queued still runs and is waited for by the
 * lifecycle. Fails on an OpenCL error of the marker or the wait. */
int32_t pace_unit_queued(struct pace *p);
/* The same for a step of `units` units at once (Mandelbrot's launches of several tiles): the
 * lag is PACE_LAG steps, and the progress counts the units of the steps completed. */
int32_t pace_units_queued(struct pace *p, int64_t units);
/* Every unit completed (the call's work was waited for): progress total of total. */
void pace_complete(struct pace *p);
/* Releases the markers not waited for; on every path (a no-op without pace_begin). */
void pace_release(struct pace *p);

#endif
