/* testutil.h — shared by the test suites: loading libclops like a host, random inputs. */
#ifndef CLOPS_TESTUTIL_H
#define CLOPS_TESTUTIL_H

#include <check.h>
#include <stdint.h>

#include "clops.h"

/* dlopen()s $CLOPS_LIBRARY (set by ctest) and negotiates ABI 1; aborts the test on failure. */
const struct clops_api *tu_api(void);
/* The dlopen handle of that library. */
void *tu_library(void);
/* A default pool, created once per process and shared by the tests of a suite. */
struct clops_pool *tu_pool(void);

/* Deterministic per-test random numbers in [-1, 1); seed from the test name. */
void tu_seed(uint64_t seed);
double tu_uniform(void);
void tu_fill_f32(float *x, int64_t n);
void tu_fill_f64(double *x, int64_t n);

/* Runs a suite, in forked processes (fork = 1) or in this one (fork = 0: the pool and its built
 * programs are shared by the tests); returns main()'s exit status. */
int tu_run_suite(Suite *suite, int fork);

#endif
