/* bench_lu.c — `clops-bench lu`: the lu operator (getrf) in f32 and f64 at large N, and solve
 * (gesv) with 1 and 64 right-hand sides next to it, operands already in device memory. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "loader.h"
#include "table.h"
#include "util.h"

#ifndef CLOPS_BUILD_LIBRARY
#define CLOPS_BUILD_LIBRARY NULL
#endif

enum {
    LU_EXIT_OK = 0,
    LU_EXIT_FAILED = 1,
    LU_EXIT_USAGE = 2,
    LU_EXIT_LOAD = 3,
    LU_EXIT_CONFIG = 4
};
enum { LU_MAX_SIZES = 16, CHECK_ROWS = 4, WIDE_NRHS = 64 };

static const char help[] =
    "Usage: clops-bench lu [--sizes N,N,...] [--reps R] [--big] [--config FILE] [--verbose]\n"
    "\n"
    "Times the LU factorization P A = L U (lu, partial pivoting) of a random N x N row-major\n"
    "matrix in f32 and f64, and solve (factorization + solution) with 1 and 64 right-hand\n"
    "sides, all operands in device memory of the pool's primary device. Each measurement: one\n"
    "warm-up call whose result is verified on the host (rows of P A - L U and of B - A X, as\n"
    "LAPACK's ratios ||r|| / (N ||A|| eps); a wrong result is reported and not timed), then\n"
    "the median of R calls on fresh copies of A (the upload is not timed).\n"
    "TFLOP/s = (2/3) N^3 / time of lu.\n"
    "\n"
    "Options:\n"
    "  -s, --sizes LIST   matrix orders, comma-separated (default 4096,8192 on a GPU, and\n"
    "                     16384 with --big; 256,512,1024 on a CPU device)\n"
    "  -r, --reps R       timed calls per measurement (default 3)\n"
    "  -b, --big          add 16384 (GPU) or 2048 (CPU) to the default sizes\n"
    "  -c, --config FILE  create the pool from FILE (e.g. to set -DLU_NB=<n> for lu, solve)\n"
    "  -v, --verbose      also print the library's info and debug messages\n"
    "  -h, --help         print this help\n"
    "\n"
    "Exit status: 0 ok; 1 a call failed or a result was wrong; 2 usage error; 3 libclops could\n"
    "not be loaded; 4 configuration error.\n";

struct lu_options {
    int64_t sizes[LU_MAX_SIZES];
    int size_count;
    int reps, big, verbose;
    const char *config;
};

struct lu_bench {
    struct lu_options opt;
    struct host_library lib;
    const struct clops_api *api;
    struct clops_pool *pool;
    clops_lu_fn lu;
    clops_solve_fn solve;
    struct clops_device_info device;
    int failures;
};

/* ---- command line ------------------------------------------------------------------------- */

static int lu_usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "clops-bench lu: %s '%s'\nTry 'clops-bench lu --help'.\n", what, arg);
    return LU_EXIT_USAGE;
}

static int lu_parse_sizes(const char *text, struct lu_options *opt)
{
    char *copy = host_xstrdup(text), *save = NULL;
    int rc = 0;
    opt->size_count = 0;
    for (char *item = strtok_r(copy, ",", &save); item != NULL && rc == 0;
         item = strtok_r(NULL, ",", &save)) {
        char *end;
        long long n = strtoll(item, &end, 10);
        if (*end != '\0' || n < 1 || n > 65536 || opt->size_count == LU_MAX_SIZES)
            rc = -1;
        else
            opt->sizes[opt->size_count++] = n;
    }
    free(copy);
    return rc == 0 && opt->size_count > 0 ? 0 : -1;
}

/* Returns -1 to go on, or an exit code. */
static int lu_parse_options(int argc, char **argv, struct lu_options *opt)
{
    static const struct option options[] = {
        {"sizes", required_argument, NULL, 's'},
        {"reps", required_argument, NULL, 'r'},
        {"big", no_argument, NULL, 'b'},
        {"config", required_argument, NULL, 'c'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    *opt = (struct lu_options){.reps = 3};
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":s:r:bc:vh", options, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 's':
            if (lu_parse_sizes(optarg, opt) != 0)
                return lu_usage_error("--sizes wants N,N,... with 1 <= N <= 65536, not", optarg);
            break;
        case 'r':
            opt->reps = (int)strtol(optarg, &end, 10);
            if (*end != '\0' || opt->reps < 1 || opt->reps > 1000)
                return lu_usage_error("--reps wants 1 to 1000, not", optarg);
            break;
        case 'b': opt->big = 1; break;
        case 'c': opt->config = optarg; break;
        case 'v': opt->verbose = 1; break;
        case 'h': fputs(help, stdout); return LU_EXIT_OK;
        case ':': return lu_usage_error("option needs a value:", argv[optind - 1]);
        default: return lu_usage_error("unknown option", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return lu_usage_error("unexpected argument", argv[optind]);
    return -1;
}

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
    double worst = 0;
    for (int r = 0; r < CHECK_ROWS; r++) {
        const int64_t i = (n - 1) * r / (CHECK_ROWS - 1 > 0 ? CHECK_ROWS - 1 : 1);
        long double err = 0;
        for (int64_t j = 0; j < n; j++) {
            long double s = 0;
            const int64_t kmax = i < j ? i : j;
            for (int64_t k = 0; k <= kmax; k++)
                s += (k == i ? 1.0L : get(f, dtype, i * n + k)) * get(f, dtype, k * n + j);
            err += fabsl(s - get(a, dtype, perm[i] * n + j));
        }
        worst = (double)err > worst ? (double)err : worst;
    }
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

/* Device copies of A (N x N) and B (N x nrhs), and ipiv/info, for one measurement. */
struct lu_operands {
    int32_t dtype;
    int64_t n, nrhs, a_bytes, b_bytes;
    void *a, *b; /* host originals */
    struct clops_buffer *da, *db, *dpiv;
    struct clops_tensor ta, tb, tpiv, tinfo;
};

static void operands_free(struct lu_bench *bb, struct lu_operands *o)
{
    bb->api->buffer_release(o->da);
    bb->api->buffer_release(o->db);
    bb->api->buffer_release(o->dpiv);
    free(o->a);
    free(o->b);
}

static int operands_new(struct lu_bench *bb, int32_t dtype, int64_t n, int64_t nrhs,
                        struct lu_operands *o)
{
    const struct clops_api *api = bb->api;
    const int64_t es = dtype == CLOPS_F64 ? 8 : 4;
    *o = (struct lu_operands){.dtype = dtype, .n = n, .nrhs = nrhs};
    o->a_bytes = n * n * es;
    o->b_bytes = n * (nrhs > 0 ? nrhs : 1) * es;
    o->a = malloc((size_t)o->a_bytes);
    o->b = malloc((size_t)o->b_bytes);
    if (o->a == NULL || o->b == NULL)
        return -1;
    fill_random(o->a, dtype, n * n, (uint64_t)n);
    fill_random(o->b, dtype, n * (nrhs > 0 ? nrhs : 1), (uint64_t)n + 1);
    if (api->buffer_create(bb->pool, o->a_bytes, &o->da) != CLOPS_OK ||
        api->buffer_create(bb->pool, o->b_bytes, &o->db) != CLOPS_OK ||
        api->buffer_create(bb->pool, (n + 1) * 4, &o->dpiv) != CLOPS_OK)
        return -1;
    o->ta = clops_matrix_on_device(o->da, dtype, n, n, n, 0);
    o->tb = clops_matrix_on_device(o->db, dtype, n, nrhs, nrhs > 0 ? nrhs : 1, 0);
    o->tpiv = (struct clops_tensor){.buffer = o->dpiv, .dtype = CLOPS_I32, .rank = 1};
    o->tpiv.shape[0] = n, o->tpiv.strides[0] = 1;
    o->tinfo = o->tpiv;
    o->tinfo.offset = n, o->tinfo.shape[0] = 1;
    return 0;
}

/* Fresh copies of A and B on the device (not timed). */
static int operands_reset(struct lu_bench *bb, struct lu_operands *o)
{
    return bb->api->buffer_upload(o->da, 0, o->a, o->a_bytes) == CLOPS_OK &&
                   bb->api->buffer_upload(o->db, 0, o->b, o->b_bytes) == CLOPS_OK
               ? 0
               : -1;
}

/* One call: lu when nrhs = 0, else solve; milliseconds, or -1 on failure. */
static double timed_call(struct lu_bench *bb, struct lu_operands *o)
{
    if (operands_reset(bb, o) != 0)
        return -1;
    double start = host_now_ms();
    int32_t status = o->nrhs == 0 ? bb->lu(bb->pool, &o->ta, &o->tpiv, &o->tinfo, 0)
                                  : bb->solve(bb->pool, &o->ta, &o->tb, &o->tpiv, &o->tinfo);
    double ms = host_now_ms() - start;
    if (status != CLOPS_OK) {
        fprintf(stderr, "clops-bench lu: %s failed: %s\n", o->nrhs == 0 ? "lu" : "solve",
                bb->api->last_error());
        return -1;
    }
    return ms;
}

/* The warm-up call's result against the host: LAPACK's ratio (< 30 passes), or -1. */
static double verify(struct lu_bench *bb, struct lu_operands *o)
{
    const struct clops_api *api = bb->api;
    void *out = malloc((size_t)(o->nrhs == 0 ? o->a_bytes : o->b_bytes));
    int32_t *piv = malloc((size_t)(o->n + 1) * sizeof *piv);
    double ratio = -1;
    if (out != NULL && piv != NULL && timed_call(bb, o) >= 0 &&
        api->buffer_download(o->dpiv, 0, piv, (o->n + 1) * 4) == CLOPS_OK) {
        if (piv[o->n] != 0)
            fprintf(stderr, "clops-bench lu: info = %d for a random matrix\n", piv[o->n]);
        else if (o->nrhs == 0 && api->buffer_download(o->da, 0, out, o->a_bytes) == CLOPS_OK)
            ratio = lu_check(o->a, out, piv, o->dtype, o->n);
        else if (o->nrhs > 0 && api->buffer_download(o->db, 0, out, o->b_bytes) == CLOPS_OK)
            ratio = solve_check(o->a, o->b, out, o->dtype, o->n, o->nrhs);
    }
    free(out);
    free(piv);
    return ratio;
}

static int compare_doubles(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Verifies, then the median of the reps; -1 when a call failed or the result is wrong. */
static double measure(struct lu_bench *bb, int32_t dtype, int64_t n, int64_t nrhs, double *ratio)
{
    struct lu_operands o;
    double result = -1, ms[1000];
    *ratio = -1;
    if (operands_new(bb, dtype, n, nrhs, &o) != 0) {
        fprintf(stderr, "clops-bench lu: cannot allocate N = %lld: %s\n", (long long)n,
                bb->api->last_error());
    } else {
        *ratio = verify(bb, &o);
        int r = 0;
        for (; *ratio >= 0 && *ratio < 30 && r < bb->opt.reps; r++)
            if ((ms[r] = timed_call(bb, &o)) < 0)
                break;
        if (r == bb->opt.reps) {
            qsort(ms, (size_t)r, sizeof ms[0], compare_doubles);
            result = ms[r / 2];
        }
    }
    operands_free(bb, &o);
    if (result < 0)
        bb->failures++;
    return result;
}

static void cell_ms(struct table *t, double ms)
{
    if (ms < 0)
        table_cell(t, "FAILED");
    else
        table_cell(t, "%.1f", ms);
}

static void bench_size(struct lu_bench *bb, struct table *t, int32_t dtype, int64_t n)
{
    double r_lu, r_1, r_64;
    const double lu_ms = measure(bb, dtype, n, 0, &r_lu);
    const double s1_ms = measure(bb, dtype, n, 1, &r_1);
    const double s64_ms = measure(bb, dtype, n, WIDE_NRHS, &r_64);
    const double flops = 2.0 / 3.0 * (double)n * (double)n * (double)n;
    table_row(t);
    table_cell(t, "%s", dtype == CLOPS_F64 ? "f64" : "f32");
    table_cell(t, "%lld", (long long)n);
    cell_ms(t, lu_ms);
    if (lu_ms > 0)
        table_cell(t, "%.3f", flops / (lu_ms * 1e-3) / 1e12);
    else
        table_cell(t, "-");
    cell_ms(t, s1_ms);
    cell_ms(t, s64_ms);
    table_cell(t, "%.2g / %.2g / %.2g", r_lu, r_1, r_64);
}

static int run(struct lu_bench *bb)
{
    static const struct table_column columns[] = {
        {"dtype", TABLE_LEFT},
        {"N", TABLE_RIGHT},
        {"lu ms", TABLE_RIGHT},
        {"lu TFLOP/s", TABLE_RIGHT},
        {"solve 1 RHS ms", TABLE_RIGHT},
        {"solve 64 RHS ms", TABLE_RIGHT},
        {"check ratios lu/1/64 (< 30)", TABLE_LEFT},
    };
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    const int32_t dtypes[2] = {CLOPS_F32, CLOPS_F64};
    for (int d = 0; d < 2; d++) {
        if (dtypes[d] == CLOPS_F64 && !bb->device.fp64)
            continue;
        for (int i = 0; i < bb->opt.size_count; i++)
            bench_size(bb, &t, dtypes[d], bb->opt.sizes[i]);
    }
    printf("lu on %s (%s), median of %d; solve = factorization + solution\n", bb->device.name,
           bb->device.platform, bb->opt.reps);
    table_print(&t, stdout, 2);
    table_free(&t);
    return bb->failures ? LU_EXIT_FAILED : LU_EXIT_OK;
}

static int open_library(struct lu_bench *bb)
{
    char why[2048];
    if (host_library_load(&bb->lib, CLOPS_BUILD_LIBRARY, why, sizeof why) != 0) {
        fprintf(stderr, "clops-bench lu: cannot load libclops:\n%s", why);
        return LU_EXIT_LOAD;
    }
    host_library_log_to_stderr(&bb->lib, bb->opt.verbose);
    bb->api = bb->lib.api;
    const struct clops_op *lu = bb->api->op_find("lu"), *solve = bb->api->op_find("solve");
    if (lu == NULL || solve == NULL) {
        fprintf(stderr, "clops-bench lu: %s has no lu or solve operator\n", bb->lib.path);
        return LU_EXIT_LOAD;
    }
    bb->lu = (clops_lu_fn)lu->entry;
    bb->solve = (clops_solve_fn)solve->entry;
    int32_t status = bb->opt.config != NULL
                         ? bb->api->pool_create_from_file(bb->opt.config, &bb->pool)
                         : bb->api->pool_create_default(&bb->pool);
    bb->device.struct_size = sizeof bb->device;
    if (status == CLOPS_OK)
        status = bb->api->pool_device_info(bb->pool, 0, &bb->device);
    if (status != CLOPS_OK) {
        fprintf(stderr, "clops-bench lu: no pool: %s\n", bb->api->last_error());
        return LU_EXIT_CONFIG;
    }
    return -1;
}

int bench_lu_main(int argc, char **argv)
{
    struct lu_bench bb = {0};
    int rc = lu_parse_options(argc, argv, &bb.opt);
    if (rc >= 0)
        return rc;
    rc = open_library(&bb);
    if (rc < 0) {
        if (bb.opt.size_count == 0)
            default_sizes(&bb.opt, bb.device.type == CLOPS_DEVICE_GPU);
        rc = run(&bb);
    }
    if (bb.pool != NULL)
        bb.api->pool_release(bb.pool);
    return rc;
}
