/* test_stream.c — non-blocking calls (ABI 1.4): streams, submit, events, callbacks, cancellation,
 * and the cl_events that cross between clops and the host. Results are checked against
 * references; states, statuses and messages are asserted. .ci/tsan runs this suite under
 * ThreadSanitizer. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

static const struct clops_api *api;

static void setup(void)
{
    api = tu_api();
}

/* ---- Helpers --------------------------------------------------------------------------------- */

static struct clops_stream *new_stream(struct clops_pool *pool)
{
    struct clops_stream_create_args a = {.struct_size = sizeof a, .pool = pool};
    int32_t status = api->stream_create(&a);
    ck_assert_msg(status == CLOPS_OK, "stream_create: %s", api->last_error());
    ck_assert_ptr_nonnull(a.stream);
    return a.stream;
}

static void release_stream(struct clops_stream *s)
{
    struct clops_stream_release_args a = {.struct_size = sizeof a, .stream = s};
    ck_assert_int_eq(api->stream_release(&a), CLOPS_OK);
}

static void release_event(struct clops_event *e)
{
    struct clops_event_release_args a = {.struct_size = sizeof a, .event = e};
    ck_assert_int_eq(api->event_release(&a), CLOPS_OK);
}

static struct clops_event_query_args query(struct clops_event *e)
{
    struct clops_event_query_args q = {.struct_size = sizeof q, .event = e};
    ck_assert_int_eq(api->event_query(&q), CLOPS_OK);
    return q;
}

static int32_t wait_for(struct clops_event *const *events, int32_t count, int64_t timeout_ns)
{
    struct clops_event_wait_args w = {.struct_size = sizeof w,
                                      .count = count,
                                      .events = events,
                                      .timeout_ns = timeout_ns,
                                      .wait_all = 1};
    return api->event_wait(&w);
}

static void cancel(struct clops_event *e)
{
    struct clops_event_cancel_args a = {.struct_size = sizeof a, .event = e};
    ck_assert_int_eq(api->event_cancel(&a), CLOPS_OK);
}

static struct clops_arg tensor_arg(const char *name, const struct clops_tensor *t)
{
    struct clops_arg a = {.name = name, .kind = CLOPS_PARAM_TENSOR_IN, .tensor = t};
    return a;
}

static struct clops_arg int_arg(const char *name, int32_t kind, int64_t i, const char *s)
{
    struct clops_arg a = {.name = name, .kind = kind, .i = i, .s = s};
    return a;
}

/* What a submit needs besides its stream, operator and arguments. */
struct extras {
    struct clops_event *const *waits;
    int32_t wait_count;
    void *const *cl_waits;
    int32_t cl_wait_count;
    clops_event_fn fn;
    void *user;
};

static int32_t submit(struct clops_stream *s, const char *op, const struct clops_arg *args,
                      int32_t nargs, const struct extras *x, struct clops_event **out)
{
    struct clops_submit_args a = {.struct_size = sizeof a,
                                  .op_index = api->op_index(tu_op(op)),
                                  .stream = s,
                                  .args = args,
                                  .nargs = nargs,
                                  .arg_size = sizeof(struct clops_arg)};
    if (x != NULL) {
        a.wait_events = x->waits;
        a.wait_count = x->wait_count;
        a.cl_wait_events = x->cl_waits;
        a.cl_wait_count = x->cl_wait_count;
        a.on_complete = x->fn;
        a.user = x->user;
    }
    a.event = (struct clops_event *)&a; /* must be overwritten */
    int32_t status = api->submit(&a);
    *out = a.event;
    return status;
}

/* A gemm of f64 matrices, C = A * B (beta = 0), row-major, with its reference. */
struct gemm_case {
    int64_t m, n, k;
    double *a, *b, *c, *want;
    struct clops_tensor ta, tb, tc;
};

static void gemm_case_make(struct gemm_case *g, int64_t m, int64_t n, int64_t k, uint64_t seed)
{
    g->m = m, g->n = n, g->k = k;
    uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1; /* each thread its own: xorshift64* */
    g->a = tu_malloc(sizeof(double) * (size_t)(m * k));
    g->b = tu_malloc(sizeof(double) * (size_t)(k * n));
    g->c = tu_malloc(sizeof(double) * (size_t)(m * n));
    g->want = tu_malloc(sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m * k + k * n; i++) {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        const double x = (double)((state * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
        *(i < m * k ? &g->a[i] : &g->b[i - m * k]) = 2 * x - 1;
    }
    for (int64_t i = 0; i < m * n; i++)
        g->c[i] = -7.0; /* a sentinel: a cancelled call leaves it */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            long double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (long double)g->a[i * k + p] * g->b[p * n + j];
            g->want[i * n + j] = (double)s;
        }
    g->ta = clops_matrix(g->a, CLOPS_F64, m, k, k, 0);
    g->tb = clops_matrix(g->b, CLOPS_F64, k, n, n, 0);
    g->tc = clops_matrix(g->c, CLOPS_F64, m, n, n, 0);
}

static void gemm_case_free(struct gemm_case *g)
{
    free(g->a);
    free(g->b);
    free(g->c);
    free(g->want);
}

static int32_t submit_gemm(struct clops_stream *s, struct gemm_case *g, const struct extras *x,
                           struct clops_event **out)
{
    const struct clops_arg args[] = {tensor_arg("a", &g->ta),
                                     tensor_arg("b", &g->tb),
                                     tensor_arg("c", &g->tc),
                                     {.name = "beta", .kind = CLOPS_PARAM_DOUBLE, .d = 0.0}};
    return submit(s, "gemm", args, 4, x, out);
}

static void assert_gemm_result(const struct gemm_case *g)
{
    for (int64_t i = 0; i < g->m * g->n; i++)
        ck_assert_msg(fabs(g->c[i] - g->want[i]) <= 1e-12 * (double)g->k,
                      "c[%lld] = %.17g, expected %.17g", (long long)i, g->c[i], g->want[i]);
}

static void assert_untouched(const struct gemm_case *g)
{
    for (int64_t i = 0; i < g->m * g->n; i++)
        ck_assert_msg(g->c[i] == -7.0, "c[%lld] = %g: a cancelled call wrote its output",
                      (long long)i, g->c[i]);
}

static cl_context pool_context(struct clops_pool *pool)
{
    return (cl_context)tu_pool_context(pool);
}

/* A user event of the pool's context: what holds a stream's work back until the test lets go. */
static cl_event gate(struct clops_pool *pool)
{
    cl_int rc;
    cl_event e = clCreateUserEvent(pool_context(pool), &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    return e;
}

static void open_gate(cl_event e)
{
    ck_assert_int_eq(clSetUserEventStatus(e, CL_COMPLETE), CL_SUCCESS);
    clReleaseEvent(e);
}

/* ---- Tests ----------------------------------------------------------------------------------- */

START_TEST(test_submit_computes_and_completes)
{
    struct clops_stream *s = new_stream(tu_pool());
    const int64_t sizes[][3] = {{1, 1, 1}, {37, 29, 23}, {64, 5, 97}};
    for (int i = 0; i < 3; i++) {
        struct gemm_case g;
        gemm_case_make(&g, sizes[i][0], sizes[i][1], sizes[i][2], 11 + (uint64_t)i);
        struct clops_event *e = NULL;
        ck_assert_msg(submit_gemm(s, &g, NULL, &e) == CLOPS_OK, "%s", api->last_error());
        ck_assert_int_eq(wait_for(&e, 1, -1), CLOPS_OK);
        struct clops_event_query_args q = query(e);
        ck_assert_int_eq(q.state, CLOPS_EVENT_COMPLETE);
        ck_assert_int_eq(q.status, CLOPS_OK);
        ck_assert_str_eq(q.message, "");
        ck_assert(q.progress == 1.0);
        assert_gemm_result(&g);
        release_event(e);
        gemm_case_free(&g);
    }
    release_stream(s);
}
END_TEST

/* Calls on one stream see the host results of the calls before them: a reduce of the C a gemm
 * writes, submitted right behind it without a wait, sums the new C. */
START_TEST(test_stream_orders_host_results)
{
    struct clops_stream *s = new_stream(tu_pool());
    for (int round = 0; round < 4; round++) {
        struct gemm_case g;
        gemm_case_make(&g, 17 + round * 13, 11 + round * 7, 19, 100 + (uint64_t)round);
        for (int64_t i = 0; i < g.m * g.n; i++)
            g.c[i] = 0.0;
        double sum = 0.0, want = 0.0;
        for (int64_t i = 0; i < g.m * g.n; i++)
            want += g.want[i];
        struct clops_tensor out = {
            .data = &sum, .dtype = CLOPS_F64, .rank = 1, .shape = {1}, .strides = {1}};
        const struct clops_arg rargs[] = {tensor_arg("x", &g.tc), tensor_arg("out", &out),
                                          int_arg("op", CLOPS_PARAM_ENUM, 0, "sum")};
        struct clops_event *e[2] = {NULL, NULL};
        ck_assert_msg(submit_gemm(s, &g, NULL, &e[0]) == CLOPS_OK, "%s", api->last_error());
        ck_assert_msg(submit(s, "reduce", rargs, 3, NULL, &e[1]) == CLOPS_OK, "%s",
                      api->last_error());
        ck_assert_int_eq(wait_for(e, 2, -1), CLOPS_OK);
        ck_assert_int_eq(query(e[1]).state, CLOPS_EVENT_COMPLETE);
        ck_assert_msg(fabs(sum - want) <= 1e-9 * (1 + fabs(want)), "sum %.17g, expected %.17g", sum,
                      want);
        assert_gemm_result(&g);
        release_event(e[0]);
        release_event(e[1]);
        gemm_case_free(&g);
    }
    release_stream(s);
}
END_TEST

/* A gemm into a device buffer on one stream, its transpose on another, ordered only by the
 * event in the second call's wait list (a wait on the device: the first writes no host memory). */
START_TEST(test_streams_order_through_events)
{
    struct clops_pool *pool = tu_pool();
    struct clops_stream *s1 = new_stream(pool), *s2 = new_stream(pool);
    for (int round = 0; round < 3; round++) {
        struct gemm_case g;
        gemm_case_make(&g, 31 + round, 23, 41, 200 + (uint64_t)round);
        struct clops_buffer *buf = NULL;
        ck_assert_int_eq(api->buffer_create(pool, 8 * g.m * g.n, &buf), CLOPS_OK);
        struct clops_tensor dc = clops_matrix_on_device(buf, CLOPS_F64, g.m, g.n, g.n, 0);
        g.tc = dc;
        double *y = tu_malloc(sizeof(double) * (size_t)(g.m * g.n));
        struct clops_tensor ty = clops_matrix(y, CLOPS_F64, g.n, g.m, g.m, 0);
        const struct clops_arg targs[] = {tensor_arg("x", &dc), tensor_arg("y", &ty)};
        struct clops_event *e1 = NULL, *e2 = NULL;
        ck_assert_int_eq(submit_gemm(s1, &g, NULL, &e1), CLOPS_OK);
        const struct extras x = {.waits = &e1, .wait_count = 1};
        ck_assert_msg(submit(s2, "transpose", targs, 2, &x, &e2) == CLOPS_OK, "%s",
                      api->last_error());
        ck_assert_int_eq(wait_for(&e2, 1, -1), CLOPS_OK);
        ck_assert_int_eq(query(e2).state, CLOPS_EVENT_COMPLETE);
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++)
                ck_assert_msg(fabs(y[j * g.m + i] - g.want[i * g.n + j]) <= 1e-12 * 41,
                              "y[%lld][%lld] = %g, expected %g", (long long)j, (long long)i,
                              y[j * g.m + i], g.want[i * g.n + j]);
        release_event(e1);
        release_event(e2);
        api->buffer_release(buf);
        free(y);
        gemm_case_free(&g);
    }
    release_stream(s1);
    release_stream(s2);
}
END_TEST

/* lu_solve with pivots outside the rows fails after its device work (the check of device
 * pivots is on the device): a call that waits for it is not run, and says why. */
START_TEST(test_failed_dependency_fails_its_waiters)
{
    struct clops_pool *pool = tu_pool();
    struct clops_stream *s1 = new_stream(pool), *s2 = new_stream(pool);
    enum { N = 8 };
    double lu[N * N], b[N];
    for (int i = 0; i < N * N; i++)
        lu[i] = i % (N + 1) == 0 ? 4.0 : 0.5;
    for (int i = 0; i < N; i++)
        b[i] = 1.0;
    int32_t bad[N];
    for (int i = 0; i < N; i++)
        bad[i] = N + 5; /* no such row */
    struct clops_buffer *piv = NULL;
    ck_assert_int_eq(api->buffer_create(pool, sizeof bad, &piv), CLOPS_OK);
    ck_assert_int_eq(api->buffer_upload(piv, 0, bad, sizeof bad), CLOPS_OK);
    struct clops_tensor tlu = clops_matrix(lu, CLOPS_F64, N, N, N, 0);
    struct clops_tensor tpiv = {
        .buffer = piv, .dtype = CLOPS_I32, .rank = 1, .shape = {N}, .strides = {1}};
    struct clops_tensor tb = clops_matrix(b, CLOPS_F64, N, 1, 1, 0);
    const struct clops_arg args[] = {tensor_arg("lu", &tlu), tensor_arg("ipiv", &tpiv),
                                     tensor_arg("b", &tb)};
    struct clops_event *e1 = NULL, *e2 = NULL;
    ck_assert_msg(submit(s1, "lu_solve", args, 3, NULL, &e1) == CLOPS_OK, "%s", api->last_error());
    struct gemm_case g;
    gemm_case_make(&g, 9, 7, 5, 300);
    const struct extras x = {.waits = &e1, .wait_count = 1};
    ck_assert_int_eq(submit_gemm(s2, &g, &x, &e2), CLOPS_OK);
    ck_assert_int_eq(wait_for(&e2, 1, -1), CLOPS_OK);
    struct clops_event_query_args q1 = query(e1), q2 = query(e2);
    ck_assert_int_eq(q1.state, CLOPS_EVENT_FAILED);
    ck_assert_int_eq(q1.status, CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(q1.message, "ipiv") != NULL, "message: %s", q1.message);
    ck_assert_int_eq(q2.state, CLOPS_EVENT_CANCELLED);
    ck_assert_int_eq(q2.status, CLOPS_ERR_CANCELLED);
    ck_assert_msg(strstr(q2.message, "a call it waits for failed") != NULL, "message: %s",
                  q2.message);
    assert_untouched(&g);
    for (int i = 0; i < N; i++)
        ck_assert(b[i] == 1.0);
    /* stream_wait waits for every outcome, a failure included, and fails nothing: the call
     * behind it waits for the gated one although the first event failed. */
    cl_event held = gate(pool);
    void *gates[] = {held};
    struct gemm_case h, k;
    gemm_case_make(&h, 6, 7, 8, 301);
    gemm_case_make(&k, 9, 5, 4, 302);
    struct clops_event *e3 = NULL, *e4 = NULL;
    const struct extras gated = {.cl_waits = gates, .cl_wait_count = 1};
    ck_assert_int_eq(submit_gemm(s1, &h, &gated, &e3), CLOPS_OK);
    struct clops_event *both[] = {e1, e3};
    struct clops_stream_wait_args sw = {
        .struct_size = sizeof sw, .event_count = 2, .stream = s2, .events = both};
    ck_assert_int_eq(api->stream_wait(&sw), CLOPS_OK);
    ck_assert_int_eq(submit_gemm(s2, &k, NULL, &e4), CLOPS_OK);
    ck_assert_int_eq(wait_for(&e4, 1, 20 * 1000 * 1000), CLOPS_ERR_TIMEOUT);
    assert_untouched(&k);
    open_gate(held);
    ck_assert_int_eq(wait_for(&e4, 1, -1), CLOPS_OK);
    ck_assert_int_eq(query(e4).state, CLOPS_EVENT_COMPLETE);
    assert_gemm_result(&h);
    assert_gemm_result(&k);
    release_event(e3);
    release_event(e4);
    gemm_case_free(&h);
    gemm_case_free(&k);
    release_event(e1);
    release_event(e2);
    api->buffer_release(piv);
    gemm_case_free(&g);
    release_stream(s1);
    release_stream(s2);
}
END_TEST

/* ---- Callbacks ---- */

enum { CALLBACKS = 12 };
struct callback_log {
    atomic_int count[CALLBACKS];
    atomic_int status[CALLBACKS];
    atomic_int wrong_thread, wait_refused, query_mismatch;
    pthread_t host;
    struct clops_event *events[CALLBACKS];
};
static struct callback_log cb_log;

static void on_complete(struct clops_event *e, int32_t status, void *user)
{
    const int i = (int)(intptr_t)user;
    atomic_fetch_add(&cb_log.count[i], 1);
    atomic_store(&cb_log.status[i], status);
    if (pthread_equal(pthread_self(), cb_log.host))
        atomic_fetch_add(&cb_log.wrong_thread, 1);
    struct clops_event_query_args q = {.struct_size = sizeof q, .event = e};
    if (api->event_query(&q) != CLOPS_OK || q.status != status || q.state < CLOPS_EVENT_COMPLETE)
        atomic_fetch_add(&cb_log.query_mismatch, 1);
    /* Waiting in a callback is refused (it could wait for its own stream); looking is not. */
    struct clops_event_wait_args w = {
        .struct_size = sizeof w, .count = 1, .events = &e, .timeout_ns = -1};
    if (api->event_wait(&w) == CLOPS_ERR_INVALID_ARGUMENT)
        atomic_fetch_add(&cb_log.wait_refused, 1);
}

/* Every event's callback runs once, on a thread of clops: for calls that succeed, fail and are
 * cancelled, and for one registered after its call ended. */
START_TEST(test_callbacks_run_once_on_a_clops_thread)
{
    memset(&cb_log, 0, sizeof cb_log);
    cb_log.host = pthread_self();
    struct clops_pool *pool = tu_pool();
    struct clops_stream *s = new_stream(pool);
    cl_event g = gate(pool);
    void *gates[] = {g};
    struct gemm_case cases[CALLBACKS];
    for (int i = 0; i < CALLBACKS; i++) {
        gemm_case_make(&cases[i], 5 + i, 3 + i, 4, 400 + (uint64_t)i);
        const struct extras x = {.cl_waits = i == 0 ? gates : NULL,
                                 .cl_wait_count = i == 0,
                                 .fn = i == CALLBACKS - 1 ? NULL : on_complete,
                                 .user = (void *)(intptr_t)i};
        ck_assert_int_eq(submit_gemm(s, &cases[i], &x, &cb_log.events[i]), CLOPS_OK);
    }
    for (int i = 1; i < CALLBACKS - 1; i += 3)
        cancel(cb_log.events[i]); /* queued behind the gate: they never start */
    open_gate(g);
    ck_assert_int_eq(wait_for(cb_log.events, CALLBACKS, -1), CLOPS_OK);
    /* Registered after the outcome: still delivered, on the stream's thread. */
    struct clops_event_callback_args late = {.struct_size = sizeof late,
                                             .event = cb_log.events[CALLBACKS - 1],
                                             .fn = on_complete,
                                             .user = (void *)(intptr_t)(CALLBACKS - 1)};
    ck_assert_int_eq(api->event_on_complete(&late), CLOPS_OK);
    ck_assert_int_eq(api->event_on_complete(&late), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(api->last_error(), "one per event") != NULL, "%s", api->last_error());
    release_stream(s); /* waits for the stream's jobs, the late callback among them */
    for (int i = 0; i < CALLBACKS; i++) {
        ck_assert_msg(atomic_load(&cb_log.count[i]) == 1, "callback %d ran %d times", i,
                      atomic_load(&cb_log.count[i]));
        const int cancelled = i % 3 == 1 && i < CALLBACKS - 1;
        ck_assert_int_eq(atomic_load(&cb_log.status[i]),
                         cancelled ? CLOPS_ERR_CANCELLED : CLOPS_OK);
        ck_assert_int_eq(query(cb_log.events[i]).state,
                         cancelled ? CLOPS_EVENT_CANCELLED : CLOPS_EVENT_COMPLETE);
        if (cancelled)
            assert_untouched(&cases[i]);
        else
            assert_gemm_result(&cases[i]);
        release_event(cb_log.events[i]);
        gemm_case_free(&cases[i]);
    }
    ck_assert_int_eq(atomic_load(&cb_log.wrong_thread), 0);
    ck_assert_int_eq(atomic_load(&cb_log.query_mismatch), 0);
    ck_assert_int_eq(atomic_load(&cb_log.wait_refused), CALLBACKS);
}
END_TEST

/* A call refused by its checks returns at once: no event, no callback, the message names the
 * parameter. */
START_TEST(test_refused_submit_returns_its_error_at_once)
{
    memset(&cb_log, 0, sizeof cb_log);
    struct clops_stream *s = new_stream(tu_pool());
    struct gemm_case g;
    gemm_case_make(&g, 6, 5, 4, 500);
    g.tb.shape[0] = 3; /* K does not match */
    const struct extras x = {.fn = on_complete, .user = (void *)(intptr_t)0};
    struct clops_event *e = NULL;
    ck_assert_int_eq(submit_gemm(s, &g, &x, &e), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(e);
    ck_assert_msg(strstr(api->last_error(), "gemm:") != NULL &&
                      strstr(api->last_error(), "'b'") != NULL,
                  "message: %s", api->last_error());
    /* And the args themselves. */
    struct clops_submit_args a = {.struct_size = 8};
    ck_assert_int_eq(api->submit(&a), CLOPS_ERR_ABI_MISMATCH);
    ck_assert_int_eq(api->submit(NULL), CLOPS_ERR_INVALID_ARGUMENT);
    struct clops_submit_args b = {.struct_size = sizeof b, .stream = s, .op_index = 999};
    ck_assert_int_eq(api->submit(&b), CLOPS_ERR_NOT_FOUND);
    ck_assert_msg(strstr(api->last_error(), "op_index") != NULL, "%s", api->last_error());
    struct clops_event *null_event = NULL;
    const struct extras bad_wait = {.waits = &null_event, .wait_count = 1};
    ck_assert_int_eq(submit_gemm(s, &g, &bad_wait, &e), CLOPS_ERR_INVALID_ARGUMENT);
    release_stream(s);
    ck_assert_int_eq(atomic_load(&cb_log.count[0]), 0);
    assert_untouched(&g);
    gemm_case_free(&g);
}
END_TEST

/* Cancelled at random moments: each call either completes with its result or is cancelled with
 * its host output untouched, never anything between. Every other round holds the stream back
 * behind a gate until the cancel is asked for, so that some calls surely are cancelled while
 * queued; the others are cancelled while they stage, run or download, or after. */
START_TEST(test_cancel_at_random_moments)
{
    struct clops_pool *pool = tu_pool();
    struct clops_stream *s = new_stream(pool);
    int completed = 0, cancelled = 0;
    for (int round = 0; round < 24; round++) {
        struct gemm_case g;
        gemm_case_make(&g, 90 + round, 77, 110, 600 + (uint64_t)round);
        cl_event held = round % 2 == 0 ? gate(pool) : NULL;
        void *gates[] = {held};
        const struct extras x = {.cl_waits = gates, .cl_wait_count = held != NULL};
        struct clops_event *e = NULL;
        ck_assert_int_eq(submit_gemm(s, &g, &x, &e), CLOPS_OK);
        struct timespec t = {0, (long)(round % 6) * 200000};
        nanosleep(&t, NULL);
        cancel(e);
        if (held != NULL)
            open_gate(held);
        ck_assert_int_eq(wait_for(&e, 1, -1), CLOPS_OK);
        struct clops_event_query_args q = query(e);
        if (q.state == CLOPS_EVENT_CANCELLED) {
            ck_assert_int_eq(q.status, CLOPS_ERR_CANCELLED);
            ck_assert_msg(strstr(q.message, "cancelled") != NULL, "%s", q.message);
            assert_untouched(&g);
            cancelled++;
        } else {
            ck_assert_msg(held == NULL, "a call cancelled behind the gate completed");
            ck_assert_int_eq(q.state, CLOPS_EVENT_COMPLETE);
            assert_gemm_result(&g);
            completed++;
        }
        release_event(e);
        gemm_case_free(&g);
    }
    ck_assert_msg(cancelled >= 12, "%d of 24 calls were cancelled (%d completed)", cancelled,
                  completed);
    release_stream(s);
}
END_TEST

/* A wait with a timeout returns CLOPS_ERR_TIMEOUT while the call cannot run; stream_wait holds
 * back a stream until another stream's event has its outcome. */
START_TEST(test_wait_times_out_and_streams_wait)
{
    struct clops_pool *pool = tu_pool();
    struct clops_stream *s1 = new_stream(pool), *s2 = new_stream(pool);
    cl_event g = gate(pool);
    void *gates[] = {g};
    struct gemm_case a, b;
    gemm_case_make(&a, 12, 10, 8, 700);
    gemm_case_make(&b, 9, 13, 6, 701);
    struct clops_event *e1 = NULL, *e2 = NULL;
    const struct extras x = {.cl_waits = gates, .cl_wait_count = 1};
    ck_assert_int_eq(submit_gemm(s1, &a, &x, &e1), CLOPS_OK);
    struct clops_stream_wait_args sw = {
        .struct_size = sizeof sw, .event_count = 1, .stream = s2, .events = &e1};
    ck_assert_int_eq(api->stream_wait(&sw), CLOPS_OK);
    ck_assert_int_eq(submit_gemm(s2, &b, NULL, &e2), CLOPS_OK);
    struct clops_event *both[] = {e1, e2};
    ck_assert_int_eq(wait_for(both, 2, 20 * 1000 * 1000), CLOPS_ERR_TIMEOUT);
    ck_assert_msg(strstr(api->last_error(), "0 of the 2 events") != NULL, "%s", api->last_error());
    struct clops_event_wait_args any = {
        .struct_size = sizeof any, .count = 2, .events = both, .timeout_ns = 0};
    ck_assert_int_eq(api->event_wait(&any), CLOPS_ERR_TIMEOUT);
    ck_assert_int_eq(any.ready, -1);
    ck_assert_int_lt(query(e2).state, CLOPS_EVENT_COMPLETE);
    assert_untouched(&b);
    open_gate(g);
    any.timeout_ns = -1;
    ck_assert_int_eq(api->event_wait(&any), CLOPS_OK);
    ck_assert(any.ready == 0 || any.ready == 1);
    ck_assert_int_eq(wait_for(both, 2, -1), CLOPS_OK);
    assert_gemm_result(&a);
    assert_gemm_result(&b);
    release_event(e1);
    release_event(e2);
    gemm_case_free(&a);
    gemm_case_free(&b);
    release_stream(s1);
    release_stream(s2);
}
END_TEST

/* The call's completion as a cl_event the host waits for with OpenCL alone. */
START_TEST(test_event_as_cl_event)
{
    struct clops_stream *s = new_stream(tu_pool());
    struct gemm_case g;
    gemm_case_make(&g, 21, 17, 13, 800);
    struct clops_event *e = NULL;
    ck_assert_int_eq(submit_gemm(s, &g, NULL, &e), CLOPS_OK);
    struct clops_event_cl_args c = {.struct_size = sizeof c, .event = e};
    ck_assert_int_eq(api->event_cl_event(&c), CLOPS_OK);
    cl_event ce = c.cl_event;
    ck_assert_int_eq(clWaitForEvents(1, &ce), CL_SUCCESS);
    assert_gemm_result(&g); /* complete means the host output is written */
    cl_int state;
    ck_assert_int_eq(
        clGetEventInfo(ce, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, NULL),
        CL_SUCCESS);
    ck_assert_int_eq(state, CL_COMPLETE);
    clReleaseEvent(ce);
    /* Asked for after the outcome: complete at once. */
    struct clops_event_cl_args again = {.struct_size = sizeof again, .event = e};
    ck_assert_int_eq(api->event_cl_event(&again), CLOPS_OK);
    ce = again.cl_event;
    ck_assert_int_eq(clWaitForEvents(1, &ce), CL_SUCCESS);
    clReleaseEvent(ce);
    release_event(e);
    gemm_case_free(&g);
    release_stream(s);
}
END_TEST

/* A stream on a queue the host made on the pool's context; an out-of-order queue is refused. */
START_TEST(test_stream_on_the_hosts_queue)
{
    struct clops_pool *pool = tu_pool();
    cl_context ctx = pool_context(pool);
    cl_device_id dev;
    ck_assert_int_eq(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL), CL_SUCCESS);
    cl_int rc;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    struct clops_stream_create_args a = {.struct_size = sizeof a, .pool = pool, .cl_queue = q};
    ck_assert_msg(api->stream_create(&a) == CLOPS_OK, "%s", api->last_error());
    clReleaseCommandQueue(q); /* the stream retained it */
    struct gemm_case g;
    gemm_case_make(&g, 19, 23, 29, 900);
    struct clops_event *e = NULL;
    ck_assert_int_eq(submit_gemm(a.stream, &g, NULL, &e), CLOPS_OK);
    ck_assert_int_eq(wait_for(&e, 1, -1), CLOPS_OK);
    assert_gemm_result(&g);
    release_event(e);
    release_stream(a.stream);
    gemm_case_free(&g);
    cl_command_queue ooo =
        clCreateCommandQueue(ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &rc);
    if (rc == CL_SUCCESS) {
        struct clops_stream_create_args b = {
            .struct_size = sizeof b, .pool = pool, .cl_queue = ooo};
        ck_assert_int_eq(api->stream_create(&b), CLOPS_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(api->last_error(), "out-of-order") != NULL, "%s", api->last_error());
        clReleaseCommandQueue(ooo);
    }
    struct clops_stream_create_args c = {.struct_size = sizeof c, .pool = pool, .device = 5};
    ck_assert_int_eq(api->stream_create(&c), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(api->last_error(), "'device' = 5") != NULL, "%s", api->last_error());
}
END_TEST

/* ---- Threads ---- */

enum { THREADS = 16, CALLS_PER_THREAD = 6 };
struct submitter {
    struct clops_stream *streams[2];
    int id;
    int failures;
    char why[512];
};

static void *submitter_main(void *arg)
{
    struct submitter *t = arg;
    for (int i = 0; i < CALLS_PER_THREAD; i++) {
        struct gemm_case g;
        gemm_case_make(&g, 3 + (t->id * 7 + i) % 29, 2 + (t->id + i * 5) % 31, 1 + i * 3,
                       (uint64_t)(t->id * 100 + i));
        double sum = 0, want = 0;
        for (int64_t k = 0; k < g.m * g.n; k++)
            want += g.want[k];
        struct clops_tensor out = {
            .data = &sum, .dtype = CLOPS_F64, .rank = 1, .shape = {1}, .strides = {1}};
        const struct clops_arg rargs[] = {tensor_arg("x", &g.tc), tensor_arg("out", &out),
                                          int_arg("op", CLOPS_PARAM_ENUM, 0, "sum")};
        struct clops_stream *s = t->streams[(t->id + i) % 2];
        struct clops_event *e[2] = {NULL, NULL};
        int32_t st = submit_gemm(s, &g, NULL, &e[0]);
        char refused[160] = "";
        if (st == CLOPS_OK)
            st = submit(s, "reduce", rargs, 3, NULL, &e[1]);
        if (st != CLOPS_OK)
            snprintf(refused, sizeof refused, "%s", api->last_error());
        /* Whatever was submitted is waited for before its memory is freed. */
        struct clops_event_wait_args w = {.struct_size = sizeof w,
                                          .count = e[1] != NULL ? 2 : e[0] != NULL,
                                          .events = e,
                                          .timeout_ns = -1,
                                          .wait_all = 1};
        api->event_wait(&w);
        for (int k = 0; k < 2 && st == CLOPS_OK; k++) {
            struct clops_event_query_args q = {.struct_size = sizeof q, .event = e[k]};
            api->event_query(&q);
            st = q.status;
            if (st != CLOPS_OK)
                snprintf(refused, sizeof refused, "%s", q.message);
        }
        int wrong = 0;
        for (int64_t k = 0; k < g.m * g.n; k++)
            wrong += fabs(g.c[k] - g.want[k]) > 1e-12 * (double)g.k;
        if (st != CLOPS_OK || wrong || fabs(sum - want) > 1e-9 * (1 + fabs(want))) {
            t->failures++;
            snprintf(t->why, sizeof t->why,
                     "thread %d call %d: status %d (%s), %d wrong, sum %g/%g", t->id, i, (int)st,
                     refused, wrong, sum, want);
        }
        for (int k = 0; k < 2; k++)
            if (e[k] != NULL) {
                struct clops_event_release_args r = {.struct_size = sizeof r, .event = e[k]};
                api->event_release(&r);
            }
        gemm_case_free(&g);
    }
    return NULL;
}

START_TEST(test_sixteen_threads_share_two_streams)
{
    struct clops_pool *pool = tu_pool();
    struct clops_stream *s[2] = {new_stream(pool), new_stream(pool)};
    pthread_t threads[THREADS];
    struct submitter t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        t[i] = (struct submitter){.streams = {s[0], s[1]}, .id = i};
        ck_assert_int_eq(pthread_create(&threads[i], NULL, submitter_main, &t[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < THREADS; i++)
        ck_assert_msg(t[i].failures == 0, "%s", t[i].why);
    release_stream(s[0]);
    release_stream(s[1]);
}
END_TEST

/* The pool released while its stream has calls in flight: they complete, nothing is freed
 * under them, and the last release frees everything (AddressSanitizer checks no leak). */
START_TEST(test_pool_released_with_calls_in_flight)
{
    struct clops_pool *pool = tu_new_pool();
    struct clops_stream *s = new_stream(pool);
    enum { CALLS = 6 };
    struct gemm_case g[CALLS];
    struct clops_event *e[CALLS];
    for (int i = 0; i < CALLS; i++) {
        gemm_case_make(&g[i], 30 + i, 20, 25, 1000 + (uint64_t)i);
        ck_assert_int_eq(submit_gemm(s, &g[i], NULL, &e[i]), CLOPS_OK);
    }
    api->pool_release(pool);
    ck_assert_int_eq(wait_for(e, CALLS, -1), CLOPS_OK);
    for (int i = 0; i < CALLS; i++) {
        ck_assert_int_eq(query(e[i]).state, CLOPS_EVENT_COMPLETE);
        assert_gemm_result(&g[i]);
    }
    release_stream(s);
    for (int i = 0; i < CALLS; i++) {
        release_event(e[i]); /* the last one frees the stream, then the pool */
        gemm_case_free(&g[i]);
    }
}
END_TEST

/* Released in the callback of its own last event: the stream's thread frees the stream. */
static void release_in_callback(struct clops_event *e, int32_t status, void *user)
{
    (void)status;
    atomic_int *done = user;
    struct clops_event_release_args r = {.struct_size = sizeof r, .event = e};
    api->event_release(&r);
    atomic_store(done, 1);
}

START_TEST(test_event_released_in_its_callback)
{
    struct clops_pool *pool = tu_new_pool();
    struct clops_stream *s = new_stream(pool);
    struct gemm_case g;
    gemm_case_make(&g, 8, 8, 8, 1100);
    atomic_int done = 0;
    const struct extras x = {.fn = release_in_callback, .user = &done};
    struct clops_event *e = NULL;
    ck_assert_int_eq(submit_gemm(s, &g, &x, &e), CLOPS_OK);
    release_stream(s); /* waits for the call; the callback then drops the last hold */
    api->pool_release(pool);
    while (!atomic_load(&done)) {
        struct timespec t = {0, 1000000};
        nanosleep(&t, NULL);
    }
    assert_gemm_result(&g);
    gemm_case_free(&g);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_CASE_FIXTURE("stream", setup, NULL),
        TU_TEST(test_submit_computes_and_completes),
        TU_TEST(test_stream_orders_host_results),
        TU_TEST(test_streams_order_through_events),
        TU_TEST(test_failed_dependency_fails_its_waiters),
        TU_TEST(test_callbacks_run_once_on_a_clops_thread),
        TU_TEST(test_refused_submit_returns_its_error_at_once),
        TU_TEST(test_cancel_at_random_moments),
        TU_TEST(test_wait_times_out_and_streams_wait),
        TU_TEST(test_event_as_cl_event),
        TU_TEST(test_stream_on_the_hosts_queue),
        TU_TEST(test_sixteen_threads_share_two_streams),
        TU_TEST(test_pool_released_with_calls_in_flight),
        TU_TEST(test_event_released_in_its_callback),
    };
    return tu_run_tests("stream", 600, 0, tests, TU_COUNT(tests));
}
