/* lu_testutil.h — shared by test_lu.c and test_solve.c: matrices of the kinds LAPACK's test
 * suite uses (random, diagonally dominant, graded, rank-deficient) in either storage order, on
 * the host or in device buffers, and LAPACK's residual ratios computed in long double. */
#ifndef CLOPS_LU_TESTUTIL_H
#define CLOPS_LU_TESTUTIL_H

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* LAPACK's threshold for its residual ratios. */
#define LU_RATIO_MAX 30.0

/* A rows x cols matrix, row- or column-major with leading dimension ld (inner extent + pad),
 * starting at element `offset` of its allocation of `count` elements. */
struct tmat {
    int32_t dtype;
    int64_t rows, cols, ld, offset, count;
    int32_t col_major;
    void *data;
};

enum tmat_kind { KIND_RANDOM, KIND_DIAG_DOMINANT, KIND_GRADED, KIND_RANK_DEFICIENT, KIND_COUNT };

static inline const char *kind_name(int kind)
{
    static const char *const names[] = {"random", "diagonally dominant", "graded",
                                        "rank-deficient"};
    return names[kind];
}

static inline int64_t tmat_esize(int32_t dtype)
{
    return tu_dtype_size(dtype);
}

static inline long double tmat_eps(int32_t dtype)
{
    return dtype == CLOPS_F64 ? DBL_EPSILON : FLT_EPSILON;
}

static inline int64_t tmat_index(const struct tmat *m, int64_t i, int64_t j)
{
    return m->offset + (m->col_major ? i + j * m->ld : i * m->ld + j);
}

static inline long double tmat_get(const struct tmat *m, int64_t i, int64_t j)
{
    int64_t at = tmat_index(m, i, j);
    return m->dtype == CLOPS_F64 ? ((const double *)m->data)[at] : ((const float *)m->data)[at];
}

static inline void tmat_set(struct tmat *m, int64_t i, int64_t j, long double v)
{
    int64_t at = tmat_index(m, i, j);
    if (m->dtype == CLOPS_F64)
        ((double *)m->data)[at] = (double)v;
    else
        ((float *)m->data)[at] = (float)v;
}

/* Random contents everywhere, padding included (so that writes into it show). */
static inline struct tmat tmat_new(int32_t dtype, int64_t rows, int64_t cols, int32_t col_major,
                                   int64_t pad, int64_t offset)
{
    struct tmat m = {
        .dtype = dtype, .rows = rows, .cols = cols, .offset = offset, .col_major = col_major};
    int64_t inner = col_major ? rows : cols, outer = col_major ? cols : rows;
    m.ld = (inner > 1 ? inner : 1) + pad;
    m.count = offset + m.ld * (outer > 1 ? outer : 1);
    m.data = tu_random_elements(dtype, m.count);
    return m;
}

static inline struct tmat tmat_copy(const struct tmat *m)
{
    struct tmat c = *m;
    c.data = tu_memdup(m->data, (size_t)(m->count * tmat_esize(m->dtype)));
    return c;
}

/* The same matrix, in the other storage order (for LAPACKE, which wants column-major). */
static inline struct tmat tmat_as_col_major(const struct tmat *m)
{
    struct tmat c = tmat_new(m->dtype, m->rows, m->cols, 1, 0, 0);
    for (int64_t i = 0; i < m->rows; i++)
        for (int64_t j = 0; j < m->cols; j++)
            tmat_set(&c, i, j, tmat_get(m, i, j));
    return c;
}

static inline int tmat_equal(const struct tmat *x, const struct tmat *y)
{
    return x->count == y->count &&
           memcmp(x->data, y->data, (size_t)(x->count * tmat_esize(x->dtype))) == 0;
}

/* Overwrites the matrix's elements with one of the kinds: graded rows and columns span 10^6
 * (f64) or 10^3 (f32) in scale, for a condition number to match; rank-deficient is X·Y with an
 * inner dimension of half the smaller extent. */
static inline void tmat_fill_kind(struct tmat *m, int kind)
{
    const int64_t r = m->rows, c = m->cols, mn = r < c ? r : c;
    const double decades = m->dtype == CLOPS_F64 ? 6.0 : 3.0;
    int64_t rank = mn / 2 > 0 ? mn / 2 : 1;
    double *x = NULL, *y = NULL;
    if (kind == KIND_RANK_DEFICIENT) {
        x = malloc((size_t)(r * rank) * sizeof *x);
        y = malloc((size_t)(rank * c) * sizeof *y);
        ck_assert(x != NULL && y != NULL);
        tu_fill_f64(x, r * rank);
        tu_fill_f64(y, rank * c);
    }
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) {
            long double v = tu_uniform();
            if (kind == KIND_DIAG_DOMINANT && i == j)
                v += (long double)(r > c ? r : c);
            if (kind == KIND_GRADED)
                v *= powl(10.0L, -decades * (long double)(i + j) / (long double)(r + c));
            if (kind == KIND_RANK_DEFICIENT) {
                v = 0;
                for (int64_t k = 0; k < rank; k++)
                    v += (long double)x[i * rank + k] * y[k * c + j];
            }
            tmat_set(m, i, j, v);
        }
    free(x);
    free(y);
}

static inline struct clops_tensor tmat_tensor(const struct tmat *m)
{
    struct clops_tensor t = clops_matrix(m->data, m->dtype, m->rows, m->cols, m->ld, m->col_major);
    t.offset = m->offset;
    return t;
}

/* The matrix's whole allocation in a new device buffer, and its tensor there. */
static inline struct clops_buffer *tmat_upload(const struct tmat *m, struct clops_tensor *t)
{
    const struct clops_api *api = tu_api();
    struct clops_buffer *buf;
    int64_t bytes = m->count * tmat_esize(m->dtype);
    ck_assert_int_eq(api->buffer_create(tu_pool(), bytes, &buf), CLOPS_OK);
    ck_assert_int_eq(api->buffer_upload(buf, 0, m->data, bytes), CLOPS_OK);
    *t = tmat_tensor(m);
    t->data = NULL;
    t->buffer = buf;
    return buf;
}

static inline void tmat_download(struct clops_buffer *buf, struct tmat *m)
{
    int64_t bytes = m->count * tmat_esize(m->dtype);
    ck_assert_int_eq(tu_api()->buffer_download(buf, 0, m->data, bytes), CLOPS_OK);
    tu_api()->buffer_release(buf);
}

static inline struct clops_tensor i32_vector(int32_t *data, int64_t n)
{
    struct clops_tensor t = {.data = data, .dtype = CLOPS_I32, .rank = 1};
    t.shape[0] = n;
    t.strides[0] = 1;
    return t;
}

static inline long double norm1(const struct tmat *m)
{
    long double best = 0;
    for (int64_t j = 0; j < m->cols; j++) {
        long double s = 0;
        for (int64_t i = 0; i < m->rows; i++)
            s += fabsl(tmat_get(m, i, j));
        best = s > best ? s : best;
    }
    return best;
}

/* LAPACK's dget01: ||P·A - L·U||_1 / (N ||A||_1 eps), with L and U read from the factored f
 * and P from ipiv, in long double. */
static inline double lu_ratio(const struct tmat *a, const struct tmat *f, const int32_t *ipiv)
{
    const int64_t m = a->rows, n = a->cols, mn = m < n ? m : n;
    int64_t *perm = malloc((size_t)(m > 0 ? m : 1) * sizeof *perm);
    ck_assert_ptr_nonnull(perm);
    for (int64_t i = 0; i < m; i++)
        perm[i] = i;
    for (int64_t k = 0; k < mn; k++) {
        int64_t p = ipiv[k] - 1, t = perm[k];
        perm[k] = perm[p];
        perm[p] = t;
    }
    long double worst = 0;
    for (int64_t j = 0; j < n; j++) {
        long double col = 0;
        for (int64_t i = 0; i < m; i++) {
            long double lu = 0;
            const int64_t kmax = i < j ? i : j;
            for (int64_t k = 0; k <= kmax && k < mn; k++) {
                long double l = k == i ? 1.0L : tmat_get(f, i, k);
                lu += l * tmat_get(f, k, j);
            }
            col += fabsl(tmat_get(a, perm[i], j) - lu);
        }
        worst = col > worst || isnan(col) ? col : worst; /* a NaN stays: it fails the test */
    }
    free(perm);
    long double anorm = norm1(a);
    if (anorm == 0)
        return (double)(worst == 0 ? 0 : INFINITY);
    return (double)(worst / ((long double)(n > 0 ? n : 1) * anorm * tmat_eps(a->dtype)));
}

/* LAPACK's dget02: max over columns of ||b - op(A)·x||_1 / (N ||A||_1 ||x||_1 eps). */
static inline double solve_ratio(const struct tmat *a, const struct tmat *x, const struct tmat *b,
                                 int trans)
{
    const int64_t n = a->rows;
    long double anorm = norm1(a), worst = 0;
    for (int64_t j = 0; j < b->cols; j++) {
        long double r = 0, xn = 0;
        for (int64_t i = 0; i < n; i++) {
            long double s = tmat_get(b, i, j);
            for (int64_t k = 0; k < n; k++)
                s -= (trans ? tmat_get(a, k, i) : tmat_get(a, i, k)) * tmat_get(x, k, j);
            r += fabsl(s);
            xn += fabsl(tmat_get(x, i, j));
        }
        long double ratio = xn == 0 ? (r == 0 ? 0 : INFINITY)
                                    : r / ((long double)n * anorm * xn * tmat_eps(a->dtype));
        worst = ratio > worst || isnan(ratio) ? ratio : worst; /* a NaN stays */
    }
    return (double)worst;
}

#endif
