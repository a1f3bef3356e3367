/* bench_mandelbrot.c — clops-bench mandelbrot: iterations per second of the Mandelbrot operator on
 * the GPU (f32, 4096^2), with --peers beside the seed's own OpenCL kernel on the same device, and
 * of a deep f64 zoom shared between GPU and CPU (each alone, split). */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_opencl.h"
#include "mandelbrot_ref.h"
#include "table.h"
#include "util.h"

enum { MAX_DEVICES = 8, CHECK_ROWS = 8, MAX_REPS = 1000 };

static const char help[] =
    "Usage: clops-bench mandelbrot [--size N] [--max-iterations M] [--deep-size N]\n"
    "                              [--deep-max-iterations M] [--tile T] [--reps R]\n"
    "                              [--deep-on-device] [--config FILE] [--no-split]\n"
    "                              [--verbose] [--peers]\n"
    "\n"
    "1. GPU: an N x N view of the whole set (centre -0.5+0i, 3 wide), f32, M iterations at\n"
    "   most, split \"1\" (the GPU side only; on a pool without a GPU, its one device), counts\n"
    "   into a device buffer. Iterations/s counts the iterations each pixel really ran (the\n"
    "   sum of the counts), not N^2 M. With --peers, the seed's kernel too (the course's\n"
    "   mandel_ocl, storing the count: one work-item a pixel, f32), built with the OpenCL API\n"
    "   on the same device, same view and counts into a device buffer: the floor, results\n"
    "   impl \"seed\", and clops / seed.\n"
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
    "  -n, --size N                  image edge of part 1 (default 4096; 2048 on a pool\n"
    "                                without a GPU)\n"
    "  -m, --max-iterations M        part 1 (default 1024)\n"
    "  -d, --deep-size N             image edge of part 2 (default 2048; 1024 on a pool\n"
    "                                without a GPU: both parts in under a minute on\n"
    "                                2 cores)\n"
    "  -D, --deep-max-iterations M   part 2 (default 2048)\n"
    "  -e, --deep-on-device          part 2's counts into a device buffer (on the pool's\n"
    "                                primary device; another device's tiles cross through\n"
    "                                pinned host memory) instead of host memory\n"
    "  -t, --tile T                  tile edge passed to the operator (default 256)\n"
    "  -r, --reps R                  timed calls per measurement (default 3)\n"
    "  -c, --config FILE             create the pool from FILE instead of the defaults\n"
    "  -s, --no-split                skip part 2\n"
    "  -v, --verbose                 also print the library's info and debug messages\n"
    "  -h, --help                    print this help\n" BENCH_HELP_PROGRESS
        BENCH_HELP_RESULTS_OPTIONS "\n" BENCH_HELP_EXIT_STATUS;

/* mandelbrot's own options; the shared ones are in session.opt. */
struct options {
    int64_t size, deep_size; /* 0: the pool's defaults (default_sizes) */
    int64_t max_iterations, deep_max_iterations, tile;
    int split;
    int deep_on_device; /* part 2 into a device buffer */
};

struct view {
    double center_x, center_y, scale;
    int64_t max_iterations;
    int32_t precision; /* 0 f32, 1 f64 */
};

struct bench {
    struct bench_session session; /* the shared options, the library and the pool */
    struct options opt;
    clops_mandelbrot_fn mandelbrot;
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

/* Every value's usage error is "--<option>: value out of range:". */
static const char *take_option(void *area, int option, const char *arg)
{
    struct options *opt = area;
    switch (option) {
    case 'n': return bench_take_int(arg, 10, 1, 65536, &opt->size, "--size: value out of range:");
    case 'm':
        return bench_take_int(arg, 10, 1, INT64_C(1) << 31, &opt->max_iterations,
                              "--max-iterations: value out of range:");
    case 'd':
        return bench_take_int(arg, 10, 1, 65536, &opt->deep_size,
                              "--deep-size: value out of range:");
    case 'D':
        return bench_take_int(arg, 10, 1, INT64_C(1) << 31, &opt->deep_max_iterations,
                              "--deep-max-iterations: value out of range:");
    case 't': return bench_take_int(arg, 10, 1, 4096, &opt->tile, "--tile: value out of range:");
    case 's': opt->split = 0; break;
    case 'e': opt->deep_on_device = 1; break;
    }
    return NULL;
}

static const struct option own_options[] = {
    {"size", required_argument, NULL, 'n'},
    {"max-iterations", required_argument, NULL, 'm'},
    {"deep-size", required_argument, NULL, 'd'},
    {"deep-max-iterations", required_argument, NULL, 'D'},
    {"tile", required_argument, NULL, 't'},
    {"no-split", no_argument, NULL, 's'},
    {"deep-on-device", no_argument, NULL, 'e'},
    {0},
};

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

static int32_t call(const struct bench *b, const struct clops_tensor *counts, const struct view *v,
                    const char *split)
{
    return b->mandelbrot(b->session.pool, counts, NULL, v->center_x, v->center_y, v->scale,
                         v->max_iterations, v->precision, split, b->opt.tile);
}

static void read_device_stats(const struct bench *b, int64_t *tasks, int64_t *busy_ns)
{
    for (int32_t d = 0; d < b->device_count; d++) {
        struct clops_device_stats s = {.struct_size = sizeof s};
        b->session.lib.api->pool_device_stats(b->session.pool, d, &s);
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
    for (int r = 0; r < b->session.opt.reps; r++) {
        double start = host_now_ms();
        if (call(b, counts, v, m->split) != CLOPS_OK) {
            bench_report_error(&b->session, "mandelbrot");
            return -1;
        }
        ms[r] = host_now_ms() - start;
    }
    read_device_stats(b, tasks1, busy1);
    for (int32_t d = 0; d < b->device_count; d++) {
        m->tasks[d] = (double)(tasks1[d] - tasks0[d]) / b->session.opt.reps;
        m->busy_ms[d] = (double)(busy1[d] - busy0[d]) / 1e6 / b->session.opt.reps;
    }
    m->ms = host_median(ms, b->session.opt.reps);
    return 0;
}

/* Runs once into `counts` (downloaded to `host` when on the device), checks against the host,
 * then times. Returns what the progress line says of it. */
static const char *measure_checked(struct bench *b, const struct clops_tensor *counts,
                                   uint32_t *host, int64_t n, const struct view *v,
                                   struct measurement *m)
{
    m->ok = 0;
    if (call(b, counts, v, m->split) != CLOPS_OK) {
        bench_report_error(&b->session, "mandelbrot");
        return "FAILED: the call failed";
    }
    if (counts->buffer != NULL &&
        b->session.lib.api->buffer_download(counts->buffer, 0, host, n * n * 4) != CLOPS_OK) {
        bench_report_error(&b->session, "buffer_download");
        return "FAILED: the download failed";
    }
    int64_t wrong = check_rows(host, n, v);
    if (wrong > 0) {
        fprintf(bench_stderr(),
                "clops-bench mandelbrot: split %s: %lld pixels of %d rows differ from "
                "the host computation\n",
                m->split, (long long)wrong, CHECK_ROWS);
        return "FAILED: wrong counts";
    }
    m->iterations = sum_counts(host, n * n);
    if (time_calls(b, counts, v, m) != 0)
        return "FAILED: a timed call failed";
    m->ok = 1;
    return NULL;
}

/* One measurement, `what` naming it on its progress line. */
static void measure(struct bench *b, const struct clops_tensor *counts, uint32_t *host, int64_t n,
                    const struct view *v, struct measurement *m, const char *what)
{
    bench_progress_start("%s", what);
    const char *failed = measure_checked(b, counts, host, n, v, m);
    if (failed != NULL) {
        b->failures++;
        bench_progress_done("%s", failed);
    } else {
        bench_progress_done("%.2f ms, %.3g iterations/s", m->ms, m->iterations / (m->ms * 1e-3));
    }
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

/* A measurement's time, iterations and rate, or FAILED; whether it succeeded. */
static int measurement_cells(struct table *t, const struct measurement *m)
{
    if (!m->ok) {
        table_cell(t, "FAILED");
        return 0;
    }
    table_cell(t, "%.2f", m->ms);
    table_cell(t, "%.3g", m->iterations);
    table_cell(t, "%.3g", m->iterations / (m->ms * 1e-3));
    return 1;
}

static void add_row(const struct bench *b, struct table *t, const char *what,
                    const struct measurement *m)
{
    table_row(t);
    table_cell(t, "%s", what);
    table_cell(t, "%s", m->split);
    if (measurement_cells(t, m))
        device_cells(b, t, m);
}

/* One measurement as a row of the results file, n = the image edge; its device is the pool's
 * devices that ran tiles. */
static void record(const struct bench *b, const char *op, int32_t dtype, int64_t n,
                   const struct measurement *m)
{
    if (!m->ok)
        return;
    char devices[512] = "";
    for (int32_t d = 0; d < b->device_count; d++)
        if (m->tasks[d] > 0)
            host_append(devices, sizeof devices, " + ", b->devices[d].name);
    bench_record(&(struct bench_row){.op = op,
                                     .dtype = dtype,
                                     .impl = "clops",
                                     .n = n,
                                     .n_unit = "image edge",
                                     .ms = m->ms,
                                     .rate = m->iterations / (m->ms * 1e-3),
                                     .unit = "iterations/s",
                                     .device = devices});
}

static const struct table_column columns[] = {
    {"run", TABLE_LEFT},           {"split", TABLE_LEFT},
    {"ms", TABLE_RIGHT},           {"iterations", TABLE_RIGHT},
    {"iterations/s", TABLE_RIGHT}, {"per device and call: tiles, busy time", TABLE_LEFT},
};
enum { COLUMN_COUNT = (int)(sizeof columns / sizeof columns[0]) };

/* ---- the seed's kernel: the floor --------------------------------------------------------- */

/* The course's kernel as printed, except that it stores the count where the course stored a
 * colour, and that DIM, the image edge, is an argument. One work-item a pixel (dimension 0 the
 * column j, 1 the row i), no local memory; it writes 4 bytes a pixel. */
static const char seed_source[] =
    "__kernel void mandel_ocl(__global unsigned *img, float leftX, float xstep, float topY,\n"
    "                         float ystep, unsigned MAX_ITERATIONS, unsigned DIM) {\n"
    "    size_t i = get_global_id(1), j = get_global_id(0);\n"
    "    float xc = leftX + xstep * j;\n"
    "    float yc = topY - ystep * i;\n"
    "    float x = 0.0, y = 0.0; // Z = X + i*Y\n"
    "    unsigned iter;\n"
    "    for (iter = 0; iter < MAX_ITERATIONS; iter++) {\n"
    "        float x2 = x * x, y2 = y * y;\n"
    "        if (x2 + y2 > 4.0) break;\n"
    "        float twoxy = (float)2.0 * x * y;\n"
    "        x = x2 - y2 + xc;\n"
    "        y = twoxy + yc;\n"
    "    }\n"
    "    img[i * DIM + j] = iter;\n"
    "}\n";

/* The seed's kernel on its own context. */
struct seed {
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem img;
};

/* Returns 0, or -1 after naming the call and the error. */
static int seed_check(cl_int err, const char *call)
{
    if (err == CL_SUCCESS)
        return 0;
    fprintf(bench_stderr(), "clops-bench mandelbrot: the seed's kernel: %s: %s (%d)\n", call,
            cl_error_name(err), (int)err);
    return -1;
}

static void seed_print_build_log(const struct seed *s)
{
    size_t size = 0;
    if (clGetProgramBuildInfo(s->program, s->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) !=
            CL_SUCCESS ||
        size == 0)
        return;
    char *log = host_xcalloc(1, size + 1);
    if (clGetProgramBuildInfo(s->program, s->device, CL_PROGRAM_BUILD_LOG, size, log, NULL) ==
        CL_SUCCESS)
        fprintf(bench_stderr(), "%s\n", log);
    free(log);
}

/* Builds the kernel on `device` and its n x n image. Returns 0, or -1 after saying why. */
static int seed_open(struct seed *s, cl_device_id device, int64_t n)
{
    const char *source = seed_source;
    cl_int err;
    s->device = device;
    s->context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (seed_check(err, "clCreateContext") != 0)
        return -1;
    s->queue = clCreateCommandQueue(s->context, device, 0, &err);
    if (seed_check(err, "clCreateCommandQueue") != 0)
        return -1;
    s->program = clCreateProgramWithSource(s->context, 1, &source, NULL, &err);
    if (seed_check(err, "clCreateProgramWithSource") != 0)
        return -1;
    if (seed_check(clBuildProgram(s->program, 1, &device, "", NULL, NULL), "clBuildProgram") != 0) {
        seed_print_build_log(s);
        return -1;
    }
    s->kernel = clCreateKernel(s->program, "mandel_ocl", &err);
    if (seed_check(err, "clCreateKernel") != 0)
        return -1;
    s->img = clCreateBuffer(s->context, CL_MEM_WRITE_ONLY, (size_t)(n * n) * 4, NULL, &err);
    return seed_check(err, "clCreateBuffer");
}

static void seed_close(struct seed *s)
{
    if (s->img != NULL)
        clReleaseMemObject(s->img);
    if (s->kernel != NULL)
        clReleaseKernel(s->kernel);
    if (s->program != NULL)
        clReleaseProgram(s->program);
    if (s->queue != NULL)
        clReleaseCommandQueue(s->queue);
    if (s->context != NULL)
        clReleaseContext(s->context);
}

/* One image of the view `v` (square, n x n), waited for. The seed's xc = leftX + xstep j is the
 * left edge of pixel j: leftX is moved by half a pixel so that it samples the pixels' centres,
 * as the operator does. Returns 0, or -1. */
static int seed_run(const struct seed *s, int64_t n, const struct view *v)
{
    const double step = v->scale / (double)n;
    const cl_float left = (cl_float)(v->center_x - v->scale / 2 + step / 2);
    const cl_float top = (cl_float)(v->center_y + v->scale / 2 - step / 2);
    const cl_float xstep = (cl_float)step, ystep = (cl_float)step;
    const cl_uint max_iterations = (cl_uint)v->max_iterations, dim = (cl_uint)n;
    const struct {
        size_t size;
        const void *value;
    } args[] = {{sizeof s->img, &s->img}, {sizeof left, &left},
                {sizeof xstep, &xstep},   {sizeof top, &top},
                {sizeof ystep, &ystep},   {sizeof max_iterations, &max_iterations},
                {sizeof dim, &dim}};
    for (cl_uint a = 0; a < (cl_uint)(sizeof args / sizeof args[0]); a++)
        if (seed_check(clSetKernelArg(s->kernel, a, args[a].size, args[a].value),
                       "clSetKernelArg") != 0)
            return -1;
    const size_t global[2] = {(size_t)n, (size_t)n};
    if (seed_check(
            clEnqueueNDRangeKernel(s->queue, s->kernel, 2, NULL, global, NULL, 0, NULL, NULL),
            "clEnqueueNDRangeKernel") != 0)
        return -1;
    return seed_check(clFinish(s->queue), "clFinish");
}

/* The device part 1 runs on: the pool's first GPU (split "1"), else its first device. */
static const struct clops_device_info *gpu_side(const struct bench *b)
{
    for (int32_t d = 0; d < b->device_count; d++)
        if (b->devices[d].type == CLOPS_DEVICE_GPU)
            return &b->devices[d];
    return &b->devices[0];
}

/* The seed's kernel on part 1's view: one run read back (its counts against clops', `ours`:
 * *equal, the fraction of the pixels with the same count), then the median of R runs. */
static void measure_seed(struct bench *b, int64_t n, const struct view *v, const uint32_t *ours,
                         struct measurement *m, double *equal)
{
    struct seed s = {0};
    uint32_t *counts = host_xmalloc((size_t)(n * n) * 4);
    double ms[MAX_REPS];
    cl_device_id device = bench_find_cl_device(gpu_side(b));
    m->ok = 0;
    bench_progress_start("whole set %lld^2 f32, the seed's kernel", (long long)n);
    if (device == NULL)
        fprintf(bench_stderr(),
                "clops-bench mandelbrot: no OpenCL device named '%s' for the seed\n",
                gpu_side(b)->name);
    if (device == NULL || seed_open(&s, device, n) != 0 || seed_run(&s, n, v) != 0 ||
        seed_check(clEnqueueReadBuffer(s.queue, s.img, CL_TRUE, 0, (size_t)(n * n) * 4, counts, 0,
                                       NULL, NULL),
                   "clEnqueueReadBuffer") != 0) {
        b->failures++;
        bench_progress_done("FAILED (see above)");
        seed_close(&s);
        free(counts);
        return;
    }
    int64_t same = 0;
    for (int64_t k = 0; k < n * n; k++)
        same += counts[k] == ours[k];
    *equal = (double)same / (double)(n * n);
    m->iterations = sum_counts(counts, n * n);
    int r = 0;
    for (; r < b->session.opt.reps; r++) {
        double start = host_now_ms();
        if (seed_run(&s, n, v) != 0)
            break;
        ms[r] = host_now_ms() - start;
    }
    if (r == b->session.opt.reps) {
        m->ms = host_median(ms, r);
        m->ok = 1;
        bench_progress_done("%.2f ms, %.3g iterations/s", m->ms, m->iterations / (m->ms * 1e-3));
    } else {
        b->failures++;
        bench_progress_done("FAILED (see above)");
    }
    seed_close(&s);
    free(counts);
}

static void add_seed_row(const struct bench *b, struct table *t, const struct measurement *m)
{
    table_row(t);
    table_cell(t, "the seed's kernel");
    table_cell(t, "-");
    if (measurement_cells(t, m))
        table_cell(t, "%s, through the OpenCL API", gpu_side(b)->name);
}

/* ---- part 1: the GPU ---------------------------------------------------------------------- */

static void run_gpu(struct bench *b)
{
    const int64_t n = b->opt.size;
    const struct view v = {-0.5, 0.0, 3.0, b->opt.max_iterations, 0};
    struct clops_buffer *buffer = NULL;
    uint32_t *host = host_xmalloc((size_t)(n * n) * 4);
    struct measurement m = {.split = "1"};
    char what[96];
    snprintf(what, sizeof what, "%lld^2 f32 maxit %lld", (long long)n, (long long)v.max_iterations);
    bench_progress_plan(b->session.opt.peers ? 2 : 1);
    if (b->session.lib.api->buffer_create(b->session.pool, n * n * 4, &buffer) != CLOPS_OK) {
        bench_report_error(&b->session, "buffer_create");
        b->failures++;
        bench_progress_plan(-1);
    } else {
        struct clops_tensor counts = {
            .buffer = buffer, .dtype = CLOPS_U32, .rank = 2, .shape = {n, n}, .strides = {n, 1}};
        char whole[128];
        snprintf(whole, sizeof whole, "whole set %s", what);
        measure(b, &counts, host, n, &v, &m, whole);
        record(b, "whole set", CLOPS_F32, n, &m);
    }
    struct measurement seed = {.split = "-"};
    double equal = 0.0;
    if (b->session.opt.peers && !m.ok)
        bench_progress_plan(-1); /* the seed is compared with clops' counts */
    if (b->session.opt.peers && m.ok) {
        measure_seed(b, n, &v, host, &seed, &equal);
        if (seed.ok)
            bench_record(&(struct bench_row){.op = "whole set",
                                             .dtype = CLOPS_F32,
                                             .impl = "seed",
                                             .n = n,
                                             .n_unit = "image edge",
                                             .ms = seed.ms,
                                             .rate = seed.iterations / (seed.ms * 1e-3),
                                             .unit = "iterations/s",
                                             .device = gpu_side(b)->name});
    }
    struct table t;
    table_init(&t, columns, COLUMN_COUNT);
    add_row(b, &t, what, &m);
    if (b->session.opt.peers && m.ok)
        add_seed_row(b, &t, &seed);
    bench_progress_end();
    printf("1. Whole set, f32, counts into a device buffer, tile %lld; median of %d calls:\n\n",
           (long long)b->opt.tile, b->session.opt.reps);
    table_print(&t, stdout, 0);
    table_free(&t);
    if (seed.ok)
        printf("\nclops / seed: %.2f (iterations/s); the seed's counts equal clops' at %.2f%% of "
               "the pixels\n",
               (m.iterations / m.ms) / (seed.iterations / seed.ms), 100.0 * equal);
    b->session.lib.api->buffer_release(buffer);
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
    struct clops_buffer *buffer = NULL; /* --deep-on-device: the counts of every run */
    if (b->opt.deep_on_device &&
        b->session.lib.api->buffer_create(b->session.pool, n * n * 4, &buffer) != CLOPS_OK) {
        bench_report_error(&b->session, "buffer_create");
        b->failures++;
        return;
    }
    bench_progress_plan(3);
    for (int k = 0; k < 3; k++) {
        host[k] = host_xcalloc((size_t)(n * n), 4);
        struct clops_tensor counts = {.data = buffer != NULL ? NULL : host[k],
                                      .buffer = buffer,
                                      .dtype = CLOPS_U32,
                                      .rank = 2,
                                      .shape = {n, n},
                                      .strides = {n, 1}};
        char what[128];
        snprintf(what, sizeof what, "deep zoom %lld^2 f64 maxit %lld, %s (split %s)", (long long)n,
                 (long long)v.max_iterations, names[k], m[k].split);
        measure(b, &counts, host[k], n, &v, &m[k], what);
    }
    for (int k = 1; k < 3; k++)
        if (m[0].ok && m[k].ok && memcmp(host[0], host[k], (size_t)(n * n) * 4) != 0) {
            fprintf(bench_stderr(), "clops-bench mandelbrot: split %s differs from split 1\n",
                    m[k].split);
            m[k].ok = 0;
            b->failures++;
        }
    struct table t;
    table_init(&t, columns, COLUMN_COUNT);
    for (int k = 0; k < 3; k++) {
        add_row(b, &t, names[k], &m[k]);
        char op[64];
        snprintf(op, sizeof op, "deep zoom %s", names[k]);
        record(b, op, CLOPS_F64, n, &m[k]);
    }
    bench_progress_end();
    printf("\n2. Deep zoom, %lld^2 f64, maxit %lld, counts into %s, tile %lld; median of %d "
           "calls:\n\n",
           (long long)n, (long long)v.max_iterations,
           buffer != NULL ? "a device buffer" : "host memory", (long long)b->opt.tile,
           b->session.opt.reps);
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
    if (buffer != NULL)
        b->session.lib.api->buffer_release(buffer);
}

/* ---- main --------------------------------------------------------------------------------- */

/* The image edges not given: a GPU's, or on a pool without one (a CPU device alone) a quarter
 * of the pixels: both parts take 30 to 45 s on 2 cores, 2.3 minutes with a GPU's edges. */
static void default_sizes(struct bench *b)
{
    const int gpu = has_type(b, CLOPS_DEVICE_GPU);
    if (b->opt.size == 0)
        b->opt.size = gpu ? 4096 : 2048;
    if (b->opt.deep_size == 0)
        b->opt.deep_size = gpu ? 2048 : 1024;
}

/* Reads the pool's devices and prints the library line and one line per device. */
static void describe_pool(struct bench *b)
{
    const struct clops_api *api = b->session.lib.api;
    b->device_count = api->pool_device_count(b->session.pool);
    if (b->device_count > MAX_DEVICES)
        b->device_count = MAX_DEVICES;
    bench_print_library(&b->session, "clops-bench mandelbrot");
    printf("pool%s%s:\n", b->session.opt.config != NULL ? " from " : " (defaults)",
           b->session.opt.config != NULL ? b->session.opt.config : "");
    for (int32_t d = 0; d < b->device_count; d++) {
        b->devices[d].struct_size = sizeof b->devices[d];
        api->pool_device_info(b->session.pool, d, &b->devices[d]);
        printf("  device %d: %s (%s, %s, %d CUs)\n", (int)d, b->devices[d].name,
               b->devices[d].type == CLOPS_DEVICE_GPU   ? "GPU"
               : b->devices[d].type == CLOPS_DEVICE_CPU ? "CPU"
                                                        : "other",
               b->devices[d].platform, b->devices[d].compute_units);
    }
    printf("\n");
}

int bench_mandelbrot_main(int argc, char **argv)
{
    static struct bench b = {
        .opt = {.max_iterations = 1024, .deep_max_iterations = 2048, .tile = 256, .split = 1}};
    static const struct bench_command_line command_line = {
        .program = "clops-bench mandelbrot",
        .name = "mandelbrot",
        .help = help,
        .options = own_options,
        .default_reps = 3,
        .max_reps = MAX_REPS,
        .reps_error = "--reps: value out of range:",
        .take = take_option,
        .area = &b.opt,
    };
    int code = bench_start(argc, argv, &command_line, &b.session);
    if (code >= 0)
        return code;
    const struct clops_op *op = b.session.lib.api->op_find("mandelbrot");
    if (op == NULL || !CLOPS_API_HAS(b.session.lib.api, pool_device_stats)) {
        fprintf(bench_stderr(),
                "clops-bench mandelbrot: this libclops has no mandelbrot operator or no "
                "pool_device_stats\n");
        return BENCH_EXIT_LOAD;
    }
    b.mandelbrot = (clops_mandelbrot_fn)op->entry;
    if ((code = bench_create_pool(&b.session)) != BENCH_EXIT_OK)
        return code;
    describe_pool(&b);
    default_sizes(&b);
    run_gpu(&b);
    if (b.opt.split)
        run_split(&b);
    b.session.lib.api->pool_release(b.session.pool);
    return b.failures > 0 ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
}
