/* test_shared_outputs.c — outputs shared between calls: threads computing disjoint blocks of one
 * host array through gemm, reduce and transpose lose no update and touch no byte outside their
 * blocks; views of one array that share no element are not refused as overlapping; element
 * counts that overflow 64 bits are refused, naming the parameter. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Small integers: every product and sum below is exact in f64, so results compare with ==. */
static double small_int(void)
{
    return (double)(int)(tu_uniform() * 8.0);
}

/* The byte every gap holds, and that none may lose. */
enum { GAP_BYTE = 0xA5 };

static void fill_gaps(void *data, size_t bytes)
{
    memset(data, GAP_BYTE, bytes);
}

/* ---- Threads --------------------------------------------------------------------------------- */

enum { THREADS = 4, ROUNDS = 12 };

/* How many of the count elements (elem bytes each) of got differ from want, bit for bit; *first
 * gets the index of the first that does (-1 when none). */
static int64_t count_wrong(const void *got, const void *want, int64_t count, size_t elem,
                           int64_t *first)
{
    int64_t lost = 0;
    *first = -1;
    for (int64_t i = 0; i < count; i++)
        if (memcmp((const char *)got + i * elem, (const char *)want + i * elem, elem) != 0 &&
            lost++ == 0)
            *first = i;
    return lost;
}

/* One thread's call: `run` makes it once every thread is ready, so that the calls overlap.
 * Check's asserts stay on the main thread: a thread keeps its status and message. */
struct job {
    pthread_barrier_t *start;
    void *arg;
    int32_t (*run)(void *arg);
    const struct clops_api *api; /* resolved before the threads start */
    int32_t status;
    char message[512];
};

static void *job_thread(void *p)
{
    struct job *j = p;
    pthread_barrier_wait(j->start);
    j->status = j->run(j->arg);
    snprintf(j->message, sizeof j->message, "%s", j->api->last_error());
    return NULL;
}

/* Runs run(args[t]) on THREADS threads at once; every call must succeed. */
static void run_threads(int32_t (*run)(void *), void *args, size_t arg_size)
{
    pthread_barrier_t start;
    ck_assert_int_eq(pthread_barrier_init(&start, NULL, THREADS), 0);
    pthread_t threads[THREADS];
    struct job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (struct job){.start = &start,
                               .arg = (char *)args + (size_t)t * arg_size,
                               .run = run,
                               .api = tu_api(),
                               .status = -1};
        ck_assert_int_eq(pthread_create(&threads[t], NULL, job_thread, &jobs[t]), 0);
    }
    for (int t = 0; t < THREADS; t++)
        ck_assert_int_eq(pthread_join(threads[t], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int t = 0; t < THREADS; t++)
        ck_assert_msg(jobs[t].status == CLOPS_OK, "thread %d: %s", t, jobs[t].message);
}

/* ---- gemm: column blocks of a row-major C, row blocks of a column-major C ----------------- */

struct gemm_job {
    clops_gemm_fn gemm;
    struct clops_pool *pool;
    struct clops_tensor a, b, c;
    double alpha, beta;
};

static int32_t gemm_job_run(void *arg)
{
    struct gemm_job *g = arg;
    return g->gemm(g->pool, &g->a, &g->b, &g->c, CLOPS_NO_TRANS, CLOPS_NO_TRANS, g->alpha, g->beta);
}

/* Whether element `at` of a C of `count` elements is one of the C matrix's (else a gap). */
static int in_matrix(int64_t at, int64_t ld, int64_t inner, int64_t outer)
{
    return at / ld < outer && at % ld < inner;
}

/* THREADS threads compute one block of C each, C = alpha A B + beta C0 with A shared: with
 * `column_blocks` C is row-major M x (THREADS*NB) and thread t computes its columns
 * t*NB .. (t+1)*NB - 1 (B's columns likewise); otherwise C is column-major (THREADS*MB) x N and
 * thread t computes its rows (A's rows likewise), as two dgemm_ calls on the halves of one C
 * would. Every element must equal the exact reference, every gap keep its bytes. */
static void gemm_blocks(int column_blocks, double beta)
{
    enum { K = 40, BLOCK = 24, OTHER = 72, PAD = 5 };
    const int64_t rows = column_blocks ? OTHER : THREADS * BLOCK;
    const int64_t cols = column_blocks ? THREADS * BLOCK : OTHER;
    /* Row-major C: ld over the columns; column-major: over the rows. */
    const int64_t inner = column_blocks ? cols : rows, outer = column_blocks ? rows : cols;
    const int64_t ld = inner + PAD, count = ld * outer;
    double *a = tu_malloc(sizeof(double) * (size_t)(rows * K));
    double *b = tu_malloc(sizeof(double) * (size_t)(K * cols));
    double *c = tu_malloc(sizeof(double) * (size_t)count);
    double *c0 = tu_malloc(sizeof(double) * (size_t)count);
    double *want = tu_malloc(sizeof(double) * (size_t)count);
    for (int64_t i = 0; i < rows * K; i++)
        a[i] = small_int();
    for (int64_t i = 0; i < K * cols; i++)
        b[i] = small_int();
    fill_gaps(c0, sizeof(double) * (size_t)count);
    for (int64_t at = 0; at < count; at++)
        if (in_matrix(at, ld, inner, outer))
            c0[at] = small_int();
    /* A is rows x K row-major, B is K x cols row-major. */
    memcpy(want, c0, sizeof(double) * (size_t)count);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double sum = 0;
            for (int64_t k = 0; k < K; k++)
                sum += a[i * K + k] * b[k * cols + j];
            const int64_t at = column_blocks ? i * ld + j : i + j * ld;
            want[at] = 2.0 * sum + beta * c0[at];
        }
    struct gemm_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        struct gemm_job *g = &jobs[t];
        *g = (struct gemm_job){.gemm = (clops_gemm_fn)tu_op("gemm")->entry,
                               .pool = tu_pool(),
                               .alpha = 2.0,
                               .beta = beta};
        if (column_blocks) {
            g->a = clops_matrix(a, CLOPS_F64, rows, K, K, 0);
            g->b = clops_matrix(b, CLOPS_F64, K, BLOCK, cols, 0);
            g->b.offset = t * BLOCK;
            g->c = clops_matrix(c, CLOPS_F64, rows, BLOCK, ld, 0);
            g->c.offset = t * BLOCK;
        } else {
            g->a = clops_matrix(a, CLOPS_F64, BLOCK, K, K, 0);
            g->a.offset = t * BLOCK * K;
            g->b = clops_matrix(b, CLOPS_F64, K, cols, cols, 0);
            g->c = clops_matrix(c, CLOPS_F64, BLOCK, cols, ld, 1);
            g->c.offset = t * BLOCK;
        }
    }
    for (int round = 0; round < ROUNDS; round++) {
        memcpy(c, c0, sizeof(double) * (size_t)count);
        run_threads(gemm_job_run, jobs, sizeof jobs[0]);
        int64_t first;
        int64_t lost = count_wrong(c, want, count, sizeof c[0], &first);
        ck_assert_msg(lost == 0,
                      "round %d: %lld of %lld elements of C wrong (gaps included), first at %lld "
                      "(%s): %g, want %g",
                      round, (long long)lost, (long long)count, (long long)first,
                      in_matrix(first, ld, inner, outer) ? "an element" : "a gap", c[first],
                      want[first]);
    }
    free(a);
    free(b);
    free(c);
    free(c0);
    free(want);
}

START_TEST(test_gemm_threads_on_column_blocks_of_one_row_major_c_lose_nothing)
{
    tu_seed(100 + (uint64_t)_i);
    gemm_blocks(1, _i == 0 ? 0.0 : 0.5);
}
END_TEST

START_TEST(test_gemm_threads_on_row_blocks_of_one_column_major_c_lose_nothing)
{
    tu_seed(200 + (uint64_t)_i);
    gemm_blocks(0, _i == 0 ? 0.0 : 0.5);
}
END_TEST

/* The arrays of a test whose threads write parts of one output: x, what they read; out, the
 * output, count elements of elem bytes; want, what out must hold after a round, which starts as
 * all gaps (GAP_BYTE) and the test fills in with the threads' elements. */
struct gap_arrays {
    void *x, *out, *want;
    int64_t count;
    size_t elem;
};

static struct gap_arrays gap_arrays_new(size_t x_bytes, int64_t count, size_t elem)
{
    struct gap_arrays g = {.x = tu_malloc(x_bytes),
                           .out = tu_malloc((size_t)count * elem),
                           .want = tu_malloc((size_t)count * elem),
                           .count = count,
                           .elem = elem};
    fill_gaps(g.want, (size_t)count * elem);
    return g;
}

/* Runs the jobs ROUNDS times, g's output (named `what` in failures) filled with gaps before each
 * round, and asserts that it then equals g's want bit for bit: the threads' elements and the gaps
 * between them. Frees g's arrays. */
static void run_rounds_over_gaps(int32_t (*run)(void *), void *jobs, size_t job_size,
                                 struct gap_arrays *g, const char *what)
{
    for (int round = 0; round < ROUNDS; round++) {
        fill_gaps(g->out, (size_t)g->count * g->elem);
        run_threads(run, jobs, job_size);
        int64_t first;
        int64_t lost = count_wrong(g->out, g->want, g->count, g->elem, &first);
        ck_assert_msg(lost == 0, "%s, round %d: %lld of %lld elements wrong, first %lld (%s)", what,
                      round, (long long)lost, (long long)g->count, (long long)first,
                      lost > 0 &&
                              ((const unsigned char *)g->want)[first * (int64_t)g->elem] == GAP_BYTE
                          ? "a gap"
                          : "an element");
    }
    free(g->x);
    free(g->out);
    free(g->want);
}

/* A job of reduce or transpose, which read x and write y; entry is the operator's typed entry. */
struct xy_job {
    void (*entry)(void);
    struct clops_pool *pool;
    struct clops_tensor x, y;
};

/* A job of operator op on tu_pool(). */
static struct xy_job xy_job(const char *op, struct clops_tensor x, struct clops_tensor y)
{
    return (struct xy_job){.entry = tu_op(op)->entry, .pool = tu_pool(), .x = x, .y = y};
}

/* ---- reduce: interleaved elements of one output vector --------------------------------------- */

static int32_t reduce_job_run(void *arg)
{
    const struct xy_job *r = arg;
    return ((clops_reduce_fn)r->entry)(r->pool, &r->x, &r->y, 0 /* sum */, 1);
}

/* Thread t sums the rows of its own R x L matrix into out[t], out[t + S], out[t + 2S], ... of
 * one f64 vector, S = THREADS + 1: the threads' elements interleave, and every S-th element is
 * a gap that no one writes. */
START_TEST(test_reduce_threads_on_interleaved_outputs_lose_nothing)
{
    tu_seed(300);
    enum { R = 2000, L = 48, S = THREADS + 1 };
    struct gap_arrays g = gap_arrays_new(sizeof(double) * THREADS * R * L, R * S, sizeof(double));
    double *x = g.x, *out = g.out, *want = g.want;
    for (int64_t i = 0; i < (int64_t)THREADS * R * L; i++)
        x[i] = small_int();
    struct xy_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        for (int64_t r = 0; r < R; r++) {
            double sum = 0;
            for (int64_t l = 0; l < L; l++)
                sum += x[((int64_t)t * R + r) * L + l];
            want[t + r * S] = sum;
        }
        jobs[t] = xy_job("reduce", clops_matrix(x + (size_t)t * R * L, CLOPS_F64, R, L, L, 0),
                         (struct clops_tensor){.data = out,
                                               .offset = t,
                                               .dtype = CLOPS_F64,
                                               .rank = 1,
                                               .shape = {R},
                                               .strides = {S}});
    }
    run_rounds_over_gaps(reduce_job_run, jobs, sizeof jobs[0], &g, "out");
}
END_TEST

/* ---- transpose: column blocks of one padded output ---------------------------------------- */

static int32_t transpose_job_run(void *arg)
{
    const struct xy_job *j = arg;
    return ((clops_transpose_fn)j->entry)(j->pool, &j->x, &j->y);
}

/* Thread t transposes its own M x N matrix into columns t*M .. (t+1)*M - 1 of one row-major
 * N x (THREADS*M) f32 matrix whose rows are padded. */
START_TEST(test_transpose_threads_on_column_blocks_lose_nothing)
{
    tu_seed(400);
    enum { M = 40, N = 300, PAD = 3, LD = THREADS * M + PAD };
    struct gap_arrays g = gap_arrays_new(sizeof(float) * THREADS * M * N, N * LD, sizeof(float));
    float *x = g.x, *y = g.out, *want = g.want;
    for (int64_t i = 0; i < (int64_t)THREADS * M * N; i++)
        x[i] = (float)small_int();
    struct xy_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        const float *xt = x + (size_t)t * M * N;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                want[j * LD + t * M + i] = xt[i * N + j];
        struct clops_tensor yt = clops_matrix(y, CLOPS_F32, N, M, LD, 0);
        yt.offset = t * M;
        jobs[t] =
            xy_job("transpose", clops_matrix(x + (size_t)t * M * N, CLOPS_F32, M, N, N, 0), yt);
    }
    run_rounds_over_gaps(transpose_job_run, jobs, sizeof jobs[0], &g, "y");
}
END_TEST

/* ---- transpose: batches whose elements interleave ----------------------------------------- */

/* Thread t transposes its own batch of B M x N u8 matrices into one B x N x (THREADS*M) array:
 * layout 0 gives it every THREADS-th byte of each row, from byte t (its elements interleave
 * with the others' on every axis); layout 1 gives it a column block of each matrix, the rows
 * padded and the matrices a row apart (a 3-D rectangle). */
START_TEST(test_transpose_threads_on_interleaved_batches_lose_nothing)
{
    tu_seed(500 + (uint64_t)_i);
    enum { B = 3, M = 9, N = 50, PAD = 2 };
    enum { SJ = THREADS * M + PAD, SB = (N + 1) * SJ, COUNT = B * SB };
    struct gap_arrays g = gap_arrays_new(THREADS * B * M * N, COUNT, 1);
    uint8_t *x = g.x, *y = g.out, *want = g.want;
    for (int i = 0; i < THREADS * B * M * N; i++)
        x[i] = (uint8_t)(tu_uniform() * 100.0 + 100.0);
    struct xy_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        const int64_t offset = _i == 0 ? t : t * M, si = _i == 0 ? THREADS : 1;
        const uint8_t *xt = x + (size_t)t * B * M * N;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++)
                    want[offset + b * SB + j * SJ + i * si] = xt[(b * M + i) * N + j];
        jobs[t] = xy_job("transpose",
                         (struct clops_tensor){.data = (void *)xt,
                                               .dtype = CLOPS_U8,
                                               .rank = 3,
                                               .shape = {B, M, N},
                                               .strides = {M * N, N, 1}},
                         (struct clops_tensor){.data = y,
                                               .offset = offset,
                                               .dtype = CLOPS_U8,
                                               .rank = 3,
                                               .shape = {B, N, M},
                                               .strides = {SB, SJ, si}});
    }
    run_rounds_over_gaps(transpose_job_run, jobs, sizeof jobs[0], &g,
                         _i == 0 ? "y (layout 0)" : "y (layout 1)");
}
END_TEST

/* ---- D8: element-exact overlap --------------------------------------------------------------- */

/* C = columns 0-1 and A = columns 2-3 of one row-major R x 4 array share no element: accepted,
 * exact, and columns 2-3 unchanged. C over columns 0-2 shares column 2 with A: refused. */
START_TEST(test_gemm_blocks_of_one_array_that_share_no_element_are_accepted)
{
    tu_seed(600);
    enum { R = 9 };
    double m[R * 4], before[R * 4], b[4] = {1, 2, 3, -1};
    for (int i = 0; i < R * 4; i++)
        m[i] = before[i] = small_int();
    struct clops_tensor c = clops_matrix(m, CLOPS_F64, R, 2, 4, 0);
    struct clops_tensor a = clops_matrix(m, CLOPS_F64, R, 2, 4, 0);
    a.offset = 2;
    struct clops_tensor tb = clops_matrix(b, CLOPS_F64, 2, 2, 2, 0);
    clops_gemm_fn gemm = (clops_gemm_fn)tu_op("gemm")->entry;
    ck_assert_msg(gemm(tu_pool(), &a, &tb, &c, 0, 0, 1.0, 0.0) == CLOPS_OK, "%s",
                  tu_api()->last_error());
    for (int i = 0; i < R; i++) {
        const double a0 = before[i * 4 + 2], a1 = before[i * 4 + 3];
        ck_assert(m[i * 4 + 0] == a0 * b[0] + a1 * b[2]);
        ck_assert(m[i * 4 + 1] == a0 * b[1] + a1 * b[3]);
        ck_assert(m[i * 4 + 2] == a0 && m[i * 4 + 3] == a1);
    }
    /* LAPACK's update A22 -= A21 A12 inside one column-major N x N array, as getrf makes it. */
    enum { N = 12, J = 5 };
    double g[N * N], g0[N * N];
    for (int i = 0; i < N * N; i++)
        g[i] = g0[i] = small_int();
    struct clops_tensor a21 = clops_matrix(g, CLOPS_F64, N - J, J, N, 1);
    struct clops_tensor a12 = clops_matrix(g, CLOPS_F64, J, N - J, N, 1);
    struct clops_tensor a22 = clops_matrix(g, CLOPS_F64, N - J, N - J, N, 1);
    a21.offset = J;
    a12.offset = J * N;
    a22.offset = J + J * N;
    ck_assert_msg(gemm(tu_pool(), &a21, &a12, &a22, 0, 0, -1.0, 1.0) == CLOPS_OK, "%s",
                  tu_api()->last_error());
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double want = g0[i + j * N];
            for (int k = 0; i >= J && j >= J && k < J; k++)
                want -= g0[i + k * N] * g0[k + j * N];
            ck_assert_msg(g[i + j * N] == want, "A(%d, %d) = %g, want %g", i, j, g[i + j * N],
                          want);
        }
    /* Sharing one column is an overlap. */
    memcpy(m, before, sizeof m);
    c = clops_matrix(m, CLOPS_F64, R, 3, 4, 0);
    struct clops_tensor b3 = clops_matrix(b, CLOPS_F64, 2, 3, 3, 0);
    double b6[6] = {1, 2, 3, 4, 5, 6};
    b3.data = b6;
    ck_assert_int_eq(gemm(tu_pool(), &a, &b3, &c, 0, 0, 1.0, 0.0), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "'c' overlaps parameter 'a'"));
    ck_assert(memcmp(m, before, sizeof m) == 0);
}
END_TEST

/* ipiv in the even elements of one i32 array and info in element 1: interleaved, disjoint. */
START_TEST(test_lu_outputs_interleaved_in_one_array_are_accepted)
{
    enum { N = 6 };
    double a[N * N] = {0};
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            a[i * N + j] = i == j ? 4.0 : (double)((i * 7 + j * 3) % 5) - 2.0;
    int32_t piv[2 * N];
    for (int i = 0; i < 2 * N; i++)
        piv[i] = -99;
    struct clops_tensor ta = clops_matrix(a, CLOPS_F64, N, N, N, 0);
    struct clops_tensor ipiv = {
        .data = piv, .dtype = CLOPS_I32, .rank = 1, .shape = {N}, .strides = {2}};
    struct clops_tensor info = {
        .data = piv, .offset = 1, .dtype = CLOPS_I32, .rank = 1, .shape = {1}, .strides = {1}};
    ck_assert_msg(((clops_lu_fn)tu_op("lu")->entry)(tu_pool(), &ta, &ipiv, &info, 0) == CLOPS_OK,
                  "%s", tu_api()->last_error());
    ck_assert_int_eq(piv[1], 0);
    for (int i = 0; i < N; i++)
        ck_assert_msg(piv[2 * i] >= i + 1 && piv[2 * i] <= N, "ipiv[%d] = %d", i, piv[2 * i]);
    for (int i = 1; i < N; i++)
        ck_assert_int_eq(piv[2 * i + 1], -99);
    /* info over element 2, ipiv's second: refused, nothing written. */
    info.offset = 2;
    for (int i = 0; i < 2 * N; i++)
        piv[i] = -99;
    ck_assert_int_eq(((clops_lu_fn)tu_op("lu")->entry)(tu_pool(), &ta, &ipiv, &info, 0),
                     CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "'info' overlaps parameter 'ipiv'"));
    for (int i = 0; i < 2 * N; i++)
        ck_assert_int_eq(piv[i], -99);
}
END_TEST

/* ---- D3: element counts that overflow ------------------------------------------------------ */

/* A 32 MiB buffer viewed as {2^16, 2^16, 2^16, 2^16} with unit strides spans 262141 elements
 * but holds 2^64 of them: refused, naming x, before anything runs. */
START_TEST(test_reduce_refuses_an_element_count_that_overflows)
{
    const struct clops_api *api = tu_api();
    struct clops_buffer *buf = NULL;
    ck_assert_int_eq(api->buffer_create(tu_pool(), 32 << 20, &buf), CLOPS_OK);
    const int64_t e = 65536;
    struct clops_tensor x = {.buffer = buf,
                             .dtype = CLOPS_F32,
                             .rank = 4,
                             .shape = {e, e, e, e},
                             .strides = {1, 1, 1, 1}};
    float result = -7.0f;
    struct clops_tensor o = {
        .data = &result, .dtype = CLOPS_F32, .rank = 1, .shape = {1}, .strides = {1}};
    int32_t status = ((clops_reduce_fn)tu_op("reduce")->entry)(tu_pool(), &x, &o, 0, -1);
    ck_assert_msg(status == CLOPS_ERR_INVALID_ARGUMENT, "status %d: %s", status, api->last_error());
    ck_assert_msg(strstr(api->last_error(), "parameter 'x'") != NULL &&
                      strstr(api->last_error(), "overflows") != NULL,
                  "%s", api->last_error());
    ck_assert(result == -7.0f);
    /* {2^14, 2^16, 2^16, 2^16}: 2^62 elements fit in 64 bits, their 2^64 bytes do not. */
    x.shape[0] = e / 4;
    status = ((clops_reduce_fn)tu_op("reduce")->entry)(tu_pool(), &x, &o, 0, -1);
    ck_assert_int_eq(status, CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "parameter 'x'"));
    ck_assert(result == -7.0f);
    api->buffer_release(buf);
}
END_TEST

/* The same in host memory, for transpose's y: nothing is read or written before the check. */
START_TEST(test_transpose_refuses_an_element_count_that_overflows)
{
    uint8_t x[16] = {0}, y[16] = {0};
    const int64_t big = INT64_C(1) << 22;
    struct clops_tensor tx = {.data = x,
                              .dtype = CLOPS_U8,
                              .rank = 3,
                              .shape = {big, big / 2, big / 2},
                              .strides = {1, 1, 1}};
    struct clops_tensor ty = tx;
    ty.data = y;
    int32_t status = ((clops_transpose_fn)tu_op("transpose")->entry)(tu_pool(), &tx, &ty);
    ck_assert_int_eq(status, CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(tu_api()->last_error(), "parameter 'x'") != NULL &&
                      strstr(tu_api()->last_error(), "overflows") != NULL,
                  "%s", tu_api()->last_error());
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_LOOP(test_gemm_threads_on_column_blocks_of_one_row_major_c_lose_nothing, 2),
        TU_LOOP(test_gemm_threads_on_row_blocks_of_one_column_major_c_lose_nothing, 2),
        TU_TEST(test_reduce_threads_on_interleaved_outputs_lose_nothing),
        TU_TEST(test_transpose_threads_on_column_blocks_lose_nothing),
        TU_LOOP(test_transpose_threads_on_interleaved_batches_lose_nothing, 2),
        TU_TEST(test_gemm_blocks_of_one_array_that_share_no_element_are_accepted),
        TU_TEST(test_lu_outputs_interleaved_in_one_array_are_accepted),
        TU_TEST(test_reduce_refuses_an_element_count_that_overflows),
        TU_TEST(test_transpose_refuses_an_element_count_that_overflows),
    };
    return tu_run_tests("shared_outputs", 600, 0, tests, TU_COUNT(tests));
}
