/* test_abi_1_1_host.c — a host built against the frozen ABI 1.1 header (tests/abi_1_1/clops.h,
 * abi/clops.h as of 201f19c, never to be edited) runs against this tree's libclops the way every
 * host compiled before ABI 1.2 does: it negotiates the table, walks each descriptor's params[]
 * with its own sizeof and calls invoke(). The ABI's growth must not break it. */
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_1_1/clops.h" /* next to this file: never abi/clops.h */

_Static_assert(CLOPS_ABI_MINOR == 1, "this host is built against the ABI 1.1 header");

static const struct clops_api *api;
static struct clops_pool *pool;

/* Loads $CLOPS_LIBRARY as a host does: dlopen, the entry symbol, the table. */
static void load_library(void)
{
    const char *path = getenv("CLOPS_LIBRARY");
    ck_assert_msg(path != NULL, "CLOPS_LIBRARY is not set");
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(handle != NULL, "dlopen: %s", dlerror());
    clops_plugin_entry_fn entry =
        (clops_plugin_entry_fn)(uintptr_t)dlsym(handle, "clops_plugin_entry");
    ck_assert_ptr_nonnull(entry);
    api = entry(CLOPS_ABI_MAJOR);
    ck_assert_ptr_nonnull(api);
    ck_assert_int_eq(api->pool_create_default(&pool), CLOPS_OK);
}

static void release_pool(void)
{
    api->pool_release(pool);
}

static uint64_t rng_state;

static double uniform(void) /* in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-52 - 1.0;
}

START_TEST(test_old_host_negotiates_the_newer_table)
{
    ck_assert_uint_eq(api->abi_major, CLOPS_ABI_MAJOR);
    ck_assert_uint_ge(api->abi_minor, CLOPS_ABI_MINOR);
    /* The table only grew: every member this header knows is there. */
    ck_assert_uint_ge(api->struct_size, sizeof(struct clops_api));
    ck_assert(CLOPS_API_HAS(api, invoke));
    ck_assert(CLOPS_API_HAS(api, pool_device_stats));
    ck_assert_str_eq(api->status_name(CLOPS_ERR_ABI_MISMATCH), "CLOPS_ERR_ABI_MISMATCH");
    struct clops_device_stats stats = {.struct_size = sizeof stats};
    ck_assert_int_eq(api->pool_device_stats(pool, 0, &stats), CLOPS_OK);
}
END_TEST

/* Each operator's parameters, in order, as ABI 1.1 published them. */
static const struct {
    const char *op;
    const char *params[10];
} expected_params[] = {
    {"gemm", {"a", "b", "c", "trans_a", "trans_b", "alpha", "beta"}},
    {"reduce", {"x", "out", "op", "axis"}},
    {"transpose", {"x", "y"}},
    {"mandelbrot",
     {"iterations", "image", "center_x", "center_y", "scale", "max_iterations", "precision",
      "split", "tile"}},
    {"lu", {"a", "ipiv", "info", "pivoting"}},
    {"solve", {"a", "b", "ipiv", "info"}},
    {"lu_solve", {"lu", "ipiv", "b", "trans"}},
};

START_TEST(test_old_host_walks_params_with_its_sizeof)
{
    int n = (int)(sizeof expected_params / sizeof expected_params[0]);
    ck_assert_int_eq(api->op_count(), n);
    for (int i = 0; i < n; i++) {
        const struct clops_op *op = api->op_find(expected_params[i].op);
        ck_assert_msg(op != NULL, "%s: %s", expected_params[i].op, api->last_error());
        ck_assert_uint_ge(op->struct_size, sizeof(struct clops_op));
        ck_assert_ptr_nonnull(op->entry);
        int count = 0;
        while (count < 10 && expected_params[i].params[count] != NULL)
            count++;
        /* The 1.1 parameters come first, in their order; those appended since carry a default,
         * so that a 1.1 host that leaves them out makes the call it made before. */
        ck_assert_int_ge(op->param_count, count);
        for (int p = count; p < op->param_count; p++)
            ck_assert_ptr_nonnull(op->params[p].default_value);
        for (int p = 0; p < count; p++) {
            const struct clops_param *param = &op->params[p]; /* this host's sizeof */
            ck_assert_str_eq(param->name, expected_params[i].params[p]);
            ck_assert_int_ge(param->kind, CLOPS_PARAM_TENSOR_IN);
            ck_assert_int_le(param->kind, CLOPS_PARAM_STRING);
            int is_tensor = param->kind <= CLOPS_PARAM_TENSOR_INOUT;
            ck_assert_int_eq(param->dtypes != 0, is_tensor);
            ck_assert_int_eq(param->enum_values != NULL, param->kind == CLOPS_PARAM_ENUM);
            ck_assert_int_gt((int)strlen(param->doc), 0);
        }
    }
    const struct clops_op *gemm = api->op_find("gemm");
    ck_assert_str_eq(gemm->params[3].enum_values[1], "transpose");
    ck_assert_ptr_null(gemm->params[3].enum_values[2]);
    ck_assert_str_eq(gemm->params[5].default_value, "1");
    ck_assert_str_eq(api->op_find("reduce")->params[2].enum_values[0], "sum");
}
END_TEST

enum { M = 23, N = 19, K = 31, LDC = N + 3 };

/* C = alpha A B + beta C through invoke(), A (M×K) and B (K×N) row-major, C row-major with a
 * leading dimension past N whose padding must stay untouched; checked against a long double
 * product to K ε of the magnitude of its terms. */
static void check_gemm(int32_t dtype, int named, uint64_t seed)
{
    /* Inputs rounded to float, so that both dtypes compute from the same values. */
    rng_state = seed;
    double a[M * K], b[K * N], c0[M * LDC], c[M * LDC];
    float af[M * K], bf[K * N], cf[M * LDC];
    for (int i = 0; i < M * K; i++)
        a[i] = af[i] = (float)uniform();
    for (int i = 0; i < K * N; i++)
        b[i] = bf[i] = (float)uniform();
    for (int i = 0; i < M * LDC; i++)
        c[i] = c0[i] = cf[i] = (float)uniform();
    int f64 = dtype == CLOPS_F64;
    struct clops_tensor ta = clops_matrix(f64 ? (void *)a : (void *)af, dtype, M, K, K, 0);
    struct clops_tensor tb = clops_matrix(f64 ? (void *)b : (void *)bf, dtype, K, N, N, 0);
    struct clops_tensor tc = clops_matrix(f64 ? (void *)c : (void *)cf, dtype, M, N, LDC, 0);
    const double alpha = -1.5, beta = 0.25;
    struct clops_arg args[7] = {
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &ta},
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &tb},
        {.kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &tc},
        {.kind = CLOPS_PARAM_ENUM, .s = "none"},
        {.kind = CLOPS_PARAM_ENUM, .i = 0},
        {.kind = CLOPS_PARAM_DOUBLE, .d = alpha},
        {.kind = CLOPS_PARAM_DOUBLE, .d = beta},
    };
    if (named) {
        static const char *const names[] = {"a", "b", "c", "trans_a", "trans_b", "alpha", "beta"};
        for (int k = 0; k < 7; k++)
            args[k].name = names[k];
        struct clops_arg first = args[0]; /* named arguments in any order */
        args[0] = args[6];
        args[6] = first;
    }
    int32_t status = api->invoke(pool, api->op_find("gemm"), args, 7);
    ck_assert_msg(status == CLOPS_OK, "invoke: %s", api->last_error());
    double eps = f64 ? 0x1p-52 : 0x1p-23, worst = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < LDC; j++) {
            double got = f64 ? c[i * LDC + j] : cf[i * LDC + j];
            if (j >= N) {
                ck_assert_msg(got == c0[i * LDC + j], "padding C[%d][%d] was written", i, j);
                continue;
            }
            long double sum = 0, magnitude = 0;
            for (int p = 0; p < K; p++) {
                sum += (long double)a[i * K + p] * b[p * N + j];
                magnitude += fabs(a[i * K + p] * b[p * N + j]);
            }
            long double want = alpha * sum + beta * (long double)c0[i * LDC + j];
            double bound =
                K * eps * (fabs(alpha) * (double)magnitude + fabs(beta * c0[i * LDC + j]));
            double error = (double)fabsl(got - want) / bound;
            worst = isnan(error) || error > worst ? error : worst;
        }
    }
    ck_assert_msg(worst < 1, "gemm through invoke: error %.3g of the bound (dtype %d)", worst,
                  dtype);
}

START_TEST(test_old_host_invoke_gemm_matches_reference)
{
    check_gemm(_i & 1 ? CLOPS_F64 : CLOPS_F32, _i >> 1, 1000 + (uint64_t)_i);
}
END_TEST

START_TEST(test_old_host_invoke_reduce_takes_int64_and_enum)
{
    rng_state = 77;
    enum { LEN = 1001 };
    double x[LEN], out = 0;
    long double sum = 0, magnitude = 0;
    double max = -2;
    for (int i = 0; i < LEN; i++) {
        x[i] = uniform();
        sum += x[i];
        magnitude += fabs(x[i]);
        max = x[i] > max ? x[i] : max;
    }
    struct clops_tensor tx = {.data = x, .dtype = CLOPS_F64, .rank = 1};
    tx.shape[0] = LEN;
    tx.strides[0] = 1;
    struct clops_tensor tout = {.data = &out, .dtype = CLOPS_F64, .rank = 1};
    tout.shape[0] = 1;
    tout.strides[0] = 1;
    const struct clops_op *reduce = api->op_find("reduce");
    struct clops_arg args[4] = {
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &tx},
        {.kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &tout},
        {.kind = CLOPS_PARAM_ENUM, .s = "sum"},
        {.name = "axis", .kind = CLOPS_PARAM_INT64, .i = -1},
    };
    ck_assert_msg(api->invoke(pool, reduce, args, 4) == CLOPS_OK, "%s", api->last_error());
    ck_assert_double_le(fabs((double)(out - sum)), LEN * 0x1p-52 * (double)magnitude);
    args[2].s = NULL;
    args[2].i = 2; /* "max", by index */
    ck_assert_msg(api->invoke(pool, reduce, args, 4) == CLOPS_OK, "%s", api->last_error());
    ck_assert_double_eq(out, max);
}
END_TEST

START_TEST(test_old_host_invoke_rejects_naming_the_parameter)
{
    double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {9, 10, 11, 12};
    struct clops_tensor ta = clops_matrix(a, CLOPS_F64, 2, 2, 2, 0);
    struct clops_tensor tb = clops_matrix(b, CLOPS_F64, 2, 2, 2, 0);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F64, 2, 2, 2, 0);
    struct clops_arg args[4] = {
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &ta},
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &tb},
        {.kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &tc},
        {.name = "trans_a", .kind = CLOPS_PARAM_ENUM, .s = "transposed"},
    };
    const struct clops_op *gemm = api->op_find("gemm");
    ck_assert_int_eq(api->invoke(pool, gemm, args, 4), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "'trans_a' = \"transposed\""));
    args[3] = (struct clops_arg){.name = "alpah", .kind = CLOPS_PARAM_DOUBLE, .d = 2};
    ck_assert_int_eq(api->invoke(pool, gemm, args, 4), CLOPS_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "'alpah'"));
    const double unchanged[4] = {9, 10, 11, 12};
    ck_assert(memcmp(c, unchanged, sizeof c) == 0);
    ck_assert_int_eq(api->invoke(pool, gemm, args, 3), CLOPS_OK); /* and the valid call runs */
    ck_assert_double_eq(c[0], 1 * 5 + 2 * 7);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("abi_1_1_host");
    TCase *tc = tcase_create("abi_1_1_host");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, load_library, release_pool);
    tcase_add_test(tc, test_old_host_negotiates_the_newer_table);
    tcase_add_test(tc, test_old_host_walks_params_with_its_sizeof);
    tcase_add_loop_test(tc, test_old_host_invoke_gemm_matches_reference, 0, 4);
    tcase_add_test(tc, test_old_host_invoke_reduce_takes_int64_and_enum);
    tcase_add_test(tc, test_old_host_invoke_rejects_naming_the_parameter);
    suite_add_tcase(s, tc);
    SRunner *runner = srunner_create(s);
    srunner_set_fork_status(runner, CK_NOFORK); /* one library, one pool */
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
