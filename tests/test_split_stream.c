/* test_split_stream.c — submitted calls split across devices (issue 24): a GEMM on host
 * operands submitted on a stream of a pool whose gemm is split over two devices (PoCL's two
 * CPU devices, POCL_DEVICES="pthread pthread", set by main()). Checked: the same bits as the
 * synchronous call on one device, both devices worked; a split call behind a gate (a cl_event
 * the stream waits for) does not run before the gate opens, on either device; a call of the
 * same stream reading the split call's C sees it whole; a call cancelled before it starts
 * writes nothing; a split call on device buffers, whose next job on the stream sees its C
 * whole; several streams of threads submitting split calls at once (TSan in CI). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const struct clops_api *api;

enum { M = 389, N = 1031, K = 211 };

static void setup(void)
{
    api = tu_api();
}

static struct clops_pool *split_pool(void)
{
    struct clops_pool *pool =
        tu_two_devices(api, "gemm = { devices = [0, 1]; split_min_ms = 0; };");
    ck_assert_msg(pool != NULL, "no pool of two devices: %s", api->last_error());
    return pool;
}

static struct clops_pool *whole_pool(void)
{
    struct clops_pool *pool = tu_two_devices(api, "");
    ck_assert_msg(pool != NULL, "no pool of two devices: %s", api->last_error());
    return pool;
}

static int64_t tasks(struct clops_pool *pool, int32_t d)
{
    struct clops_device_stats s = {.struct_size = sizeof s};
    ck_assert_int_eq(api->pool_device_stats(pool, d, &s), CLOPS_OK);
    return s.tasks;
}

static int64_t uploaded_bytes(struct clops_pool *pool)
{
    struct clops_stats s = {.struct_size = sizeof s};
    ck_assert_int_eq(api->pool_stats(pool, &s), CLOPS_OK);
    return s.bytes_uploaded;
}

/* C = A B (f32, row-major, beta 0): the operands, C filled with -7 beforehand. */
struct product {
    float *a, *b, *c;
    struct clops_tensor ta, tb, tc;
};

static void product_make(struct product *p, uint64_t seed)
{
    tu_seed(seed);
    p->a = tu_malloc(sizeof(float) * M * K);
    p->b = tu_malloc(sizeof(float) * K * N);
    p->c = tu_malloc(sizeof(float) * M * N);
    tu_fill_f32(p->a, M * K);
    tu_fill_f32(p->b, K * N);
    for (int64_t i = 0; i < M * N; i++)
        p->c[i] = -7.0f;
    p->ta = clops_matrix(p->a, CLOPS_F32, M, K, K, 0);
    p->tb = clops_matrix(p->b, CLOPS_F32, K, N, N, 0);
    p->tc = clops_matrix(p->c, CLOPS_F32, M, N, N, 0);
}

static void product_free(struct product *p)
{
    free(p->a);
    free(p->b);
    free(p->c);
}

static void gemm_now(struct clops_pool *pool, struct product *p)
{
    clops_gemm_fn gemm = (clops_gemm_fn)tu_op("gemm")->entry;
    ck_assert_msg(gemm(pool, &p->ta, &p->tb, &p->tc, 0, 0, 1.0, 0.0) == CLOPS_OK, "%s",
                  api->last_error());
}

static struct clops_stream *new_stream(struct clops_pool *pool)
{
    struct clops_stream_create_args a = {.struct_size = sizeof a, .pool = pool};
    ck_assert_msg(api->stream_create(&a) == CLOPS_OK, "%s", api->last_error());
    return a.stream;
}

static void release_stream(struct clops_stream *s)
{
    struct clops_stream_release_args a = {.struct_size = sizeof a, .stream = s};
    ck_assert_int_eq(api->stream_release(&a), CLOPS_OK);
}

/* Submits C = A B of `p` (or, with `a` non-NULL, of that A) on `s`; `gate`: a cl_event the
 * call waits for, or NULL. */
static struct clops_event *submit_product(struct clops_stream *s, struct product *p,
                                          const struct clops_tensor *a, cl_event gate)
{
    const struct clops_arg args[] = {
        {.name = "a", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = a != NULL ? a : &p->ta},
        {.name = "b", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = &p->tb},
        {.name = "c", .kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &p->tc},
        {.name = "beta", .kind = CLOPS_PARAM_DOUBLE, .d = 0.0}};
    void *gates[] = {gate};
    struct clops_submit_args x = {.struct_size = sizeof x,
                                  .op_index = api->op_index(tu_op("gemm")),
                                  .stream = s,
                                  .args = args,
                                  .nargs = 4,
                                  .arg_size = sizeof(struct clops_arg),
                                  .cl_wait_events = gate != NULL ? gates : NULL,
                                  .cl_wait_count = gate != NULL};
    ck_assert_msg(api->submit(&x) == CLOPS_OK, "%s", api->last_error());
    return x.event;
}

static int32_t wait_event(struct clops_event *e, int64_t timeout_ns)
{
    struct clops_event_wait_args w = {
        .struct_size = sizeof w, .count = 1, .events = &e, .timeout_ns = timeout_ns, .wait_all = 1};
    return api->event_wait(&w);
}

static struct clops_event_query_args query(struct clops_event *e)
{
    struct clops_event_query_args q = {.struct_size = sizeof q, .event = e};
    ck_assert_int_eq(api->event_query(&q), CLOPS_OK);
    return q;
}

static void release_event(struct clops_event *e)
{
    struct clops_event_release_args a = {.struct_size = sizeof a, .event = e};
    ck_assert_int_eq(api->event_release(&a), CLOPS_OK);
}

/* A submitted split call behind a gate: nothing written, on either device, until the gate
 * opens; then the one device's bits, both devices having worked; a second call of the stream
 * reading its C as A sees all of it. */
START_TEST(test_a_submitted_split_call_matches_one_device)
{
    struct clops_pool *split = split_pool(), *whole = whole_pool();
    struct product one, two, next_one, next_two;
    product_make(&one, 31);
    product_make(&two, 31);
    product_make(&next_one, 32);
    product_make(&next_two, 32);
    gemm_now(whole, &one);
    /* The next product reads the first one's C as its A: M x N times N x N would be large, so
     * B of the next is N x K... keep K: its A is C's first M x K block, a view of C. */
    struct clops_tensor c_view = clops_matrix(one.c, CLOPS_F32, M, K, N, 0);
    gemm_now(whole, &(struct product){.ta = c_view, .tb = next_one.tb, .tc = next_one.tc});
    struct clops_stream *s = new_stream(split);
    cl_int rc;
    cl_event gate = clCreateUserEvent((cl_context)tu_pool_context(split), &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    const int64_t before[2] = {tasks(split, 0), tasks(split, 1)};
    const int64_t uploaded = uploaded_bytes(split);
    struct clops_event *e1 = submit_product(s, &two, NULL, gate);
    struct clops_tensor c2_view = clops_matrix(two.c, CLOPS_F32, M, K, N, 0);
    struct clops_event *e2 = submit_product(s, &next_two, &c2_view, NULL);
    ck_assert_int_eq(wait_event(e1, 50 * 1000 * 1000), CLOPS_ERR_TIMEOUT);
    for (int64_t i = 0; i < M * N; i++)
        ck_assert_msg(two.c[i] == -7.0f, "c[%lld] written before the gate opened", (long long)i);
    /* No part started on either device: a part's staging is counted as it is enqueued. */
    ck_assert_int_eq(uploaded_bytes(split), uploaded);
    ck_assert_int_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    clReleaseEvent(gate);
    ck_assert_int_eq(wait_event(e2, -1), CLOPS_OK);
    ck_assert_int_eq(query(e1).state, CLOPS_EVENT_COMPLETE);
    ck_assert_int_eq(query(e2).state, CLOPS_EVENT_COMPLETE);
    ck_assert_msg(tasks(split, 0) > before[0] && tasks(split, 1) > before[1],
                  "both devices should have had a part");
    ck_assert_msg(memcmp(one.c, two.c, sizeof(float) * M * N) == 0,
                  "the submitted split C differs from the one device's");
    ck_assert_msg(memcmp(next_one.c, next_two.c, sizeof(float) * M * N) == 0,
                  "the call reading the split call's C differs from the one device's");
    release_event(e1);
    release_event(e2);
    release_stream(s);
    product_free(&one);
    product_free(&two);
    product_free(&next_one);
    product_free(&next_two);
    api->pool_release(split);
    api->pool_release(whole);
}
END_TEST

/* Cancelled while it waits behind its gate: CLOPS_EVENT_CANCELLED and C untouched (whether
 * the stream's thread saw the cancel before it split the call or only once its parts ran). */
START_TEST(test_a_cancelled_split_call_writes_nothing)
{
    struct clops_pool *split = split_pool();
    struct product p;
    product_make(&p, 33);
    struct clops_stream *s = new_stream(split);
    cl_int rc;
    cl_event gate = clCreateUserEvent((cl_context)tu_pool_context(split), &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    struct clops_event *e = submit_product(s, &p, NULL, gate);
    struct clops_event_cancel_args c = {.struct_size = sizeof c, .event = e};
    ck_assert_int_eq(api->event_cancel(&c), CLOPS_OK);
    ck_assert_int_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    clReleaseEvent(gate);
    wait_event(e, -1);
    ck_assert_int_eq(query(e).state, CLOPS_EVENT_CANCELLED);
    for (int64_t i = 0; i < M * N; i++)
        ck_assert_msg(p.c[i] == -7.0f, "c[%lld]: a cancelled call wrote its output", (long long)i);
    release_event(e);
    release_stream(s);
    product_free(&p);
    api->pool_release(split);
}
END_TEST

/* A buffer of `pool` holding `bytes` of `data`. */
static struct clops_buffer *buffer_with(struct clops_pool *pool, const void *data, int64_t bytes)
{
    struct clops_buffer *b = NULL;
    ck_assert_msg(api->buffer_create(pool, bytes, &b) == CLOPS_OK, "%s", api->last_error());
    ck_assert_int_eq(api->buffer_upload(b, 0, data, bytes), CLOPS_OK);
    return b;
}

/* A submitted split call on device buffers (device 0's): split too, both devices at work, C
 * the one device's bits once the blocks computed on device 1 came home; and a buffer_copy the
 * stream runs next, reading C, sees all of it (the stream's later jobs wait for the write-back). */
START_TEST(test_a_submitted_split_call_on_device_buffers_matches_one_device)
{
    struct clops_pool *split = split_pool(), *whole = whole_pool();
    struct product one, two;
    product_make(&one, 35);
    product_make(&two, 35);
    gemm_now(whole, &one);
    struct clops_buffer *a = buffer_with(split, two.a, sizeof(float) * M * K),
                        *b = buffer_with(split, two.b, sizeof(float) * K * N),
                        *c = buffer_with(split, two.c, sizeof(float) * M * N),
                        *d = buffer_with(split, two.c, sizeof(float) * M * N);
    struct product on_device = {.ta = clops_matrix_on_device(a, CLOPS_F32, M, K, K, 0),
                                .tb = clops_matrix_on_device(b, CLOPS_F32, K, N, N, 0),
                                .tc = clops_matrix_on_device(c, CLOPS_F32, M, N, N, 0)};
    struct clops_stream *s = new_stream(split);
    const int64_t before[2] = {tasks(split, 0), tasks(split, 1)};
    struct clops_event *e1 = submit_product(s, &on_device, NULL, NULL);
    struct clops_buffer_copy_args copy = {.struct_size = sizeof copy,
                                          .stream = s,
                                          .src = c,
                                          .dst = d,
                                          .bytes = sizeof(float) * M * N};
    ck_assert_msg(api->buffer_copy(&copy) == CLOPS_OK, "%s", api->last_error());
    ck_assert_int_eq(wait_event(copy.event, -1), CLOPS_OK);
    ck_assert_int_eq(query(e1).state, CLOPS_EVENT_COMPLETE);
    ck_assert_int_eq(query(copy.event).state, CLOPS_EVENT_COMPLETE);
    ck_assert_msg(tasks(split, 0) > before[0] && tasks(split, 1) > before[1],
                  "both devices should have had a part");
    ck_assert_int_eq(api->buffer_download(c, 0, two.c, sizeof(float) * M * N), CLOPS_OK);
    ck_assert_msg(memcmp(one.c, two.c, sizeof(float) * M * N) == 0,
                  "the split C on the device differs from the one device's");
    ck_assert_int_eq(api->buffer_download(d, 0, two.c, sizeof(float) * M * N), CLOPS_OK);
    ck_assert_msg(memcmp(one.c, two.c, sizeof(float) * M * N) == 0,
                  "the stream's next job read C before all of it came home");
    release_event(e1);
    release_event(copy.event);
    release_stream(s);
    api->buffer_release(a);
    api->buffer_release(b);
    api->buffer_release(c);
    api->buffer_release(d);
    product_free(&one);
    product_free(&two);
    api->pool_release(split);
    api->pool_release(whole);
}
END_TEST

/* Threads each with a stream of one pool, each submitting split calls at once. */
struct submitter {
    struct clops_pool *pool;
    int32_t gemm_index;
    struct product p[2]; /* made before the thread starts */
    const float *want;
    int wrong;
};

static void *submit_twice(void *arg)
{
    struct submitter *t = arg;
    struct clops_stream_create_args a = {.struct_size = sizeof a, .pool = t->pool};
    if (api->stream_create(&a) != CLOPS_OK) {
        t->wrong = 1;
        return NULL;
    }
    struct clops_event *events[2] = {NULL, NULL};
    for (int r = 0; r < 2; r++) {
        struct product *p = &t->p[r];
        const struct clops_arg args[] = {
            {.name = "a", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = &p->ta},
            {.name = "b", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = &p->tb},
            {.name = "c", .kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &p->tc},
            {.name = "beta", .kind = CLOPS_PARAM_DOUBLE, .d = 0.0}};
        struct clops_submit_args x = {.struct_size = sizeof x,
                                      .op_index = t->gemm_index,
                                      .stream = a.stream,
                                      .args = args,
                                      .nargs = 4,
                                      .arg_size = sizeof(struct clops_arg)};
        t->wrong |= api->submit(&x) != CLOPS_OK;
        events[r] = x.event;
    }
    for (int r = 0; r < 2; r++) {
        if (events[r] == NULL)
            continue;
        struct clops_event_wait_args w = {
            .struct_size = sizeof w, .count = 1, .events = &events[r], .timeout_ns = -1};
        t->wrong |= api->event_wait(&w) != CLOPS_OK ||
                    memcmp(t->p[r].c, t->want, sizeof(float) * M * N) != 0;
        struct clops_event_release_args er = {.struct_size = sizeof er, .event = events[r]};
        api->event_release(&er);
    }
    struct clops_stream_release_args r = {.struct_size = sizeof r, .stream = a.stream};
    api->stream_release(&r);
    return NULL;
}

START_TEST(test_threads_submit_split_calls_at_once)
{
    struct clops_pool *split = split_pool(), *whole = whole_pool();
    struct product ref;
    product_make(&ref, 34);
    gemm_now(whole, &ref);
    struct submitter t[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        t[i] = (struct submitter){
            .pool = split, .gemm_index = api->op_index(tu_op("gemm")), .want = ref.c};
        product_make(&t[i].p[0], 34);
        product_make(&t[i].p[1], 34);
    }
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, submit_twice, &t[i]), 0);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(!t[i].wrong, "thread %d: a split call failed or differed", i);
        product_free(&t[i].p[0]);
        product_free(&t[i].p[1]);
    }
    ck_assert_int_gt(tasks(split, 1), 0);
    product_free(&ref);
    api->pool_release(split);
    api->pool_release(whole);
}
END_TEST

int main(void)
{
    /* PoCL then shows two CPU devices (a value the user set is kept). */
#ifndef _WIN32 /* under Wine, PoCL reads the Unix environment: ctest sets it there */
    setenv("POCL_DEVICES", "pthread pthread", 0);
#endif
    const struct tu_test tests[] = {
        TU_CASE_FIXTURE("split_stream", setup, NULL),
        TU_TEST(test_a_submitted_split_call_matches_one_device),
        TU_TEST(test_a_cancelled_split_call_writes_nothing),
        TU_TEST(test_a_submitted_split_call_on_device_buffers_matches_one_device),
        TU_TEST(test_threads_submit_split_calls_at_once),
    };
    return tu_run_tests("split_stream", 600, 1, tests, TU_COUNT(tests));
}
