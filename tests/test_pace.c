/* test_pace.c — a submitted call's pacing (plugin/ops/pace.h): units whose work the device has
 * finished before the host queues the next one double the lag (up to PACE_LAG_MAX), so that
 * the device never waits for the host's wake-up; units still running when the next is queued
 * keep it at PACE_LAG_MIN, the host waiting for the unit `lag` before the one it queued, and
 * the call's progress counts the units waited for; a cancel stops the call at the next unit.
 * Units are markers gated by user events, so that the test decides when each one ends. Links
 * the core: it drives struct pace on a queue of the pool's device. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clops.h"
#include "error.h"
#include "ops/pace.h"
#include "pool.h"
#include "testutil.h"

enum { UNITS = 12 };

static const struct clops_op desc = {.name = "paced"};
static const struct op_impl impl = {.desc = &desc};

struct paced {
    struct op_call call;
    struct call_control control;
    cl_context context;
    cl_command_queue queue;
    cl_event gate[UNITS];
    atomic_int queued; /* units the test thread has queued */
};

static void paced_open(struct paced *t)
{
    memset(t, 0, sizeof *t);
    struct clops_pool *pool = tu_pool();
    struct pool_device *dev = pool_device_at(pool, 0);
    t->context = pool_device_context(dev);
    ck_assert_int_eq(pool_open_queue(pool, dev, "test", &t->queue), CLOPS_OK);
    atomic_init(&t->control.cancel, 0);
    atomic_init(&t->control.done, 0);
    atomic_init(&t->control.total, 0);
    t->control.submitted = 1;
    t->call = (struct op_call){.pool = pool, .impl = &impl, .dev = dev, .control = &t->control};
    for (int u = 0; u < UNITS; u++) {
        cl_int rc;
        t->gate[u] = clCreateUserEvent(t->context, &rc);
        ck_assert_int_eq(rc, CL_SUCCESS);
    }
    atomic_init(&t->queued, 0);
}

static void paced_close(struct paced *t)
{
    for (int u = 0; u < UNITS; u++) {
        clSetUserEventStatus(t->gate[u], CL_COMPLETE); /* no-op error if set already */
        clReleaseEvent(t->gate[u]);
    }
    ck_assert_int_eq(clFinish(t->queue), CL_SUCCESS);
    clReleaseCommandQueue(t->queue);
}

/* Unit u's work: a marker that ends when its gate opens. */
static void queue_unit(struct paced *t, int u)
{
    ck_assert_int_eq(clEnqueueMarkerWithWaitList(t->queue, 1, &t->gate[u], NULL), CL_SUCCESS);
}

/* Every gate open before its unit is queued, and the device idle (clFinish) before each
 * pace step: the step before is always done, so the lag doubles at every step to its cap. */
START_TEST(test_a_device_that_runs_dry_doubles_the_lag_to_its_cap)
{
    struct paced t;
    paced_open(&t);
    struct pace p;
    pace_begin(&p, &t.call, t.queue, UNITS, "units");
    int64_t want = PACE_LAG_MIN;
    for (int u = 0; u < UNITS; u++) {
        clSetUserEventStatus(t.gate[u], CL_COMPLETE);
        queue_unit(&t, u);
        ck_assert_int_eq(clFinish(t.queue), CL_SUCCESS);
        ck_assert_msg(pace_unit_queued(&p) == CLOPS_OK, "%s", err_last());
        if (u > 0 && want < PACE_LAG_MAX)
            want *= 2;
        ck_assert_msg(p.lag == want, "unit %d: lag %lld, expected %lld", u, (long long)p.lag,
                      (long long)want);
    }
    /* Everything before the last step was found done: the progress says so. */
    ck_assert_int_eq(atomic_load(&t.control.done), UNITS - 1);
    pace_release(&p);
    paced_close(&t);
}
END_TEST

/* Opens gate k once the test thread has queued unit k + 2: while the host queues a unit, the
 * one before it is still running. The last two gates open when the test says queued is
 * UNITS + 2, after its last check: opened as soon as the last unit was queued, they raced that
 * unit's pace step, which found the unit before it done and doubled the lag (TSan in CI). */
static void *open_late(void *arg)
{
    struct paced *t = arg;
    for (int k = 0; k < UNITS; k++) {
        while (atomic_load(&t->queued) < k + 3)
            ;
        clSetUserEventStatus(t->gate[k], CL_COMPLETE);
    }
    return NULL;
}

START_TEST(test_a_busy_device_keeps_the_lag_small_and_the_progress_exact)
{
    struct paced t;
    paced_open(&t);
    pthread_t opener;
    ck_assert_int_eq(pthread_create(&opener, NULL, open_late, &t), 0);
    struct pace p;
    pace_begin(&p, &t.call, t.queue, UNITS, "units");
    for (int u = 0; u < UNITS; u++) {
        queue_unit(&t, u);
        atomic_store(&t.queued, u + 1);
        ck_assert_msg(pace_unit_queued(&p) == CLOPS_OK, "%s", err_last());
        ck_assert_int_eq(p.lag, PACE_LAG_MIN);
        /* Unit u - lag was waited for: the progress counts it and those before. */
        const int64_t done = u + 1 - PACE_LAG_MIN > 0 ? u + 1 - PACE_LAG_MIN : 0;
        ck_assert_int_eq(atomic_load(&t.control.done), done);
    }
    atomic_store(&t.queued, UNITS + 2);
    pace_release(&p);
    pthread_join(opener, NULL);
    paced_close(&t);
}
END_TEST

/* A cancel stops the call at the next unit, with the units queued so far in its message. */
START_TEST(test_a_cancel_stops_at_the_next_unit)
{
    struct paced t;
    paced_open(&t);
    struct pace p;
    pace_begin(&p, &t.call, t.queue, UNITS, "units");
    for (int u = 0; u < 3; u++) {
        clSetUserEventStatus(t.gate[u], CL_COMPLETE);
        queue_unit(&t, u);
        ck_assert_int_eq(pace_unit_queued(&p), CLOPS_OK);
    }
    atomic_store(&t.control.cancel, 1);
    clSetUserEventStatus(t.gate[3], CL_COMPLETE);
    queue_unit(&t, 3);
    ck_assert_int_eq(pace_unit_queued(&p), CLOPS_ERR_CANCELLED);
    ck_assert_ptr_nonnull(strstr(err_last(), "units"));
    pace_release(&p);
    paced_close(&t);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_TEST(test_a_device_that_runs_dry_doubles_the_lag_to_its_cap),
        TU_TEST(test_a_busy_device_keeps_the_lag_small_and_the_progress_exact),
        TU_TEST(test_a_cancel_stops_at_the_next_unit),
    };
    return tu_run_tests("pace", 120, 1, tests, TU_COUNT(tests));
}
