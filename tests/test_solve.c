/* test_solve.c — the solve (gesv) and lu_solve (getrs) operators against LAPACK: the backward
 * error of A·X = B and A^T·X = B on random, diagonally dominant and graded matrices, singular
 * systems left untouched, device tensors, and bad arguments rejected by name. */
#include <check.h>
#include <lapacke.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lu_testutil.h"

static clops_solve_fn solve_entry(void)
{
    return (clops_solve_fn)tu_op("solve")->entry;
}

static clops_lu_solve_fn lu_solve_entry(void)
{
    return (clops_lu_solve_fn)tu_op("lu_solve")->entry;
}

static clops_lu_fn lu_entry(void)
{
    return (clops_lu_fn)tu_op("lu")->entry;
}

static const int64_t sizes[] = {1, 2, 17, 64, 127, 300};
enum { SIZE_COUNT = (int)(sizeof sizes / sizeof sizes[0]), SOLVE_KINDS = 3 };

/* Iteration i: size, kind (not rank-deficient: solve needs a nonsingular A), dtype, NRHS 1 or
 * 5; the storage orders of a and b, padding and offsets vary with i. */
START_TEST(test_solve_residual_within_lapack_ratio)
{
    const int size = _i % SIZE_COUNT, kind = (_i / SIZE_COUNT) % SOLVE_KINDS;
    const int32_t dtype =
        tu_begin_iteration((_i / (SIZE_COUNT * SOLVE_KINDS)) % 2, 1000 + (uint64_t)_i);
    const int64_t n = sizes[size], nrhs = _i / (2 * SIZE_COUNT * SOLVE_KINDS) ? 5 : 1;
    if (dtype == 0)
        return;
    struct tmat a = tmat_new(dtype, n, n, _i % 2, _i % 3, _i % 4);
    tmat_fill_kind(&a, kind);
    struct tmat b = tmat_new(dtype, n, nrhs, (_i / 2) % 2, _i % 2, _i % 3);
    struct tmat f = tmat_copy(&a), x = tmat_copy(&b);
    int32_t ipiv[300], info = -1;
    struct clops_tensor ta = tmat_tensor(&f), tb = tmat_tensor(&x);
    struct clops_tensor tp = i32_vector(ipiv, n), ti = i32_vector(&info, 1);
    ck_assert_msg(solve_entry()(tu_pool(), &ta, &tb, &tp, &ti) == CLOPS_OK, "%s",
                  tu_api()->last_error());
    ck_assert_int_eq(info, 0);
    double ratio = solve_ratio(&a, &x, &b, 0);
    ck_assert_msg(ratio < LU_RATIO_MAX, "%s n=%lld nrhs=%lld %s: ratio %g", kind_name(kind),
                  (long long)n, (long long)nrhs, dtype == CLOPS_F64 ? "f64" : "f32", ratio);
    ck_assert(lu_ratio(&a, &f, ipiv) < LU_RATIO_MAX);
    free(a.data), free(b.data), free(f.data), free(x.data);
}
END_TEST

/* lu, then lu_solve with both trans values, on one factorization. */
START_TEST(test_lu_solve_both_transposes_within_lapack_ratio)
{
    const int size = _i % SIZE_COUNT;
    const int32_t dtype = tu_begin_iteration((_i / SIZE_COUNT) % 2, 2000 + (uint64_t)_i);
    const int32_t trans = _i / (2 * SIZE_COUNT);
    const int64_t n = sizes[size], nrhs = 3;
    if (dtype == 0)
        return;
    struct tmat a = tmat_new(dtype, n, n, _i % 2, 1, 2);
    tmat_fill_kind(&a, size % 2 ? KIND_GRADED : KIND_RANDOM);
    struct tmat f = tmat_copy(&a), b = tmat_new(dtype, n, nrhs, (_i / 2) % 2, 0, 1);
    struct tmat x = tmat_copy(&b);
    int32_t ipiv[300], info = -1;
    struct clops_tensor ta = tmat_tensor(&f), tb = tmat_tensor(&x);
    struct clops_tensor tp = i32_vector(ipiv, n), ti = i32_vector(&info, 1);
    ck_assert_int_eq(lu_entry()(tu_pool(), &ta, &tp, &ti, 0), CLOPS_OK);
    struct tmat saved = tmat_copy(&f);
    ck_assert_msg(lu_solve_entry()(tu_pool(), &ta, &tp, &tb, trans) == CLOPS_OK, "%s",
                  tu_api()->last_error());
    ck_assert(tmat_equal(&f, &saved)); /* the factors are only read */
    double ratio = solve_ratio(&a, &x, &b, trans);
    ck_assert_msg(ratio < LU_RATIO_MAX, "n=%lld trans=%d %s: ratio %g", (long long)n, trans,
                  dtype == CLOPS_F64 ? "f64" : "f32", ratio);
    free(a.data), free(b.data), free(f.data), free(x.data), free(saved.data);
}
END_TEST

/* lu_solve agrees with LAPACKE's getrs given the same factors (f64). */
START_TEST(test_lu_solve_matches_lapack_getrs)
{
    if (!tu_has_fp64())
        return;
    tu_seed(2500 + (uint64_t)_i);
    const int64_t n = 127, nrhs = 4;
    struct tmat a = tmat_new(CLOPS_F64, n, n, 1, 0, 0), b = tmat_new(CLOPS_F64, n, nrhs, 1, 0, 0);
    struct tmat x = tmat_copy(&b), y = tmat_copy(&b);
    lapack_int piv[127];
    ck_assert_int_eq(LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, a.data, n, piv), 0);
    ck_assert_int_eq(
        LAPACKE_dgetrs(LAPACK_COL_MAJOR, _i ? 'T' : 'N', n, nrhs, a.data, n, piv, y.data, n), 0);
    int32_t ipiv[127];
    for (int k = 0; k < n; k++)
        ipiv[k] = (int32_t)piv[k];
    struct clops_tensor ta = tmat_tensor(&a), tb = tmat_tensor(&x), tp = i32_vector(ipiv, n);
    ck_assert_int_eq(lu_solve_entry()(tu_pool(), &ta, &tp, &tb, _i), CLOPS_OK);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < nrhs; j++)
            ck_assert(fabsl(tmat_get(&x, i, j) - tmat_get(&y, i, j)) <=
                      1e-9L * (1 + fabsl(tmat_get(&y, i, j))));
    free(a.data), free(b.data), free(x.data), free(y.data);
}
END_TEST

/* Blocks wider than a work-group of the inversion kernel (nb = 200: four rows a work-item on
 * a CPU device's 64, one on a GPU's 256), at N = 300: the blocks of 200 and 100 of the
 * triangular solves and the factorization keep LAPACK's backward error. */
START_TEST(test_solve_wide_blocks_within_lapack_ratio)
{
    const int32_t dtype = tu_begin_iteration(_i % 2, 2900 + (uint64_t)_i);
    if (dtype == 0)
        return;
    struct clops_pool *pool = tu_pool_with_build_options("solve", "-DLU_NB=200 -DLU_PANEL_NB=16");
    const int64_t n = 300, nrhs = _i / 2 ? 7 : 1;
    struct tmat a = tmat_new(dtype, n, n, _i % 2, 1, 0);
    tmat_fill_kind(&a, KIND_RANDOM);
    struct tmat b = tmat_new(dtype, n, nrhs, 0, 0, 1);
    struct tmat f = tmat_copy(&a), x = tmat_copy(&b);
    int32_t ipiv[300], info = -1;
    struct clops_tensor ta = tmat_tensor(&f), tb = tmat_tensor(&x);
    struct clops_tensor tp = i32_vector(ipiv, n), ti = i32_vector(&info, 1);
    ck_assert_msg(solve_entry()(pool, &ta, &tb, &tp, &ti) == CLOPS_OK, "%s",
                  tu_api()->last_error());
    ck_assert_int_eq(info, 0);
    const double ratio = solve_ratio(&a, &x, &b, 0);
    ck_assert_msg(ratio < LU_RATIO_MAX, "nrhs=%lld: ratio %g", (long long)nrhs, ratio);
    ck_assert(lu_ratio(&a, &f, ipiv) < LU_RATIO_MAX);
    tu_api()->pool_release(pool);
    free(a.data), free(b.data), free(f.data), free(x.data);
}
END_TEST

/* With L = U = I, lu_solve is LAPACK's laswp on b: ipiv's interchanges in order (trans 0) or
 * in reverse (trans 1). Any pivots in 1 .. N are valid there, not only getrf's (ipiv[k] >= k):
 * rows named by several interchanges, pivots above k, runs of interchanges longer than one
 * plan takes (256) at N = 600. The rows must land exactly where sequential swaps put them. */
START_TEST(test_lu_solve_applies_any_pivots_as_laswp)
{
    static const int64_t laswp_sizes[] = {1, 17, 257, 600};
    const int64_t n = laswp_sizes[_i % 4], nrhs = 37;
    const int32_t trans = (_i / 4) % 2;
    const int32_t dtype = tu_begin_iteration(_i / 8, 2800 + (uint64_t)_i);
    if (dtype == 0)
        return;
    struct tmat lu = tmat_new(dtype, n, n, _i % 2, 1, 0);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            tmat_set(&lu, i, j, i == j);
    int32_t ipiv[600];
    for (int64_t k = 0; k < n; k++) {  /* none, any row, or one of five rows */
        const double u = tu_uniform(); /* in [-1, 1) */
        const int64_t any = (int64_t)((tu_uniform() + 1) / 2 * (double)n) % n;
        ipiv[k] = (int32_t)(u < -0.4 ? k : u < 0.4 ? any : any % 5 % n) + 1;
    }
    struct tmat b = tmat_new(dtype, n, nrhs, (_i / 2) % 2, 3, 2), x = tmat_copy(&b);
    struct tmat want = tmat_copy(&b);
    for (int64_t s = 0; s < n; s++) {
        const int64_t k = trans ? n - 1 - s : s, p = ipiv[k] - 1;
        for (int64_t j = 0; j < nrhs; j++) {
            const long double t = tmat_get(&want, k, j);
            tmat_set(&want, k, j, tmat_get(&want, p, j));
            tmat_set(&want, p, j, t);
        }
    }
    struct clops_tensor ta = tmat_tensor(&lu), tb = tmat_tensor(&x), tp = i32_vector(ipiv, n);
    ck_assert_msg(lu_solve_entry()(tu_pool(), &ta, &tp, &tb, trans) == CLOPS_OK, "%s",
                  tu_api()->last_error());
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < nrhs; j++)
            ck_assert_msg(tmat_get(&x, i, j) == tmat_get(&want, i, j),
                          "n=%lld trans=%d: x(%lld, %lld) = %Lg, expected %Lg", (long long)n, trans,
                          (long long)i, (long long)j, tmat_get(&x, i, j), tmat_get(&want, i, j));
    free(lu.data), free(b.data), free(x.data), free(want.data);
}
END_TEST

/* [[0,1],[1,0]] X = B swaps B's rows: exactly, in both precisions. */
START_TEST(test_solve_exchange_matrix_exactly)
{
    const int32_t dtype = tu_float_dtype(_i);
    if (dtype == 0)
        return;
    struct tmat a = tmat_new(dtype, 2, 2, 0, 0, 0), b = tmat_new(dtype, 2, 3, 1, 0, 0);
    tmat_set(&a, 0, 0, 0), tmat_set(&a, 0, 1, 1), tmat_set(&a, 1, 0, 1), tmat_set(&a, 1, 1, 0);
    struct tmat x = tmat_copy(&b);
    int32_t ipiv[2], info = -1;
    struct clops_tensor ta = tmat_tensor(&a), tb = tmat_tensor(&x);
    struct clops_tensor tp = i32_vector(ipiv, 2), ti = i32_vector(&info, 1);
    ck_assert_int_eq(solve_entry()(tu_pool(), &ta, &tb, &tp, &ti), CLOPS_OK);
    ck_assert_int_eq(info, 0);
    for (int j = 0; j < 3; j++)
        ck_assert(tmat_get(&x, 0, j) == tmat_get(&b, 1, j) &&
                  tmat_get(&x, 1, j) == tmat_get(&b, 0, j));
    free(a.data), free(b.data), free(x.data);
}
END_TEST

/* A zero column k: info = k as LAPACK's gesv, a holds the factors, b is untouched. */
START_TEST(test_solve_singular_leaves_b_untouched)
{
    const int32_t dtype = tu_begin_iteration(_i % 2, 3000 + (uint64_t)_i);
    if (dtype == 0)
        return;
    const int64_t n = 50, zero_col = _i / 2 ? 45 : 3;
    struct tmat a = tmat_new(dtype, n, n, 1, 0, 0), b = tmat_new(dtype, n, 2, 0, 0, 0);
    for (int64_t i = 0; i < n; i++)
        tmat_set(&a, i, zero_col - 1, 0);
    struct tmat f = tmat_copy(&a), x = tmat_copy(&b), ref = tmat_copy(&a), y = tmat_copy(&b);
    int32_t ipiv[50], info = -1;
    struct clops_tensor ta = tmat_tensor(&f), tb = tmat_tensor(&x);
    struct clops_tensor tp = i32_vector(ipiv, n), ti = i32_vector(&info, 1);
    ck_assert_int_eq(solve_entry()(tu_pool(), &ta, &tb, &tp, &ti), CLOPS_OK);
    lapack_int piv[50];
    lapack_int ref_info = dtype == CLOPS_F64
                              ? LAPACKE_dgesv(LAPACK_COL_MAJOR, n, 2, ref.data, n, piv, y.data, n)
                              : LAPACKE_sgesv(LAPACK_COL_MAJOR, n, 2, ref.data, n, piv, y.data, n);
    ck_assert_int_eq(ref_info, zero_col);
    ck_assert_int_eq(info, ref_info);
    ck_assert(tmat_equal(&x, &b));
    ck_assert(!tmat_equal(&f, &a));
    ck_assert(lu_ratio(&a, &f, ipiv) < LU_RATIO_MAX);
    free(a.data), free(b.data), free(f.data), free(x.data), free(ref.data), free(y.data);
}
END_TEST

/* The same with b in device memory, row- and column-major: the device itself calls off the
 * copy of X into b (the host does not read info in the middle of the call). */
START_TEST(test_solve_singular_leaves_device_b_untouched)
{
    const int32_t dtype = tu_begin_iteration(_i % 2, 3100 + (uint64_t)_i);
    if (dtype == 0)
        return;
    const int64_t n = 50;
    struct tmat a = tmat_new(dtype, n, n, 1, 0, 0), b = tmat_new(dtype, n, 3, _i / 2, 0, 0);
    for (int64_t i = 0; i < n; i++)
        tmat_set(&a, i, 2, 0);
    struct tmat f = tmat_copy(&a), x = tmat_copy(&b);
    int32_t ipiv[50], info = -1;
    struct clops_tensor ta = tmat_tensor(&f), tb;
    struct clops_buffer *bbuf = tmat_upload(&x, &tb);
    struct clops_tensor tp = i32_vector(ipiv, n), ti = i32_vector(&info, 1);
    ck_assert_int_eq(solve_entry()(tu_pool(), &ta, &tb, &tp, &ti), CLOPS_OK);
    ck_assert_int_eq(info, 3);
    tmat_download(bbuf, &x);
    ck_assert(tmat_equal(&x, &b));
    free(a.data), free(b.data), free(f.data), free(x.data);
}
END_TEST

/* Device tensors give the host tensors' results, bit for bit, for solve and lu_solve. */
START_TEST(test_solve_device_tensors_match_host_tensors)
{
    const int32_t dtype = tu_begin_iteration(_i % 2, 4000 + (uint64_t)_i);
    if (dtype == 0)
        return;
    const int64_t n = 100, nrhs = 7;
    struct tmat a = tmat_new(dtype, n, n, _i / 2, 2, 3), b = tmat_new(dtype, n, nrhs, 1, 1, 5);
    struct tmat fh = tmat_copy(&a), xh = tmat_copy(&b), fd = tmat_copy(&a), xd = tmat_copy(&b);
    int32_t ipiv_h[100], info_h = -1, words[101];
    struct clops_tensor ta = tmat_tensor(&fh), tb = tmat_tensor(&xh);
    struct clops_tensor tp = i32_vector(ipiv_h, n), ti = i32_vector(&info_h, 1);
    ck_assert_int_eq(solve_entry()(tu_pool(), &ta, &tb, &tp, &ti), CLOPS_OK);
    const struct clops_api *api = tu_api();
    struct clops_buffer *abuf = tmat_upload(&fd, &ta), *bbuf = tmat_upload(&xd, &tb), *ibuf;
    ck_assert_int_eq(api->buffer_create(tu_pool(), sizeof words, &ibuf), CLOPS_OK);
    struct clops_tensor dp = {.buffer = ibuf, .dtype = CLOPS_I32, .rank = 1}, di = dp;
    dp.shape[0] = n, dp.strides[0] = 1, dp.offset = 1;
    di.shape[0] = 1, di.strides[0] = 1;
    ck_assert_msg(solve_entry()(tu_pool(), &ta, &tb, &dp, &di) == CLOPS_OK, "%s",
                  api->last_error());
    ck_assert_int_eq(api->buffer_download(ibuf, 0, words, sizeof words), CLOPS_OK);
    ck_assert_int_eq(words[0], info_h);
    ck_assert(memcmp(words + 1, ipiv_h, sizeof ipiv_h) == 0);
    /* lu_solve on the device factors, with the transpose. */
    struct tmat yh = tmat_copy(&b), yd = tmat_copy(&b);
    struct clops_tensor th = tmat_tensor(&yh), tf = tmat_tensor(&fh), td;
    struct clops_buffer *ybuf = tmat_upload(&yd, &td);
    ck_assert_int_eq(lu_solve_entry()(tu_pool(), &tf, &tp, &th, 1), CLOPS_OK);
    ck_assert_int_eq(lu_solve_entry()(tu_pool(), &ta, &dp, &td, 1), CLOPS_OK);
    api->buffer_release(ibuf);
    tmat_download(abuf, &fd);
    tmat_download(bbuf, &xd);
    tmat_download(ybuf, &yd);
    ck_assert(tmat_equal(&fh, &fd) && tmat_equal(&xh, &xd) && tmat_equal(&yh, &yd));
    ck_assert(solve_ratio(&a, &xd, &b, 0) < LU_RATIO_MAX);
    ck_assert(solve_ratio(&a, &yd, &b, 1) < LU_RATIO_MAX);
    free(a.data), free(b.data), free(fh.data), free(xh.data), free(fd.data), free(xd.data);
    free(yh.data), free(yd.data);
}
END_TEST

/* lu_solve with device pivots checks them on the device (issue 23): a pivot outside 1 .. N is
 * refused with the host check's status and message (the first bad one named), and leaves b as
 * it was, in host or device memory; once the pivots are valid, the device pivots give the host
 * pivots' X bit for bit. Iteration i: the bad case, b on the host or the device, trans. */
START_TEST(test_lu_solve_checks_device_pivots_on_the_device)
{
    const int64_t n = 300, nrhs = 5;
    const int which = _i % 4, device_b = (_i / 4) % 2;
    const int32_t trans = _i / 8;
    const int32_t dtype = tu_begin_iteration(0, 5000 + (uint64_t)_i);
    if (dtype == 0)
        return;
    const struct clops_api *api = tu_api();
    /* ipiv[k] at words[1 + k * stride]; the first bad pivot and the message it gives. */
    const struct {
        int64_t at, later, stride;
        int32_t value;
        const char *message;
    } cases[] = {
        {7, 200, 1, 0, "ipiv[7] = 0; expected 1 .. N = 300"},
        {299, -1, 1, 301, "ipiv[299] = 301; expected 1 .. N = 300"},
        {0, 5, 1, -1, "ipiv[0] = -1; expected 1 .. N = 300"},
        {150, 151, 2, -2147483647 - 1, "ipiv[150] = -2147483648; expected 1 .. N = 300"},
    };
    const int64_t stride = cases[which].stride;
    int32_t ipiv[300], words[1 + 2 * 300];
    for (int64_t k = 0; k < n; k++)
        ipiv[k] = (int32_t)((k * 7919 + 13) % n) + 1;
    ipiv[cases[which].at] = cases[which].value;
    if (cases[which].later >= 0)
        ipiv[cases[which].later] = (int32_t)n + 5;
    for (int64_t k = 0; k < 1 + 2 * n; k++)
        words[k] = 99;
    for (int64_t k = 0; k < n; k++)
        words[1 + k * stride] = ipiv[k];
    struct clops_buffer *pbuf;
    ck_assert_int_eq(api->buffer_create(tu_pool(), sizeof words, &pbuf), CLOPS_OK);
    ck_assert_int_eq(api->buffer_upload(pbuf, 0, words, sizeof words), CLOPS_OK);
    struct clops_tensor dp = {.buffer = pbuf, .dtype = CLOPS_I32, .rank = 1, .offset = 1};
    dp.shape[0] = n, dp.strides[0] = stride;
    struct tmat lu = tmat_new(dtype, n, n, _i % 2, 1, 0);
    tmat_fill_kind(&lu, KIND_DIAG_DOMINANT);
    struct tmat b = tmat_new(dtype, n, nrhs, (_i / 2) % 2, 2, 1), x = tmat_copy(&b);
    struct clops_tensor ta = tmat_tensor(&lu), tb = tmat_tensor(&x), hp = i32_vector(ipiv, n);
    struct clops_buffer *bbuf = device_b ? tmat_upload(&x, &tb) : NULL;
    ck_assert_int_eq(lu_solve_entry()(tu_pool(), &ta, &hp, &tb, trans), CLOPS_ERR_INVALID_ARGUMENT);
    char host_message[512];
    snprintf(host_message, sizeof host_message, "%s", api->last_error());
    ck_assert_int_eq(lu_solve_entry()(tu_pool(), &ta, &dp, &tb, trans), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(api->last_error(), host_message);
    ck_assert_msg(strstr(host_message, cases[which].message) != NULL, "%s", host_message);
    ck_assert(strstr(host_message, "parameter 'ipiv'") != NULL);
    if (device_b)
        ck_assert_int_eq(api->buffer_download(bbuf, 0, x.data, x.count * tmat_esize(dtype)),
                         CLOPS_OK);
    ck_assert(tmat_equal(&x, &b));
    /* Valid pivots: the device's X is the host's. */
    ipiv[cases[which].at] = 1;
    if (cases[which].later >= 0)
        ipiv[cases[which].later] = (int32_t)n;
    for (int64_t k = 0; k < n; k++)
        words[1 + k * stride] = ipiv[k];
    ck_assert_int_eq(api->buffer_upload(pbuf, 0, words, sizeof words), CLOPS_OK);
    struct tmat y = tmat_copy(&b);
    struct clops_tensor ty = tmat_tensor(&y);
    ck_assert_int_eq(lu_solve_entry()(tu_pool(), &ta, &hp, &ty, trans), CLOPS_OK);
    ck_assert_msg(lu_solve_entry()(tu_pool(), &ta, &dp, &tb, trans) == CLOPS_OK, "%s",
                  api->last_error());
    if (device_b)
        tmat_download(bbuf, &x);
    ck_assert(tmat_equal(&x, &y) && !tmat_equal(&x, &b));
    api->buffer_release(pbuf);
    free(lu.data), free(b.data), free(x.data), free(y.data);
}
END_TEST

START_TEST(test_solve_empty_systems_are_valid_calls)
{
    float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    int32_t ipiv[2] = {-3, -3}, info = -3;
    struct clops_tensor ta = clops_matrix(a, CLOPS_F32, _i ? 2 : 0, _i ? 2 : 0, 2, 0);
    struct clops_tensor tb = clops_matrix(b, CLOPS_F32, _i ? 2 : 0, _i ? 0 : 2, 2, 0);
    struct clops_tensor tp = i32_vector(ipiv, _i ? 2 : 0), ti = i32_vector(&info, 1);
    a[0] = _i ? 0 : 1; /* [[0,2],[3,4]]: needs an interchange */
    ck_assert_int_eq(solve_entry()(tu_pool(), &ta, &tb, &tp, &ti), CLOPS_OK);
    ck_assert_int_eq(info, 0);
    ck_assert(b[0] == 5 && b[3] == 8);
    ck_assert(_i ? ipiv[0] == 2 : ipiv[0] == -3);
    ck_assert_int_eq(lu_solve_entry()(tu_pool(), &ta, &tp, &tb, 0), CLOPS_OK);
}
END_TEST

/* ---- Bad arguments --------------------------------------------------------------------------- */

/* Good calls (A 4x4 f32, B 4x3, ipiv 4, info 1, all row-major host tensors) that one case of
 * solve_spoil() or lu_solve_spoil() spoils. */
struct bad_call {
    struct clops_pool *pool;
    struct clops_tensor a, b, ipiv, info;
    const struct clops_tensor *pa, *pb, *pp, *pi;
    int32_t trans, status;
};

static float bad_a[32], bad_b[32];
static int32_t bad_ipiv[8], bad_info[2];

static const char *spoil_common(int which, struct bad_call *x)
{
    switch (which) {
    case 0: x->a.shape[0] = -4; return "'a' has shape[0] = -4";
    case 1: x->a.shape[0] = 3; return "'a' has shape 3x4; expected a square";
    case 2: x->b.shape[0] = 3; return "'b' has 3 rows";
    case 3: x->b.dtype = CLOPS_F64; return "'b' has dtype f64 but";
    case 4: x->a.dtype = CLOPS_U8, x->status = CLOPS_ERR_UNSUPPORTED; return "'a' has dtype u8";
    case 5: x->ipiv.dtype = CLOPS_U32, x->status = CLOPS_ERR_UNSUPPORTED; return "'ipiv' has dtype";
    case 6: x->ipiv.shape[0] = 3; return "'ipiv' has 3 elements; expected at least 4";
    case 7: x->b.strides[0] = 2; return "'b' strides[0] (the leading dimension) = 2";
    case 8:
        x->a = clops_matrix(bad_a, CLOPS_F32, 4, 4, 3, 1);
        return "'a' strides[1] (the leading dimension) = 3 is smaller than its 4 rows";
    case 9: x->pb = NULL; return "'b' is NULL";
    case 10: x->pool = NULL; return "'pool' is NULL";
    case 11: x->b.data = bad_a + 8; return "overlaps parameter";
    case 12: x->b.rank = 3, x->b.shape[2] = 1; return "'b' has rank 3";
    default: return NULL;
    }
}
enum { COMMON_CASES = 13 };

/* The lu_solve parameter is named "lu" where solve's is "a". */
static const char *rename_param(const char *needle, int lu_solve, char *buf, size_t size)
{
    if (!lu_solve || strstr(needle, "'a'") == NULL)
        return needle;
    const char *at = strstr(needle, "'a'");
    snprintf(buf, size, "%.*s'lu'%s", (int)(at - needle), needle, at + 3);
    return buf;
}

static const char *spoil(int which, int lu_solve, struct bad_call *x, char *buf, size_t size)
{
    if (which < COMMON_CASES)
        return rename_param(spoil_common(which, x), lu_solve, buf, size);
    if (!lu_solve) {
        switch (which) {
        case COMMON_CASES: x->info.shape[0] = 0; return "'info' has 0 elements; expected 1";
        case COMMON_CASES + 1:
            x->info.dtype = CLOPS_F32, x->status = CLOPS_ERR_UNSUPPORTED;
            return "'info' has dtype f32";
        case COMMON_CASES + 2: x->pi = NULL; return "'info' is NULL";
        default: break;
        }
    } else {
        switch (which) {
        case COMMON_CASES: x->trans = 2; return "'trans' = 2";
        case COMMON_CASES + 1: bad_ipiv[2] = 5; return "ipiv[2] = 5; expected 1 .. N = 4";
        case COMMON_CASES + 2: bad_ipiv[0] = 0; return "ipiv[0] = 0";
        default: break;
        }
    }
    ck_abort_msg("no bad case %d", which);
    return NULL;
}
enum { BAD_CASE_COUNT = COMMON_CASES + 3 };

START_TEST(test_solve_and_lu_solve_reject_bad_arguments_naming_them)
{
    const int lu_solve = _i / BAD_CASE_COUNT, which = _i % BAD_CASE_COUNT;
    struct tu_guard guard = {0};
    tu_guard_random_f32(&guard, 9000 + (uint64_t)_i, 32, bad_a, bad_b, NULL);
    for (int i = 0; i < 8; i++)
        bad_ipiv[i] = i % 4 + 1;
    bad_info[0] = bad_info[1] = -1;
    tu_guard_add(&guard, bad_info, sizeof bad_info);
    struct bad_call x = {.pool = tu_pool(),
                         .a = clops_matrix(bad_a, CLOPS_F32, 4, 4, 4, 0),
                         .b = clops_matrix(bad_b, CLOPS_F32, 4, 3, 3, 0),
                         .ipiv = i32_vector(bad_ipiv, 4),
                         .info = i32_vector(bad_info, 1),
                         .status = CLOPS_ERR_INVALID_ARGUMENT};
    x.pa = &x.a, x.pb = &x.b, x.pp = &x.ipiv, x.pi = &x.info;
    char buf[256];
    const char *needle = spoil(which, lu_solve, &x, buf, sizeof buf);
    tu_guard_add(&guard, bad_ipiv, sizeof bad_ipiv); /* as spoil() left it */
    int32_t got = lu_solve ? lu_solve_entry()(x.pool, x.pa, x.pp, x.pb, x.trans)
                           : solve_entry()(x.pool, x.pa, x.pb, x.pp, x.pi);
    tu_expect_refusal(lu_solve ? "lu_solve" : "solve", which, got, x.status, needle, &guard);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_LOOP(test_solve_residual_within_lapack_ratio, 4 * SIZE_COUNT * SOLVE_KINDS),
        TU_LOOP(test_lu_solve_both_transposes_within_lapack_ratio, 4 * SIZE_COUNT),
        TU_LOOP(test_lu_solve_matches_lapack_getrs, 2),
        TU_LOOP(test_lu_solve_applies_any_pivots_as_laswp, 16),
        TU_LOOP(test_solve_wide_blocks_within_lapack_ratio, 4),
        TU_LOOP(test_solve_exchange_matrix_exactly, 2),
        TU_LOOP(test_solve_singular_leaves_b_untouched, 4),
        TU_LOOP(test_solve_singular_leaves_device_b_untouched, 4),
        TU_LOOP(test_solve_device_tensors_match_host_tensors, 4),
        TU_LOOP(test_lu_solve_checks_device_pivots_on_the_device, 16),
        TU_LOOP(test_solve_empty_systems_are_valid_calls, 2),
        TU_LOOP(test_solve_and_lu_solve_reject_bad_arguments_naming_them, 2 * BAD_CASE_COUNT),
    };
    return tu_run_tests("solve", 300, 0, tests, TU_COUNT(tests));
}
