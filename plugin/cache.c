/* cache.c — the on-disk cache of OpenCL program binaries: one file per key, written atomically
 * and verified on load, so a crash, a full disk or a stray file costs a rebuild, never a crash. */
#include "cache.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "platform.h"

/* An entry, integers little-endian so that the layout is the same whatever wrote it:
 *   "CLOPSBIN"  u32 format version  u64 key length  key bytes
 *   u64 binary length  binary bytes  u64 FNV-1a-64 of the binary bytes
 * The full key is stored because file names are only a 64-bit hash of it. */
static const unsigned char entry_magic[8] = {'C', 'L', 'O', 'P', 'S', 'B', 'I', 'N'};

enum {
    ENTRY_FORMAT_VERSION = 1,
    ENTRY_HEADER_SIZE = 8 + 4 + 8,                /* magic, version, key length */
    ENTRY_FIXED_SIZE = ENTRY_HEADER_SIZE + 8 + 8, /* plus binary length and checksum */
    /* Program binaries are megabytes at most; a larger "entry" is garbage, and refusing it
     * keeps a stray file from making load allocate without bound. */
    ENTRY_MAX_SIZE = 1 << 30,
    /* Room for "<dir>/<16 hex>.bin.tmp.<pid>.<16 hex>". */
    ENTRY_PATH_MAX = CONFIG_PATH_MAX + 64,
    KEY_COMPARE_CHUNK = 256
};

static const uint64_t fnv_offset_basis = 14695981039346656037ull;
static const uint64_t fnv_prime = 1099511628211ull;

uint64_t cache_hash(const void *data, size_t size, uint64_t seed)
{
    const unsigned char *bytes = data;
    uint64_t h = fnv_offset_basis ^ seed;
    for (size_t i = 0; i < size; i++) {
        h ^= bytes[i];
        h *= fnv_prime;
    }
    return h;
}

static void put_u32(unsigned char *out, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *out, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *in)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | in[i];
    return v;
}

static uint64_t get_u64(const unsigned char *in)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | in[i];
    return v;
}

/* ---- The directory ------------------------------------------------------------------------- */

/* The XDG base directory spec says a relative $XDG_CACHE_HOME is invalid and must be ignored. */
static int resolve_dir(const char *configured, char *out, size_t size)
{
    int n;
    if (configured != NULL && configured[0] != '\0') {
        n = snprintf(out, size, "%s", configured);
        n = n >= 0 && (size_t)n >= size ? -1 : n;
    } else {
        n = os_default_cache_dir(out, size);
    }
    if (n == 0) {
        log_msg(CLOPS_LOG_WARNING, "cache: %s; caching disabled", os_cache_dir_variables);
        return 0;
    }
    if (n < 0) {
        log_msg(CLOPS_LOG_WARNING, "cache: directory path is too long (%d bytes); caching disabled",
                n);
        return 0;
    }
    /* Trailing slashes would only double the separator in entry names. */
    while (n > 1 && os_is_path_separator(out[n - 1]))
        out[--n] = '\0';
    return 1;
}

/* mkdir -p. New directories get mode 0700, as the XDG spec asks for the cache's parents; what
 * already exists is left alone. Returns 0 or an errno value. */
static int make_dirs(const char *path)
{
    char partial[CONFIG_PATH_MAX];
    size_t length = strlen(path);
    if (length >= sizeof partial)
        return ENAMETOOLONG;
    memcpy(partial, path, length + 1);
    for (size_t i = 1; i <= length; i++) {
        if (!os_is_path_separator(partial[i]) && partial[i] != '\0')
            continue;
        char saved = partial[i];
        partial[i] = '\0';
        /* mkdir can fail with EACCES or EROFS on a directory that exists, so ask stat. */
        int error = os_make_dir(partial);
        if (error != 0 && error != EEXIST && !os_is_directory(partial))
            return error;
        partial[i] = saved;
    }
    return os_is_directory(path) ? 0 : ENOTDIR;
}

void cache_init(struct program_cache *cache, int32_t enabled, const char *configured_dir)
{
    memset(cache, 0, sizeof *cache);
    if (!enabled || !resolve_dir(configured_dir, cache->dir, sizeof cache->dir))
        return;
    int error = make_dirs(cache->dir);
    if (error != 0) {
        log_msg(CLOPS_LOG_WARNING, "cache: cannot use directory '%s': %s; caching disabled",
                cache->dir, strerror(error));
        return;
    }
    /* Checked once here, so an unwritable directory costs one warning, not one per program.
     * Its entries are still good to load: a shared, read-only cache (a system image, another
     * user's) is a use, not a mistake. */
    error = os_dir_access(cache->dir, 1);
    if (error != 0) {
        cache->read_only = os_dir_access(cache->dir, 0) == 0;
        log_msg(CLOPS_LOG_WARNING, "cache: cannot write to directory '%s': %s; %s", cache->dir,
                strerror(error),
                cache->read_only ? "its entries are loaded but none is stored"
                                 : "caching disabled");
        return;
    }
    cache->enabled = 1;
    log_msg(CLOPS_LOG_DEBUG, "cache: directory '%s'", cache->dir);
}

static int entry_path(const struct program_cache *cache, const char *key, char *out, size_t size)
{
    unsigned long long h = (unsigned long long)cache_hash(key, strlen(key), 0);
    int n = snprintf(out, size, "%s/%016llx.bin", cache->dir, h);
    return n > 0 && (size_t)n < size;
}

/* ---- Load ---------------------------------------------------------------------------------- */

static int read_exact(FILE *f, void *out, size_t size)
{
    return fread(out, 1, size, f) == size;
}

/* Whether the next `length` bytes of `f` are `key`, read in chunks: the length was checked
 * against the file size, but a key never needs a heap copy to be compared. */
static int key_matches(FILE *f, const char *key, size_t length)
{
    unsigned char chunk[KEY_COMPARE_CHUNK];
    for (size_t done = 0; done < length;) {
        size_t n = length - done < sizeof chunk ? length - done : sizeof chunk;
        if (!read_exact(f, chunk, n) || memcmp(chunk, key + done, n) != 0)
            return 0;
        done += n;
    }
    return 1;
}

/* Reads the rest of an entry, from its binary length on; `binary_length` is known to fit the
 * file. On failure sets *why. */
static enum cache_result read_binary(FILE *f, uint64_t binary_length, unsigned char **binary,
                                     size_t *size, const char **why)
{
    unsigned char *data = malloc((size_t)binary_length);
    if (data == NULL) {
        *why = "out of host memory";
        return CACHE_MISS;
    }
    unsigned char checksum[8];
    if (!read_exact(f, data, (size_t)binary_length) || !read_exact(f, checksum, sizeof checksum)) {
        free(data);
        *why = "read failed";
        return CACHE_CORRUPT;
    }
    if (get_u64(checksum) != cache_hash(data, (size_t)binary_length, 0)) {
        free(data);
        *why = "checksum mismatch";
        return CACHE_CORRUPT;
    }
    *binary = data;
    *size = (size_t)binary_length;
    return CACHE_HIT;
}

/* Verifies the entry open in `f` (of `file_size` bytes) against `key`. Every length is checked
 * against the file size before anything is allocated or read. On MISS or CORRUPT sets *why. */
static enum cache_result read_entry(FILE *f, uint64_t file_size, const char *key,
                                    unsigned char **binary, size_t *size, const char **why)
{
    unsigned char header[ENTRY_HEADER_SIZE];
    *why = "larger than any program binary";
    if (file_size > ENTRY_MAX_SIZE)
        return CACHE_CORRUPT;
    *why = "truncated";
    if (file_size < ENTRY_FIXED_SIZE || !read_exact(f, header, sizeof header))
        return CACHE_CORRUPT;
    *why = "not a clops cache entry";
    if (memcmp(header, entry_magic, sizeof entry_magic) != 0)
        return CACHE_CORRUPT;
    *why = "written by another format version";
    if (get_u32(header + 8) != ENTRY_FORMAT_VERSION)
        return CACHE_CORRUPT;
    uint64_t key_length = get_u64(header + 12);
    uint64_t room = file_size - ENTRY_FIXED_SIZE;
    *why = "key length exceeds the file";
    if (key_length > room)
        return CACHE_CORRUPT;
    /* Another key with the same hash: a valid entry, not ours; storing ours will replace it. */
    *why = "stored for another key";
    if (key_length != strlen(key) || !key_matches(f, key, (size_t)key_length))
        return CACHE_MISS;
    unsigned char length_field[8];
    *why = "truncated";
    if (!read_exact(f, length_field, sizeof length_field))
        return CACHE_CORRUPT;
    uint64_t binary_length = get_u64(length_field);
    *why = "binary length does not match the file size";
    if (binary_length != room - key_length || binary_length == 0)
        return CACHE_CORRUPT;
    return read_binary(f, binary_length, binary, size, why);
}

/* Removes a corrupt entry, unless another process has meanwhile renamed a fresh entry onto the
 * same name: that one is not ours to delete. Returns 0 or an errno value. */
static int remove_entry(const char *path, const struct os_file_info *read)
{
    struct os_file_info now;
    if (os_file_info_at(path, &now) != 0 || now.volume != read->volume || now.index != read->index)
        return 0;
    return remove(path) == 0 ? 0 : errno;
}

/* Opens the entry at `path` for reading, or returns NULL (a miss) with the reason logged.
 * Entries are only ever made by rename, so a symbolic link is refused as well. */
static FILE *open_entry(const char *path, struct os_file_info *info)
{
    FILE *f = os_open_regular(path, OS_OPEN_NO_SYMLINK, info);
    if (f == NULL) {
        if (errno == ELOOP)
            log_msg(CLOPS_LOG_WARNING, "cache: '%s' is a symbolic link; ignored", path);
        else if (errno == EINVAL)
            log_msg(CLOPS_LOG_WARNING, "cache: '%s' is %s; ignored", path,
                    os_file_kind_name(info->kind));
        else if (errno != ENOENT)
            log_msg(CLOPS_LOG_WARNING, "cache: cannot open '%s': %s", path, strerror(errno));
    }
    return f;
}

enum cache_result cache_load(const struct program_cache *cache, const char *key,
                             unsigned char **binary, size_t *size)
{
    *binary = NULL;
    *size = 0;
    char path[ENTRY_PATH_MAX];
    if (!(cache->enabled || cache->read_only) || key == NULL ||
        !entry_path(cache, key, path, sizeof path))
        return CACHE_MISS;
    struct os_file_info info;
    FILE *f = open_entry(path, &info);
    if (f == NULL)
        return CACHE_MISS;
    const char *why = NULL;
    enum cache_result result = read_entry(f, info.size, key, binary, size, &why);
    fclose(f);
    if (result == CACHE_CORRUPT) {
        int error = remove_entry(path, &info);
        if (error == 0)
            log_msg(CLOPS_LOG_WARNING, "cache: removed corrupt entry '%s': %s", path, why);
        else
            log_msg(CLOPS_LOG_WARNING, "cache: corrupt entry '%s' (%s) cannot be removed: %s", path,
                    why, strerror(error));
    } else if (result == CACHE_MISS) {
        log_msg(CLOPS_LOG_DEBUG, "cache: '%s' not used: %s", path, why);
    }
    return result;
}

void cache_discard(const struct program_cache *cache, const char *key)
{
    char path[ENTRY_PATH_MAX];
    if (!(cache->enabled || cache->read_only) || key == NULL ||
        !entry_path(cache, key, path, sizeof path))
        return;
    if (remove(path) == 0)
        log_msg(CLOPS_LOG_WARNING, "cache: removed entry '%s': the driver could not use it", path);
    else if (errno != ENOENT)
        log_msg(CLOPS_LOG_WARNING, "cache: entry '%s' cannot be removed: %s", path,
                strerror(errno));
}

/* ---- Store --------------------------------------------------------------------------------- */

/* A temp name no other thread or process uses at the same time: the pid separates processes,
 * the counter threads of one process; creating it only if new catches whatever is left. */
static int temp_path(const char *final_path, char *out, size_t size)
{
    static atomic_uint_least64_t counter;
    uint64_t parts[2] = {(uint64_t)os_wall_clock_ns(), (uint64_t)atomic_fetch_add(&counter, 1)};
    unsigned long long random = (unsigned long long)cache_hash(parts, sizeof parts, 0);
    int n = snprintf(out, size, "%s.tmp.%ld.%016llx", final_path, os_process_id(), random);
    return n > 0 && (size_t)n < size;
}

static int write_entry(FILE *f, const char *key, const unsigned char *binary, size_t size)
{
    size_t key_length = strlen(key);
    unsigned char header[ENTRY_HEADER_SIZE], length_field[8], checksum[8];
    memcpy(header, entry_magic, sizeof entry_magic);
    put_u32(header + 8, ENTRY_FORMAT_VERSION);
    put_u64(header + 12, key_length);
    put_u64(length_field, size);
    put_u64(checksum, cache_hash(binary, size, 0));
    fwrite(header, 1, sizeof header, f);
    fwrite(key, 1, key_length, f);
    fwrite(length_field, 1, sizeof length_field, f);
    fwrite(binary, 1, size, f);
    fwrite(checksum, 1, sizeof checksum, f);
    return !ferror(f);
}

/* Writes the entry to `temp`; returns 0 or an errno value, and leaves no file on failure. */
static int write_temp(const char *temp, const char *key, const unsigned char *binary, size_t size)
{
    FILE *f = os_create_new(temp);
    if (f == NULL)
        return errno;
    int written = write_entry(f, key, binary, size);
    int error = written ? 0 : errno;
    if (fclose(f) != 0 && error == 0)
        error = errno;
    if (written && error == 0)
        return 0;
    remove(temp);
    return error != 0 ? error : EIO;
}

void cache_store(const struct program_cache *cache, const char *key, const unsigned char *binary,
                 size_t size)
{
    char path[ENTRY_PATH_MAX], temp[ENTRY_PATH_MAX];
    if (!cache->enabled || key == NULL || binary == NULL || size == 0)
        return;
    size_t key_length = strlen(key);
    if (key_length > ENTRY_MAX_SIZE - ENTRY_FIXED_SIZE ||
        size > ENTRY_MAX_SIZE - ENTRY_FIXED_SIZE - key_length) {
        log_msg(CLOPS_LOG_WARNING, "cache: a %zu-byte binary is too large to cache", size);
        return;
    }
    if (!entry_path(cache, key, path, sizeof path) || !temp_path(path, temp, sizeof temp))
        return;
    int error = write_temp(temp, key, binary, size);
    /* The replace is atomic: a reader sees the old entry or the whole new one, never a part. No
     * fsync: after a crash a torn entry fails verification and is rebuilt. */
    if (error == 0 && (error = os_replace_file(temp, path)) != 0)
        remove(temp);
    if (error != 0)
        log_msg(CLOPS_LOG_WARNING, "cache: cannot write '%s': %s; not cached", path,
                strerror(error));
}
