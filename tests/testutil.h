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
/* The address of `name` in a library tu_library (or the host's loader) opened: dlsym, or
 * GetProcAddress on Windows. */
void *tu_symbol(void *lib, const char *name);
/* The same table without Check, for helper processes (Check's assertions only work inside a test
 * runner): NULL when $CLOPS_LIBRARY is unset or fails to load. */
const struct clops_api *tu_api_or_null(void);
/* Whether a pool of `config` can be made, asked in a child process: this one then has loaded no
 * OpenCL driver, so the children a suite forks later find theirs whole. For suites to decide
 * before they run whether to skip. */
#ifndef _WIN32
int tu_child_creates_pool(const char *config);
#endif

/* mkdtemp: makes a directory from `dir_template` (ending in XXXXXX), returns it or NULL. */
char *tu_make_temp_dir(char *dir_template);
/* Whether $CLOPS_TEST_QUICK asks for the quick run (set, not "0"): the sanitizer and Wine stages
 * of CI. Suites then register fewer iterations of their slowest loops (the largest sizes, most
 * launch tunings), which the plain run still runs; a suite says which in its main. */
int tu_quick(void);
/* The monotonic clock in ns (clock_gettime; QueryPerformanceCounter on Windows, where
 * winpthreads' clock_gettime under Wine was seen standing still across a 22 ms call). */
int64_t tu_monotonic_ns(void);
/* The directory for temporary files: $TMPDIR or /tmp; on Windows %TEMP% with '/' separators (a
 * path written into a configuration string then needs no escaping). */
const char *tu_temp_dir(void);
/* truncate(2) where there is none (Windows: _chsize_s); 0 or -1. */
int tu_truncate(const char *path, int64_t size);
/* rm -rf of `dir` (what the tests made: files and directories, no links followed). */
void tu_remove_tree(const char *dir);
/* A pool of `api`'s of two devices, two GPUs where the machine has them, else two CPU devices
 * (PoCL with POCL_DEVICES="pthread pthread"), with `operators` (the configuration's operators
 * group's contents, "" for none); NULL where the machine has no two devices. Without Check:
 * helper processes may call it. With $CLOPS_TEST_SPLIT_DEVICES = N (2 to 8) the pool has N
 * devices and every "[0, 1]" in `operators` names all N: the suites of two devices then run on
 * four or eight (issue 27; POCL_DEVICES with as many "pthread"). */
int tu_split_devices(void);
struct clops_pool *tu_two_devices(const struct clops_api *api, const char *operators);
/* The pool's cl_context (void *: cl_context), through a buffer of its primary device. */
void *tu_pool_context(struct clops_pool *pool);
/* A default pool, created once per process and shared by the tests of a suite. */
struct clops_pool *tu_pool(void);
/* A new default pool of its own, which the caller releases. */
struct clops_pool *tu_new_pool(void);
/* A new pool made from configuration text that must be accepted; the caller releases it. */
struct clops_pool *tu_pool_from_string(const char *config);
/* The same for a configuration that gives operator op the build options `options`. */
struct clops_pool *tu_pool_with_build_options(const char *op, const char *options);

/* The pool of the calls of a test that runs on a pool of its own: the one set with
 * tu_set_case_pool(), else tu_pool(). */
struct clops_pool *tu_case_pool(void);
/* Sets the case pool (NULL: tu_pool() again), which tu_release_case_pool() releases. */
void tu_set_case_pool(struct clops_pool *pool);
/* Sets a case pool that gives operator op the build options `options`; none (tu_pool()) where
 * options is NULL. */
void tu_set_case_build_options(const char *op, const char *options);
/* Releases the pool set with tu_set_case_pool(), if any; tu_case_pool() is tu_pool() again. */
void tu_release_case_pool(void);

/* The operator called name, which must exist. */
const struct clops_op *tu_op(const char *name);
/* The arguments (invoke_sized's, submit's) of a Mandelbrot call of the view the split tests
 * render: centre (-0.75, 0.1), 2.7 wide (inside points, fast and slow escapes), f32, into
 * `iterations` and `image` (NULL: none), which must outlive the call (submit: the submit).
 * Fills args[0 .. TU_MANDELBROT_ARGS) and returns how many it used. */
enum { TU_MANDELBROT_ARGS = 8 };
/* The outputs of an h x w Mandelbrot call, compact row-major: counts (u32) and RGBA colours
 * (u8) in the host arrays, or, made with on_device, in buffers on the pool's primary device
 * (bi, bm; the host arrays then hold what tu_mandel_out_fetch downloads). `api` is the table
 * the test calls: tu_api(), or a test of the static core's entry_table(). */
struct tu_mandel_out {
    const struct clops_api *api;
    int64_t h, w;
    uint32_t *iters;
    uint8_t *image;
    struct clops_buffer *bi, *bm; /* NULL: host outputs */
    struct clops_tensor ti, tm;   /* the call's tensors */
};
struct tu_mandel_out tu_mandel_out_new(const struct clops_api *api, struct clops_pool *pool,
                                       int64_t h, int64_t w, int on_device);
/* Every byte of the outputs (host arrays and buffers) TU_MANDEL_SENTINEL again. */
enum { TU_MANDEL_SENTINEL = 0xA5 };
void tu_mandel_out_reset(struct tu_mandel_out *o);
/* The buffers' contents into the host arrays (nothing for host outputs). */
void tu_mandel_out_fetch(struct tu_mandel_out *o);
/* Whether the host arrays of two outputs of the same shape hold the same bits. */
int tu_mandel_out_equal(const struct tu_mandel_out *a, const struct tu_mandel_out *b);
/* Whether every byte of the host arrays is still TU_MANDEL_SENTINEL. */
int tu_mandel_out_untouched(const struct tu_mandel_out *o);
void tu_mandel_out_free(struct tu_mandel_out *o);
int32_t tu_mandelbrot_args(const struct clops_tensor *iterations, const struct clops_tensor *image,
                           int64_t max_iterations, const char *split, int64_t tile,
                           struct clops_arg *args);
/* Whether device 0 of tu_pool() has double precision. */
int tu_has_fp64(void);
/* The dtype of a test iteration over both floating-point types: CLOPS_F64 where f64 is not 0,
 * else CLOPS_F32; 0 (skip the iteration) for f64 where the device has no double precision. */
int32_t tu_float_dtype(int f64);
/* Begins an iteration of such a test: tu_seed(seed), then tu_float_dtype(f64). */
int32_t tu_begin_iteration(int f64, uint64_t seed);

/* A device buffer of `bytes` on tu_pool(), made on the first call for that size and kept for the
 * process: for the bad-argument tests, which need a buffer where a host tensor is wanted. */
struct clops_buffer *tu_kept_buffer(int64_t bytes);
/* The host arrays of a bad-argument case, which a refused call must leave as they were:
 * tu_guard_add() copies one (four at most), tu_expect_refusal() compares them with their copies.
 * Starts as {0}. */
struct tu_guard {
    int count;
    struct {
        const void *at;
        size_t size;
        void *copy;
    } arrays[4];
};
void tu_guard_add(struct tu_guard *guard, const void *at, size_t size);
/* Fills the arrays listed (each of n floats; the list ends with NULL) with tu_uniform's numbers
 * after tu_seed(seed), in that order, and adds each to guard. */
void tu_guard_random_f32(struct tu_guard *guard, uint64_t seed, int64_t n, float *first, ...);
/* Asserts what a bad-argument case of operator op must give: the expected status (got is the
 * call's) and a message that starts with "<op>: " and contains needle; `which` numbers the case
 * in failures. Where guard is not NULL, also that the arrays it holds are unchanged (the copies
 * are freed). */
void tu_expect_refusal(const char *op, int which, int32_t got, int32_t want, const char *needle,
                       struct tu_guard *guard);

/* Deterministic per-test random numbers in [-1, 1); seed from the test name. */
void tu_seed(uint64_t seed);
double tu_uniform(void);
void tu_fill_f32(float *x, int64_t n);
void tu_fill_f64(double *x, int64_t n);
/* Bytes per element of an f32 or f64 tensor. */
int64_t tu_dtype_size(int32_t dtype);
/* count elements of dtype (f32 or f64) from tu_uniform, in memory the caller frees. */
void *tu_random_elements(int32_t dtype, int64_t count);
/* malloc(), asserting that it gave memory (at least one byte, even for size 0). */
void *tu_malloc(size_t size);
/* A copy of size bytes at p, in memory the caller frees. */
void *tu_memdup(const void *p, size_t size);
/* size random bytes (every bit pattern) from tu_uniform, in memory the caller frees. */
void *tu_random_bytes(size_t size);

/* Runs C = A·B (f64, row-major, n×n) through api on pool, with inputs from a private generator
 * seeded by seed (tu_uniform's state is not shared between threads) over a C of NaNs, and returns
 * the largest error against a long double reference (INFINITY where one is NaN), or -1 when the
 * call failed; *status, when status is not NULL, gets the call's status. */
double tu_checked_gemm(const struct clops_api *api, struct clops_pool *pool, int n, uint64_t seed,
                       int32_t *status);

/* What a pool with kernel_times logs (clops-pool(5)), gathered by tu_collect_kernel_log (a log
 * callback; user = the struct): an NVIDIA device's compute capability at creation ("pool: '<name>'
 * has NVIDIA compute capability 9.0"), and each call's launches by kernel ("<op>: kernel <name>:
 * <n> launch[es], <t> ms"; a call across devices: "<op>: device <d>: kernel ..."), counted for
 * `op` by the names listed, over all devices. */
enum { TU_KERNEL_NAMES = 8 };
struct tu_kernel_log {
    const char *op;                     /* the operator whose lines count */
    const char *names[TU_KERNEL_NAMES]; /* the kernels counted by name (NULL-terminated) */
    int launches[TU_KERNEL_NAMES];      /* launches of names[i] */
    int other;                          /* launches of kernels not named */
    int lines;                          /* op's kernel lines */
    double ms;                          /* their device time */
    int cc;                             /* major * 10 + minor; -1 while none was logged */
};
void tu_collect_kernel_log(int32_t level, const char *message, void *user);
/* The launches of kernel `name` (one of log->names) so far. */
int tu_kernel_launches(const struct tu_kernel_log *log, const char *name);

/* A kernel directory in which gemm's sources do not build: gemm.cl and the files of the kernels
 * for NVIDIA GPUs of compute capability 8.0 and later (gemm_pipeline.cl, gemm_simt.cl,
 * gemm_mma_core.cl, gemm_mma.cl, gemm_tf32.cl: the gemm operator builds gemm.cl or some of those,
 * by device), each naming an undeclared identifier ("undeclared_name"). dir is made from
 * `dir_template` (mkdtemp's XXXXXX), paths are the files, config a pool configuration that reads
 * kernels from dir with the binary cache off. tu_remove_broken_gemm_kernels deletes them. */
enum { TU_GEMM_SOURCES = 6 };
struct tu_broken_kernels {
    char dir[128];
    char paths[TU_GEMM_SOURCES][256];
    char config[512];
};
void tu_broken_gemm_kernels(struct tu_broken_kernels *k, const char *dir_template);
void tu_remove_broken_gemm_kernels(const struct tu_broken_kernels *k);

/* A table of tests, made of these entries: TU_TEST(test) runs once, TU_LOOP(test, loops) runs
 * loops times (_i = 0 to loops - 1), and TU_CASE(name) puts the tests after it in a test case of
 * that name, TU_CASE_FIXTURE(name, setup, teardown) in one with that checked fixture. */
struct tu_test {
    const TTest *test; /* NULL for TU_CASE */
    int loops;
    const char *tcase;
    void (*setup)(void);
    void (*teardown)(void);
};
/* clang-format off */
#define TU_TEST(fn) {.test = (fn), .loops = 1}
#define TU_LOOP(fn, n) {.test = (fn), .loops = (n)}
#define TU_CASE(name) {.tcase = (name)}
#define TU_CASE_FIXTURE(name, setup_fn, teardown_fn) \
    {.tcase = (name), .setup = (setup_fn), .teardown = (teardown_fn)}
/* clang-format on */
/* The number of elements of an array. */
#define TU_COUNT(array) (sizeof(array) / sizeof((array)[0]))
/* Adds the count tests to suite, those before the first TU_CASE in a test case called name, each
 * test case's tests given timeout seconds (Check's default where 0); returns the test case made
 * last (the only one of a table without TU_CASE), for fixtures. */
TCase *tu_add_tests(Suite *suite, const char *name, double timeout, const struct tu_test *tests,
                    size_t count);
/* Runs a suite called name of the count tests, added as by tu_add_tests(), as tu_run_suite()
 * runs it; returns main()'s exit status. */
int tu_run_tests(const char *name, double timeout, int fork, const struct tu_test *tests,
                 size_t count);

/* Runs a suite, in forked processes (fork = 1) or in this one (fork = 0: the pool and its built
 * programs are shared by the tests); returns main()'s exit status. */
int tu_run_suite(Suite *suite, int fork);

#endif
