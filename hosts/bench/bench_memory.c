/* bench_memory.c — clops-bench memory: the memory-bound operators against the device's memory
 * bandwidth: reduce (sum of 2^26 f32 and its siblings) and transpose (8192^2), in GB/s. */
#include "bench.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "table.h"
#include "util.h"

enum { OP_SUM = 0, OP_MAX = 2, OP_NORM2 = 3, OP_ARGMAX = 5 }; /* reduce's enum indices */
enum { REDUCE_JOBS = 6 };                                     /* the rows of bench_reduce() */

static const char help[] =
    "Usage: clops-bench memory [--reduce-size N] [--transpose-size N] [--reps R]\n"
    "                          [--config FILE] [--verbose]\n"
    "\n"
    "Times the memory-bound operators on the pool's primary device, operands already in\n"
    "device memory (buffer_create), and reports bandwidth:\n"
    "  reduce     sum, max, norm2, argmax of N f32 (GB/s = 4 N bytes read / time), and the\n"
    "             sums along axis 1 and axis 0 of an N/1024 x 1024 row-major matrix;\n"
    "  transpose  N x N f32 and f64 out of place, and f32 in place (GB/s counts the read and\n"
    "             the write: 2 N^2 element sizes / time).\n"
    "Each row is first run once and verified (reductions against a compensated long double\n"
    "host computation within the operator's documented bounds, transposes bit for bit); a row\n"
    "that fails is not timed. Then R calls: 'wall' is the median host time of one call\n"
    "(launches and waits included), 'device' the mean kernel time from the pool's profiling\n"
    "statistics, with a configuration that turns `profiling` on (--config configs/clops.cfg;\n"
    "the default pool has it off: '-'). Rates in GB/s, or in MB/s where the table's fastest is\n"
    "below 1 GB/s. --csv's rows hold the wall times, in GB/s, n = the elements reduced or the\n"
    "transpose's order.\n"
    "\n"
    "Options:\n"
    "  -n, --reduce-size N      elements reduced (default 2^26 on a GPU, 2^22 otherwise)\n"
    "  -t, --transpose-size N   matrix order (default 8192 on a GPU, 2048 otherwise; the\n"
    "                           defaults take under 30 s on 2 CPU cores)\n"
    "  -r, --reps R             timed calls per row (default 20)\n"
    "  -c, --config FILE        create the pool from FILE instead of the built-in defaults\n"
    "  -v, --verbose            also print the library's info and debug messages\n"
    "  -h, --help               print this help\n" BENCH_HELP_PROGRESS BENCH_HELP_RESULTS_OPTIONS
    "\n" BENCH_HELP_EXIT_STATUS;

/* memory's own options; the shared ones are in session.opt. */
struct options {
    int64_t reduce_n, transpose_n; /* 0: the defaults */
};

struct bench;
struct job;

/* What every row of one operator shares. */
struct operator_rows {
    const char *op;                                 /* the table's operator column */
    const char *n_unit;                             /* what a row's size counts: "elements" */
    int32_t (*run)(struct bench *b, struct job *j); /* one call */
    /* Checks what the first call left: 0 = ok, else prints why. */
    int (*verify)(struct bench *b, struct job *j);
    int32_t op_index; /* in op_at() numbering, for the device-time statistics */
};

struct bench {
    struct bench_session session; /* the shared options, the library, the pool and its device */
    struct options opt;
    clops_reduce_fn reduce;
    clops_transpose_fn transpose;
    struct operator_rows reduce_rows, transpose_rows;
    struct bench_table table;
    int failures;
};

/* ---- command line ------------------------------------------------------------------------- */

static const char *take_option(void *area, int option, const char *arg)
{
    struct options *opt = area;
    /* Base 0: the sizes may be given as 0x4000000. */
    switch (option) {
    case 'n':
        return bench_take_int(arg, 0, 1024, INT64_C(1) << 32, &opt->reduce_n,
                              "--reduce-size wants 1024 to 2^32, not");
    case 't':
        return bench_take_int(arg, 0, 1, 65536, &opt->transpose_n,
                              "--transpose-size wants 1 to 65536, not");
    }
    return NULL;
}

static const struct option own_options[] = {
    {"reduce-size", required_argument, NULL, 'n'},
    {"transpose-size", required_argument, NULL, 't'},
    {0},
};

/* ---- one measured row ------------------------------------------------------------------------ */

/* A row of the table, `what` in its case column; `bytes` is what one call must move through
 * device memory. */
struct job {
    const struct operator_rows *kind;
    const char *what;
    /* The row of the results file: what was timed ("reduce sum axis 1") and its size, in
     * kind->n_unit. */
    const char *label;
    int64_t size;
    int32_t dtype;
    double bytes;
    /* Operands. */
    struct clops_tensor x, out;
    void *host_x;
    int64_t n, rows, cols;
    int32_t reduce_op;
    int64_t axis;
};

/* Kernel nanoseconds the pool has recorded for an operator so far. */
static int64_t device_ns(const struct bench *b, int32_t op_index)
{
    struct clops_op_stats s = {.struct_size = sizeof s};
    return b->session.lib.api->pool_op_stats(b->session.pool, op_index, &s) == CLOPS_OK
               ? s.device_ns
               : 0;
}

/* Median wall ms and mean device ms of R calls; wall NAN when a call fails. */
static void time_job(struct bench *b, struct job *j, double *wall_ms, double *dev_ms)
{
    double *ms = host_xcalloc((size_t)b->session.opt.reps, sizeof *ms);
    int64_t ns0 = device_ns(b, j->kind->op_index);
    int ok = 1;
    for (int r = 0; r < b->session.opt.reps && ok; r++) {
        double start = host_now_ms();
        ok = j->kind->run(b, j) == CLOPS_OK;
        ms[r] = host_now_ms() - start;
    }
    if (!ok)
        bench_report_error(&b->session, j->kind->op);
    if (ok)
        host_sort_times(ms, b->session.opt.reps);
    *wall_ms = ok ? ms[b->session.opt.reps / 2] : NAN; /* the upper middle for an even R */
    *dev_ms = (double)(device_ns(b, j->kind->op_index) - ns0) / 1e6 / b->session.opt.reps;
    free(ms);
}

static void measure(struct bench *b, struct job *j)
{
    struct table *t = &b->table.table;
    table_row(t);
    table_cell(t, "%s", j->kind->op);
    table_cell(t, "%s", j->what);
    table_cell(t, "%s", host_dtype_name(j->dtype));
    bench_progress_start("%s %s %s", j->kind->op, j->what, host_dtype_name(j->dtype));
    if (j->kind->run(b, j) != CLOPS_OK) {
        bench_report_error(&b->session, j->kind->op);
        b->failures++;
        table_cell(t, "FAILED: the call failed");
        bench_progress_done("FAILED: the call failed");
        return;
    }
    if (j->kind->verify(b, j) != 0) {
        b->failures++;
        table_cell(t, "FAILED: wrong result (see stderr)");
        bench_progress_done("FAILED: wrong result");
        return;
    }
    double wall, dev;
    time_job(b, j, &wall, &dev);
    b->failures += isnan(wall);
    char rate[32];
    bench_progress_done("%.3f ms, %s (wall)", wall,
                        bench_rate_text(BENCH_BYTES, j->bytes / (wall * 1e-3), rate, sizeof rate));
    /* The wall time: what a peer timing its calls from the host measures too. */
    bench_record(&(struct bench_row){.op = j->label,
                                     .dtype = j->dtype,
                                     .impl = "clops",
                                     .n = j->size,
                                     .n_unit = j->kind->n_unit,
                                     .ms = wall,
                                     .rate = j->bytes / (wall * 1e6),
                                     .unit = "GB/s",
                                     .device = b->session.device.name});
    table_cell(t, "%.3f", wall);
    bench_table_rate(&b->table, j->bytes / (wall * 1e-3));
    if (dev > 0) {
        table_cell(t, "%.3f", dev);
        bench_table_rate(&b->table, j->bytes / (dev * 1e-3));
    } else {
        table_cell(t, "-");
        table_cell(t, "-");
    }
}

/* ---- device operands ------------------------------------------------------------------------- */

static struct clops_buffer *device_copy(struct bench *b, const void *host, int64_t bytes)
{
    const struct clops_api *api = b->session.lib.api;
    struct clops_buffer *buf = NULL;
    if (api->buffer_create(b->session.pool, bytes, &buf) != CLOPS_OK ||
        (host != NULL && api->buffer_upload(buf, 0, host, bytes) != CLOPS_OK)) {
        bench_report_error(&b->session, "device buffer");
        api->buffer_release(buf);
        return NULL;
    }
    return buf;
}

static struct clops_tensor device_tensor(struct clops_buffer *buf, int32_t dtype, int64_t rows,
                                         int64_t cols)
{
    struct clops_tensor t = clops_matrix_on_device(buf, dtype, rows, cols, cols, 0);
    if (rows == 0) { /* a vector of `cols` elements */
        t.rank = 1;
        t.shape[0] = cols;
        t.strides[0] = 1;
    }
    return t;
}

/* ---- reduce ---------------------------------------------------------------------------------- */

static int32_t run_reduce(struct bench *b, struct job *j)
{
    return b->reduce(b->session.pool, &j->x, &j->out, j->reduce_op, j->axis);
}

/* The reduction of `n` floats from `stride` apart, in compensated long double; the sum of
 * magnitudes for the tolerance goes to *abs_sum, the first extreme's index to *index. */
static long double host_reduce(const float *x, int64_t n, int64_t stride, int32_t op,
                               long double *abs_sum, int64_t *index)
{
    long double s = 0, c = 0, best = x[0];
    *abs_sum = 0;
    *index = 0;
    for (int64_t i = 0; i < n; i++) {
        long double v = x[i * stride], term = op == OP_NORM2 ? v * v : v;
        long double t = s + term;
        c += fabsl(s) >= fabsl(term) ? (s - t) + term : (term - t) + s;
        s = t;
        *abs_sum += fabsl(v);
        if (v > best) {
            best = v;
            *index = i;
        }
    }
    return op == OP_SUM ? s + c : op == OP_NORM2 ? sqrtl(s + c) : best;
}

/* Within reduce's documented bounds: sums 2u|S| + 4 n u^2 sum|x| (plus the final rounding),
 * norm2 4u relative, max and argmax exact. */
static int check_reduced(const struct job *j, double got, const float *x, int64_t n, int64_t stride,
                         int64_t at)
{
    long double abs_sum;
    int64_t index;
    long double want = host_reduce(x, n, stride, j->reduce_op, &abs_sum, &index);
    long double u = FLT_EPSILON / 2.0L, tol = 0;
    if (j->reduce_op == OP_ARGMAX)
        want = (long double)index;
    else if (j->reduce_op == OP_SUM)
        tol = 3 * u * fabsl(want) + 4 * (long double)n * u * u * abs_sum;
    else if (j->reduce_op == OP_NORM2)
        tol = 4 * u * want;
    if (fabsl((long double)got - want) <= tol)
        return 0;
    fprintf(stderr,
            "clops-bench memory: reduce %s result %lld: %.9g, want %.9Lg (tolerance %.3Lg)\n",
            j->what, (long long)at, got, want, tol);
    return -1;
}

static int verify_reduce_whole(struct bench *b, struct job *j)
{
    double got = 0;
    if (j->reduce_op == OP_ARGMAX) {
        int64_t index = -1;
        if (b->session.lib.api->buffer_download(j->out.buffer, 0, &index, 8) != CLOPS_OK)
            return bench_report_error(&b->session, "download"), -1;
        got = (double)index;
    } else {
        float v = 0;
        if (b->session.lib.api->buffer_download(j->out.buffer, 0, &v, 4) != CLOPS_OK)
            return bench_report_error(&b->session, "download"), -1;
        got = v;
    }
    return check_reduced(j, got, j->host_x, j->n, 1, 0);
}

/* Three of the results: the first, a middle and the last row (axis 1) or column (axis 0). */
static int verify_reduce_axis(struct bench *b, struct job *j)
{
    int64_t count = j->axis == 1 ? j->rows : j->cols;
    float *out = host_xcalloc((size_t)count, sizeof *out);
    int rc = 0;
    if (b->session.lib.api->buffer_download(j->out.buffer, 0, out, count * 4) != CLOPS_OK) {
        bench_report_error(&b->session, "download");
        rc = -1;
    }
    const int64_t picks[3] = {0, count / 2, count - 1};
    const float *x = j->host_x;
    for (int p = 0; p < 3 && rc == 0; p++) {
        int64_t r = picks[p];
        rc = j->axis == 1 ? check_reduced(j, out[r], x + r * j->cols, j->cols, 1, r)
                          : check_reduced(j, out[r], x + r, j->rows, j->cols, r);
    }
    free(out);
    return rc;
}

/* A whole reduction (axis -1), or one along an axis. */
static int verify_reduce(struct bench *b, struct job *j)
{
    return j->axis < 0 ? verify_reduce_whole(b, j) : verify_reduce_axis(b, j);
}

static void bench_reduce(struct bench *b, int64_t n)
{
    float *host = host_xmalloc((size_t)n * sizeof *host);
    struct host_rng rng;
    host_rng_seed(&rng, (uint64_t)n);
    host_fill_random(host, CLOPS_F32, n, &rng);
    struct clops_buffer *x = device_copy(b, host, n * 4),
                        *out = device_copy(b, NULL, n / 1024 * 4 + 1024 * 8);
    if (x == NULL || out == NULL) {
        b->failures++;
        bench_progress_plan(-REDUCE_JOBS); /* none made; device_copy() said why */
        goto done;
    }
    static const struct {
        const char *what;
        int32_t op;
    } whole[] = {{"sum", OP_SUM}, {"max", OP_MAX}, {"norm2", OP_NORM2}, {"argmax", OP_ARGMAX}};
    char what[4][64], axis_what[2][64], label[4][32], axis_label[2][32];
    for (int k = 0; k < 4; k++) {
        snprintf(what[k], sizeof what[k], "%s, n = %lld", whole[k].what, (long long)n);
        snprintf(label[k], sizeof label[k], "reduce %s", whole[k].what);
        struct job j = {
            .kind = &b->reduce_rows,
            .what = what[k],
            .label = label[k],
            .size = n,
            .dtype = CLOPS_F32,
            .bytes = 4.0 * (double)n,
            .x = device_tensor(x, CLOPS_F32, 0, n),
            .out = device_tensor(out, whole[k].op == OP_ARGMAX ? CLOPS_I64 : CLOPS_F32, 0, 1),
            .host_x = host,
            .n = n,
            .reduce_op = whole[k].op,
            .axis = -1};
        measure(b, &j);
    }
    const int64_t cols = 1024, rows = n / cols;
    for (int axis = 1; axis >= 0; axis--) {
        snprintf(axis_what[axis], sizeof axis_what[axis], "sum axis %d, %lldx%lld", axis,
                 (long long)rows, (long long)cols);
        snprintf(axis_label[axis], sizeof axis_label[axis], "reduce sum axis %d", axis);
        struct job j = {.kind = &b->reduce_rows,
                        .what = axis_what[axis],
                        .label = axis_label[axis],
                        .size = rows * cols,
                        .dtype = CLOPS_F32,
                        .bytes = 4.0 * (double)(rows * cols),
                        .x = device_tensor(x, CLOPS_F32, rows, cols),
                        .out = device_tensor(out, CLOPS_F32, 0, axis == 1 ? rows : cols),
                        .host_x = host,
                        .rows = rows,
                        .cols = cols,
                        .reduce_op = OP_SUM,
                        .axis = axis};
        measure(b, &j);
    }
done:
    b->session.lib.api->buffer_release(out);
    b->session.lib.api->buffer_release(x);
    free(host);
}

/* ---- transpose ------------------------------------------------------------------------------- */

static int32_t run_transpose(struct bench *b, struct job *j)
{
    return b->transpose(b->session.pool, &j->x, &j->out);
}

/* The whole result, bit for bit: y(j, i) = x(i, j); in place, after an odd number of calls. */
static int verify_transpose(struct bench *b, struct job *j)
{
    const int64_t n = j->n, es = host_dtype_size(j->dtype);
    char *y = host_xmalloc((size_t)(n * n * es));
    const char *x = j->host_x;
    int rc = 0;
    if (b->session.lib.api->buffer_download(j->out.buffer, 0, y, n * n * es) != CLOPS_OK) {
        bench_report_error(&b->session, "download");
        rc = -1;
    }
    for (int64_t r = 0; r < n && rc == 0; r++)
        for (int64_t c = 0; c < n && rc == 0; c++)
            if (memcmp(y + (c * n + r) * es, x + (r * n + c) * es, (size_t)es) != 0) {
                fprintf(stderr,
                        "clops-bench memory: transpose %s: y(%lld, %lld) != x(%lld, %lld)\n",
                        j->what, (long long)c, (long long)r, (long long)r, (long long)c);
                rc = -1;
            }
    free(y);
    return rc;
}

static void bench_transpose(struct bench *b, int32_t dtype, int64_t n, int in_place)
{
    const int64_t es = host_dtype_size(dtype), bytes = n * n * es;
    void *host = host_xmalloc((size_t)bytes);
    struct host_rng rng;
    host_rng_seed(&rng, (uint64_t)n);
    host_fill_random(host, dtype, n * n, &rng);
    struct clops_buffer *x = device_copy(b, host, bytes);
    struct clops_buffer *y = in_place ? x : device_copy(b, NULL, bytes);
    char what[64];
    snprintf(what, sizeof what, "%lldx%lld%s", (long long)n, (long long)n,
             in_place ? " in place" : "");
    if (x == NULL || y == NULL) {
        b->failures++;
        bench_progress_plan(-1); /* not made; device_copy() said why */
    } else {
        struct job j = {.kind = &b->transpose_rows,
                        .what = what,
                        .label = in_place ? "transpose in place" : "transpose",
                        .size = n,
                        .dtype = dtype,
                        .bytes = 2.0 * (double)bytes,
                        .x = device_tensor(x, dtype, n, n),
                        .out = device_tensor(y, dtype, n, n),
                        .host_x = host,
                        .n = n};
        measure(b, &j);
    }
    if (y != x)
        b->session.lib.api->buffer_release(y);
    b->session.lib.api->buffer_release(x);
    free(host);
}

/* ---- main ------------------------------------------------------------------------------------ */

static int fits(const struct bench *b, double bytes)
{
    return bytes < 0.7 * (double)b->session.device.global_mem_bytes;
}

/* A row none of whose `measurements` can be made, and one progress line for them all. */
static void skip_row(struct bench *b, const char *op, int measurements, const char *why)
{
    table_row(&b->table.table);
    table_cell(&b->table.table, "%s", op);
    table_cell(&b->table.table, "skipped: %s", why);
    bench_progress_plan(1 - measurements);
    bench_progress_start("%s", op);
    bench_progress_done("skipped: %s", why);
}

static void print_header(const struct bench *b)
{
    bench_print_library(&b->session, "clops-bench memory");
    bench_print_device(&b->session.device, b->session.opt.config);
}

static int find_ops(struct bench *b)
{
    const struct clops_api *api = b->session.lib.api;
    const struct clops_op *reduce = api->op_find("reduce"), *transpose = api->op_find("transpose");
    if (reduce == NULL || transpose == NULL) {
        fprintf(bench_stderr(),
                "clops-bench memory: this libclops has no reduce or transpose operator\n");
        return BENCH_EXIT_LOAD;
    }
    b->reduce = (clops_reduce_fn)reduce->entry;
    b->transpose = (clops_transpose_fn)transpose->entry;
    b->reduce_rows = (struct operator_rows){"reduce", "elements", run_reduce, verify_reduce,
                                            api->op_index(reduce)};
    b->transpose_rows = (struct operator_rows){"transpose", "matrix order", run_transpose,
                                               verify_transpose, api->op_index(transpose)};
    return BENCH_EXIT_OK;
}

static void run_all(struct bench *b)
{
    static const struct table_column columns[] = {
        {"operator", TABLE_LEFT},   {"case", TABLE_LEFT},     {"dtype", TABLE_LEFT},
        {"wall ms", TABLE_RIGHT},   {"wall %s", TABLE_RIGHT}, {"device ms", TABLE_RIGHT},
        {"device %s", TABLE_RIGHT},
    };
    bench_table_init(&b->table, columns, (int)(sizeof columns / sizeof columns[0]), BENCH_BYTES);
    const int gpu = b->session.device.type == CLOPS_DEVICE_GPU;
    int64_t rn = b->opt.reduce_n > 0 ? b->opt.reduce_n : INT64_C(1) << (gpu ? 26 : 22);
    int64_t tn = b->opt.transpose_n > 0 ? b->opt.transpose_n : gpu ? 8192 : 2048;
    /* Six reductions (four whole, two along an axis), three transposes. */
    bench_progress_plan(REDUCE_JOBS + 3);
    if (fits(b, 4.0 * (double)rn))
        bench_reduce(b, rn);
    else
        skip_row(b, "reduce", REDUCE_JOBS, "too large for the device");
    static const int32_t dtypes[3] = {CLOPS_F32, CLOPS_F64, CLOPS_F32};
    for (int k = 0; k < 3; k++) {
        if (fits(b, 2.0 * (double)(tn * tn * host_dtype_size(dtypes[k]))))
            bench_transpose(b, dtypes[k], tn, k == 2);
        else
            skip_row(b, "transpose", 1, "too large for the device");
    }
    bench_progress_end();
    printf("Memory-bound operators, operands on the device; wall = median of %d calls, device =\n"
           "mean kernel time; rate = bytes read (reduce) or read + written (transpose) / time.\n\n",
           b->session.opt.reps);
    bench_table_print(&b->table, stdout, 0);
    bench_table_free(&b->table);
}

int bench_memory_main(int argc, char **argv)
{
    static struct bench b;
    static const struct bench_command_line command_line = {
        .program = "clops-bench memory",
        .name = "memory",
        .help = help,
        .options = own_options,
        .default_reps = 20,
        .max_reps = 10000,
        .take = take_option,
        .area = &b.opt,
    };
    int code = bench_start(argc, argv, &command_line, &b.session);
    if (code >= 0)
        return code;
    if ((code = find_ops(&b)) != BENCH_EXIT_OK ||
        (code = bench_open_pool(&b.session)) != BENCH_EXIT_OK)
        return code;
    print_header(&b);
    run_all(&b);
    b.session.lib.api->pool_release(b.session.pool);
    return b.failures > 0 ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
}
