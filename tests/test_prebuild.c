/* test_prebuild.c — kernels built ahead of time (ABI 1.5's pool_prebuild, issue 25 item 3): after
 * it, first calls of every operator in every dtype compile nothing; a second pool on the same
 * cache directory loads every program and compiles none; a subset builds that subset only; the
 * prebuild's own calls count in no statistics; bad arguments are refused naming them, with
 * nothing built. Each pool keeps its binary cache in a directory of its own. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char cache_dir[512];

/* A pool whose binary cache is `dir` (a new directory under cache_dir). */
static struct clops_pool *pool_in(const char *sub)
{
    char config[1024];
    snprintf(config, sizeof config, "cache = { enabled = true; dir = \"%s/%s\"; };", cache_dir,
             sub);
    return tu_pool_from_string(config);
}

static struct clops_stats stats(struct clops_pool *pool)
{
    struct clops_stats s = {.struct_size = sizeof s};
    ck_assert_int_eq(tu_api()->pool_stats(pool, &s), CLOPS_OK);
    return s;
}

static int32_t prebuild(struct clops_pool *pool, const char *const *ops, int32_t op_count,
                        const int32_t *dtypes, int32_t dtype_count, struct clops_prebuild_args *out)
{
    *out = (struct clops_prebuild_args){.struct_size = sizeof *out,
                                        .pool = pool,
                                        .ops = ops,
                                        .op_count = op_count,
                                        .dtypes = dtypes,
                                        .dtype_count = dtype_count};
    return tu_api()->pool_prebuild(out);
}

static void expect_ok(int32_t status, const char *what)
{
    ck_assert_msg(status == CLOPS_OK, "%s: %s: %s", what, tu_api()->status_name(status),
                  tu_api()->last_error());
}

/* One call of each operator and dtype at shapes unlike the prebuild's own, results checked
 * where a wrong one would show (the products, the solution, the sums). */
static void call_everything(struct clops_pool *pool)
{
    const struct clops_api *api = tu_api();
    for (int f64 = 0; f64 < 2; f64++) {
        if (f64 && !tu_has_fp64())
            continue;
        const int32_t dt = f64 ? CLOPS_F64 : CLOPS_F32;
        double a[37 * 37], b[37], c[37 * 37];
        float af[37 * 37], bf[37], cf[37 * 37];
        void *A = f64 ? (void *)a : (void *)af, *B = f64 ? (void *)b : (void *)bf,
             *C = f64 ? (void *)c : (void *)cf;
        for (int i = 0; i < 37 * 37; i++) {
            const double v = (i % 37 == i / 37) ? 40.0 : (double)((i * 7) % 11) / 11.0;
            a[i] = v;
            af[i] = (float)v;
        }
        for (int i = 0; i < 37; i++)
            b[i] = bf[i] = 1;
        /* C (17 x 9) = A (17 x 13, ld 37) B (13 x 9, ld 37): entry (0, 0) checked. */
        struct clops_tensor ta = clops_matrix(A, dt, 17, 13, 37, 0),
                            tb = clops_matrix(A, dt, 13, 9, 37, 0),
                            tc = clops_matrix(C, dt, 17, 9, 9, 0);
        clops_gemm_fn gemm = (clops_gemm_fn)api->op_find("gemm")->entry;
        expect_ok(gemm(pool, &ta, &tb, &tc, 0, 0, 1.0, 0.0), "gemm");
        double want = 0;
        for (int k = 0; k < 13; k++)
            want += a[k] * a[k * 37];
        const double got = f64 ? c[0] : (double)cf[0];
        ck_assert_double_eq_tol(got, want, 1e-4 * want);
        /* solve A x = 1 on 37 x 37 (diagonally dominant): residual of row 0. */
        int32_t ipiv[37], info = -1;
        double acopy[37 * 37];
        float acopyf[37 * 37];
        memcpy(acopy, a, sizeof acopy);
        memcpy(acopyf, af, sizeof acopyf);
        struct clops_tensor
            tA = clops_matrix(f64 ? (void *)acopy : (void *)acopyf, dt, 37, 37, 37, 0),
            tB = clops_matrix(B, dt, 37, 1, 1, 0),
            tp = {.data = ipiv, .dtype = CLOPS_I32, .rank = 1, .shape = {37}, .strides = {1}},
            ti = {.data = &info, .dtype = CLOPS_I32, .rank = 1, .shape = {1}, .strides = {1}};
        const struct clops_arg sargs[] = {{"a", CLOPS_PARAM_TENSOR_INOUT, 0, &tA, 0, 0, NULL},
                                          {"b", CLOPS_PARAM_TENSOR_INOUT, 0, &tB, 0, 0, NULL},
                                          {"ipiv", CLOPS_PARAM_TENSOR_OUT, 0, &tp, 0, 0, NULL},
                                          {"info", CLOPS_PARAM_TENSOR_OUT, 0, &ti, 0, 0, NULL}};
        expect_ok(api->invoke_sized(pool, api->op_find("solve"), sargs, 4, sizeof sargs[0]),
                  "solve");
        ck_assert_int_eq(info, 0);
        double r = -1;
        for (int k = 0; k < 37; k++)
            r += a[k] * (f64 ? b[k] : (double)bf[k]);
        ck_assert_double_lt(fabs(r), 1e-4);
        /* lu_solve with those factors, lu alone, a transpose and two reductions. */
        const struct clops_arg largs[] = {{"lu", CLOPS_PARAM_TENSOR_IN, 0, &tA, 0, 0, NULL},
                                          {"ipiv", CLOPS_PARAM_TENSOR_IN, 0, &tp, 0, 0, NULL},
                                          {"b", CLOPS_PARAM_TENSOR_INOUT, 0, &tB, 0, 0, NULL}};
        expect_ok(api->invoke_sized(pool, api->op_find("lu_solve"), largs, 3, sizeof largs[0]),
                  "lu_solve");
        const struct clops_arg fargs[] = {{"a", CLOPS_PARAM_TENSOR_INOUT, 0, &tA, 0, 0, NULL},
                                          {"ipiv", CLOPS_PARAM_TENSOR_OUT, 0, &tp, 0, 0, NULL},
                                          {"info", CLOPS_PARAM_TENSOR_OUT, 0, &ti, 0, 0, NULL}};
        expect_ok(api->invoke_sized(pool, api->op_find("lu"), fargs, 3, sizeof fargs[0]), "lu");
        double tbuf[9 * 17];
        struct clops_tensor tt = clops_matrix(tbuf, dt, 9, 17, 17, 0);
        clops_transpose_fn transpose = (clops_transpose_fn)api->op_find("transpose")->entry;
        expect_ok(transpose(pool, &tc, &tt), "transpose");
        double sum = 0;
        struct clops_tensor tsum = {
            .data = &sum, .dtype = dt, .rank = 1, .shape = {1}, .strides = {1}};
        float sumf = 0;
        if (!f64)
            tsum.data = &sumf;
        const struct clops_arg rargs[] = {{"x", CLOPS_PARAM_TENSOR_IN, 0, &tB, 0, 0, NULL},
                                          {"out", CLOPS_PARAM_TENSOR_OUT, 0, &tsum, 0, 0, NULL},
                                          {"op", CLOPS_PARAM_ENUM, 0, NULL, 0, 0, "sum"}};
        expect_ok(api->invoke_sized(pool, api->op_find("reduce"), rargs, 3, sizeof rargs[0]),
                  "reduce");
        /* Mandelbrot in this precision, 40 x 50 in tiles of 32. */
        uint32_t counts[40 * 50];
        struct clops_tensor tm = clops_matrix(counts, CLOPS_U32, 40, 50, 50, 0);
        const struct clops_arg margs[] = {
            {"iterations", CLOPS_PARAM_TENSOR_OUT, 0, &tm, 0, 0, NULL},
            {"precision", CLOPS_PARAM_ENUM, 0, NULL, 0, 0, f64 ? "f64" : "f32"},
            {"tile", CLOPS_PARAM_INT64, 0, NULL, 32, 0, NULL}};
        expect_ok(api->invoke_sized(pool, api->op_find("mandelbrot"), margs, 3, sizeof margs[0]),
                  "mandelbrot");
        ck_assert_uint_eq(counts[20 * 50 + 25], 1024); /* the view's centre is inside the set */
    }
}

START_TEST(test_after_prebuild_first_calls_compile_nothing)
{
    struct clops_pool *pool = pool_in("all");
    struct clops_prebuild_args a;
    expect_ok(prebuild(pool, NULL, 0, NULL, 0, &a), "pool_prebuild");
    ck_assert_int_gt(a.programs_built, 3); /* gemm, lu, transpose, reduce, mandelbrot at least */
    ck_assert_int_eq(a.programs_loaded, 0);
    ck_assert_int_gt(a.build_ns, 0);
    ck_assert_int_ge(a.wall_ns, a.build_ns);
    const struct clops_stats before = stats(pool);
    ck_assert_int_eq(before.calls, 0); /* the prebuild's calls are not counted */
    ck_assert_int_eq(before.programs_built, a.programs_built);
    call_everything(pool);
    const struct clops_stats after = stats(pool);
    ck_assert_int_gt(after.calls, 10);
    ck_assert_msg(after.programs_built == before.programs_built &&
                      after.programs_loaded == before.programs_loaded,
                  "first calls after pool_prebuild built %lld and loaded %lld programs",
                  (long long)(after.programs_built - before.programs_built),
                  (long long)(after.programs_loaded - before.programs_loaded));
    /* Again: nothing new is built, nothing is loaded (the pool has every program). */
    struct clops_prebuild_args again;
    expect_ok(prebuild(pool, NULL, 0, NULL, 0, &again), "pool_prebuild again");
    ck_assert_int_eq(again.programs_built, 0);
    ck_assert_int_eq(again.programs_loaded, 0);
    tu_api()->pool_release(pool);
    /* A new pool on the same cache loads every program and compiles none. */
    pool = pool_in("all");
    struct clops_prebuild_args loaded;
    expect_ok(prebuild(pool, NULL, 0, NULL, 0, &loaded), "pool_prebuild, second pool");
    ck_assert_int_eq(loaded.programs_built, 0);
    ck_assert_int_eq(loaded.programs_loaded, a.programs_built);
    tu_api()->pool_release(pool);
}
END_TEST

START_TEST(test_a_subset_builds_that_subset)
{
    struct clops_pool *pool = pool_in("subset");
    static const char *const ops[] = {"transpose"};
    static const int32_t dtypes[] = {CLOPS_U8};
    struct clops_prebuild_args a;
    expect_ok(prebuild(pool, ops, 1, dtypes, 1, &a), "pool_prebuild transpose u8");
    ck_assert_int_ge(a.programs_built, 1);
    const struct clops_stats s = stats(pool);
    /* A u8 transpose now builds nothing; an f32 one, not prebuilt, builds its program. */
    uint8_t x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
    struct clops_tensor tx = clops_matrix(x, CLOPS_U8, 2, 3, 3, 0),
                        ty = clops_matrix(y, CLOPS_U8, 3, 2, 2, 0);
    clops_transpose_fn transpose = (clops_transpose_fn)tu_api()->op_find("transpose")->entry;
    expect_ok(transpose(pool, &tx, &ty), "transpose u8");
    ck_assert_uint_eq(y[1], 4);
    ck_assert_int_eq(stats(pool).programs_built, s.programs_built);
    float xf[6] = {1, 2, 3, 4, 5, 6}, yf[6] = {0};
    struct clops_tensor txf = clops_matrix(xf, CLOPS_F32, 2, 3, 3, 0),
                        tyf = clops_matrix(yf, CLOPS_F32, 3, 2, 2, 0);
    expect_ok(transpose(pool, &txf, &tyf), "transpose f32");
    ck_assert_int_gt(stats(pool).programs_built, s.programs_built);
    tu_api()->pool_release(pool);
}
END_TEST

START_TEST(test_bad_arguments_are_refused_naming_them)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = pool_in("bad");
    struct clops_prebuild_args a;
    static const char *const unknown[] = {"gemm", "qr"};
    ck_assert_int_eq(prebuild(pool, unknown, 2, NULL, 0, &a), CLOPS_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "ops[1] = \"qr\""));
    static const char *const mandel[] = {"mandelbrot"};
    static const int32_t u8[] = {CLOPS_U8};
    ck_assert_int_eq(prebuild(pool, mandel, 1, u8, 1, &a), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "dtypes[0]"));
    ck_assert_int_eq(prebuild(pool, mandel, -1, NULL, 0, &a), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "op_count"));
    a = (struct clops_prebuild_args){.struct_size = sizeof a, .pool = pool, .flags = 1};
    ck_assert_int_eq(api->pool_prebuild(&a), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "flags"));
    a = (struct clops_prebuild_args){.struct_size = 8, .pool = pool};
    ck_assert_int_eq(api->pool_prebuild(&a), CLOPS_ERR_ABI_MISMATCH);
    a = (struct clops_prebuild_args){.struct_size = sizeof a};
    ck_assert_int_eq(api->pool_prebuild(&a), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "'pool'"));
    ck_assert_int_eq(api->pool_prebuild(NULL), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(stats(pool).programs_built, 0); /* nothing was built */
    api->pool_release(pool);
}
END_TEST

int main(void)
{
    snprintf(cache_dir, sizeof cache_dir, "%s/clops-prebuild-XXXXXX", tu_temp_dir());
    if (tu_make_temp_dir(cache_dir) == NULL)
        return 1;
    const struct tu_test tests[] = {
        TU_TEST(test_after_prebuild_first_calls_compile_nothing),
        TU_TEST(test_a_subset_builds_that_subset),
        TU_TEST(test_bad_arguments_are_refused_naming_them),
    };
    const int failed = tu_run_tests("prebuild", 900, 0, tests, TU_COUNT(tests));
    tu_remove_tree(cache_dir);
    return failed;
}
