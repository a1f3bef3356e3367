/* test_pocl_dlcache.c — two pools of one process on PoCL, one running a kernel while the other
 * builds the same program and stores its binary in clops's cache. PoCL before 7 aborted the
 * process there (pocl_release_dlhandle_cache: "found->ref_count > 0"; see pool_programs.c,
 * pocl_before_7): the CI run of test_threads and test_split_crew each died of it once. The race
 * is won or lost once per process and program, so each round is a fresh child; before the fix,
 * about one round in three aborted. Without a PoCL device the suite exits 77 (skipped). */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

enum { SKIP = 77, ROUNDS = 8, N = 768 };

#define POCL_POOL "devices = ( { vendor = \"Portable\"; } ); cpu_fallback = false; "

struct runner {
    struct clops_pool *pool;
    atomic_int stop;
    atomic_int calls;
    int wrong; /* a call failed or gave a wrong element */
};

/* y = xᵀ of an N x N f64 matrix on `pool`: 0 when the call ran and y is right. */
static int transpose_right(struct clops_pool *pool, const double *x, double *y)
{
    memset(y, 0, sizeof(double) * N * N);
    struct clops_tensor tx = clops_matrix((void *)x, CLOPS_F64, N, N, N, 0);
    struct clops_tensor ty = clops_matrix(y, CLOPS_F64, N, N, N, 0);
    if (((clops_transpose_fn)tu_op("transpose")->entry)(pool, &tx, &ty) != CLOPS_OK)
        return 1;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (y[(size_t)j * N + i] != x[(size_t)i * N + j])
                return 1;
    return 0;
}

/* A pool made from `config`, or NULL (the caller's round then fails). */
static struct clops_pool *pool_from(const char *config)
{
    struct clops_pool *made = NULL;
    return tu_api()->pool_create_from_string(config, &made) == CLOPS_OK ? made : NULL;
}

static double *matrix(void)
{
    double *x = tu_malloc(sizeof(double) * N * N);
    for (int i = 0; i < N * N; i++)
        x[i] = i * 0.5 - 3.0;
    return x;
}

/* Transposes on its pool, call after call, until told to stop. */
static void *run(void *arg)
{
    struct runner *r = arg;
    double *x = matrix(), *y = tu_malloc(sizeof(double) * N * N);
    while (!atomic_load(&r->stop)) {
        r->wrong |= transpose_right(r->pool, x, y);
        atomic_fetch_add(&r->calls, 1);
    }
    free(x);
    free(y);
    return NULL;
}

/* One round, in the child: exit status 0 when every call was right and the second pool built
 * its program from source (so it queried the binaries), 1 otherwise; a PoCL abort is SIGABRT. */
static void round_in_child(const char *cache_dir)
{
    const struct clops_api *api = tu_api();
    struct runner r = {.pool = pool_from(POCL_POOL "cache = { enabled = false; };")};
    pthread_t t;
    if (r.pool == NULL || pthread_create(&t, NULL, run, &r) != 0)
        _exit(1);
    while (atomic_load(&r.calls) < 2)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    char config[512];
    snprintf(config, sizeof config, POCL_POOL "cache = { enabled = true; dir = \"%s\"; };",
             cache_dir);
    struct clops_pool *second = pool_from(config);
    double *x = matrix(), *y = tu_malloc(sizeof(double) * N * N);
    int wrong = second == NULL || transpose_right(second, x, y);
    /* Runs finishing on the first pool while the second's entries are the newest. */
    const int seen = atomic_load(&r.calls);
    while (atomic_load(&r.calls) < seen + 3)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    struct clops_stats stats = {.struct_size = sizeof stats};
    wrong = wrong || api->pool_stats(second, &stats) != CLOPS_OK || stats.programs_built != 1;
    api->pool_release(second);
    api->pool_release(r.pool);
    free(x);
    free(y);
    _exit(wrong || r.wrong);
}

START_TEST(test_second_pool_storing_a_binary_while_the_first_runs_it)
{
    for (int round = 0; round < ROUNDS; round++) {
        char dir[64] = "/tmp/clops-dlcache-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
            round_in_child(dir);
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_msg(!WIFSIGNALED(status), "round %d: the process died of signal %d (%s)", round,
                      WTERMSIG(status), strsignal(WTERMSIG(status)));
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "round %d: a wrong transpose, or the second pool built no program", round);
    }
}
END_TEST

int main(void)
{
    if (!tu_child_creates_pool(POCL_POOL)) {
        printf("test_pocl_dlcache: SKIP: no PoCL device\n");
        return SKIP;
    }
    const struct tu_test tests[] = {
        TU_TEST(test_second_pool_storing_a_binary_while_the_first_runs_it),
    };
    return tu_run_tests("pocl_dlcache", 600, 1, tests, TU_COUNT(tests));
}
