/* bench_overlap.c — `clops-bench overlap`: what the non-blocking calls of ABI 1.4 buy. N GEMMs on
 * host operands made one after the other against the same calls submitted to two streams, and
 * the time submit itself takes (a call refused by its checks, and a small gemm). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "bench_common.h"
#include "table.h"
#include "util.h"

enum {
    OVERLAP_MAX_SIZES = 16,
    STREAMS = 2,
    /* Submits between two waits in the submit-overhead runs: the stream's backlog stays short,
     * and the waits and releases stay out of the timed region. */
    SUBMIT_BATCH = 64,
    SMALL_N = 16, /* the small gemm's order */
    CHECK_ROWS = 3
};

/* Issue 23's targets, printed with the tables they judge. */
#define TARGET_SPEEDUP 1.5
#define TARGET_SUBMIT_US 10.0

static const char help[] =
    "Usage: clops-bench overlap [--sizes N,N,...] [--calls C] [--submit-calls M] [--reps R]\n"
    "                           [--config FILE] [--verbose]\n"
    "\n"
    "Measures the non-blocking calls of ABI 1.4 (streams, submit, events) on the pool's\n"
    "primary device, in two parts:\n"
    "  overlap  C GEMM calls C = A B, f32, N x N, with host operands (each call uploads A and B,\n"
    "           computes and downloads C; every call has its own matrices): made one after the\n"
    "           other with the typed entry (sequential), and submitted alternately to two\n"
    "           streams and waited for at the end (two streams). Each time is the median of R\n"
    "           rounds of the C calls; speedup = sequential / two streams. The first timed\n"
    "           round's results are checked: the sequential C against the host's product on\n"
    "           3 rows, and the two streams' C against the sequential C (max rel diff <= 1e-5);\n"
    "           a size that fails is reported and its figures are not printed. Each size\n"
    "           runs twice: A and B in pageable memory (staged through clops' pinned blocks),\n"
    "           then registered with host_register (ABI 1.4; uploaded by DMA straight from\n"
    "           them) — `register ms` is the time of registering them.\n"
    "  submit   the time of the submit call alone (the clock read around it), M times: a gemm\n"
    "           refused by its checks (A is 16 x 16, B 17 x 16: K differs), and a 16 x 16 f32\n"
    "           gemm on host operands (its events waited for and released every 64 submits,\n"
    "           outside the timed region); median and 90th percentile in microseconds, beside\n"
    "           the whole synchronous call of the same gemm.\n"
    "Targets (issue 23, on the H200): speedup >= 1.5 at N = 4096; submit <= 10 us (median).\n"
    "--csv's rows are the overlap part's (op \"gemm host sequential\" and \"gemm host two\n"
    "streams\", \"registered\" added for the registered runs): time_ms is a batch's time over\n"
    "C, the rate C 2 N^3 / batch time.\n"
    "\n"
    "Options:\n"
    "  -s, --sizes LIST       matrix orders, comma-separated (default 1024,4096 on a GPU,\n"
    "                         128,256 on a CPU device)\n"
    "  -C, --calls C          GEMM calls per round (default 8)\n"
    "  -m, --submit-calls M   timed submits per case of the submit part (default 10000; 0\n"
    "                         leaves the part out)\n"
    "  -r, --reps R           rounds of the overlap part (default 3)\n"
    "  -c, --config FILE      create the pool from FILE instead of the built-in defaults\n"
    "  -v, --verbose          also print the library's info and debug messages\n"
    "  -h, --help             print this help\n" BENCH_HELP_PROGRESS BENCH_HELP_RESULTS_OPTIONS "\n"
    "Exit status: 0 ok; 1 a call failed or a result was wrong; 2 usage error; 3 libclops could\n"
    "not be loaded, or has no streams (ABI 1.4); 4 configuration error;\n" BENCH_HELP_EXIT_RESULTS;

/* overlap's own options; the shared ones are in session.opt. */
struct overlap_options {
    int64_t sizes[OVERLAP_MAX_SIZES];
    int size_count;
    int64_t calls;
    int64_t submit_calls;
};

struct overlap_bench {
    struct bench_session session; /* the shared options, the library, the pool and its device */
    struct overlap_options opt;
    const struct clops_api *api; /* session.lib.api */
    const struct clops_op *gemm;
    int32_t gemm_index;
    struct clops_stream *streams[STREAMS];
    int failures;
};

/* ---- command line ------------------------------------------------------------------------- */

static const char *take_option(void *area, int option, const char *arg)
{
    struct overlap_options *opt = area;
    switch (option) {
    case 's': return bench_parse_sizes(arg, opt->sizes, OVERLAP_MAX_SIZES, &opt->size_count);
    case 'C': return bench_take_int(arg, 10, 1, 1024, &opt->calls, "--calls wants 1 to 1024, not");
    case 'm':
        return bench_take_int(arg, 10, 0, 10000000, &opt->submit_calls,
                              "--submit-calls wants 0 to 10000000, not");
    }
    return NULL;
}

static const struct option own_options[] = {
    {"sizes", required_argument, NULL, 's'},
    {"calls", required_argument, NULL, 'C'},
    {"submit-calls", required_argument, NULL, 'm'},
    {0},
};

/* ---- streams and events --------------------------------------------------------------------- */

static int32_t submit_gemm(const struct overlap_bench *b, struct clops_stream *stream,
                           const struct clops_tensor *t, struct clops_event **event)
{
    const struct clops_arg args[] = {
        {.name = "a", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = &t[0]},
        {.name = "b", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = &t[1]},
        {.name = "c", .kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &t[2]},
        {.name = "beta", .kind = CLOPS_PARAM_DOUBLE, .d = 0.0},
    };
    struct clops_submit_args a = {.struct_size = sizeof a,
                                  .op_index = b->gemm_index,
                                  .stream = stream,
                                  .args = args,
                                  .nargs = (int32_t)(sizeof args / sizeof args[0]),
                                  .arg_size = (uint32_t)sizeof args[0]};
    int32_t status = b->api->submit(&a);
    *event = a.event;
    return status;
}

/* The synchronous call, as a host that knows the operator makes it. */
static int32_t call_gemm(const struct overlap_bench *b, const struct clops_tensor *t)
{
    clops_gemm_fn gemm = (clops_gemm_fn)b->gemm->entry;
    return gemm(b->session.pool, &t[0], &t[1], &t[2], CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0);
}

/* Waits for events[0 .. count - 1] (NULLs skipped) and releases them. Returns 0 when every one
 * completed, else -1 after printing the first failure's message. */
static int settle(const struct overlap_bench *b, struct clops_event **events, int64_t count)
{
    int rc = 0;
    for (int64_t i = 0; i < count; i++) {
        if (events[i] == NULL)
            continue;
        struct clops_event_wait_args w = {
            .struct_size = sizeof w, .count = 1, .events = &events[i], .timeout_ns = -1};
        struct clops_event_query_args q = {.struct_size = sizeof q, .event = events[i]};
        if (b->api->event_wait(&w) != CLOPS_OK) {
            bench_report_error(&b->session, "event_wait");
            rc = -1;
        } else if (b->api->event_query(&q) != CLOPS_OK || q.state != CLOPS_EVENT_COMPLETE) {
            if (rc == 0)
                fprintf(bench_stderr(), "%s: a submitted gemm ended %s: %s\n", b->session.program,
                        b->api->status_name(q.status), q.message != NULL ? q.message : "");
            rc = -1;
        }
        struct clops_event_release_args r = {.struct_size = sizeof r, .event = events[i]};
        b->api->event_release(&r);
        events[i] = NULL;
    }
    return rc;
}

/* Waits for all of events[0 .. count - 1] at once: the end of a round's timed region. */
static int wait_all(const struct overlap_bench *b, struct clops_event **events, int64_t count)
{
    struct clops_event_wait_args w = {.struct_size = sizeof w,
                                      .count = (int32_t)count,
                                      .events = events,
                                      .timeout_ns = -1,
                                      .wait_all = 1};
    return b->api->event_wait(&w) == CLOPS_OK ? 0 : -1;
}

static int open_streams(struct overlap_bench *b)
{
    for (int s = 0; s < STREAMS; s++) {
        struct clops_stream_create_args a = {
            .struct_size = sizeof a, .device = 0, .pool = b->session.pool};
        if (b->api->stream_create(&a) != CLOPS_OK) {
            bench_report_error(&b->session, "stream_create");
            return BENCH_EXIT_FAILED;
        }
        b->streams[s] = a.stream;
    }
    return BENCH_EXIT_OK;
}

static void close_streams(struct overlap_bench *b)
{
    for (int s = 0; s < STREAMS; s++) {
        struct clops_stream_release_args a = {.struct_size = sizeof a, .stream = b->streams[s]};
        b->api->stream_release(&a);
        b->streams[s] = NULL;
    }
}

/* ---- overlap: C calls one after the other, and on two streams ---------------------------------
 */

/* One size's matrices: for call i, A_i and B_i, and its C for each way of calling. */
struct batch {
    int64_t n, calls;
    float *a, *b, *c_sequential, *c_streams; /* calls N x N matrices each, one after the other */
    struct clops_tensor (*sequential)[3], (*streams)[3];
};

static float *matrix_of(const struct batch *m, float *base, int64_t call)
{
    return base + call * m->n * m->n;
}

static void batch_make(struct batch *m, int64_t n, int64_t calls)
{
    const size_t bytes = (size_t)(calls * n * n) * sizeof(float);
    m->n = n, m->calls = calls;
    m->a = host_xmalloc(bytes);
    m->b = host_xmalloc(bytes);
    m->c_sequential = host_xmalloc(bytes);
    m->c_streams = host_xmalloc(bytes);
    struct host_rng rng;
    host_rng_seed(&rng, (uint64_t)n);
    host_fill_random(m->a, CLOPS_F32, calls * n * n, &rng);
    host_fill_random(m->b, CLOPS_F32, calls * n * n, &rng);
    m->sequential = host_xcalloc((size_t)calls, sizeof *m->sequential);
    m->streams = host_xcalloc((size_t)calls, sizeof *m->streams);
    for (int64_t i = 0; i < calls; i++) {
        float *a = matrix_of(m, m->a, i), *bm = matrix_of(m, m->b, i);
        m->sequential[i][0] = m->streams[i][0] = clops_matrix(a, CLOPS_F32, n, n, n, 0);
        m->sequential[i][1] = m->streams[i][1] = clops_matrix(bm, CLOPS_F32, n, n, n, 0);
        m->sequential[i][2] = clops_matrix(matrix_of(m, m->c_sequential, i), CLOPS_F32, n, n, n, 0);
        m->streams[i][2] = clops_matrix(matrix_of(m, m->c_streams, i), CLOPS_F32, n, n, n, 0);
    }
}

static void batch_free(struct batch *m)
{
    free(m->a);
    free(m->b);
    free(m->c_sequential);
    free(m->c_streams);
    free(m->sequential);
    free(m->streams);
}

/* NaN in every C: a call that writes nothing cannot pass the check. */
static void batch_poison(struct batch *m)
{
    for (int64_t i = 0; i < m->calls * m->n * m->n; i++)
        m->c_sequential[i] = m->c_streams[i] = NAN;
}

/* The round's time in ms: the calls one after the other, through the typed entry. NAN when a
 * call fails. */
static double run_sequential(struct overlap_bench *b, const struct batch *m)
{
    double start = host_now_ms();
    for (int64_t i = 0; i < m->calls; i++)
        if (call_gemm(b, m->sequential[i]) != CLOPS_OK) {
            bench_report_error(&b->session, "gemm");
            return NAN;
        }
    return host_now_ms() - start;
}

/* The round's time in ms: every call submitted, alternating between the streams, then one wait
 * for all of them. NAN when a submit or a call fails. */
static double run_streams(struct overlap_bench *b, const struct batch *m)
{
    struct clops_event **events = host_xcalloc((size_t)m->calls, sizeof *events);
    double ms = NAN;
    int64_t submitted = 0;
    double start = host_now_ms();
    for (; submitted < m->calls; submitted++)
        if (submit_gemm(b, b->streams[submitted % STREAMS], m->streams[submitted],
                        &events[submitted]) != CLOPS_OK) {
            bench_report_error(&b->session, "submit");
            break;
        }
    if (submitted == m->calls && wait_all(b, events, submitted) == 0)
        ms = host_now_ms() - start;
    if (settle(b, events, submitted) != 0)
        ms = NAN;
    free(events);
    return ms;
}

/* The largest |x - y| over the largest |y|, of `count` elements; +inf where x or y is not a
 * number (a C that was not written). */
static double max_rel_diff(const float *x, const float *y, int64_t count)
{
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < count; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i]))
            return INFINITY;
        diff = fmax(diff, fabs((double)x[i] - (double)y[i]));
        scale = fmax(scale, fabs((double)y[i]));
    }
    return scale > 0 ? diff / scale : diff;
}

/* CHECK_ROWS rows of the first call's sequential C against the host's product in long double,
 * as max rel diff. */
static double host_check(const struct batch *m)
{
    const int64_t n = m->n;
    const float *a = m->a, *bm = m->b, *c = m->c_sequential;
    double diff = 0, scale = 0;
    for (int r = 0; r < CHECK_ROWS; r++) {
        const int64_t i = (n - 1) * r / (CHECK_ROWS - 1);
        for (int64_t j = 0; j < n; j++) {
            long double s = 0;
            for (int64_t k = 0; k < n; k++)
                s += (long double)a[i * n + k] * bm[k * n + j];
            if (!isfinite(c[i * n + j]))
                return INFINITY;
            diff = fmax(diff, fabs((double)(c[i * n + j] - s)));
            scale = fmax(scale, fabs((double)s));
        }
    }
    return scale > 0 ? diff / scale : diff;
}

/* f32's tolerance for the host check: a few units of rounding per term of a dot product of n
 * uniform values, relative to C's largest element (as the gemm area's). */
static double host_tolerance(int64_t n)
{
    return 2e-6 * sqrt((double)n) + 1e-6;
}

/* The first timed round's results: sequential C right, and the streams' C equal to it. Prints
 * why when not, and returns -1. */
static int check_batch(struct overlap_bench *b, const struct batch *m, double *diff)
{
    const double host = host_check(m);
    *diff = max_rel_diff(m->c_streams, m->c_sequential, m->calls * m->n * m->n);
    if (!(host <= host_tolerance(m->n))) {
        fprintf(stderr,
                "%s: N = %lld: the sequential gemm's C differs from the host's product: max rel "
                "diff %.2e on %d rows (tolerance %.1e)\n",
                b->session.program, (long long)m->n, host, CHECK_ROWS, host_tolerance(m->n));
        return -1;
    }
    if (!(*diff <= 1e-5)) {
        fprintf(stderr,
                "%s: N = %lld: the two streams' C differ from the sequential C: max rel diff "
                "%.2e (tolerance 1e-5)\n",
                b->session.program, (long long)m->n, *diff);
        return -1;
    }
    return 0;
}

static void record(const struct overlap_bench *b, const char *op, const struct batch *m, double ms)
{
    const double flops = 2.0 * (double)m->n * (double)m->n * (double)m->n * (double)m->calls;
    bench_record(&(struct bench_row){.op = op,
                                     .dtype = CLOPS_F32,
                                     .impl = "clops",
                                     .n = m->n,
                                     .n_unit = "matrix order",
                                     .ms = ms / (double)m->calls,
                                     .rate = flops / (ms * 1e9),
                                     .unit = "TFLOP/s",
                                     .device = b->session.device.name});
}

/* Registers (register = 1) or unregisters m's A and B, all calls' at once (host_register).
 * Registering returns its time in ms, NAN when it failed. */
static double batch_register(struct overlap_bench *b, const struct batch *m, int reg)
{
    const size_t bytes = (size_t)(m->calls * m->n * m->n) * sizeof(float);
    float *const ranges[2] = {m->a, m->b};
    double start = host_now_ms();
    for (int i = 0; i < 2; i++) {
        struct clops_host_register_args a = {.struct_size = sizeof a,
                                             .pool = b->session.pool,
                                             .data = ranges[i],
                                             .bytes = (int64_t)bytes};
        if ((reg ? b->api->host_register(&a) : b->api->host_unregister(&a)) != CLOPS_OK) {
            bench_report_error(&b->session, reg ? "host_register" : "host_unregister");
            return NAN;
        }
    }
    return host_now_ms() - start;
}

/* Warm-up (the kernel built, the streams' threads started), then R rounds of both ways, with A
 * and B registered or not. */
static void measure_size(struct overlap_bench *b, int64_t n, int registered, struct table *t)
{
    const int reps = b->session.opt.reps;
    struct batch m;
    bench_progress_start("N=%lld, %lld calls, A and B %s", (long long)n, (long long)b->opt.calls,
                         registered ? "registered" : "pageable");
    batch_make(&m, n, b->opt.calls);
    table_row(t);
    table_cell(t, "%lld", (long long)n);
    table_cell(t, "%lld", (long long)m.calls);
    table_cell(t, "%s", registered ? "registered" : "pageable");
    double register_ms = NAN;
    int ok = 1;
    if (registered) {
        register_ms = batch_register(b, &m, 1);
        ok = !isnan(register_ms);
    }
    table_cell(t, isnan(register_ms) ? "-" : "%.1f", register_ms);
    ok = ok && call_gemm(b, m.sequential[0]) == CLOPS_OK;
    if (!ok)
        bench_report_error(&b->session, "gemm");
    for (int s = 0; s < STREAMS && ok; s++) { /* one at a time: both write the same C */
        struct clops_event *warm[1] = {NULL};
        if (submit_gemm(b, b->streams[s], m.streams[0], &warm[0]) != CLOPS_OK) {
            bench_report_error(&b->session, "submit");
            ok = 0;
        }
        ok = settle(b, warm, 1) == 0 && ok;
    }
    double *seq = host_xcalloc((size_t)reps, sizeof *seq);
    double *two = host_xcalloc((size_t)reps, sizeof *two);
    double diff = NAN;
    batch_poison(&m);
    for (int r = 0; r < reps && ok; r++) {
        seq[r] = run_sequential(b, &m);
        two[r] = run_streams(b, &m);
        ok = !isnan(seq[r]) && !isnan(two[r]) && (r > 0 || check_batch(b, &m, &diff) == 0);
    }
    if (!ok) {
        b->failures++;
        table_cell(t, "FAILED: %s (see stderr)", isnan(diff) ? "a call failed" : "wrong results");
        bench_progress_done("FAILED: %s", isnan(diff) ? "a call failed" : "wrong results");
    } else {
        const double seq_ms = host_median(seq, reps), two_ms = host_median(two, reps);
        bench_progress_done("sequential %.3f ms, two streams %.3f ms, speedup %.2f", seq_ms, two_ms,
                            seq_ms / two_ms);
        table_cell(t, "%.3f", seq_ms);
        table_cell(t, "%.3f", two_ms);
        table_cell(t, "%.2f", seq_ms / two_ms);
        table_cell(t, "%.1e", diff);
        record(b, registered ? "gemm host registered sequential" : "gemm host sequential", &m,
               seq_ms);
        record(b, registered ? "gemm host registered two streams" : "gemm host two streams", &m,
               two_ms);
    }
    if (registered && !isnan(register_ms) && isnan(batch_register(b, &m, 0)))
        b->failures++;
    free(seq);
    free(two);
    batch_free(&m);
}

static void run_overlap(struct overlap_bench *b)
{
    static const struct table_column columns[] = {
        {"N", TABLE_RIGHT},
        {"calls", TABLE_RIGHT},
        {"A, B memory", TABLE_LEFT},
        {"register ms", TABLE_RIGHT},
        {"sequential ms", TABLE_RIGHT},
        {"two streams ms", TABLE_RIGHT},
        {"speedup", TABLE_RIGHT},
        {"max rel diff", TABLE_RIGHT},
    };
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    const int can_register = CLOPS_API_HAS(b->api, host_unregister);
    for (int i = 0; i < b->opt.size_count; i++)
        for (int registered = 0; registered <= can_register; registered++)
            measure_size(b, b->opt.sizes[i], registered, &t);
    bench_progress_end();
    printf(
        "Overlap: %lld GEMM calls C = A B, f32, N x N, host operands (upload, compute, download),\n"
        "one after the other (sequential) and submitted alternately to two streams and waited\n"
        "for at the end (two streams); median of %d rounds; speedup = sequential / two streams;\n"
        "max rel diff: the streams' C against the sequential C. A, B memory: pageable, or\n"
        "registered with host_register before the rounds (register ms: its time, not counted).\n"
        "Target (issue 23): speedup >= %.1f at N = 4096 on the H200.\n\n",
        (long long)b->opt.calls, b->session.opt.reps, TARGET_SPEEDUP);
    table_print(&t, stdout, 0);
    table_free(&t);
    printf("\n");
}

/* ---- submit: the time of the call itself ---------------------------------------------------- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Median and 90th percentile of `count` times in µs, into the table's row and the progress
 * line. */
static void print_times(struct table *t, double *us, int64_t count)
{
    host_sort_times(us, (int)count);
    const double p90 = us[(int64_t)ceil(0.9 * (double)count) - 1],
                 median = host_median(us, (int)count);
    table_cell(t, "%lld", (long long)count);
    table_cell(t, "%.2f", median);
    table_cell(t, "%.2f", p90);
    bench_progress_done("median %.2f us, p90 %.2f us", median, p90);
}

/* A 16 x 16 f32 gemm on host operands, with its long double reference for C. */
struct small_gemm {
    float a[SMALL_N * SMALL_N], b[SMALL_N * SMALL_N], c[SMALL_N * SMALL_N];
    double want[SMALL_N * SMALL_N];
    float b_wrong[(SMALL_N + 1) * SMALL_N];
    struct clops_tensor t[3], refused[3];
};

static void small_gemm_make(struct small_gemm *g)
{
    struct host_rng rng;
    host_rng_seed(&rng, SMALL_N);
    host_fill_random(g->a, CLOPS_F32, SMALL_N * SMALL_N, &rng);
    host_fill_random(g->b, CLOPS_F32, SMALL_N * SMALL_N, &rng);
    host_fill_random(g->b_wrong, CLOPS_F32, (SMALL_N + 1) * SMALL_N, &rng);
    for (int i = 0; i < SMALL_N; i++)
        for (int j = 0; j < SMALL_N; j++) {
            long double s = 0;
            for (int k = 0; k < SMALL_N; k++)
                s += (long double)g->a[i * SMALL_N + k] * g->b[k * SMALL_N + j];
            g->want[i * SMALL_N + j] = (double)s;
        }
    g->t[0] = clops_matrix(g->a, CLOPS_F32, SMALL_N, SMALL_N, SMALL_N, 0);
    g->t[1] = clops_matrix(g->b, CLOPS_F32, SMALL_N, SMALL_N, SMALL_N, 0);
    g->t[2] = clops_matrix(g->c, CLOPS_F32, SMALL_N, SMALL_N, SMALL_N, 0);
    g->refused[0] = g->t[0];
    g->refused[1] = clops_matrix(g->b_wrong, CLOPS_F32, SMALL_N + 1, SMALL_N, SMALL_N, 0);
    g->refused[2] = g->t[2];
}

/* C against the reference; -1 after printing the worst element when it is off. */
static int small_gemm_check(const struct overlap_bench *b, const struct small_gemm *g)
{
    for (int i = 0; i < SMALL_N * SMALL_N; i++)
        if (!(fabs(g->c[i] - g->want[i]) <= 1e-5 * SMALL_N)) {
            fprintf(bench_stderr(), "%s: the 16 x 16 gemm's c[%d] = %.9g, expected %.9g\n",
                    b->session.program, i, g->c[i], g->want[i]);
            return -1;
        }
    return 0;
}

/* M submits of the call the checks refuse: each must fail, with no event. */
static void time_refused(struct overlap_bench *b, struct small_gemm *g, struct table *t)
{
    const int64_t count = b->opt.submit_calls;
    double *us = host_xcalloc((size_t)count, sizeof *us);
    table_row(t);
    table_cell(t, "gemm refused by its checks (K 16 vs 17)");
    bench_progress_start("%lld submits of a gemm refused by its checks", (long long)count);
    int64_t i = 0;
    for (; i < count; i++) {
        struct clops_event *event = NULL;
        const int64_t start = now_ns();
        const int32_t status = submit_gemm(b, b->streams[0], g->refused, &event);
        us[i] = (double)(now_ns() - start) / 1e3;
        if (status == CLOPS_OK || event != NULL) {
            fprintf(bench_stderr(), "%s: a gemm with K 16 and 17 was not refused by submit (%s)\n",
                    b->session.program, b->api->status_name(status));
            struct clops_event *left[1] = {event};
            settle(b, left, 1);
            break;
        }
    }
    if (i < count) {
        b->failures++;
        table_cell(t, "FAILED: not refused");
        bench_progress_done("FAILED: not refused");
    } else {
        print_times(t, us, count);
        table_cell(t, "<= %.0f", TARGET_SUBMIT_US);
    }
    free(us);
}

/* M submits of the small gemm on one stream; every SUBMIT_BATCH submits, outside the timed
 * region, a wait for them and their release. */
static void time_small_gemm(struct overlap_bench *b, struct small_gemm *g, struct table *t)
{
    const int64_t count = b->opt.submit_calls;
    double *us = host_xcalloc((size_t)count, sizeof *us);
    struct clops_event *events[SUBMIT_BATCH] = {NULL};
    table_row(t);
    table_cell(t, "gemm 16 x 16 f32, host operands: submit");
    bench_progress_start("%lld submits of a 16 x 16 gemm", (long long)count);
    int ok = 1;
    for (int64_t i = 0; i < count && ok; i++) {
        const int64_t start = now_ns();
        const int32_t status = submit_gemm(b, b->streams[0], g->t, &events[i % SUBMIT_BATCH]);
        us[i] = (double)(now_ns() - start) / 1e3;
        if (status != CLOPS_OK) {
            bench_report_error(&b->session, "submit");
            ok = 0;
        }
        if (!ok || i % SUBMIT_BATCH == SUBMIT_BATCH - 1 || i == count - 1)
            ok = settle(b, events, SUBMIT_BATCH) == 0 && ok;
    }
    if (ok)
        ok = small_gemm_check(b, g) == 0;
    if (!ok) {
        b->failures++;
        table_cell(t, "FAILED: %s (see stderr)", "a call failed or was wrong");
        bench_progress_done("FAILED: a call failed or was wrong");
    } else {
        print_times(t, us, count);
        table_cell(t, "<= %.0f", TARGET_SUBMIT_US);
    }
    free(us);
}

/* For scale: the whole synchronous call of the same gemm, M times. */
static void time_small_sync(struct overlap_bench *b, struct small_gemm *g, struct table *t)
{
    const int64_t count = b->opt.submit_calls;
    double *us = host_xcalloc((size_t)count, sizeof *us);
    table_row(t);
    table_cell(t, "the same gemm, the whole synchronous call");
    bench_progress_start("%lld synchronous calls of the 16 x 16 gemm", (long long)count);
    int ok = 1;
    for (int64_t i = 0; i < count && ok; i++) {
        const int64_t start = now_ns();
        ok = call_gemm(b, g->t) == CLOPS_OK;
        us[i] = (double)(now_ns() - start) / 1e3;
    }
    if (!ok) {
        bench_report_error(&b->session, "gemm");
        b->failures++;
        table_cell(t, "FAILED: the call failed");
        bench_progress_done("FAILED: the call failed");
    } else {
        print_times(t, us, count);
        table_cell(t, "-");
    }
    free(us);
}

static void run_submit(struct overlap_bench *b)
{
    static const struct table_column columns[] = {
        {"call", TABLE_LEFT},    {"submits", TABLE_RIGHT},   {"median us", TABLE_RIGHT},
        {"p90 us", TABLE_RIGHT}, {"target us", TABLE_RIGHT},
    };
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    struct small_gemm *g = host_xcalloc(1, sizeof *g);
    small_gemm_make(g);
    /* Warm-up: the kernel built for 16 x 16 and checked once. */
    struct clops_event *warm[1] = {NULL};
    if (submit_gemm(b, b->streams[0], g->t, &warm[0]) != CLOPS_OK || settle(b, warm, 1) != 0 ||
        small_gemm_check(b, g) != 0) {
        bench_report_error(&b->session, "submit");
        b->failures++;
        table_row(&t);
        table_cell(&t, "gemm 16 x 16 f32: FAILED (see stderr)");
        bench_progress_plan(-3); /* none of the three is measured */
    } else {
        time_refused(b, g, &t);
        time_small_gemm(b, g, &t);
        time_small_sync(b, g, &t);
    }
    bench_progress_end();
    printf("Submit overhead: the time of api->submit alone (clock_gettime around it), one\n"
           "stream, events waited for and released every %d submits outside the timed region;\n"
           "the synchronous call's whole time for scale. Target (issue 23): median <= %.0f us on\n"
           "the H200.\n\n",
           SUBMIT_BATCH, TARGET_SUBMIT_US);
    table_print(&t, stdout, 0);
    table_free(&t);
    free(g);
}

/* ---- main ------------------------------------------------------------------------------------ */

static int find_gemm(struct overlap_bench *b)
{
    const struct clops_api *api = b->session.lib.api;
    b->api = api;
    b->gemm = api->op_find("gemm");
    if (b->gemm == NULL) {
        fprintf(bench_stderr(), "clops-bench overlap: this libclops has no gemm operator\n");
        return BENCH_EXIT_LOAD;
    }
    if (!CLOPS_API_HAS(api, buffer_copy)) {
        fprintf(stderr,
                "clops-bench overlap: this libclops (ABI %u.%u) has no streams: they came in ABI "
                "1.4\n",
                (unsigned)api->abi_major, (unsigned)api->abi_minor);
        return BENCH_EXIT_LOAD;
    }
    b->gemm_index = api->op_index(b->gemm);
    return BENCH_EXIT_OK;
}

static void default_sizes(struct overlap_options *opt, int gpu)
{
    static const int64_t gpu_sizes[] = {1024, 4096}, cpu_sizes[] = {128, 256};
    memcpy(opt->sizes, gpu ? gpu_sizes : cpu_sizes, sizeof gpu_sizes);
    opt->size_count = 2;
}

int bench_overlap_main(int argc, char **argv)
{
    static struct overlap_bench b = {.opt = {.calls = 8, .submit_calls = 10000}};
    static const struct bench_command_line command_line = {
        .program = "clops-bench overlap",
        .name = "overlap",
        .help = help,
        .options = own_options,
        .default_reps = 3,
        .max_reps = 100,
        .take = take_option,
        .area = &b.opt,
    };
    int code = bench_start(argc, argv, &command_line, &b.session);
    if (code >= 0)
        return code;
    if ((code = find_gemm(&b)) != BENCH_EXIT_OK ||
        (code = bench_open_pool(&b.session)) != BENCH_EXIT_OK)
        return code;
    if (b.opt.size_count == 0)
        default_sizes(&b.opt, b.session.device.type == CLOPS_DEVICE_GPU);
    bench_print_library(&b.session, "clops-bench overlap");
    bench_print_device(&b.session.device, b.session.opt.config);
    if ((code = open_streams(&b)) == BENCH_EXIT_OK) {
        const int kinds = CLOPS_API_HAS(b.api, host_unregister) ? 2 : 1; /* pageable, registered */
        bench_progress_plan(b.opt.size_count * kinds + (b.opt.submit_calls > 0 ? 3 : 0));
        run_overlap(&b);
        if (b.opt.submit_calls > 0)
            run_submit(&b);
    }
    close_streams(&b);
    b.api->pool_release(b.session.pool);
    return code != BENCH_EXIT_OK ? code : b.failures > 0 ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
}
