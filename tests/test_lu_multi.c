/* test_lu_multi.c — lu and solve across a pool's devices (operators.lu.devices, issue 24 item
 * 4): block columns dealt to the devices in turn, each panel factored on its owner and sent to
 * the others through pinned host memory. On a machine without GPUs the pool is two CPU devices
 * (PoCL with POCL_DEVICES="pthread pthread", set by main()). Checked against the same call on one
 * device: pivots and info identical, the factors bit for bit (the same kernels compute every
 * element), LAPACK's residual ratio under 30; awkward, tall and wide shapes, both layouts, f32
 * and f64, an exactly singular matrix (info), no pivoting; both devices worked (their
 * statistics); a matrix of too few block columns stays on one device; solve's X; and the fault
 * sweep: a call in which any OpenCL call or allocation fails reports it and leaves a, ipiv and
 * info untouched. Links the core with fault injection (fault_inject.h). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entry.h"
#include "fault_inject.h"
#include "lu_testutil.h"
#include "ops/getrf.h"

static const struct clops_api *api;

/* The statically linked core's table: the one whose OpenCL calls fault_inject wraps. */
static void setup(void)
{
    api = entry_table(CLOPS_ABI_MAJOR);
}

/* tu_two_devices on the static core's table, which must have them. */
static struct clops_pool *two_devices(const char *operators)
{
    struct clops_pool *pool = tu_two_devices(api, operators);
    ck_assert_msg(pool != NULL, "no pool of two devices: %s", api->last_error());
    return pool;
}

/* The block sizes of both pools of a comparison: a CPU device's defaults, so that the matrices
 * here have block columns for every device wherever they run (a GPU's NB of 256 left these
 * sizes on one device), and the one-device factors they are compared with bit for bit are
 * blocked as theirs. */
#define BLOCKS "nb = 32; panel_nb = 8;"

/* A pool of the devices factoring on device 0 alone, blocked as across()'s. */
static struct clops_pool *one_device(void)
{
    return two_devices("lu = { " BLOCKS " }; solve = { " BLOCKS " };");
}

static struct clops_pool *across(void)
{
    return two_devices("lu = { devices = [0, 1]; split_min_ms = 0; " BLOCKS " }; "
                       "solve = { devices = [0, 1]; split_min_ms = 0; " BLOCKS " };");
}

static int64_t tasks(struct clops_pool *pool, int32_t d)
{
    struct clops_device_stats s = {.struct_size = sizeof s};
    ck_assert_int_eq(api->pool_device_stats(pool, d, &s), CLOPS_OK);
    return s.tasks;
}

struct lu_case {
    int32_t dtype;
    int64_t rows, cols;
    int32_t col_major, kind, pivoting;
    int64_t zero_column; /* >= 0: that column made zero, so U is exactly singular there */
};

static const struct lu_case cases[] = {
    {CLOPS_F64, 131, 131, 0, KIND_RANDOM, 0, -1},
    {CLOPS_F32, 257, 257, 1, KIND_RANDOM, 0, -1},
    {CLOPS_F64, 300, 170, 1, KIND_GRADED, 0, -1},
    {CLOPS_F32, 170, 300, 0, KIND_RANDOM, 0, -1},
    {CLOPS_F64, 200, 200, 0, KIND_RANK_DEFICIENT, 0, -1},
    {CLOPS_F64, 163, 163, 1, KIND_RANDOM, 0, 70},
    {CLOPS_F32, 193, 193, 1, KIND_DIAG_DOMINANT, 1, -1},
};

struct factored {
    struct tmat f;
    int32_t *ipiv, info;
    int32_t status;
};

/* A copy of a to factor, zero pivots and info -7 (allocated before any fault is armed: the
 * test's own allocations are wrapped too). */
static struct factored outputs_for(const struct tmat *a)
{
    const int64_t mn = a->rows < a->cols ? a->rows : a->cols;
    struct factored r = {
        .f = tmat_copy(a), .ipiv = calloc((size_t)mn, sizeof(int32_t)), .info = -7};
    ck_assert_ptr_nonnull(r.ipiv);
    return r;
}

static void factored_free(struct factored *r)
{
    free(r->f.data);
    free(r->ipiv);
}

static void factor_into(struct clops_pool *pool, struct factored *r, int32_t pivoting)
{
    const int64_t mn = r->f.rows < r->f.cols ? r->f.rows : r->f.cols;
    struct clops_tensor ta = tmat_tensor(&r->f), tp = i32_vector(r->ipiv, mn),
                        ti = i32_vector(&r->info, 1);
    r->status = ((clops_lu_fn)api->op_find("lu")->entry)(pool, &ta, &tp, &ti, pivoting);
}

static struct factored factor_on(struct clops_pool *pool, const struct tmat *a, int32_t pivoting)
{
    struct factored r = outputs_for(a);
    factor_into(pool, &r, pivoting);
    return r;
}

static struct tmat case_matrix(const struct lu_case *c, uint64_t seed)
{
    tu_seed(seed);
    struct tmat a = tmat_new(c->dtype, c->rows, c->cols, c->col_major, 3, 5);
    tmat_fill_kind(&a, c->kind);
    for (int64_t i = 0; c->zero_column >= 0 && i < a.rows; i++)
        tmat_set(&a, i, c->zero_column, 0);
    return a;
}

START_TEST(test_lu_across_devices_matches_one_device)
{
    const struct lu_case *c = &cases[_i];
    /* Odd cases: every panel crosses in LU_PANEL_PIECES_MAX pieces of rows (one row each where
     * it has fewer), as a large one does. The block columns go to the devices one, two or three
     * at a time (lu_multi_run; at most a device's share), as a large matrix's go in runs: the
     * next panel then lies on the same device, factored before this one is sent. In runs of
     * three, the first three go one at a time (lu_multi_short), as a large matrix's early ones
     * may. */
    lu_panel_piece_bytes = _i % 2 ? 64 : LU_PANEL_PIECE_BYTES;
    lu_multi_run = 1 + _i % 3;
    lu_multi_short = _i % 3 == 2 ? 3 : -1;
    struct clops_pool *one = one_device(), *both = across();
    const struct tmat a = case_matrix(c, 2400 + (uint64_t)_i);
    const int64_t mn = c->rows < c->cols ? c->rows : c->cols;
    const int64_t before = tasks(both, 1);
    struct factored x = factor_on(one, &a, c->pivoting), y = factor_on(both, &a, c->pivoting);
    ck_assert_msg(x.status == CLOPS_OK && y.status == CLOPS_OK, "case %d: %s", _i,
                  api->last_error());
    lu_multi_run = 0;
    lu_multi_short = -1;
    lu_panel_piece_bytes = LU_PANEL_PIECE_BYTES;
    ck_assert_int_gt(tasks(both, 1), before); /* device 1 factored its block columns */
    ck_assert_int_eq(y.info, x.info);
    if (c->zero_column >= 0)
        ck_assert_int_gt(y.info, 0);
    ck_assert_msg(memcmp(x.ipiv, y.ipiv, (size_t)mn * sizeof(int32_t)) == 0,
                  "case %d: pivots differ from one device's", _i);
    ck_assert_msg(tmat_equal(&x.f, &y.f), "case %d: factors differ from one device's", _i);
    if (c->pivoting == 0 && y.info == 0) {
        const double ratio = lu_ratio(&a, &y.f, y.ipiv);
        ck_assert_msg(ratio < LU_RATIO_MAX, "case %d: ratio %g", _i, ratio);
    }
    factored_free(&x);
    factored_free(&y);
    free(a.data);
    api->pool_release(one);
    api->pool_release(both);
}
END_TEST

/* A pool of exactly two devices (GPUs, else CPU devices) with lu across both, blocked as
 * across()'s, and `extra` at the top level: for what depends on which device owns a panel. */
static struct clops_pool *exactly_two(const char *extra)
{
    struct clops_pool *pool = NULL;
    static const char *const types[] = {"gpu", "cpu"};
    for (size_t i = 0; i < 2 && pool == NULL; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "devices = ( { type = \"%s\"; index = 0; }, { type = \"%s\"; index = 1; } );"
                 " cpu_fallback = false; %s"
                 " operators = { lu = { devices = [0, 1]; split_min_ms = 0; " BLOCKS " }; };",
                 types[i], types[i], extra);
        if (api->pool_create_from_string(text, &pool) != CLOPS_OK)
            pool = NULL;
    }
    ck_assert_msg(pool != NULL, "no pool of two devices: %s", api->last_error());
    return pool;
}

/* A panel comes into the place on another device where it keeps the panel of two steps before
 * only once that device's updates reading it are done: here device 1's updates of step 2 are
 * held (lu_multi_hold) until panel 4 has been sent, in block columns dealt one at a time (panels
 * 2 and 4 are device 0's, and go into the same place on device 1). The factors and pivots are
 * one device's, bit for bit. Two devices whatever CLOPS_TEST_SPLIT_DEVICES says: across three,
 * panel 4 is device 1's, whose download would wait for the hold. */
START_TEST(test_a_panel_waits_for_the_updates_that_read_its_place)
{
    lu_multi_run = 1;
    struct clops_pool *one = one_device(), *both = exactly_two("");
    const struct lu_case c = {CLOPS_F64, 200, 200, 0, KIND_RANDOM, 0, -1};
    const struct tmat a = case_matrix(&c, 2750);
    struct factored x = factor_on(one, &a, 0);
    lu_multi_hold = 2;
    struct factored y = factor_on(both, &a, 0);
    lu_multi_hold = -1;
    lu_multi_run = 0;
    ck_assert_msg(x.status == CLOPS_OK && y.status == CLOPS_OK, "%s", api->last_error());
    ck_assert_int_eq(y.info, x.info);
    ck_assert(memcmp(x.ipiv, y.ipiv, 200 * sizeof(int32_t)) == 0);
    ck_assert_msg(tmat_equal(&x.f, &y.f), "factors differ from one device's");
    factored_free(&x);
    factored_free(&y);
    free(a.data);
    api->pool_release(one);
    api->pool_release(both);
}
END_TEST

/* The other device's block columns leave the call's device during the steps, and the call's
 * device updates those still with it meanwhile; each is updated on its owner for the step it
 * left at as it arrives, a step later. Dealt one at a time over two devices (all gone within
 * LU_MULTI_LEAVE_STEPS = 4 steps), a square matrix of 8 block columns sends device 1's columns
 * 5 and 7 at steps 2 and 3 (column 1 crosses before the first step, column 3 at once: three
 * steps before its panel at the latest), and a wide one of 4 panels and 10 block columns, two
 * a step, its columns 5 and 7 at step 1 and 9 at step 2 (two steps before the last at the
 * latest). The factors and pivots are one device's, bit for bit. */
START_TEST(test_block_columns_leave_during_the_steps)
{
    static const struct {
        int64_t rows, cols, left;
    } shapes[] = {{256, 256, 2}, {128, 320, 3}};
    lu_multi_run = 1;
    struct clops_pool *one = one_device(), *both = exactly_two("");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct lu_case c = {CLOPS_F64, shapes[i].rows, shapes[i].cols, 0, KIND_RANDOM, 0, -1};
        const struct tmat a = case_matrix(&c, 2760 + i);
        const int64_t mn = c.rows < c.cols ? c.rows : c.cols;
        struct factored x = factor_on(one, &a, 0);
        lu_multi_left_in_steps = -1;
        struct factored y = factor_on(both, &a, 0);
        ck_assert_msg(x.status == CLOPS_OK && y.status == CLOPS_OK, "%s", api->last_error());
        ck_assert_int_eq(lu_multi_left_in_steps, shapes[i].left);
        ck_assert_int_eq(y.info, x.info);
        ck_assert(memcmp(x.ipiv, y.ipiv, (size_t)mn * sizeof(int32_t)) == 0);
        ck_assert_msg(tmat_equal(&x.f, &y.f), "shape %zu: factors differ from one device's", i);
        factored_free(&x);
        factored_free(&y);
        free(a.data);
    }
    lu_multi_run = 0;
    api->pool_release(one);
    api->pool_release(both);
}
END_TEST

/* Below two block columns a device, a call runs whole on its device. */
START_TEST(test_a_small_lu_stays_on_one_device)
{
    struct clops_pool *both = across();
    const struct lu_case c = {CLOPS_F64, 40, 40, 0, KIND_RANDOM, 0, -1};
    const struct tmat a = case_matrix(&c, 2500);
    struct factored y = factor_on(both, &a, 0);
    ck_assert_int_eq(y.status, CLOPS_OK);
    ck_assert_int_eq(tasks(both, 1), 0);
    ck_assert(lu_ratio(&a, &y.f, y.ipiv) < LU_RATIO_MAX);
    factored_free(&y);
    free(a.data);
    api->pool_release(both);
}
END_TEST

/* solve (gesv): X across devices equals X on one device, and A X = B to LAPACK's standard. */
START_TEST(test_solve_across_devices_matches_one_device)
{
    struct clops_pool *one = one_device(), *both = across();
    const int64_t n = 157, nrhs = 3;
    const struct lu_case c = {CLOPS_F64, n, n, 1, KIND_RANDOM, 0, -1};
    const struct tmat a = case_matrix(&c, 2600);
    struct tmat b = tmat_new(CLOPS_F64, n, nrhs, 1, 0, 0);
    struct tmat fa[2], x[2];
    int32_t ipiv[2][157], info[2] = {-1, -1};
    struct clops_pool *pools[2] = {one, both};
    for (int p = 0; p < 2; p++) {
        fa[p] = tmat_copy(&a);
        x[p] = tmat_copy(&b);
        struct clops_tensor ta = tmat_tensor(&fa[p]), tb = tmat_tensor(&x[p]),
                            tp = i32_vector(ipiv[p], n), ti = i32_vector(&info[p], 1);
        ck_assert_msg(((clops_solve_fn)api->op_find("solve")->entry)(pools[p], &ta, &tb, &tp,
                                                                     &ti) == CLOPS_OK,
                      "%s", api->last_error());
        ck_assert_int_eq(info[p], 0);
    }
    ck_assert_int_gt(tasks(both, 1), 0);
    ck_assert(tmat_equal(&x[0], &x[1]));
    ck_assert(memcmp(ipiv[0], ipiv[1], sizeof ipiv[0]) == 0);
    /* ||A X - B||_1 / (||A||_1 ||X||_1 n eps), LAPACK's dget02. */
    long double worst = 0, xnorm = norm1(&x[1]);
    for (int64_t j = 0; j < nrhs; j++) {
        long double col = 0;
        for (int64_t i = 0; i < n; i++) {
            long double s = -tmat_get(&b, i, j);
            for (int64_t k = 0; k < n; k++)
                s += tmat_get(&a, i, k) * tmat_get(&x[1], k, j);
            col += fabsl(s);
        }
        worst = col > worst ? col : worst;
    }
    const double ratio = (double)(worst / (norm1(&a) * xnorm * n * tmat_eps(CLOPS_F64)));
    ck_assert_msg(ratio < LU_RATIO_MAX, "solve ratio %g", ratio);
    for (int p = 0; p < 2; p++) {
        free(fa[p].data);
        free(x[p].data);
    }
    free(a.data);
    free(b.data);
    api->pool_release(one);
    api->pool_release(both);
}
END_TEST

/* The devices other than the call's hold their own block columns and a panel's place, not the
 * whole matrix (issue 24 item 4's layout): each one's peak device memory stays below what the
 * matrix alone takes (Check runs each test in a process of its own, so the peaks are this
 * test's), yet the factors are one device's. */
START_TEST(test_other_devices_hold_only_their_block_columns)
{
    struct clops_pool *one = one_device(),
                      *both =
                          two_devices("lu = { devices = [0, 1]; split_min_ms = 0; " BLOCKS " };");
    const struct lu_case c = {CLOPS_F64, 517, 517, 0, KIND_RANDOM, 0, -1};
    const struct tmat a = case_matrix(&c, 2800);
    struct factored x = factor_on(one, &a, 0), y = factor_on(both, &a, 0);
    ck_assert_msg(x.status == CLOPS_OK && y.status == CLOPS_OK, "%s", api->last_error());
    ck_assert(tmat_equal(&x.f, &y.f));
    ck_assert_int_eq(memcmp(x.ipiv, y.ipiv, 517 * sizeof(int32_t)), 0);
    const int32_t devices = api->pool_device_count(both);
    const int64_t whole = 517 * 517 * 8, blocks = (517 + 31) / 32;
    for (int32_t d = 1; d < devices; d++) {
        struct clops_memory_stats_args s = {.struct_size = sizeof s, .pool = both, .device = d};
        ck_assert_int_eq(api->memory_stats(&s), CLOPS_OK);
        /* Its block columns (at most one more than blocks / devices) and the panel's place. */
        const int64_t mine = 517 * 32 * 8 * (blocks / devices + 2);
        ck_assert_msg(s.peak_bytes >= mine - 517 * 32 * 8 && s.peak_bytes < whole,
                      "device %d: peak %lld bytes; its block columns %lld, the matrix %lld", d,
                      (long long)s.peak_bytes, (long long)mine, (long long)whole);
        ck_assert_int_eq(s.allocated_bytes < s.peak_bytes, 1); /* given back after the call */
    }
    factored_free(&x);
    factored_free(&y);
    free(a.data);
    api->pool_release(one);
    api->pool_release(both);
}
END_TEST

/* ---- Submitted calls ------------------------------------------------------------------------ */

/* The cl_context of the pool's device 0 (tu_pool_context's, on the static core's table). */
static cl_context context_of(struct clops_pool *pool)
{
    struct clops_buffer *b = NULL;
    ck_assert_int_eq(api->buffer_create(pool, 64, &b), CLOPS_OK);
    struct clops_buffer_cl_args a = {.struct_size = sizeof a, .buffer = b};
    ck_assert_int_eq(api->buffer_cl(&a), CLOPS_OK);
    api->buffer_release(b);
    return a.cl_context;
}

static struct clops_stream *new_stream(struct clops_pool *pool)
{
    struct clops_stream_create_args a = {.struct_size = sizeof a, .pool = pool};
    ck_assert_msg(api->stream_create(&a) == CLOPS_OK, "%s", api->last_error());
    return a.stream;
}

/* lu of r on stream s, behind `gate` (a cl_event; NULL: none). */
static struct clops_event *submit_factor(struct clops_stream *s, struct factored *r, cl_event gate)
{
    const int64_t mn = r->f.rows < r->f.cols ? r->f.rows : r->f.cols;
    const struct clops_tensor ta = tmat_tensor(&r->f), tp = i32_vector(r->ipiv, mn),
                              ti = i32_vector(&r->info, 1);
    const struct clops_arg args[] = {
        {.name = "a", .kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &ta},
        {.name = "ipiv", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &tp},
        {.name = "info", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &ti}};
    void *gates[] = {gate};
    struct clops_submit_args x = {.struct_size = sizeof x,
                                  .op_index = api->op_index(api->op_find("lu")),
                                  .stream = s,
                                  .args = args,
                                  .nargs = 3,
                                  .arg_size = sizeof args[0],
                                  .cl_wait_events = gate != NULL ? gates : NULL,
                                  .cl_wait_count = gate != NULL};
    ck_assert_msg(api->submit(&x) == CLOPS_OK, "%s", api->last_error());
    return x.event;
}

static struct clops_event_query_args query(struct clops_event *e)
{
    struct clops_event_query_args q = {.struct_size = sizeof q, .event = e};
    ck_assert_int_eq(api->event_query(&q), CLOPS_OK);
    return q;
}

static int32_t wait_event(struct clops_event *e, int64_t timeout_ns)
{
    struct clops_event_wait_args w = {
        .struct_size = sizeof w, .count = 1, .events = &e, .timeout_ns = timeout_ns, .wait_all = 1};
    return api->event_wait(&w);
}

static void release(struct clops_event *e, struct clops_stream *s)
{
    struct clops_event_release_args er = {.struct_size = sizeof er, .event = e};
    ck_assert_int_eq(api->event_release(&er), CLOPS_OK);
    struct clops_stream_release_args sr = {.struct_size = sizeof sr, .stream = s};
    ck_assert_int_eq(api->stream_release(&sr), CLOPS_OK);
}

/* A submitted lu goes across the devices too, once its gate opens (nothing written and no
 * device at work before), with one device's factors, pivots and info, and its progress whole.
 * Without the gate where device 0 is PoCL 3.1's basic driver (test_lu_multi_uneven): it never
 * runs a queue on once a user event it waited for completes (a plain OpenCL program hangs in
 * clFinish there), so the gate is tested on the pthread devices. */
START_TEST(test_a_submitted_lu_across_devices_matches_one_device)
{
    struct clops_pool *one = one_device(), *both = across();
    const struct lu_case c = {CLOPS_F64, 300, 300, 1, KIND_RANDOM, 0, -1};
    const struct tmat a = case_matrix(&c, 2900);
    struct factored x = factor_on(one, &a, 0), y = outputs_for(&a);
    ck_assert_int_eq(x.status, CLOPS_OK);
    struct clops_stream *s = new_stream(both);
    const char *drivers = getenv("POCL_DEVICES");
    cl_event gate = NULL;
    if (drivers == NULL || strncmp(drivers, "basic", 5) != 0) {
        cl_int rc;
        gate = clCreateUserEvent(context_of(both), &rc);
        ck_assert_int_eq(rc, CL_SUCCESS);
    }
    const int64_t before = tasks(both, 1);
    struct clops_event *e = submit_factor(s, &y, gate);
    if (gate != NULL) {
        ck_assert_int_eq(wait_event(e, 50 * 1000 * 1000), CLOPS_ERR_TIMEOUT);
        ck_assert_msg(tmat_equal(&y.f, &a), "a written before the gate opened");
        ck_assert_int_eq(y.info, -7);
        ck_assert_int_eq(tasks(both, 1), before);
        ck_assert_int_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
        clReleaseEvent(gate);
    }
    ck_assert_int_eq(wait_event(e, -1), CLOPS_OK);
    const struct clops_event_query_args q = query(e);
    ck_assert_msg(q.state == CLOPS_EVENT_COMPLETE && q.status == CLOPS_OK, "%s", q.message);
    ck_assert(q.progress == 1.0);
    lu_multi_run = 0;
    lu_panel_piece_bytes = LU_PANEL_PIECE_BYTES;
    ck_assert_int_gt(tasks(both, 1), before); /* device 1 factored its block columns */
    ck_assert_int_eq(y.info, x.info);
    ck_assert_int_eq(memcmp(x.ipiv, y.ipiv, 300 * sizeof(int32_t)), 0);
    ck_assert_msg(tmat_equal(&x.f, &y.f), "the submitted factors differ from one device's");
    release(e, s);
    factored_free(&x);
    factored_free(&y);
    free(a.data);
    api->pool_release(one);
    api->pool_release(both);
}
END_TEST

/* Cancelled between panels once some are done: CLOPS_ERR_CANCELLED, and a, ipiv and info as
 * they were; the stream runs the next call right. */
START_TEST(test_a_submitted_lu_across_devices_cancels_between_panels)
{
    struct clops_pool *both = two_devices("lu = { devices = [0, 1]; split_min_ms = 0; nb = 8; };");
    const struct lu_case c = {CLOPS_F64, 640, 640, 0, KIND_RANDOM, 0, -1};
    const struct tmat a = case_matrix(&c, 3000);
    struct factored y = outputs_for(&a);
    struct clops_stream *s = new_stream(both);
    struct clops_event *e = submit_factor(s, &y, NULL);
    double progress = 0;
    for (int i = 0; i < 60000 && progress == 0; i++) { /* a panel done: 60 s at most */
        nanosleep(&(struct timespec){0, 1000000}, NULL);
        progress = query(e).progress;
    }
    ck_assert_msg(progress > 0 && progress < 0.5, "progress %g when cancelled", progress);
    struct clops_event_cancel_args cancel = {.struct_size = sizeof cancel, .event = e};
    ck_assert_int_eq(api->event_cancel(&cancel), CLOPS_OK);
    ck_assert_int_eq(wait_event(e, -1), CLOPS_OK);
    const struct clops_event_query_args q = query(e);
    ck_assert_int_eq(q.state, CLOPS_EVENT_CANCELLED);
    ck_assert_int_eq(q.status, CLOPS_ERR_CANCELLED);
    /* It went across: device 1 held its 40 block columns of the 80 (or its share of them). */
    const int64_t share = 640 * 8 * 8 * (80 / api->pool_device_count(both));
    struct clops_memory_stats_args m = {.struct_size = sizeof m, .pool = both, .device = 1};
    ck_assert_int_eq(api->memory_stats(&m), CLOPS_OK);
    ck_assert_msg(m.peak_bytes >= share, "device 1's peak %lld < %lld", (long long)m.peak_bytes,
                  (long long)share);
    ck_assert_msg(strstr(q.message, "panels") != NULL, "message: %s", q.message);
    ck_assert_msg(tmat_equal(&y.f, &a), "a cancelled call wrote a");
    ck_assert_int_eq(y.info, -7);
    for (int64_t k = 0; k < 640; k++)
        ck_assert_int_eq(y.ipiv[k], 0);
    release(e, s);
    struct factored after = factor_on(both, &a, 0);
    ck_assert_int_eq(after.status, CLOPS_OK);
    ck_assert(lu_ratio(&a, &after.f, after.ipiv) < LU_RATIO_MAX);
    factored_free(&y);
    factored_free(&after);
    free(a.data);
    api->pool_release(both);
}
END_TEST

/* Any OpenCL call or allocation of the call failing: an error, and a, ipiv and info as they
 * were; the next call right. Block columns in runs of two (lu_multi_run): the next panel is
 * factored before this one is sent, on the same device. */
START_TEST(test_a_failure_anywhere_leaves_the_outputs_untouched)
{
    const enum fault_kind kind = _i == 0 ? FAULT_OPENCL : FAULT_ALLOC;
    lu_panel_piece_bytes = 1024; /* the panels cross in pieces: a failure between them too */
    lu_multi_run = 2;
    struct clops_pool *both = across();
    const struct lu_case c = {CLOPS_F32, 131, 131, 1, KIND_RANDOM, 0, -1};
    const struct tmat a = case_matrix(&c, 2700);
    struct factored first = factor_on(both, &a, 0); /* kernels built, bridges kept */
    ck_assert_int_eq(first.status, CLOPS_OK);
    struct factored counted = outputs_for(&a);
    fault_arm(kind, 0);
    factor_into(both, &counted, 0);
    const int64_t calls = fault_count(kind);
    fault_disarm();
    ck_assert_int_eq(counted.status, CLOPS_OK);
    ck_assert_int_gt(calls, 0);
    int failures = 0;
    for (int64_t n = 1; n <= calls; n++) {
        struct factored r = outputs_for(&a);
        fault_arm(kind, n);
        factor_into(both, &r, 0);
        const char *failed = fault_failed_function();
        fault_disarm();
        if (r.status != CLOPS_OK) {
            failures++;
            ck_assert_msg(tmat_equal(&r.f, &a), "failing call %lld (%s): %s; a was written",
                          (long long)n, failed ? failed : "?", api->last_error());
            ck_assert_int_eq(r.info, -7);
            for (int64_t k = 0; k < 131; k++)
                ck_assert_int_eq(r.ipiv[k], 0);
        }
        factored_free(&r);
    }
    ck_assert_int_gt(failures, 0);
    struct factored after = factor_on(both, &a, 0);
    ck_assert_int_eq(after.status, CLOPS_OK);
    ck_assert(tmat_equal(&after.f, &first.f));
    lu_panel_piece_bytes = LU_PANEL_PIECE_BYTES; /* for the tests after it in this process */
    lu_multi_run = 0;
    factored_free(&first);
    factored_free(&counted);
    factored_free(&after);
    free(a.data);
    api->pool_release(both);
}
END_TEST

/* What kernel_times logs of a call across devices: per device, its launches and busy time. */
struct device_times {
    int lines, kernel_lines[2], launches[2], kernel_launches[2];
    double busy[2], span[2];
};

static void collect_device_times(int32_t level, const char *message, void *user)
{
    struct device_times *t = user;
    int d = -1, n = 0;
    double busy = 0, span = 0;
    char name[64];
    if (level != CLOPS_LOG_INFO)
        return;
    if (sscanf(message, "lu: device %d: %d launches, busy %lf ms of a span of %lf ms", &d, &n,
               &busy, &span) == 4 &&
        d >= 0 && d < 2) {
        t->lines++;
        t->launches[d] += n;
        t->busy[d] += busy;
        t->span[d] += span;
    } else if (sscanf(message, "lu: device %d: kernel %63[^:]: %d launch", &d, name, &n) == 3 &&
               d >= 0 && d < 2) {
        t->kernel_lines[d]++;
        t->kernel_launches[d] += n;
    }
}

/* kernel_times on a call across two devices logs each device's kernels apart, and each
 * device's launches, busy time and span: the launches add up to its kernels', it was busy for
 * some of the span, and both devices ran kernels (each holds block columns). */
START_TEST(test_kernel_times_of_a_call_across_devices_are_logged_by_device)
{
    struct clops_pool *pool = exactly_two("kernel_times = true;");
    const struct tmat a = case_matrix(&cases[0], 2480);
    struct device_times t = {0};
    api->set_log_callback(collect_device_times, &t, CLOPS_LOG_INFO);
    struct factored r = factor_on(pool, &a, 0);
    api->set_log_callback(NULL, NULL, CLOPS_LOG_ERROR);
    ck_assert_msg(r.status == CLOPS_OK, "%s", api->last_error());
    ck_assert_int_eq(t.lines, 2);
    for (int d = 0; d < 2; d++) {
        ck_assert_int_gt(t.kernel_lines[d], 0);
        ck_assert_int_gt(t.launches[d], 0);
        ck_assert_int_eq(t.launches[d], t.kernel_launches[d]);
        ck_assert(t.busy[d] > 0 && t.span[d] > 0);
    }
    factored_free(&r);
    free(a.data);
    api->pool_release(pool);
}
END_TEST

int main(void)
{
    /* PoCL then shows two CPU devices (a value the user set is kept). */
    setenv("POCL_DEVICES", "pthread pthread", 0);
    const struct tu_test tests[] = {
        TU_CASE_FIXTURE("lu_multi", setup, NULL),
        TU_LOOP(test_lu_across_devices_matches_one_device, (int)(sizeof cases / sizeof cases[0])),
        TU_TEST(test_a_small_lu_stays_on_one_device),
        TU_TEST(test_a_panel_waits_for_the_updates_that_read_its_place),
        TU_TEST(test_block_columns_leave_during_the_steps),
        TU_TEST(test_solve_across_devices_matches_one_device),
        TU_TEST(test_other_devices_hold_only_their_block_columns),
        TU_TEST(test_a_submitted_lu_across_devices_matches_one_device),
        TU_TEST(test_a_submitted_lu_across_devices_cancels_between_panels),
        TU_LOOP(test_a_failure_anywhere_leaves_the_outputs_untouched, 2),
        TU_TEST(test_kernel_times_of_a_call_across_devices_are_logged_by_device),
    };
    return tu_run_tests("lu_multi", 1200, 1, tests, TU_COUNT(tests));
}
