/* test_platform.c — plugin/platform.h, the plugin's only view of the OS, on the OS it was built
 * for: on Linux (POSIX) and under Wine (Win32), the same assertions. */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"
#include "testutil.h"

static char scratch[600];

static void make_scratch(void)
{
    snprintf(scratch, sizeof scratch, "%s/clops-platform-XXXXXX", tu_temp_dir());
    ck_assert_ptr_nonnull(tu_make_temp_dir(scratch));
}

static void remove_scratch(void)
{
    tu_remove_tree(scratch);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void expect_contents(const char *path, const char *text)
{
    struct os_file_info info;
    FILE *f = os_open_regular(path, OS_OPEN_NO_SYMLINK, &info);
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(info.kind, OS_FILE_REGULAR);
    ck_assert_uint_eq(info.size, strlen(text));
    char got[64] = "";
    ck_assert_uint_eq(fread(got, 1, sizeof got - 1, f), strlen(text));
    fclose(f);
    ck_assert_str_eq(got, text);
}

/* The cache's store: a new file only if none is there, then a replace over an existing entry
 * (rename refuses that on Windows; MoveFileEx replaces), read back whole. */
START_TEST(test_create_new_and_replace_over_an_existing_file)
{
    char entry[700], temp[700];
    snprintf(entry, sizeof entry, "%s/entry.bin", scratch);
    snprintf(temp, sizeof temp, "%s/entry.bin.tmp", scratch);
    write_file(entry, "old");
    FILE *f = os_create_new(entry);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(errno, EEXIST);
    f = os_create_new(temp);
    ck_assert_ptr_nonnull(f);
    fputs("the new entry", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(os_replace_file(temp, entry), 0);
    expect_contents(entry, "the new entry");
    struct os_file_info gone;
    ck_assert_int_eq(os_file_info_at(temp, &gone), ENOENT);
}
END_TEST

/* A file's identity survives a look by name and a look by the opened stream, and changes when
 * another file is renamed onto the name (what the cache's remove_entry relies on). */
START_TEST(test_file_identity_tells_a_replaced_file_apart)
{
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/a", scratch);
    snprintf(b, sizeof b, "%s/b", scratch);
    write_file(a, "aaaa");
    write_file(b, "bb");
    struct os_file_info by_name, by_stream, after;
    ck_assert_int_eq(os_file_info_at(a, &by_name), 0);
    FILE *f = os_open_regular(a, 0, &by_stream);
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(by_name.kind, OS_FILE_REGULAR);
    ck_assert_uint_eq(by_name.size, 4);
    ck_assert(by_name.volume == by_stream.volume && by_name.index == by_stream.index);
    ck_assert_int_eq(os_replace_file(b, a), 0);
    ck_assert_int_eq(os_file_info_at(a, &after), 0);
    ck_assert_uint_eq(after.size, 2);
    ck_assert(after.volume != by_name.volume || after.index != by_name.index);
}
END_TEST

START_TEST(test_directories_are_made_found_and_refused_as_files)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/sub", scratch);
    ck_assert(!os_is_directory(dir));
    ck_assert_int_eq(os_make_dir(dir), 0);
    ck_assert_int_eq(os_make_dir(dir), EEXIST);
    ck_assert(os_is_directory(dir));
    ck_assert_int_eq(os_dir_access(dir, 0), 0);
    ck_assert_int_eq(os_dir_access(dir, 1), 0);
    struct os_file_info info;
    errno = 0;
    ck_assert_ptr_null(os_open_regular(dir, 0, &info));
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(info.kind, OS_FILE_DIRECTORY);
    ck_assert_str_eq(os_file_kind_name(info.kind), "a directory");
    char missing[720];
    snprintf(missing, sizeof missing, "%s/none/deeper", scratch);
    ck_assert_int_eq(os_make_dir(missing), ENOENT);
    ck_assert_ptr_null(os_open_regular(missing, 0, &info));
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_ge(os_free_bytes(scratch), 1);
}
END_TEST

START_TEST(test_paths_and_the_cache_directory_follow_the_os)
{
    char dir[1024];
    const int n = os_default_cache_dir(dir, sizeof dir);
    ck_assert_int_gt(n, 0);
    ck_assert_uint_eq(strlen(dir), (size_t)n);
    ck_assert(os_path_is_absolute(dir));
    ck_assert_int_eq(os_default_cache_dir(dir, 4), -1);
#ifdef _WIN32
    /* %LOCALAPPDATA%\clops */
    const char *local = getenv("LOCALAPPDATA");
    ck_assert_ptr_nonnull(local);
    char want[1024];
    snprintf(want, sizeof want, "%s\\clops", local);
    os_default_cache_dir(dir, sizeof dir);
    ck_assert_str_eq(dir, want);
    ck_assert(os_path_is_absolute("C:\\x") && os_path_is_absolute("c:/x"));
    ck_assert(os_path_is_absolute("\\\\server\\share"));
    ck_assert(!os_path_is_absolute("x\\y") && !os_path_is_absolute("C:x"));
    ck_assert(os_is_path_separator('\\') && os_is_path_separator('/'));
#else
    ck_assert_str_eq(dir + n - strlen("/clops"), "/clops");
    ck_assert(os_path_is_absolute("/x") && !os_path_is_absolute("x/y"));
    ck_assert(os_is_path_separator('/') && !os_is_path_separator('\\'));
#endif
}
END_TEST

static atomic_int once_runs;

static void run_once(void)
{
    atomic_fetch_add(&once_runs, 1);
}

static os_once once = OS_ONCE_INIT;
static os_mutex lock = OS_MUTEX_INIT;
static os_cond changed;
static int counter;

static void *worker(void *arg)
{
    os_call_once(&once, run_once);
    for (int i = 0; i < 10000; i++) {
        os_mutex_lock(&lock);
        counter++;
        os_mutex_unlock(&lock);
    }
    os_mutex_lock(&lock);
    os_cond_broadcast(&changed);
    os_mutex_unlock(&lock);
    return arg;
}

/* Threads, a lock, once and a condition: 4 threads add 10000 each under the lock; once ran
 * once; a timed wait ends at its deadline, not before, when nothing signals. */
START_TEST(test_threads_locks_once_and_timed_waits)
{
    ck_assert_int_eq(os_cond_init(&changed), 0);
    os_thread t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(os_thread_start(&t[i], worker, NULL), 0);
    for (int i = 0; i < 4; i++)
        os_thread_join(t[i]);
    ck_assert_int_eq(counter, 40000);
    ck_assert_int_eq(atomic_load(&once_runs), 1);
    os_mutex_lock(&lock);
    const int64_t start = os_monotonic_ns(), deadline = start + 30000000; /* 30 ms */
    int timed_out = 0;
    while (!timed_out)
        timed_out = os_cond_wait_until(&changed, &lock, deadline);
    const int64_t waited = os_monotonic_ns() - start;
    os_mutex_unlock(&lock);
    ck_assert_msg(waited >= 30000000, "a 30 ms wait ended after %lld ns", (long long)waited);
    ck_assert_int_eq(os_cond_wait_until(&changed, &lock, start), 1); /* already past */
    os_cond_destroy(&changed);
    const int64_t before = os_monotonic_ns();
    os_sleep_ns(5000000);
    ck_assert_int_ge(os_monotonic_ns() - before, 5000000);
}
END_TEST

START_TEST(test_process_and_memory_facts)
{
    ck_assert_int_gt(os_process_id(), 0);
    ck_assert_int_ge(os_cpu_count(), 1);
    const size_t page = os_page_size();
    ck_assert(page >= 4096 && (page & (page - 1)) == 0);
    void *p = os_aligned_alloc(page, 3 * page + 5);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % page, 0);
    memset(p, 0x5a, 3 * page + 5);
    os_aligned_free(p);
    /* The wall clock is past 2020-01-01 and moves. */
    ck_assert_int_gt(os_wall_clock_ns(), (int64_t)1577836800 * 1000000000);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_CASE_FIXTURE("platform", make_scratch, remove_scratch),
        TU_TEST(test_create_new_and_replace_over_an_existing_file),
        TU_TEST(test_file_identity_tells_a_replaced_file_apart),
        TU_TEST(test_directories_are_made_found_and_refused_as_files),
        TU_TEST(test_paths_and_the_cache_directory_follow_the_os),
        TU_TEST(test_threads_locks_once_and_timed_waits),
        TU_TEST(test_process_and_memory_facts),
    };
    return tu_run_tests("platform", 60, 0, tests, TU_COUNT(tests));
}
