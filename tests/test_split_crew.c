/* test_split_crew.c — the threads a pool keeps for split workers (plugin/split_crew.h): every
 * worker of a run runs once, also when the crew is busy with another thread's run or absent;
 * the threads are made once and serve later runs (none started per call); a fork()ed child,
 * which has none of them, still runs everything; and a split Mandelbrot call on a pool of two
 * devices leaves the pool's crew as large after its second call as after its first. Under
 * ThreadSanitizer in CI (.ci/tsan). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

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

int main(void)
{
    setenv("POCL_DEVICES", "pthread pthread", 0);
    const struct tu_test tests[] = {
        TU_TEST(test_every_worker_runs_once_and_threads_are_kept),
        TU_TEST(test_runs_from_several_threads_share_the_crew),
        TU_TEST(test_a_forked_child_runs_every_worker_itself),
        TU_TEST(test_split_calls_reuse_the_pools_threads),
    };
    return tu_run_tests("split_crew", 300, 1, tests, TU_COUNT(tests));
}
