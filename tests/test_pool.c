/* test_pool.c — the device pool: configuration from strings, device fallback, buffers,
 * statistics, the binary cache across processes, build errors, and threads sharing a pool. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
#include <io.h>
#define popen _popen
#define pclose _pclose
#endif

#include "testutil.h"

/* The checked GEMM of testutil on `pool`: the largest error, or -1 when the call failed. */
static double checked_gemm(struct clops_pool *pool, int n, uint64_t seed)
{
    return tu_checked_gemm(tu_api(), pool, n, seed, NULL);
}

/* The pool's statistics of gemm (asserted readable). */
static struct clops_op_stats gemm_stats(struct clops_pool *pool)
{
    const struct clops_api *api = tu_api();
    struct clops_op_stats os = {.struct_size = sizeof os};
    ck_assert_int_eq(api->pool_op_stats(pool, api->op_index(api->op_find("gemm")), &os), CLOPS_OK);
    return os;
}

struct worker {
    struct clops_pool *pool;
    int id;
    int good;
};

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    for (int round = 0; round < 6; round++) {
        double err = checked_gemm(w->pool, 40 + 9 * w->id + round, (uint64_t)(w->id * 100 + round));
        if (err >= 0 && err < 1e-12)
            w->good++;
    }
    return NULL;
}

START_TEST(test_two_threads_share_a_pool)
{
    struct clops_pool *pool = tu_pool();
    struct worker w[2] = {{pool, 0, 0}, {pool, 1, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(w[0].good, 6);
    ck_assert_int_eq(w[1].good, 6);
    struct clops_stats s = {.struct_size = sizeof s};
    ck_assert_int_eq(tu_api()->pool_stats(pool, &s), CLOPS_OK);
    ck_assert_int_ge(s.calls, 12);
    /* Both threads wanted the same program: it was made once. */
    ck_assert_int_eq(s.programs_built + s.programs_loaded, 1);
}
END_TEST

START_TEST(test_pool_from_string_picks_cpu)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool =
        tu_pool_from_string("devices = ( { type = \"cpu\"; queues = 3; } );\nprofiling = false;\n");
    ck_assert_int_eq(api->pool_device_count(pool), 1);
    struct clops_device_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(api->pool_device_info(pool, 0, &info), CLOPS_OK);
    ck_assert_int_eq(info.type, CLOPS_DEVICE_CPU);
    ck_assert_int_eq(info.queues, 3);
    double err = checked_gemm(pool, 17, 5);
    ck_assert_double_ge(err, 0);
    ck_assert_double_lt(err, 1e-12);
    /* Profiling off: no device time is recorded. */
    const struct clops_op_stats os = gemm_stats(pool);
    ck_assert_int_eq(os.calls, 1);
    ck_assert_int_eq(os.device_ns, 0);
    api->pool_release(pool);
}
END_TEST

START_TEST(test_missing_device_errors_or_falls_back)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = (struct clops_pool *)1;
    const char *strict = "devices = ( { type = \"gpu\"; vendor = \"NoSuchVendor\"; } );\n"
                         "cpu_fallback = false;\n";
    ck_assert_int_eq(api->pool_create_from_string(strict, &pool), CLOPS_ERR_NO_DEVICE);
    ck_assert_ptr_null(pool);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "devices[0]"));
    ck_assert_ptr_nonnull(strstr(api->last_error(), "NoSuchVendor"));
    const char *lenient = "devices = ( { type = \"gpu\"; vendor = \"NoSuchVendor\"; } );\n"
                          "cpu_fallback = true;\n";
    pool = tu_pool_from_string(lenient);
    struct clops_device_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(api->pool_device_info(pool, 0, &info), CLOPS_OK);
    ck_assert_int_eq(info.type, CLOPS_DEVICE_CPU);
    api->pool_release(pool);
}
END_TEST

START_TEST(test_bad_config_string_names_line_and_key)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = NULL;
    ck_assert_int_eq(api->pool_create_from_string("profiling = true;\nqueuez = 2;\n", &pool),
                     CLOPS_ERR_CONFIG);
    ck_assert_ptr_null(pool);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "<string>:2"));
    ck_assert_ptr_nonnull(strstr(api->last_error(), "queuez"));
    ck_assert_int_eq(api->pool_create_from_file("/nonexistent/clops.cfg", &pool), CLOPS_ERR_IO);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "/nonexistent/clops.cfg"));
}
END_TEST

START_TEST(test_buffers_round_trip_and_check_ranges)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_pool();
    struct clops_buffer *buf = NULL;
    ck_assert_int_eq(api->buffer_create(pool, 1000, &buf), CLOPS_OK);
    ck_assert_int_eq(api->buffer_size(buf), 1000);
    unsigned char in[1000], out[1000];
    for (int i = 0; i < 1000; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    ck_assert_int_eq(api->buffer_upload(buf, 0, in, 1000), CLOPS_OK);
    memset(out, 0, sizeof out);
    ck_assert_int_eq(api->buffer_download(buf, 100, out, 900), CLOPS_OK);
    ck_assert(memcmp(out, in + 100, 900) == 0);
    ck_assert_int_eq(api->buffer_upload(buf, 900, in, 101), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "outside the buffer of 1000 bytes"));
    ck_assert_int_eq(api->buffer_download(buf, -1, out, 10), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(api->buffer_download(buf, 0, NULL, 10), CLOPS_ERR_INVALID_ARGUMENT);
    api->buffer_release(buf);
    ck_assert_int_eq(api->buffer_create(pool, 0, &buf), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "'bytes' = 0"));
    ck_assert_ptr_null(buf);
    ck_assert_int_eq(api->buffer_create(NULL, 8, &buf), CLOPS_ERR_INVALID_ARGUMENT);
    /* A buffer far larger than any device: an error, not a crash. */
    int32_t status = api->buffer_create(pool, (int64_t)1 << 62, &buf);
    ck_assert_int_eq(status, CLOPS_ERR_OUT_OF_DEVICE_MEMORY);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "largest allocation"));
    ck_assert_ptr_null(buf);
    api->buffer_release(NULL);
}
END_TEST

START_TEST(test_stats_count_calls_and_device_time)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_pool_from_string("profiling = true;");
    ck_assert_double_ge(checked_gemm(pool, 64, 1), 0);
    ck_assert_double_ge(checked_gemm(pool, 64, 2), 0);
    struct clops_op_stats os = gemm_stats(pool);
    ck_assert_str_eq(os.name, "gemm");
    ck_assert_int_eq(os.calls, 2);
    ck_assert_int_eq(os.failures, 0);
    ck_assert_int_gt(os.device_ns, 0); /* profiling on: kernel time recorded */
    struct clops_stats s = {.struct_size = sizeof s};
    ck_assert_int_eq(api->pool_stats(pool, &s), CLOPS_OK);
    ck_assert_int_eq(s.calls, 2);
    /* Exactly A and B in, C out: with beta = 0 C is only written, so it is not uploaded (before
     * issue 10's D1 its whole span went up too, and this asserted >= 3 matrices in). */
    ck_assert_int_eq(s.bytes_uploaded, 2 * 2 * 64 * 64 * 8);
    ck_assert_int_eq(s.bytes_downloaded, 2 * 64 * 64 * 8);
    ck_assert_int_eq(api->pool_op_stats(pool, 99, &os), CLOPS_ERR_NOT_FOUND);
    /* GEMM runs on one device and shares no work: no tasks counted. */
    struct clops_device_stats ds = {.struct_size = sizeof ds};
    ck_assert_int_eq(api->pool_device_stats(pool, 0, &ds), CLOPS_OK);
    ck_assert_int_eq(ds.tasks, 0);
    ck_assert_int_eq(api->pool_device_stats(pool, 1, &ds), CLOPS_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "'index' = 1"));
    api->pool_release(pool);
}
END_TEST

/* Profiling is off unless asked for (its events cost every call time): the default pool counts
 * calls but records no device time. */
START_TEST(test_default_pool_records_no_device_time)
{
    struct clops_pool *pool = tu_new_pool();
    ck_assert_double_ge(checked_gemm(pool, 33, 3), 0);
    const struct clops_op_stats os = gemm_stats(pool);
    ck_assert_int_eq(os.calls, 1);
    ck_assert_int_eq(os.device_ns, 0);
    tu_api()->pool_release(pool);
}
END_TEST

/* ---- Cache across processes ---------------------------------------------------------------- */

struct child_stats {
    int status, correct;
    long long built, loaded, rejected;
};

static struct child_stats run_child(const char *cache_home)
{
    const char *child = getenv("CLOPS_POOL_STATS_CHILD");
    ck_assert_ptr_nonnull(child);
    char cmd[4096];
#ifdef _WIN32
    /* The plugin's cache is %LOCALAPPDATA%\clops there; the child inherits this environment. */
    ck_assert_int_eq(_putenv_s("LOCALAPPDATA", cache_home), 0);
    snprintf(cmd, sizeof cmd, "\"%s\"", child);
#else
    snprintf(cmd, sizeof cmd, "XDG_CACHE_HOME='%s' '%s'", cache_home, child);
#endif
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    struct child_stats s = {-1, 0, -1, -1, -1};
    int n = fscanf(p, "status=%d built=%lld loaded=%lld rejected=%lld correct=%d", &s.status,
                   &s.built, &s.loaded, &s.rejected, &s.correct);
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_eq(n, 5);
    return s;
}

static int corrupt_cache_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strstr(e->d_name, ".bin") == NULL)
            continue;
        char path[4096 + 512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_int_eq(tu_truncate(path, st.st_size / 2), 0);
        n++;
    }
    closedir(d);
    return n;
}

/* Runs the child on the cache under `home` and asserts what it reports: a right result from a call
 * that succeeded (where correct is 1), and the pool's program counts (-1: not checked). */
static void expect_child(const char *home, int correct, long long built, long long loaded,
                         long long rejected)
{
    struct child_stats s = run_child(home);
    if (correct) {
        ck_assert_int_eq(s.status, CLOPS_OK);
        ck_assert_int_eq(s.correct, 1);
    }
    if (built >= 0)
        ck_assert_int_eq(s.built, built);
    if (loaded >= 0)
        ck_assert_int_eq(s.loaded, loaded);
    if (rejected >= 0)
        ck_assert_int_eq(s.rejected, rejected);
}

START_TEST(test_second_process_builds_nothing)
{
    char home[1024];
    snprintf(home, sizeof home, "%s/clops-cache-test-XXXXXX", tu_temp_dir());
    ck_assert_ptr_nonnull(tu_make_temp_dir(home));
    expect_child(home, 1, 1, 0, -1);
    expect_child(home, 1, 0, 1, -1);

    /* A truncated entry is detected, rebuilt and rewritten; the result stays right. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/clops", home);
    ck_assert_int_ge(corrupt_cache_entries(dir), 1);
    expect_child(home, 1, 1, -1, 1);
    expect_child(home, 0, 0, 1, -1);
    tu_remove_tree(home);
}
END_TEST

START_TEST(test_disabled_cache_always_builds)
{
    const struct clops_api *api = tu_api();
    for (int round = 0; round < 2; round++) {
        struct clops_pool *pool = tu_pool_from_string("cache = { enabled = false; };");
        ck_assert_double_ge(checked_gemm(pool, 9, 1), 0);
        struct clops_stats s = {.struct_size = sizeof s};
        api->pool_stats(pool, &s);
        ck_assert_int_eq(s.programs_built, 1);
        ck_assert_int_eq(s.programs_loaded, 0);
        api->pool_release(pool);
    }
}
END_TEST

/* ABI 1.3's build_ns: the time the pool spent building programs, counted when a call compiles
 * and not when it finds its program built; within the wall time of the calls that built. */
START_TEST(test_build_time_is_counted_apart)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_pool_from_string("cache = { enabled = false; };");
    struct clops_stats s = {.struct_size = sizeof s};
    ck_assert_int_eq(api->pool_stats(pool, &s), CLOPS_OK);
    ck_assert_int_eq(s.build_ns, 0);
    const int64_t t0 = tu_monotonic_ns();
    ck_assert_double_ge(checked_gemm(pool, 9, 1), 0);
    const int64_t wall = tu_monotonic_ns() - t0;
    api->pool_stats(pool, &s);
    ck_assert_int_eq(s.programs_built, 1);
    ck_assert_int_gt(s.build_ns, 0);
    ck_assert_int_le(s.build_ns, wall);
    const int64_t built = s.build_ns;
    ck_assert_double_ge(checked_gemm(pool, 9, 2), 0);
    api->pool_stats(pool, &s);
    ck_assert_int_eq(s.build_ns, built);
    api->pool_release(pool);
}
END_TEST

/* ---- Kernel override directory and build errors ------------------------------------------- */

/* Keeps the first WARNING-level message that names a kernel build. */
static void keep_build_warning(int32_t level, const char *message, void *user)
{
    char *kept = user;
    if (level == CLOPS_LOG_WARNING && kept[0] == '\0' && strstr(message, "building kernels/"))
        snprintf(kept, 1024, "%s", message);
}

START_TEST(test_build_warnings_reach_the_log_callback)
{
    /* A build that succeeds with warnings (a macro defined twice by the configured build
     * options) tells the host through its log callback, naming the source, device and options
     * and carrying the compiler's log (issue 25, item 4: never on stderr by clops). */
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_pool_from_string(
        "cache = { enabled = false; }; operators = { transpose = { build_options = "
        "\"-DCLOPS_TWICE=1 -DCLOPS_TWICE=2\"; }; };");
    static char kept[1024];
    kept[0] = '\0';
    api->set_log_callback(keep_build_warning, kept, CLOPS_LOG_WARNING);
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0};
    struct clops_tensor ta = clops_matrix(a, CLOPS_F32, 2, 3, 3, 0);
    struct clops_tensor tb = clops_matrix(b, CLOPS_F32, 3, 2, 2, 0);
    clops_transpose_fn transpose = (clops_transpose_fn)api->op_find("transpose")->entry;
    ck_assert_int_eq(transpose(pool, &ta, &tb), CLOPS_OK);
    api->set_log_callback(NULL, NULL, CLOPS_LOG_ERROR);
    ck_assert_float_eq(b[1], 4.0f); /* b[0][1] = a[1][0] */
    /* PoCL hands the compiler's warnings back as the build log; NVIDIA's OpenCL returns no log
     * for a build that succeeded (its compiler prints "1 warning generated." itself, on the
     * H200 of 2026-11-29), so there the log can only be checked when it comes. */
    struct clops_device_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(api->pool_device_info(pool, 0, &info), CLOPS_OK);
    const int logs_warnings = strstr(info.platform, "Portable Computing Language") != NULL;
    if (logs_warnings || kept[0] != '\0')
        ck_assert_msg(strstr(kept, "kernels/transpose.cl") && strstr(kept, "CLOPS_TWICE") &&
                          strstr(kept, "warning"),
                      "no build warning reached the callback: '%s'", kept);
    api->pool_release(pool);
}
END_TEST

START_TEST(test_build_failure_reports_the_log)
{
    const struct clops_api *api = tu_api();
    struct tu_broken_kernels k;
    tu_broken_gemm_kernels(&k, "/tmp/clops-kernels-XXXXXX");
    struct clops_pool *pool = tu_pool_from_string(k.config);
    float a[4] = {1, 2, 3, 4}, c[4] = {0};
    struct clops_tensor t = clops_matrix(a, CLOPS_F32, 2, 2, 2, 0);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F32, 2, 2, 2, 0);
    clops_gemm_fn gemm = (clops_gemm_fn)api->op_find("gemm")->entry;
    int32_t status = gemm(pool, &t, &t, &tc, 0, 0, 1.0, 0.0);
    ck_assert_int_eq(status, CLOPS_ERR_BUILD);
    const char *msg = api->last_error();
    ck_assert_ptr_nonnull(strstr(msg, "CL_BUILD_PROGRAM_FAILURE"));
    ck_assert_ptr_nonnull(strstr(msg, "build log"));
    ck_assert_ptr_nonnull(strstr(msg, "undeclared_name"));
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(c[i], 0.0f); /* nothing written */
    struct clops_op_stats os = {.struct_size = sizeof os};
    api->pool_op_stats(pool, api->op_index(api->op_find("gemm")), &os);
    ck_assert_int_eq(os.failures, 1);
    api->pool_release(pool);
    /* A missing kernel file in the override directory is an I/O error naming the path. */
    for (int i = 0; i < TU_GEMM_SOURCES; i++)
        unlink(k.paths[i]);
    pool = tu_pool_from_string(k.config);
    ck_assert_int_eq(gemm(pool, &t, &t, &tc, 0, 0, 1.0, 0.0), CLOPS_ERR_IO);
    int named = 0;
    for (int i = 0; i < TU_GEMM_SOURCES; i++)
        named |= strstr(api->last_error(), k.paths[i]) != NULL;
    ck_assert_msg(named, "the I/O error names no kernel file: %s", api->last_error());
    api->pool_release(pool);
    tu_remove_broken_gemm_kernels(&k);
}
END_TEST

START_TEST(test_kernel_dir_override_is_used)
{
    const struct clops_api *api = tu_api();
    const char *src = getenv("CLOPS_SOURCE_DIR");
    ck_assert_ptr_nonnull(src);
    char config[1024];
    snprintf(config, sizeof config, "kernel_dir = \"%s/kernels\";\ncache = { enabled = false; };\n",
             src);
    struct clops_pool *pool = tu_pool_from_string(config);
    double err = checked_gemm(pool, 31, 3);
    ck_assert_double_ge(err, 0);
    ck_assert_double_lt(err, 1e-12);
    api->pool_release(pool);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_TEST(test_two_threads_share_a_pool),
        TU_TEST(test_pool_from_string_picks_cpu),
        TU_TEST(test_missing_device_errors_or_falls_back),
        TU_TEST(test_bad_config_string_names_line_and_key),
        TU_TEST(test_buffers_round_trip_and_check_ranges),
        TU_TEST(test_stats_count_calls_and_device_time),
        TU_TEST(test_default_pool_records_no_device_time),
        TU_TEST(test_second_process_builds_nothing),
        TU_TEST(test_disabled_cache_always_builds),
        TU_TEST(test_build_time_is_counted_apart),
        TU_TEST(test_build_failure_reports_the_log),
        TU_TEST(test_build_warnings_reach_the_log_callback),
        TU_TEST(test_kernel_dir_override_is_used),
    };
    return tu_run_tests("pool", 900, 1, tests, TU_COUNT(tests));
}
