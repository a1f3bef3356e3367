/* testutil.c — see testutil.h. */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#ifdef _WIN32
#include <direct.h>
#include <io.h>
#include <windows.h>
#else
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

static void *library;
static const struct clops_api *api;
static struct clops_pool *pool;
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

#ifdef _WIN32
static void *open_library(const char *path)
{
    return (void *)LoadLibraryA(path);
}

void *tu_symbol(void *lib, const char *name)
{
    return (void *)(uintptr_t)GetProcAddress((HMODULE)lib, name);
}

static const char *library_error(void)
{
    static char message[256];
    const DWORD code = GetLastError();
    if (FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, code, 0,
                       message, sizeof message, NULL) == 0)
        snprintf(message, sizeof message, "error %lu", (unsigned long)code);
    return message;
}
#else
static void *open_library(const char *path)
{
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

void *tu_symbol(void *lib, const char *name)
{
    return dlsym(lib, name);
}

static const char *library_error(void)
{
    const char *e = dlerror();
    return e != NULL ? e : "no error reported";
}
#endif

void *tu_library(void)
{
    if (library == NULL) {
        const char *path = getenv("CLOPS_LIBRARY");
        ck_assert_msg(path != NULL, "CLOPS_LIBRARY is not set (run the tests through ctest)");
        library = open_library(path);
        ck_assert_msg(library != NULL, "loading %s: %s", path, library_error());
    }
    return library;
}

const struct clops_api *tu_api(void)
{
    if (api == NULL) {
        clops_plugin_entry_fn entry =
            (clops_plugin_entry_fn)(uintptr_t)tu_symbol(tu_library(), "clops_plugin_entry");
        ck_assert_msg(entry != NULL, "clops_plugin_entry not found: %s", library_error());
        api = entry(CLOPS_ABI_MAJOR);
        ck_assert_ptr_nonnull(api);
        ck_assert_uint_ge(api->struct_size, sizeof(struct clops_api));
    }
    return api;
}

const struct clops_api *tu_api_or_null(void)
{
    const char *path = getenv("CLOPS_LIBRARY");
    void *lib = path != NULL ? open_library(path) : NULL;
    clops_plugin_entry_fn entry =
        lib != NULL ? (clops_plugin_entry_fn)(uintptr_t)tu_symbol(lib, "clops_plugin_entry") : NULL;
    return entry != NULL ? entry(CLOPS_ABI_MAJOR) : NULL;
}

#ifndef _WIN32
int tu_child_creates_pool(const char *config)
{
    pid_t child = fork();
    if (child == 0) {
        const struct clops_api *a = tu_api_or_null();
        struct clops_pool *pool = NULL;
        _exit(a != NULL && a->pool_create_from_string(config, &pool) == CLOPS_OK ? 0 : 1);
    }
    int status;
    return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}
#endif

int tu_quick(void)
{
    const char *quick = getenv("CLOPS_TEST_QUICK");
    return quick != NULL && quick[0] != '\0' && strcmp(quick, "0") != 0;
}

int64_t tu_monotonic_ns(void)
{
#ifdef _WIN32
    LARGE_INTEGER f, t;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&t);
    return t.QuadPart / f.QuadPart * 1000000000 + t.QuadPart % f.QuadPart * 1000000000 / f.QuadPart;
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
#endif
}

const char *tu_temp_dir(void)
{
#ifdef _WIN32
    static char dir[512];
    const char *temp = getenv("TEMP");
    snprintf(dir, sizeof dir, "%s", temp != NULL && temp[0] != '\0' ? temp : ".");
    for (char *c = dir; *c != '\0'; c++)
        if (*c == '\\')
            *c = '/';
    return dir;
#else
    const char *dir = getenv("TMPDIR");
    return dir != NULL && dir[0] != '\0' ? dir : "/tmp";
#endif
}

int tu_truncate(const char *path, int64_t size)
{
#ifdef _WIN32
    int fd = _open(path, _O_RDWR | _O_BINARY);
    if (fd < 0)
        return -1;
    int rc = _chsize_s(fd, size) == 0 ? 0 : -1;
    _close(fd);
    return rc;
#else
    return truncate(path, (off_t)size);
#endif
}

void tu_remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            struct stat st;
#ifdef _WIN32
            const int is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
#else
            const int is_dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
#endif
            if (is_dir)
                tu_remove_tree(path);
            else
                remove(path);
        }
        closedir(d);
    }
#ifdef _WIN32
    _rmdir(dir);
#else
    rmdir(dir);
#endif
}

char *tu_make_temp_dir(char *dir_template)
{
#ifdef _WIN32
    return _mktemp(dir_template) != NULL && _mkdir(dir_template) == 0 ? dir_template : NULL;
#else
    return mkdtemp(dir_template);
#endif
}

int tu_split_devices(void)
{
    const char *n = getenv("CLOPS_TEST_SPLIT_DEVICES");
    const int count = n != NULL ? atoi(n) : 2;
    return count >= 2 && count <= 8 ? count : 2;
}

/* `operators` with every "[0, 1]" widened to the devices 0 to count - 1. */
static void widen_device_lists(const char *operators, int count, char *out, size_t size)
{
    char all[64] = "[0";
    for (int d = 1; d < count; d++)
        snprintf(all + strlen(all), sizeof all - strlen(all), ", %d", d);
    strcat(all, "]");
    size_t used = 0;
    out[0] = '\0';
    for (const char *p = operators; *p != '\0' && used + 1 < size;) {
        if (strncmp(p, "[0, 1]", 6) == 0) {
            used += (size_t)snprintf(out + used, size - used, "%s", all);
            p += 6;
        } else {
            out[used++] = *p++;
            out[used] = '\0';
        }
    }
}

struct clops_pool *tu_two_devices(const struct clops_api *api, const char *operators)
{
    static const char *const types[] = {"gpu", "cpu"};
    const int count = tu_split_devices();
    char widened[1024];
    widen_device_lists(operators, count, widened, sizeof widened);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char text[2048] = "devices = (";
        for (int d = 0; d < count; d++)
            snprintf(text + strlen(text), sizeof text - strlen(text),
                     "%s { type = \"%s\"; index = %d; }", d > 0 ? "," : "", types[i], d);
        snprintf(text + strlen(text), sizeof text - strlen(text),
                 " ); cpu_fallback = false; operators = { %s };", widened);
        struct clops_pool *pool = NULL;
        if (api->pool_create_from_string(text, &pool) == CLOPS_OK)
            return pool;
    }
    return NULL;
}

void *tu_pool_context(struct clops_pool *pool)
{
    struct clops_buffer *b = NULL;
    ck_assert_int_eq(tu_api()->buffer_create(pool, 64, &b), CLOPS_OK);
    struct clops_buffer_cl_args a = {.struct_size = sizeof a, .buffer = b};
    ck_assert_int_eq(tu_api()->buffer_cl(&a), CLOPS_OK);
    tu_api()->buffer_release(b);
    return a.cl_context;
}

struct clops_pool *tu_pool(void)
{
    if (pool == NULL)
        pool = tu_new_pool();
    return pool;
}

struct clops_pool *tu_new_pool(void)
{
    struct clops_pool *made = NULL;
    /* CLOPS_TEST_POOL_CONFIG: every suite on a pool of that configuration instead of the
     * default one (hosts/bench/device-multi.sh runs them on a pool of two GPUs with gemm split
     * over both; tests/CMakeLists.txt on two PoCL devices). */
    const char *config = getenv("CLOPS_TEST_POOL_CONFIG");
    int32_t status = config != NULL && config[0] != '\0'
                         ? tu_api()->pool_create_from_file(config, &made)
                         : tu_api()->pool_create_default(&made);
    ck_assert_msg(status == CLOPS_OK, "%s: %s",
                  config != NULL && config[0] != '\0' ? config : "pool_create_default",
                  tu_api()->last_error());
    return made;
}

struct clops_pool *tu_pool_from_string(const char *config)
{
    struct clops_pool *made = NULL;
    int32_t status = tu_api()->pool_create_from_string(config, &made);
    ck_assert_msg(status == CLOPS_OK, "pool_create_from_string: %s", tu_api()->last_error());
    return made;
}

const struct clops_op *tu_op(const char *name)
{
    const struct clops_op *op = tu_api()->op_find(name);
    ck_assert_msg(op != NULL, "operator %s not found: %s", name, tu_api()->last_error());
    return op;
}

int32_t tu_mandelbrot_args(const struct clops_tensor *iterations, const struct clops_tensor *image,
                           int64_t max_iterations, const char *split, int64_t tile,
                           struct clops_arg *args)
{
    const struct clops_arg view[] = {
        {.name = "iterations", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = iterations},
        {.name = "center_x", .kind = CLOPS_PARAM_DOUBLE, .d = -0.75},
        {.name = "center_y", .kind = CLOPS_PARAM_DOUBLE, .d = 0.1},
        {.name = "scale", .kind = CLOPS_PARAM_DOUBLE, .d = 2.7},
        {.name = "max_iterations", .kind = CLOPS_PARAM_INT64, .i = max_iterations},
        {.name = "split", .kind = CLOPS_PARAM_STRING, .s = split},
        {.name = "tile", .kind = CLOPS_PARAM_INT64, .i = tile},
        {.name = "image", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = image},
    };
    const int32_t count = image != NULL ? TU_MANDELBROT_ARGS : TU_MANDELBROT_ARGS - 1;
    memcpy(args, view, (size_t)count * sizeof view[0]);
    return count;
}

struct tu_mandel_out tu_mandel_out_new(const struct clops_api *api, struct clops_pool *pool,
                                       int64_t h, int64_t w, int on_device)
{
    struct tu_mandel_out o = {.api = api,
                              .h = h,
                              .w = w,
                              .iters = tu_malloc((size_t)(h * w) * sizeof(uint32_t)),
                              .image = tu_malloc((size_t)(h * w) * 4)};
    if (on_device) {
        ck_assert_int_eq(api->buffer_create(pool, h * w * 4, &o.bi), CLOPS_OK);
        ck_assert_int_eq(api->buffer_create(pool, h * w * 4, &o.bm), CLOPS_OK);
    }
    o.ti = (struct clops_tensor){.data = on_device ? NULL : o.iters,
                                 .buffer = o.bi,
                                 .dtype = CLOPS_U32,
                                 .rank = 2,
                                 .shape = {h, w},
                                 .strides = {w, 1}};
    o.tm = (struct clops_tensor){.data = on_device ? NULL : o.image,
                                 .buffer = o.bm,
                                 .dtype = CLOPS_U8,
                                 .rank = 3,
                                 .shape = {h, w, 4},
                                 .strides = {4 * w, 4, 1}};
    tu_mandel_out_reset(&o);
    return o;
}

void tu_mandel_out_reset(struct tu_mandel_out *o)
{
    const int64_t bytes = o->h * o->w * 4; /* of either output */
    memset(o->iters, TU_MANDEL_SENTINEL, (size_t)bytes);
    memset(o->image, TU_MANDEL_SENTINEL, (size_t)bytes);
    if (o->bi != NULL) {
        ck_assert_int_eq(o->api->buffer_upload(o->bi, 0, o->iters, bytes), CLOPS_OK);
        ck_assert_int_eq(o->api->buffer_upload(o->bm, 0, o->image, bytes), CLOPS_OK);
    }
}

void tu_mandel_out_fetch(struct tu_mandel_out *o)
{
    if (o->bi == NULL)
        return;
    const int64_t bytes = o->h * o->w * 4;
    ck_assert_int_eq(o->api->buffer_download(o->bi, 0, o->iters, bytes), CLOPS_OK);
    ck_assert_int_eq(o->api->buffer_download(o->bm, 0, o->image, bytes), CLOPS_OK);
}

int tu_mandel_out_equal(const struct tu_mandel_out *a, const struct tu_mandel_out *b)
{
    const size_t bytes = (size_t)(a->h * a->w * 4);
    return memcmp(a->iters, b->iters, bytes) == 0 && memcmp(a->image, b->image, bytes) == 0;
}

int tu_mandel_out_untouched(const struct tu_mandel_out *o)
{
    const uint8_t *counts = (const uint8_t *)o->iters;
    for (int64_t i = 0; i < o->h * o->w * 4; i++)
        if (counts[i] != TU_MANDEL_SENTINEL || o->image[i] != TU_MANDEL_SENTINEL)
            return 0;
    return 1;
}

void tu_mandel_out_free(struct tu_mandel_out *o)
{
    o->api->buffer_release(o->bi);
    o->api->buffer_release(o->bm);
    free(o->iters);
    free(o->image);
}

int tu_has_fp64(void)
{
    struct clops_device_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(tu_api()->pool_device_info(tu_pool(), 0, &info), CLOPS_OK);
    return info.fp64;
}

int32_t tu_float_dtype(int f64)
{
    return !f64 ? CLOPS_F32 : tu_has_fp64() ? CLOPS_F64 : 0;
}

int32_t tu_begin_iteration(int f64, uint64_t seed)
{
    tu_seed(seed);
    return tu_float_dtype(f64);
}

struct clops_pool *tu_pool_with_build_options(const char *op, const char *options)
{
    char config[512];
    int n = snprintf(config, sizeof config, "operators = { %s = { build_options = \"%s\"; }; };",
                     op, options);
    ck_assert_int_lt(n, (int)sizeof config);
    return tu_pool_from_string(config);
}

static struct clops_pool *case_pool;

struct clops_pool *tu_case_pool(void)
{
    return case_pool != NULL ? case_pool : tu_pool();
}

void tu_set_case_pool(struct clops_pool *pool)
{
    case_pool = pool;
}

void tu_set_case_build_options(const char *op, const char *options)
{
    tu_set_case_pool(options != NULL ? tu_pool_with_build_options(op, options) : NULL);
}

void tu_release_case_pool(void)
{
    if (case_pool != NULL)
        tu_api()->pool_release(case_pool);
    case_pool = NULL;
}

struct clops_buffer *tu_kept_buffer(int64_t bytes)
{
    enum { KEPT_SIZES = 4 };
    static struct {
        int64_t bytes;
        struct clops_buffer *buffer;
    } kept[KEPT_SIZES];
    for (int i = 0; i < KEPT_SIZES; i++) {
        if (kept[i].buffer == NULL) {
            ck_assert_int_eq(tu_api()->buffer_create(tu_pool(), bytes, &kept[i].buffer), CLOPS_OK);
            kept[i].bytes = bytes;
        }
        if (kept[i].bytes == bytes)
            return kept[i].buffer;
    }
    ck_abort_msg("tu_kept_buffer: more than %d sizes", KEPT_SIZES);
    return NULL;
}

void tu_guard_add(struct tu_guard *guard, const void *at, size_t size)
{
    const int most = (int)(sizeof guard->arrays / sizeof guard->arrays[0]);
    ck_assert_msg(guard->count < most, "tu_guard_add: more than %d arrays", most);
    guard->arrays[guard->count].at = at;
    guard->arrays[guard->count].size = size;
    guard->arrays[guard->count].copy = tu_memdup(at, size);
    guard->count++;
}

void tu_guard_random_f32(struct tu_guard *guard, uint64_t seed, int64_t n, float *first, ...)
{
    tu_seed(seed);
    va_list more;
    va_start(more, first);
    for (float *x = first; x != NULL; x = va_arg(more, float *)) {
        tu_fill_f32(x, n);
        tu_guard_add(guard, x, sizeof(float) * (size_t)n);
    }
    va_end(more);
}

void tu_expect_refusal(const char *op, int which, int32_t got, int32_t want, const char *needle,
                       struct tu_guard *guard)
{
    const struct clops_api *api = tu_api();
    const char *msg = api->last_error();
    const size_t n = strlen(op);
    ck_assert_msg(got == want, "%s case %d: expected %s, got %s (%s)", op, which,
                  api->status_name(want), api->status_name(got), msg);
    ck_assert_msg(strstr(msg, needle) != NULL, "%s case %d: \"%s\" lacks \"%s\"", op, which, msg,
                  needle);
    ck_assert_msg(strncmp(msg, op, n) == 0 && strncmp(msg + n, ": ", 2) == 0,
                  "%s case %d: \"%s\" does not start with \"%s: \"", op, which, msg, op);
    for (int i = 0; guard != NULL && i < guard->count; i++) {
        int written = memcmp(guard->arrays[i].at, guard->arrays[i].copy, guard->arrays[i].size);
        free(guard->arrays[i].copy);
        ck_assert_msg(written == 0, "%s case %d: a rejected call wrote memory (array %d)", op,
                      which, i);
    }
}

void tu_seed(uint64_t seed)
{
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
}

double tu_uniform(void)
{
    /* xorshift64*: fresh, reproducible inputs without libc's rand() state. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * 0x2545F4914F6CDD1Dull;
    return (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

void tu_fill_f32(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)tu_uniform();
}

void tu_fill_f64(double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = tu_uniform();
}

int64_t tu_dtype_size(int32_t dtype)
{
    return dtype == CLOPS_F64 ? 8 : 4;
}

void *tu_random_elements(int32_t dtype, int64_t count)
{
    void *x = tu_malloc((size_t)(count * tu_dtype_size(dtype)));
    if (dtype == CLOPS_F64)
        tu_fill_f64(x, count);
    else
        tu_fill_f32(x, count);
    return x;
}

void *tu_malloc(size_t size)
{
    void *p = malloc(size > 0 ? size : 1);
    ck_assert_msg(p != NULL, "malloc(%zu) failed", size);
    return p;
}

void *tu_memdup(const void *p, size_t size)
{
    return memcpy(tu_malloc(size), p, size);
}

void *tu_random_bytes(size_t size)
{
    unsigned char *bytes = tu_malloc(size);
    for (size_t i = 0; i < size; i++)
        bytes[i] = (unsigned char)((tu_uniform() + 1.0) * 128.0);
    return bytes;
}

double tu_checked_gemm(const struct clops_api *api, struct clops_pool *pool, int n, uint64_t seed,
                       int32_t *status)
{
    double *a = malloc(sizeof(double) * (size_t)(n * n));
    double *b = malloc(sizeof(double) * (size_t)(n * n));
    double *c = malloc(sizeof(double) * (size_t)(n * n));
    uint64_t x = seed * 2654435761u + 1;
    for (int i = 0; i < n * n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        a[i] = (double)(x % 2001) / 1000.0 - 1.0;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (double)(x % 2001) / 1000.0 - 1.0;
        c[i] = NAN;
    }
    struct clops_tensor ta = clops_matrix(a, CLOPS_F64, n, n, n, 0);
    struct clops_tensor tb = clops_matrix(b, CLOPS_F64, n, n, n, 0);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F64, n, n, n, 0);
    clops_gemm_fn gemm = (clops_gemm_fn)api->op_find("gemm")->entry;
    int32_t called = gemm(pool, &ta, &tb, &tc, CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0);
    double worst = -1;
    if (called == CLOPS_OK) {
        worst = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                long double ref = 0;
                for (int k = 0; k < n; k++)
                    ref += (long double)a[i * n + k] * b[k * n + j];
                double err = fabs((double)(ref - c[i * n + j]));
                worst = isnan(err) ? INFINITY : err > worst ? err : worst;
            }
    }
    free(a);
    free(b);
    free(c);
    if (status != NULL)
        *status = called;
    return worst;
}

TCase *tu_add_tests(Suite *suite, const char *name, double timeout, const struct tu_test *tests,
                    size_t count)
{
    TCase *tc = NULL;
    const struct tu_test *opened = NULL; /* the TU_CASE of the tests that follow */
    for (size_t i = 0; i < count; i++) {
        if (tests[i].test == NULL) {
            opened = &tests[i];
            tc = NULL;
            continue;
        }
        if (tc == NULL) {
            tc = tcase_create(opened != NULL ? opened->tcase : name);
            if (timeout > 0)
                tcase_set_timeout(tc, timeout);
            if (opened != NULL && (opened->setup != NULL || opened->teardown != NULL))
                tcase_add_checked_fixture(tc, opened->setup, opened->teardown);
            suite_add_tcase(suite, tc);
        }
        /* $CLOPS_TEST_ONLY: only the tests whose name holds it (to run one test by hand). */
        const char *only = getenv("CLOPS_TEST_ONLY");
        if (only != NULL && strstr(tests[i].test->name, only) == NULL)
            continue;
        /* A plain test is, to Check, the loop test of the one iteration _i = 0. */
        tcase_add_loop_test(tc, tests[i].test, 0, tests[i].loops);
    }
    return tc;
}

int tu_run_tests(const char *name, double timeout, int fork, const struct tu_test *tests,
                 size_t count)
{
    Suite *suite = suite_create(name);
    tu_add_tests(suite, name, timeout, tests, count);
    return tu_run_suite(suite, fork);
}

int tu_run_suite(Suite *suite, int fork)
{
    SRunner *runner = srunner_create(suite);
    /* Windows has no fork: Check runs every test in this process there (.ci/windows-deps builds
     * it --disable-fork). */
    if (!fork)
        srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int kernel_name_index(const struct tu_kernel_log *log, const char *name)
{
    for (int i = 0; i < TU_KERNEL_NAMES && log->names[i] != NULL; i++)
        if (strcmp(log->names[i], name) == 0)
            return i;
    return -1;
}

void tu_collect_kernel_log(int32_t level, const char *message, void *user)
{
    struct tu_kernel_log *log = user;
    const size_t op_len = strlen(log->op);
    char name[64];
    int major = 0, minor = 0, count = 0, end = 0;
    double ms = 0;
    if (level != CLOPS_LOG_INFO)
        return;
    if (sscanf(message, "pool: '%*[^']' has NVIDIA compute capability %d.%d", &major, &minor) ==
        2) {
        log->cc = major * 10 + minor;
        return;
    }
    if (strncmp(message, log->op, op_len) != 0)
        return;
    /* A call across devices logs its kernels by device: "op: device D: kernel ...". */
    const char *at = message + op_len;
    int device = -1, skip = 0;
    if (sscanf(at, ": device %d%n", &device, &skip) == 1 && skip > 0)
        at += skip;
    if (sscanf(at, ": kernel %63[^:]: %d launch%n", name, &count, &end) != 2 || end == 0)
        return;
    const char *rest = strchr(at + end, ',');
    if (rest != NULL && sscanf(rest, ", %lf ms", &ms) == 1)
        log->ms += ms;
    log->lines++;
    const int i = kernel_name_index(log, name);
    *(i >= 0 ? &log->launches[i] : &log->other) += count;
}

int tu_kernel_launches(const struct tu_kernel_log *log, const char *name)
{
    const int i = kernel_name_index(log, name);
    ck_assert_msg(i >= 0, "kernel '%s' is not among those the log counts", name);
    return log->launches[i];
}

void tu_broken_gemm_kernels(struct tu_broken_kernels *k, const char *dir_template)
{
    static const char *const sources[TU_GEMM_SOURCES] = {"gemm.cl",      "gemm_pipeline.cl",
                                                         "gemm_simt.cl", "gemm_mma_core.cl",
                                                         "gemm_mma.cl",  "gemm_tf32.cl"};
    ck_assert_uint_lt(strlen(dir_template), sizeof k->dir);
    strcpy(k->dir, dir_template);
    ck_assert_ptr_nonnull(tu_make_temp_dir(k->dir));
    for (int i = 0; i < TU_GEMM_SOURCES; i++) {
        snprintf(k->paths[i], sizeof k->paths[i], "%s/%s", k->dir, sources[i]);
        FILE *f = fopen(k->paths[i], "w");
        ck_assert_ptr_nonnull(f);
        fputs("__kernel void gemm(__global float *x) { x[0] = undeclared_name; }\n", f);
        fclose(f);
    }
    snprintf(k->config, sizeof k->config, "kernel_dir = \"%s\";\ncache = { enabled = false; };\n",
             k->dir);
}

void tu_remove_broken_gemm_kernels(const struct tu_broken_kernels *k)
{
    for (int i = 0; i < TU_GEMM_SOURCES; i++)
        remove(k->paths[i]);
#ifdef _WIN32
    _rmdir(k->dir);
#else
    rmdir(k->dir);
#endif
}
