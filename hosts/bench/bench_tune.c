/* bench_tune.c — `clops-bench tune`: searches GEMM tile sets on the pool's device and prints
 * the tuning-table entry of plugin/ops/gemm_tune.c for it. Each candidate is forced through the
 * gemm settings (operators.gemm.tile_m, ...) in a pool of its own, checked against a host
 * computation, then timed; the fastest valid set per dtype wins. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_common.h"
#include "table.h"
#include "util.h"

struct tiles {
    int tile_m, tile_n, tile_k, wpt_m, wpt_n, vw;
};

struct tune {
    struct bench_session session; /* the library; tune makes its own pools */
    clops_gemm_fn gemm;
    int64_t n;
    int reps;
    const char *base_config; /* pool configuration text the candidates are appended to */
};

/* The search space: the shapes a work-group of 64..256 work-items can take on a GPU, with the
 * contiguous (vw = wpt) and vector (vw = 4) layouts. */
static int next_candidate(int index, struct tiles *t)
{
    static const int tile_mn[] = {64, 128};
    static const int tile_k[] = {8, 16};
    static const int wpt[] = {4, 8};
    static const int vw[] = {1, 4};
    int i = index;
    t->vw = vw[i % 2], i /= 2;
    t->wpt_n = wpt[i % 2], i /= 2;
    t->wpt_m = wpt[i % 2], i /= 2;
    t->tile_k = tile_k[i % 2], i /= 2;
    t->tile_n = tile_mn[i % 2], i /= 2;
    t->tile_m = tile_mn[i % 2], i /= 2;
    return i == 0;
}

static int tiles_valid(const struct tiles *t)
{
    int group = (t->tile_m / t->wpt_m) * (t->tile_n / t->wpt_n);
    return group >= 64 && group <= 256 && (t->tile_m * t->tile_k) % group == 0 &&
           (t->tile_n * t->tile_k) % group == 0 && t->wpt_m % t->vw == 0 && t->wpt_n % t->vw == 0;
}

/* The set as the operator's settings, "tile_m = 64; ...; vw = 4;". */
static void tiles_settings(const struct tiles *t, char *out, size_t size)
{
    snprintf(out, size, "tile_m = %d; tile_n = %d; tile_k = %d; wpt_m = %d; wpt_n = %d; vw = %d;",
             t->tile_m, t->tile_n, t->tile_k, t->wpt_m, t->wpt_n, t->vw);
}

/* Operands on the device: A, B, C of order n, and the host copies of A and B for the check. */
struct operands {
    struct clops_buffer *a, *b, *c;
    void *ha, *hb, *hc;
};

static int operands_create(const struct tune *tu, struct clops_pool *pool, int32_t dtype,
                           struct operands *o)
{
    const struct clops_api *api = tu->session.lib.api;
    int64_t bytes = tu->n * tu->n * host_dtype_size(dtype);
    struct host_rng rng;
    host_rng_seed(&rng, 42);
    o->ha = host_xmalloc((size_t)bytes);
    o->hb = host_xmalloc((size_t)bytes);
    o->hc = host_xmalloc((size_t)bytes);
    host_fill_random(o->ha, dtype, tu->n * tu->n, &rng);
    host_fill_random(o->hb, dtype, tu->n * tu->n, &rng);
    return api->buffer_create(pool, bytes, &o->a) != CLOPS_OK ||
                   api->buffer_create(pool, bytes, &o->b) != CLOPS_OK ||
                   api->buffer_create(pool, bytes, &o->c) != CLOPS_OK ||
                   api->buffer_upload(o->a, 0, o->ha, bytes) != CLOPS_OK ||
                   api->buffer_upload(o->b, 0, o->hb, bytes) != CLOPS_OK
               ? -1
               : 0;
}

static void operands_release(const struct tune *tu, struct operands *o)
{
    tu->session.lib.api->buffer_release(o->a);
    tu->session.lib.api->buffer_release(o->b);
    tu->session.lib.api->buffer_release(o->c);
    free(o->ha);
    free(o->hb);
    free(o->hc);
    memset(o, 0, sizeof *o);
}

static int32_t call_gemm(const struct tune *tu, struct clops_pool *pool, int32_t dtype,
                         const struct operands *o)
{
    struct clops_tensor a = clops_matrix_on_device(o->a, dtype, tu->n, tu->n, tu->n, 0);
    struct clops_tensor b = clops_matrix_on_device(o->b, dtype, tu->n, tu->n, tu->n, 0);
    struct clops_tensor c = clops_matrix_on_device(o->c, dtype, tu->n, tu->n, tu->n, 0);
    return tu->gemm(pool, &a, &b, &c, CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0);
}

static double element(const void *m, int32_t dtype, int64_t at)
{
    return dtype == CLOPS_F64 ? ((const double *)m)[at] : ((const float *)m)[at];
}

/* Rows 0, n/2 and n-1 of C against the host: a set that computes garbage is never timed. */
static int result_is_right(const struct tune *tu, int32_t dtype, struct operands *o)
{
    int64_t n = tu->n, bytes = n * n * host_dtype_size(dtype);
    if (tu->session.lib.api->buffer_download(o->c, 0, o->hc, bytes) != CLOPS_OK)
        return 0;
    const double eps = dtype == CLOPS_F64 ? 1.1e-16 : 6e-8;
    const int64_t rows[] = {0, n / 2, n - 1};
    for (int r = 0; r < 3; r++)
        for (int64_t j = 0; j < n; j++) {
            long double ref = 0, mag = 0;
            for (int64_t k = 0; k < n; k++) {
                long double p = (long double)element(o->ha, dtype, rows[r] * n + k) *
                                element(o->hb, dtype, k * n + j);
                ref += p;
                mag += fabsl(p);
            }
            double got = element(o->hc, dtype, rows[r] * n + j);
            if (!(fabsl(got - ref) <= 2.0L * n * eps * mag + 1e-30L))
                return 0;
        }
    return 1;
}

/* The median time of tu->reps calls in ms, or a negative value when the set fails. */
static double time_set(const struct tune *tu, const struct tiles *t, int32_t dtype)
{
    const struct clops_api *api = tu->session.lib.api;
    char settings[256], config[1024];
    tiles_settings(t, settings, sizeof settings);
    snprintf(config, sizeof config, "%s\noperators = { gemm = { %s }; };", tu->base_config,
             settings);
    struct clops_pool *pool = NULL;
    if (api->pool_create_from_string(config, &pool) != CLOPS_OK)
        return -1;
    struct operands o = {0};
    double median = -1;
    if (operands_create(tu, pool, dtype, &o) == 0 && call_gemm(tu, pool, dtype, &o) == CLOPS_OK &&
        result_is_right(tu, dtype, &o)) {
        double times[64];
        int reps = tu->reps < 64 ? tu->reps : 64, done = 0;
        for (; done < reps; done++) {
            double start = host_now_ms();
            if (call_gemm(tu, pool, dtype, &o) != CLOPS_OK)
                break;
            times[done] = host_now_ms() - start;
        }
        host_sort_times(times, done);
        median = done == reps ? times[reps / 2] : -1; /* the upper middle for an even R */
    }
    operands_release(tu, &o);
    api->pool_release(pool);
    return median;
}

static int usage(FILE *out, int code)
{
    fprintf(out, "Usage: clops-bench tune [--size N] [--reps R] [--config-text TEXT]\n\n"
                 "Tries every valid GEMM tile set of the search space on the default pool's\n"
                 "primary device (or the pool TEXT describes), checks each set's result, times\n"
                 "it (median of R calls, N x N, operands on the device) and prints the entry of\n"
                 "plugin/ops/gemm_tune.c's tuning table for the fastest set per dtype. Each\n"
                 "set's time and rate is also a line on stderr as it is measured (on a\n"
                 "terminal, one line rewritten in place).\n\n"
                 "  -n, --size N          matrix order (default 4096)\n"
                 "  -r, --reps R          timed calls per set (default 3)\n"
                 "  -t, --config-text T   pool configuration the candidates are added to\n"
                 "  -h, --help            this help\n");
    return code;
}

static int parse(int argc, char **argv, struct tune *tu)
{
    static const struct option options[] = {{"size", required_argument, NULL, 'n'},
                                            {"reps", required_argument, NULL, 'r'},
                                            {"config-text", required_argument, NULL, 't'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "n:r:t:h", options, NULL)) != -1) {
        if (c == 'n')
            tu->n = strtoll(optarg, NULL, 10);
        else if (c == 'r')
            tu->reps = atoi(optarg);
        else if (c == 't')
            tu->base_config = optarg;
        else if (c == 'h')
            return usage(stdout, BENCH_EXIT_OK);
        else
            return usage(stderr, BENCH_EXIT_USAGE);
    }
    if (tu->n < 1 || tu->reps < 1 || optind < argc)
        return usage(stderr, BENCH_EXIT_USAGE);
    return -1;
}

int bench_tune_main(int argc, char **argv)
{
    static struct tune tu = {
        .session.program = "clops-bench tune", .n = 4096, .reps = 3, .base_config = ""};
    host_program_name = "clops-bench tune";
    int code = parse(argc, argv, &tu);
    if (code >= 0)
        return code;
    if ((code = bench_load_library(&tu.session, 0)) != BENCH_EXIT_OK)
        return code;
    const struct clops_op *op = tu.session.lib.api->op_find("gemm");
    if (op == NULL)
        return BENCH_EXIT_LOAD;
    tu.gemm = (clops_gemm_fn)op->entry;
    static const struct table_column columns[] = {
        {"dtype", TABLE_LEFT}, {"tiles", TABLE_LEFT}, {"ms", TABLE_RIGHT}, {"%s", TABLE_RIGHT}};
    struct bench_table t;
    bench_table_init(&t, columns, 4, BENCH_FLOPS);
    const int32_t dtypes[] = {CLOPS_F32, CLOPS_F64};
    struct tiles best[2], cand;
    double best_ms[2] = {-1, -1};
    for (int i = 0; next_candidate(i, &cand); i++)
        bench_progress_plan(2 * tiles_valid(&cand));
    for (int d = 0; d < 2; d++) {
        for (int i = 0; next_candidate(i, &cand); i++) {
            if (!tiles_valid(&cand))
                continue;
            char settings[256];
            tiles_settings(&cand, settings, sizeof settings);
            /* Its settings without their last ';', which the figures' ':' follows. */
            bench_progress_start("%s %.*s", host_dtype_name(dtypes[d]), (int)strlen(settings) - 1,
                                 settings);
            double ms = time_set(&tu, &cand, dtypes[d]);
            table_row(&t.table);
            table_cell(&t.table, "%s", host_dtype_name(dtypes[d]));
            table_cell(&t.table, "%s", settings);
            if (ms < 0) {
                table_cell(&t.table, "failed");
                table_cell(&t.table, "-");
                bench_progress_done("failed");
                continue;
            }
            const double rate = 2.0 * (double)tu.n * tu.n * tu.n / (ms * 1e-3);
            char text[32];
            table_cell(&t.table, "%.3f", ms);
            bench_table_rate(&t, rate);
            bench_progress_done("%.3f ms, %s", ms,
                                bench_rate_text(BENCH_FLOPS, rate, text, sizeof text));
            if (best_ms[d] < 0 || ms < best_ms[d]) {
                best_ms[d] = ms;
                best[d] = cand;
            }
        }
    }
    bench_table_print(&t, stdout, 0);
    bench_table_free(&t);
    printf("\nTable entries (plugin/ops/gemm_tune.c, tunings[]; large tiles, N = %lld):\n",
           (long long)tu.n);
    for (int d = 0; d < 2; d++)
        if (best_ms[d] >= 0)
            printf("  %s: {%d, %d, %d, %d, %d, %d}\n", host_dtype_name(dtypes[d]), best[d].tile_m,
                   best[d].tile_n, best[d].tile_k, best[d].wpt_m, best[d].wpt_n, best[d].vw);
    return best_ms[0] >= 0 || best_ms[1] >= 0 ? BENCH_EXIT_OK : BENCH_EXIT_FAILED;
}
