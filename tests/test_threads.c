/* test_threads.c — clops from several threads: the first device discovery raced by threads of a
 * fresh process, pools created and shared across threads, a stress of mixed operators on one pool
 * with every result checked, and log callbacks that run on several threads and call back into
 * clops. .ci/tsan runs this suite under ThreadSanitizer. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mandelbrot_ref.h"
#include "testutil.h"

static const struct clops_api *api;

static void setup(void)
{
    api = tu_api();
}

/* ---- Helpers --------------------------------------------------------------------------------- */

/* A private generator per thread (tu_uniform's state is not shared between threads): xorshift64*,
 * values in [-1, 1). */
struct rng {
    uint64_t state;
};

static struct rng rng_seeded(uint64_t seed)
{
    struct rng r = {seed * 0x9E3779B97F4A7C15ull + 1};
    return r;
}

static double rng_uniform(struct rng *r)
{
    r->state ^= r->state >> 12;
    r->state ^= r->state << 25;
    r->state ^= r->state >> 27;
    return (double)((r->state * 0x2545F4914F6CDD1Dull) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* n values of rng_uniform(r), in memory the caller frees. */
static double *rng_doubles(struct rng *r, int n)
{
    double *x = tu_malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++)
        x[i] = rng_uniform(r);
    return x;
}

/* An integer in [lo, hi]. */
static int rng_between(struct rng *r, int lo, int hi)
{
    return lo + (int)((rng_uniform(r) + 1.0) * 0.5 * (hi - lo + 1)) % (hi - lo + 1);
}

static struct clops_tensor vector(void *data, int32_t dtype, int64_t n)
{
    struct clops_tensor t = {.data = data, .dtype = dtype, .rank = 1};
    t.shape[0] = n;
    t.strides[0] = 1;
    return t;
}

static void *entry(const char *name)
{
    const struct clops_op *op = api->op_find(name);
    return op != NULL ? (void *)op->entry : NULL;
}

/* Runs fn(arg) on a thread of its own and waits at most `seconds` for it, so that a deadlock fails
 * the test instead of hanging it (in both of Check's fork modes). Returns 1 when fn returned. On a
 * time-out the thread is left behind, blocked, and so is `b`. */
struct bounded {
    void *(*fn)(void *);
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
};

static void *bounded_main(void *p)
{
    struct bounded *b = p;
    b->fn(b->arg);
    pthread_mutex_lock(&b->lock);
    b->done = 1;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static int run_bounded(void *(*fn)(void *), void *arg, int seconds)
{
    struct bounded *b = tu_malloc(sizeof *b);
    *b = (struct bounded){.fn = fn, .arg = arg};
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, bounded_main, b), 0);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += seconds;
    pthread_mutex_lock(&b->lock);
    while (!b->done && pthread_cond_timedwait(&b->cond, &b->lock, &deadline) == 0)
        ;
    int done = b->done;
    pthread_mutex_unlock(&b->lock);
    if (!done) {
        pthread_detach(t);
        return 0;
    }
    pthread_join(t, NULL);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
    free(b);
    return 1;
}

/* ---- Operators with their checks ------------------------------------------------------------
 * Each runs one call on `pool` with fresh inputs from `r` and returns NULL when the call succeeded
 * and every element of its result is right, else what was wrong (a static string). */

/* Whether the row-major m x n c is A B within 1e-13 k of a long double reference: A is m x k
 * row-major, and element (p, j) of the k x n B is b[p * b_row + j * b_col]. */
static int product_matches(const double *a, const double *b, int b_row, int b_col, const double *c,
                           int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            long double ref = 0;
            for (int p = 0; p < k; p++)
                ref += (long double)a[i * k + p] * b[p * b_row + j * b_col];
            if (!(fabs((double)(ref - c[i * n + j])) <= 1e-13 * k))
                return 0;
        }
    return 1;
}

static const char *checked_gemm(struct clops_pool *pool, struct rng *r)
{
    int m = rng_between(r, 1, 48), n = rng_between(r, 1, 48), k = rng_between(r, 1, 48);
    double *a = rng_doubles(r, m * k), *b = rng_doubles(r, k * n);
    double *c = tu_malloc(sizeof(double) * (size_t)(m * n));
    for (int i = 0; i < m * n; i++)
        c[i] = NAN; /* beta = 0 ignores C */
    /* A row-major, B column-major: the two layouts in one call. */
    struct clops_tensor ta = clops_matrix(a, CLOPS_F64, m, k, k, 0);
    struct clops_tensor tb = clops_matrix(b, CLOPS_F64, k, n, k, 1);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F64, m, n, n, 0);
    clops_gemm_fn gemm = (clops_gemm_fn)entry("gemm");
    const char *wrong = NULL;
    if (gemm(pool, &ta, &tb, &tc, CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0) != CLOPS_OK)
        wrong = "gemm failed";
    else if (!product_matches(a, b, 1, k, c, m, n, k))
        wrong = "gemm: an element of C is wrong";
    free(a);
    free(b);
    free(c);
    return wrong;
}

static const char *checked_reduce(struct clops_pool *pool, struct rng *r)
{
    int rows = rng_between(r, 1, 40), cols = rng_between(r, 1, 300);
    double *x = rng_doubles(r, rows * cols);
    double *sums = tu_malloc(sizeof(double) * (size_t)rows);
    int64_t at_max = -1;
    struct clops_tensor tx = clops_matrix(x, CLOPS_F64, rows, cols, cols, 0);
    struct clops_tensor ts = vector(sums, CLOPS_F64, rows);
    struct clops_tensor tv = vector(x, CLOPS_F64, (int64_t)rows * cols);
    struct clops_tensor ti = vector(&at_max, CLOPS_I64, 1);
    clops_reduce_fn reduce = (clops_reduce_fn)entry("reduce");
    const char *wrong = NULL;
    /* op 0 = sum along the rows (axis 1); op 5 = argmax of the whole vector. */
    if (reduce(pool, &tx, &ts, 0, 1) != CLOPS_OK || reduce(pool, &tv, &ti, 5, -1) != CLOPS_OK)
        wrong = "reduce failed";
    int64_t best = 0;
    for (int i = 1; i < rows * cols; i++)
        best = x[i] > x[best] ? i : best;
    if (wrong == NULL && at_max != best)
        wrong = "reduce: argmax is wrong";
    for (int i = 0; wrong == NULL && i < rows; i++) {
        long double ref = 0, mag = 0;
        for (int j = 0; j < cols; j++) {
            ref += x[i * cols + j];
            mag += fabs(x[i * cols + j]);
        }
        if (!(fabs((double)(ref - sums[i])) <= 4e-16 * (double)mag + 1e-300))
            wrong = "reduce: a row sum is wrong";
    }
    free(x);
    free(sums);
    return wrong;
}

static const char *checked_transpose(struct clops_pool *pool, struct rng *r)
{
    int rows = rng_between(r, 1, 70), cols = rng_between(r, 1, 70);
    float *x = tu_malloc(sizeof(float) * (size_t)(rows * cols));
    float *y = tu_malloc(sizeof(float) * (size_t)(rows * cols));
    for (int i = 0; i < rows * cols; i++) {
        x[i] = (float)rng_uniform(r);
        y[i] = NAN;
    }
    struct clops_tensor tx = clops_matrix(x, CLOPS_F32, rows, cols, cols, 0);
    struct clops_tensor ty = clops_matrix(y, CLOPS_F32, cols, rows, rows, 0);
    const char *wrong = NULL;
    if (((clops_transpose_fn)entry("transpose"))(pool, &tx, &ty) != CLOPS_OK)
        wrong = "transpose failed";
    for (int i = 0; wrong == NULL && i < rows; i++)
        for (int j = 0; j < cols; j++)
            if (y[j * rows + i] != x[i * cols + j])
                wrong = "transpose: an element is wrong";
    free(x);
    free(y);
    return wrong;
}

/* Whether X (column-major n×nrhs) solves A·X = B, A and B column-major, in the norm-wise backward
 * sense LAPACK's tests use: |B - A·X| <= 30 n eps |A| |X|. */
static int solves(const double *a, const double *x, const double *b, int n, int nrhs)
{
    for (int c = 0; c < nrhs; c++) {
        long double anorm = 0, xnorm = 0, worst = 0;
        for (int i = 0; i < n; i++) {
            long double row = 0, residual = b[c * n + i];
            for (int j = 0; j < n; j++) {
                row += fabs(a[j * n + i]);
                residual -= (long double)a[j * n + i] * x[c * n + j];
            }
            anorm = row > anorm ? row : anorm;
            xnorm =
                fabsl((long double)x[c * n + i]) > xnorm ? fabsl((long double)x[c * n + i]) : xnorm;
            worst = isnan(residual) || fabsl(residual) > worst ? fabsl(residual) : worst;
        }
        if (!(worst <= 30.0L * n * 2.2e-16L * anorm * xnorm + 1e-300L))
            return 0;
    }
    return 1;
}

/* lu then lu_solve when `factor_first`, else solve; f64, column-major. */
static const char *checked_solve(struct clops_pool *pool, struct rng *r, int factor_first)
{
    int n = rng_between(r, 1, 40), nrhs = rng_between(r, 1, 3);
    double *a = rng_doubles(r, n * n), *b = rng_doubles(r, n * nrhs);
    double *lu = tu_memdup(a, sizeof(double) * (size_t)(n * n));
    double *x = tu_memdup(b, sizeof(double) * (size_t)(n * nrhs));
    int32_t *ipiv = tu_malloc(sizeof(int32_t) * (size_t)n);
    int32_t info = -1;
    struct clops_tensor ta = clops_matrix(lu, CLOPS_F64, n, n, n, 1);
    struct clops_tensor tx = clops_matrix(x, CLOPS_F64, n, nrhs, n, 1);
    struct clops_tensor tp = vector(ipiv, CLOPS_I32, n);
    struct clops_tensor tinfo = vector(&info, CLOPS_I32, 1);
    int32_t status;
    if (factor_first) {
        status = ((clops_lu_fn)entry("lu"))(pool, &ta, &tp, &tinfo, 0);
        if (status == CLOPS_OK && info == 0)
            status = ((clops_lu_solve_fn)entry("lu_solve"))(pool, &ta, &tp, &tx, 0);
    } else {
        status = ((clops_solve_fn)entry("solve"))(pool, &ta, &tx, &tp, &tinfo);
    }
    const char *wrong = NULL;
    if (status != CLOPS_OK)
        wrong = factor_first ? "lu or lu_solve failed" : "solve failed";
    else if (info != 0)
        wrong = "lu/solve: a random matrix was reported singular";
    else if (!solves(a, x, b, n, nrhs))
        wrong = factor_first ? "lu_solve: X does not solve A X = B" : "solve: X does not solve";
    for (int i = 0; wrong == NULL && i < n; i++)
        if (ipiv[i] < i + 1 || ipiv[i] > n)
            wrong = "lu/solve: a pivot is out of range";
    free(a);
    free(lu);
    free(b);
    free(x);
    free(ipiv);
    return wrong;
}

/* Mandelbrot through invoke() (the generic path, libffi), f64, against the host reference to the
 * bit. */
static const char *checked_mandelbrot(struct clops_pool *pool, struct rng *r)
{
    int64_t h = rng_between(r, 1, 24), w = rng_between(r, 1, 40), tile = rng_between(r, 4, 16);
    const struct mandel_ref_view view = {-0.7 + 0.1 * rng_uniform(r), 0.1 * rng_uniform(r),
                                         2.5 + rng_uniform(r), (uint32_t)rng_between(r, 20, 200),
                                         1};
    uint32_t *iters = tu_malloc(sizeof(uint32_t) * (size_t)(h * w));
    memset(iters, 0xff, sizeof(uint32_t) * (size_t)(h * w));
    struct clops_tensor ti = clops_matrix(iters, CLOPS_U32, h, w, w, 0);
    struct clops_arg args[] = {
        {.name = "iterations", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &ti},
        {.name = "center_x", .kind = CLOPS_PARAM_DOUBLE, .d = view.center_x},
        {.name = "center_y", .kind = CLOPS_PARAM_DOUBLE, .d = view.center_y},
        {.name = "scale", .kind = CLOPS_PARAM_DOUBLE, .d = view.scale},
        {.name = "max_iterations", .kind = CLOPS_PARAM_INT64, .i = view.max_iterations},
        {.name = "precision", .kind = CLOPS_PARAM_ENUM, .s = "f64"},
        {.name = "tile", .kind = CLOPS_PARAM_INT64, .i = tile},
    };
    const char *wrong = NULL;
    if (api->invoke(pool, api->op_find("mandelbrot"), args,
                    (int32_t)(sizeof args / sizeof *args)) != CLOPS_OK)
        wrong = "mandelbrot failed";
    for (int64_t i = 0; wrong == NULL && i < h; i++)
        for (int64_t j = 0; j < w; j++)
            if (iters[i * w + j] != mandel_ref_count(&view, i, j, h, w))
                wrong = "mandelbrot: a count differs from the reference";
    free(iters);
    return wrong;
}

enum { OPERATION_KINDS = 6 };

static const char *checked_operation(struct clops_pool *pool, struct rng *r, int kind)
{
    switch (kind) {
    case 0: return checked_gemm(pool, r);
    case 1: return checked_reduce(pool, r);
    case 2: return checked_transpose(pool, r);
    case 3: return checked_solve(pool, r, 1);
    case 4: return checked_solve(pool, r, 0);
    default: return checked_mandelbrot(pool, r);
    }
}

/* ---- D2: the first device discovery, raced --------------------------------------------------- */

/* Runs the helper (a fresh process: no device discovered yet) with `threads` threads and returns
 * its wait status; its output goes to `out`. */
static int run_create_child(int threads, const char *mode, char *out, size_t size)
{
    const char *child = getenv("CLOPS_CONCURRENT_CREATE_CHILD");
    ck_assert_msg(child != NULL, "CLOPS_CONCURRENT_CREATE_CHILD is not set (run through ctest)");
    char command[1024];
    snprintf(command, sizeof command, "exec '%s' %d %s 2>&1", child, threads, mode);
    FILE *p = popen(command, "r");
    ck_assert_ptr_nonnull(p);
    size_t used = fread(out, 1, size - 1, p);
    out[used] = '\0';
    return pclose(p);
}

START_TEST(test_threads_racing_the_first_discovery_all_get_the_devices)
{
    static char output[16384];
    /* The crash came in most runs, not all: several fresh processes, all threads at once. */
    for (int run = 0; run < 6; run++) {
        const char *mode = run % 2 == 0 ? "create" : "mixed";
        int status = run_create_child(8, mode, output, sizeof output);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "run %d (%s): the helper %s %d:\n%s", run, mode,
                      WIFSIGNALED(status) ? "was killed by signal" : "exited with",
                      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), output);
    }
}
END_TEST

/* ---- Pools created and shared across threads ------------------------------------------------ */

enum { CREATORS = 4, LISTERS = 2 };

struct creator {
    pthread_barrier_t *start;
    int id;
    const char *wrong;
    int32_t listed;
};

static void *create_and_compute(void *arg)
{
    struct creator *c = arg;
    struct rng r = rng_seeded(100 + (uint64_t)c->id);
    pthread_barrier_wait(c->start);
    struct clops_pool *pool = NULL;
    if (api->pool_create_default(&pool) != CLOPS_OK)
        c->wrong = "pool_create_default failed";
    else
        c->wrong = checked_gemm(pool, &r);
    api->pool_release(pool);
    return NULL;
}

static void *list_devices(void *arg)
{
    struct creator *c = arg;
    pthread_barrier_wait(c->start);
    for (int i = 0; i < 20 && c->wrong == NULL; i++) {
        struct clops_device_info info[4];
        for (int k = 0; k < 4; k++)
            info[k].struct_size = sizeof info[k];
        int32_t count = 0;
        if (api->devices_list(info, 4, &count) != CLOPS_OK || count < 1 ||
            (i > 0 && count != c->listed))
            c->wrong = "devices_list failed or changed its answer";
        c->listed = count;
    }
    return NULL;
}

START_TEST(test_pools_created_concurrently_each_compute)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, CREATORS + LISTERS);
    struct creator c[CREATORS + LISTERS];
    pthread_t t[CREATORS + LISTERS];
    for (int i = 0; i < CREATORS + LISTERS; i++) {
        c[i] = (struct creator){.start = &start, .id = i};
        ck_assert_int_eq(
            pthread_create(&t[i], NULL, i < CREATORS ? create_and_compute : list_devices, &c[i]),
            0);
    }
    for (int i = 0; i < CREATORS + LISTERS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < CREATORS + LISTERS; i++)
        ck_assert_msg(c[i].wrong == NULL, "thread %d: %s", i, c[i].wrong);
}
END_TEST

enum { SHARERS = 4, SHARE_ROUNDS = 4, SHARE_N = 37 };

struct sharer {
    struct clops_pool *pool;
    int id;
    const char *wrong;
};

/* Device buffers of a shared pool: create, upload, gemm on device tensors, reduce on a device
 * tensor, download, release. */
static const char *device_round(struct clops_pool *pool, struct rng *r)
{
    enum { N = SHARE_N, BYTES = N * N * (int)sizeof(double) };
    double a[N * N], b[N * N], c[N * N], sum = NAN;
    for (int i = 0; i < N * N; i++) {
        a[i] = rng_uniform(r);
        b[i] = rng_uniform(r);
    }
    struct clops_buffer *ba = NULL, *bb = NULL, *bc = NULL;
    const char *wrong = NULL;
    if (api->buffer_create(pool, BYTES, &ba) != CLOPS_OK ||
        api->buffer_create(pool, BYTES, &bb) != CLOPS_OK ||
        api->buffer_create(pool, BYTES, &bc) != CLOPS_OK ||
        api->buffer_upload(ba, 0, a, BYTES) != CLOPS_OK ||
        api->buffer_upload(bb, 0, b, BYTES) != CLOPS_OK)
        wrong = "buffer create or upload failed";
    struct clops_tensor ta = clops_matrix_on_device(ba, CLOPS_F64, N, N, N, 0);
    struct clops_tensor tb = clops_matrix_on_device(bb, CLOPS_F64, N, N, N, 0);
    struct clops_tensor tc = clops_matrix_on_device(bc, CLOPS_F64, N, N, N, 0);
    struct clops_tensor tsum = vector(&sum, CLOPS_F64, 1);
    if (wrong == NULL &&
        (((clops_gemm_fn)entry("gemm"))(pool, &ta, &tb, &tc, 0, 0, 1.0, 0.0) != CLOPS_OK ||
         ((clops_reduce_fn)entry("reduce"))(pool, &tc, &tsum, 0, -1) != CLOPS_OK ||
         api->buffer_download(bc, 0, c, BYTES) != CLOPS_OK))
        wrong = "gemm, reduce or download on device buffers failed";
    if (wrong == NULL && !product_matches(a, b, N, 1, c, N, N, N))
        wrong = "gemm on device buffers: an element is wrong";
    long double total = 0, mag = 0;
    for (int i = 0; wrong == NULL && i < N * N; i++) {
        total += c[i];
        mag += fabs(c[i]);
    }
    if (wrong == NULL && !(fabs((double)(total - sum)) <= 1e-15 * N * N * (double)mag))
        wrong = "reduce of a device buffer: the sum is wrong";
    api->buffer_release(ba);
    api->buffer_release(bb);
    api->buffer_release(bc);
    return wrong;
}

static void *share_pool(void *arg)
{
    struct sharer *s = arg;
    struct rng r = rng_seeded(200 + (uint64_t)s->id);
    for (int round = 0; round < SHARE_ROUNDS && s->wrong == NULL; round++)
        s->wrong = device_round(s->pool, &r);
    return NULL;
}

START_TEST(test_threads_share_a_pool_and_its_buffers)
{
    struct clops_pool *pool = tu_new_pool();
    struct sharer s[SHARERS];
    pthread_t t[SHARERS];
    for (int i = 0; i < SHARERS; i++) {
        s[i] = (struct sharer){.pool = pool, .id = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, share_pool, &s[i]), 0);
    }
    for (int i = 0; i < SHARERS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < SHARERS; i++)
        ck_assert_msg(s[i].wrong == NULL, "thread %d: %s", i, s[i].wrong);
    /* Every call was counted: the statistics lose no increment between threads. */
    struct clops_stats stats = {.struct_size = sizeof stats};
    ck_assert_int_eq(api->pool_stats(pool, &stats), CLOPS_OK);
    ck_assert_int_eq(stats.calls, SHARERS * SHARE_ROUNDS * 2);
    ck_assert_int_eq(stats.bytes_uploaded, SHARERS * SHARE_ROUNDS * 2 * SHARE_N * SHARE_N * 8);
    api->pool_release(pool);
}
END_TEST

/* ---- Stress: mixed operators from several threads on one pool -------------------------------- */

/* STRESS_THREADS × STRESS_CALLS checked operations (lu then lu_solve counts as one). */
enum { STRESS_THREADS = 6, STRESS_CALLS = 50 };

/* Operator calls each kind of checked_operation makes when it succeeds. */
static const int calls_per_kind[OPERATION_KINDS] = {1, 2, 1, 2, 1, 1};

struct stresser {
    struct clops_pool *pool;  /* gemm, reduce, transpose, lu, solve */
    struct clops_pool *split; /* mandelbrot: two devices where there are, so its workers race */
    int id;
    int calls;
    int64_t on_pool, on_split; /* operator calls made on each */
    const char *wrong;
    int wrong_call;
};

static void *stress(void *arg)
{
    struct stresser *s = arg;
    struct rng r = rng_seeded(300 + (uint64_t)s->id);
    for (int i = 0; i < STRESS_CALLS && s->wrong == NULL; i++) {
        /* Each thread walks the operators from a different start: all kinds overlap. */
        int kind = (s->id + i) % OPERATION_KINDS;
        int mandelbrot = kind == OPERATION_KINDS - 1;
        s->wrong = checked_operation(mandelbrot ? s->split : s->pool, &r, kind);
        s->wrong_call = i;
        s->calls++;
        *(mandelbrot ? &s->on_split : &s->on_pool) += calls_per_kind[kind];
    }
    return NULL;
}

/* A pool of two devices where the machine has them (a GPU and the CPU, or PoCL's two CPU
 * devices that main() asks for), else NULL. */
static struct clops_pool *two_device_pool(void)
{
    static const char *const configs[] = {
        "devices = ( { type = \"gpu\"; }, { type = \"cpu\"; } ); cpu_fallback = false;",
        "devices = ( { type = \"cpu\"; }, { type = \"cpu\"; index = 1; } ); cpu_fallback = false;",
    };
    struct clops_pool *pool = NULL;
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        if (api->pool_create_from_string(configs[c], &pool) == CLOPS_OK)
            return pool;
    return NULL;
}

static int64_t pool_calls(struct clops_pool *pool)
{
    struct clops_stats stats = {.struct_size = sizeof stats};
    ck_assert_int_eq(api->pool_stats(pool, &stats), CLOPS_OK);
    return stats.calls;
}

START_TEST(test_mixed_operators_from_several_threads_are_all_right)
{
    struct clops_pool *split = two_device_pool(), *pool = tu_new_pool();
    if (split == NULL)
        fprintf(stderr, "test_threads: no two-device pool here; mandelbrot runs on one device\n");
    struct stresser s[STRESS_THREADS];
    pthread_t t[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++) {
        s[i] = (struct stresser){.pool = pool, .split = split != NULL ? split : pool, .id = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, stress, &s[i]), 0);
    }
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(t[i], NULL);
    int64_t on_pool = 0, on_split = 0;
    for (int i = 0; i < STRESS_THREADS; i++) {
        ck_assert_msg(s[i].wrong == NULL, "thread %d, call %d: %s", i, s[i].wrong_call, s[i].wrong);
        ck_assert_int_eq(s[i].calls, STRESS_CALLS);
        on_pool += s[i].on_pool;
        on_split += s[i].on_split;
    }
    /* The statistics lost no call between threads. */
    if (split != NULL) {
        ck_assert_int_eq(pool_calls(pool), on_pool);
        ck_assert_int_eq(pool_calls(split), on_split);
    } else {
        ck_assert_int_eq(pool_calls(pool), on_pool + on_split);
    }
    api->pool_release(split);
    api->pool_release(pool);
}
END_TEST

/* ---- D4: log callbacks that call back into clops --------------------------------------------- */

/* A message at debug level: op_find of an unknown name fails and logs exactly one message. */
static int log_one_message(const char *name)
{
    return api->op_find(name) == NULL && strstr(api->last_error(), name) != NULL;
}

struct reentry {
    int calls;
    int inner_not_found;   /* the nested op_find answered NULL */
    char inner_error[256]; /* and set the thread's message, as any call does */
    int replaced_calls;
};

static void log_calls_op_find(int32_t level, const char *message, void *user)
{
    (void)level;
    (void)message;
    struct reentry *r = user;
    r->calls++;
    r->inner_not_found = api->op_find("inner_unknown_operator") == NULL;
    snprintf(r->inner_error, sizeof r->inner_error, "%s", api->last_error());
}

struct outcome {
    struct reentry r;
    int outer_ok;
    int outer_ok_again;
    int removed_calls; /* calls of the callback that removed itself */
};

/* The outcome of fn, run on a thread of its own that must end within 60 seconds; `deadlock` is
 * the failure when it does not. */
static struct outcome outcome_of(void *(*fn)(void *), const char *deadlock)
{
    struct outcome o = {0};
    ck_assert_msg(run_bounded(fn, &o, 60), "%s", deadlock);
    return o;
}

static void *call_into_clops_from_callback(void *arg)
{
    struct outcome *o = arg;
    api->set_log_callback(log_calls_op_find, &o->r, CLOPS_LOG_DEBUG);
    o->outer_ok = log_one_message("outer_unknown_operator");
    o->outer_ok_again = log_one_message("second_unknown_operator");
    api->set_log_callback(NULL, NULL, CLOPS_LOG_WARNING);
    return NULL;
}

START_TEST(test_log_callback_may_call_into_clops)
{
    struct outcome o =
        outcome_of(call_into_clops_from_callback, "a log callback calling op_find deadlocked");
    /* One call per outer message: the nested call's own message is not delivered (it would
     * recurse), but the nested call worked and had its own error message. */
    ck_assert_int_eq(o.r.calls, 2);
    ck_assert(o.r.inner_not_found);
    ck_assert_ptr_nonnull(strstr(o.r.inner_error, "inner_unknown_operator"));
    /* The callback's calls do not overwrite the caller's error message. */
    ck_assert(o.outer_ok);
    ck_assert(o.outer_ok_again);
}
END_TEST

static void log_removes_itself(int32_t level, const char *message, void *user)
{
    (void)level;
    (void)message;
    ((struct reentry *)user)->calls++;
    api->set_log_callback(NULL, NULL, CLOPS_LOG_WARNING);
}

static void log_counts_replacement(int32_t level, const char *message, void *user)
{
    (void)level;
    (void)message;
    ((struct reentry *)user)->replaced_calls++;
}

static void log_replaces_itself(int32_t level, const char *message, void *user)
{
    (void)level;
    (void)message;
    ((struct reentry *)user)->calls++;
    api->set_log_callback(log_counts_replacement, user, CLOPS_LOG_DEBUG);
}

static void *remove_and_replace_from_callback(void *arg)
{
    struct outcome *o = arg;
    api->set_log_callback(log_removes_itself, &o->r, CLOPS_LOG_DEBUG);
    o->outer_ok = log_one_message("first_unknown_operator");
    log_one_message("unheard_unknown_operator");
    o->removed_calls = o->r.calls;
    o->r = (struct reentry){0};
    api->set_log_callback(log_replaces_itself, &o->r, CLOPS_LOG_DEBUG);
    for (int i = 0; i < 3; i++)
        o->outer_ok_again += log_one_message("replaced_unknown_operator");
    api->set_log_callback(NULL, NULL, CLOPS_LOG_WARNING);
    return NULL;
}

START_TEST(test_log_callback_may_remove_or_replace_itself)
{
    struct outcome o = outcome_of(remove_and_replace_from_callback,
                                  "a log callback calling set_log_callback deadlocked");
    ck_assert(o.outer_ok);
    ck_assert_int_eq(o.removed_calls, 1); /* removed itself: the second message was unheard */
    ck_assert_int_eq(o.outer_ok_again, 3);
    ck_assert_int_eq(o.r.calls, 1);          /* replaced itself at its first message */
    ck_assert_int_eq(o.r.replaced_calls, 2); /* its replacement got the next two */
}
END_TEST

/* A build failure logs while the pool builds the program; the callback then runs the same operator
 * on the same pool (which wants the same program). */
struct build_reentry {
    struct clops_pool *pool;
    int calls;
    int32_t inner_status;
    int32_t outer_status;
    int outer_has_log;
};

static int32_t gemm_2x2(struct clops_pool *pool)
{
    float a[4] = {1, 2, 3, 4}, c[4] = {0};
    struct clops_tensor t = clops_matrix(a, CLOPS_F32, 2, 2, 2, 0);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F32, 2, 2, 2, 0);
    return ((clops_gemm_fn)entry("gemm"))(pool, &t, &t, &tc, 0, 0, 1.0, 0.0);
}

static void log_runs_an_operator(int32_t level, const char *message, void *user)
{
    (void)level;
    struct build_reentry *b = user;
    if (strstr(message, "CL_BUILD_PROGRAM_FAILURE") == NULL || b->calls++ > 0)
        return;
    b->inner_status = gemm_2x2(b->pool);
}

static void *fail_a_build_with_callback(void *arg)
{
    struct build_reentry *b = arg;
    api->set_log_callback(log_runs_an_operator, b, CLOPS_LOG_DEBUG);
    b->outer_status = gemm_2x2(b->pool);
    b->outer_has_log = strstr(api->last_error(), "undeclared_name") != NULL;
    api->set_log_callback(NULL, NULL, CLOPS_LOG_WARNING);
    return NULL;
}

START_TEST(test_log_callback_may_run_an_operator_when_a_build_fails)
{
    struct tu_broken_kernels k;
    tu_broken_gemm_kernels(&k, "/tmp/clops-threads-XXXXXX");
    struct build_reentry b = {0};
    ck_assert_int_eq(api->pool_create_from_string(k.config, &b.pool), CLOPS_OK);
    ck_assert_msg(run_bounded(fail_a_build_with_callback, &b, 120),
                  "a log callback running an operator during a failed build deadlocked");
    ck_assert_int_eq(b.calls, 1);
    ck_assert_int_eq(b.inner_status, CLOPS_ERR_BUILD);
    ck_assert_int_eq(b.outer_status, CLOPS_ERR_BUILD);
    ck_assert(b.outer_has_log);
    api->pool_release(b.pool);
    tu_remove_broken_gemm_kernels(&k);
}
END_TEST

/* Replacing a callback that is running on other threads: once set_log_callback returns, the old
 * one runs nowhere and is never called again. */
enum { LOGGERS = 3, REPLACEMENTS = 12 };

struct slot {
    atomic_int inside, calls, late;
    atomic_int retired;
};

struct replacing {
    struct slot slots[REPLACEMENTS + 1];
    atomic_int stop;
    int running_after_return;
    int stalled;
};

static void log_slowly(int32_t level, const char *message, void *user)
{
    (void)level;
    (void)message;
    struct slot *s = user;
    if (atomic_load(&s->retired))
        atomic_fetch_add(&s->late, 1);
    atomic_fetch_add(&s->inside, 1);
    usleep(200);
    atomic_fetch_sub(&s->inside, 1);
    atomic_fetch_add(&s->calls, 1);
}

static void *log_until_stopped(void *arg)
{
    struct replacing *rp = arg;
    while (!atomic_load(&rp->stop))
        log_one_message("logged_unknown_operator");
    return NULL;
}

/* Waits (up to 20 s) until `s` has been called `n` times. */
static int called(struct slot *s, int n)
{
    for (int i = 0; i < 200000 && atomic_load(&s->calls) < n; i++)
        usleep(100);
    return atomic_load(&s->calls) >= n;
}

static void *replace_while_running(void *arg)
{
    struct replacing *rp = arg;
    api->set_log_callback(log_slowly, &rp->slots[0], CLOPS_LOG_DEBUG);
    pthread_t t[LOGGERS];
    for (int i = 0; i < LOGGERS; i++)
        pthread_create(&t[i], NULL, log_until_stopped, rp);
    for (int k = 0; k < REPLACEMENTS; k++) {
        rp->stalled += !called(&rp->slots[k], 5);
        api->set_log_callback(log_slowly, &rp->slots[k + 1], CLOPS_LOG_DEBUG);
        rp->running_after_return += atomic_load(&rp->slots[k].inside);
        atomic_store(&rp->slots[k].retired, 1);
    }
    rp->stalled += !called(&rp->slots[REPLACEMENTS], 5);
    api->set_log_callback(NULL, NULL, CLOPS_LOG_WARNING);
    rp->running_after_return += atomic_load(&rp->slots[REPLACEMENTS].inside);
    atomic_store(&rp->slots[REPLACEMENTS].retired, 1);
    atomic_store(&rp->stop, 1);
    for (int i = 0; i < LOGGERS; i++)
        pthread_join(t[i], NULL);
    return NULL;
}

START_TEST(test_replaced_log_callback_never_runs_after_set_returns)
{
    struct replacing *rp = calloc(1, sizeof *rp);
    ck_assert_ptr_nonnull(rp);
    ck_assert_msg(run_bounded(replace_while_running, rp, 120), "replacing a callback deadlocked");
    ck_assert_int_eq(rp->stalled, 0);
    ck_assert_int_eq(rp->running_after_return, 0);
    for (int k = 0; k <= REPLACEMENTS; k++)
        ck_assert_msg(atomic_load(&rp->slots[k].late) == 0,
                      "callback %d was called %d times after it was replaced", k,
                      atomic_load(&rp->slots[k].late));
    free(rp);
}
END_TEST

/* Several threads log; the callbacks call into clops, and replace each other from inside and
 * from outside while they run. Every outer message reaches exactly one callback. */
enum { LOG_THREADS = 4, LOG_CALLS = 150 };

struct juggling {
    atomic_int delivered; /* by either callback */
    atomic_int inner_wrong;
    atomic_int stop;
    int outer_wrong[LOG_THREADS];
};

static void log_juggles(int32_t level, const char *message, void *user);

static void log_juggles_b(int32_t level, const char *message, void *user)
{
    log_juggles(level, message, user);
}

static void log_juggles(int32_t level, const char *message, void *user)
{
    (void)level;
    (void)message;
    struct juggling *j = user;
    int n = atomic_fetch_add(&j->delivered, 1);
    /* Calls into clops that log (their messages are not delivered) and that read the devices. */
    if (api->op_find("nested_unknown_operator") != NULL ||
        strstr(api->last_error(), "nested_unknown_operator") == NULL)
        atomic_fetch_add(&j->inner_wrong, 1);
    if (n % 16 == 0) {
        struct clops_device_info info = {.struct_size = sizeof info};
        int32_t count = 0;
        if (api->devices_list(&info, 1, &count) != CLOPS_OK || count < 1)
            atomic_fetch_add(&j->inner_wrong, 1);
    }
    /* Every 7th message: replace the callback by the other one from inside it. */
    if (n % 7 == 0)
        api->set_log_callback(n % 2 ? log_juggles : log_juggles_b, user, CLOPS_LOG_DEBUG);
}

struct juggler {
    struct juggling *j;
    int id;
};

static void *log_many(void *arg)
{
    struct juggler *g = arg;
    char name[64];
    for (int i = 0; i < LOG_CALLS; i++) {
        snprintf(name, sizeof name, "unknown_%d_%d", g->id, i);
        g->j->outer_wrong[g->id] += !log_one_message(name);
    }
    return NULL;
}

static void *swap_from_outside(void *arg)
{
    struct juggling *j = arg;
    for (int i = 0; !atomic_load(&j->stop); i++) {
        api->set_log_callback(i % 2 ? log_juggles : log_juggles_b, j, CLOPS_LOG_DEBUG);
        usleep(300);
    }
    return NULL;
}

static void *juggle(void *arg)
{
    struct juggling *j = arg;
    api->set_log_callback(log_juggles, j, CLOPS_LOG_DEBUG);
    pthread_t swapper, t[LOG_THREADS];
    struct juggler g[LOG_THREADS];
    pthread_create(&swapper, NULL, swap_from_outside, j);
    for (int i = 0; i < LOG_THREADS; i++) {
        g[i] = (struct juggler){j, i};
        pthread_create(&t[i], NULL, log_many, &g[i]);
    }
    for (int i = 0; i < LOG_THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&j->stop, 1);
    pthread_join(swapper, NULL);
    api->set_log_callback(NULL, NULL, CLOPS_LOG_WARNING);
    return NULL;
}

START_TEST(test_log_callbacks_on_several_threads_call_into_clops)
{
    struct juggling *j = calloc(1, sizeof *j);
    ck_assert_ptr_nonnull(j);
    ck_assert_msg(run_bounded(juggle, j, 120), "log callbacks on several threads deadlocked");
    ck_assert_int_eq(atomic_load(&j->delivered), LOG_THREADS * LOG_CALLS);
    ck_assert_int_eq(atomic_load(&j->inner_wrong), 0);
    for (int i = 0; i < LOG_THREADS; i++)
        ck_assert_int_eq(j->outer_wrong[i], 0);
    free(j);
}
END_TEST

/* ---- Issue 22, D3: a pool or buffer released during another thread's call ------------------ */

/* The caller's gemm stops in the log callback at its kernel's time (kernel_times), after the
 * kernel ran and before its output is downloaded, until the main thread has released what the
 * test releases: the release certainly falls inside the call. */
enum { HELD_N = 64 };

struct held_call {
    struct clops_pool *pool;
    int a_on_device;               /* A in a device buffer, released too; else in host memory */
    struct clops_buffer *a_buffer; /* made by release_during_gemm */
    double a[HELD_N * HELD_N], b[HELD_N * HELD_N], c[HELD_N * HELD_N];
    pthread_t caller;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int in_call, released, waited_too_long;
    int freed, freed_on_caller; /* "pool: ... freed" messages, and on the caller's thread */
    int32_t status;
};

static void log_holds_the_call(int32_t level, const char *message, void *user)
{
    (void)level;
    struct held_call *h = user;
    pthread_mutex_lock(&h->lock);
    if (strstr(message, "pool: released and no longer held: freed") != NULL) {
        h->freed++;
        h->freed_on_caller += pthread_equal(pthread_self(), h->caller) != 0;
    } else if (strncmp(message, "gemm: kernel ", 13) == 0 && !h->in_call) {
        h->in_call = 1;
        pthread_cond_broadcast(&h->cond);
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 60;
        while (!h->released && !h->waited_too_long)
            h->waited_too_long = pthread_cond_timedwait(&h->cond, &h->lock, &deadline) != 0;
    }
    pthread_mutex_unlock(&h->lock);
}

static void *held_gemm(void *arg)
{
    struct held_call *h = arg;
    struct clops_tensor ta =
        h->a_buffer != NULL
            ? clops_matrix_on_device(h->a_buffer, CLOPS_F64, HELD_N, HELD_N, HELD_N, 0)
            : clops_matrix(h->a, CLOPS_F64, HELD_N, HELD_N, HELD_N, 0);
    struct clops_tensor tb = clops_matrix(h->b, CLOPS_F64, HELD_N, HELD_N, HELD_N, 0);
    struct clops_tensor tc = clops_matrix(h->c, CLOPS_F64, HELD_N, HELD_N, HELD_N, 0);
    h->status = ((clops_gemm_fn)entry("gemm"))(h->pool, &ta, &tb, &tc, 0, 0, 1.0, 0.0);
    return NULL;
}

/* Runs held_gemm on a thread, releases the buffer (when there is one) and the pool while the
 * call is stopped in the log callback, then lets it go on. */
static void release_during_gemm(struct held_call *h)
{
    struct rng r = rng_seeded(22);
    for (int i = 0; i < HELD_N * HELD_N; i++) {
        h->a[i] = rng_uniform(&r);
        h->b[i] = rng_uniform(&r);
        h->c[i] = NAN;
    }
    h->pool = tu_pool_from_string("kernel_times = true;");
    if (h->a_on_device) {
        ck_assert_int_eq(api->buffer_create(h->pool, sizeof h->a, &h->a_buffer), CLOPS_OK);
        ck_assert_int_eq(api->buffer_upload(h->a_buffer, 0, h->a, sizeof h->a), CLOPS_OK);
    }
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    api->set_log_callback(log_holds_the_call, h, CLOPS_LOG_DEBUG);
    pthread_mutex_lock(&h->lock); /* h->caller is set before the callback reads it */
    ck_assert_int_eq(pthread_create(&h->caller, NULL, held_gemm, h), 0);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 120;
    while (!h->in_call && pthread_cond_timedwait(&h->cond, &h->lock, &deadline) == 0)
        ;
    ck_assert_msg(h->in_call, "the gemm logged no kernel time within 120 s");
    pthread_mutex_unlock(&h->lock);
    api->buffer_release(h->a_buffer);
    api->pool_release(h->pool);
    pthread_mutex_lock(&h->lock);
    ck_assert_int_eq(h->freed, 0); /* the call still holds the pool */
    h->released = 1;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->caller, NULL);
    api->set_log_callback(NULL, NULL, CLOPS_LOG_WARNING);
    ck_assert_msg(!h->waited_too_long, "the main thread did not release within 60 s");
    ck_assert_msg(h->status == CLOPS_OK, "gemm: %s", api->last_error());
    ck_assert_msg(product_matches(h->a, h->b, HELD_N, 1, h->c, HELD_N, HELD_N, HELD_N),
                  "gemm: an element of C is wrong");
    /* Freed once, by the call's end on its own thread: not under it, and not leaked. */
    ck_assert_int_eq(h->freed, 1);
    ck_assert_int_eq(h->freed_on_caller, 1);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
}

START_TEST(test_pool_released_during_a_call_is_freed_when_the_call_ends)
{
    struct held_call *h = calloc(1, sizeof *h);
    release_during_gemm(h);
    free(h);
}
END_TEST

START_TEST(test_buffer_and_pool_released_during_a_call_are_freed_when_it_ends)
{
    struct held_call *h = calloc(1, sizeof *h);
    h->a_on_device = 1;
    release_during_gemm(h);
    free(h);
}
END_TEST

int main(void)
{
    /* PoCL then shows two CPU devices, so that Mandelbrot's split runs workers on both (a value
     * the user set is kept). */
    setenv("POCL_DEVICES", "pthread pthread", 0);
    const struct tu_test discovery[] = {
        TU_TEST(test_threads_racing_the_first_discovery_all_get_the_devices),
        TU_TEST(test_pools_created_concurrently_each_compute),
    };
    const struct tu_test sharing[] = {
        TU_TEST(test_threads_share_a_pool_and_its_buffers),
        TU_TEST(test_mixed_operators_from_several_threads_are_all_right),
    };
    const struct tu_test logging[] = {
        TU_TEST(test_log_callback_may_call_into_clops),
        TU_TEST(test_log_callback_may_remove_or_replace_itself),
        TU_TEST(test_log_callback_may_run_an_operator_when_a_build_fails),
        TU_TEST(test_replaced_log_callback_never_runs_after_set_returns),
        TU_TEST(test_log_callbacks_on_several_threads_call_into_clops),
    };
    const struct tu_test releasing[] = {
        TU_TEST(test_pool_released_during_a_call_is_freed_when_the_call_ends),
        TU_TEST(test_buffer_and_pool_released_during_a_call_are_freed_when_it_ends),
    };
    Suite *s = suite_create("threads");
    tcase_add_checked_fixture(tu_add_tests(s, "discovery", 600, discovery, TU_COUNT(discovery)),
                              setup, NULL);
    tcase_add_checked_fixture(tu_add_tests(s, "sharing", 900, sharing, TU_COUNT(sharing)), setup,
                              NULL);
    tcase_add_checked_fixture(tu_add_tests(s, "logging", 600, logging, TU_COUNT(logging)), setup,
                              NULL);
    tcase_add_checked_fixture(tu_add_tests(s, "releasing", 300, releasing, TU_COUNT(releasing)),
                              setup, NULL);
    return tu_run_suite(s, 1);
}
