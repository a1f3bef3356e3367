/* solve.c — the solve operator: LAPACK's gesv, A = P·L·U (getrf) and then A·X = B solved with
 * the factors (getrs), on the LU engine (getrf.h). */
#include <stdlib.h>

#include "getrf.h"

static const char op_name[] = "solve";

static int32_t solve_check_args(const struct pool_device *dev, const struct clops_tensor *a,
                                const struct clops_tensor *b, const struct clops_tensor *ipiv,
                                const struct clops_tensor *info)
{
    int32_t status = lu_check_matrix(a, op_name, "a", dev);
    if (status == CLOPS_OK)
        status = lu_check_square(a, op_name, "a");
    if (status == CLOPS_OK)
        status = lu_check_rhs(dev, a, "a", b, op_name);
    if (status == CLOPS_OK)
        status = tensor_check_i32_vector(ipiv, op_name, "ipiv", a->shape[0], 0, dev);
    if (status == CLOPS_OK)
        status = tensor_check_i32_vector(info, op_name, "info", 1, 1, dev);
    if (status != CLOPS_OK)
        return status;
    const struct tensor_use uses[4] = {
        {a, "a", 1}, {b, "b", 1}, {ipiv, "ipiv", 1}, {info, "info", 1}};
    return tensor_check_disjoint(op_name, uses, 4, NULL);
}

/* gesv: a, ipiv and info are written whatever info says; b only when A is nonsingular. Host
 * outputs are written last, once every device step has succeeded. */
static int32_t solve_run(struct lu_ctx *ctx, const struct clops_tensor *a,
                         const struct clops_tensor *b, const struct clops_tensor *ipiv,
                         const struct clops_tensor *info)
{
    const int64_t n = a->shape[0];
    int32_t *piv = malloc((size_t)(n > 0 ? n : 1) * sizeof *piv);
    if (piv == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", op_name);
    int32_t inf = 0;
    struct lu_staged sa, sb = {0};
    int32_t status = lu_stage(ctx, a, "a", &sa);
    if (status == CLOPS_OK)
        status = lu_factor(ctx, &sa.m, LU_PIVOTING_PARTIAL, piv, &inf);
    if (status == CLOPS_OK && inf == 0)
        status = lu_solve_tensor(ctx, &sa.m, piv, b, 0, &sb);
    if (status == CLOPS_OK)
        status = lu_unstage(ctx, &sa);
    if (status == CLOPS_OK)
        status = lu_write_pivots(ctx, ipiv, piv, n, info, inf, 0);
    if (status == CLOPS_OK)
        status = lu_ctx_finish(ctx);
    if (status == CLOPS_OK) {
        lu_commit(&sa);
        lu_commit(&sb);
        lu_write_pivots(ctx, ipiv, piv, n, info, inf, 1);
    }
    lu_staged_release(&sb);
    lu_staged_release(&sa);
    free(piv);
    return status;
}

static int32_t solve_entry(struct clops_pool *pool, const struct clops_tensor *a,
                           const struct clops_tensor *b, const struct clops_tensor *ipiv,
                           const struct clops_tensor *info)
{
    err_clear();
    if (pool == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'pool' is NULL", op_name);
    struct lu_ctx ctx;
    lu_ctx_open(&ctx, pool, op_name);
    int32_t status = solve_check_args(ctx.dev, a, b, ipiv, info);
    if (status == CLOPS_OK)
        status = lu_ctx_init(&ctx, a->dtype);
    if (status == CLOPS_OK)
        status = solve_run(&ctx, a, b, ipiv, info);
    return lu_ctx_close(&ctx, status);
}

_Static_assert(_Generic(&solve_entry, clops_solve_fn : 1, default : 0),
               "solve_entry must have the ABI's clops_solve_fn prototype");

static const struct clops_param solve_params[] = {
    {"a", CLOPS_PARAM_TENSOR_INOUT, LU_DTYPES, NULL, NULL,
     "A, rank 2, N x N, f32 or f64, row- or column-major: overwritten by its LU factors, as "
     "lu's."},
    {"b", CLOPS_PARAM_TENSOR_INOUT, LU_DTYPES, NULL, NULL,
     "B, rank 2, N x NRHS, a's dtype, row- or column-major: overwritten by X (left untouched "
     "when A is singular)."},
    {"ipiv", CLOPS_PARAM_TENSOR_OUT, CLOPS_DTYPE_BIT(CLOPS_I32), NULL, NULL,
     "i32, rank 1, at least N elements: the first N receive the 1-based pivots, as lu's."},
    {"info", CLOPS_PARAM_TENSOR_OUT, CLOPS_DTYPE_BIT(CLOPS_I32), NULL, NULL,
     "i32, rank 1, 1 element: 0, or k > 0 when U(k, k) is exactly zero (A singular)."},
};

const struct clops_op op_solve = {
    .struct_size = sizeof(struct clops_op),
    .version = 1,
    .name = op_name,
    .summary = "Solves A·X = B through LU with partial pivoting (LAPACK gesv), f32 or f64.",
    .doc = "Factors the N x N matrix A as P·A = L·U exactly as the lu operator does (a, ipiv and "
           "info receive the same results), then, when info = 0, overwrites the N x NRHS matrix B "
           "with X = A^-1 B: B's rows are interchanged as ipiv says, then L and U are solved in "
           "blocks of NB rows, each diagonal block inverted by a kernel and applied with a GEMM, "
           "the rows still to solve updated by another GEMM. When info = k > 0, U(k,k) is exactly "
           "zero, A is singular, b is left untouched and the call still returns CLOPS_OK, as "
           "LAPACK's gesv.\n"
           "\n"
           "Errors: CLOPS_ERR_INVALID_ARGUMENT, naming the parameter, for a NULL or malformed "
           "tensor, a non-square a, b with a row count other than N or another dtype than a, ipiv "
           "shorter than N, info not of 1 element, a leading dimension too small, or tensors that "
           "overlap in memory. CLOPS_ERR_UNSUPPORTED for other dtypes (a, b: f32/f64; ipiv, info: "
           "i32), f64 without device support, a matrix with no unit stride. A rejected call "
           "writes nothing.",
    .param_count = (int32_t)(sizeof solve_params / sizeof solve_params[0]),
    .params = solve_params,
    .param_size = sizeof(struct clops_param),
    .entry = (void (*)(void))solve_entry,
};
