/* operators.c — what the CLI knows about particular operators beyond their descriptors: the
 * work a step does, and how to verify its result on the host in higher precision. Their rules
 * (shapes, dtypes) are the plugin's, asked through check_sized when a pipeline is validated.
 * Adding a check is a function and one line in `check_kinds`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mandel.h"
#include "operators.h"
#include "util.h"

/* ---- gemm: C = alpha op(A) op(B) + beta C ------------------------------------------------- */

/* A gemm step's operands, resolved from its arguments (given or default). */
struct gemm_operands {
    const struct pl_tensor *a, *b, *c;
    const void *c_before; /* C's contents before the step */
    int trans_a, trans_b;
    double alpha, beta;
    int64_t m, n, k;
};

/* The enum's index is the clops_transpose value: enum_values = {"none", "transpose", ...}. */
static int gemm_operands(const struct pipeline *pl, const struct pl_step *step,
                         struct gemm_operands *g)
{
    const struct pl_value *ta = step_value(step, "trans_a"), *tb = step_value(step, "trans_b");
    const struct pl_value *alpha = step_value(step, "alpha"), *beta = step_value(step, "beta");
    g->a = step_tensor(pl, step, "a");
    g->b = step_tensor(pl, step, "b");
    g->c = step_tensor(pl, step, "c");
    if (!g->a || !g->b || !g->c || !ta || !tb || !alpha || !beta || g->a->rank != 2 ||
        g->c->rank != 2)
        return -1; /* not the gemm this CLI knows */
    g->trans_a = ta->i != CLOPS_NO_TRANS;
    g->trans_b = tb->i != CLOPS_NO_TRANS;
    g->alpha = alpha->d;
    g->beta = beta->d;
    g->m = g->c->shape[0];
    g->n = g->c->shape[1];
    g->k = g->a->shape[g->trans_a ? 0 : 1];
    int c_index = step_param_index(step, "c");
    g->c_before = step->before != NULL ? step->before[c_index] : NULL;
    return 0;
}

/* Element (i, j) of op(X) for a row-major matrix X. */
static long double op_element(const struct pl_tensor *x, int trans, int64_t i, int64_t j)
{
    int64_t row = trans ? j : i, col = trans ? i : j;
    return host_load_element(x->data, x->dtype, row * x->shape[1] + col);
}

/* The largest |C - R| / (|alpha| sum_k |A_ik B_kj| + |beta C0_ij|) over the elements, with R
 * computed in long double. The denominator is the scale of the terms summed, so the error is
 * comparable to the unit roundoff times a small multiple of K whatever the cancellation: a
 * plain |C - R| / |R| explodes on entries that happen to be near zero. */
static double gemm_reference_error(const struct pipeline *pl, const struct pl_step *step,
                                   char *detail, size_t size)
{
    struct gemm_operands g;
    if (gemm_operands(pl, step, &g) != 0 || g.c_before == NULL)
        return NAN;
    long double *sum = host_xcalloc((size_t)g.n, sizeof *sum);
    long double *scale = host_xcalloc((size_t)g.n, sizeof *scale);
    double worst = 0.0;
    for (int64_t i = 0; i < g.m && !isnan(worst); i++) {
        memset(sum, 0, (size_t)g.n * sizeof *sum);
        memset(scale, 0, (size_t)g.n * sizeof *scale);
        /* i-k-j order walks B and the accumulators contiguously when B is not transposed. */
        for (int64_t k = 0; k < g.k; k++) {
            long double aik = op_element(g.a, g.trans_a, i, k);
            for (int64_t j = 0; j < g.n; j++) {
                long double p = aik * op_element(g.b, g.trans_b, k, j);
                sum[j] += p;
                scale[j] += fabsl(p);
            }
        }
        for (int64_t j = 0; j < g.n; j++) {
            int64_t at = i * g.n + j;
            /* beta = 0 ignores C's prior contents, NaN included (the operator's contract). */
            long double c0 = g.beta != 0.0 ? host_load_element(g.c_before, g.c->dtype, at) : 0.0L;
            long double ref = (long double)g.alpha * sum[j] + (long double)g.beta * c0;
            long double bound =
                fabsl((long double)g.alpha) * scale[j] + fabsl((long double)g.beta * c0);
            long double diff = fabsl(host_load_element(g.c->data, g.c->dtype, at) - ref);
            double rel = (double)(bound > 0.0L ? diff / bound : diff);
            if (isnan(rel) || rel > worst)
                worst = rel;
        }
    }
    free(scale);
    free(sum);
    snprintf(detail, size, "M = %lld, N = %lld, K = %lld", (long long)g.m, (long long)g.n,
             (long long)g.k);
    return worst;
}

/* ---- lu and solve: LAPACK's scaled residuals ---------------------------------------------- */

/* The unit roundoff of the dtype, as LAPACK's xLAMCH('E'). */
static long double unit_roundoff(int32_t dtype)
{
    return dtype == CLOPS_F32 ? ldexpl(1.0L, -24) : ldexpl(1.0L, -53);
}

/* The rows P·A takes from A: P·A's row i is A's row rows[i], from the 1-based interchanges of
 * ipiv applied in order (LAPACK's laswp). NULL when a pivot is out of range. */
static int64_t *pivot_rows(const struct pl_tensor *ipiv, int64_t m, int64_t k)
{
    int64_t *rows = host_xmalloc((size_t)(m > 0 ? m : 1) * sizeof *rows);
    for (int64_t i = 0; i < m; i++)
        rows[i] = i;
    for (int64_t i = 0; i < k; i++) {
        int64_t p = (int64_t)host_load_element(ipiv->data, ipiv->dtype, i) - 1;
        if (p < i || p >= m) {
            free(rows);
            return NULL;
        }
        int64_t swap = rows[i];
        rows[i] = rows[p];
        rows[p] = swap;
    }
    return rows;
}

/* L·U from the factors lu writes over an M x N matrix (L unit lower M x K, U upper K x N). */
static long double *lu_product(const struct pl_tensor *f)
{
    int64_t m = f->shape[0], n = f->shape[1], k = m < n ? m : n;
    long double *p = host_xcalloc((size_t)(m * n > 0 ? m * n : 1), sizeof *p);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t last = i < j ? i : j;
            last = last < k - 1 ? last : k - 1;
            long double sum = 0.0L;
            for (int64_t q = 0; q <= last; q++) {
                long double l = q == i ? 1.0L : host_load_element(f->data, f->dtype, i * n + q);
                sum += l * host_load_element(f->data, f->dtype, q * n + j);
            }
            p[i * n + j] = sum;
        }
    return p;
}

/* The 1-norm (largest column sum) of the row-major M x N matrix `x`, or of its transpose. */
static long double norm1(const void *x, int32_t dtype, int64_t m, int64_t n, int trans)
{
    long double best = 0.0L;
    for (int64_t j = 0; j < (trans ? m : n); j++) {
        long double sum = 0.0L;
        for (int64_t i = 0; i < (trans ? n : m); i++)
            sum += fabsl(host_load_element(x, dtype, trans ? j * n + i : i * n + j));
        best = sum > best ? sum : best;
    }
    return best;
}

/* LAPACK's xGET01: ||P·A - L·U||_1 / (N ||A||_1 eps), about 1 for a backward-stable LU. */
static double lu_residual(const struct pipeline *pl, const struct pl_step *step, char *detail,
                          size_t size)
{
    const struct pl_tensor *f = step_tensor(pl, step, "a"), *ipiv = step_tensor(pl, step, "ipiv");
    const struct pl_tensor *info = step_tensor(pl, step, "info");
    const void *a0 = step->before != NULL ? step->before[step_param_index(step, "a")] : NULL;
    if (f == NULL || ipiv == NULL || a0 == NULL || f->rank != 2)
        return NAN;
    int64_t m = f->shape[0], n = f->shape[1], k = m < n ? m : n;
    int64_t *rows = pivot_rows(ipiv, m, k);
    if (rows == NULL) {
        snprintf(detail, size, "a pivot is out of range");
        return NAN;
    }
    long double *lu = lu_product(f), worst = 0.0L;
    for (int64_t j = 0; j < n; j++) {
        long double sum = 0.0L;
        for (int64_t i = 0; i < m; i++)
            sum += fabsl(host_load_element(a0, f->dtype, rows[i] * n + j) - lu[i * n + j]);
        worst = sum > worst ? sum : worst;
    }
    long double anorm = norm1(a0, f->dtype, m, n, 0), eps = unit_roundoff(f->dtype);
    free(lu);
    free(rows);
    snprintf(detail, size, "|PA-LU|_1 = %.2Le, info = %d", worst,
             info != NULL ? (int)host_load_element(info->data, info->dtype, 0) : 0);
    if (anorm == 0.0L)
        return worst == 0.0L ? 0.0 : (double)(1.0L / eps);
    return (double)(worst / ((long double)(n > 0 ? n : 1) * anorm * eps));
}

/* A of a lu_solve step, rebuilt from its factors as Pᵀ·L·U: the residual then measures the
 * triangular solves, and a lu check on the factoring step measures the rest. */
static long double *matrix_of_factors(const struct pl_tensor *f, const struct pl_tensor *ipiv)
{
    int64_t n = f->shape[0];
    int64_t *rows = pivot_rows(ipiv, n, n);
    if (rows == NULL)
        return NULL;
    long double *lu = lu_product(f), *a = host_xmalloc((size_t)(n * n > 0 ? n * n : 1) * sizeof *a);
    for (int64_t i = 0; i < n; i++)
        memcpy(&a[rows[i] * n], &lu[i * n], (size_t)n * sizeof *a);
    free(lu);
    free(rows);
    return a;
}

/* LAPACK's xGET02 with the brief's N: max over the columns j of
 * ||B_j - op(A) X_j||_1 / (N ||op(A)||_1 ||X_j||_1 eps). A is solve's `a` before the step, or
 * lu_solve's Pᵀ·L·U; B is `b` before the step and X `b` after it. */
static double solve_residual(const struct pipeline *pl, const struct pl_step *step, char *detail,
                             size_t size)
{
    int solve = strcmp(step->op->name, "solve") == 0;
    const struct pl_tensor *x = step_tensor(pl, step, "b"), *ipiv = step_tensor(pl, step, "ipiv");
    const struct pl_tensor *f = step_tensor(pl, step, solve ? "a" : "lu");
    const void *b0 = step->before != NULL ? step->before[step_param_index(step, "b")] : NULL;
    if (x == NULL || f == NULL || ipiv == NULL || b0 == NULL || x->rank != 2)
        return NAN;
    int64_t n = f->shape[0], nrhs = x->shape[1];
    int trans = !solve && step_value(step, "trans")->i != CLOPS_NO_TRANS;
    long double *a = NULL;
    if (solve) {
        const void *a0 = step->before[step_param_index(step, "a")];
        a = host_xmalloc((size_t)(n * n > 0 ? n * n : 1) * sizeof *a);
        for (int64_t i = 0; i < n * n; i++)
            a[i] = host_load_element(a0, f->dtype, i);
    } else if ((a = matrix_of_factors(f, ipiv)) == NULL) {
        snprintf(detail, size, "a pivot is out of range");
        return NAN;
    }
    long double anorm = 0.0L, worst = 0.0L, eps = unit_roundoff(x->dtype);
    for (int64_t j = 0; j < n; j++) {
        long double sum = 0.0L;
        for (int64_t i = 0; i < n; i++)
            sum += fabsl(trans ? a[j * n + i] : a[i * n + j]);
        anorm = sum > anorm ? sum : anorm;
    }
    for (int64_t c = 0; c < nrhs; c++) {
        long double rnorm = 0.0L, xnorm = 0.0L;
        for (int64_t i = 0; i < n; i++) {
            long double r = host_load_element(b0, x->dtype, i * nrhs + c);
            for (int64_t q = 0; q < n; q++)
                r -= (trans ? a[q * n + i] : a[i * n + q]) *
                     host_load_element(x->data, x->dtype, q * nrhs + c);
            rnorm += fabsl(r);
            xnorm += fabsl(host_load_element(x->data, x->dtype, i * nrhs + c));
        }
        long double denominator = (long double)n * anorm * xnorm * eps;
        long double resid = denominator > 0.0L ? rnorm / denominator
                            : rnorm == 0.0L    ? 0.0L
                                               : 1.0L / eps;
        worst = isnan(resid) || resid > worst ? resid : worst;
    }
    free(a);
    snprintf(detail, size, "N = %lld, %lld right-hand side%s", (long long)n, (long long)nrhs,
             nrhs == 1 ? "" : "s");
    return (double)worst;
}

/* ---- mandelbrot: the host's scalar reference, to the bit ---------------------------------- */

/* FNV-1a over `bytes`, continuing from `hash`. */
static uint32_t fnv1a(uint32_t hash, const void *bytes, size_t size)
{
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ ((const uint8_t *)bytes)[i]) * 16777619u;
    return hash;
}

/* The number of pixels whose count or colour differs from mandel_count()/mandel_colour(); the
 * detail gives a checksum of the counts, so a test can pin an image down. */
static double mandelbrot_mismatches(const struct pipeline *pl, const struct pl_step *step,
                                    char *detail, size_t size)
{
    const struct pl_tensor *it = step_tensor(pl, step, "iterations");
    const struct pl_tensor *image = step_tensor(pl, step, "image");
    if (it == NULL || it->rank != 2)
        return NAN;
    struct mandel_view v = {
        .center_x = step_value(step, "center_x")->d,
        .center_y = step_value(step, "center_y")->d,
        .scale = step_value(step, "scale")->d,
        .max_iterations = (uint32_t)step_value(step, "max_iterations")->i,
        .f64 = step_value(step, "precision")->i == 1,
    };
    int64_t h = it->shape[0], w = it->shape[1], wrong = 0;
    const uint32_t *counts = it->data;
    const uint8_t *rgba = image != NULL ? image->data : NULL;
    uint32_t hash = 2166136261u;
    for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < w; j++) {
            uint32_t n = mandel_count(i, j, h, w, &v), got = counts[i * w + j];
            uint8_t colour[4];
            mandel_colour(n, v.max_iterations, colour);
            uint8_t le[4] = {(uint8_t)got, (uint8_t)(got >> 8), (uint8_t)(got >> 16),
                             (uint8_t)(got >> 24)};
            hash = fnv1a(hash, le, 4);
            wrong += got != n || (rgba != NULL && memcmp(&rgba[(i * w + j) * 4], colour, 4) != 0);
        }
    snprintf(detail, size, "%lld of %lld pixels differ, counts FNV-1a %08x", (long long)wrong,
             (long long)(h * w), hash);
    return (double)wrong;
}

/* ---- work per step ------------------------------------------------------------------------ */

static double elements_of(const struct pl_tensor *t)
{
    return t != NULL ? (double)t->elements : 0.0;
}

static double bytes_of(const struct pl_tensor *t)
{
    return t != NULL ? (double)t->elements * (double)host_dtype_size(t->dtype) : 0.0;
}

static struct step_work gemm_work(const struct pipeline *pl, const struct pl_step *step)
{
    struct gemm_operands g;
    if (gemm_operands(pl, step, &g) != 0)
        return (struct step_work){0};
    return (struct step_work){2.0 * (double)g.m * (double)g.n * (double)g.k, 1e9, "GFLOP/s"};
}

/* getrf: 2 (M N K - (M + N) K^2 / 2 + K^3 / 3), 2/3 N^3 when square. */
static double getrf_flops(const struct pl_tensor *a)
{
    double m = (double)a->shape[0], n = (double)a->shape[1], k = m < n ? m : n;
    return 2.0 * (m * n * k - (m + n) * k * k / 2.0 + k * k * k / 3.0);
}

static struct step_work lu_work(const struct pipeline *pl, const struct pl_step *step)
{
    const struct pl_tensor *a = step_tensor(pl, step, "a");
    return (struct step_work){a != NULL && a->rank == 2 ? getrf_flops(a) : 0.0, 1e9, "GFLOP/s"};
}

/* getrs: two triangular solves per right-hand side, 2 N^2 NRHS; solve adds the factoring. */
static struct step_work solve_work(const struct pipeline *pl, const struct pl_step *step)
{
    int solve = strcmp(step->op->name, "solve") == 0;
    const struct pl_tensor *a = step_tensor(pl, step, solve ? "a" : "lu");
    const struct pl_tensor *b = step_tensor(pl, step, "b");
    if (a == NULL || b == NULL || a->rank != 2 || b->rank != 2)
        return (struct step_work){0};
    double n = (double)a->shape[0];
    double flops = 2.0 * n * n * (double)b->shape[1] + (solve ? getrf_flops(a) : 0.0);
    return (struct step_work){flops, 1e9, "GFLOP/s"};
}

/* Memory-bound operators: the bytes read and written once. */
static struct step_work memory_work(const struct pipeline *pl, const struct pl_step *step)
{
    const char *out = strcmp(step->op->name, "reduce") == 0 ? "out" : "y";
    double bytes = bytes_of(step_tensor(pl, step, "x")) + bytes_of(step_tensor(pl, step, out));
    return (struct step_work){bytes, 1e9, "GB/s"};
}

static struct step_work mandelbrot_work(const struct pipeline *pl, const struct pl_step *step)
{
    return (struct step_work){elements_of(step_tensor(pl, step, "iterations")), 1e6, "Mpixel/s"};
}

/* ---- tables ------------------------------------------------------------------------------- */

static const struct check_kind check_kinds[] = {
    {"gemm_reference", {"gemm", NULL}, 0.0, 0, gemm_reference_error},
    /* LAPACK's test programs pass scaled residuals below 30. */
    {"lu_residual", {"lu", NULL}, 30.0, 0, lu_residual},
    {"solve_residual", {"solve", "lu_solve"}, 30.0, 0, solve_residual},
    {"mandelbrot_reference", {"mandelbrot", NULL}, 0.0, 1, mandelbrot_mismatches},
};

static const struct {
    const char *op;
    struct step_work (*work)(const struct pipeline *pl, const struct pl_step *step);
} operators[] = {
    {"gemm", gemm_work},
    {"lu", lu_work},
    {"solve", solve_work},
    {"lu_solve", solve_work},
    {"reduce", memory_work},
    {"transpose", memory_work},
    {"mandelbrot", mandelbrot_work},
};

const struct check_kind *check_kind_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof check_kinds / sizeof check_kinds[0]; i++)
        if (strcmp(check_kinds[i].name, name) == 0)
            return &check_kinds[i];
    return NULL;
}

int check_kind_applies(const struct check_kind *kind, const char *op)
{
    for (int i = 0; i < 2; i++)
        if (kind->ops[i] != NULL && strcmp(kind->ops[i], op) == 0)
            return 1;
    return 0;
}

void check_kind_names(char *out, size_t size)
{
    out[0] = '\0';
    for (size_t i = 0; i < sizeof check_kinds / sizeof check_kinds[0]; i++)
        host_append(out, size, ", ", check_kinds[i].name);
}

/* Generous next to the roundoff the error measure sees (a few units of eps * sqrt(K)) yet far
 * below what a wrong tile or a missed edge produces (order 1). */
double check_default_tolerance(int32_t dtype)
{
    return dtype == CLOPS_F32 ? 1e-4 : 1e-10;
}

/* The operator's row of `operators`, or -1 for one this CLI knows nothing more about. */
static int operator_row(const struct pl_step *step)
{
    for (size_t i = 0; step->op != NULL && i < sizeof operators / sizeof operators[0]; i++)
        if (strcmp(operators[i].op, step->op->name) == 0)
            return (int)i;
    return -1;
}

struct step_work step_work(const struct pipeline *pl, const struct pl_step *step)
{
    int row = operator_row(step);
    return row >= 0 ? operators[row].work(pl, step) : (struct step_work){0};
}
