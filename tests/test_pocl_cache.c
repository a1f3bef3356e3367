/* test_pocl_cache.c — PoCL's kernel cache on a full disk (issue 22): PoCL's compiler ends the
 * process when a write to its cache fails for want of space, so clops refuses to build on PoCL
 * below a free-space threshold, with an error naming the directory, the free bytes and the
 * workaround. The full disks are tmpfs mounts in a private mount namespace (root only); without
 * one, or without a PoCL device, the suite exits 77, which ctest reports as skipped. Each test
 * runs in a fresh child (Check's fork mode), as PoCL chooses its cache directory once per
 * process. */
#include <check.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

enum { SKIP = 77 };

/* A pool configuration for the PoCL device only, to which tests append settings. */
#define POCL_POOL "devices = ( { vendor = \"Portable\"; } ); cpu_fallback = false; "

static const struct clops_api *api;
static char full[64] = "/tmp/clops-pocl-full-XXXXXX";     /* 1 MiB, 200 KiB of it free */
static char packed[64] = "/tmp/clops-pocl-packed-XXXXXX"; /* 1 MiB, none of it free */
static char roomy[64] = "/tmp/clops-pocl-roomy-XXXXXX";   /* 80 MiB, over clops's threshold */

static void setup(void)
{
    api = tu_api();
}

static int64_t free_bytes(const char *dir)
{
    struct statvfs st;
    ck_assert_int_eq(statvfs(dir, &st), 0);
    return (int64_t)st.f_bavail * (int64_t)st.f_frsize;
}

/* gemm of a 2 x 2 f32 product on `pool`: its status, and whether C is right when it ran. */
static int32_t gemm_2x2(struct clops_pool *pool, int *right)
{
    float a[4] = {1, 2, 3, 4}, c[4] = {0};
    struct clops_tensor ta = clops_matrix(a, CLOPS_F32, 2, 2, 2, 0);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F32, 2, 2, 2, 0);
    int32_t status = ((clops_gemm_fn)tu_op("gemm")->entry)(pool, &ta, &ta, &tc, 0, 0, 1.0, 0.0);
    *right = c[0] == 7 && c[1] == 10 && c[2] == 15 && c[3] == 22;
    return status;
}

/* The refusal a build gets with PoCL's cache in `dir` on the tmpfs at `disk`: nothing built or
 * loaded, and the message names the directory, the free bytes and the workaround. */
static void expect_refused(struct clops_pool *pool, const char *dir, const char *disk)
{
    int right;
    ck_assert_int_eq(gemm_2x2(pool, &right), CLOPS_ERR_IO);
    const char *msg = api->last_error();
    char bytes[64];
    snprintf(bytes, sizeof bytes, "has %lld bytes free", (long long)free_bytes(disk));
    ck_assert_msg(strstr(msg, dir) != NULL, "no '%s' in: %s", dir, msg);
    ck_assert_msg(strstr(msg, bytes) != NULL, "no '%s' in: %s", bytes, msg);
    ck_assert_msg(strstr(msg, "set POCL_CACHE_DIR") != NULL, "no workaround in: %s", msg);
    struct clops_stats stats = {.struct_size = sizeof stats};
    ck_assert_int_eq(api->pool_stats(pool, &stats), CLOPS_OK);
    ck_assert_int_eq(stats.programs_built, 0);
    ck_assert_int_eq(stats.programs_loaded, 0);
}

START_TEST(test_build_refused_when_pocl_cache_dir_is_full)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/pocl", full);
    setenv("POCL_CACHE_DIR", dir, 1);
    struct clops_pool *pool = tu_pool_from_string(POCL_POOL "cache = { enabled = false; };");
    expect_refused(pool, dir, full);
    api->pool_release(pool);
}
END_TEST

/* Without POCL_CACHE_DIR PoCL writes under $XDG_CACHE_HOME, where clops keeps its cache too. */
START_TEST(test_build_refused_when_xdg_cache_home_is_full)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/pocl/kcache", full);
    unsetenv("POCL_CACHE_DIR");
    unsetenv("POCL_KERNEL_CACHE");
    setenv("XDG_CACHE_HOME", full, 1);
    struct clops_pool *pool = tu_pool_from_string(POCL_POOL);
    expect_refused(pool, dir, full);
    api->pool_release(pool);
}
END_TEST

/* Loading a program from clops's cache writes to PoCL's too (on a disk with no space left, PoCL
 * aborted the process): refused as well. A child fills clops's cache in `roomy` first, with
 * PoCL's cache there too. */
START_TEST(test_cached_program_refused_when_pocl_cache_dir_is_full)
{
    char config[256], dir[128];
    snprintf(config, sizeof config, POCL_POOL "cache = { dir = \"%s/clops\"; };", roomy);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        snprintf(dir, sizeof dir, "%s/pocl", roomy);
        setenv("POCL_CACHE_DIR", dir, 1);
        struct clops_pool *pool = NULL;
        int right = 0;
        _exit(api->pool_create_from_string(config, &pool) == CLOPS_OK &&
                      gemm_2x2(pool, &right) == CLOPS_OK && right
                  ? 0
                  : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's gemm failed");
    snprintf(dir, sizeof dir, "%s/pocl", packed);
    setenv("POCL_CACHE_DIR", dir, 1);
    struct clops_pool *pool = tu_pool_from_string(config);
    expect_refused(pool, dir, packed);
    api->pool_release(pool);
}
END_TEST

/* The same build with room in PoCL's cache: the threshold decides, not the kind of disk. */
START_TEST(test_build_runs_when_pocl_cache_dir_has_room)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/pocl", roomy);
    setenv("POCL_CACHE_DIR", dir, 1);
    struct clops_pool *pool = tu_pool_from_string(POCL_POOL "cache = { enabled = false; };");
    int right;
    ck_assert_msg(gemm_2x2(pool, &right) == CLOPS_OK, "gemm: %s", api->last_error());
    ck_assert(right);
    api->pool_release(pool);
}
END_TEST

/* A private mount namespace, so that the tmpfs mounts vanish with this process; 0 when the
 * process may not make one (not root). */
static int private_mounts(void)
{
    return unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
}

/* A tmpfs of `size` ("1m") on a new directory made from `pattern`, with all but `leave` bytes
 * of it taken by a file. */
static int mount_tmpfs(char *pattern, const char *size, int64_t leave)
{
    char options[32];
    snprintf(options, sizeof options, "size=%s", size);
    if (mkdtemp(pattern) == NULL || mount("tmpfs", pattern, "tmpfs", 0, options) != 0)
        return 0;
    struct statvfs st;
    if (statvfs(pattern, &st) != 0)
        return 0;
    int64_t fill = (int64_t)st.f_bavail * (int64_t)st.f_frsize - leave;
    char path[128];
    snprintf(path, sizeof path, "%s/fill", pattern);
    FILE *f = fopen(path, "wb");
    static const char block[4096];
    for (int64_t n = 0; f != NULL && n < fill; n += sizeof block)
        fwrite(block, 1, sizeof block, f);
    return f != NULL && fclose(f) == 0;
}

/* Whether a pool on a PoCL device can be made, asked in a child: this process's first OpenCL
 * calls stay for the tests' children, after they set where PoCL's cache is. */
int main(void)
{
    if (!tu_child_creates_pool(POCL_POOL)) {
        printf("test_pocl_cache: SKIP: no PoCL device\n");
        return SKIP;
    }
    if (!private_mounts()) {
        printf("test_pocl_cache: SKIP: cannot mount a tmpfs here (not root?)\n");
        return SKIP;
    }
    if (!mount_tmpfs(full, "1m", 200 << 10) || !mount_tmpfs(packed, "1m", 0) ||
        !mount_tmpfs(roomy, "80m", 80 << 20)) {
        perror("test_pocl_cache: making the tmpfs mounts");
        return EXIT_FAILURE;
    }
    const struct tu_test tests[] = {
        TU_TEST(test_build_refused_when_pocl_cache_dir_is_full),
        TU_TEST(test_build_refused_when_xdg_cache_home_is_full),
        TU_TEST(test_cached_program_refused_when_pocl_cache_dir_is_full),
        TU_TEST(test_build_runs_when_pocl_cache_dir_has_room),
    };
    Suite *s = suite_create("pocl_cache");
    tcase_add_checked_fixture(tu_add_tests(s, "full_disk", 300, tests, TU_COUNT(tests)), setup,
                              NULL);
    int status = tu_run_suite(s, 1);
    const char *mounts[] = {full, packed, roomy};
    for (size_t i = 0; i < sizeof mounts / sizeof mounts[0]; i++) {
        umount(mounts[i]);
        rmdir(mounts[i]);
    }
    return status;
}
