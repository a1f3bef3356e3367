/* operators.c — what the CLI knows about particular operators beyond their descriptors: how
 * many flops a step performs, and how to verify its result on the host in higher precision.
 * Adding a check is a function and one line in `check_kinds`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "util.h"

static long double load(const void *data, int32_t dtype, int64_t index)
{
    switch (dtype) {
    case CLOPS_F32: return ((const float *)data)[index];
    case CLOPS_F64: return ((const double *)data)[index];
    case CLOPS_I32: return ((const int32_t *)data)[index];
    case CLOPS_U32: return ((const uint32_t *)data)[index];
    case CLOPS_U8: return ((const uint8_t *)data)[index];
    case CLOPS_I64: return (long double)((const int64_t *)data)[index];
    default: return NAN;
    }
}

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

static double gemm_flops(const struct pipeline *pl, const struct pl_step *step)
{
    struct gemm_operands g;
    if (gemm_operands(pl, step, &g) != 0)
        return 0.0;
    return 2.0 * (double)g.m * (double)g.n * (double)g.k;
}

/* Element (i, j) of op(X) for a row-major matrix X. */
static long double op_element(const struct pl_tensor *x, int trans, int64_t i, int64_t j)
{
    int64_t row = trans ? j : i, col = trans ? i : j;
    return load(x->data, x->dtype, row * x->shape[1] + col);
}

/* The largest |C - R| / (|alpha| sum_k |A_ik B_kj| + |beta C0_ij|) over the elements, with R
 * computed in long double. The denominator is the scale of the terms summed, so the error is
 * comparable to the unit roundoff times a small multiple of K whatever the cancellation: a
 * plain |C - R| / |R| explodes on entries that happen to be near zero. */
static double gemm_reference_error(const struct pipeline *pl, const struct pl_step *step)
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
            long double c0 = g.beta != 0.0 ? load(g.c_before, g.c->dtype, at) : 0.0L;
            long double ref = (long double)g.alpha * sum[j] + (long double)g.beta * c0;
            long double bound =
                fabsl((long double)g.alpha) * scale[j] + fabsl((long double)g.beta * c0);
            long double diff = fabsl(load(g.c->data, g.c->dtype, at) - ref);
            double rel = (double)(bound > 0.0L ? diff / bound : diff);
            if (isnan(rel) || rel > worst)
                worst = rel;
        }
    }
    free(scale);
    free(sum);
    return worst;
}

/* ---- tables ------------------------------------------------------------------------------- */

static const struct check_kind check_kinds[] = {
    {"gemm_reference", "gemm", gemm_reference_error},
};

static const struct {
    const char *op;
    double (*flops)(const struct pipeline *pl, const struct pl_step *step);
} flop_counts[] = {
    {"gemm", gemm_flops},
};

const struct check_kind *check_kind_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof check_kinds / sizeof check_kinds[0]; i++)
        if (strcmp(check_kinds[i].name, name) == 0)
            return &check_kinds[i];
    return NULL;
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

double step_flops(const struct pipeline *pl, const struct pl_step *step)
{
    for (size_t i = 0; step->op != NULL && i < sizeof flop_counts / sizeof flop_counts[0]; i++)
        if (strcmp(flop_counts[i].op, step->op->name) == 0)
            return flop_counts[i].flops(pl, step);
    return 0.0;
}
