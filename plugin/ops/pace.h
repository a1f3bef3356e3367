/* pace.h — an operator's long work cut into units of work on one in-order queue (LU's panels, a
 * large GEMM's blocks of C), for cancellation and progress (op.h): between units its enqueue
 * asks whether the host wants the call stopped, and the call's progress counts the units done.
 *
 * Enqueue only enqueues, and runs far ahead of the device: without a brake, a submitted call
 * would have every unit queued before the first one ran, a cancel would stop nothing and its
 * progress would count units queued, not done. So a submitted call keeps at most `lag` units
 * queued beyond those the device has finished: after unit u it marks the queue, and waits for
 * the marker of unit u - lag. The lag starts at PACE_LAG_MIN and doubles, up to PACE_LAG_MAX,
 * whenever the device has finished the unit before the one just queued: then it ran dry while
 * the host waited. A wait's wake-up takes ~0.3 ms on NVIDIA's driver, longer than a block of a
 * 2048^3 GEMM on an H200 (27 us): with a fixed lag of 2 the device idled most of the time, and
 * the stream's starter, blocked here, queued nothing else (two streams of such GEMMs ran 0.8x
 * the speed of one; hosts/bench/RESULTS.md). Where units take longer than the wake-up (PoCL,
 * or large units), the lag stays small and a cancel stops within a few units. A synchronous
 * call, which nobody can cancel and whose progress nobody reads, never waits there: it runs
 * exactly as without pacing. */
#ifndef CLOPS_OPS_PACE_H
#define CLOPS_OPS_PACE_H

#include <stdint.h>

#include "op.h"

enum { PACE_LAG_MIN = 2, PACE_LAG_MAX = 32, PACE_RING = PACE_LAG_MAX + 1 };

struct pace {
    struct op_call *call; /* NULL: no pacing (pace_begin not called) */
    cl_command_queue queue;
    const char *unit; /* what a unit is, plural, in the cancel message ("panels") */
    int64_t total, queued;
    int64_t steps;             /* markers enqueued (steps of work, a unit each or more) */
    int64_t retired;           /* steps whose markers were waited for or found complete */
    int64_t lag;               /* steps that may stay queued beyond the device's */
    cl_event marks[PACE_RING]; /* step s's marker at [s % PACE_RING], until retired */
    int64_t marked[PACE_RING]; /* the units queued when that marker was enqueued */
};

/* Starts pacing `total` units of `call` on its in-order `queue` (progress 0 of total). */
void pace_begin(struct pace *p, struct op_call *call, cl_command_queue queue, int64_t total,
                const char *unit);
/* The work of the next unit is enqueued: for a submitted call, marks it and waits for the unit
 * `lag` before it, whose completion is then the call's progress. Then, whatever the call,
 * CLOPS_ERR_CANCELLED (call_refuse_cancelled) when the host asked it to stop: the caller
 * enqueues nothing more and returns it; what is queued still runs and is waited for by the
 * lifecycle. Fails on an OpenCL error of the marker or the wait. */
int32_t pace_unit_queued(struct pace *p);
/* The same for a step of `units` units at once (Mandelbrot's launches of several tiles): the
 * lag counts steps, and the progress counts the units of the steps completed. */
int32_t pace_units_queued(struct pace *p, int64_t units);
/* Every unit completed (the call's work was waited for): progress total of total. */
void pace_complete(struct pace *p);
/* Releases the markers not waited for; on every path (a no-op without pace_begin). */
void pace_release(struct pace *p);

#endif
