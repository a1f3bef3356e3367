/* test_gemm_precision.c — gemm's precision parameter (fp32, 3xtf32, tf32) on f32 operands: each
 * mode's error against a long double reference on uniform, normal and badly scaled inputs over
 * K = 64 ... 16384, in every layout; devices without TF32 tensor cores run fp32 bit for bit; f64
 * and unknown modes are refused with the parameter named and C untouched. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

enum { UNIFORM, NORMAL, BADLY_SCALED, DISTRIBUTIONS };
static const char *const distribution_names[] = {"uniform", "normal", "badly scaled"};
static const char *const precisions[] = {"fp32", "3xtf32", "tf32"};

/* The inputs of one case, f32, row-major unless a layout says otherwise. */
struct product {
    int64_t m, n, k;
    float *a, *b; /* m x k and k x n, row-major */
};

static double normal_sample(void)
{
    /* Box-Muller on tu_uniform's [-1, 1). */
    double u1 = 0.5 * (tu_uniform() + 1.0), u2 = 0.5 * (tu_uniform() + 1.0);
    return sqrt(-2.0 * log(u1 > 0 ? u1 : 1e-300)) * cos(6.283185307179586 * u2);
}

/* Badly scaled: uniform mantissas times 2^e, e uniform in -24..24, so that the products of a sum
 * differ by up to 2^96 and large terms cancel small ones. */
static double sample(int distribution)
{
    switch (distribution) {
    case NORMAL: return normal_sample();
    case BADLY_SCALED: return ldexp(tu_uniform(), (int)floor(24.0 * tu_uniform() + 0.5));
    default: return tu_uniform();
    }
}

static float *random_matrix(int64_t count, int distribution)
{
    float *x = tu_malloc((size_t)count * sizeof(float));
    for (int64_t i = 0; i < count; i++)
        x[i] = (float)sample(distribution);
    return x;
}

static struct product product_new(int64_t m, int64_t n, int64_t k, int distribution, uint64_t seed)
{
    tu_seed(seed);
    struct product p = {m, n, k, random_matrix(m * k, distribution),
                        random_matrix(k * n, distribution)};
    return p;
}

static void product_free(struct product *p)
{
    free(p->a);
    free(p->b);
}

/* A matrix of floats stored row- or column-major (leading dimension ld) from a row-major one. */
static float *stored(const float *rowmajor, int64_t rows, int64_t cols, int col_major, int64_t ld)
{
    float *s = tu_malloc((size_t)(ld * (col_major ? cols : rows)) * sizeof(float));
    for (int64_t i = 0; i < (col_major ? cols : rows) * ld; i++)
        s[i] = NAN; /* padding: must never be read into a result */
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            s[col_major ? i + j * ld : i * ld + j] = rowmajor[i * cols + j];
    return s;
}

static struct clops_tensor matrix_tensor(float *data, int64_t rows, int64_t cols, int col_major,
                                         int64_t ld)
{
    struct clops_tensor t = {.data = data, .dtype = CLOPS_F32, .rank = 2};
    t.shape[0] = rows;
    t.shape[1] = cols;
    t.strides[0] = col_major ? 1 : ld;
    t.strides[1] = col_major ? ld : 1;
    return t;
}

static struct clops_arg tensor_arg(const char *name, const struct clops_tensor *t)
{
    struct clops_arg a = {.name = name, .kind = CLOPS_PARAM_TENSOR_IN, .tensor = t};
    return a;
}

static struct clops_arg enum_arg(const char *name, const char *s)
{
    struct clops_arg a = {.name = name, .kind = CLOPS_PARAM_ENUM, .s = s};
    return a;
}

/* C = op(A) op(B) through invoke on `pool` with the precision named; trans_x = 1 passes X
 * stored transposed (so that op(X) is the product's operand). */
static int32_t invoke_gemm_on(struct clops_pool *pool, const struct clops_tensor *a,
                              const struct clops_tensor *b, const struct clops_tensor *c,
                              int trans_a, int trans_b, const char *precision)
{
    struct clops_arg args[] = {tensor_arg("a", a),
                               tensor_arg("b", b),
                               tensor_arg("c", c),
                               enum_arg("trans_a", trans_a ? "transpose" : "none"),
                               enum_arg("trans_b", trans_b ? "transpose" : "none"),
                               enum_arg("precision", precision)};
    return tu_api()->invoke_sized(pool, tu_op("gemm"), args, (int32_t)TU_COUNT(args),
                                  (uint32_t)sizeof(struct clops_arg));
}

static int32_t invoke_gemm(const struct clops_tensor *a, const struct clops_tensor *b,
                           const struct clops_tensor *c, int trans_a, int trans_b,
                           const char *precision)
{
    return invoke_gemm_on(tu_pool(), a, b, c, trans_a, trans_b, precision);
}

/* A layout of a call: A and B stored transposed or not, each matrix row- or column-major, and
 * leading dimensions padded by `pad`. */
struct layout {
    int trans_a, trans_b, col_major_a, col_major_b, col_major_c;
    int64_t pad;
};

static const struct layout row_major = {0, 0, 0, 0, 0, 0};

/* The componentwise error of c (row-major m x n, ldc) against the exact product: the largest
 * |c - ref| / sum_k |a_ik b_kj| over the elements, in units of f32's unit roundoff 2^-24. Every
 * f32 product is exact in double, and the sums are kept in long double. */
static double error_in_ulps(const struct product *p, const float *c, int64_t ldc, int col_major_c)
{
    double worst = 0.0;
    for (int64_t i = 0; i < p->m; i++)
        for (int64_t j = 0; j < p->n; j++) {
            long double sum = 0.0L, mag = 0.0L;
            for (int64_t k = 0; k < p->k; k++) {
                const double t = (double)p->a[i * p->k + k] * (double)p->b[k * p->n + j];
                sum += t;
                mag += fabs(t);
            }
            const float got = c[col_major_c ? i + j * ldc : i * ldc + j];
            const double e = mag > 0 ? (double)(fabsl((long double)got - sum) / mag) : fabs(got);
            worst = isnan(got) ? INFINITY : fmax(worst, e);
        }
    return worst * 16777216.0;
}

/* Runs the product in a precision and layout; returns the error in ulps (error_in_ulps) and, when
 * `out` is not NULL, C as the call left it (row-major, m x n: the caller frees it). */
static double run_product(const struct product *p, const char *precision, const struct layout *l,
                          float **out)
{
    /* op(A) = A, M x K: stored transposed when trans_a, i.e. a K x M matrix holding A^T. */
    float *at = tu_malloc((size_t)(p->m * p->k) * sizeof(float));
    float *bt = tu_malloc((size_t)(p->k * p->n) * sizeof(float));
    for (int64_t i = 0; i < p->m; i++)
        for (int64_t k = 0; k < p->k; k++)
            at[k * p->m + i] = p->a[i * p->k + k];
    for (int64_t k = 0; k < p->k; k++)
        for (int64_t j = 0; j < p->n; j++)
            bt[j * p->k + k] = p->b[k * p->n + j];
    const int64_t ar = l->trans_a ? p->k : p->m, ac = l->trans_a ? p->m : p->k;
    const int64_t br = l->trans_b ? p->n : p->k, bc = l->trans_b ? p->k : p->n;
    const int64_t lda = (l->col_major_a ? ar : ac) + l->pad;
    const int64_t ldb = (l->col_major_b ? br : bc) + l->pad;
    const int64_t ldc = (l->col_major_c ? p->m : p->n) + l->pad;
    float *as = stored(l->trans_a ? at : p->a, ar, ac, l->col_major_a, lda);
    float *bs = stored(l->trans_b ? bt : p->b, br, bc, l->col_major_b, ldb);
    float *cs = tu_malloc((size_t)(ldc * (l->col_major_c ? p->n : p->m)) * sizeof(float));
    for (int64_t i = 0; i < ldc * (l->col_major_c ? p->n : p->m); i++)
        cs[i] = NAN; /* beta = 0: never read */
    struct clops_tensor ta = matrix_tensor(as, ar, ac, l->col_major_a, lda);
    struct clops_tensor tb = matrix_tensor(bs, br, bc, l->col_major_b, ldb);
    struct clops_tensor tc = matrix_tensor(cs, p->m, p->n, l->col_major_c, ldc);
    int32_t status = invoke_gemm(&ta, &tb, &tc, l->trans_a, l->trans_b, precision);
    ck_assert_msg(status == CLOPS_OK, "gemm precision %s: %s", precision, tu_api()->last_error());
    const double err = error_in_ulps(p, cs, ldc, l->col_major_c);
    if (out != NULL) {
        *out = tu_malloc((size_t)(p->m * p->n) * sizeof(float));
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t j = 0; j < p->n; j++)
                (*out)[i * p->n + j] = cs[l->col_major_c ? i + j * ldc : i * ldc + j];
    }
    free(at);
    free(bt);
    free(as);
    free(bs);
    free(cs);
    return err;
}

/* Whether the pool's device is a CPU (no TF32 tensor cores: every precision runs fp32). */
static int device_is_cpu(void)
{
    struct clops_device_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(tu_api()->pool_device_info(tu_pool(), 0, &info), CLOPS_OK);
    return info.type == CLOPS_DEVICE_CPU;
}

/* f32 sums of K products err by at most about K ulps (gamma_K); TF32 operands add 2^-10 of each
 * product (both rounded to 11 bits), 2^14 ulps. */
static double fp32_bound(int64_t k)
{
    return 2.0 * (double)k;
}

static double tf32_bound(int64_t k)
{
    return 16384.0 + 2.0 * (double)k;
}

/* 3xtf32's products lose lo*lo' (2^-22 of the product) and the rounding of each lo to TF32
 * (2^-22 of each operand): up to 8 ulps of a product, on top of the sums' error. */
static double split_bound(int64_t k)
{
    return 8.0 + 2.0 * (double)k;
}

static const int64_t depths[] = {64, 257, 1024, 4099, 16384};

/* The characterisation of the operator's documentation, asserted: over K and the three
 * distributions, 3xtf32 is as accurate as fp32 (within twice its error, plus an ulp for the
 * rounding of the result), fp32 and tf32 within their bounds. */
START_TEST(test_gemm_precision_3xtf32_is_as_accurate_as_fp32)
{
    const int64_t k = depths[_i % TU_COUNT(depths)];
    const int distribution = (int)(_i / TU_COUNT(depths));
    struct product p = product_new(37, 29, k, distribution, 1000 + (uint64_t)_i);
    double err[3];
    for (int m = 0; m < 3; m++)
        err[m] = run_product(&p, precisions[m], &row_major, NULL);
    printf("gemm precision, K = %lld, %s: error in f32 ulps of sum |a b|: fp32 %.3g, 3xtf32 "
           "%.3g, tf32 %.3g\n",
           (long long)k, distribution_names[distribution], err[0], err[1], err[2]);
    ck_assert_msg(err[0] <= fp32_bound(k), "fp32 error %g ulps over K = %lld", err[0],
                  (long long)k);
    ck_assert_msg(err[1] <= 2.0 * err[0] + 1.0, "3xtf32 error %g ulps against fp32's %g (K = %lld)",
                  err[1], err[0], (long long)k);
    ck_assert_msg(err[2] <= tf32_bound(k), "tf32 error %g ulps over K = %lld", err[2],
                  (long long)k);
    product_free(&p);
}
END_TEST

/* Every layout and awkward sizes (1, primes, past a tile) in the TF32 modes. */
START_TEST(test_gemm_precision_tf32_modes_take_every_layout)
{
    static const int64_t sizes[][3] = {
        {1, 1, 1}, {1, 67, 5}, {131, 1, 33}, {67, 131, 29}, {129, 65, 130}};
    const int64_t *s = sizes[_i % TU_COUNT(sizes)];
    const int bits = _i / (int)TU_COUNT(sizes);
    const struct layout l = {bits & 1,        (bits >> 1) & 1, (bits >> 2) & 1,
                             (bits >> 3) & 1, (bits >> 4) & 1, 3 * ((bits >> 2) & 1)};
    struct product p = product_new(s[0], s[1], s[2], UNIFORM, 2000 + (uint64_t)_i);
    const double e3 = run_product(&p, "3xtf32", &l, NULL);
    const double e1 = run_product(&p, "tf32", &l, NULL);
    ck_assert_msg(e3 <= split_bound(s[2]) && e1 <= tf32_bound(s[2]),
                  "%lldx%lldx%lld layout %d: 3xtf32 %g, tf32 %g ulps", (long long)s[0],
                  (long long)s[1], (long long)s[2], bits, e3, e1);
    product_free(&p);
}
END_TEST

/* A device without TF32 tensor cores (every CPU) runs the fp32 path for all three: bit for bit. */
START_TEST(test_gemm_precision_runs_fp32_where_no_tf32)
{
    if (!device_is_cpu())
        return; /* asserted by the error bounds above on such devices */
    struct product p = product_new(45, 38, 300, NORMAL, 3000);
    float *c[3];
    for (int m = 0; m < 3; m++)
        run_product(&p, precisions[m], &row_major, &c[m]);
    ck_assert(memcmp(c[0], c[1], (size_t)(p.m * p.n) * sizeof(float)) == 0);
    ck_assert(memcmp(c[0], c[2], (size_t)(p.m * p.n) * sizeof(float)) == 0);
    for (int m = 0; m < 3; m++)
        free(c[m]);
    product_free(&p);
}
END_TEST

/* f64 operands take only fp32 (their own precision); an unknown mode is no mode: both refused
 * with 'precision' named and C as it was. */
START_TEST(test_gemm_precision_refuses_f64_and_unknown_modes)
{
    double ad[6] = {1, 2, 3, 4, 5, 6}, bd[6] = {1, 2, 3, 4, 5, 6}, cd[4] = {7, 7, 7, 7};
    struct clops_tensor a = {
        .data = ad, .dtype = CLOPS_F64, .rank = 2, .shape = {2, 3}, .strides = {3, 1}};
    struct clops_tensor b = {
        .data = bd, .dtype = CLOPS_F64, .rank = 2, .shape = {3, 2}, .strides = {2, 1}};
    struct clops_tensor c = {
        .data = cd, .dtype = CLOPS_F64, .rank = 2, .shape = {2, 2}, .strides = {2, 1}};
    for (int which = 0; which < 3; which++) {
        struct tu_guard guard = {0};
        tu_guard_add(&guard, cd, sizeof cd);
        const char *mode = which == 0 ? "tf32" : which == 1 ? "3xtf32" : "bf16";
        int32_t status = invoke_gemm(&a, &b, &c, 0, 0, mode);
        tu_expect_refusal("gemm", which, status, CLOPS_ERR_INVALID_ARGUMENT, "'precision'", &guard);
    }
    /* fp32, the default, is f64's own precision. */
    ck_assert_int_eq(invoke_gemm(&a, &b, &c, 0, 0, "fp32"), CLOPS_OK);
    ck_assert(cd[0] == 22 && cd[1] == 28 && cd[2] == 49 && cd[3] == 64);
}
END_TEST

/* Which kernels each precision runs: on an NVIDIA device of compute capability 8.0 or later,
 * tf32 packs both operands (tf32_pack, twice) and multiplies them (gemm_tf32), 3xtf32 runs
 * gemm_mma, fp32 gemm_simt (the FP32 units, fed by cp.async); elsewhere every precision runs the
 * portable kernel. The products are checked too (the packed path's padding: sizes no tile
 * divides). */
START_TEST(test_gemm_precision_each_mode_runs_its_kernels)
{
    struct tu_kernel_log log = {
        .op = "gemm",
        .names = {"gemm", "gemm_mma", "tf32_pack", "gemm_tf32", "gemm_simt"},
        .cc = -1};
    tu_api()->set_log_callback(tu_collect_kernel_log, &log, CLOPS_LOG_INFO);
    struct clops_pool *pool = tu_pool_from_string("profiling = true; kernel_times = true;");
    struct clops_device_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(tu_api()->pool_device_info(pool, 0, &info), CLOPS_OK);
    const int nvidia = strstr(info.vendor, "NVIDIA") != NULL;
    ck_assert_msg(nvidia == (log.cc >= 0), "vendor '%s', compute capability %d", info.vendor,
                  log.cc);
    const int tensor_cores = log.cc >= 80;
    struct product p = product_new(131, 67, 45, 0, 9400);
    for (int mode = 0; mode < 3; mode++) {
        const struct tu_kernel_log before = log;
        float *a = stored(p.a, p.m, p.k, 0, p.k), *b = stored(p.b, p.k, p.n, 0, p.n);
        float *c = calloc((size_t)(p.m * p.n), sizeof *c);
        ck_assert_ptr_nonnull(c);
        const struct clops_tensor ta = matrix_tensor(a, p.m, p.k, 0, p.k),
                                  tb = matrix_tensor(b, p.k, p.n, 0, p.n),
                                  tc = matrix_tensor(c, p.m, p.n, 0, p.n);
        ck_assert_int_eq(invoke_gemm_on(pool, &ta, &tb, &tc, 0, 0, precisions[mode]), CLOPS_OK);
        const double err = error_in_ulps(&p, c, p.n, 0);
        ck_assert_msg(err <= (mode == 2 ? tf32_bound(p.k) : split_bound(p.k)), "%s: error %g ulps",
                      precisions[mode], err);
#define LAUNCHED(name) (tu_kernel_launches(&log, name) - tu_kernel_launches(&before, name))
        const int portable = LAUNCHED("gemm"), mma = LAUNCHED("gemm_mma");
        const int pack = LAUNCHED("tf32_pack"), packed = LAUNCHED("gemm_tf32");
        const int simt = LAUNCHED("gemm_simt");
#undef LAUNCHED
        ck_assert_int_eq(portable, !tensor_cores);
        ck_assert_int_eq(simt, mode == 0 && tensor_cores);
        ck_assert_int_eq(mma, mode == 1 && tensor_cores);
        ck_assert_int_eq(pack, mode == 2 && tensor_cores ? 2 : 0);
        ck_assert_int_eq(packed, mode == 2 && tensor_cores);
        ck_assert_int_eq(log.other, 0);
        free(a);
        free(b);
        free(c);
    }
    product_free(&p);
    tu_api()->pool_release(pool);
    tu_api()->set_log_callback(NULL, NULL, CLOPS_LOG_ERROR);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_LOOP(test_gemm_precision_3xtf32_is_as_accurate_as_fp32,
                (int)(TU_COUNT(depths) * DISTRIBUTIONS)),
        TU_LOOP(test_gemm_precision_tf32_modes_take_every_layout, 5 * 32),
        TU_TEST(test_gemm_precision_runs_fp32_where_no_tf32),
        TU_TEST(test_gemm_precision_refuses_f64_and_unknown_modes),
        TU_TEST(test_gemm_precision_each_mode_runs_its_kernels),
    };
    return tu_run_tests("gemm_precision", 600, 0, tests, TU_COUNT(tests));
}
