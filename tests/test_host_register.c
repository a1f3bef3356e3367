/* test_host_register.c — host memory registered with a pool (ABI 1.4's host_register and
 * host_unregister): operands read straight from a registered range give the results of staged
 * ones (gemm against a long double reference, f32 and f64, awkward sizes, both layouts, a
 * padded leading dimension, a view that runs past the range's end), a submitted call may
 * outlive its range's registration, a pool released with ranges still registered frees them,
 * and every refusal names its parameter. Links the core: uploads are staged through pinned
 * blocks as on a GPU (tensor_stage_on_cpu), so that PoCL takes both paths, and the staging
 * level checks which one a view took. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clops.h"
#include "config.h"
#include "entry.h"
#include "error.h"
#include "host_register.h"
#include "pool.h"
#include "tensor.h"
#include "testutil.h"

static const struct clops_api *api;

static void setup(void)
{
    api = tu_api();
    tensor_stage_on_cpu = 1;
}

static void teardown(void)
{
    tensor_stage_on_cpu = 0;
}

static int32_t reg(struct clops_pool *pool, void *data, int64_t bytes)
{
    struct clops_host_register_args a = {
        .struct_size = sizeof a, .pool = pool, .data = data, .bytes = bytes};
    return api->host_register(&a);
}

static int32_t unreg(struct clops_pool *pool, void *data)
{
    struct clops_host_register_args a = {.struct_size = sizeof a, .pool = pool, .data = data};
    return api->host_unregister(&a);
}

static void expect_refusal(int which, int32_t got, int32_t want, const char *needle)
{
    const char *msg = api->last_error();
    ck_assert_msg(got == want, "case %d: expected %s, got %s (%s)", which, api->status_name(want),
                  api->status_name(got), msg);
    ck_assert_msg(strstr(msg, needle) != NULL, "case %d: \"%s\" lacks \"%s\"", which, msg, needle);
}

/* ---- The staging level: which path a view takes ---------------------------------------------- */

/* A view inside a registered range is written straight from it (no staging block) and holds the
 * range; one that runs past the range's end goes through the blocks; the device buffer holds
 * the view's elements either way; unregistering while the view is staged leaves the staged
 * tensor's hold to tensor_release (AddressSanitizer sees a use after free otherwise). */
START_TEST(test_views_inside_a_registered_range_skip_the_staging_blocks)
{
    struct clops_pool *pool = tu_pool();
    tu_seed(7300);
    const int64_t rows = 37, cols = 29, ld = 31 + 2; /* padded rows */
    const size_t bytes = (size_t)(rows * ld) * sizeof(double);
    double *host = tu_random_bytes(bytes + 4096);
    ck_assert_msg(reg(pool, host, (int64_t)bytes) == CLOPS_OK, "%s", api->last_error());
    struct pool_device *dev = pool_device_at(pool, 0);
    cl_command_queue queue = pool_acquire_queue(dev);
    for (int past_end = 0; past_end < 2; past_end++) {
        /* past_end: the view starts one row later, so its last row lies past the range. */
        struct clops_tensor t =
            clops_matrix(host + (past_end ? ld : 0), CLOPS_F64, rows, cols, ld, 0);
        struct staged_tensor st;
        ck_assert_msg(tensor_stage(pool, dev, queue, &t, 1, &st, "test", "x") == CLOPS_OK, "%s",
                      err_last());
        if (past_end) {
            ck_assert_ptr_null(st.registered);
            ck_assert_ptr_nonnull(st.block[0]);
        } else {
            ck_assert_ptr_nonnull(st.registered);
            ck_assert_ptr_null(st.block[0]);
            ck_assert_ptr_null(st.block[1]);
            ck_assert_int_eq(unreg(pool, host), CLOPS_OK); /* while staged */
        }
        double *device = tu_malloc((size_t)(rows * ld) * sizeof(double));
        ck_assert_int_eq(clEnqueueReadBuffer(queue, st.mem, CL_TRUE, 0,
                                             (size_t)((rows - 1) * ld + cols) * sizeof(double),
                                             device, 0, NULL, NULL),
                         CL_SUCCESS);
        const double *first = host + (past_end ? ld : 0);
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
                ck_assert_msg(memcmp(&device[i * ld + j], &first[i * ld + j], sizeof(double)) == 0,
                              "past_end %d: element (%lld, %lld) differs on the device", past_end,
                              (long long)i, (long long)j);
        free(device);
        tensor_release(&st);
    }
    /* Unregistered above: a view is staged again. */
    struct clops_tensor t = clops_matrix(host, CLOPS_F64, rows, cols, ld, 0);
    struct staged_tensor st;
    ck_assert_int_eq(tensor_stage(pool, dev, queue, &t, 1, &st, "test", "x"), CLOPS_OK);
    ck_assert_ptr_null(st.registered);
    ck_assert_int_eq(clFinish(queue), CL_SUCCESS);
    tensor_release(&st);
    free(host);
}
END_TEST

/* ---- Through the ABI ------------------------------------------------------------------------- */

/* Element i of an f32 or f64 array. */
static double at(const char *base, int32_t dtype, int64_t i)
{
    return dtype == CLOPS_F32 ? ((const float *)base)[i] : ((const double *)base)[i];
}

/* C = 1.5 A B - 0.25 C with A, B and C (read, then written) in one registered range: the same
 * bits as the call on an unregistered copy of the range, and within the bound of a long double
 * reference. */
static void check_gemm(struct clops_pool *pool, int32_t dtype, int64_t m, int64_t n, int64_t k,
                       int column_major, int64_t pad)
{
    const size_t es = (size_t)tu_dtype_size(dtype);
    const int64_t lda = (column_major ? m : k) + pad, ldb = (column_major ? k : n) + pad,
                  ldc = (column_major ? m : n) + pad;
    const int64_t na = (column_major ? k : m) * lda, nb = (column_major ? n : k) * ldb,
                  nc = (column_major ? n : m) * ldc;
    const size_t bytes = (size_t)(na + nb + nc) * es;
    char *range = tu_random_elements(dtype, na + nb + nc);
    char *copy = tu_memdup(range, bytes), *orig = tu_memdup(range, bytes);
    ck_assert_msg(reg(pool, range, (int64_t)bytes) == CLOPS_OK, "%s", api->last_error());
    for (int pass = 0; pass < 2; pass++) {
        char *base = pass == 0 ? range : copy;
        struct clops_tensor ta = clops_matrix(base, dtype, m, k, lda, column_major);
        struct clops_tensor tb =
            clops_matrix(base + (size_t)na * es, dtype, k, n, ldb, column_major);
        struct clops_tensor tc =
            clops_matrix(base + (size_t)(na + nb) * es, dtype, m, n, ldc, column_major);
        const struct clops_arg args[] = {
            {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &ta},
            {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &tb},
            {.kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &tc},
            {.name = "alpha", .kind = CLOPS_PARAM_DOUBLE, .d = 1.5},
            {.name = "beta", .kind = CLOPS_PARAM_DOUBLE, .d = -0.25},
        };
        ck_assert_msg(api->invoke_sized(pool, tu_op("gemm"), args, 5, sizeof args[0]) == CLOPS_OK,
                      "%s", api->last_error());
    }
    ck_assert_int_eq(unreg(pool, range), CLOPS_OK);
    /* Everything but C's elements as it was, in both. */
    ck_assert(memcmp(range, orig, (size_t)(na + nb) * es) == 0);
    const char *a = orig, *b = orig + (size_t)na * es, *c = orig + (size_t)(na + nb) * es;
    const double tol = (dtype == CLOPS_F32 ? 1.2e-7 : 2.3e-16) * 8.0 * (double)(k + 2);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            const int64_t ci = column_major ? j * ldc + i : i * ldc + j;
            const double got = at(range + (size_t)(na + nb) * es, dtype, ci);
            const double staged = at(copy + (size_t)(na + nb) * es, dtype, ci);
            ck_assert_msg(memcmp(&got, &staged, sizeof got) == 0,
                          "gemm %s %lldx%lldx%lld %s: c(%lld, %lld) = %.17g from registered "
                          "memory, %.17g staged",
                          dtype == CLOPS_F32 ? "f32" : "f64", (long long)m, (long long)n,
                          (long long)k, column_major ? "column-major" : "row-major", (long long)i,
                          (long long)j, got, staged);
            long double s = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                const long double x = at(a, dtype, column_major ? p * lda + i : i * lda + p);
                const long double y = at(b, dtype, column_major ? j * ldb + p : p * ldb + j);
                s += x * y;
                mag += fabsl(x * y);
            }
            const long double want = 1.5L * s - 0.25L * at(c, dtype, ci);
            ck_assert_msg(fabsl(got - want) <= tol * (1.5 * (double)mag + 1.0),
                          "gemm %s %lldx%lldx%lld: c(%lld, %lld) = %.17g, expected %.17Lg",
                          dtype == CLOPS_F32 ? "f32" : "f64", (long long)m, (long long)n,
                          (long long)k, (long long)i, (long long)j, got, want);
        }
    free(range);
    free(copy);
    free(orig);
}

/* Sizes 1, primes and non-multiples of the tile, square and not, both layouts, f32 and f64,
 * with and without padding. */
START_TEST(test_gemm_on_registered_operands_matches_staged_and_reference)
{
    struct clops_pool *pool = tu_pool();
    static const int64_t sizes[][3] = {
        {1, 1, 1}, {1, 37, 5}, {67, 1, 13}, {97, 61, 83}, {130, 129, 67}};
    for (int f64 = 0; f64 < 2; f64++) {
        if (f64 && !tu_has_fp64())
            continue;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int cm = 0; cm < 2; cm++) {
                tu_seed(7400 + s * 4 + (uint64_t)(f64 * 2 + cm));
                check_gemm(pool, f64 ? CLOPS_F64 : CLOPS_F32, sizes[s][0], sizes[s][1], sizes[s][2],
                           cm, (int64_t)s % 3);
            }
    }
}
END_TEST

/* A submitted gemm reading a registered range, the range unregistered before the call ends:
 * the call still reads it as it was and gives the reference; then the stream goes, and the
 * range can be registered anew. */
START_TEST(test_a_submitted_call_outlives_its_range_registration)
{
    struct clops_pool *pool = tu_pool();
    const int64_t n = 96;
    double *range = tu_malloc(sizeof(double) * (size_t)(3 * n * n));
    for (int64_t i = 0; i < 2 * n * n; i++)
        range[i] = (double)((i * 7) % 11) - 5.0;
    for (int64_t i = 0; i < n * n; i++)
        range[2 * n * n + i] = NAN;
    ck_assert_int_eq(reg(pool, range, (int64_t)(sizeof(double) * (size_t)(3 * n * n))), CLOPS_OK);
    struct clops_stream_create_args sc = {.struct_size = sizeof sc, .pool = pool};
    ck_assert_int_eq(api->stream_create(&sc), CLOPS_OK);
    struct clops_tensor ta = clops_matrix(range, CLOPS_F64, n, n, n, 0);
    struct clops_tensor tb = clops_matrix(range + n * n, CLOPS_F64, n, n, n, 0);
    struct clops_tensor tc = clops_matrix(range + 2 * n * n, CLOPS_F64, n, n, n, 0);
    const struct clops_arg args[] = {
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &ta},
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &tb},
        {.kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &tc},
        {.name = "beta", .kind = CLOPS_PARAM_DOUBLE, .d = 0.0},
    };
    struct clops_submit_args a = {.struct_size = sizeof a,
                                  .op_index = api->op_index(tu_op("gemm")),
                                  .stream = sc.stream,
                                  .args = args,
                                  .nargs = 4,
                                  .arg_size = sizeof args[0]};
    ck_assert_msg(api->submit(&a) == CLOPS_OK, "%s", api->last_error());
    ck_assert_int_eq(unreg(pool, range), CLOPS_OK);
    struct clops_event_wait_args w = {
        .struct_size = sizeof w, .count = 1, .events = &a.event, .timeout_ns = -1, .wait_all = 1};
    ck_assert_int_eq(api->event_wait(&w), CLOPS_OK);
    struct clops_event_query_args q = {.struct_size = sizeof q, .event = a.event};
    ck_assert_int_eq(api->event_query(&q), CLOPS_OK);
    ck_assert_msg(q.status == CLOPS_OK, "%s", q.message);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double want = 0; /* exact: small integers */
            for (int64_t p = 0; p < n; p++)
                want += range[i * n + p] * range[n * n + p * n + j];
            ck_assert_msg(range[2 * n * n + i * n + j] == want, "c(%lld, %lld) = %g, expected %g",
                          (long long)i, (long long)j, range[2 * n * n + i * n + j], want);
        }
    struct clops_event_release_args er = {.struct_size = sizeof er, .event = a.event};
    ck_assert_int_eq(api->event_release(&er), CLOPS_OK);
    struct clops_stream_release_args sr = {.struct_size = sizeof sr, .stream = sc.stream};
    ck_assert_int_eq(api->stream_release(&sr), CLOPS_OK);
    ck_assert_int_eq(reg(pool, range, (int64_t)(sizeof(double) * (size_t)(3 * n * n))), CLOPS_OK);
    ck_assert_int_eq(unreg(pool, range), CLOPS_OK);
    free(range);
}
END_TEST

/* A pool released with ranges registered frees them (AddressSanitizer's leak check), and the
 * memory is the host's again. */
START_TEST(test_pool_release_lets_go_of_registered_ranges)
{
    struct clops_pool *pool = tu_pool_from_string("");
    char *range = tu_random_bytes(1 << 20);
    ck_assert_int_eq(reg(pool, range, 1 << 19), CLOPS_OK);
    ck_assert_int_eq(reg(pool, range + (1 << 19), 1 << 19), CLOPS_OK);
    api->pool_release(pool);
    memset(range, 0, 1 << 20);
    free(range);
}
END_TEST

START_TEST(test_register_and_unregister_refuse_bad_arguments_naming_them)
{
    struct clops_pool *pool = tu_pool();
    char *range = tu_malloc(8192);
    struct clops_host_register_args a = {.struct_size = sizeof a, .pool = pool, .data = range};
    int which = 0;
    expect_refusal(which++, reg(NULL, range, 64), CLOPS_ERR_INVALID_ARGUMENT, "'pool' is NULL");
    expect_refusal(which++, reg(pool, NULL, 64), CLOPS_ERR_INVALID_ARGUMENT, "'data' is NULL");
    expect_refusal(which++, reg(pool, range, 0), CLOPS_ERR_INVALID_ARGUMENT, "'bytes' = 0");
    expect_refusal(which++, reg(pool, range, -5), CLOPS_ERR_INVALID_ARGUMENT, "'bytes' = -5");
    a.bytes = 64;
    a.flags = 3;
    expect_refusal(which++, api->host_register(&a), CLOPS_ERR_INVALID_ARGUMENT, "'flags' = 3");
    a.flags = 0;
    a.struct_size = 8;
    expect_refusal(which++, api->host_register(&a), CLOPS_ERR_ABI_MISMATCH, "struct_size");
    expect_refusal(which++, api->host_register(NULL), CLOPS_ERR_INVALID_ARGUMENT, "NULL");
    ck_assert_int_eq(reg(pool, range + 1024, 4096), CLOPS_OK);
    expect_refusal(which++, reg(pool, range, 1025), CLOPS_ERR_INVALID_ARGUMENT, "overlaps");
    expect_refusal(which++, reg(pool, range + 5119, 10), CLOPS_ERR_INVALID_ARGUMENT, "overlaps");
    ck_assert_int_eq(reg(pool, range, 1024), CLOPS_OK);        /* touching is no overlap */
    ck_assert_int_eq(reg(pool, range + 5120, 1024), CLOPS_OK); /* on either side */
    expect_refusal(which++, unreg(pool, range + 1025), CLOPS_ERR_NOT_FOUND, "'data'");
    expect_refusal(which++, unreg(NULL, range), CLOPS_ERR_INVALID_ARGUMENT, "'pool' is NULL");
    ck_assert_int_eq(unreg(pool, range + 1024), CLOPS_OK);
    expect_refusal(which++, unreg(pool, range + 1024), CLOPS_ERR_NOT_FOUND, "not the start");
    ck_assert_int_eq(unreg(pool, range), CLOPS_OK);
    ck_assert_int_eq(unreg(pool, range + 5120), CLOPS_OK);
    free(range);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_CASE_FIXTURE("host_register", setup, teardown),
        TU_TEST(test_views_inside_a_registered_range_skip_the_staging_blocks),
        TU_TEST(test_gemm_on_registered_operands_matches_staged_and_reference),
        TU_TEST(test_a_submitted_call_outlives_its_range_registration),
        TU_TEST(test_pool_release_lets_go_of_registered_ranges),
        TU_TEST(test_register_and_unregister_refuse_bad_arguments_naming_them),
    };
    return tu_run_tests("host_register", 600, 1, tests, TU_COUNT(tests));
}
