/* getrf_check.c — the argument checks that lu, solve and lu_solve share (getrf.h). */
#include "getrf.h"

/* Kernel indices are 32-bit ints (gemm.cl's limit). */
static const int64_t lu_extent_max = INT32_MAX / 2;

/* LAPACK's lda >= max(1, M): the matrix is written in place, so rows or columns that overlap
 * (a leading dimension too small) would corrupt each other. */
static int32_t check_layout(const struct clops_tensor *t, const char *op, const char *param)
{
    if (tensor_is_row_major(t) || tensor_is_column_major(t))
        return CLOPS_OK;
    const long long s0 = (long long)t->strides[0], s1 = (long long)t->strides[1];
    if (s1 == 1)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' strides[0] (the leading dimension) = %lld is smaller "
                       "than its %lld columns (row-major)",
                       op, param, s0, (long long)t->shape[1]);
    if (s0 == 1)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' strides[1] (the leading dimension) = %lld is smaller "
                       "than its %lld rows (column-major)",
                       op, param, s1, (long long)t->shape[0]);
    return err_set(CLOPS_ERR_UNSUPPORTED,
                   "%s: parameter '%s' has strides {%lld, %lld}; expected one of them to be 1 "
                   "(a row- or column-major matrix)",
                   op, param, s0, s1);
}

int32_t lu_check_matrix(const struct clops_tensor *t, const char *op, const char *param,
                        const struct pool_device *dev)
{
    int32_t status = tensor_check(t, op, param, LU_DTYPES, 2, dev);
    if (status != CLOPS_OK)
        return status;
    if (dev != NULL && t->dtype == CLOPS_F64 && !pool_device_info(dev)->fp64)
        return err_set(CLOPS_ERR_UNSUPPORTED,
                       "%s: parameter '%s' is f64 but device '%s' has no double precision "
                       "(cl_khr_fp64)",
                       op, param, pool_device_info(dev)->name);
    for (int i = 0; i < 2; i++)
        if (t->shape[i] > lu_extent_max)
            return err_set(CLOPS_ERR_UNSUPPORTED,
                           "%s: parameter '%s' has shape[%d] = %lld, over the kernels' 32-bit "
                           "indexing (at most %lld)",
                           op, param, i, (long long)t->shape[i], (long long)lu_extent_max);
    return check_layout(t, op, param);
}

int32_t lu_check_square(const struct clops_tensor *t, const char *op, const char *param)
{
    if (t->shape[0] == t->shape[1])
        return CLOPS_OK;
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter '%s' has shape %lldx%lld; expected a square N x N matrix", op,
                   param, (long long)t->shape[0], (long long)t->shape[1]);
}

int32_t lu_check_rhs(const struct pool_device *dev, const struct clops_tensor *a,
                     const char *a_param, const struct clops_tensor *b, const char *op)
{
    int32_t status = lu_check_matrix(b, op, "b", dev);
    if (status != CLOPS_OK)
        return status;
    if (b->dtype != a->dtype)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'b' has dtype %s but '%s' has %s; they must match", op,
                       dtype_name(b->dtype), a_param, dtype_name(a->dtype));
    if (b->shape[0] != a->shape[0])
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'b' has %lld rows but '%s' is %lldx%lld; expected N = %lld "
                       "rows",
                       op, (long long)b->shape[0], a_param, (long long)a->shape[0],
                       (long long)a->shape[0], (long long)a->shape[0]);
    return CLOPS_OK;
}
