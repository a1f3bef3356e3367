/* test_gemm.c — the gemm operator against a long double reference: awkward sizes, every
 * transpose and storage order, padded leading dimensions, BLAS alpha/beta conventions, device
 * tensors, and bad arguments rejected with the parameter named and nothing written. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---- Host matrices --------------------------------------------------------------------------- */

/* A rows x cols matrix stored row- or column-major with leading dimension ld, which is the inner
 * extent plus `pad` (and at least 1, as BLAS requires), from element `offset` of its allocation. */
struct matrix {
    int32_t dtype;
    int64_t rows, cols, ld, offset;
    int32_t col_major;
    int64_t count; /* elements allocated, offset and gaps included; at least 1 */
    void *data;
};

static int64_t elem_size(int32_t dtype)
{
    return tu_dtype_size(dtype);
}

static int64_t max64(int64_t x, int64_t y)
{
    return x > y ? x : y;
}

static struct matrix matrix_new(int32_t dtype, int64_t rows, int64_t cols, int64_t pad,
                                int64_t offset, int32_t col_major)
{
    struct matrix m = {.dtype = dtype,
                       .rows = rows,
                       .cols = cols,
                       .offset = offset,
                       .ld = max64(1, (col_major ? rows : cols) + pad),
                       .col_major = col_major};
    m.count = max64(1, offset + m.ld * (col_major ? cols : rows));
    m.data = tu_random_elements(dtype, m.count);
    return m;
}

static struct matrix matrix_copy(const struct matrix *m)
{
    struct matrix c = *m;
    c.data = tu_memdup(m->data, (size_t)(m->count * elem_size(m->dtype)));
    return c;
}

static int64_t matrix_index(const struct matrix *m, int64_t i, int64_t j)
{
    return m->offset + (m->col_major ? i + j * m->ld : i * m->ld + j);
}

/* Whether element `at` of the allocation is an element of the matrix (else padding). */
static int matrix_holds(const struct matrix *m, int64_t at)
{
    int64_t rel = at - m->offset, inner = m->col_major ? m->rows : m->cols;
    int64_t outer = m->col_major ? m->cols : m->rows;
    return rel >= 0 && rel / m->ld < outer && rel % m->ld < inner;
}

static long double matrix_get(const struct matrix *m, int64_t i, int64_t j)
{
    int64_t at = matrix_index(m, i, j);
    return m->dtype == CLOPS_F64 ? ((const double *)m->data)[at] : ((const float *)m->data)[at];
}

static void matrix_fill(struct matrix *m, double value)
{
    for (int64_t i = 0; i < m->count; i++) {
        if (m->dtype == CLOPS_F64)
            ((double *)m->data)[i] = value;
        else
            ((float *)m->data)[i] = (float)value;
    }
}

static struct clops_tensor matrix_tensor(const struct matrix *m)
{
    struct clops_tensor t = clops_matrix(m->data, m->dtype, m->rows, m->cols, m->ld, m->col_major);
    t.offset = m->offset;
    return t;
}

/* ---- Cases ----------------------------------------------------------------------------------- */

struct gemm_case {
    int32_t dtype;
    int64_t m, n, k;
    int32_t trans_a, trans_b;
    int32_t a_col, b_col, c_col; /* storage orders: 1 = column-major */
    int64_t pad;                 /* added to every leading dimension */
    int64_t offset;              /* of every tensor, in elements */
    double alpha, beta;
    int32_t nan_c;  /* C starts as NaN (with beta = 0 none may survive) */
    int32_t nan_ab; /* A and B hold NaN (with alpha = 0 none may reach C) */
};

struct operands {
    struct matrix a, b, c0, c; /* c0: C before the call */
};

static void describe(const struct gemm_case *g, char *out, size_t size)
{
    snprintf(out, size,
             "%s M=%lld N=%lld K=%lld trans=%d%d order(a,b,c)=%c%c%c pad=%lld offset=%lld "
             "alpha=%g beta=%g",
             g->dtype == CLOPS_F64 ? "f64" : "f32", (long long)g->m, (long long)g->n,
             (long long)g->k, (int)g->trans_a, (int)g->trans_b, g->a_col ? 'C' : 'R',
             g->b_col ? 'C' : 'R', g->c_col ? 'C' : 'R', (long long)g->pad, (long long)g->offset,
             g->alpha, g->beta);
}

/* Fresh random operands: A stored K x M when transposed, B N x K when transposed. */
static void make_operands(const struct gemm_case *g, struct operands *o)
{
    int64_t p = g->pad, off = g->offset;
    o->a = g->trans_a ? matrix_new(g->dtype, g->k, g->m, p, off, g->a_col)
                      : matrix_new(g->dtype, g->m, g->k, p, off, g->a_col);
    o->b = g->trans_b ? matrix_new(g->dtype, g->n, g->k, p, off, g->b_col)
                      : matrix_new(g->dtype, g->k, g->n, p, off, g->b_col);
    o->c0 = matrix_new(g->dtype, g->m, g->n, p, off, g->c_col);
    if (g->nan_c)
        matrix_fill(&o->c0, NAN);
    if (g->nan_ab) {
        matrix_fill(&o->a, NAN);
        matrix_fill(&o->b, NAN);
    }
    o->c = matrix_copy(&o->c0);
}

static void free_operands(struct operands *o)
{
    free(o->a.data);
    free(o->b.data);
    free(o->c0.data);
    free(o->c.data);
}

static clops_gemm_fn gemm_entry(void)
{
    return (clops_gemm_fn)tu_op("gemm")->entry;
}

static int32_t call_on_host(const struct gemm_case *g, struct operands *o)
{
    struct clops_tensor a = matrix_tensor(&o->a), b = matrix_tensor(&o->b);
    struct clops_tensor c = matrix_tensor(&o->c);
    return gemm_entry()(tu_case_pool(), &a, &b, &c, g->trans_a, g->trans_b, g->alpha, g->beta);
}

/* A buffer holding m's allocation from element `offset` on (what is before is filler). */
static struct clops_buffer *upload(const struct matrix *m, int64_t offset)
{
    const struct clops_api *api = tu_api();
    int64_t es = elem_size(m->dtype);
    struct clops_buffer *buf = NULL;
    ck_assert_int_eq(api->buffer_create(tu_pool(), (offset + m->count) * es, &buf), CLOPS_OK);
    ck_assert_int_eq(api->buffer_upload(buf, offset * es, m->data, m->count * es), CLOPS_OK);
    return buf;
}

/* The same call on device tensors, their allocations `offset` elements into their buffers; C's
 * allocation (gaps included) is downloaded into o->c. */
static int32_t call_on_device(const struct gemm_case *g, struct operands *o, int64_t offset)
{
    const struct clops_api *api = tu_api();
    const struct matrix *m[3] = {&o->a, &o->b, &o->c};
    struct clops_buffer *buf[3];
    struct clops_tensor t[3];
    for (int i = 0; i < 3; i++) {
        buf[i] = upload(m[i], offset);
        t[i] = clops_matrix_on_device(buf[i], m[i]->dtype, m[i]->rows, m[i]->cols, m[i]->ld,
                                      m[i]->col_major);
        t[i].offset = offset + m[i]->offset;
    }
    int32_t status =
        gemm_entry()(tu_pool(), &t[0], &t[1], &t[2], g->trans_a, g->trans_b, g->alpha, g->beta);
    int64_t es = elem_size(o->c.dtype);
    ck_assert_int_eq(api->buffer_download(buf[2], offset * es, o->c.data, o->c.count * es),
                     CLOPS_OK);
    for (int i = 0; i < 3; i++)
        api->buffer_release(buf[i]);
    return status;
}

static long double op_get(const struct matrix *x, int32_t trans, int64_t i, int64_t j)
{
    return trans ? matrix_get(x, j, i) : matrix_get(x, i, j);
}

/* Every element of C within (K + 2) * 2 * eps of the scale of what it sums, alpha |op(A)||op(B)|
 * + |beta C0| (the standard bound for a dot product of length K, plus the roundings of the
 * scaling), against a long double reference; every gap of a padded C unchanged, bit for bit. */
static void check_against_reference(const struct gemm_case *g, const struct operands *o)
{
    char what[256];
    describe(g, what, sizeof what);
    const long double eps = g->dtype == CLOPS_F64 ? DBL_EPSILON : FLT_EPSILON;
    const long double factor = 2.0L * (long double)(g->k + 2) * eps;
    for (int64_t i = 0; i < g->m; i++) {
        for (int64_t j = 0; j < g->n; j++) {
            long double sum = 0, scale = 0;
            for (int64_t k = 0; g->alpha != 0.0 && k < g->k; k++) {
                long double p = op_get(&o->a, g->trans_a, i, k) * op_get(&o->b, g->trans_b, k, j);
                sum += p;
                scale += fabsl(p);
            }
            long double c0 = g->beta != 0.0 ? matrix_get(&o->c0, i, j) : 0.0L;
            long double ref = (long double)g->alpha * sum + (long double)g->beta * c0;
            long double bound = fabsl((long double)g->alpha) * scale + fabsl(g->beta * c0);
            long double got = matrix_get(&o->c, i, j);
            ck_assert_msg(fabsl(got - ref) <= factor * bound,
                          "%s: C(%lld,%lld) = %.17Lg, want "
                          "%.17Lg (tolerance %.3Lg)",
                          what, (long long)i, (long long)j, got, ref, factor * bound);
        }
    }
    int64_t es = elem_size(o->c.dtype);
    for (int64_t at = 0; at < o->c.count; at++)
        if (!matrix_holds(&o->c, at))
            ck_assert_msg(
                memcmp((char *)o->c.data + at * es, (char *)o->c0.data + at * es, (size_t)es) == 0,
                "%s: the gap at element %lld of C was written", what, (long long)at);
}

static void run_case(const struct gemm_case *g)
{
    struct operands o;
    make_operands(g, &o);
    char what[256];
    describe(g, what, sizeof what);
    int32_t status = call_on_host(g, &o);
    ck_assert_msg(status == CLOPS_OK, "%s: %s", what, tu_api()->last_error());
    check_against_reference(g, &o);
    free_operands(&o);
}

/* A dense row-major case; `trans` = trans_a + 2 * trans_b. */
static struct gemm_case dense_case(int32_t dtype, int64_t m, int64_t n, int64_t k, int trans,
                                   double alpha, double beta)
{
    struct gemm_case g = {.dtype = dtype,
                          .m = m,
                          .n = n,
                          .k = k,
                          .trans_a = trans & 1,
                          .trans_b = trans >> 1,
                          .alpha = alpha,
                          .beta = beta};
    return g;
}

/* For the cases about the product: alpha != 0, so that A and B are read. */
static const double scalings[4][2] = {{1, 0}, {2.5, -0.75}, {-1, 0.5}, {0.5, 1}};

/* M x N x K, dense and row-major, with each of the four transposes and its scaling. */
static void run_every_transpose(int32_t dtype, const int64_t mnk[3])
{
    for (int t = 0; t < 4; t++) {
        struct gemm_case g =
            dense_case(dtype, mnk[0], mnk[1], mnk[2], t, scalings[t][0], scalings[t][1]);
        run_case(&g);
    }
}

/* The case g with C row-major, then column-major. */
static void run_in_both_c_orders(struct gemm_case g)
{
    for (g.c_col = 0; g.c_col < 2; g.c_col++)
        run_case(&g);
}

/* ---- Results --------------------------------------------------------------------------------- */

static const int64_t sizes[][3] = {{1, 1, 1},       {7, 7, 7},     {31, 31, 31},  {64, 64, 64},
                                   {129, 129, 129}, {300, 17, 45}, {17, 300, 45}, {45, 17, 300}};
enum { SIZE_COUNT = sizeof sizes / sizeof sizes[0] };

START_TEST(test_gemm_sizes_and_transposes_match_reference)
{
    int32_t dtype = tu_begin_iteration(_i % 2, 1000 + (uint64_t)_i);
    if (dtype == 0)
        return;
    run_every_transpose(dtype, sizes[_i / 2]);
}
END_TEST

/* The tiles other devices use (the NVIDIA rows of the table, the strided layout, the
 * fallback), forced through the configuration so that they are checked on this machine too. */
static const char *const tile_overrides[] = {
    "-DTILE_M=128 -DTILE_N=128 -DTILE_K=16 -DWPT_M=8 -DWPT_N=8 -DVW=4",
    "-DTILE_M=64 -DTILE_N=64 -DTILE_K=16 -DWPT_M=4 -DWPT_N=4 -DVW=4",
    "-DTILE_M=64 -DTILE_N=32 -DTILE_K=8 -DWPT_M=4 -DWPT_N=4 -DVW=2",
    "-DTILE_M=32 -DTILE_N=32 -DTILE_K=8 -DWPT_M=4 -DWPT_N=4 -DVW=1",
    "-DTILE_M=16 -DTILE_N=16 -DTILE_K=8 -DWPT_M=2 -DWPT_N=2 -DVW=1",
};
enum { OVERRIDE_COUNT = sizeof tile_overrides / sizeof tile_overrides[0] };

START_TEST(test_gemm_every_tile_layout_matches_reference)
{
    int32_t dtype = tu_begin_iteration(_i % 2, 9000 + (uint64_t)_i);
    if (dtype == 0)
        return;
    tu_set_case_build_options("gemm", tile_overrides[_i / 2]);
    static const int64_t shapes[][3] = {{1, 1, 1}, {129, 67, 45}, {37, 200, 33}};
    for (int s = 0; s < 3; s++)
        run_every_transpose(dtype, shapes[s]);
    tu_release_case_pool();
}
END_TEST

START_TEST(test_gemm_rejects_tiles_that_do_not_divide)
{
    struct clops_pool *pool = tu_pool_with_build_options("gemm", "-DTILE_M=100 -DWPT_M=8");
    float x[4] = {1, 2, 3, 4}, y[4] = {0};
    struct clops_tensor a = clops_matrix(x, CLOPS_F32, 2, 2, 2, 0);
    struct clops_tensor c = clops_matrix(y, CLOPS_F32, 2, 2, 2, 0);
    ck_assert_int_eq(gemm_entry()(pool, &a, &a, &c, 0, 0, 1.0, 0.0), CLOPS_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "operators.gemm.build_options"));
    ck_assert_float_eq(y[0], 0.0f);
    tu_api()->pool_release(pool);
}
END_TEST

/* The eight storage orders of A, B and C, each dense and padded, every transpose, on a size
 * spanning several partial tiles. */
START_TEST(test_gemm_storage_orders_and_padding_match_reference)
{
    int32_t dtype = tu_begin_iteration(_i % 2, 2000 + (uint64_t)_i);
    int layout = _i / 2;
    for (int t = 0; dtype != 0 && t < 4; t++) {
        struct gemm_case g = dense_case(dtype, 67, 131, 29, t, scalings[(t + layout) % 4][0],
                                        scalings[(t + layout) % 4][1]);
        g.a_col = layout & 1;
        g.b_col = (layout >> 1) & 1;
        g.c_col = (layout >> 2) & 1;
        g.pad = layout >= 8 ? 3 : 0;
        run_case(&g);
    }
}
END_TEST

START_TEST(test_gemm_alpha_beta_conventions_match_reference)
{
    int32_t dtype = tu_begin_iteration(_i % 2, 3000 + (uint64_t)_i);
    /* With BLAS's quick cases: alpha = 0 is C = beta C, and with beta = 1 leaves C as it is. */
    const double alpha_beta[][2] = {{1, 0}, {2.5, -0.75}, {0, 1},   {-1, 0.5},
                                    {0, 0}, {0, -2},      {-0.5, 1}};
    for (int v = 0; dtype != 0 && v < 7; v++) {
        struct gemm_case g =
            dense_case(dtype, 33, 29, 40, v & 1, alpha_beta[v][0], alpha_beta[v][1]);
        g.pad = 1;
        run_in_both_c_orders(g);
    }
}
END_TEST

START_TEST(test_gemm_beta_zero_ignores_nan_in_c)
{
    int32_t dtype = tu_begin_iteration(_i % 2, 4000 + (uint64_t)_i);
    /* A product, an all-zero result (alpha = 0) and an empty sum (K = 0), over NaN. */
    const double alphas[3] = {1.5, 0, 1};
    const int64_t ks[3] = {19, 19, 0};
    for (int v = 0; dtype != 0 && v < 3; v++) {
        struct gemm_case g = dense_case(dtype, 40, 23, ks[v], 0, alphas[v], 0);
        g.nan_c = 1;
        run_in_both_c_orders(g);
    }
}
END_TEST

START_TEST(test_gemm_alpha_zero_reads_neither_a_nor_b)
{
    int32_t dtype = tu_begin_iteration(_i % 2, 5000 + (uint64_t)_i);
    if (dtype == 0)
        return;
    struct gemm_case g = dense_case(dtype, 21, 18, 9, 0, 0, 0.5);
    g.nan_ab = 1;
    run_case(&g);
}
END_TEST

START_TEST(test_gemm_empty_extents_are_valid)
{
    int32_t dtype = tu_begin_iteration(_i % 2, 6000 + (uint64_t)_i);
    /* M = 0 and N = 0 write nothing (every "element" of C is a gap); K = 0 gives beta * C. */
    const int64_t shapes[][3] = {{0, 5, 4}, {5, 0, 4}, {0, 0, 0}, {6, 5, 0}, {1, 1, 0}};
    for (int s = 0; dtype != 0 && s < 5; s++)
        for (int t = 0; t < 4; t++) {
            struct gemm_case g = dense_case(dtype, shapes[s][0], shapes[s][1], shapes[s][2], t, 2,
                                            t == 2 ? 0 : -1.5);
            g.c_col = t == 3;
            run_case(&g);
        }
}
END_TEST

START_TEST(test_gemm_offsets_are_honoured)
{
    int32_t dtype = tu_begin_iteration(_i % 2, 7000 + (uint64_t)_i);
    /* Views that start inside their allocations; what is before them is not touched. */
    for (int t = 0; dtype != 0 && t < 4; t++) {
        struct gemm_case g = dense_case(dtype, 13, 11, 17, t & 1, 1.25, 0.5);
        g.b_col = t >> 1;
        g.c_col = _i / 2;
        g.pad = 2;
        g.offset = 7 + t;
        run_case(&g);
    }
}
END_TEST

START_TEST(test_gemm_device_tensors_match_host_tensors)
{
    int32_t dtype = tu_begin_iteration(_i % 2, 8000 + (uint64_t)_i);
    if (dtype == 0)
        return;
    int variant = _i / 2;
    struct gemm_case g = dense_case(dtype, 70, 45, 33, variant & 1, -1.5, 0.25);
    g.b_col = 1;
    g.c_col = variant >> 1;
    g.pad = 2;
    g.offset = 3;
    struct operands host, device;
    make_operands(&g, &host);
    device = host;
    device.c = matrix_copy(&host.c0);
    ck_assert_msg(call_on_host(&g, &host) == CLOPS_OK, "%s", tu_api()->last_error());
    ck_assert_msg(call_on_device(&g, &device, 5) == CLOPS_OK, "%s", tu_api()->last_error());
    check_against_reference(&g, &device);
    size_t bytes = (size_t)(host.c.count * elem_size(dtype));
    ck_assert_msg(memcmp(host.c.data, device.c.data, bytes) == 0,
                  "device tensors give a different C than host tensors");
    free(device.c.data);
    free_operands(&host);
}
END_TEST

/* ---- Bad arguments --------------------------------------------------------------------------- */

enum { BAD_M = 5, BAD_K = 4, BAD_N = 6, BAD_ALLOC = 256 };

/* A good f32 call (A 5x4, B 4x6, C 5x6, row-major) that one case of bad_cases() spoils. */
struct bad_call {
    struct clops_pool *pool;
    struct clops_tensor a, b, c;
    const struct clops_tensor *pa, *pb, *pc;
    int32_t trans_a, trans_b;
    int32_t status; /* expected */
};

static float bad_a[BAD_ALLOC], bad_b[BAD_ALLOC], bad_c[BAD_ALLOC];

/* Spoils the good call in one way; returns what the message must say. */
static const char *spoil(int which, struct bad_call *x)
{
    switch (which) {
    case 0: x->a.dtype = CLOPS_I32, x->status = CLOPS_ERR_UNSUPPORTED; return "'a' has dtype i32";
    case 1: x->b.dtype = CLOPS_F64; return "'b' has dtype f64 but 'a' has f32";
    case 2: x->c.dtype = 99; return "'c' has dtype";
    case 3: x->b.shape[0] = BAD_K - 1; return "'b' has op(B) of shape 3x6";
    case 4: x->c.shape[1] = BAD_N - 1; return "'c' has shape 5x5";
    case 5:
        x->a.strides[0] = BAD_K - 1;
        return "'a' strides[0] (lda) = 3 is smaller than K = 4 (row-major A)";
    case 6:
        x->b = clops_matrix(bad_b, CLOPS_F32, BAD_K, BAD_N, BAD_K - 1, 1);
        return "'b' strides[1] (ldb) = 3 is smaller than K = 4";
    case 7: x->c.strides[0] = BAD_N - 2; return "'c' strides[0] (ldc) = 4 is smaller than N = 6";
    case 8:
        x->c.strides[0] = 14;
        x->c.strides[1] = 2;
        x->status = CLOPS_ERR_UNSUPPORTED;
        return "'c' has strides {14, 2}";
    case 9:
        x->a.rank = 3;
        x->a.shape[2] = 1;
        return "'a' has rank 3";
    case 10: x->pb = NULL; return "'b' is NULL";
    case 11: x->c.buffer = tu_kept_buffer(16); return "'c' must have exactly one";
    case 12: x->a.shape[0] = -5; return "'a' has shape[0] = -5";
    case 13: x->trans_a = 7; return "'trans_a' = 7";
    case 14: x->trans_b = -1; return "'trans_b' = -1";
    case 15: x->pool = NULL; return "'pool' is NULL";
    case 16: x->c.strides[0] = 0; return "'c' has strides[0] = 0";
    case 17: x->c.data = bad_a; return "'c' overlaps parameter 'a'";
    case 18: x->b.offset = -1; return "'b' has offset -1";
    case 19:
        x->a.data = NULL;
        x->a.buffer = tu_kept_buffer(16);
        return "'a' addresses 80 bytes";
    case 20: x->a.data = NULL; return "'a' must have exactly one";
    case 21:
        x->trans_a = CLOPS_TRANS;
        return "'b' has op(B) of shape 4x6 (trans_b = none) but K = 5";
    default: ck_abort_msg("no bad case %d", which); return NULL;
    }
}
enum { BAD_CASE_COUNT = 22 };

START_TEST(test_gemm_rejects_bad_arguments_naming_them)
{
    struct tu_guard guard = {0};
    tu_guard_random_f32(&guard, 9000 + (uint64_t)_i, BAD_ALLOC, bad_a, bad_b, bad_c, NULL);
    struct bad_call x = {.pool = tu_pool(),
                         .a = clops_matrix(bad_a, CLOPS_F32, BAD_M, BAD_K, BAD_K, 0),
                         .b = clops_matrix(bad_b, CLOPS_F32, BAD_K, BAD_N, BAD_N, 0),
                         .c = clops_matrix(bad_c, CLOPS_F32, BAD_M, BAD_N, BAD_N, 0),
                         .status = CLOPS_ERR_INVALID_ARGUMENT};
    x.pa = &x.a, x.pb = &x.b, x.pc = &x.c;
    const char *needle = spoil(_i, &x);
    int32_t got = gemm_entry()(x.pool, x.pa, x.pb, x.pc, x.trans_a, x.trans_b, 1.0, 0.0);
    tu_expect_refusal("gemm", _i, got, x.status, needle, &guard);
}
END_TEST

START_TEST(test_gemm_f64_needs_a_device_with_fp64)
{
    if (tu_has_fp64())
        return; /* PoCL and most GPUs have it: nothing to reject */
    double a[4] = {0}, b[4] = {0}, c[4] = {1, 2, 3, 4};
    struct clops_tensor ta = clops_matrix(a, CLOPS_F64, 2, 2, 2, 0);
    struct clops_tensor tb = clops_matrix(b, CLOPS_F64, 2, 2, 2, 0);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F64, 2, 2, 2, 0);
    ck_assert_int_eq(gemm_entry()(tu_pool(), &ta, &tb, &tc, 0, 0, 1, 0), CLOPS_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "'a' is f64"));
    ck_assert(c[0] == 1 && c[3] == 4);
}
END_TEST

/* ---- The kernel a device runs ---------------------------------------------------------------- */

/* A pool that logs every kernel launch (kernel_times, profiling on), created while *log listens
 * (the capability line comes at creation); `extra` is more configuration text. The caller
 * releases the pool and calls stop_logging. */
static struct clops_pool *logging_pool(struct tu_kernel_log *log, const char *extra)
{
    char text[512];
    snprintf(text, sizeof text, "profiling = true; kernel_times = true;\n%s", extra);
    *log =
        (struct tu_kernel_log){.op = "gemm", .names = {"gemm", "gemm_mma", "gemm_simt"}, .cc = -1};
    tu_api()->set_log_callback(tu_collect_kernel_log, log, CLOPS_LOG_INFO);
    return tu_pool_from_string(text);
}

static void stop_logging(void)
{
    tu_api()->set_log_callback(NULL, NULL, CLOPS_LOG_ERROR);
}

static struct clops_device_info device_of(struct clops_pool *pool)
{
    struct clops_device_info dev = {.struct_size = sizeof dev};
    ck_assert_int_eq(tu_api()->pool_device_info(pool, 0, &dev), CLOPS_OK);
    return dev;
}

/* Whether gemm's f64 calls must run on the tensor cores (gemm_mma) on `dev`: an NVIDIA device of
 * compute capability 8.0 or later. Every NVIDIA OpenCL driver offers
 * cl_nv_device_attribute_query, so the pool must have read a capability for an NVIDIA device, and
 * for no other (PoCL among them). */
static int expects_tensor_cores(const struct clops_device_info *dev,
                                const struct tu_kernel_log *log)
{
    const int nvidia = strstr(dev->vendor, "NVIDIA") != NULL;
    ck_assert_msg(nvidia == (log->cc >= 0), "device '%s' of vendor '%s': compute capability %d",
                  dev->name, dev->vendor, log->cc);
    return dev->fp64 && log->cc >= 80;
}

/* Whether gemm's f32 calls in fp32 must run gemm_simt (cp.async) on `dev`: the same devices,
 * whatever their fp64. */
static int expects_simt(const struct tu_kernel_log *log)
{
    return log->cc >= 80;
}

/* f64 runs gemm_mma and f32 gemm_simt exactly where expects_tensor_cores and expects_simt say
 * (never under PoCL), else the portable kernel, which both go back to once tiles are configured,
 * as they describe it. */
START_TEST(test_gemm_kernel_choice_follows_the_device)
{
    tu_seed(9100);
    for (int configured = 0; configured < 2; configured++) {
        struct tu_kernel_log log;
        tu_set_case_pool(
            logging_pool(&log, configured ? "operators = { gemm = { tile_m = 64; }; };" : ""));
        const struct clops_device_info dev = device_of(tu_case_pool());
        const int mma = expects_tensor_cores(&dev, &log) && !configured;
        const int simt = expects_simt(&log) && !configured;
        for (int f64 = 0; f64 <= dev.fp64; f64++) {
            const struct tu_kernel_log before = log;
            struct gemm_case g = dense_case(f64 ? CLOPS_F64 : CLOPS_F32, 129, 67, 45, 1, 1, 0);
            run_case(&g);
#define LAUNCHED(name) (tu_kernel_launches(&log, name) - tu_kernel_launches(&before, name))
            ck_assert_int_eq(LAUNCHED("gemm_mma"), f64 && mma);
            ck_assert_int_eq(LAUNCHED("gemm_simt"), !f64 && simt);
            ck_assert_int_eq(LAUNCHED("gemm"), f64 ? !mma : !simt);
#undef LAUNCHED
            ck_assert_int_eq(log.other, 0);
        }
        tu_release_case_pool();
        stop_logging();
    }
}
END_TEST

/* Sizes that the fast kernels' tiles (64 or 128 square, K steps of 8 or 16) do not divide: 1,
 * primes, long K, non-square, one C large enough for 128 x 128 blocks on every compute unit;
 * each with every transpose, both orders of C and mixed orders of A and B, padding and offsets
 * (an odd offset takes gemm_simt's one-element copies where the rows are contiguous), in f32 and
 * f64. All calls of a dtype run the device's kernel for it: gemm_mma (f64) and gemm_simt (f32)
 * where the device has them, else the portable kernel. */
static const int64_t awkward_sizes[][3] = {{1, 1, 1},      {2, 3, 5},       {13, 1, 7},
                                           {1, 29, 31},    {131, 67, 45},   {67, 131, 129},
                                           {257, 263, 19}, {97, 101, 1031}, {1543, 1543, 23}};
enum { AWKWARD_COUNT = sizeof awkward_sizes / sizeof awkward_sizes[0] };

START_TEST(test_gemm_awkward_sizes_match_reference_on_the_devices_kernels)
{
    struct tu_kernel_log log;
    tu_set_case_pool(logging_pool(&log, ""));
    const struct clops_device_info dev = device_of(tu_case_pool());
    const int mma = dev.fp64 && expects_tensor_cores(&dev, &log), simt = expects_simt(&log);
    tu_seed(9200 + (uint64_t)_i);
    const int64_t *s = awkward_sizes[_i / 2];
    const int f64 = _i % 2;
    for (int t = 0; (!f64 || dev.fp64) && t < 4; t++)
        for (int c_col = 0; c_col < 2; c_col++) {
            struct gemm_case g = dense_case(f64 ? CLOPS_F64 : CLOPS_F32, s[0], s[1], s[2], t,
                                            scalings[t][0], scalings[t][1]);
            g.c_col = c_col;
            g.a_col = (t + c_col) & 1;
            g.b_col = (t >> 1) ^ c_col;
            g.pad = (_i / 2) % 3;
            g.offset = (_i / 2) % 2 ? 3 : 0;
            run_case(&g);
        }
    const int runs = !f64 || dev.fp64 ? 8 : 0, fast = f64 ? mma : simt;
    ck_assert_int_eq(tu_kernel_launches(&log, "gemm_mma"), f64 && fast ? runs : 0);
    ck_assert_int_eq(tu_kernel_launches(&log, "gemm_simt"), !f64 && fast ? runs : 0);
    ck_assert_int_eq(tu_kernel_launches(&log, "gemm"), fast ? 0 : runs);
    ck_assert_int_eq(log.other, 0);
    tu_release_case_pool();
    stop_logging();
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_LOOP(test_gemm_sizes_and_transposes_match_reference, 2 * SIZE_COUNT),
        TU_LOOP(test_gemm_storage_orders_and_padding_match_reference, 2 * 16),
        TU_LOOP(test_gemm_alpha_beta_conventions_match_reference, 2),
        TU_LOOP(test_gemm_beta_zero_ignores_nan_in_c, 2),
        TU_LOOP(test_gemm_alpha_zero_reads_neither_a_nor_b, 2),
        TU_LOOP(test_gemm_empty_extents_are_valid, 2),
        TU_LOOP(test_gemm_offsets_are_honoured, 4),
        TU_LOOP(test_gemm_device_tensors_match_host_tensors, 8),
        TU_LOOP(test_gemm_rejects_bad_arguments_naming_them, BAD_CASE_COUNT),
        TU_TEST(test_gemm_f64_needs_a_device_with_fp64),
        TU_LOOP(test_gemm_every_tile_layout_matches_reference, 2 * OVERRIDE_COUNT),
        TU_TEST(test_gemm_rejects_tiles_that_do_not_divide),
        TU_TEST(test_gemm_kernel_choice_follows_the_device),
        /* Quick runs leave out the largest (1543 x 1543 x 23: 21 s of host reference a dtype). */
        TU_LOOP(test_gemm_awkward_sizes_match_reference_on_the_devices_kernels,
                2 * (AWKWARD_COUNT - tu_quick())),
    };
    return tu_run_tests("gemm", 600, 0, tests, TU_COUNT(tests));
}
