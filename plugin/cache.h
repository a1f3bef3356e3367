/* cache.h — the on-disk cache of OpenCL program binaries, keyed by platform, device, driver
 * version, kernel source hash and build options. Entries are written atomically (temp file +
 * rename) and verified on load (magic, full key, length, checksum). */
#ifndef CLOPS_CACHE_H
#define CLOPS_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct program_cache {
    int32_t enabled;   /* entries are loaded and stored */
    int32_t read_only; /* entries are loaded, none is stored: the directory is not writable */
    char dir[CONFIG_PATH_MAX];
};

enum cache_result { CACHE_MISS = 0, CACHE_HIT = 1, CACHE_CORRUPT = 2 };

/* Resolves the directory (configured, else $XDG_CACHE_HOME/clops, else $HOME/.cache/clops) and
 * creates it. A directory that cannot be created disables the cache with a logged warning; it
 * is not an error. One that exists but cannot be written makes the cache read-only (entries are
 * loaded, none is stored), also with a warning. */
void cache_init(struct program_cache *cache, int32_t enabled, const char *configured_dir);
/* On CACHE_HIT, *binary is malloc'd (caller frees) and *size set. CACHE_CORRUPT means an entry
 * existed but failed verification; it has been removed (where the directory allows). Anything
 * but a regular file at the entry's path (a FIFO, a device, a symbolic link) is a logged miss,
 * and is never opened in a way that could block. */
enum cache_result cache_load(const struct program_cache *cache, const char *key,
                             unsigned char **binary, size_t *size);
/* Removes the entry of `key`, which passed verification but which the driver could not use
 * (its binary failed to build, or lacks a kernel the program must have): the next load must
 * not find it again. Logged; never an error. */
void cache_discard(const struct program_cache *cache, const char *key);
/* Stores atomically; failures are logged warnings, never errors (the cache is an optimisation). */
void cache_store(const struct program_cache *cache, const char *key, const unsigned char *binary,
                 size_t size);
/* 64-bit FNV-1a, used for source hashes and file names. */
uint64_t cache_hash(const void *data, size_t size, uint64_t seed);

#endif
