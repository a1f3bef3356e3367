/* bench_lu.c — `clops-bench lu`: the lu operator (getrf) in f32 and f64 at large N, and solve
 * (gesv) with 1 and 64 right-hand sides next to it, operands already in device memory (and with
 * --host, in host memory). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_common.h"
#include "table.h"
#include "util.h"

enum { LU_MAX_SIZES = 16, CHECK_ROWS = 4, WIDE_NRHS = 64 };

/* The three measurements of a size, and their ops in the results, with operands on the device
 * and (--host) in host memory. */
enum { MEASUREMENTS = 3 };
static const int64_t measurement_rhs[MEASUREMENTS] = {0, 1, WIDE_NRHS};
static const char *const measurement_ops[2][MEASUREMENTS] = {
    {"lu", "solve 1 RHS", "solve 64 RHS"}, {"lu host", "solve 1 RHS host", "solve 64 RHS host"}};

/* The flops a measurement's rate counts: getrf's (2/3) N^3, and a solve's getrs 2 N^2 RHS. */
static double flops_of(int64_t n, int64_t nrhs)
{
    return 2.0 / 3.0 * (double)n * (double)n * (double)n +
           2.0 * (double)n * (double)n * (double)nrhs;
}

static const char help[] =
    "Usage: clops-bench lu [--sizes N,N,...] [--reps R] [--big] [--host] [--dtypes LIST]\n"
    "                      [--config FILE] [--verbose] [--peers]\n"
    "\n"
    "Times the LU factorization P A = L U (lu, partial pivoting) of a random N x N row-major\n"
    "matrix in f32 and f64, and solve (factorization + solution) with 1 and 64 right-hand\n"
    "sides, all operands in device memory of the pool's primary device. Each measurement: one\n"
    "warm-up call whose result is verified on the host (rows of P A - L U and of B - A X, as\n"
    "LAPACK's ratios ||r|| / (N ||A|| eps); a wrong result is reported and not timed), then\n"
    "the median of R calls on fresh copies of A (the upload is not timed).\n"
    "The table's rate is (2/3) N^3 / time of lu, in TFLOP/s, GFLOP/s or MFLOP/s: the largest\n"
    "unit in which its fastest reads 1 or more. A solve's rate (progress lines, --csv's rows,\n"
    "which keep TFLOP/s) counts (2/3) N^3 + 2 N^2 RHS flops (getrf + getrs).\n"
    "\n"
    "Options:\n"
    "  -s, --sizes LIST   matrix orders, comma-separated (default 4096,8192 on a GPU, and\n"
    "                     16384 with --big; 256,512,1024 on a CPU device, under a minute\n"
    "                     on 2 cores)\n"
    "  -r, --reps R       timed calls per measurement (default 3)\n"
    "  -b, --big          add 16384 (GPU) or 2048 (CPU) to the default sizes\n"
    "  -H, --host         then the same with A, B, ipiv and info in host memory\n"
    "                     (clops_tensor.data; the transfers are in the time; the copy of A\n"
    "                     each call starts from is not): results op \"lu host\",\n"
    "                     \"solve 1 RHS host\", \"solve 64 RHS host\"\n"
    "  -t, --dtypes LIST  f32, f64 or f32,f64 (default): the element types timed (at N =\n"
    "                     49152 a process takes minutes a type, mostly filling and checking)\n"
    "  -c, --config FILE  create the pool from FILE (e.g. operators.lu.nb = <n>; for lu, solve)\n"
    "  -v, --verbose      also print the library's info and debug messages\n"
    "  -h, --help         print this help\n" BENCH_HELP_PROGRESS BENCH_HELP_RESULTS_OPTIONS
    "\n" BENCH_HELP_EXIT_STATUS;

/* lu's own options; the shared ones are in session.opt. */
struct lu_options {
    int64_t sizes[LU_MAX_SIZES];
    int size_count;
    int big;
    int host;
    unsigned dtypes; /* bit 0 f32, bit 1 f64 */
};

struct lu_bench {
    struct bench_session session; /* the shared options, the library, the pool and its device */
    struct lu_options opt;
    const struct clops_api *api; /* session.lib.api */
    clops_lu_fn lu;
    clops_solve_fn solve;
    int failures;
};

/* ---- command line ------------------------------------------------------------------------- */

static const char *lu_take_option(void *area, int option, const char *arg)
{
    struct lu_options *opt = area;
    switch (option) {
    case 's': return bench_parse_sizes(arg, opt->sizes, LU_MAX_SIZES, &opt->size_count);
    case 'b': opt->big = 1; break;
    case 'H': opt->host = 1; break;
    case 't': return bench_parse_dtypes(arg, &opt->dtypes);
    }
    return NULL;
}

static const struct option lu_own_options[] = {
    {"sizes", required_argument, NULL, 's'},
    {"big", no_argument, NULL, 'b'},
    {"host", no_argument, NULL, 'H'},
    {"dtypes", required_argument, NULL, 't'},
    {0},
};

static void default_sizes(struct lu_options *opt, int gpu)
{
    static const int64_t gpu_sizes[] = {4096, 8192, 16384}, cpu_sizes[] = {256, 512, 1024, 2048};
    const int64_t *sizes = gpu ? gpu_sizes : cpu_sizes;
    opt->size_count = (gpu ? 2 : 3) + (opt->big ? 1 : 0);
    memcpy(opt->sizes, sizes, (size_t)opt->size_count * sizeof *sizes);
}

/* ---- Matrices ------------------------------------------------------------------------------ */

static double get(const void *data, int32_t dtype, int64_t i)
{
    return dtype == CLOPS_F64 ? ((const double *)data)[i] : ((const float *)data)[i];
}

/* Uniform in [-1, 1), reproducible (xorshift64*). */
static void fill_random(void *data, int32_t dtype, int64_t count, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < count; i++) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        double v = (double)((s * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0 * 2 - 1;
        if (dtype == CLOPS_F64)
            ((double *)data)[i] = v;
        else
            ((float *)data)[i] = (float)v;
    }
}

static double max_row_sum(const void *a, int32_t dtype, int64_t n)
{
    double best = 0;
    for (int64_t i = 0; i < n; i++) {
        double s = 0;
        for (int64_t j = 0; j < n; j++)
            s += fabs(get(a, dtype, i * n + j));
        best = s > best ? s : best;
    }
    return best;
}

static double eps_of(int32_t dtype)
{
    return dtype == CLOPS_F64 ? 2.220446049250313e-16 : 1.1920929e-07;
}

/* LAPACK's ratio for CHECK_ROWS rows of L U - P A (row i of L U is row perm[i] of A), rows
 * spread over the matrix, in long double. */
static double lu_check(const void *a, const void *f, const int32_t *ipiv, int32_t dtype, int64_t n)
{
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t k = 0; k < n; k++) {
        int64_t p = ipiv[k] - 1, t = perm[k];
        perm[k] = perm[p], perm[p] = t;
    }
    /* Row i of L U is the sum over k <= i of L[i][k] (1 at k = i) times row k of U (its
     * columns j >= k): rows of the factors are read in order, as they lie in memory (a column
     * walk of U takes minutes at N = 32768). */
    long double *s = malloc((size_t)n * sizeof *s);
    double worst = 0;
    for (int r = 0; r < CHECK_ROWS; r++) {
        const int64_t i = (n - 1) * r / (CHECK_ROWS - 1 > 0 ? CHECK_ROWS - 1 : 1);
        for (int64_t j = 0; j < n; j++)
            s[j] = 0;
        for (int64_t k = 0; k <= i; k++) {
            const long double l = k == i ? 1.0L : get(f, dtype, i * n + k);
            for (int64_t j = k; j < n; j++)
                s[j] += l * get(f, dtype, k * n + j);
        }
        long double err = 0;
        for (int64_t j = 0; j < n; j++)
            err += fabsl(s[j] - get(a, dtype, perm[i] * n + j));
        worst = (double)err > worst ? (double)err : worst;
    }
    free(s);
    free(perm);
    return worst / ((double)n * max_row_sum(a, dtype, n) * eps_of(dtype));
}

/* LAPACK's ratio ||b - A x|| / (N ||A|| ||x|| eps) for column 0 of B and X (N x nrhs). */
static double solve_check(const void *a, const void *b, const void *x, int32_t dtype, int64_t n,
                          int64_t nrhs)
{
    long double r = 0, xn = 0;
    for (int64_t i = 0; i < n; i++) {
        long double s = get(b, dtype, i * nrhs);
        for (int64_t k = 0; k < n; k++)
            s -= (long double)get(a, dtype, i * n + k) * get(x, dtype, k * nrhs);
        r = fabsl(s) > r ? fabsl(s) : r;
        xn = fabsl(get(x, dtype, i * nrhs)) > xn ? fabsl(get(x, dtype, i * nrhs)) : xn;
    }
    return (double)(r / ((long double)n * max_row_sum(a, dtype, n) * xn * eps_of(dtype)));
}

/* ---- Runs ---------------------------------------------------------------------------------- */

/* Copies of A (N x N) and B (N x nrhs), and ipiv/info, for one measurement: on the device, or
 * with --host in host arrays. */
struct lu_operands {
    int32_t dtype;
    int64_t n, nrhs, a_bytes, b_bytes;
    int host;    /* the operands are the host arrays work_* */
    void *a, *b; /* host originals */
    struct clops_buffer *da, *db, *dpiv;
    void *work_a, *work_b, *work_piv; /* ipiv then info, n + 1 int32 */
    struct clops_tensor ta, tb, tpiv, tinfo;
};

static void operands_free(struct lu_bench *bb, struct lu_operands *o)
{
    bb->api->buffer_release(o->da);
    bb->api->buffer_release(o->db);
    bb->api->buffer_release(o->dpiv);
    free(o->a);
    free(o->b);
    free(o->work_a);
    free(o->work_b);
    free(o->work_piv);
}

/* The arrays the calls work on: device buffers, or host arrays. Returns 0, or -1. */
static int operands_place(struct lu_bench *bb, struct lu_operands *o)
{
    const struct clops_api *api = bb->api;
    if (o->host) {
        o->work_a = malloc((size_t)o->a_bytes);
        o->work_b = malloc((size_t)o->b_bytes);
        o->work_piv = malloc((size_t)(o->n + 1) * 4);
        return o->work_a != NULL && o->work_b != NULL && o->work_piv != NULL ? 0 : -1;
    }
    return api->buffer_create(bb->session.pool, o->a_bytes, &o->da) == CLOPS_OK &&
                   api->buffer_create(bb->session.pool, o->b_bytes, &o->db) == CLOPS_OK &&
                   api->buffer_create(bb->session.pool, (o->n + 1) * 4, &o->dpiv) == CLOPS_OK
               ? 0
               : -1;
}

static int operands_new(struct lu_bench *bb, int32_t dtype, int64_t n, int64_t nrhs, int host,
                        struct lu_operands *o)
{
    const int64_t es = dtype == CLOPS_F64 ? 8 : 4;
    *o = (struct lu_operands){.dtype = dtype, .n = n, .nrhs = nrhs, .host = host};
    o->a_bytes = n * n * es;
    o->b_bytes = n * (nrhs > 0 ? nrhs : 1) * es;
    o->a = malloc((size_t)o->a_bytes);
    o->b = malloc((size_t)o->b_bytes);
    if (o->a == NULL || o->b == NULL)
        return -1;
    fill_random(o->a, dtype, n * n, (uint64_t)n);
    fill_random(o->b, dtype, n * (nrhs > 0 ? nrhs : 1), (uint64_t)n + 1);
    if (operands_place(bb, o) != 0)
        return -1;
    o->ta = clops_matrix(o->work_a, dtype, n, n, n, 0);
    o->ta.buffer = o->da;
    o->tb = clops_matrix(o->work_b, dtype, n, nrhs, nrhs > 0 ? nrhs : 1, 0);
    o->tb.buffer = o->db;
    o->tpiv = (struct clops_tensor){
        .data = o->work_piv, .buffer = o->dpiv, .dtype = CLOPS_I32, .rank = 1};
    o->tpiv.shape[0] = n, o->tpiv.strides[0] = 1;
    o->tinfo = o->tpiv;
    o->tinfo.offset = n, o->tinfo.shape[0] = 1;
    return 0;
}

/* Fresh copies of A and B where the calls read them (not timed). */
static int operands_reset(struct lu_bench *bb, struct lu_operands *o)
{
    if (o->host) {
        memcpy(o->work_a, o->a, (size_t)o->a_bytes);
        memcpy(o->work_b, o->b, (size_t)o->b_bytes);
        return 0;
    }
    return bb->api->buffer_upload(o->da, 0, o->a, o->a_bytes) == CLOPS_OK &&
                   bb->api->buffer_upload(o->db, 0, o->b, o->b_bytes) == CLOPS_OK
               ? 0
               : -1;
}

/* `bytes` of what a call left in `buffer`, or in the host array `work`, into `out`. */
static int operands_read(struct lu_bench *bb, const struct lu_operands *o,
                         struct clops_buffer *buffer, const void *work, void *out, int64_t bytes)
{
    if (o->host) {
        memcpy(out, work, (size_t)bytes);
        return 0;
    }
    return bb->api->buffer_download(buffer, 0, out, bytes) == CLOPS_OK ? 0 : -1;
}

/* One call: lu when nrhs = 0, else solve; milliseconds, or -1 on failure. */
static double timed_call(struct lu_bench *bb, struct lu_operands *o)
{
    if (operands_reset(bb, o) != 0)
        return -1;
    double start = host_now_ms();
    int32_t status = o->nrhs == 0
                         ? bb->lu(bb->session.pool, &o->ta, &o->tpiv, &o->tinfo, 0)
                         : bb->solve(bb->session.pool, &o->ta, &o->tb, &o->tpiv, &o->tinfo);
    double ms = host_now_ms() - start;
    if (status != CLOPS_OK) {
        fprintf(bench_stderr(), "clops-bench lu: %s failed: %s\n", o->nrhs == 0 ? "lu" : "solve",
                bb->api->last_error());
        return -1;
    }
    return ms;
}

/* The warm-up call's result against the host: LAPACK's ratio (< 30 passes), or -1. */
static double verify(struct lu_bench *bb, struct lu_operands *o)
{
    void *out = malloc((size_t)(o->nrhs == 0 ? o->a_bytes : o->b_bytes));
    int32_t *piv = malloc((size_t)(o->n + 1) * sizeof *piv);
    double ratio = -1;
    if (out != NULL && piv != NULL && timed_call(bb, o) >= 0 &&
        operands_read(bb, o, o->dpiv, o->work_piv, piv, (o->n + 1) * 4) == 0) {
        if (piv[o->n] != 0)
            fprintf(bench_stderr(), "clops-bench lu: info = %d for a random matrix\n", piv[o->n]);
        else if (o->nrhs == 0 && operands_read(bb, o, o->da, o->work_a, out, o->a_bytes) == 0)
            ratio = lu_check(o->a, out, piv, o->dtype, o->n);
        else if (o->nrhs > 0 && operands_read(bb, o, o->db, o->work_b, out, o->b_bytes) == 0)
            ratio = solve_check(o->a, o->b, out, o->dtype, o->n, o->nrhs);
    }
    free(out);
    free(piv);
    return ratio;
}

/* Measurement `k` (lu, solve 1 RHS, solve 64 RHS) of a size: verifies, then the median of the
 * reps; -1 when a call failed or the result is wrong. */
static double measure(struct lu_bench *bb, int32_t dtype, int64_t n, int k, int host, double *ratio)
{
    const int64_t nrhs = measurement_rhs[k];
    struct lu_operands o;
    double result = -1, ms[1000];
    *ratio = -1;
    bench_progress_start("%s N=%lld %s", host_dtype_name(dtype), (long long)n,
                         measurement_ops[host][k]);
    if (operands_new(bb, dtype, n, nrhs, host, &o) != 0) {
        fprintf(bench_stderr(), "clops-bench lu: cannot allocate N = %lld: %s\n", (long long)n,
                bb->api->last_error());
    } else {
        *ratio = verify(bb, &o);
        int r = 0;
        for (; *ratio >= 0 && *ratio < 30 && r < bb->session.opt.reps; r++)
            if ((ms[r] = timed_call(bb, &o)) < 0)
                break;
        if (r == bb->session.opt.reps) {
            host_sort_times(ms, r);
            result = ms[r / 2]; /* the upper middle for an even R */
        }
    }
    operands_free(bb, &o);
    char rate[32];
    if (result < 0) {
        bb->failures++;
        bench_progress_done("FAILED (check ratio %.2g)", *ratio);
    } else {
        bench_progress_done(
            "%.1f ms, %s", result,
            bench_rate_text(BENCH_FLOPS, flops_of(n, nrhs) / (result * 1e-3), rate, sizeof rate));
    }
    return result;
}

static void cell_ms(struct table *t, double ms)
{
    if (ms < 0)
        table_cell(t, "FAILED");
    else
        table_cell(t, "%.1f", ms);
}

/* The three measurements of one size as rows of the results file: a solve counts getrf's and
 * getrs' flops, (2/3) N^3 + 2 N^2 RHS. On host operands the ops end in " host". */
static void record_size(const struct lu_bench *bb, int32_t dtype, int64_t n, int host,
                        const double *ms)
{
    for (int i = 0; i < MEASUREMENTS; i++) {
        const double flops = flops_of(n, measurement_rhs[i]);
        bench_record(&(struct bench_row){.op = measurement_ops[host][i],
                                         .dtype = dtype,
                                         .impl = "clops",
                                         .n = n,
                                         .n_unit = "matrix order",
                                         .ms = ms[i],
                                         .rate = flops / (ms[i] * 1e-3) / 1e12,
                                         .unit = "TFLOP/s",
                                         .device = bb->session.device.name});
    }
}

static void bench_size(struct lu_bench *bb, struct bench_table *bt, int32_t dtype, int64_t n,
                       int host)
{
    double r_lu, r_1, r_64;
    const double lu_ms = measure(bb, dtype, n, 0, host, &r_lu);
    const double s1_ms = measure(bb, dtype, n, 1, host, &r_1);
    const double s64_ms = measure(bb, dtype, n, 2, host, &r_64);
    record_size(bb, dtype, n, host, (const double[3]){lu_ms, s1_ms, s64_ms});
    struct table *t = &bt->table;
    table_row(t);
    table_cell(t, "%s", dtype == CLOPS_F64 ? "f64" : "f32");
    table_cell(t, "%lld", (long long)n);
    cell_ms(t, lu_ms);
    bench_table_rate(bt, lu_ms > 0 ? flops_of(n, 0) / (lu_ms * 1e-3) : NAN);
    cell_ms(t, s1_ms);
    cell_ms(t, s64_ms);
    table_cell(t, "%.2g / %.2g / %.2g", r_lu, r_1, r_64);
}

/* One table: every dtype and size, operands on the device or (host) in host memory. */
static void run_table(struct lu_bench *bb, int host)
{
    static const struct table_column columns[] = {
        {"dtype", TABLE_LEFT},
        {"N", TABLE_RIGHT},
        {"lu ms", TABLE_RIGHT},
        {"lu %s", TABLE_RIGHT},
        {"solve 1 RHS ms", TABLE_RIGHT},
        {"solve 64 RHS ms", TABLE_RIGHT},
        {"check ratios lu/1/64 (< 30)", TABLE_LEFT},
    };
    struct bench_table t;
    bench_table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]), BENCH_FLOPS);
    const int32_t dtypes[2] = {CLOPS_F32, CLOPS_F64};
    for (int d = 0; d < 2; d++) {
        if (!(bb->opt.dtypes >> d & 1u) || (dtypes[d] == CLOPS_F64 && !bb->session.device.fp64))
            continue;
        for (int i = 0; i < bb->opt.size_count; i++)
            bench_size(bb, &t, dtypes[d], bb->opt.sizes[i], host);
    }
    bench_progress_end();
    if (host)
        printf("\nThe same with the operands in host memory (the transfers are in the time):\n");
    else
        printf("lu on %s (%s), median of %d; solve = factorization + solution\n",
               bb->session.device.name, bb->session.device.platform, bb->session.opt.reps);
    bench_table_print(&t, stdout, 2);
    bench_table_free(&t);
}

static int run(struct lu_bench *bb)
{
    const int dtypes =
        (bb->opt.dtypes & 1u) + (bb->opt.dtypes >> 1 & 1u && bb->session.device.fp64 ? 1 : 0);
    bench_progress_plan(dtypes * bb->opt.size_count * MEASUREMENTS * (bb->opt.host ? 2 : 1));
    run_table(bb, 0);
    if (bb->opt.host)
        run_table(bb, 1);
    return bb->failures ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
}

/* Finds lu and solve, then opens the pool. Returns -1 to go on, or an exit status. */
static int open_operators_and_pool(struct lu_bench *bb)
{
    bb->api = bb->session.lib.api;
    const struct clops_op *lu = bb->api->op_find("lu"), *solve = bb->api->op_find("solve");
    if (lu == NULL || solve == NULL) {
        fprintf(bench_stderr(), "clops-bench lu: %s has no lu or solve operator\n",
                bb->session.lib.path);
        return BENCH_EXIT_LOAD;
    }
    bb->lu = (clops_lu_fn)lu->entry;
    bb->solve = (clops_solve_fn)solve->entry;
    /* Any pool that cannot be had is a configuration error here. */
    return bench_open_pool(&bb->session) == BENCH_EXIT_OK ? -1 : BENCH_EXIT_CONFIG;
}

int bench_lu_main(int argc, char **argv)
{
    static struct lu_bench bb = {.opt = {.dtypes = 3u}};
    static const struct bench_command_line command_line = {
        .program = "clops-bench lu",
        .name = "lu",
        .help = help,
        .options = lu_own_options,
        .default_reps = 3,
        .max_reps = 1000,
        .take = lu_take_option,
        .area = &bb.opt,
    };
    int rc = bench_start(argc, argv, &command_line, &bb.session);
    if (rc >= 0)
        return rc;
    rc = open_operators_and_pool(&bb);
    if (rc < 0) {
        if (bb.opt.size_count == 0)
            default_sizes(&bb.opt, bb.session.device.type == CLOPS_DEVICE_GPU);
        rc = run(&bb);
    }
    if (bb.session.pool != NULL)
        bb.api->pool_release(bb.session.pool);
    return rc;
}
