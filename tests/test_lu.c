/* test_lu.c — the lu operator against LAPACK: backward error of P·A = L·U on random,
 * diagonally dominant, graded and rank-deficient matrices of awkward and rectangular shapes,
 * pivots and info equal to LAPACKE's, device tensors, and bad arguments rejected by name. */
#include <check.h>
#include <lapacke.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lu_testutil.h"

static clops_lu_fn lu_entry(void)
{
    return (clops_lu_fn)tu_op("lu")->entry;
}

static const int64_t shapes[][2] = {{1, 1},     {2, 2},    {17, 17},  {64, 64}, {127, 127},
                                    {300, 300}, {300, 17}, {17, 300}, {129, 64}};
enum { SHAPE_COUNT = (int)(sizeof shapes / sizeof shapes[0]) };

/* Factors a copy of m (host tensors) with `pool`; returns the factors, fills ipiv and info. */
static struct tmat factor_with(struct clops_pool *pool, const struct tmat *m, int32_t *ipiv,
                               int32_t *info, int32_t pivoting)
{
    struct tmat f = tmat_copy(m);
    struct clops_tensor ta = tmat_tensor(&f);
    const int64_t mn = m->rows < m->cols ? m->rows : m->cols;
    struct clops_tensor tp = i32_vector(ipiv, mn), ti = i32_vector(info, 1);
    int32_t status = lu_entry()(pool, &ta, &tp, &ti, pivoting);
    ck_assert_msg(status == CLOPS_OK, "%s", tu_api()->last_error());
    return f;
}

static struct tmat factor(const struct tmat *m, int32_t *ipiv, int32_t *info, int32_t pivoting)
{
    return factor_with(tu_pool(), m, ipiv, info, pivoting);
}

/* |L(i,k)| <= 1 below the diagonal: what partial pivoting guarantees. */
static void check_l_bounded(const struct tmat *f)
{
    for (int64_t i = 0; i < f->rows; i++)
        for (int64_t k = 0; k < i && k < f->cols; k++)
            ck_assert_msg(fabsl(tmat_get(f, i, k)) <= 1.0L, "|L(%lld,%lld)| = %Lg > 1",
                          (long long)i, (long long)k, fabsl(tmat_get(f, i, k)));
}

/* Iteration i: shape, kind, dtype; the storage order, padding and offset vary with i. */
START_TEST(test_lu_factors_reconstruct_a_within_lapack_ratio)
{
    const int shape = _i % SHAPE_COUNT, kind = (_i / SHAPE_COUNT) % KIND_COUNT;
    const int32_t dtype = tu_begin_iteration(_i / (SHAPE_COUNT * KIND_COUNT), 100 + (uint64_t)_i);
    if (dtype == 0)
        return;
    struct tmat a = tmat_new(dtype, shapes[shape][0], shapes[shape][1], _i % 2, _i % 3, _i % 5);
    tmat_fill_kind(&a, kind);
    int32_t ipiv[300], info = -1;
    struct tmat f = factor(&a, ipiv, &info, 0);
    double ratio = lu_ratio(&a, &f, ipiv);
    ck_assert_msg(ratio < LU_RATIO_MAX, "%s %lldx%lld %s: ratio %g", kind_name(kind),
                  (long long)a.rows, (long long)a.cols, dtype == CLOPS_F64 ? "f64" : "f32", ratio);
    const int64_t mn = a.rows < a.cols ? a.rows : a.cols;
    for (int64_t k = 0; k < mn; k++)
        ck_assert(ipiv[k] >= k + 1 && ipiv[k] <= a.rows);
    if (kind != KIND_RANK_DEFICIENT)
        ck_assert_int_eq(info, 0);
    check_l_bounded(&f);
    /* Padding between rows or columns is untouched. */
    for (int64_t at = 0; at < a.offset; at++)
        ck_assert(memcmp((char *)a.data + at * tmat_esize(dtype),
                         (char *)f.data + at * tmat_esize(dtype), (size_t)tmat_esize(dtype)) == 0);
    free(a.data);
    free(f.data);
}
END_TEST

/* LAPACKE's getrf on a column-major copy: its ipiv and info. */
static void lapack_getrf(const struct tmat *a, int32_t *ipiv, int32_t *info, struct tmat *out)
{
    *out = tmat_as_col_major(a);
    const int64_t mn = a->rows < a->cols ? a->rows : a->cols;
    lapack_int *piv = malloc((size_t)(mn > 0 ? mn : 1) * sizeof *piv);
    ck_assert(piv != NULL);
    lapack_int rc = a->dtype == CLOPS_F64
                        ? LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)a->rows, (lapack_int)a->cols,
                                         out->data, (lapack_int)out->ld, piv)
                        : LAPACKE_sgetrf(LAPACK_COL_MAJOR, (lapack_int)a->rows, (lapack_int)a->cols,
                                         out->data, (lapack_int)out->ld, piv);
    ck_assert(rc >= 0);
    *info = (int32_t)rc;
    for (int64_t k = 0; k < mn; k++)
        ipiv[k] = (int32_t)piv[k];
    free(piv);
}

/* Random matrices have no ties: the pivots must be LAPACK's, the factors close to its. f32 at
 * the larger sizes is left out: rounding differences of the two summation orders can reorder
 * candidates that are that close in float (the backward error test covers those). */
START_TEST(test_lu_pivots_match_lapack)
{
    const int shape = _i % SHAPE_COUNT;
    const int32_t dtype = tu_begin_iteration(_i / SHAPE_COUNT, 200 + (uint64_t)_i);
    if (dtype == 0)
        return;
    if (dtype == CLOPS_F32 && shapes[shape][0] * shapes[shape][1] > 64 * 64)
        return;
    struct tmat a = tmat_new(dtype, shapes[shape][0], shapes[shape][1], 0, 0, 0);
    int32_t ipiv[300], info = -1, ref_ipiv[300], ref_info = -1;
    struct tmat f = factor(&a, ipiv, &info, 0), ref;
    lapack_getrf(&a, ref_ipiv, &ref_info, &ref);
    const int64_t mn = a.rows < a.cols ? a.rows : a.cols;
    ck_assert_int_eq(info, ref_info);
    for (int64_t k = 0; k < mn; k++)
        ck_assert_msg(ipiv[k] == ref_ipiv[k], "%lldx%lld: ipiv[%lld] = %d, LAPACK's %d",
                      (long long)a.rows, (long long)a.cols, (long long)k, ipiv[k], ref_ipiv[k]);
    const long double tol = 1000 * tmat_eps(dtype) * (long double)(a.rows + a.cols);
    for (int64_t i = 0; i < a.rows; i++)
        for (int64_t j = 0; j < a.cols; j++)
            ck_assert(fabsl(tmat_get(&f, i, j) - tmat_get(&ref, i, j)) <=
                      tol * (1 + fabsl(tmat_get(&ref, i, j))));
    free(a.data);
    free(f.data);
    free(ref.data);
}
END_TEST

/* Block sizes from the pool's configuration, awkward ones included (1, wider than the matrix,
 * not dividing it, inner panel as wide as the outer): LAPACK's pivots and a small ratio. Also
 * both panel kernels: the per-column one (the resident one off) with chunks of 5 rows, and the
 * resident one with one work-group (a CPU device's default; GPUs run one per compute unit). */
START_TEST(test_lu_configured_block_sizes_keep_lapack_pivots)
{
    static const char *const options[] = {
        "-DLU_NB=7 -DLU_PANEL_NB=3",
        "-DLU_NB=1",
        "-DLU_NB=64 -DLU_PANEL_NB=64",
        "-DLU_NB=300 -DLU_PANEL_NB=17",
        "-DLU_PANEL_NB=1",
        "-DLU_PANEL_RESIDENT=0 -DLU_PANEL_ROWS=5",
        "-DLU_PANEL_RESIDENT=1 -DLU_PANEL_GROUPS=1",
        "-DLU_PANEL_RESIDENT=1 -DLU_PANEL_GROUPS=1 -DLU_NB=300 -DLU_PANEL_NB=17",
    };
    const int32_t dtype = tu_has_fp64() ? CLOPS_F64 : CLOPS_F32;
    struct clops_pool *pool = tu_pool_with_build_options("lu", options[_i]);
    static const int64_t dims[][2] = {{129, 64}, {64, 129}, {100, 100}};
    for (int s = 0; s < 3; s++) {
        tu_seed(250 + (uint64_t)(_i * 3 + s));
        struct tmat a = tmat_new(dtype, dims[s][0], dims[s][1], s % 2, 1, 2);
        int32_t ipiv[129], info = -1, ref_ipiv[129], ref_info = -1;
        struct tmat f = factor_with(pool, &a, ipiv, &info, 0), ref;
        lapack_getrf(&a, ref_ipiv, &ref_info, &ref);
        ck_assert_int_eq(info, ref_info);
        for (int64_t k = 0; k < (a.rows < a.cols ? a.rows : a.cols); k++)
            ck_assert_msg(ipiv[k] == ref_ipiv[k], "%s: ipiv[%lld] = %d, LAPACK's %d", options[_i],
                          (long long)k, ipiv[k], ref_ipiv[k]);
        ck_assert(lu_ratio(&a, &f, ipiv) < LU_RATIO_MAX);
        free(a.data), free(f.data), free(ref.data);
    }
    tu_api()->pool_release(pool);
}
END_TEST

/* Look-ahead (the trailing updates on a second queue beside the next panel) changes the order in
 * which the device runs the steps, not what reaches each element: the factors and pivots are
 * those without it, bit for bit, and LAPACK's pivots; at tall, wide and square shapes whose
 * outer panels (nb 16, panel_nb 4 or 16) leave a next panel narrower than nb, with and without
 * pivoting, and with the settings of each value configured on any device. */
START_TEST(test_lu_lookahead_gives_the_same_factors_bit_for_bit)
{
    static const int64_t dims[][2] = {{131, 67}, {67, 131}, {150, 150}, {16, 200}};
    const int64_t *d = dims[_i % 4];
    const int32_t pivoting = _i / 4 % 2, dtype = tu_float_dtype(_i / 8 % 2);
    if (dtype == CLOPS_F64 && !tu_has_fp64())
        return;
    const char *const panel = _i / 16 ? "panel_nb = 16;" : "panel_nb = 4;";
    char with[160], without[160];
    snprintf(with, sizeof with, "operators = { lu = { nb = 16; %s lookahead = true; }; };", panel);
    snprintf(without, sizeof without, "operators = { lu = { nb = 16; %s lookahead = false; }; };",
             panel);
    struct clops_pool *on = tu_pool_from_string(with), *off = tu_pool_from_string(without);
    tu_seed(900 + (uint64_t)_i);
    /* Diagonally dominant without pivoting, so that the factorization exists. */
    struct tmat a = tmat_new(dtype, d[0], d[1], _i % 2, 1, 1);
    tmat_fill_kind(&a, pivoting ? KIND_DIAG_DOMINANT : KIND_RANDOM);
    int32_t ipiv_on[200], ipiv_off[200], info_on = -1, info_off = -1, ref_ipiv[200], ref_info;
    struct tmat f_on = factor_with(on, &a, ipiv_on, &info_on, pivoting);
    struct tmat f_off = factor_with(off, &a, ipiv_off, &info_off, pivoting);
    const int64_t mn = d[0] < d[1] ? d[0] : d[1];
    ck_assert_int_eq(info_on, info_off);
    ck_assert(memcmp(ipiv_on, ipiv_off, (size_t)mn * sizeof ipiv_on[0]) == 0);
    ck_assert_msg(memcmp(f_on.data, f_off.data, (size_t)(f_on.count * tu_dtype_size(dtype))) == 0,
                  "%lldx%lld pivoting %d: the factors differ with look-ahead", (long long)d[0],
                  (long long)d[1], (int)pivoting);
    if (pivoting == 0) {
        struct tmat ref;
        lapack_getrf(&a, ref_ipiv, &ref_info, &ref);
        ck_assert(memcmp(ipiv_on, ref_ipiv, (size_t)mn * sizeof ipiv_on[0]) == 0);
        ck_assert(lu_ratio(&a, &f_on, ipiv_on) < LU_RATIO_MAX);
        free(ref.data);
    }
    free(a.data), free(f_on.data), free(f_off.data);
    tu_api()->pool_release(on);
    tu_api()->pool_release(off);
}
END_TEST

/* kernel_times = true: each call logs its kernels' device time by name, here one launch of the
 * resident panel kernel per panel of a 100 x 100 matrix: 13 on a CPU device (PANEL_NB 8), 2 on
 * a GPU (PANEL_NB 64); without it, nothing. */
START_TEST(test_lu_kernel_times_are_logged_by_kernel)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_pool_from_string("kernel_times = true;");
    tu_seed(400);
    struct tmat a = tmat_new(CLOPS_F32, 100, 100, 0, 0, 0);
    tmat_fill_kind(&a, KIND_RANDOM);
    int32_t ipiv[100], info = -1;
    struct tu_kernel_log with = {
        .op = "lu", .names = {"lu_panel_resident", "gemm", "gemm_simt"}, .cc = -1};
    struct tu_kernel_log without = with;
    api->set_log_callback(tu_collect_kernel_log, &with, CLOPS_LOG_INFO);
    struct tmat f = factor_with(pool, &a, ipiv, &info, 0);
    api->set_log_callback(tu_collect_kernel_log, &without, CLOPS_LOG_INFO);
    struct tmat g = factor(&a, ipiv, &info, 0);
    api->set_log_callback(NULL, NULL, CLOPS_LOG_ERROR);
    ck_assert_int_ge(with.lines, 3); /* the panel, gemm, and the swaps or inverses */
    struct clops_device_info dev = {.struct_size = sizeof dev};
    ck_assert_int_eq(api->pool_device_info(pool, 0, &dev), CLOPS_OK);
    ck_assert_int_eq(tu_kernel_launches(&with, "lu_panel_resident"),
                     dev.type == CLOPS_DEVICE_GPU ? 2 : 13);
    ck_assert_int_gt(tu_kernel_launches(&with, "gemm") + tu_kernel_launches(&with, "gemm_simt"),
                     0);    /* gemm_simt: f32 on NVIDIA GPUs of compute capability 8.0 and later */
    ck_assert(with.ms > 0); /* parsed: the kernels took some time */
    ck_assert_int_eq(without.lines, 0);
    free(a.data), free(f.data), free(g.data);
    api->pool_release(pool);
}
END_TEST

/* The rows a work-group of the resident panel kernel holds of a panel `width` wide, with
 * PANEL_NB `panel_nb`, on a CPU device (one group of 64 work-items; getrf_plan.c): what fits its
 * local memory beside its other arrays at PANEL_NB, as many more rows of a narrower panel, at
 * most 1024. */
static int64_t cpu_rows_held(int64_t local, int64_t es, int64_t panel_nb, int64_t width)
{
    int64_t rows = (local - 64 * (es + 4) - 2 * panel_nb * es - 1024) / (panel_nb * es);
    rows = rows < 1024 ? rows : 1024;
    rows = rows * panel_nb / width;
    return rows < 1024 ? rows : 1024;
}

/* Each outer panel takes the widest inner panels (PANEL_NB, halved down to 16) whose rows the
 * resident kernel holds, so that a panel too tall at PANEL_NB takes narrower resident panels,
 * not the per-column kernel, and the shorter panels after it are wide again; where no width
 * fits, the per-column kernel at PANEL_NB. nb = panel_nb = 256 on 900 x 700 (f64) or 1100 x 700
 * (f32) rows: on a CPU device of 1 MiB of local memory f64 takes 128, 128 and 256 (5 resident
 * launches), f32 the per-column kernel (1100 rows: 1024 a group at most), then 256 twice. LAPACK's
 * pivots and a small ratio in every case. */
START_TEST(test_lu_inner_panels_narrow_only_where_the_rows_do_not_fit)
{
    const struct clops_api *api = tu_api();
    const int32_t dtype = tu_begin_iteration(_i, 1300);
    if (dtype == 0)
        return;
    const int64_t rows = dtype == CLOPS_F64 ? 900 : 1100, cols = 700, nb = 256;
    struct clops_pool *pool = tu_pool_from_string(
        "kernel_times = true; operators = { lu = { nb = 256; panel_nb = 256; }; };");
    struct tmat a = tmat_new(dtype, rows, cols, 0, 1, 0);
    tmat_fill_kind(&a, KIND_RANDOM);
    int32_t ipiv[700], info = -1, ref_ipiv[700], ref_info = -1;
    struct tu_kernel_log log = {
        .op = "lu", .names = {"lu_panel_resident", "lu_panel_column"}, .cc = -1};
    api->set_log_callback(tu_collect_kernel_log, &log, CLOPS_LOG_INFO);
    struct tmat f = factor_with(pool, &a, ipiv, &info, 0), ref;
    api->set_log_callback(NULL, NULL, CLOPS_LOG_ERROR);
    lapack_getrf(&a, ref_ipiv, &ref_info, &ref);
    ck_assert_int_eq(info, ref_info);
    ck_assert(memcmp(ipiv, ref_ipiv, (size_t)cols * sizeof ipiv[0]) == 0);
    ck_assert(lu_ratio(&a, &f, ipiv) < LU_RATIO_MAX);
    struct clops_device_info dev = {.struct_size = sizeof dev};
    ck_assert_int_eq(api->pool_device_info(pool, 0, &dev), CLOPS_OK);
    const int resident = tu_kernel_launches(&log, "lu_panel_resident");
    const int column = tu_kernel_launches(&log, "lu_panel_column");
    if (dtype == CLOPS_F64) /* 900 rows fit narrower panels on any device */
        ck_assert_int_eq(column, 0);
    if (dev.type == CLOPS_DEVICE_CPU) { /* one group: the launches follow from its local memory */
        int want_resident = 0, want_column = 0, widths = 0;
        for (int64_t j = 0; j < cols; j += nb) {
            const int64_t jb = cols - j < nb ? cols - j : nb, left = rows - j;
            int64_t width = 256;
            while (width >= 16 &&
                   left > cpu_rows_held(dev.local_mem_bytes, tu_dtype_size(dtype), 256, width))
                width /= 2;
            if (width < 16)
                want_column += (int)jb + 1; /* a launch per column and one to finish */
            else
                want_resident += (int)((jb + width - 1) / width);
            widths |= width < 16 ? 0 : width == 256 ? 1 : 2;
        }
        if (dev.local_mem_bytes == 1 << 20) /* the case this test was written for */
            ck_assert_int_eq(widths, dtype == CLOPS_F64 ? 3 : 1);
        ck_assert_int_eq(resident, want_resident);
        ck_assert_int_eq(column, want_column);
    }
    free(a.data), free(f.data), free(ref.data);
    api->pool_release(pool);
}
END_TEST

/* Exactly singular matrices: info names the first zero U(k,k), as LAPACK's; the factorization
 * still completes. Case 0: column 20 of 40 zero; 1: all zero; 2: [[1,2],[2,4]]; 3: the last of
 * 70 columns zero (past the first block); 4: a 50x30 with column 5 zero. */
START_TEST(test_lu_singular_matrix_gives_lapack_info)
{
    static const int64_t dims[][3] = {
        {40, 40, 20}, {9, 9, -1}, {2, 2, -2}, {70, 70, 70}, {50, 30, 5}};
    const int32_t dtype = tu_begin_iteration(_i % 2, 300 + (uint64_t)_i);
    if (dtype == 0)
        return;
    const int64_t *d = dims[_i / 2];
    struct tmat a = tmat_new(dtype, d[0], d[1], _i % 2, 1, 0);
    for (int64_t i = 0; i < a.rows; i++)
        for (int64_t j = 0; j < a.cols; j++) {
            if (d[2] == -1 || j + 1 == d[2])
                tmat_set(&a, i, j, 0);
            if (d[2] == -2)
                tmat_set(&a, i, j, (i + 1) * (j + 1));
        }
    int32_t ipiv[70], info = -1, ref_ipiv[70], ref_info = -1;
    struct tmat f = factor(&a, ipiv, &info, 0), ref;
    lapack_getrf(&a, ref_ipiv, &ref_info, &ref);
    ck_assert_int_gt(ref_info, 0);
    ck_assert_int_eq(info, ref_info);
    for (int64_t k = 0; k < (a.rows < a.cols ? a.rows : a.cols); k++)
        ck_assert_int_eq(ipiv[k], ref_ipiv[k]);
    ck_assert(lu_ratio(&a, &f, ipiv) < LU_RATIO_MAX);
    free(a.data);
    free(f.data);
    free(ref.data);
}
END_TEST

/* The permutation [[0,1],[1,0]] has a zero leading minor: only pivoting factors it. */
START_TEST(test_lu_exchange_matrix_needs_one_interchange)
{
    const int32_t dtype = tu_float_dtype(_i);
    if (dtype == 0)
        return;
    struct tmat a = tmat_new(dtype, 2, 2, 0, 0, 0);
    tmat_set(&a, 0, 0, 0), tmat_set(&a, 0, 1, 1), tmat_set(&a, 1, 0, 1), tmat_set(&a, 1, 1, 0);
    int32_t ipiv[2], info = -1;
    struct tmat f = factor(&a, ipiv, &info, 0);
    ck_assert_int_eq(info, 0);
    ck_assert(ipiv[0] == 2 && ipiv[1] == 2);
    ck_assert(tmat_get(&f, 0, 0) == 1 && tmat_get(&f, 0, 1) == 0);
    ck_assert(tmat_get(&f, 1, 0) == 0 && tmat_get(&f, 1, 1) == 1);
    free(f.data);
    /* Without pivoting the zero pivot is reported, as the course seed would divide by it. */
    f = factor(&a, ipiv, &info, 1);
    ck_assert_int_eq(info, 1);
    ck_assert(ipiv[0] == 1 && ipiv[1] == 2);
    free(f.data);
    free(a.data);
}
END_TEST

/* pivoting = none on diagonally dominant matrices (where it is safe): identity pivots, a small
 * backward error, and the same factors as partial pivoting (which picks the diagonal there). */
START_TEST(test_lu_without_pivoting_factors_diagonally_dominant)
{
    const int32_t dtype = tu_begin_iteration(_i, 400 + (uint64_t)_i);
    if (dtype == 0)
        return;
    struct tmat a = tmat_new(dtype, 127, 127, _i, 0, 0);
    tmat_fill_kind(&a, KIND_DIAG_DOMINANT);
    int32_t ipiv[127], info = -1, ipiv_p[127], info_p = -1;
    struct tmat f = factor(&a, ipiv, &info, 1), fp = factor(&a, ipiv_p, &info_p, 0);
    ck_assert_int_eq(info, 0);
    for (int k = 0; k < 127; k++)
        ck_assert(ipiv[k] == k + 1 && ipiv_p[k] == k + 1);
    ck_assert(lu_ratio(&a, &f, ipiv) < LU_RATIO_MAX);
    ck_assert(tmat_equal(&f, &fp));
    free(a.data);
    free(f.data);
    free(fp.data);
}
END_TEST

/* Device tensors (with an offset, both orders, strided ipiv) give the host tensors' results. */
START_TEST(test_lu_device_tensors_match_host_tensors)
{
    const int32_t dtype = tu_begin_iteration(_i % 2, 500 + (uint64_t)_i);
    if (dtype == 0)
        return;
    struct tmat a = tmat_new(dtype, 130, 97, _i / 2, 3, 7);
    int32_t ipiv[97], info = -1;
    struct tmat f = factor(&a, ipiv, &info, 0);
    struct clops_tensor ta;
    struct tmat d = tmat_copy(&a);
    struct clops_buffer *buf = tmat_upload(&d, &ta);
    /* ipiv every other element of an i32 buffer, from element 1; info at element 0. */
    const struct clops_api *api = tu_api();
    int32_t words[2 * 97 + 2];
    for (int i = 0; i < 2 * 97 + 2; i++)
        words[i] = -7;
    struct clops_buffer *ibuf;
    ck_assert_int_eq(api->buffer_create(tu_pool(), sizeof words, &ibuf), CLOPS_OK);
    ck_assert_int_eq(api->buffer_upload(ibuf, 0, words, sizeof words), CLOPS_OK);
    struct clops_tensor tp = {.buffer = ibuf, .offset = 1, .dtype = CLOPS_I32, .rank = 1};
    tp.shape[0] = 97, tp.strides[0] = 2;
    struct clops_tensor ti = tp;
    ti.offset = 0, ti.shape[0] = 1;
    ck_assert_msg(lu_entry()(tu_pool(), &ta, &tp, &ti, 0) == CLOPS_OK, "%s", api->last_error());
    tmat_download(buf, &d);
    ck_assert_int_eq(api->buffer_download(ibuf, 0, words, sizeof words), CLOPS_OK);
    api->buffer_release(ibuf);
    ck_assert(tmat_equal(&d, &f));
    ck_assert_int_eq(words[0], info);
    for (int k = 0; k < 97; k++) {
        ck_assert_int_eq(words[1 + 2 * k], ipiv[k]);
        ck_assert_int_eq(words[2 + 2 * k], -7);
    }
    free(a.data);
    free(f.data);
    free(d.data);
}
END_TEST

START_TEST(test_lu_empty_matrix_is_a_valid_call)
{
    float x[4] = {1, 2, 3, 4};
    int32_t ipiv[1] = {-3}, info[1] = {-3};
    struct clops_tensor ta = clops_matrix(x, CLOPS_F32, _i ? 0 : 3, _i ? 4 : 0, 4, 0);
    struct clops_tensor tp = i32_vector(ipiv, 0), ti = i32_vector(info, 1);
    ck_assert_int_eq(lu_entry()(tu_pool(), &ta, &tp, &ti, 0), CLOPS_OK);
    ck_assert(info[0] == 0 && ipiv[0] == -3 && x[0] == 1);
}
END_TEST

/* ---- Bad arguments --------------------------------------------------------------------------- */

/* A good call (A 5x4 f32 row-major, ipiv 4, info 1) that one case spoils. */
struct bad_call {
    struct clops_pool *pool;
    struct clops_tensor a, ipiv, info;
    const struct clops_tensor *pa, *pp, *pi;
    int32_t pivoting, status;
};

static float bad_a[64];
static int32_t bad_ipiv[8], bad_info[2];

static const char *spoil(int which, struct bad_call *x)
{
    switch (which) {
    case 0: x->a.shape[0] = -5; return "'a' has shape[0] = -5";
    case 1: x->a.dtype = CLOPS_I32, x->status = CLOPS_ERR_UNSUPPORTED; return "'a' has dtype i32";
    case 2: x->ipiv.dtype = CLOPS_I64, x->status = CLOPS_ERR_UNSUPPORTED; return "'ipiv' has dtype";
    case 3: x->ipiv.dtype = CLOPS_F32, x->status = CLOPS_ERR_UNSUPPORTED; return "'ipiv' has dtype";
    case 4: x->ipiv.shape[0] = 3; return "'ipiv' has 3 elements; expected at least 4";
    case 5: x->info.shape[0] = 2; return "'info' has 2 elements; expected 1";
    case 6: x->a.strides[0] = 3; return "'a' strides[0] (the leading dimension) = 3";
    case 7:
        x->a = clops_matrix(bad_a, CLOPS_F32, 5, 4, 4, 1);
        return "'a' strides[1] (the leading dimension) = 4 is smaller than its 5 rows";
    case 8:
        x->a.strides[0] = 8, x->a.strides[1] = 2, x->status = CLOPS_ERR_UNSUPPORTED;
        return "'a' has strides {8, 2}";
    case 9: x->pivoting = 2; return "'pivoting' = 2";
    case 10: x->pa = NULL; return "'a' is NULL";
    case 11: x->pi = NULL; return "'info' is NULL";
    case 12: x->ipiv.rank = 2, x->ipiv.shape[1] = 1; return "'ipiv' has rank 2";
    case 13: x->a.rank = 1; return "'a' has rank 1";
    case 14: x->info.data = NULL; return "'info' must have exactly one";
    case 15: x->pool = NULL; return "'pool' is NULL";
    case 16: x->ipiv.offset = -1; return "'ipiv' has offset -1";
    case 17: x->ipiv.data = bad_a + 10; return "'ipiv' overlaps parameter 'a'";
    default: ck_abort_msg("no bad case %d", which); return NULL;
    }
}
enum { BAD_CASE_COUNT = 18 };

START_TEST(test_lu_rejects_bad_arguments_naming_them)
{
    struct tu_guard guard = {0};
    tu_guard_random_f32(&guard, 900 + (uint64_t)_i, 64, bad_a, NULL);
    for (int i = 0; i < 8; i++)
        bad_ipiv[i] = -1;
    bad_info[0] = bad_info[1] = -1;
    tu_guard_add(&guard, bad_ipiv, sizeof bad_ipiv);
    tu_guard_add(&guard, bad_info, sizeof bad_info);
    struct bad_call x = {.pool = tu_pool(),
                         .a = clops_matrix(bad_a, CLOPS_F32, 5, 4, 4, 0),
                         .ipiv = i32_vector(bad_ipiv, 4),
                         .info = i32_vector(bad_info, 1),
                         .status = CLOPS_ERR_INVALID_ARGUMENT};
    x.pa = &x.a, x.pp = &x.ipiv, x.pi = &x.info;
    const char *needle = spoil(_i, &x);
    int32_t got = lu_entry()(x.pool, x.pa, x.pp, x.pi, x.pivoting);
    tu_expect_refusal("lu", _i, got, x.status, needle, &guard);
}
END_TEST

/* Through the generic invoke(), by names and enum strings: the descriptor matches the entry. */
START_TEST(test_lu_invoke_by_name_with_enum_strings)
{
    double a[9] = {2, 1, 1, 4, -6, 0, -2, 7, 2}; /* pivots 2, 2 (an exact tie: the first), 3 */
    float af[9];
    for (int i = 0; i < 9; i++)
        af[i] = (float)a[i];
    int32_t ipiv[3] = {0}, info = -1;
    struct clops_tensor ta = clops_matrix(af, CLOPS_F32, 3, 3, 3, 0);
    struct clops_tensor tp = i32_vector(ipiv, 3), ti = i32_vector(&info, 1);
    const struct clops_arg args[] = {
        {.name = "a", .kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &ta},
        {.name = "ipiv", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &tp},
        {.name = "info", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &ti},
        {.name = "pivoting", .kind = CLOPS_PARAM_ENUM, .s = _i ? "none" : "partial"},
    };
    const struct clops_api *api = tu_api();
    ck_assert_msg(api->invoke(tu_pool(), api->op_find("lu"), args, 4) == CLOPS_OK, "%s",
                  api->last_error());
    ck_assert_int_eq(info, 0);
    if (_i)
        ck_assert(ipiv[0] == 1 && ipiv[1] == 2 && ipiv[2] == 3);
    else
        ck_assert(ipiv[0] == 2 && ipiv[1] == 2 && ipiv[2] == 3);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_LOOP(test_lu_factors_reconstruct_a_within_lapack_ratio, 2 * SHAPE_COUNT * KIND_COUNT),
        TU_LOOP(test_lu_pivots_match_lapack, 2 * SHAPE_COUNT),
        TU_LOOP(test_lu_configured_block_sizes_keep_lapack_pivots, 8),
        TU_LOOP(test_lu_lookahead_gives_the_same_factors_bit_for_bit, 32),
        TU_TEST(test_lu_kernel_times_are_logged_by_kernel),
        TU_LOOP(test_lu_inner_panels_narrow_only_where_the_rows_do_not_fit, 2),
        TU_LOOP(test_lu_singular_matrix_gives_lapack_info, 10),
        TU_LOOP(test_lu_exchange_matrix_needs_one_interchange, 2),
        TU_LOOP(test_lu_without_pivoting_factors_diagonally_dominant, 2),
        TU_LOOP(test_lu_device_tensors_match_host_tensors, 4),
        TU_LOOP(test_lu_empty_matrix_is_a_valid_call, 2),
        TU_LOOP(test_lu_rejects_bad_arguments_naming_them, BAD_CASE_COUNT),
        TU_LOOP(test_lu_invoke_by_name_with_enum_strings, 2),
    };
    return tu_run_tests("lu", 300, 0, tests, TU_COUNT(tests));
}
