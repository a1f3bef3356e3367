/* bench_mandelbrot.c — clops-bench mandelbrot: iterations per second of the Mandelbrot operator on
 * the GPU (f32, 4096^2), and of a deep f64 zoom shared between GPU and CPU (each alone, split). */
#include "bench.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "mandelbrot_ref.h"
#include "table.h"
#include "util.h"

#ifndef CLOPS_BUILD_LIBRARY
#define CLOPS_BUILD_LIBRARY NULL
#endif

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_LOAD = 3, EXIT_CONFIG = 4 };
enum { MAX_DEVICES = 8, CHECK_ROWS = 8, MAX_REPS = 1000 };

static const char help[] =
    "Usage: clops-bench mandelbrot [--size N] [--max-iterations M] [--deep-size N]\n"
    "                              [--deep-max-iterations M] [--tile T] [--reps R]\n"
    "                              [--config FILE] [--no-split] [--verbose]\n"
    "\n"
    "1. GPU: an N x N view of the whole set (centre -0.5+0i, 3 wide), f32, M iterations at\n"
    "   most, split \"1\" (the GPU side only; on a pool without a GPU, its one device), counts\n"
    "   into a device buffer. Iterations/s counts the iterations each pixel really ran (the\n"
    "   sum of the counts), not N^2 M.\n"
    "2. Split: a deep zoom (1e-10 wide at -0.743643887037151+0.131825904205330i), f64, into\n"
    "   host memory, with split \"1\" (GPU alone), \"0\" (CPU alone) and \"dynamic\" on the pool\n"
    "   of --config (e.g. configs/gpu_cpu.cfg: a GPU and the CPU device), and the ratio of the\n"
    "   split's throughput to the sum of the two alone (1.0: the split loses nothing). The\n"
    "   tiles and busy time of each device, per call, come from pool_device_stats.\n"
    "\n"
    "Every configuration is first run once and checked: the counts of 8 rows against a host\n"
    "computation of the same steps (they must be equal to the bit), and the three split\n"
    "runs against each other (equal to the bit). A configuration that fails is not timed.\n"
    "Times are the median of R calls.\n"
    "\n"
    "Options:\n"
    "  -n, --size N                  image edge of part 1 (default 4096)\n"
    "  -m, --max-iterations M        part 1 (default 1024)\n"
    "  -d, --deep-size N             image edge of part 2 (default 2048)\n"
    "  -D, --deep-max-iterations M   part 2 (default 2048)\n"
    "  -t, --tile T                  tile edge passed to the operator (default 256)\n"
    "  -r, --reps R                  timed calls per measurement (default 3)\n"
    "  -c, --config FILE             create the pool from FILE instead of the defaults\n"
    "  -s, --no-split                skip part 2\n"
    "  -v, --verbose                 also print the library's info and debug messages\n"
    "  -h, --help                    print this help\n"
    "\n"
    "Exit status: 0 ok; 1 a call failed or a result was wrong; 2 usage error; 3 libclops could\n"
    "not be loaded; 4 configuration error.\n";

struct options {
    int64_t size, max_iterations, deep_size, deep_max_iterations, tile;
    int reps, split, verbose;
    const char *config;
};

struct view {
    double center_x, center_y, scale;
    int64_t max_iterations;
    int32_t precision; /* 0 f32, 1 f64 */
};

struct bench {
    struct options opt;
    struct host_library lib;
    clops_mandelbrot_fn mandelbrot;
    struct clops_pool *pool;
    int32_t device_count;
    struct clops_device_info devices[MAX_DEVICES];
    int failures;
};

/* One measured configuration. */
struct measurement {
    const char *split;
    double ms;                   /* median per call */
    double iterations;           /* summed over the image */
    double tasks[MAX_DEVICES];   /* tiles per call (a mean: dynamic runs vary) */
    double busy_ms[MAX_DEVICES]; /* per call */
    int ok;
};

/* ---- command line ------------------------------------------------------------------------- */

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "clops-bench mandelbrot: %s '%s'\nTry 'clops-bench mandelbrot --help'.\n", what,
            arg);
    return EXIT_USAGE;
}

static int parse_int(const char *text, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Returns -1 to go on, or an exit code. */
static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option options[] = {
        {"size", required_argument, NULL, 'n'},
        {"max-iterations", required_argument, NULL, 'm'},
        {"deep-size", required_argument, NULL, 'd'},
        {"deep-max-iterations", required_argument, NULL, 'D'},
        {"tile", required_argument, NULL, 't'},
        {"reps", required_argument, NULL, 'r'},
        {"config", required_argument, NULL, 'c'},
        {"no-split", no_argument, NULL, 's'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    *opt = (struct options){4096, 1024, 2048, 2048, 256, 3, 1, 0, NULL};
    opterr = 0;
    optind = 1;
    int c;
    int64_t reps = 3;
    while ((c = getopt_long(argc, argv, ":n:m:d:D:t:r:c:svh", options, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'n': bad = parse_int(optarg, 1, 65536, &opt->size); break;
        case 'm': bad = parse_int(optarg, 1, INT64_C(1) << 31, &opt->max_iterations); break;
        case 'd': bad = parse_int(optarg, 1, 65536, &opt->deep_size); break;
        case 'D': bad = parse_int(optarg, 1, INT64_C(1) << 31, &opt->deep_max_iterations); break;
        case 't': bad = parse_int(optarg, 1, 4096, &opt->tile); break;
        case 'r': bad = parse_int(optarg, 1, MAX_REPS, &reps); break;
        case 'c': opt->config = optarg; break;
        case 's': opt->split = 0; break;
        case 'v': opt->verbose = 1; break;
        case 'h': fputs(help, stdout); return EXIT_OK;
        case ':': return usage_error("option needs a value:", argv[optind - 1]);
        default: return usage_error("unknown option", argv[optind - 1]);
        }
        if (bad) {
            char what[64] = "value out of range:";
            for (const struct option *o = options; o->name != NULL; o++)
                if (o->val == c)
                    snprintf(what, sizeof what, "--%s: value out of range:", o->name);
            return usage_error(what, optarg);
        }
    }
    opt->reps = (int)reps;
    if (optind < argc)
        return usage_error("unexpected argument", argv[optind]);
    return -1;
}

/* ---- the host reference ------------------------------------------------------------------- */

/* Pixels of CHECK_ROWS evenly spaced rows that differ from hosts/common/mandelbrot_ref.h, the
 * operator's documented steps: the GPU and CPU results must equal it to the bit (the project
 * compiles with -std=c11, where GCC does not contract a*b+c, as the header requires). */
static int64_t check_rows(const uint32_t *counts, int64_t n, const struct view *v)
{
    int64_t wrong = 0;
    for (int r = 0; r < CHECK_ROWS; r++) {
        int64_t i = (n - 1) * r / (CHECK_ROWS - 1);
        for (int64_t j = 0; j < n; j++) {
            const struct mandel_ref_view rv = {v->center_x, v->center_y, v->scale,
                                               (uint32_t)v->max_iterations, v->precision};
            const uint32_t want = mandel_ref_count(&rv, i, j, n, n);
            wrong += counts[i * n + j] != want;
        }
    }
    return wrong;
}

static double sum_counts(const uint32_t *counts, int64_t count)
{
    double sum = 0.0;
    for (int64_t k = 0; k < count; k++)
        sum += counts[k];
    return sum;
}

/* ---- calls and timing --------------------------------------------------------------------- */

static void report_error(const struct bench *b, const char *what)
{
    fprintf(stderr, "clops-bench mandelbrot: %s: %s\n", what, b->lib.api->last_error());
}

static int32_t call(const struct bench *b, const struct clops_tensor *counts, const struct view *v,
                    const char *split)
{
    return b->mandelbrot(b->pool, counts, NULL, v->center_x, v->center_y, v->scale,
                         v->max_iterations, v->precision, split, b->opt.tile);
}

static int compare_doubles(const void *x, const void *y)
{
    double a = *(const double *)x, c = *(const double *)y;
    return (a > c) - (a < c);
}

static void read_device_stats(const struct bench *b, int64_t *tasks, int64_t *busy_ns)
{
    for (int32_t d = 0; d < b->device_count; d++) {
        struct clops_device_stats s = {.struct_size = sizeof s};
        b->lib.api->pool_device_stats(b->pool, d, &s);
        tasks[d] = s.tasks;
        busy_ns[d] = s.busy_ns;
    }
}

/* The median of R calls, and each device's tiles and busy time per call. */
static int time_calls(struct bench *b, const struct clops_tensor *counts, const struct view *v,
                      struct measurement *m)
{
    double ms[MAX_REPS];
    int64_t tasks0[MAX_DEVICES], busy0[MAX_DEVICES], tasks1[MAX_DEVICES], busy1[MAX_DEVICES];
    read_device_stats(b, tasks0, busy0);
    for (int r = 0; r < b->opt.reps; r++) {
        double start = host_now_ms();
        if (call(b, counts, v, m->split) != CLOPS_OK) {
            report_error(b, "mandelbrot");
            return -1;
        }
        ms[r] = host_now_ms() - start;
    }
    read_device_stats(b, tasks1, busy1);
    for (int32_t d = 0; d < b->device_count; d++) {
        m->tasks[d] = (double)(tasks1[d] - tasks0[d]) / b->opt.reps;
        m->busy_ms[d] = (double)(busy1[d] - busy0[d]) / 1e6 / b->opt.reps;
    }
    qsort(ms, (size_t)b->opt.reps, sizeof ms[0], compare_doubles);
    m->ms = b->opt.reps % 2 ? ms[b->opt.reps / 2]
                            : 0.5 * (ms[b->opt.reps / 2 - 1] + ms[b->opt.reps / 2]);
    return 0;
}

/* Runs once into `counts` (downloaded to `host` when on the device), checks against the host,
 * then times. */
static void measure(struct bench *b, const struct clops_tensor *counts, uint32_t *host, int64_t n,
                    const struct view *v, struct measurement *m)
{
    m->ok = 0;
    if (call(b, counts, v, m->split) != CLOPS_OK) {
        report_error(b, "mandelbrot");
        b->failures++;
        return;
    }
    if (counts->buffer != NULL &&
        b->lib.api->buffer_download(counts->buffer, 0, host, n * n * 4) != CLOPS_OK) {
        report_error(b, "buffer_download");
        b->failures++;
        return;
    }
    int64_t wrong = check_rows(host, n, v);
    if (wrong > 0) {
        fprintf(stderr,
                "clops-bench mandelbrot: split %s: %lld pixels of %d rows differ from "
                "the host computation\n",
                m->split, (long long)wrong, CHECK_ROWS);
        b->failures++;
        return;
    }
    m->iterations = sum_counts(host, n * n);
    if (time_calls(b, counts, v, m) != 0) {
        b->failures++;
        return;
    }
    m->ok = 1;
}

static void device_cells(const struct bench *b, struct table *t, const struct measurement *m)
{
    char text[512] = "";
    for (int32_t d = 0; d < b->device_count; d++) {
        char item[192];
        snprintf(item, sizeof item, "%d %s: %.4g tiles %.1f ms", (int)d, b->devices[d].name,
                 m->tasks[d], m->busy_ms[d]);
        host_append(text, sizeof text, "; ", item);
    }
    table_cell(t, "%s", text);
}

static void add_row(const struct bench *b, struct table *t, const char *what,
                    const struct measurement *m)
{
    table_row(t);
    table_cell(t, "%s", what);
    table_cell(t, "%s", m->split);
    if (!m->ok) {
        table_cell(t, "FAILED");
        return;
    }
    table_cell(t, "%.2f", m->ms);
    table_cell(t, "%.3g", m->iterations);
    table_cell(t, "%.3g", m->iterations / (m->ms * 1e-3));
    device_cells(b, t, m);
}

static const struct table_column columns[] = {
    {"run", TABLE_LEFT},           {"split", TABLE_LEFT},
    {"ms", TABLE_RIGHT},           {"iterations", TABLE_RIGHT},
    {"iterations/s", TABLE_RIGHT}, {"per device and call: tiles, busy time", TABLE_LEFT},
};
enum { COLUMN_COUNT = (int)(sizeof columns / sizeof columns[0]) };

/* ---- part 1: the GPU ---------------------------------------------------------------------- */

static void run_gpu(struct bench *b)
{
    const int64_t n = b->opt.size;
    const struct view v = {-0.5, 0.0, 3.0, b->opt.max_iterations, 0};
    struct clops_buffer *buffer = NULL;
    uint32_t *host = host_xmalloc((size_t)(n * n) * 4);
    struct measurement m = {.split = "1"};
    if (b->lib.api->buffer_create(b->pool, n * n * 4, &buffer) != CLOPS_OK) {
        report_error(b, "buffer_create");
        b->failures++;
    } else {
        struct clops_tensor counts = {
            .buffer = buffer, .dtype = CLOPS_U32, .rank = 2, .shape = {n, n}, .strides = {n, 1}};
        measure(b, &counts, host, n, &v, &m);
    }
    struct table t;
    table_init(&t, columns, COLUMN_COUNT);
    char what[96];
    snprintf(what, sizeof what, "%lld^2 f32 maxit %lld", (long long)n, (long long)v.max_iterations);
    add_row(b, &t, what, &m);
    printf("1. Whole set, f32, counts into a device buffer, tile %lld; median of %d calls:\n\n",
           (long long)b->opt.tile, b->opt.reps);
    table_print(&t, stdout, 0);
    table_free(&t);
    b->lib.api->buffer_release(buffer);
    free(host);
}

/* ---- part 2: GPU + CPU -------------------------------------------------------------------- */

static int has_type(const struct bench *b, int32_t type)
{
    for (int32_t d = 0; d < b->device_count; d++)
        if (b->devices[d].type == type)
            return 1;
    return 0;
}

static void run_split(struct bench *b)
{
    const int64_t n = b->opt.deep_size;
    const struct view v = {-0.743643887037151, 0.131825904205330, 1e-10, b->opt.deep_max_iterations,
                           1};
    struct measurement m[3] = {{.split = "1"}, {.split = "0"}, {.split = "dynamic"}};
    static const char *const names[3] = {"GPU alone", "CPU alone", "GPU + CPU"};
    uint32_t *host[3];
    for (int k = 0; k < 3; k++) {
        host[k] = host_xcalloc((size_t)(n * n), 4);
        struct clops_tensor counts = {
            .data = host[k], .dtype = CLOPS_U32, .rank = 2, .shape = {n, n}, .strides = {n, 1}};
        measure(b, &counts, host[k], n, &v, &m[k]);
    }
    for (int k = 1; k < 3; k++)
        if (m[0].ok && m[k].ok && memcmp(host[0], host[k], (size_t)(n * n) * 4) != 0) {
            fprintf(stderr, "clops-bench mandelbrot: split %s differs from split 1\n", m[k].split);
            m[k].ok = 0;
            b->failures++;
        }
    struct table t;
    table_init(&t, columns, COLUMN_COUNT);
    for (int k = 0; k < 3; k++)
        add_row(b, &t, names[k], &m[k]);
    printf("\n2. Deep zoom, %lld^2 f64, maxit %lld, counts into host memory, tile %lld; median "
           "of %d calls:\n\n",
           (long long)n, (long long)v.max_iterations, (long long)b->opt.tile, b->opt.reps);
    table_print(&t, stdout, 0);
    table_free(&t);
    if (m[0].ok && m[1].ok && m[2].ok) {
        double alone = m[0].iterations / m[0].ms + m[1].iterations / m[1].ms;
        printf("\nsplit / (GPU alone + CPU alone) throughput: %.3f\n",
               (m[2].iterations / m[2].ms) / alone);
    }
    if (b->device_count < 2 || !has_type(b, CLOPS_DEVICE_GPU))
        printf("\nnote: this pool has %d device(s)%s; for a real GPU + CPU split pass "
               "--config configs/gpu_cpu.cfg on a machine with a GPU and PoCL.\n",
               (int)b->device_count, has_type(b, CLOPS_DEVICE_GPU) ? "" : " and no GPU");
    for (int k = 0; k < 3; k++)
        free(host[k]);
}

/* ---- main --------------------------------------------------------------------------------- */

static int open_pool(struct bench *b)
{
    const struct clops_api *api = b->lib.api;
    int32_t status = b->opt.config != NULL ? api->pool_create_from_file(b->opt.config, &b->pool)
                                           : api->pool_create_default(&b->pool);
    if (status != CLOPS_OK) {
        report_error(b, "pool");
        return status == CLOPS_ERR_CONFIG || status == CLOPS_ERR_IO ? EXIT_CONFIG : EXIT_FAILED;
    }
    b->device_count = api->pool_device_count(b->pool);
    if (b->device_count > MAX_DEVICES)
        b->device_count = MAX_DEVICES;
    printf("clops-bench mandelbrot, libclops %s from %s\npool%s%s:\n", api->version(), b->lib.path,
           b->opt.config != NULL ? " from " : " (defaults)",
           b->opt.config != NULL ? b->opt.config : "");
    for (int32_t d = 0; d < b->device_count; d++) {
        b->devices[d].struct_size = sizeof b->devices[d];
        api->pool_device_info(b->pool, d, &b->devices[d]);
        printf("  device %d: %s (%s, %s, %d CUs)\n", (int)d, b->devices[d].name,
               b->devices[d].type == CLOPS_DEVICE_GPU   ? "GPU"
               : b->devices[d].type == CLOPS_DEVICE_CPU ? "CPU"
                                                        : "other",
               b->devices[d].platform, b->devices[d].compute_units);
    }
    printf("\n");
    return EXIT_OK;
}

int bench_mandelbrot_main(int argc, char **argv)
{
    /* libclops is never dlclose()d: OpenCL drivers are not safe to unload. */
    static struct bench b;
    host_program_name = "clops-bench";
    int code = parse_options(argc, argv, &b.opt);
    if (code >= 0)
        return code;
    char why[8192];
    if (host_library_load(&b.lib, CLOPS_BUILD_LIBRARY, why, sizeof why) != 0) {
        fprintf(stderr, "clops-bench mandelbrot: cannot load libclops: %s\n", why);
        return EXIT_LOAD;
    }
    host_library_log_to_stderr(&b.lib, b.opt.verbose);
    const struct clops_op *op = b.lib.api->op_find("mandelbrot");
    if (op == NULL || !CLOPS_API_HAS(b.lib.api, pool_device_stats)) {
        fprintf(stderr, "clops-bench mandelbrot: this libclops has no mandelbrot operator or no "
                        "pool_device_stats\n");
        return EXIT_LOAD;
    }
    b.mandelbrot = (clops_mandelbrot_fn)op->entry;
    if ((code = open_pool(&b)) != EXIT_OK)
        return code;
    run_gpu(&b);
    if (b.opt.split)
        run_split(&b);
    b.lib.api->pool_release(b.pool);
    return b.failures > 0 ? EXIT_FAILED : EXIT_OK;
}
