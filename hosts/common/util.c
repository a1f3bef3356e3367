/* util.c — small helpers shared by the clops host programs: dtypes, clock, random fills,
 * allocation, removing a directory tree. */
#include "util.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clops.h"

const char *host_program_name = "clops";

static const struct {
    int32_t dtype;
    const char *name;
    int64_t size;
} dtypes[] = {
    {CLOPS_F32, "f32", 4}, {CLOPS_F64, "f64", 8}, {CLOPS_I32, "i32", 4},
    {CLOPS_U32, "u32", 4}, {CLOPS_U8, "u8", 1},   {CLOPS_I64, "i64", 8},
};

enum { DTYPE_COUNT = (int)(sizeof dtypes / sizeof dtypes[0]) };

const char *host_dtype_name(int32_t dtype)
{
    for (int i = 0; i < DTYPE_COUNT; i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].name;
    return "?";
}

int32_t host_dtype_from_name(const char *name)
{
    for (int i = 0; name != NULL && i < DTYPE_COUNT; i++)
        if (strcmp(dtypes[i].name, name) == 0)
            return dtypes[i].dtype;
    return CLOPS_DTYPE_INVALID;
}

int64_t host_dtype_size(int32_t dtype)
{
    for (int i = 0; i < DTYPE_COUNT; i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].size;
    return 0;
}

long double host_load_element(const void *data, int32_t dtype, int64_t index)
{
    switch (dtype) {
    case CLOPS_F32: return ((const float *)data)[index];
    case CLOPS_F64: return ((const double *)data)[index];
    case CLOPS_I32: return ((const int32_t *)data)[index];
    case CLOPS_U32: return ((const uint32_t *)data)[index];
    case CLOPS_U8: return ((const uint8_t *)data)[index];
    case CLOPS_I64: return (long double)((const int64_t *)data)[index];
    default: return NAN;
    }
}

void host_dtype_mask_names(uint32_t mask, char *out, size_t size)
{
    out[0] = '\0';
    for (int i = 0; i < DTYPE_COUNT; i++)
        if (mask & CLOPS_DTYPE_BIT(dtypes[i].dtype))
            host_append(out, size, ",", dtypes[i].name);
}

void host_append(char *out, size_t size, const char *separator, const char *item)
{
    size_t used = strnlen(out, size);
    if (used + 1 < size)
        snprintf(out + used, size - used, "%s%s", used ? separator : "", item);
}

void host_join(char *out, size_t size, const char *separator, const char *const *items)
{
    out[0] = '\0';
    for (int i = 0; items != NULL && items[i] != NULL; i++)
        host_append(out, size, separator, items[i]);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void host_sort_times(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_doubles);
}

double host_median(double *values, int count)
{
    host_sort_times(values, count);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

/* splitmix64: tiny, fast, and the same sequence everywhere (unlike rand()). */
static uint64_t rng_next(struct host_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void host_rng_seed(struct host_rng *rng, uint64_t seed)
{
    rng->state = seed;
}

double host_rng_uniform(struct host_rng *rng)
{
    /* 53 random bits give every double in [0, 1) on a 2^-53 grid. */
    double u = (double)(rng_next(rng) >> 11) * 0x1.0p-53;
    return 2.0 * u - 1.0;
}

void host_fill_random(void *data, int32_t dtype, int64_t count, struct host_rng *rng)
{
    for (int64_t i = 0; i < count; i++) {
        switch (dtype) {
        case CLOPS_F32: ((float *)data)[i] = (float)host_rng_uniform(rng); break;
        case CLOPS_F64: ((double *)data)[i] = host_rng_uniform(rng); break;
        case CLOPS_I32: ((int32_t *)data)[i] = (int32_t)(rng_next(rng) % 10); break;
        case CLOPS_U32: ((uint32_t *)data)[i] = (uint32_t)(rng_next(rng) % 10); break;
        case CLOPS_U8: ((uint8_t *)data)[i] = (uint8_t)(rng_next(rng) % 10); break;
        case CLOPS_I64: ((int64_t *)data)[i] = (int64_t)(rng_next(rng) % 10); break;
        default: return;
        }
    }
}

static void *check_alloc(void *p)
{
    if (p == NULL) {
        fprintf(stderr, "%s: out of memory\n", host_program_name);
        exit(1);
    }
    return p;
}

void *host_xmalloc(size_t size)
{
    return check_alloc(malloc(size ? size : 1));
}

void *host_xcalloc(size_t count, size_t size)
{
    return check_alloc(calloc(count ? count : 1, size ? size : 1));
}

char *host_xstrdup(const char *s)
{
    return check_alloc(strdup(s));
}

void host_format_bytes(int64_t bytes, char *out, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes;
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        unit++;
    }
    snprintf(out, size, unit ? "%.1f %s" : "%.0f %s", value, units[unit]);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void host_remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
