/* gemm_check.c — the gemm operator's check step (gemm_impl.h): every check of its arguments,
 * and the plan that reduces every layout to one row-major-C kernel. */
#include <ctype.h>

#include "gemm_impl.h"

/* op(X) of a stored matrix: its extents and the strides of its rows and columns. */
struct op_view {
    int64_t rows, cols, row_stride, col_stride;
};

static struct op_view op_view(const struct clops_tensor *t, int32_t trans)
{
    int32_t r = trans ? 1 : 0;
    struct op_view v = {t->shape[r], t->shape[1 - r], t->strides[r], t->strides[1 - r]};
    return v;
}

static struct op_view transposed(struct op_view v)
{
    struct op_view t = {v.cols, v.rows, v.col_stride, v.row_stride};
    return t;
}

/* Kernel indices are 32-bit ints with room for a tile past the end. */
static const int64_t gemm_extent_max = INT32_MAX / 2;

/* ---- Validation ------------------------------------------------------------------------------ */

static const char *trans_name(int32_t trans)
{
    return trans ? "transpose" : "none";
}

static int32_t check_tensors(const struct pool_device *dev, const struct clops_tensor *a,
                             const struct clops_tensor *b, const struct clops_tensor *c)
{
    const struct clops_tensor *t[3] = {a, b, c};
    const char *const names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        int32_t status = tensor_check(t[i], gemm_op_name, names[i], GEMM_DTYPES, 2, dev);
        if (status != CLOPS_OK)
            return status;
    }
    for (int i = 1; i < 3; i++)
        if (t[i]->dtype != a->dtype)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter '%s' has dtype %s but 'a' has %s; a, b and c must "
                           "have one dtype",
                           gemm_op_name, names[i], dtype_name(t[i]->dtype), dtype_name(a->dtype));
    if (dev != NULL && a->dtype == CLOPS_F64 && !pool_device_info(dev)->fp64)
        return err_set(CLOPS_ERR_UNSUPPORTED,
                       "%s: parameter 'a' is f64 but device '%s' has no double precision "
                       "(cl_khr_fp64)",
                       gemm_op_name, pool_device_info(dev)->name);
    return CLOPS_OK;
}

static int32_t check_trans(const char *param, int32_t trans)
{
    if (trans == CLOPS_NO_TRANS || trans == CLOPS_TRANS)
        return CLOPS_OK;
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter '%s' = %d; expected 0 (none) or 1 (transpose)", gemm_op_name,
                   param, (int)trans);
}

static int32_t check_shapes(const struct clops_tensor *a, const struct clops_tensor *b,
                            const struct clops_tensor *c, int32_t trans_a, int32_t trans_b)
{
    struct op_view va = op_view(a, trans_a), vb = op_view(b, trans_b);
    if (vb.rows != va.cols)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'b' has op(B) of shape %lldx%lld (trans_b = %s) but "
                       "K = %lld from op(A) requires %lldxN",
                       gemm_op_name, (long long)vb.rows, (long long)vb.cols, trans_name(trans_b),
                       (long long)va.cols, (long long)va.cols);
    if (c->shape[0] != va.rows || c->shape[1] != vb.cols)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'c' has shape %lldx%lld but op(A) op(B) is %lldx%lld "
                       "(M from 'a', N from 'b')",
                       gemm_op_name, (long long)c->shape[0], (long long)c->shape[1],
                       (long long)va.rows, (long long)vb.cols);
    const int64_t extents[3] = {va.rows, vb.cols, va.cols};
    const char *const names[3] = {"M", "N", "K"};
    for (int i = 0; i < 3; i++)
        if (extents[i] > gemm_extent_max)
            return err_set(CLOPS_ERR_UNSUPPORTED,
                           "%s: %s = %lld exceeds the kernel's 32-bit indexing (at most %lld)",
                           gemm_op_name, names[i], (long long)extents[i],
                           (long long)gemm_extent_max);
    return CLOPS_OK;
}

/* A stored matrix with a unit stride must have its other stride, the leading dimension, at
 * least the extent it steps over (BLAS: lda >= max(1, rows)); smaller means overlapping rows or
 * columns, almost surely a wrong ld. Inputs may also be general strided views (the kernel takes
 * any strides); the output C needs a unit stride. `dims` names the extents, e.g. {"M", "K"}. */
static int32_t check_leading_dim(const struct clops_tensor *t, const char *param, const char *ld,
                                 const char *const dims[2], int32_t is_output)
{
    if (tensor_is_row_major(t) || tensor_is_column_major(t))
        return CLOPS_OK;
    const long long s0 = (long long)t->strides[0], s1 = (long long)t->strides[1];
    const char matrix = (char)toupper((unsigned char)param[0]); /* 'a' is A in the text */
    if (s1 == 1)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' strides[0] (%s) = %lld is smaller than %s = %lld "
                       "(row-major %c)",
                       gemm_op_name, param, ld, s0, dims[1], (long long)t->shape[1], matrix);
    if (s0 == 1)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' strides[1] (%s) = %lld is smaller than %s = %lld "
                       "(column-major %c)",
                       gemm_op_name, param, ld, s1, dims[0], (long long)t->shape[0], matrix);
    if (!is_output)
        return CLOPS_OK;
    return err_set(CLOPS_ERR_UNSUPPORTED,
                   "%s: parameter '%s' has strides {%lld, %lld}; expected one of them to be 1 "
                   "(a row- or column-major C)",
                   gemm_op_name, param, s0, s1);
}

static int32_t check_layouts(const struct clops_tensor *a, const struct clops_tensor *b,
                             const struct clops_tensor *c, int32_t trans_a, int32_t trans_b)
{
    static const char *const a_dims[2][2] = {{"M", "K"}, {"K", "M"}};
    static const char *const b_dims[2][2] = {{"K", "N"}, {"N", "K"}};
    static const char *const c_dims[2] = {"M", "N"};
    int32_t status = check_leading_dim(a, "a", "lda", a_dims[trans_a], 0);
    if (status == CLOPS_OK)
        status = check_leading_dim(b, "b", "ldb", b_dims[trans_b], 0);
    if (status == CLOPS_OK)
        status = check_leading_dim(c, "c", "ldc", c_dims, 1);
    return status;
}

/* C is written while A and B are read: it must share no element with them (A and B may share:
 * gemm(A, A^T)). Blocks of one matrix that share none, as LAPACK's blocked codes pass, are fine. */
static int32_t check_no_alias(const struct clops_tensor *a, const struct clops_tensor *b,
                              const struct clops_tensor *c)
{
    const struct tensor_use uses[3] = {{a, "a", 0}, {b, "b", 0}, {c, "c", 1}};
    return tensor_check_disjoint(gemm_op_name, uses, 3, NULL);
}

/* C is op(A)'s rows by op(B)'s columns, of their dtype (for check_sized). */
static void expect_c(struct op_call *call, const struct clops_tensor *a,
                     const struct clops_tensor *b, int32_t trans_a, int32_t trans_b)
{
    const int64_t shape[2] = {op_view(a, trans_a).rows, op_view(b, trans_b).cols};
    call_expect(call, 2, a->dtype, 2, shape);
}

/* Every check, before anything touches the device; fills the plan on success. */
static int32_t gemm_check_args(struct op_call *call, const struct clops_tensor *a,
                               const struct clops_tensor *b, const struct clops_tensor *c,
                               int32_t trans_a, int32_t trans_b, struct gemm_plan *plan)
{
    int32_t status = check_tensors(call->dev, a, b, c);
    if (status == CLOPS_OK)
        status = check_trans("trans_a", trans_a);
    if (status == CLOPS_OK)
        status = check_trans("trans_b", trans_b);
    if (status == CLOPS_OK)
        expect_c(call, a, b, trans_a, trans_b);
    if (status == CLOPS_OK)
        status = check_shapes(a, b, c, trans_a, trans_b);
    if (status == CLOPS_OK)
        status = check_layouts(a, b, c, trans_a, trans_b);
    if (status == CLOPS_OK)
        status = check_no_alias(a, b, c);
    if (status != CLOPS_OK)
        return status;

    /* The kernel's left and right operands: op(A) op(B), or op(B)^T op(A)^T for C^T. */
    struct op_view left = op_view(a, trans_a), right = op_view(b, trans_b);
    *plan = (struct gemm_plan){.dtype = a->dtype,
                               .ka = a,
                               .kb = b,
                               .c = c,
                               .ka_param = "a",
                               .kb_param = "b",
                               .ldc = c->strides[0]};
    if (!tensor_is_row_major(c)) {
        struct op_view bt = transposed(right);
        right = transposed(left);
        left = bt;
        plan->ka = b;
        plan->kb = a;
        plan->ka_param = "b";
        plan->kb_param = "a";
        plan->ldc = c->strides[1];
    }
    plan->m = left.rows;
    plan->n = right.cols;
    plan->k = left.cols;
    plan->ka_si = left.row_stride;
    plan->ka_sk = left.col_stride;
    plan->kb_sk = right.row_stride;
    plan->kb_sj = right.col_stride;
    return CLOPS_OK;
}

static int32_t check_precision(int32_t precision, int32_t dtype)
{
    if (precision < GEMM_FP32 || precision > GEMM_TF32)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'precision' = %d; expected 0 (fp32), 1 (3xtf32) or 2 (tf32)",
                       gemm_op_name, (int)precision);
    if (precision != GEMM_FP32 && dtype != CLOPS_F32)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'precision' = %s applies to f32 operands, but 'a' is %s "
                       "(use fp32, the default, which means the dtype's own precision)",
                       gemm_op_name, precision == GEMM_TF32 ? "tf32" : "3xtf32", dtype_name(dtype));
    return CLOPS_OK;
}

int32_t gemm_check(struct op_call *call)
{
    const union op_value *v = call->values;
    struct gemm_plan *p = call->plan;
    int32_t status = gemm_check_args(call, v[P_A].tensor, v[P_B].tensor, v[P_C].tensor,
                                     v[P_TRANS_A].i32, v[P_TRANS_B].i32, p);
    if (status != CLOPS_OK)
        return status;
    status = check_precision(v[P_PRECISION].i32, p->dtype);
    if (status != CLOPS_OK)
        return status;
    p->precision = v[P_PRECISION].i32;
    p->alpha = v[P_ALPHA].f64;
    p->beta = v[P_BETA].f64;
    /* BLAS: alpha = 0 reads neither A nor B (NaN in them does not leak into C). */
    if (p->alpha == 0.0)
        p->k = 0;
    /* Nothing to compute: an empty C, or C = 1 * C. */
    if (p->m == 0 || p->n == 0 || (p->k == 0 && p->beta == 1.0)) {
        call->nothing_to_do = 1;
        return CLOPS_OK;
    }
    /* A and B are neither staged nor read when k = 0 (the kernel then takes NULL buffers); C
     * is read by the kernel only for beta != 0, and written back, elements only. */
    if (p->k == 0)
        call->stage[P_A] = call->stage[P_B] = STAGE_NONE;
    if (p->beta == 0.0)
        call->stage[P_C] = STAGE_OUT;
    return CLOPS_OK;
}
