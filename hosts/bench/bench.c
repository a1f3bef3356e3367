/* bench.c — clops-bench: clops' GEMM against CLBlast on the same device, both with operands
 * already in device memory; clops' f32 GEMM in the TF32 precisions and with host operands; and
 * the first-call time of a pool with a cold vs a warm cache. */
#define CL_TARGET_OPENCL_VERSION 120
#include "bench.h"
#include <clblast_c.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_opencl.h"
#include "table.h"
#include "util.h"

enum { MAX_SIZES = 16, COLD_N = 256 };

/* --precision's modes, gemm's "precision" strings, as bits of options.precisions. */
enum { PRECISION_FP32 = 1, PRECISION_3XTF32 = 2, PRECISION_TF32 = 4 };

static const char help[] =
    "Usage: clops-bench [--sizes N,N,...] [--reps R] [--big] [--config FILE] [--no-cold]\n"
    "                   [--precision LIST] [--host] [--dtypes LIST] [--peers]\n"
    "\n"
    "Times C = A B (square, row-major, no transposes) in f32 and f64 with clops and with\n"
    "CLBlast on the pool's primary device, operands already in device memory: one warm-up\n"
    "call each, the results compared with each other and 3 rows with a host computation (a\n"
    "size whose results are wrong is not timed), then the median of R calls; the rate is\n"
    "2 N^3 / time, in TFLOP/s, GFLOP/s or MFLOP/s: the largest unit in which the table's\n"
    "fastest reads 1 or more (--csv's rows keep TFLOP/s). Before those, the time of the first\n"
    "call of a new pool with an empty kernel cache (a fresh XDG_CACHE_HOME) and with the cache\n"
    "filled.\n"
    "\n"
    "--precision adds f32 products in gemm's TF32 precisions (3xtf32: fp32's accuracy from\n"
    "three TF32 products; tf32: one), called through invoke_sized with the \"precision\"\n"
    "argument, and --host the same calls with the operands in host memory (the transfers\n"
    "are in the time): clops alone, each checked on 3 rows against the host's long double\n"
    "product (max rel diff 1e-4 for fp32 and 3xtf32, 1e-2 for tf32, 1e-12 for f64).\n"
    "\n"
    "Options:\n"
    "  -s, --sizes LIST   matrix orders, comma-separated (default 1024,2048,4096,8192 on a\n"
    "                     GPU; 512,1024,2048 on a CPU device, 1 to 2 minutes on 2 cores)\n"
    "  -r, --reps R       timed calls per measurement (default 5)\n"
    "  -b, --big          add N = 4096 to the default sizes on a CPU device\n"
    "  -c, --config FILE  create the pools from FILE instead of the built-in defaults\n"
    "  -n, --no-cold      skip the cold/warm cache measurement\n"
    "  -p, --precision LIST\n"
    "                     f32 precisions, comma-separated: fp32 (the typed entry; the f32\n"
    "                     rows against CLBlast), 3xtf32, tf32 (default fp32); results op\n"
    "                     \"gemm\", \"gemm 3xtf32\", \"gemm tf32\"\n"
    "  -H, --host         also time f32 and f64 with host operands (clops_tensor.data):\n"
    "                     results op \"gemm host\"\n"
    "  -t, --dtypes LIST  f32, f64 or f32,f64 (default): the element types timed (at N =\n"
    "                     32768 a process takes minutes a type, mostly filling and checking)\n"
    "  -v, --verbose      also print the library's info and debug messages\n"
    "  -h, --help         print this help\n" BENCH_HELP_PROGRESS BENCH_HELP_RESULTS_OPTIONS "\n"
    "Environment: CLOPS_LIBRARY, the libclops.so to load (as for clops); CLOPS_PYTHON, the\n"
    "python3 that draws --chart.\n"
    "Exit status: 0 ok; 1 a call failed or clops and CLBlast disagree; 2 usage error;\n"
    "3 libclops could not be loaded; 4 configuration error;\n" BENCH_HELP_EXIT_RESULTS;

/* GEMM's own options; the shared ones are in session.opt. */
struct options {
    int64_t sizes[MAX_SIZES];
    int size_count; /* 0: the defaults */
    int big;
    int cold;
    unsigned precisions; /* PRECISION_* bits */
    int host;
    unsigned dtypes; /* bit 0 f32, bit 1 f64 */
};

struct bench {
    struct bench_session session; /* the shared options, the library, the pool and its device */
    struct options opt;
    const struct clops_op *gemm;
    cl_context context; /* CLBlast's own, on the same device */
    cl_command_queue queue;
    char cache_dir[64]; /* the cold cache measurement's; removed at exit */
    int failures;
};

/* ---- command line ------------------------------------------------------------------------- */

/* gemm's "precision" strings, in the order of the PRECISION_* bits. */
static const char *const precision_names[] = {"fp32", "3xtf32", "tf32"};
enum { PRECISIONS = 3 };

/* "fp32,3xtf32,..." into PRECISION_* bits. Returns NULL, or the usage error's text. */
static const char *parse_precisions(const char *text, unsigned *bits)
{
    char *copy = host_xstrdup(text), *save = NULL;
    int ok = 1;
    *bits = 0;
    for (char *item = strtok_r(copy, ",", &save); item != NULL && ok;
         item = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int m = 0; m < PRECISIONS; m++)
            if (strcmp(item, precision_names[m]) == 0)
                found = m;
        ok = found >= 0;
        *bits |= ok ? 1u << found : 0u;
    }
    free(copy);
    return ok && *bits != 0 ? NULL : "--precision wants fp32, 3xtf32 or tf32, comma-separated, not";
}

static const char *take_option(void *area, int option, const char *arg)
{
    struct options *opt = area;
    switch (option) {
    case 's': return bench_parse_sizes(arg, opt->sizes, MAX_SIZES, &opt->size_count);
    case 'b': opt->big = 1; break;
    case 'n': opt->cold = 0; break;
    case 'p': return parse_precisions(arg, &opt->precisions);
    case 'H': opt->host = 1; break;
    case 't': return bench_parse_dtypes(arg, &opt->dtypes);
    }
    return NULL;
}

static const struct option own_options[] = {
    {"sizes", required_argument, NULL, 's'},
    {"big", no_argument, NULL, 'b'},
    {"no-cold", no_argument, NULL, 'n'},
    {"precision", required_argument, NULL, 'p'},
    {"host", no_argument, NULL, 'H'},
    {"dtypes", required_argument, NULL, 't'},
    {0},
};

/* ---- clops -------------------------------------------------------------------------------- */

static int32_t clops_gemm(const struct bench *b, struct clops_pool *pool,
                          const struct clops_tensor *t)
{
    /* The typed entry, as a host that knows the operator would call it: no argument packing. */
    clops_gemm_fn gemm = (clops_gemm_fn)b->gemm->entry;
    return gemm(pool, &t[0], &t[1], &t[2], CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0);
}

/* ---- CLBlast on its own context ----------------------------------------------------------- */

static int open_clblast(struct bench *b)
{
    cl_device_id device = bench_find_cl_device(&b->session.device);
    if (device == NULL) {
        fprintf(bench_stderr(), "clops-bench: no OpenCL device named '%s' for CLBlast\n",
                b->session.device.name);
        return BENCH_EXIT_FAILED;
    }
    cl_int err;
    b->context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (err == CL_SUCCESS)
        b->queue = clCreateCommandQueue(b->context, device, 0, &err);
    if (err != CL_SUCCESS) {
        fprintf(bench_stderr(), "clops-bench: cannot open a context for CLBlast: %s (%d)\n",
                cl_error_name(err), (int)err);
        return BENCH_EXIT_FAILED;
    }
    return BENCH_EXIT_OK;
}

static CLBlastStatusCode clblast_gemm(struct bench *b, int32_t dtype, size_t n, const cl_mem *m)
{
    cl_event event = NULL;
    CLBlastStatusCode status =
        dtype == CLOPS_F32
            ? CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n,
                           1.0f, m[0], 0, n, m[1], 0, n, 0.0f, m[2], 0, n, &b->queue, &event)
            : CLBlastDgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n,
                           1.0, m[0], 0, n, m[1], 0, n, 0.0, m[2], 0, n, &b->queue, &event);
    if (status == CLBlastSuccess) {
        clWaitForEvents(1, &event);
        clReleaseEvent(event);
    }
    return status;
}

/* ---- one size ----------------------------------------------------------------------------- */

/* Device operands of one size for both libraries, and the host data they came from. */
struct operands {
    int32_t dtype;
    int64_t n;
    size_t bytes; /* of one matrix */
    void *host[3];
    struct clops_buffer *buffers[3];
    struct clops_tensor tensors[3];
    cl_mem mems[3];
};

static void release_operands(const struct bench *b, struct operands *o)
{
    for (int i = 0; i < 3; i++) {
        b->session.lib.api->buffer_release(o->buffers[i]);
        if (o->mems[i] != NULL)
            clReleaseMemObject(o->mems[i]);
        free(o->host[i]);
    }
}

static int upload_operands(struct bench *b, struct operands *o)
{
    const struct clops_api *api = b->session.lib.api;
    struct host_rng rng;
    host_rng_seed(&rng, (uint64_t)o->n);
    for (int i = 0; i < 3; i++) {
        o->host[i] = host_xcalloc(1, o->bytes);
        if (i < 2)
            host_fill_random(o->host[i], o->dtype, o->n * o->n, &rng);
        if (api->buffer_create(b->session.pool, (int64_t)o->bytes, &o->buffers[i]) != CLOPS_OK ||
            api->buffer_upload(o->buffers[i], 0, o->host[i], (int64_t)o->bytes) != CLOPS_OK) {
            bench_report_error(&b->session, "device buffer");
            return -1;
        }
        o->tensors[i] = clops_matrix_on_device(o->buffers[i], o->dtype, o->n, o->n, o->n, 0);
        cl_int err;
        o->mems[i] = clCreateBuffer(b->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, o->bytes,
                                    o->host[i], &err);
        if (err != CL_SUCCESS) {
            fprintf(bench_stderr(), "clops-bench: clCreateBuffer for CLBlast: %s (%d)\n",
                    cl_error_name(err), (int)err);
            return -1;
        }
    }
    return 0;
}

static double element(const void *data, int32_t dtype, int64_t i)
{
    return dtype == CLOPS_F32 ? ((const float *)data)[i] : ((const double *)data)[i];
}

/* max |x - y| / max |y| over `count` elements: a wrong kernel gives order 1, roundoff a few
 * ulps times sqrt(N). NaN when y is all zeros, which random operands never give. */
static double max_rel_diff(const void *x, const void *y, int32_t dtype, int64_t count)
{
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < count; i++) {
        double d = fabs(element(x, dtype, i) - element(y, dtype, i));
        worst = d > worst || isnan(d) ? d : worst;
        scale = fmax(scale, fabs(element(y, dtype, i)));
    }
    return scale > 0.0 ? worst / scale : NAN;
}

/* Three rows of C recomputed on the host in long double: CLBlast agreeing with clops is no
 * proof when both could be wrong the same way (an all-zero C, a driver bug). */
static double host_spot_check(const struct operands *o, const void *ours)
{
    const int64_t n = o->n, rows[3] = {0, n / 2, n - 1};
    double *ref = host_xcalloc((size_t)n, sizeof *ref);
    long double *sum = host_xcalloc((size_t)n, sizeof *sum);
    double worst = 0.0;
    for (int r = 0; r < 3; r++) {
        /* Row r of C is the sum over k of A[r][k] times row k of B: B read row by row, as it
         * lies in memory (a column walk takes minutes at N = 32768). */
        for (int64_t j = 0; j < n; j++)
            sum[j] = 0.0L;
        for (int64_t k = 0; k < n; k++) {
            const long double a = element(o->host[0], o->dtype, rows[r] * n + k);
            for (int64_t j = 0; j < n; j++)
                sum[j] += a * element(o->host[1], o->dtype, k * n + j);
        }
        for (int64_t j = 0; j < n; j++)
            ref[j] = (double)sum[j];
        const char *row = (const char *)ours + (size_t)(rows[r] * n * host_dtype_size(o->dtype));
        double *ours_row = host_xcalloc((size_t)n, sizeof *ours_row);
        for (int64_t j = 0; j < n; j++)
            ours_row[j] = element(row, o->dtype, j);
        double d = max_rel_diff(ours_row, ref, CLOPS_F64, n);
        worst = d > worst || isnan(d) ? d : worst;
        free(ours_row);
    }
    free(sum);
    free(ref);
    return worst;
}

/* clops' result against CLBlast's (returned), and against the host's spot check (*host). */
static double compare_results(struct bench *b, const struct operands *o, double *host)
{
    void *ours = host_xmalloc(o->bytes), *theirs = host_xmalloc(o->bytes);
    double diff = NAN;
    *host = NAN;
    if (b->session.lib.api->buffer_download(o->buffers[2], 0, ours, (int64_t)o->bytes) ==
            CLOPS_OK &&
        clEnqueueReadBuffer(b->queue, o->mems[2], CL_TRUE, 0, o->bytes, theirs, 0, NULL, NULL) ==
            CL_SUCCESS) {
        diff = max_rel_diff(ours, theirs, o->dtype, o->n * o->n);
        *host = host_spot_check(o, ours);
    }
    free(theirs);
    free(ours);
    return diff;
}

static double tolerance_for(int32_t dtype)
{
    return dtype == CLOPS_F32 ? 1e-4 : 1e-12;
}

static void add_row_start(struct table *t, int32_t dtype, int64_t n)
{
    table_row(t);
    table_cell(t, "%s", host_dtype_name(dtype));
    if (n > 0)
        table_cell(t, "%lld", (long long)n);
    else
        table_cell(t, "-");
}

/* The timings' cells, their progress line, and their rows in the results file. */
static void add_timings(const struct bench *b, struct bench_table *t, int32_t dtype, int64_t n,
                        double ours, double theirs, double diff)
{
    double flops = 2.0 * (double)n * (double)n * (double)n;
    table_cell(&t->table, "%.3f", ours);
    bench_table_rate(t, flops / (ours * 1e-3));
    table_cell(&t->table, "%.3f", theirs);
    bench_table_rate(t, flops / (theirs * 1e-3));
    table_cell(&t->table, "%.2f", theirs / ours);
    table_cell(&t->table, "%.1e", diff);
    char ours_rate[32], theirs_rate[32];
    bench_progress_done(
        "clops %.3f ms, %s; CLBlast %.3f ms, %s", ours,
        bench_rate_text(BENCH_FLOPS, flops / (ours * 1e-3), ours_rate, sizeof ours_rate), theirs,
        bench_rate_text(BENCH_FLOPS, flops / (theirs * 1e-3), theirs_rate, sizeof theirs_rate));
    const char *impls[2] = {"clops", "clblast"};
    const double ms[2] = {ours, theirs};
    for (int i = 0; i < 2; i++)
        bench_record(&(struct bench_row){.op = "gemm",
                                         .dtype = dtype,
                                         .impl = impls[i],
                                         .n = n,
                                         .n_unit = "matrix order",
                                         .ms = ms[i],
                                         .rate = flops / (ms[i] * 1e9),
                                         .unit = "TFLOP/s",
                                         .device = b->session.device.name});
}

/* ---- clops alone: the TF32 precisions and host operands ----------------------------------- */

/* One of clops' measurements beside the table against CLBlast. */
struct variant {
    const char *run;       /* the table's name for it */
    const char *op;        /* the results' op */
    const char *precision; /* gemm's "precision", through invoke_sized; NULL: the typed entry */
    int host;              /* operands in host memory */
    double tolerance;      /* max rel diff against the host's product; 0: the dtype's */
};

/* A TF32 product is off by about 2^-11 of sum |a b|: 1e-2 of C's largest element leaves room
 * for sqrt(N) growth, and still fails a wrong kernel by orders of magnitude. */
static const struct variant precision_variants[] = {
    {"3xtf32", "gemm 3xtf32", "3xtf32", 0, 1e-4},
    {"tf32", "gemm tf32", "tf32", 0, 1e-2},
};
static const struct variant host_variant = {"host operands", "gemm host", NULL, 1, 0.0};
/* The calls of the table against CLBlast. */
static const struct variant fp32_variant = {"fp32", "gemm", NULL, 0, 0.0};

static int32_t call_variant(const struct bench *b, const struct variant *v,
                            const struct clops_tensor *t)
{
    if (v->precision == NULL)
        return clops_gemm(b, b->session.pool, t);
    const struct clops_arg args[] = {
        {.name = "a", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = &t[0]},
        {.name = "b", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = &t[1]},
        {.name = "c", .kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &t[2]},
        {.name = "precision", .kind = CLOPS_PARAM_ENUM, .s = v->precision},
    };
    return b->session.lib.api->invoke_sized(b->session.pool, b->gemm, args,
                                            (int32_t)(sizeof args / sizeof args[0]),
                                            (uint32_t)sizeof args[0]);
}

/* The median ms of R calls of clops' `v` on `t`, or with `v` NULL of CLBlast's on `o`; NAN when
 * a call fails. */
static double time_calls(struct bench *b, const struct operands *o, const struct variant *v,
                         const struct clops_tensor *t)
{
    double *ms = host_xcalloc((size_t)b->session.opt.reps, sizeof *ms);
    int ok = 1;
    for (int r = 0; r < b->session.opt.reps && ok; r++) {
        double start = host_now_ms();
        ok = v != NULL ? call_variant(b, v, t) == CLOPS_OK
                       : clblast_gemm(b, o->dtype, (size_t)o->n, o->mems) == CLBlastSuccess;
        ms[r] = host_now_ms() - start;
    }
    double result = ok ? host_median(ms, b->session.opt.reps) : NAN;
    free(ms);
    return result;
}

/* `v` on the operands `o` (host arrays for a variant on host operands, with C a new array):
 * one call checked against the host's product, then timed. `device_ms` is clops' fp32 time on
 * device operands (NAN: not measured), the rate the table relates it to. */
static void measure_variant(struct bench *b, const struct operands *o, const struct variant *v,
                            double device_ms, struct bench_table *more)
{
    struct table *t = &more->table;
    bench_progress_start("%s N=%lld %s", host_dtype_name(o->dtype), (long long)o->n, v->run);
    struct clops_tensor host_tensors[3];
    void *c = host_xcalloc(1, o->bytes);
    for (int i = 0; i < 3; i++)
        host_tensors[i] = clops_matrix(i < 2 ? o->host[i] : c, o->dtype, o->n, o->n, o->n, 0);
    const struct clops_tensor *tensors = v->host ? host_tensors : o->tensors;
    double tolerance = v->tolerance > 0.0 ? v->tolerance : tolerance_for(o->dtype);
    double host = NAN, ms = NAN;
    if (call_variant(b, v, tensors) != CLOPS_OK)
        bench_report_error(&b->session, v->op);
    else if (v->host || b->session.lib.api->buffer_download(o->buffers[2], 0, c,
                                                            (int64_t)o->bytes) == CLOPS_OK)
        host = host_spot_check(o, c);
    table_row(t);
    table_cell(t, "%s %s", host_dtype_name(o->dtype), v->run);
    table_cell(t, "%lld", (long long)o->n);
    if (!(host <= tolerance)) {
        b->failures++;
        table_cell(t, "FAILED: %s (max rel diff %.1e vs host, tolerance %.0e)",
                   isnan(host) ? "a call failed" : "wrong results", host, tolerance);
        bench_progress_done("FAILED: %s", isnan(host) ? "a call failed" : "wrong results");
    } else {
        ms = time_calls(b, o, v, tensors);
        b->failures += isnan(ms);
        const double flops = 2.0 * (double)o->n * (double)o->n * (double)o->n;
        char rate[32];
        bench_progress_done("%.3f ms, %s", ms,
                            bench_rate_text(BENCH_FLOPS, flops / (ms * 1e-3), rate, sizeof rate));
        table_cell(t, "%.3f", ms);
        bench_table_rate(more, flops / (ms * 1e-3));
        if (isnan(device_ms))
            table_cell(t, "-");
        else
            table_cell(t, "%.2f", device_ms / ms);
        table_cell(t, "%.1e", host);
        bench_record(&(struct bench_row){.op = v->op,
                                         .dtype = o->dtype,
                                         .impl = "clops",
                                         .n = o->n,
                                         .n_unit = "matrix order",
                                         .ms = ms,
                                         .rate = flops / (ms * 1e9),
                                         .unit = "TFLOP/s",
                                         .device = b->session.device.name});
    }
    free(c);
}

/* The variants --precision and --host ask for, for one size. */
static void measure_variants(struct bench *b, const struct operands *o, double device_ms,
                             struct bench_table *t)
{
    for (int m = 0; m < 2 && o->dtype == CLOPS_F32; m++)
        if (b->opt.precisions & (PRECISION_3XTF32 << m))
            measure_variant(b, o, &precision_variants[m], device_ms, t);
    if (b->opt.host)
        measure_variant(b, o, &host_variant, device_ms, t);
}

/* Device memory both libraries' operands need, with some room for the drivers. */
static int fits_on_device(const struct bench *b, const struct operands *o)
{
    return 6.0 * (double)o->bytes < 0.8 * (double)b->session.device.global_mem_bytes;
}

/* clops against CLBlast on the operands `o`; returns clops' time, or NAN. */
static double measure_against_clblast(struct bench *b, struct operands *o, struct bench_table *t)
{
    const int32_t dtype = o->dtype;
    const int64_t n = o->n;
    double ours_ms = NAN;
    bench_progress_start("%s N=%lld", host_dtype_name(dtype), (long long)n);
    /* Warm-up: kernel builds and first-touch costs stay out of the timings. */
    int32_t ours = clops_gemm(b, b->session.pool, o->tensors);
    CLBlastStatusCode theirs = clblast_gemm(b, dtype, (size_t)n, o->mems);
    double host = NAN;
    double diff = ours == CLOPS_OK && theirs == CLBlastSuccess ? compare_results(b, o, &host) : NAN;
    if (ours != CLOPS_OK)
        bench_report_error(&b->session, "gemm");
    if (theirs != CLBlastSuccess)
        fprintf(bench_stderr(), "clops-bench: CLBlast gemm failed: status %d\n", (int)theirs);
    if (!(diff <= tolerance_for(dtype)) || !(host <= tolerance_for(dtype))) {
        b->failures++;
        table_cell(&t->table, "FAILED: %s (max rel diff %.1e vs CLBlast, %.1e vs host)",
                   isnan(diff) ? "a call failed" : "wrong results", diff, host);
        bench_progress_done("FAILED: %s", isnan(diff) ? "a call failed" : "wrong results");
    } else {
        ours_ms = time_calls(b, o, &fp32_variant, o->tensors);
        double theirs_ms = time_calls(b, o, NULL, NULL);
        b->failures += isnan(ours_ms) || isnan(theirs_ms);
        add_timings(b, t, dtype, n, ours_ms, theirs_ms, diff);
    }
    return ours_ms;
}

/* The measurements of one size of `dtype`: the row against CLBlast (f32 unless --precision
 * leaves fp32 out), and those of --precision (f32) and --host. */
static int measurements_per_size(const struct bench *b, int32_t dtype)
{
    int count = dtype != CLOPS_F32 || (b->opt.precisions & PRECISION_FP32);
    for (int m = 0; m < 2 && dtype == CLOPS_F32; m++)
        count += (b->opt.precisions & (PRECISION_3XTF32 << m)) != 0;
    return count + b->opt.host;
}

/* A size none of whose measurements can be made: one row in `t`, and one progress line for
 * them all. */
static void skip_size(struct bench *b, int32_t dtype, int64_t n, struct table *t, int row_started,
                      const char *why)
{
    if (!row_started)
        add_row_start(t, dtype, n);
    table_cell(t, "%s", why);
    bench_progress_plan(1 - measurements_per_size(b, dtype));
    bench_progress_start("%s N=%lld", host_dtype_name(dtype), (long long)n);
    bench_progress_done("%s", why);
}

/* One size: its row against CLBlast in `t` (f32 unless --precision leaves fp32 out), and the
 * rows of --precision and --host in `more`. */
static void bench_size(struct bench *b, int32_t dtype, int64_t n, struct bench_table *t,
                       struct bench_table *more)
{
    struct operands o = {.dtype = dtype, .n = n};
    o.bytes = (size_t)(n * n * host_dtype_size(dtype));
    const int fp32 = dtype != CLOPS_F32 || (b->opt.precisions & PRECISION_FP32);
    if (fp32)
        add_row_start(&t->table, dtype, n);
    if (!fits_on_device(b, &o)) {
        char need[32], why[64];
        host_format_bytes((int64_t)(6 * o.bytes), need, sizeof need);
        snprintf(why, sizeof why, "skipped: needs %s of device memory", need);
        skip_size(b, dtype, n, &t->table, fp32, why);
        return;
    }
    if (upload_operands(b, &o) != 0) {
        b->failures++;
        skip_size(b, dtype, n, &t->table, fp32, "FAILED: could not set up operands");
        release_operands(b, &o);
        return;
    }
    double ours_ms = fp32 ? measure_against_clblast(b, &o, t) : NAN;
    measure_variants(b, &o, ours_ms, more);
    release_operands(b, &o);
}

/* A GPU's, or a CPU device's: about a minute on 2 cores with PoCL (2 with an empty kernel
 * cache), where N = 4096, the old default's largest, took most of 19.5 minutes. */
static void default_sizes(struct bench *b)
{
    static const int64_t gpu_sizes[] = {1024, 2048, 4096, 8192},
                         cpu_sizes[] = {512, 1024, 2048, 4096};
    const int gpu = b->session.device.type == CLOPS_DEVICE_GPU;
    b->opt.size_count = gpu ? 4 : b->opt.big ? 4 : 3;
    memcpy(b->opt.sizes, gpu ? gpu_sizes : cpu_sizes, sizeof gpu_sizes);
}

static void run_gemm_table(struct bench *b)
{
    static const struct table_column columns[] = {
        {"dtype", TABLE_LEFT},          {"N", TABLE_RIGHT},
        {"clops ms", TABLE_RIGHT},      {"clops %s", TABLE_RIGHT},
        {"CLBlast ms", TABLE_RIGHT},    {"CLBlast %s", TABLE_RIGHT},
        {"clops/CLBlast", TABLE_RIGHT}, {"max rel diff", TABLE_RIGHT},
    };
    static const struct table_column more_columns[] = {
        {"run", TABLE_LEFT},
        {"N", TABLE_RIGHT},
        {"clops ms", TABLE_RIGHT},
        {"clops %s", TABLE_RIGHT},
        {"/ fp32 device", TABLE_RIGHT},
        {"max rel diff vs host", TABLE_RIGHT},
    };
    static const int32_t dtypes[] = {CLOPS_F32, CLOPS_F64};
    struct bench_table t, more;
    bench_table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]), BENCH_FLOPS);
    bench_table_init(&more, more_columns, (int)(sizeof more_columns / sizeof more_columns[0]),
                     BENCH_FLOPS);
    for (int d = 0; d < 2; d++)
        if ((b->opt.dtypes >> d & 1u) && (dtypes[d] == CLOPS_F32 || b->session.device.fp64))
            bench_progress_plan(b->opt.size_count * measurements_per_size(b, dtypes[d]));
    for (int d = 0; d < 2; d++) {
        if (!(b->opt.dtypes >> d & 1u))
            continue;
        if (dtypes[d] == CLOPS_F64 && !b->session.device.fp64) {
            add_row_start(&t.table, dtypes[d], 0);
            table_cell(&t.table, "skipped: the device has no fp64");
            continue;
        }
        for (int i = 0; i < b->opt.size_count; i++)
            bench_size(b, dtypes[d], b->opt.sizes[i], &t, &more);
    }
    bench_progress_end();
    printf("GEMM C = A B, row-major, operands on the device; median of %d calls after a warm-up\n"
           "whose result was checked against CLBlast's and, for 3 rows, against the host's.\n"
           "clops/CLBlast > 1 means clops is faster.\n\n",
           b->session.opt.reps);
    bench_table_print(&t, stdout, 0);
    if (more.table.row_count > 0) {
        printf(
            "\nclops alone: f32 in the TF32 precisions (invoke_sized, \"precision\"), operands on "
            "the\ndevice; host operands (clops_tensor.data: the transfers are in the time). "
            "Median of %d\ncalls after a warm-up checked on 3 rows against the host's; "
            "/ fp32 device = the rate over\nclops' fp32 rate on device operands above.\n\n",
            b->session.opt.reps);
        bench_table_print(&more, stdout, 0);
    }
    bench_table_free(&more);
    bench_table_free(&t);
}

/* ---- cold vs warm first call -------------------------------------------------------------- */

struct first_call {
    double create_ms, call_ms;
    int64_t built, loaded;
};

/* A new pool's first gemm on N = COLD_N host matrices: what a short-lived host process pays. */
static int time_first_call(struct bench *b, int32_t dtype, struct first_call *out)
{
    const struct clops_api *api = b->session.lib.api;
    int64_t n = COLD_N;
    void *m[3];
    struct clops_tensor t[3];
    for (int i = 0; i < 3; i++) {
        m[i] = host_xcalloc((size_t)(n * n), (size_t)host_dtype_size(dtype));
        t[i] = clops_matrix(m[i], dtype, n, n, n, 0);
    }
    struct clops_pool *pool = NULL;
    double start = host_now_ms();
    int32_t status = bench_pool_create(&b->session, &pool);
    out->create_ms = host_now_ms() - start;
    if (status == CLOPS_OK) {
        start = host_now_ms();
        status = clops_gemm(b, pool, t);
        out->call_ms = host_now_ms() - start;
    }
    struct clops_stats stats = {.struct_size = sizeof stats};
    if (status == CLOPS_OK)
        status = api->pool_stats(pool, &stats);
    out->built = stats.programs_built;
    out->loaded = stats.programs_loaded;
    if (status != CLOPS_OK)
        bench_report_error(&b->session, "first call");
    api->pool_release(pool);
    for (int i = 0; i < 3; i++)
        free(m[i]);
    return status == CLOPS_OK ? 0 : -1;
}

/* Points the caches at `dir` (NULL: restores what `saved` holds). Besides clops' own cache
 * (XDG_CACHE_HOME/clops), the drivers' caches move too, or a "cold" build would be served
 * from PoCL's or NVIDIA's kernel cache. The drivers read these variables once, at the
 * process's first OpenCL call, and keep using the directory: that is why this measurement runs
 * first, and why the directory stays until the process ends. */
static const char *const cache_variables[] = {"XDG_CACHE_HOME", "POCL_CACHE_DIR",
                                              "CUDA_CACHE_PATH"};
enum { CACHE_VARIABLES = 3 };

static void redirect_caches(const char *dir, char **saved)
{
    for (int i = 0; i < CACHE_VARIABLES; i++) {
        const char *name = cache_variables[i];
        if (dir == NULL) {
            if (saved[i] != NULL)
                setenv(name, saved[i], 1);
            else
                unsetenv(name);
            free(saved[i]);
            continue;
        }
        saved[i] = getenv(name) != NULL ? host_xstrdup(getenv(name)) : NULL;
        char *value = NULL;
        if (asprintf(&value, i == 0 ? "%s" : "%s/%s", dir, i == 1 ? "pocl" : "nv") >= 0)
            setenv(name, value, 1);
        free(value);
    }
}

static void remove_cache_dir(const struct bench *b)
{
    if (b->cache_dir[0] != '\0')
        host_remove_tree(b->cache_dir);
}

static void add_first_call_row(struct table *t, int32_t dtype, const char *cache,
                               const struct first_call *f)
{
    table_row(t);
    table_cell(t, "%s", host_dtype_name(dtype));
    table_cell(t, "%s", cache);
    table_cell(t, "%.1f", f->create_ms);
    table_cell(t, "%.1f", f->call_ms);
    table_cell(t, "%lld", (long long)f->built);
    table_cell(t, "%lld", (long long)f->loaded);
}

/* time_first_call() with its progress line; `cache` says which: "empty", "filled". */
static int measure_first_call(struct bench *b, int32_t dtype, const char *cache,
                              struct first_call *f)
{
    bench_progress_start("%s first call of a new pool, kernel cache %s", host_dtype_name(dtype),
                         cache);
    if (time_first_call(b, dtype, f) != 0) {
        bench_progress_done("failed");
        return -1;
    }
    bench_progress_done("pool create %.1f ms, first gemm %.1f ms, %lld programs built",
                        f->create_ms, f->call_ms, (long long)f->built);
    return 0;
}

static void run_cold_warm(struct bench *b, struct table *t)
{
    snprintf(b->cache_dir, sizeof b->cache_dir, "/tmp/clops-bench-cache-XXXXXX");
    if (mkdtemp(b->cache_dir) == NULL) {
        fprintf(bench_stderr(), "clops-bench: mkdtemp: %s\n", strerror(errno));
        b->cache_dir[0] = '\0';
        b->failures++;
        return;
    }
    char *saved[CACHE_VARIABLES];
    redirect_caches(b->cache_dir, saved);
    static const int32_t dtypes[] = {CLOPS_F32, CLOPS_F64};
    bench_progress_plan(4);
    for (int d = 0; d < 2; d++) {
        struct first_call cold, warm;
        const int cold_failed = measure_first_call(b, dtypes[d], "empty", &cold) != 0;
        if (cold_failed)
            bench_progress_plan(-1); /* no warm call after it */
        if (cold_failed || measure_first_call(b, dtypes[d], "filled", &warm) != 0) {
            b->failures += dtypes[d] == CLOPS_F32; /* f64 may be unsupported: not a failure */
            continue;
        }
        add_first_call_row(t, dtypes[d], "cold (empty)", &cold);
        add_first_call_row(t, dtypes[d], "warm (filled)", &warm);
    }
    /* clops' later pools use the usual cache again; the drivers keep theirs (see above). */
    redirect_caches(NULL, saved);
}

static void measure_cold_warm(struct bench *b, struct table *t)
{
    static const struct table_column columns[] = {
        {"dtype", TABLE_LEFT},           {"kernel cache", TABLE_LEFT},
        {"pool create ms", TABLE_RIGHT}, {"first gemm ms", TABLE_RIGHT},
        {"programs built", TABLE_RIGHT}, {"loaded", TABLE_RIGHT},
    };
    table_init(t, columns, (int)(sizeof columns / sizeof columns[0]));
    run_cold_warm(b, t);
}

static void print_cold_warm(const struct table *t)
{
    printf("\nFirst call of a new pool (gemm, N = %d, host matrices), kernel cache empty vs "
           "filled:\n\n",
           COLD_N);
    table_print(t, stdout, 0);
}

/* ---- main --------------------------------------------------------------------------------- */

static void print_header(const struct bench *b)
{
    char title[96], date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    snprintf(title, sizeof title, "clops-bench %s", date);
    bench_print_library(&b->session, title);
    bench_print_device(&b->session.device, NULL);
}

int bench_gemm_main(int argc, char **argv)
{
    static struct bench b = {.opt = {.cold = 1, .precisions = PRECISION_FP32, .dtypes = 3u}};
    static const struct bench_command_line command_line = {
        .program = "clops-bench",
        .name = "gemm",
        .help = help,
        .options = own_options,
        .default_reps = 5,
        .max_reps = 1000,
        .take = take_option,
        .area = &b.opt,
    };
    int code = bench_start(argc, argv, &command_line, &b.session);
    if (code >= 0)
        return code;
    b.gemm = b.session.lib.api->op_find("gemm");
    if (b.gemm == NULL) {
        bench_report_error(&b.session, "op_find");
        return BENCH_EXIT_LOAD;
    }
    if ((b.opt.precisions & ~(unsigned)PRECISION_FP32) &&
        !CLOPS_API_HAS(b.session.lib.api, invoke_sized)) {
        fprintf(bench_stderr(), "clops-bench: --precision: this libclops has no invoke_sized\n");
        return BENCH_EXIT_LOAD;
    }
    /* Before anything else touches OpenCL: see redirect_caches(). */
    struct table cold_warm = {0};
    if (b.opt.cold)
        measure_cold_warm(&b, &cold_warm);
    if ((code = bench_open_pool(&b.session)) == BENCH_EXIT_OK &&
        (code = open_clblast(&b)) == BENCH_EXIT_OK) {
        if (b.opt.size_count == 0)
            default_sizes(&b);
        print_header(&b);
        run_gemm_table(&b);
        if (b.opt.cold)
            print_cold_warm(&cold_warm);
        code = b.failures > 0 ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
    }
    table_free(&cold_warm);
    if (b.queue != NULL)
        clReleaseCommandQueue(b.queue);
    if (b.context != NULL)
        clReleaseContext(b.context);
    b.session.lib.api->pool_release(b.session.pool);
    remove_cache_dir(&b);
    return code;
}
