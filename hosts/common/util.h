/* util.h — small helpers shared by the clops host programs (cli, bench): dtype names, a
 * monotonic clock, seeded random fills, allocation that exits on failure. */
#ifndef CLOPS_HOST_UTIL_H
#define CLOPS_HOST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define HOST_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HOST_PRINTF(f, a)
#endif

/* "f32", "f64", ... for enum clops_dtype; "?" for anything else. */
const char *host_dtype_name(int32_t dtype);
/* The dtype named `name`, or CLOPS_DTYPE_INVALID. */
int32_t host_dtype_from_name(const char *name);
/* Bytes per element; 0 for an invalid dtype. */
int64_t host_dtype_size(int32_t dtype);
/* Element `index` of the array of `dtype` at `data`, as a long double (exact for every dtype on
 * x86-64, whose long double has a 64-bit significand); NaN for an invalid dtype. */
long double host_load_element(const void *data, int32_t dtype, int64_t index);
/* Writes the names of the dtypes in `mask` (CLOPS_DTYPE_BIT()s) as "f32,f64" into `out`. */
void host_dtype_mask_names(uint32_t mask, char *out, size_t size);

/* Appends `item` to the string in `out`, after `separator` unless `out` is empty; truncates
 * at `size`. Builds lists such as "f32,f64" or "none|transpose". */
void host_append(char *out, size_t size, const char *separator, const char *item);

/* Joins a NULL-terminated list (NULL: none) into `out` with `separator`. */
void host_join(char *out, size_t size, const char *separator, const char *const *items);

/* Milliseconds on a monotonic clock, for timing calls (host_os_posix.c, host_os_win32.c). */
double host_now_ms(void);

/* Sorts `count` timings in place, ascending. */
void host_sort_times(double *values, int count);

/* The median of `count` timings (the mean of the middle two for an even count); sorts them. */
double host_median(double *values, int count);

/* A deterministic random stream: the same seed gives the same numbers on every machine. */
struct host_rng {
    uint64_t state;
};
void host_rng_seed(struct host_rng *rng, uint64_t seed);
/* Uniform in [-1, 1). */
double host_rng_uniform(struct host_rng *rng);
/* Fills `count` elements of `dtype` at `data`: floats uniform in [-1, 1), integers in 0..9. */
void host_fill_random(void *data, int32_t dtype, int64_t count, struct host_rng *rng);

/* malloc/calloc that print "<program>: out of memory" and exit(1) on failure: the host
 * programs have nothing sensible to do without the memory. */
void *host_xmalloc(size_t size);
void *host_xcalloc(size_t count, size_t size);
char *host_xstrdup(const char *s);
/* The name used in messages ("clops", "clops-bench"); set once by main(). */
extern const char *host_program_name;

/* "1.5 GiB"-style rendering of a byte count into `out`. */
void host_format_bytes(int64_t bytes, char *out, size_t size);

/* Removes the directory `dir` and everything under it, without following links; what cannot be
 * removed is left. */
void host_remove_tree(const char *dir);

#endif
