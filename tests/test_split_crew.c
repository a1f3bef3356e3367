/* test_split_crew.c — the threads a pool keeps for split workers (plugin/split_crew.h): every
 * worker of a run runs once, also when the crew is busy with another thread's run or absent;
 * the threads are made once and serve later runs (none started per call); a fork()ed child,
 * which has none of them, still runs everything; and a split Mandelbrot call on a pool of two
 * devices leaves the pool's crew as large after its second call as after its first. Split
 * Mandelbrot calls, into host memory and into buffers on the primary device, give the bits a
 * render on one device gives, and later calls reuse what the first one made (the bridges
 * between the devices). Under ThreadSanitizer in CI (.ci/tsan). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bridge.h"
#include "clops.h"
#include "entry.h"
#include "pool.h"
#include "split_crew.h"
#include "testutil.h"

enum { WORKERS = 6 };

struct counted {
    atomic_int runs;
    atomic_int *running, *most; /* workers of the run running at once, and the most seen */
};

static void count_run(void *arg)
{
    struct counted *c = arg;
    const int now = atomic_fetch_add(c->running, 1) + 1;
    int most = atomic_load(c->most);
    while (now > most && !atomic_compare_exchange_weak(c->most, &most, now))
        ;
    usleep(2000); /* long enough for the others to start alongside */
    atomic_fetch_add(&c->runs, 1);
    atomic_fetch_sub(c->running, 1);
}

/* One run of WORKERS counted workers on `crew`: whether each ran exactly once, and the most
 * that ran at once. */
static int run_workers(struct split_crew *crew, int *most_at_once)
{
    atomic_int running = 0, most = 0;
    struct counted c[WORKERS];
    void *args[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        atomic_init(&c[i].runs, 0);
        c[i].running = &running;
        c[i].most = &most;
        args[i] = &c[i];
    }
    split_crew_run(crew, count_run, args, WORKERS);
    int once = atomic_load(&running) == 0;
    for (int i = 0; i < WORKERS; i++)
        once = once && atomic_load(&c[i].runs) == 1;
    *most_at_once = atomic_load(&most);
    return once;
}

/* The same, checked: each ran exactly once; the most that ran at once, returned. */
static int run_counted(struct split_crew *crew)
{
    int most = 0;
    ck_assert_msg(run_workers(crew, &most), "a worker did not run exactly once");
    return most;
}

START_TEST(test_every_worker_runs_once_and_threads_are_kept)
{
    struct split_crew *crew = split_crew_new();
    ck_assert_ptr_nonnull(crew);
    ck_assert_int_eq(split_crew_threads(crew), 0);
    ck_assert_int_gt(run_counted(crew), 1); /* side by side */
    const int32_t threads = split_crew_threads(crew);
    ck_assert_int_ge(threads, 1);
    ck_assert_int_le(threads, WORKERS - 1);
    for (int r = 0; r < 20; r++)
        run_counted(crew);
    ck_assert_int_eq(split_crew_threads(crew), threads); /* none started per call */
    split_crew_free(crew);
    ck_assert_int_eq(run_counted(NULL), 1); /* no crew: one after the other, on the caller */
}
END_TEST

static void *run_many(void *arg)
{
    for (int r = 0; r < 10; r++)
        run_counted(arg);
    return NULL;
}

/* Four threads' runs at once on one crew: every worker of each runs once. */
START_TEST(test_runs_from_several_threads_share_the_crew)
{
    struct split_crew *crew = split_crew_new();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, run_many, crew), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_le(split_crew_threads(crew), 127);
    split_crew_free(crew);
}
END_TEST

/* A fork()ed child has none of the crew's threads: its run does everything on the caller. */
START_TEST(test_a_forked_child_runs_every_worker_itself)
{
    struct split_crew *crew = split_crew_new();
    run_counted(crew);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        int most = 0;
        const int once = run_workers(crew, &most);
        split_crew_free(crew);
        _exit(once && most == 1 ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's run went wrong");
    split_crew_free(crew);
}
END_TEST

static struct clops_pool *kept_pool;

/* A Mandelbrot call split over two devices, twice: the pool's crew has as many threads after
 * the second as after the first. */
START_TEST(test_split_calls_reuse_the_pools_threads)
{
    const struct clops_api *api = entry_table(CLOPS_ABI_MAJOR);
    struct clops_pool *pool = NULL;
    ck_assert_int_eq(api->pool_create_from_string(
                         "devices = ( { type = \"cpu\"; queues = 2; }, { type = \"cpu\"; "
                         "index = 1; queues = 2; } ); cpu_fallback = false;",
                         &pool),
                     CLOPS_OK);
    enum { SIDE = 256 };
    uint32_t *counts = malloc(sizeof(uint32_t) * SIDE * SIDE);
    struct clops_tensor out = {
        .data = counts, .dtype = CLOPS_U32, .rank = 2, .shape = {SIDE, SIDE}, .strides = {SIDE, 1}};
    const struct clops_arg args[] = {
        {.name = "iterations", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &out},
        {.name = "center_x", .kind = CLOPS_PARAM_DOUBLE, .d = -0.75},
        {.name = "center_y", .kind = CLOPS_PARAM_DOUBLE, .d = 0.1},
        {.name = "scale", .kind = CLOPS_PARAM_DOUBLE, .d = 2.7},
        {.name = "max_iterations", .kind = CLOPS_PARAM_INT64, .i = 300},
        {.name = "split", .kind = CLOPS_PARAM_STRING, .s = "dynamic"},
        {.name = "tile", .kind = CLOPS_PARAM_INT64, .i = 32},
    };
    const struct clops_op *op = api->op_find("mandelbrot");
    ck_assert_msg(api->invoke_sized(pool, op, args, 7, sizeof args[0]) == CLOPS_OK, "%s",
                  api->last_error());
    const int32_t threads = split_crew_threads(pool_split_crew(pool));
    ck_assert_int_ge(threads, 1);
    for (int r = 0; r < 3; r++)
        ck_assert_msg(api->invoke_sized(pool, op, args, 7, sizeof args[0]) == CLOPS_OK, "%s",
                      api->last_error());
    ck_assert_int_eq(split_crew_threads(pool_split_crew(pool)), threads);
    /* Not released: releasing a pool of two PoCL pthread devices that both ran Mandelbrot's
     * kernels once tripped PoCL 3.1's assertion in pocl_release_dlhandle_cache (the two devices
     * share the kernel's loaded library; CI on 2026-11-28, not reproduced in 6 runs here). Kept
     * in a static, as test_mandelbrot keeps its two-device pool, so that LeakSanitizer sees it
     * reachable; the test's process ends with the case. */
    kept_pool = pool;
    free(counts);
}
END_TEST

/* ---- Mandelbrot split over two devices ---------------------------------------------------- */

enum { MANDEL_H = 211, MANDEL_W = 300, MANDEL_TILE = 32 };

/* What a render wrote, in host memory: counts and RGBA colours, compact row-major. */
struct picture {
    uint32_t *iters;
    uint8_t *image;
};

static struct picture picture_new(void)
{
    struct picture p = {malloc(sizeof(uint32_t) * MANDEL_H * MANDEL_W),
                        malloc((size_t)4 * MANDEL_H * MANDEL_W)};
    ck_assert(p.iters != NULL && p.image != NULL);
    memset(p.iters, 0xA5, sizeof(uint32_t) * MANDEL_H * MANDEL_W);
    memset(p.image, 0xA5, (size_t)4 * MANDEL_H * MANDEL_W);
    return p;
}

static void picture_free(struct picture *p)
{
    free(p->iters);
    free(p->image);
}

static void expect_same_picture(const struct picture *got, const struct picture *want,
                                const char *what)
{
    ck_assert_msg(memcmp(got->iters, want->iters, sizeof(uint32_t) * MANDEL_H * MANDEL_W) == 0,
                  "%s: the counts differ from one device's", what);
    ck_assert_msg(memcmp(got->image, want->image, (size_t)4 * MANDEL_H * MANDEL_W) == 0,
                  "%s: the image differs from one device's", what);
}

/* The two-device pool of the Mandelbrot cases, two queues per device (a dynamic split has a
 * worker per queue); kept, as kept_pool below says why. */
static struct clops_pool *mandel_pool(void)
{
    static struct clops_pool *pool;
    if (pool == NULL)
        ck_assert_int_eq(entry_table(CLOPS_ABI_MAJOR)
                             ->pool_create_from_string(
                                 "devices = ( { type = \"cpu\"; queues = 2; }, { type = \"cpu\"; "
                                 "index = 1; queues = 2; } ); cpu_fallback = false;",
                                 &pool),
                         CLOPS_OK);
    ck_assert_int_eq(pool_device_count(pool), 2);
    return pool;
}

/* A render of the case's view into `out` with `split` ("1": device 0 alone, the GPU side of a
 * pool without GPUs); on_device: into buffers on the primary device, downloaded into `out`. */
static int32_t render(struct clops_pool *pool, const char *split, int on_device,
                      struct picture *out)
{
    const struct clops_api *api = entry_table(CLOPS_ABI_MAJOR);
    const clops_mandelbrot_fn mandelbrot = (clops_mandelbrot_fn)api->op_find("mandelbrot")->entry;
    const int64_t counts_bytes = sizeof(uint32_t) * MANDEL_H * MANDEL_W;
    const int64_t image_bytes = (int64_t)4 * MANDEL_H * MANDEL_W;
    struct clops_tensor ti = {.data = out->iters,
                              .dtype = CLOPS_U32,
                              .rank = 2,
                              .shape = {MANDEL_H, MANDEL_W},
                              .strides = {MANDEL_W, 1}};
    struct clops_tensor tm = {.data = out->image,
                              .dtype = CLOPS_U8,
                              .rank = 3,
                              .shape = {MANDEL_H, MANDEL_W, 4},
                              .strides = {4 * MANDEL_W, 4, 1}};
    struct clops_buffer *bi = NULL, *bm = NULL;
    if (on_device) {
        ck_assert_int_eq(api->buffer_create(pool, counts_bytes, &bi), CLOPS_OK);
        ck_assert_int_eq(api->buffer_create(pool, image_bytes, &bm), CLOPS_OK);
        ti.data = tm.data = NULL;
        ti.buffer = bi;
        tm.buffer = bm;
    }
    const int32_t status = mandelbrot(pool, &ti, &tm, -0.75, 0.1, 2.7, 300, 0, split, MANDEL_TILE);
    if (on_device && status == CLOPS_OK) {
        ck_assert_int_eq(api->buffer_download(bi, 0, out->iters, counts_bytes), CLOPS_OK);
        ck_assert_int_eq(api->buffer_download(bm, 0, out->image, image_bytes), CLOPS_OK);
    }
    api->buffer_release(bi);
    api->buffer_release(bm);
    return status;
}

/* A render that must succeed. */
static void render_ok(struct clops_pool *pool, const char *split, int on_device,
                      struct picture *out)
{
    ck_assert_msg(render(pool, split, on_device, out) == CLOPS_OK, "split %s: %s", split,
                  entry_table(CLOPS_ABI_MAJOR)->last_error());
}

/* What the pool has made for split calls so far: the first call makes them, later ones of the
 * same shape reuse them. */
struct made {
    int64_t bridges;
};

static struct made made_by(struct clops_pool *pool)
{
    return (struct made){.bridges = bridge_made(pool)};
}

static const char *const reuse_splits[] = {"dynamic", "0.5"};

/* _i bit 0: outputs in buffers on the primary device (device 1's tiles placed there through
 * the host), else in host memory; bit 1: split 0.5 (a worker per device), else dynamic (a
 * worker per queue, tiles taken over between the devices). Every split call gives the bits
 * device 0 alone gives; the calls after the first make no new bridge. */
START_TEST(test_split_calls_match_one_device_and_reuse_what_they_made)
{
    const int on_device = _i & 1;
    const char *split = reuse_splits[(_i >> 1) & 1];
    struct clops_pool *pool = mandel_pool();
    struct picture want = picture_new(), got = picture_new();
    render_ok(pool, "1", on_device, &want);
    render_ok(pool, split, on_device, &got);
    expect_same_picture(&got, &want, "the first split call");
    const struct made first = made_by(pool);
    ck_assert_int_gt(first.bridges, 0); /* device 1's tiles cross through host memory */
    for (int r = 0; r < 3; r++) {
        struct picture again = picture_new();
        render_ok(pool, split, on_device, &again);
        expect_same_picture(&again, &want, "a later split call");
        picture_free(&again);
    }
    const struct made later = made_by(pool);
    ck_assert_msg(later.bridges == first.bridges, "later calls made %lld bridges",
                  (long long)(later.bridges - first.bridges));
    picture_free(&want);
    picture_free(&got);
}
END_TEST

int main(void)
{
    setenv("POCL_DEVICES", "pthread pthread", 0);
    const struct tu_test tests[] = {
        TU_TEST(test_every_worker_runs_once_and_threads_are_kept),
        TU_TEST(test_runs_from_several_threads_share_the_crew),
        TU_TEST(test_a_forked_child_runs_every_worker_itself),
        TU_TEST(test_split_calls_reuse_the_pools_threads),
        TU_LOOP(test_split_calls_match_one_device_and_reuse_what_they_made, 4),
    };
    return tu_run_tests("split_crew", 300, 1, tests, TU_COUNT(tests));
}
