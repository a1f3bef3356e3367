/* testutil.h — shared by the test suites: loading libclops like a host, random inputs. */
#ifndef CLOPS_TESTUTIL_H
#define CLOPS_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "clops.h"

/* dlopen()s $CLOPS_LIBRARY (set by ctest) and negotiates ABI 1; aborts the test on failure. */
const struct clops_api *tu_api(void);
/* The dlopen handle of that library. */
void *tu_library(void);
/* The same table without Check, for helper processes (Check's assertions only work inside a test
 * runner): NULL when $CLOPS_LIBRARY is unset or fails to load. */
const struct clops_api *tu_api_or_null(void);
/* A default pool, created once per process and shared by the tests of a suite. */
struct clops_pool *tu_pool(void);
/* A new pool made from configuration text that must be accepted; the caller releases it. */
struct clops_pool *tu_pool_from_string(const char *config);

/* A device buffer of `bytes` on tu_pool(), made on the first call for that size and kept for the
 * process: for the bad-argument tests, which need a buffer where a host tensor is wanted. */
struct clops_buffer *tu_kept_buffer(int64_t bytes);
/* Asserts what a bad-argument case of operator op must give: the expected status (got is the
 * call's) and a message that starts with "<op>: " and contains needle; `which` numbers the case
 * in failures. */
void tu_expect_refusal(const char *op, int which, int32_t got, int32_t want, const char *needle);

/* Deterministic per-test random numbers in [-1, 1); seed from the test name. */
void tu_seed(uint64_t seed);
double tu_uniform(void);
void tu_fill_f32(float *x, int64_t n);
void tu_fill_f64(double *x, int64_t n);
/* Bytes per element of an f32 or f64 tensor. */
int64_t tu_dtype_size(int32_t dtype);
/* count elements of dtype (f32 or f64) from tu_uniform, in memory the caller frees. */
void *tu_random_elements(int32_t dtype, int64_t count);
/* A copy of size bytes at p, in memory the caller frees. */
void *tu_memdup(const void *p, size_t size);

/* Runs C = A·B (f64, row-major, n×n) through api on pool, with inputs from a private generator
 * seeded by seed (tu_uniform's state is not shared between threads) over a C of NaNs, and returns
 * the largest error against a long double reference (INFINITY where one is NaN), or -1 when the
 * call failed; *status, when status is not NULL, gets the call's status. */
double tu_checked_gemm(const struct clops_api *api, struct clops_pool *pool, int n, uint64_t seed,
                       int32_t *status);

/* Runs a suite, in forked processes (fork = 1) or in this one (fork = 0: the pool and its built
 * programs are shared by the tests); returns main()'s exit status. */
int tu_run_suite(Suite *suite, int fork);

#endif
