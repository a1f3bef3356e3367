/* clops_overlap.c — clops-overlap: the non-blocking calls of ABI 1.4 from C. The same GEMMs on
 * host operands run one after the other (invoke_sized), then submitted to two streams, where one
 * call's upload and download overlap the other stream's kernels; both results are checked
 * against a long-double reference and both times printed. It includes abi/clops.h and the hosts'
 * loader. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clops.h"
#include "loader.h"
#include "util.h"

static const char usage[] = "usage: clops-overlap [N [CALLS]]\n"
                            "Runs CALLS f32 GEMMs of N×N (defaults 1024 and 8) one after the "
                            "other, then on two streams,\nchecks every result and prints both "
                            "times. Exit status: 0 results right, 1 wrong or failed.\n";

enum { STREAMS = 2, SAMPLES = 64 };

/* One call: C = A·B, f32, row-major N×N, operands in host memory. */
struct job {
    float *a, *b, *c;
    struct clops_tensor ta, tb, tc;
    struct clops_arg args[4];
};

static const struct clops_api *api;

/* The plugin by the hosts' rule (hosts/common/loader.h), which must serve ABI 1.4's streams. */
static const struct clops_api *load_clops(void)
{
    static struct host_library lib; /* stays loaded until the process exits */
    char why[8192];
    if (host_library_load(&lib, why, sizeof why) != 0) {
        fprintf(stderr, "clops-overlap: cannot load libclops: %s\n", why);
        return NULL;
    }
    /* buffer_copy is the table's last 1.4 member: a table that holds it has them all. */
    if (!CLOPS_API_HAS(lib.api, buffer_copy)) {
        fprintf(stderr, "clops-overlap: %s does not serve ABI 1.4's streams\n", lib.path);
        return NULL;
    }
    return lib.api;
}

static double now(void)
{
    return 1e-3 * host_now_ms();
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t next_random(void) /* xorshift64* */
{
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static float uniform(void) /* in [-1, 1) */
{
    return (float)((double)(next_random() >> 40) / 8388608.0 - 1.0);
}

static int job_make(struct job *j, int64_t n)
{
    const size_t count = (size_t)(n * n);
    j->a = malloc(count * sizeof *j->a);
    j->b = malloc(count * sizeof *j->b);
    j->c = malloc(count * sizeof *j->c);
    if (j->a == NULL || j->b == NULL || j->c == NULL)
        return 0;
    for (size_t i = 0; i < count; i++) {
        j->a[i] = uniform();
        j->b[i] = uniform();
    }
    j->ta = clops_matrix(j->a, CLOPS_F32, n, n, n, 0);
    j->tb = clops_matrix(j->b, CLOPS_F32, n, n, n, 0);
    j->tc = clops_matrix(j->c, CLOPS_F32, n, n, n, 0);
    const struct clops_arg args[4] = {
        {.name = "a", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = &j->ta},
        {.name = "b", .kind = CLOPS_PARAM_TENSOR_IN, .tensor = &j->tb},
        {.name = "c", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &j->tc},
        {.name = "beta", .kind = CLOPS_PARAM_DOUBLE, .d = 0.0}};
    memcpy(j->args, args, sizeof args);
    return 1;
}

static void job_free(struct job *j)
{
    free(j->a);
    free(j->b);
    free(j->c);
}

/* Worst error of SAMPLES entries of C (always the corners among them) against a long-double
 * dot product, in units of N·ε·Σ|a||b| (below 1 for a right f32 GEMM). */
static double job_error(const struct job *j, int64_t n)
{
    double worst = 0;
    for (int s = 0; s < SAMPLES; s++) {
        const int64_t i = s == 0 ? 0 : s == 1 ? n - 1 : (int64_t)(next_random() % (uint64_t)n);
        const int64_t k = s == 0 ? 0 : s == 1 ? n - 1 : (int64_t)(next_random() % (uint64_t)n);
        long double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < n; p++) {
            long double term = (long double)j->a[i * n + p] * j->b[p * n + k];
            sum += term;
            magnitude += fabsl(term);
        }
        double error = (double)(fabsl(j->c[i * n + k] - sum) /
                                ((long double)n * (long double)FLT_EPSILON * (magnitude + 1e-30L)));
        if (!(error <= worst))
            worst = error; /* NaN too */
    }
    return worst;
}

static int fail(const char *what)
{
    fprintf(stderr, "clops-overlap: %s: %s\n", what, api->last_error());
    return 0;
}

/* Completion callbacks, on a thread of a stream: counted, and their failures too. */
static atomic_int completed, failed;

static void on_complete(struct clops_event *e, int32_t status, void *user)
{
    (void)e, (void)user;
    atomic_fetch_add(&completed, 1);
    if (status != CLOPS_OK)
        atomic_fetch_add(&failed, 1);
}

/* The calls one after the other, each returning once its C is in host memory. */
static int run_sequential(struct clops_pool *pool, const struct clops_op *gemm, struct job *jobs,
                          int calls)
{
    for (int i = 0; i < calls; i++)
        if (api->invoke_sized(pool, gemm, jobs[i].args, 4, sizeof(struct clops_arg)) != CLOPS_OK)
            return fail("gemm");
    return 1;
}

/* The same calls on two streams, call i on stream i % 2, all submitted before any is waited
 * for; the host memory of each stays untouched until every event has its outcome. */
static int run_streams(struct clops_stream *const *streams, int32_t op_index, struct job *jobs,
                       int calls, struct clops_event **events)
{
    int ok = 1, submitted = 0;
    for (int i = 0; i < calls && ok; i++) {
        struct clops_submit_args s = {.struct_size = sizeof s,
                                      .op_index = op_index,
                                      .stream = streams[i % STREAMS],
                                      .args = jobs[i].args,
                                      .nargs = 4,
                                      .arg_size = sizeof(struct clops_arg),
                                      .on_complete = on_complete};
        ok = api->submit(&s) == CLOPS_OK || fail("submit");
        events[i] = s.event;
        submitted += ok;
    }
    struct clops_event_wait_args w = {.struct_size = sizeof w,
                                      .count = submitted,
                                      .events = events,
                                      .timeout_ns = -1,
                                      .wait_all = 1};
    if (api->event_wait(&w) != CLOPS_OK)
        ok = fail("event_wait");
    for (int i = 0; i < submitted; i++) {
        struct clops_event_query_args q = {.struct_size = sizeof q, .event = events[i]};
        if (api->event_query(&q) == CLOPS_OK && q.status != CLOPS_OK) {
            fprintf(stderr, "clops-overlap: call %d: %s: %s\n", i, api->status_name(q.status),
                    q.message);
            ok = 0;
        }
        struct clops_event_release_args r = {.struct_size = sizeof r, .event = events[i]};
        api->event_release(&r);
    }
    return ok;
}

/* Checks every call's C, then sets it to NaN so the next run must write it again. */
static int check_and_clear(struct job *jobs, int calls, int64_t n, const char *run)
{
    double worst = 0;
    for (int i = 0; i < calls; i++) {
        double error = job_error(&jobs[i], n);
        worst = !(error <= worst) ? error : worst;
        for (int64_t k = 0; k < n * n; k++)
            jobs[i].c[k] = NAN;
    }
    printf("%-12s worst scaled error %.3g (of %d sampled entries per call)\n", run, worst, SAMPLES);
    return worst < 1;
}

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : 1024;
    const int calls = argc > 2 ? atoi(argv[2]) : 8;
    if (argc > 3 || n < 1 || calls < 1 || calls > 4096) {
        fputs(usage, stderr);
        return 1;
    }
    if ((api = load_clops()) == NULL)
        return 1;
    struct clops_pool *pool = NULL;
    if (api->pool_create_default(&pool) != CLOPS_OK)
        return !fail("pool_create_default");
    const struct clops_op *gemm = api->op_find("gemm");
    struct job *jobs = calloc((size_t)calls, sizeof *jobs);
    struct clops_event **events = calloc((size_t)calls, sizeof *events);
    struct clops_stream *streams[STREAMS] = {NULL, NULL};
    int ok = gemm != NULL && jobs != NULL && events != NULL;
    for (int i = 0; i < calls && ok; i++)
        ok = job_make(&jobs[i], n);
    for (int s = 0; s < STREAMS && ok; s++) {
        struct clops_stream_create_args c = {.struct_size = sizeof c, .pool = pool};
        ok = api->stream_create(&c) == CLOPS_OK || fail("stream_create");
        streams[s] = c.stream;
    }
    /* A first call builds the kernel: not part of either time. */
    ok = ok && run_sequential(pool, gemm, jobs, 1);

    const double t0 = now();
    ok = ok && run_sequential(pool, gemm, jobs, calls);
    const double sequential = now() - t0;
    ok = ok && check_and_clear(jobs, calls, n, "sequential:");

    const double t1 = now();
    ok = ok && run_streams(streams, api->op_index(gemm), jobs, calls, events);
    const double overlapped = now() - t1;
    ok = ok && check_and_clear(jobs, calls, n, "two streams:");
    /* An event has its outcome before its callback runs: the callbacks are all in once the
     * streams are released (a release waits for them). */
    for (int s = 0; s < STREAMS; s++) {
        struct clops_stream_release_args r = {.struct_size = sizeof r, .stream = streams[s]};
        api->stream_release(&r);
    }
    if (ok && (atomic_load(&completed) != calls || atomic_load(&failed) != 0)) {
        fprintf(stderr, "clops-overlap: %d callbacks of %d calls, %d failed\n",
                atomic_load(&completed), calls, atomic_load(&failed));
        ok = 0;
    }
    api->pool_release(pool);
    for (int i = 0; i < calls && jobs != NULL; i++)
        job_free(&jobs[i]);
    free(jobs);
    free(events);
    if (!ok) {
        printf("clops-overlap: FAILED\n");
        return 1;
    }
    printf("%d gemm calls of %lldx%lld f32 with host operands: one after the other %.3f s, on "
           "%d streams %.3f s (%.2fx)\n",
           calls, (long long)n, (long long)n, sequential, STREAMS, overlapped,
           sequential / overlapped);
    printf("clops-overlap: all %d results right\n", 2 * calls);
    return 0;
}
