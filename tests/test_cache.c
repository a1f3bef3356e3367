/* test_cache.c — the on-disk program cache: round trips, and that truncated, altered, foreign
 * or garbage entries are rejected and removed without crashing, and that failures stay silent. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "clops.h"
#include "config.h"
#include "entry.h"
#include "error.h"
#include "pool_internal.h" /* test-only: the pool's context and counters */
#include "testutil.h"

/* Layout offsets of an entry (see cache.c): magic 8, version 4, key length 8, key, binary
 * length 8, binary, checksum 8. */
enum { OFF_VERSION = 8, OFF_KEY_LENGTH = 12, OFF_KEY = 20, FIXED_SIZE = 36 };

/* ---- Helpers ------------------------------------------------------------------------------- */

static const char *scratch_dir(void)
{
    const char *dir = getenv("CLOPS_BINARY_DIR");
    return dir != NULL && dir[0] != '\0' ? dir : "/tmp";
}

static void make_temp_dir(char *out, size_t size)
{
    snprintf(out, size, "%s/test_cache_XXXXXX", scratch_dir());
    ck_assert_msg(mkdtemp(out) != NULL, "mkdtemp(%s): %s", out, strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tree(const char *dir)
{
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The tests of entries use a cache in a fresh directory of its own (a checked fixture). */
static struct program_cache fresh;
static char fresh_dir[1024];

static void open_cache(void)
{
    make_temp_dir(fresh_dir, sizeof fresh_dir);
    cache_init(&fresh, 1, fresh_dir);
    ck_assert_int_eq(fresh.enabled, 1);
    ck_assert_str_eq(fresh.dir, fresh_dir);
}

static void close_cache(void)
{
    remove_tree(fresh_dir);
}

/* The documented file name: the hex FNV-1a of the key, ".bin". */
static void entry_file(const struct program_cache *cache, const char *key, char *out, size_t size)
{
    snprintf(out, size, "%s/%016llx.bin", cache->dir,
             (unsigned long long)cache_hash(key, strlen(key), 0));
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static off_t file_size(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_size;
}

static void assert_hit(const struct program_cache *cache, const char *key,
                       const unsigned char *expected, size_t size)
{
    unsigned char *binary = NULL;
    size_t got = 0;
    ck_assert_int_eq(cache_load(cache, key, &binary, &got), CACHE_HIT);
    ck_assert_uint_eq(got, size);
    ck_assert_int_eq(memcmp(binary, expected, size), 0);
    free(binary);
}

static enum cache_result load_result(const struct program_cache *cache, const char *key)
{
    unsigned char *binary = (unsigned char *)1;
    size_t size = 1;
    enum cache_result r = cache_load(cache, key, &binary, &size);
    if (r == CACHE_HIT) {
        free(binary);
    } else {
        ck_assert_ptr_null(binary);
        ck_assert_uint_eq(size, 0);
    }
    return r;
}

/* A corrupt entry is reported once and removed: the next load is a plain miss. */
static void assert_corrupt_then_removed(const struct program_cache *cache, const char *key,
                                        const char *path, const char *what)
{
    ck_assert_msg(load_result(cache, key) == CACHE_CORRUPT, "%s: not CACHE_CORRUPT", what);
    ck_assert_msg(!file_exists(path), "%s: the corrupt entry was not removed", what);
    ck_assert_int_eq(load_result(cache, key), CACHE_MISS);
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, size, f), size);
    ck_assert_int_eq(fclose(f), 0);
}

static unsigned char *read_file(const char *path, size_t *size)
{
    *size = (size_t)file_size(path);
    unsigned char *data = malloc(*size);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(data, 1, *size, f), *size);
    fclose(f);
    return data;
}

static void put_u64(unsigned char *out, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

static int warnings_seen;

static void count_warnings(int32_t level, const char *message, void *user)
{
    (void)message;
    (void)user;
    if (level == CLOPS_LOG_WARNING)
        warnings_seen++;
}

/* ---- Hash ---------------------------------------------------------------------------------- */

START_TEST(test_hash_is_fnv1a_64_and_seed_changes_it)
{
    /* Reference values of 64-bit FNV-1a (Fowler, Noll, Vo: the published test vectors). */
    ck_assert_uint_eq(cache_hash("", 0, 0), 0xcbf29ce484222325ull);
    ck_assert_uint_eq(cache_hash("a", 1, 0), 0xaf63dc4c8601ec8cull);
    ck_assert_uint_eq(cache_hash("foobar", 6, 0), 0x85944171f73967e8ull);
    ck_assert_uint_ne(cache_hash("foobar", 6, 1), cache_hash("foobar", 6, 0));
    ck_assert_uint_ne(cache_hash("foobar", 6, 1), cache_hash("foobar", 6, 2));
}
END_TEST

/* ---- Round trips --------------------------------------------------------------------------- */

START_TEST(test_store_then_load_returns_the_same_bytes)
{
    tu_seed(101);
    char path[1200], key[128];
    const size_t sizes[] = {1, 7, 4099, 65537, 1000003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        snprintf(key, sizeof key, "platform=P|device=D%zu|options=-DN=%zu", i, sizes[i]);
        ck_assert_int_eq(load_result(&fresh, key), CACHE_MISS);
        unsigned char *binary = tu_random_bytes(sizes[i]);
        cache_store(&fresh, key, binary, sizes[i]);
        entry_file(&fresh, key, path, sizeof path);
        ck_assert_msg(file_exists(path), "no entry file %s", path);
        ck_assert_int_eq(file_size(path), (off_t)(FIXED_SIZE + strlen(key) + sizes[i]));
        assert_hit(&fresh, key, binary, sizes[i]);
        /* A second load hits again: loading does not consume the entry. */
        assert_hit(&fresh, key, binary, sizes[i]);
        free(binary);
    }
}
END_TEST

START_TEST(test_store_replaces_an_existing_entry)
{
    tu_seed(102);
    unsigned char *first = tu_random_bytes(333), *second = tu_random_bytes(777);
    cache_store(&fresh, "key", first, 333);
    cache_store(&fresh, "key", second, 777);
    assert_hit(&fresh, "key", second, 777);
    free(first);
    free(second);
}
END_TEST

START_TEST(test_no_temp_files_are_left_after_store)
{
    tu_seed(103);
    char key[64];
    enum { KEYS = 5 };
    for (int i = 0; i < 2 * KEYS; i++) {
        size_t size = 100 + (size_t)i * 37;
        unsigned char *binary = tu_random_bytes(size);
        snprintf(key, sizeof key, "key-%d", i % KEYS); /* each key stored twice */
        cache_store(&fresh, key, binary, size);
        free(binary);
    }
    DIR *d = opendir(fresh_dir);
    ck_assert_ptr_nonnull(d);
    int entries = 0;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        size_t n = strlen(e->d_name);
        ck_assert_msg(n == 20 && strcmp(e->d_name + 16, ".bin") == 0, "stray file '%s'", e->d_name);
        entries++;
    }
    closedir(d);
    ck_assert_int_eq(entries, KEYS);
}
END_TEST

/* ---- Damaged entries ----------------------------------------------------------------------- */

START_TEST(test_truncated_entry_is_corrupt_and_removed)
{
    tu_seed(104);
    char path[1200];
    const char *key = "platform=Portable|device=cpu|source=gemm:0123|options=-DTS=16";
    const size_t binary_size = 1031, key_length = strlen(key);
    const size_t full = FIXED_SIZE + key_length + binary_size;
    /* Empty, inside the magic, the version, the key length, the key, the binary length, the
     * binary and the checksum, and one byte short. */
    const size_t cuts[] = {0,
                           5,
                           OFF_VERSION + 2,
                           OFF_KEY_LENGTH + 3,
                           OFF_KEY,
                           OFF_KEY + key_length / 2,
                           OFF_KEY + key_length,
                           OFF_KEY + key_length + 4,
                           OFF_KEY + key_length + 8 + binary_size / 2,
                           full - 8,
                           full - 1};
    unsigned char *binary = tu_random_bytes(binary_size);
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        cache_store(&fresh, key, binary, binary_size);
        entry_file(&fresh, key, path, sizeof path);
        ck_assert_int_eq(file_size(path), (off_t)full);
        ck_assert_int_eq(truncate(path, (off_t)cuts[i]), 0);
        char what[64];
        snprintf(what, sizeof what, "truncated at %zu of %zu bytes", cuts[i], full);
        assert_corrupt_then_removed(&fresh, key, path, what);
    }
    /* Trailing bytes after the checksum are damage too. */
    cache_store(&fresh, key, binary, binary_size);
    FILE *f = fopen(path, "ab");
    fputs("extra", f);
    fclose(f);
    assert_corrupt_then_removed(&fresh, key, path, "trailing bytes");
    free(binary);
}
END_TEST

/* Stores an entry, changes one byte at `offset` (from the end when negative), and expects the
 * load to reject and remove it. */
static void check_flipped_byte(const struct program_cache *cache, const char *key, long offset,
                               const char *what)
{
    char path[1200];
    size_t size = 2053;
    unsigned char *binary = tu_random_bytes(size);
    cache_store(cache, key, binary, size);
    entry_file(cache, key, path, sizeof path);
    size_t file_length;
    unsigned char *data = read_file(path, &file_length);
    size_t at = offset >= 0 ? (size_t)offset : file_length - (size_t)-offset;
    data[at] ^= 0x20;
    write_file(path, data, file_length);
    assert_corrupt_then_removed(cache, key, path, what);
    free(data);
    free(binary);
}

START_TEST(test_altered_byte_is_corrupt)
{
    tu_seed(105);
    const char *key = "device=X|options=";
    long binary_start = OFF_KEY + (long)strlen(key) + 8;
    check_flipped_byte(&fresh, key, binary_start, "first byte of the binary");
    check_flipped_byte(&fresh, key, binary_start + 1000, "a byte inside the binary");
    check_flipped_byte(&fresh, key, -9, "last byte of the binary");
    check_flipped_byte(&fresh, key, -1, "a byte of the checksum");
    check_flipped_byte(&fresh, key, 0, "a byte of the magic");
    check_flipped_byte(&fresh, key, OFF_VERSION, "the format version");
    check_flipped_byte(&fresh, key, binary_start - 8, "the binary length");
}
END_TEST

START_TEST(test_garbage_file_is_corrupt)
{
    tu_seed(106);
    char path[1200];
    const char *key = "garbage-key";
    entry_file(&fresh, key, path, sizeof path);
    const size_t sizes[] = {1, 35, 36, 37, 4096, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *junk = tu_random_bytes(sizes[i]);
        write_file(path, junk, sizes[i]);
        assert_corrupt_then_removed(&fresh, key, path, "random bytes");
        free(junk);
    }
    const char text[] = "CLOPSBIN is how it starts, but this is a text file.\n";
    write_file(path, text, sizeof text - 1);
    assert_corrupt_then_removed(&fresh, key, path, "text after the magic");
}
END_TEST

/* A valid entry whose length fields claim far more than the file holds: the load must compare
 * them with the file size instead of allocating (under ASan a 2^62-byte malloc aborts). */
START_TEST(test_huge_length_fields_are_corrupt_without_allocation)
{
    tu_seed(107);
    char path[1200];
    const char *key = "huge";
    size_t key_length = strlen(key);
    const uint64_t lies[] = {1ull << 62, UINT64_MAX, UINT64_MAX - 35, 1ull << 31, 1ull << 20};
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        /* The binary length lies. */
        unsigned char *binary = tu_random_bytes(64);
        cache_store(&fresh, key, binary, 64);
        entry_file(&fresh, key, path, sizeof path);
        size_t length;
        unsigned char *data = read_file(path, &length);
        put_u64(data + OFF_KEY + key_length, lies[i]);
        write_file(path, data, length);
        assert_corrupt_then_removed(&fresh, key, path, "binary length past the file");
        /* The key length lies. */
        cache_store(&fresh, key, binary, 64);
        put_u64(data + OFF_KEY + key_length, 64);
        put_u64(data + OFF_KEY_LENGTH, lies[i]);
        write_file(path, data, length);
        assert_corrupt_then_removed(&fresh, key, path, "key length past the file");
        free(data);
        free(binary);
    }
}
END_TEST

/* Two keys whose entries share a file name (a 64-bit hash collision, staged by renaming): the
 * full key stored in the entry tells them apart. The entry is valid, so it is kept. */
START_TEST(test_entry_of_another_key_is_a_miss_and_kept)
{
    tu_seed(108);
    char owner_path[1200], path[1200];
    const char *owner = "key-A";
    const char *others[] = {"key-B", "key-AB", "k", ""};
    unsigned char *binary = tu_random_bytes(500);
    entry_file(&fresh, owner, owner_path, sizeof owner_path);
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        cache_store(&fresh, owner, binary, 500);
        entry_file(&fresh, others[i], path, sizeof path);
        ck_assert_int_eq(rename(owner_path, path), 0);
        ck_assert_msg(load_result(&fresh, others[i]) == CACHE_MISS, "key '%s'", others[i]);
        ck_assert_msg(file_exists(path), "the entry of another key was removed");
        /* Storing the right binary under that name replaces the foreign entry. */
        unsigned char *own = tu_random_bytes(99);
        cache_store(&fresh, others[i], own, 99);
        assert_hit(&fresh, others[i], own, 99);
        free(own);
    }
    free(binary);
}
END_TEST

START_TEST(test_directory_in_place_of_an_entry_is_a_miss)
{
    char path[1200];
    entry_file(&fresh, "key", path, sizeof path);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(load_result(&fresh, "key"), CACHE_MISS);
    ck_assert(file_exists(path));
    /* Storing over it fails quietly and leaves no temp file behind. */
    const unsigned char binary[3] = {1, 2, 3};
    cache_store(&fresh, "key", binary, sizeof binary);
    ck_assert_int_eq(load_result(&fresh, "key"), CACHE_MISS);
    rmdir(path);
    DIR *d = opendir(fresh_dir);
    int files = 0;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d))
        files += e->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(files, 0);
}
END_TEST

/* Opening a FIFO for reading waits for a writer: a FIFO at an entry's path must be a miss at
 * once, not a hang. The alarm turns a hang into a failure. */
START_TEST(test_fifo_in_place_of_an_entry_is_a_miss_without_blocking)
{
    char path[1200];
    entry_file(&fresh, "key", path, sizeof path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    warnings_seen = 0;
    log_set_callback(count_warnings, NULL, CLOPS_LOG_WARNING);
    alarm(20);
    ck_assert_int_eq(load_result(&fresh, "key"), CACHE_MISS);
    alarm(0);
    ck_assert_int_eq(warnings_seen, 1);
    ck_assert(file_exists(path)); /* not ours to delete */
    /* Storing replaces it with a real entry. */
    unsigned char *binary = tu_random_bytes(77);
    cache_store(&fresh, "key", binary, 77);
    assert_hit(&fresh, "key", binary, 77);
    free(binary);
}
END_TEST

/* Entries are only ever made by rename: a symbolic link at an entry's path is not one, even to a
 * valid entry. */
START_TEST(test_symbolic_link_in_place_of_an_entry_is_a_miss)
{
    char path[1200], target[1300];
    unsigned char *binary = tu_random_bytes(50);
    cache_store(&fresh, "key", binary, 50);
    entry_file(&fresh, "key", path, sizeof path);
    snprintf(target, sizeof target, "%s.elsewhere", path);
    ck_assert_int_eq(rename(path, target), 0);
    ck_assert_int_eq(symlink(target, path), 0);
    ck_assert_int_eq(load_result(&fresh, "key"), CACHE_MISS);
    ck_assert(file_exists(target));
    free(binary);
}
END_TEST

/* ---- Directories --------------------------------------------------------------------------- */

START_TEST(test_default_dir_honours_xdg_cache_home_then_home)
{
    char root[1024], xdg[1100], home[1100], expected[1200];
    make_temp_dir(root, sizeof root);
    snprintf(xdg, sizeof xdg, "%s/xdg", root);
    snprintf(home, sizeof home, "%s/home", root);
    struct program_cache cache;

    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    cache_init(&cache, 1, "");
    snprintf(expected, sizeof expected, "%s/clops", xdg);
    ck_assert_int_eq(cache.enabled, 1);
    ck_assert_str_eq(cache.dir, expected);
    struct stat st;
    ck_assert_int_eq(stat(expected, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));

    /* Unset, empty or relative (which the XDG spec says to ignore): $HOME/.cache/clops. */
    snprintf(expected, sizeof expected, "%s/.cache/clops", home);
    const char *ignored[] = {NULL, "", "relative/cache"};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        if (ignored[i] == NULL)
            unsetenv("XDG_CACHE_HOME");
        else
            setenv("XDG_CACHE_HOME", ignored[i], 1);
        cache_init(&cache, 1, NULL);
        ck_assert_int_eq(cache.enabled, 1);
        ck_assert_str_eq(cache.dir, expected);
        ck_assert_int_eq(stat(expected, &st), 0);
    }

    /* A configured directory wins over both. */
    snprintf(expected, sizeof expected, "%s/configured", root);
    cache_init(&cache, 1, expected);
    ck_assert_str_eq(cache.dir, expected);

    /* Neither variable: no cache, with a warning, and no error. */
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    warnings_seen = 0;
    log_set_callback(count_warnings, NULL, CLOPS_LOG_WARNING);
    cache_init(&cache, 1, "");
    ck_assert_int_eq(cache.enabled, 0);
    ck_assert_int_eq(warnings_seen, 1);
    remove_tree(root);
}
END_TEST

START_TEST(test_configured_dir_is_created_with_its_parents)
{
    char root[1024], dir[1100];
    make_temp_dir(root, sizeof root);
    snprintf(dir, sizeof dir, "%s/a/b/c/", root);
    struct program_cache cache;
    cache_init(&cache, 1, dir);
    ck_assert_int_eq(cache.enabled, 1);
    dir[strlen(dir) - 1] = '\0'; /* the trailing slash is dropped */
    ck_assert_str_eq(cache.dir, dir);
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    const unsigned char binary[] = "binary";
    cache_store(&cache, "k", binary, sizeof binary);
    assert_hit(&cache, "k", binary, sizeof binary);
    /* An existing directory is fine too. */
    cache_init(&cache, 1, dir);
    ck_assert_int_eq(cache.enabled, 1);
    assert_hit(&cache, "k", binary, sizeof binary);
    remove_tree(root);
}
END_TEST

START_TEST(test_disabled_cache_never_touches_the_disk)
{
    char dir[1024];
    make_temp_dir(dir, sizeof dir);
    struct program_cache cache;
    cache_init(&cache, 0, dir);
    ck_assert_int_eq(cache.enabled, 0);
    const unsigned char binary[4] = {9, 8, 7, 6};
    cache_store(&cache, "k", binary, sizeof binary);
    ck_assert_int_eq(load_result(&cache, "k"), CACHE_MISS);
    ck_assert_int_eq(rmdir(dir), 0); /* still empty */
}
END_TEST

/* The cache is an optimisation: a directory it cannot create or write disables it with a
 * warning; store does nothing and load misses, and neither reports an error. */
START_TEST(test_unusable_dir_disables_the_cache_quietly)
{
    char root[1024], file[1100], dir[1200];
    make_temp_dir(root, sizeof root);
    warnings_seen = 0;
    log_set_callback(count_warnings, NULL, CLOPS_LOG_WARNING);
    const unsigned char binary[5] = {1, 2, 3, 4, 5};
    struct program_cache cache;

    /* A regular file where a parent directory should be: mkdir fails even for root. */
    snprintf(file, sizeof file, "%s/not-a-dir", root);
    write_file(file, "x", 1);
    snprintf(dir, sizeof dir, "%s/cache", file);
    cache_init(&cache, 1, dir);
    ck_assert_int_eq(cache.enabled, 0);
    ck_assert_int_eq(warnings_seen, 1);
    err_clear();
    cache_store(&cache, "k", binary, sizeof binary);
    ck_assert_int_eq(load_result(&cache, "k"), CACHE_MISS);
    ck_assert_str_eq(err_last(), "");

    /* A read-only directory (only meaningful when not root, who may write anywhere). */
    if (geteuid() != 0) {
        snprintf(dir, sizeof dir, "%s/read-only", root);
        ck_assert_int_eq(mkdir(dir, 0500), 0);
        cache_init(&cache, 1, dir);
        ck_assert_int_eq(cache.enabled, 0);
        cache_store(&cache, "k", binary, sizeof binary);
        ck_assert_int_eq(load_result(&cache, "k"), CACHE_MISS);
        chmod(dir, 0700);
    }

    /* A directory that disappears after init: store logs a warning and writes nothing. */
    snprintf(dir, sizeof dir, "%s/vanishing", root);
    cache_init(&cache, 1, dir);
    ck_assert_int_eq(cache.enabled, 1);
    ck_assert_int_eq(rmdir(dir), 0);
    warnings_seen = 0;
    cache_store(&cache, "k", binary, sizeof binary);
    ck_assert_int_eq(warnings_seen, 1);
    ck_assert_int_eq(load_result(&cache, "k"), CACHE_MISS);
    ck_assert(!file_exists(dir));
    ck_assert_str_eq(err_last(), "");
    remove_tree(root);
}
END_TEST

/* What a process that cannot write `dir` sees: returns 0, or the number of the first check
 * that failed (the caller may be a child that dropped its privileges, outside Check). */
static int read_only_checks(const char *dir, const unsigned char *binary, size_t size)
{
    struct program_cache cache;
    warnings_seen = 0;
    log_set_callback(count_warnings, NULL, CLOPS_LOG_WARNING);
    cache_init(&cache, 1, dir);
    if (cache.enabled != 0 || cache.read_only != 1 || warnings_seen != 1)
        return 1;
    unsigned char *got = NULL;
    size_t got_size = 0;
    if (cache_load(&cache, "k", &got, &got_size) != CACHE_HIT || got_size != size ||
        memcmp(got, binary, size) != 0)
        return 2;
    free(got);
    /* Storing is skipped, quietly: the one warning was init's. */
    cache_store(&cache, "other", binary, size);
    if (load_result(&cache, "other") != CACHE_MISS || warnings_seen != 1)
        return 3;
    return 0;
}

/* A cache directory that can be read but not written (a shared cache, a read-only image) still
 * serves its entries. Root writes anywhere, so as root the checks run in a child that has
 * become nobody. */
START_TEST(test_read_only_dir_still_loads_its_entries)
{
    char dir[] = "/tmp/test_cache_ro_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    struct program_cache cache;
    cache_init(&cache, 1, dir);
    ck_assert_int_eq(cache.enabled, 1);
    unsigned char *binary = tu_random_bytes(123);
    cache_store(&cache, "k", binary, 123);
    ck_assert_int_eq(chmod(dir, 0555), 0);
    int failed;
    if (geteuid() != 0) {
        failed = read_only_checks(dir, binary, 123);
    } else {
        pid_t child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0)
            _exit(setgid(65534) != 0 || setuid(65534) != 0 ? 100
                                                           : read_only_checks(dir, binary, 123));
        int status = 0;
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        ck_assert(WIFEXITED(status));
        failed = WEXITSTATUS(status);
    }
    ck_assert_msg(failed == 0, "read-only check %d failed", failed);
    chmod(dir, 0700);
    free(binary);
    remove_tree(dir);
}
END_TEST

/* ---- Programs built from entries ----------------------------------------------------------- */

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_file(path, text, strlen(text));
}

/* A pool on the first device with its own kernel directory and cache directory. */
static struct clops_pool *program_pool(const char *kernel_dir, const char *cache_dir)
{
    char text[3000];
    snprintf(text, sizeof text, "kernel_dir = \"%s\";\ncache = { dir = \"%s\"; };\n", kernel_dir,
             cache_dir);
    struct pool_config cfg;
    ck_assert_int_eq(config_parse_string(text, &cfg), CLOPS_OK);
    struct clops_pool *pool = NULL;
    ck_assert_msg(pool_create(&cfg, &pool) == CLOPS_OK, "pool_create: %s", err_last());
    return pool;
}

/* The key and binary of the entry at `path` (the layout at the top of this file). */
static void read_entry_file(const char *path, char **key, unsigned char **binary, size_t *size)
{
    size_t file_bytes = 0;
    unsigned char *data = read_file(path, &file_bytes);
    ck_assert_uint_ge(file_bytes, FIXED_SIZE);
    uint64_t key_length = 0, binary_length = 0;
    for (int i = 7; i >= 0; i--)
        key_length = key_length << 8 | data[OFF_KEY_LENGTH + i];
    ck_assert_uint_le(key_length, file_bytes - FIXED_SIZE);
    for (int i = 7; i >= 0; i--)
        binary_length = binary_length << 8 | data[OFF_KEY + key_length + i];
    ck_assert_uint_eq(binary_length, file_bytes - FIXED_SIZE - key_length);
    *key = strndup((const char *)data + OFF_KEY, key_length);
    *binary = malloc(binary_length);
    memcpy(*binary, data + OFF_KEY + key_length + 8, binary_length);
    *size = binary_length;
    free(data);
}

/* Runs kernel `name` of `source` (one float per work-item) on 4 items and returns x[3]. */
static float run_one_kernel(struct clops_pool *pool, const char *source, const char *name)
{
    struct pool_device *dev = &pool->devices[0];
    cl_kernel kernel = NULL;
    ck_assert_msg(pool_create_kernel(pool, dev, "test", source, "", name, &kernel) == CLOPS_OK,
                  "pool_create_kernel(%s): %s", name, err_last());
    cl_int rc;
    float x[4] = {0};
    cl_mem mem = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, sizeof x, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    cl_command_queue queue = pool_acquire_queue(dev);
    size_t global = 4;
    ck_assert_int_eq(clSetKernelArg(kernel, 0, sizeof mem, &mem), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, sizeof x, x, 0, NULL, NULL),
                     CL_SUCCESS);
    clReleaseMemObject(mem);
    clReleaseKernel(kernel);
    return x[3];
}

/* The cache entry of `source` (its key holds "|source=<source>:") in `cache_dir`: key and
 * binary, which the caller frees. */
static void find_entry_of(const char *cache_dir, const char *source, char **key,
                          unsigned char **binary, size_t *size)
{
    char want[64], path[1400];
    snprintf(want, sizeof want, "|source=%s:", source);
    *key = NULL;
    DIR *d = opendir(cache_dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e = readdir(d); e != NULL && *key == NULL; e = readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        char *k;
        unsigned char *b;
        size_t n;
        snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
        read_entry_file(path, &k, &b, &n);
        if (strstr(k, want) != NULL) {
            *key = k;
            *binary = b;
            *size = n;
        } else {
            free(k);
            free(b);
        }
    }
    closedir(d);
    ck_assert_msg(*key != NULL, "no cache entry of %s in %s", source, cache_dir);
}

/* A valid entry that holds another program: the binary of the entry of `other` stored under the
 * key of the entry of `victim`, in cache_dir. */
static void forge_entry(const char *cache_dir, const char *victim, const char *other)
{
    char *key, *other_key;
    unsigned char *binary, *other_binary;
    size_t size, other_size;
    find_entry_of(cache_dir, victim, &key, &binary, &size);
    find_entry_of(cache_dir, other, &other_key, &other_binary, &other_size);
    struct program_cache cache;
    cache_init(&cache, 1, cache_dir);
    cache_store(&cache, key, other_binary, other_size);
    free(key);
    free(binary);
    free(other_key);
    free(other_binary);
}

/* A fresh directory (root) holding an empty kernel directory and, once a pool uses it, a cache
 * directory. */
struct program_dirs {
    char root[1024], kernels[1100], cache[1100];
};

static void make_program_dirs(struct program_dirs *d)
{
    make_temp_dir(d->root, sizeof d->root);
    snprintf(d->kernels, sizeof d->kernels, "%s/kernels", d->root);
    snprintf(d->cache, sizeof d->cache, "%s/cache", d->root);
    ck_assert_int_eq(mkdir(d->kernels, 0700), 0);
}

/* LU factors a 5 x 5 f64 matrix through the operator's entry, on a pool over `cache_dir`. */
static int32_t lu_through_entry(const char *cache_dir, double *a, int32_t *ipiv, int64_t *rejected)
{
    static const double start[25] = {4, 1, 2, 0, 3, 1, 5, 1, 2, 0, 2, 1, 6,
                                     1, 1, 0, 2, 1, 7, 2, 3, 0, 1, 2, 8};
    memcpy(a, start, sizeof start);
    struct clops_pool *pool = program_pool("", cache_dir);
    const struct clops_op *op = entry_table(CLOPS_ABI_MAJOR)->op_find("lu");
    ck_assert_ptr_nonnull(op);
    int32_t info = -1;
    struct clops_tensor ta = {a, NULL, 0, CLOPS_F64, 2, {5, 5}, {5, 1}};
    struct clops_tensor tp = {ipiv, NULL, 0, CLOPS_I32, 1, {5}, {1}};
    struct clops_tensor ti = {&info, NULL, 0, CLOPS_I32, 1, {1}, {1}};
    int32_t status = ((clops_lu_fn)op->entry)(pool, &ta, &tp, &ti, 0);
    *rejected = pool->cache_rejected;
    pool_release(pool);
    return status;
}

/* The same for LU, whose kernels come from one program: a cached "lu" entry holding another
 * program's binary is dropped and LU rebuilt, giving the same factors. Before, LU created its
 * kernels outside pool_create_kernel and failed with CL_INVALID_KERNEL_NAME on every run. */
START_TEST(test_lu_entry_holding_another_programs_binary_is_rebuilt_once)
{
    struct program_dirs d;
    make_program_dirs(&d);
    double a[25], again[25];
    int32_t ipiv[5], ipiv_again[5];
    int64_t rejected = 0;
    ck_assert_msg(lu_through_entry(d.cache, a, ipiv, &rejected) == CLOPS_OK, "lu: %s", err_last());
    /* A program with no LU kernel in it, under LU's key. */
    struct clops_pool *pool = program_pool("", d.cache);
    cl_kernel kernel = NULL;
    ck_assert_msg(
        pool_create_kernel(pool, &pool->devices[0], "test", "transpose",
                           "-DT=float -DTILE=8 -DROWS=2 -DVEC=4 -DVEC_TILE=8 -DVEC_ROWS=2",
                           "transpose", &kernel) == CLOPS_OK,
        "transpose: %s", err_last());
    clReleaseKernel(kernel);
    pool_release(pool);
    forge_entry(d.cache, "lu", "transpose");

    ck_assert_msg(lu_through_entry(d.cache, again, ipiv_again, &rejected) == CLOPS_OK,
                  "lu over the forged entry: %s", err_last());
    ck_assert_int_eq(rejected, 1);
    ck_assert_mem_eq(again, a, sizeof a);
    ck_assert_mem_eq(ipiv_again, ipiv, sizeof ipiv);
    /* The rebuilt entry serves the next pool. */
    ck_assert_int_eq(lu_through_entry(d.cache, again, ipiv_again, &rejected), CLOPS_OK);
    ck_assert_int_eq(rejected, 0);
    ck_assert_mem_eq(again, a, sizeof a);
    remove_tree(d.root);
}
END_TEST

/* A FIFO in the kernel directory is refused with a message, never waited on. */
START_TEST(test_fifo_kernel_source_is_an_error_without_blocking)
{
    struct program_dirs d;
    make_program_dirs(&d);
    char path[1200];
    snprintf(path, sizeof path, "%s/piped.cl", d.kernels);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    struct clops_pool *pool = program_pool(d.kernels, d.cache);
    cl_kernel kernel = NULL;
    alarm(20);
    int32_t status =
        pool_create_kernel(pool, &pool->devices[0], "test", "piped", "", "piped", &kernel);
    alarm(0);
    ck_assert_int_eq(status, CLOPS_ERR_IO);
    ck_assert_ptr_null(kernel);
    ck_assert_msg(strstr(err_last(), path) != NULL && strstr(err_last(), "a FIFO") != NULL,
                  "message: %s", err_last());
    pool_release(pool);
    remove_tree(d.root);
}
END_TEST

/* A program of several source files ("joined_a+joined_b") is built from them joined in that
 * order: the kernel of the second calls a function of the first, which alone it cannot build;
 * a changed file changes the program's cache key; a name with an empty part, or ending in '+',
 * is refused. */
START_TEST(test_a_program_of_joined_sources)
{
    struct program_dirs d;
    make_program_dirs(&d);
    write_text(d.kernels, "joined_a.cl", "float tripled(float x) { return 3.0f * x + 1.0f; }");
    write_text(d.kernels, "joined_b.cl",
               "__kernel void joined(__global float *x) "
               "{ x[get_global_id(0)] = tripled((float)get_global_id(0)); }\n");
    struct clops_pool *pool = program_pool(d.kernels, d.cache);
    ck_assert_float_eq(run_one_kernel(pool, "joined_a+joined_b", "joined"), 10.0f);
    ck_assert_int_eq(pool->programs_built, 1);
    cl_kernel kernel = NULL;
    ck_assert_int_eq(
        pool_create_kernel(pool, &pool->devices[0], "test", "joined_b", "", "joined", &kernel),
        CLOPS_ERR_BUILD);
    ck_assert_int_eq(pool_create_kernel(pool, &pool->devices[0], "test", "joined_a++joined_b", "",
                                        "joined", &kernel),
                     CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err_last(), "joined_a++joined_b") != NULL, "message: %s", err_last());
    ck_assert_int_eq(
        pool_create_kernel(pool, &pool->devices[0], "test", "joined_a+", "", "joined", &kernel),
        CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(kernel);
    pool_release(pool);

    /* The first file changed: the next pool builds again, and runs the new text. */
    write_text(d.kernels, "joined_a.cl", "float tripled(float x) { return 3.0f * x + 2.0f; }");
    pool = program_pool(d.kernels, d.cache);
    ck_assert_float_eq(run_one_kernel(pool, "joined_a+joined_b", "joined"), 11.0f);
    ck_assert_int_eq(pool->programs_built, 1);
    ck_assert_int_eq(pool->programs_loaded, 0);
    pool_release(pool);
    remove_tree(d.root);
}
END_TEST

/* An entry with the right key and checksum can hold another program's binary: it builds, but
 * the kernel is not in it (CL_INVALID_KERNEL_NAME). The pool must drop it and rebuild from
 * source once, and the rewritten entry must then serve later pools. */
START_TEST(test_entry_holding_another_programs_binary_is_rebuilt_once)
{
    struct program_dirs d;
    make_program_dirs(&d);
    write_text(d.kernels, "first.cl",
               "__kernel void first(__global float *x) "
               "{ x[get_global_id(0)] = 1.0f; }\n");
    write_text(d.kernels, "second.cl",
               "__kernel void second(__global float *x) "
               "{ x[get_global_id(0)] = 2.0f; }\n");
    struct clops_pool *pool = program_pool(d.kernels, d.cache);
    ck_assert_float_eq(run_one_kernel(pool, "first", "first"), 1.0f);
    ck_assert_float_eq(run_one_kernel(pool, "second", "second"), 2.0f);
    ck_assert_int_eq(pool->programs_built, 2);
    pool_release(pool);

    /* The first program's binary under the second's key, with a valid checksum. */
    forge_entry(d.cache, "second", "first");

    /* Loaded, found wanting, dropped and built from source: once, however many kernels follow. */
    pool = program_pool(d.kernels, d.cache);
    ck_assert_float_eq(run_one_kernel(pool, "second", "second"), 2.0f);
    ck_assert_float_eq(run_one_kernel(pool, "second", "second"), 2.0f);
    ck_assert_int_eq(pool->programs_loaded, 1);
    ck_assert_int_eq(pool->cache_rejected, 1);
    ck_assert_int_eq(pool->programs_built, 1);
    pool_release(pool);

    /* The entry now holds the second program: the next pool builds nothing. */
    pool = program_pool(d.kernels, d.cache);
    ck_assert_float_eq(run_one_kernel(pool, "second", "second"), 2.0f);
    ck_assert_int_eq(pool->programs_loaded, 1);
    ck_assert_int_eq(pool->cache_rejected, 0);
    ck_assert_int_eq(pool->programs_built, 0);
    pool_release(pool);
    remove_tree(d.root);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_CASE_FIXTURE("entries", open_cache, close_cache),
        TU_TEST(test_hash_is_fnv1a_64_and_seed_changes_it),
        TU_TEST(test_store_then_load_returns_the_same_bytes),
        TU_TEST(test_store_replaces_an_existing_entry),
        TU_TEST(test_no_temp_files_are_left_after_store),
        TU_CASE_FIXTURE("damage", open_cache, close_cache),
        TU_TEST(test_truncated_entry_is_corrupt_and_removed),
        TU_TEST(test_altered_byte_is_corrupt),
        TU_TEST(test_garbage_file_is_corrupt),
        TU_TEST(test_huge_length_fields_are_corrupt_without_allocation),
        TU_TEST(test_entry_of_another_key_is_a_miss_and_kept),
        TU_TEST(test_directory_in_place_of_an_entry_is_a_miss),
        TU_TEST(test_fifo_in_place_of_an_entry_is_a_miss_without_blocking),
        TU_TEST(test_symbolic_link_in_place_of_an_entry_is_a_miss),
        TU_CASE("directories"),
        TU_TEST(test_default_dir_honours_xdg_cache_home_then_home),
        TU_TEST(test_configured_dir_is_created_with_its_parents),
        TU_TEST(test_disabled_cache_never_touches_the_disk),
        TU_TEST(test_unusable_dir_disables_the_cache_quietly),
        TU_TEST(test_read_only_dir_still_loads_its_entries),
        TU_CASE("programs"),
        TU_TEST(test_entry_holding_another_programs_binary_is_rebuilt_once),
        TU_TEST(test_fifo_kernel_source_is_an_error_without_blocking),
        TU_TEST(test_a_program_of_joined_sources),
        TU_TEST(test_lu_entry_holding_another_programs_binary_is_rebuilt_once),
    };
    return tu_run_tests("cache", 0, 1, tests, TU_COUNT(tests));
}
