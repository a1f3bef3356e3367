/* solve.c — the solve (LAPACK gesv: factor, then solve A·X = B) and lu_solve (getrs: solve with
 * the factors and pivots of lu) operators, on the blocked machinery of lu.c (lu.h). */
#include <stdlib.h>

#include "lu.h"

/* ---- Checks shared by both operators --------------------------------------------------------- */

static int32_t check_square(const struct clops_tensor *t, const char *op, const char *param)
{
    if (t->shape[0] == t->shape[1])
        return CLOPS_OK;
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter '%s' has shape %lldx%lld; expected a square N x N matrix", op,
                   param, (long long)t->shape[0], (long long)t->shape[1]);
}

/* b: N x NRHS of a's dtype, where N comes from `a_param`. */
static int32_t check_rhs(const struct pool_device *dev, const struct clops_tensor *a,
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

static int32_t record(struct clops_pool *pool, const char *op, int32_t status, int64_t device_ns)
{
    pool_record_call(pool, op, status, device_ns);
    return status;
}

/* Stages b into *sb, solves with the factors, writes b back on the device or downloads it for
 * the caller to commit (and release) once the call has succeeded. */
static int32_t solve_rhs(struct lu_ctx *ctx, const struct lu_matrix *lu, const int32_t *ipiv,
                         const struct clops_tensor *b, int32_t trans, struct lu_staged *sb)
{
    int32_t status = lu_stage(ctx, b, "b", sb);
    if (status == CLOPS_OK)
        status = lu_solve_factored(ctx, lu, ipiv, &sb->m, trans);
    if (status == CLOPS_OK)
        status = lu_unstage(ctx, sb);
    return status;
}

/* ---- solve ----------------------------------------------------------------------------------- */

static const char solve_name[] = "solve";

static int32_t solve_check_args(const struct pool_device *dev, const struct clops_tensor *a,
                                const struct clops_tensor *b, const struct clops_tensor *ipiv,
                                const struct clops_tensor *info)
{
    int32_t status = lu_check_matrix(a, solve_name, "a", dev);
    if (status == CLOPS_OK)
        status = check_square(a, solve_name, "a");
    if (status == CLOPS_OK)
        status = check_rhs(dev, a, "a", b, solve_name);
    if (status == CLOPS_OK)
        status = lu_check_i32_vector(ipiv, solve_name, "ipiv", a->shape[0], 0, dev);
    if (status == CLOPS_OK)
        status = lu_check_i32_vector(info, solve_name, "info", 1, 1, dev);
    if (status != CLOPS_OK)
        return status;
    const struct tensor_use uses[4] = {
        {a, "a", 1}, {b, "b", 1}, {ipiv, "ipiv", 1}, {info, "info", 1}};
    return tensor_check_disjoint(solve_name, uses, 4, NULL);
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
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", solve_name);
    int32_t inf = 0;
    struct lu_staged sa, sb = {0};
    int32_t status = lu_stage(ctx, a, "a", &sa);
    if (status == CLOPS_OK)
        status = lu_factor(ctx, &sa.m, LU_PIVOTING_PARTIAL, piv, &inf);
    if (status == CLOPS_OK && inf == 0)
        status = solve_rhs(ctx, &sa.m, piv, b, 0, &sb);
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
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'pool' is NULL", solve_name);
    struct pool_device *dev = pool_device_for_op(pool, solve_name);
    int32_t status = solve_check_args(dev, a, b, ipiv, info);
    if (status != CLOPS_OK)
        return record(pool, solve_name, status, 0);
    struct lu_ctx ctx;
    status = lu_ctx_init(&ctx, pool, dev, solve_name, a->dtype);
    if (status == CLOPS_OK)
        status = solve_run(&ctx, a, b, ipiv, info);
    int32_t finished = lu_ctx_release(&ctx);
    return record(pool, solve_name, status != CLOPS_OK ? status : finished, ctx.device_ns);
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
    .name = solve_name,
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

/* ---- lu_solve -------------------------------------------------------------------------------- */

static const char lu_solve_name[] = "lu_solve";

static int32_t lu_solve_check_args(const struct pool_device *dev, const struct clops_tensor *lu,
                                   const struct clops_tensor *ipiv, const struct clops_tensor *b,
                                   int32_t trans)
{
    int32_t status = lu_check_matrix(lu, lu_solve_name, "lu", dev);
    if (status == CLOPS_OK)
        status = check_square(lu, lu_solve_name, "lu");
    if (status == CLOPS_OK)
        status = lu_check_i32_vector(ipiv, lu_solve_name, "ipiv", lu->shape[0], 0, dev);
    if (status == CLOPS_OK)
        status = check_rhs(dev, lu, "lu", b, lu_solve_name);
    if (status == CLOPS_OK && trans != CLOPS_NO_TRANS && trans != CLOPS_TRANS)
        status = err_set(CLOPS_ERR_INVALID_ARGUMENT,
                         "%s: parameter 'trans' = %d; expected 0 (none) or 1 (transpose)",
                         lu_solve_name, (int)trans);
    if (status != CLOPS_OK)
        return status;
    const struct tensor_use uses[3] = {{lu, "lu", 0}, {ipiv, "ipiv", 0}, {b, "b", 1}};
    return tensor_check_disjoint(lu_solve_name, uses, 3, NULL);
}

/* Pivots index rows of the matrix: anything else would make the device read out of bounds. */
static int32_t check_pivot_values(const int32_t *ipiv, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (ipiv[i] < 1 || ipiv[i] > n)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter 'ipiv' has ipiv[%lld] = %d; expected 1 .. N = %lld "
                           "(1-based, as lu writes them)",
                           lu_solve_name, (long long)i, (int)ipiv[i], (long long)n);
    return CLOPS_OK;
}

static int32_t lu_solve_run(struct lu_ctx *ctx, const struct clops_tensor *lu,
                            const struct clops_tensor *ipiv, const struct clops_tensor *b,
                            int32_t trans)
{
    const int64_t n = lu->shape[0];
    int32_t *piv = malloc((size_t)(n > 0 ? n : 1) * sizeof *piv);
    if (piv == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", lu_solve_name);
    struct lu_staged sl = {0}, sb = {0};
    int32_t status = lu_read_i32(ctx, ipiv, piv, n);
    if (status == CLOPS_OK)
        status = check_pivot_values(piv, n);
    if (status == CLOPS_OK)
        status = lu_stage(ctx, lu, "lu", &sl);
    if (status == CLOPS_OK)
        status = solve_rhs(ctx, &sl.m, piv, b, trans, &sb);
    if (status == CLOPS_OK)
        status = lu_ctx_finish(ctx);
    if (status == CLOPS_OK)
        lu_commit(&sb);
    lu_staged_release(&sb);
    lu_staged_release(&sl);
    free(piv);
    return status;
}

static int32_t lu_solve_entry(struct clops_pool *pool, const struct clops_tensor *lu,
                              const struct clops_tensor *ipiv, const struct clops_tensor *b,
                              int32_t trans)
{
    err_clear();
    if (pool == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'pool' is NULL", lu_solve_name);
    struct pool_device *dev = pool_device_for_op(pool, lu_solve_name);
    int32_t status = lu_solve_check_args(dev, lu, ipiv, b, trans);
    if (status != CLOPS_OK)
        return record(pool, lu_solve_name, status, 0);
    struct lu_ctx ctx;
    status = lu_ctx_init(&ctx, pool, dev, lu_solve_name, lu->dtype);
    if (status == CLOPS_OK)
        status = lu_solve_run(&ctx, lu, ipiv, b, trans);
    int32_t finished = lu_ctx_release(&ctx);
    return record(pool, lu_solve_name, status != CLOPS_OK ? status : finished, ctx.device_ns);
}

_Static_assert(_Generic(&lu_solve_entry, clops_lu_solve_fn : 1, default : 0),
               "lu_solve_entry must have the ABI's clops_lu_solve_fn prototype");

static const char *const trans_values[] = {"none", "transpose", NULL};

static const struct clops_param lu_solve_params[] = {
    {"lu", CLOPS_PARAM_TENSOR_IN, LU_DTYPES, NULL, NULL,
     "The N x N factors written by lu (or solve) into its a, f32 or f64, row- or "
     "column-major; only read."},
    {"ipiv", CLOPS_PARAM_TENSOR_IN, CLOPS_DTYPE_BIT(CLOPS_I32), NULL, NULL,
     "i32, rank 1, at least N elements: lu's 1-based pivots (each in 1 .. N)."},
    {"b", CLOPS_PARAM_TENSOR_INOUT, LU_DTYPES, NULL, NULL,
     "B, rank 2, N x NRHS, lu's dtype, row- or column-major: overwritten by X."},
    {"trans", CLOPS_PARAM_ENUM, 0, trans_values, "none",
     "none: solve A·X = B; transpose: solve A^T·X = B."},
};

const struct clops_op op_lu_solve = {
    .struct_size = sizeof(struct clops_op),
    .version = 1,
    .name = lu_solve_name,
    .summary = "Solves A·X = B or A^T·X = B with the factors of lu (LAPACK getrs), f32 or f64.",
    .doc = "With P·A = L·U from the lu operator (lu and ipiv as it wrote them), overwrites the "
           "N x NRHS matrix B with X: for trans = none X = U^-1 L^-1 P^T B (A·X = B), for "
           "trans = transpose X = P L^-T U^-T B (A^T·X = B). The triangular solves run in blocks "
           "of NB rows, each diagonal block inverted by a kernel (one work-group per column) and "
           "applied with a GEMM on the device, the remaining rows updated by another GEMM. As "
           "LAPACK's getrs, a singular U (info > 0 from lu) is not detected: X then holds "
           "infinities or NaN.\n"
           "\n"
           "Errors: CLOPS_ERR_INVALID_ARGUMENT, naming the parameter, for a NULL or malformed "
           "tensor, a non-square lu, ipiv shorter than N or with an entry outside 1 .. N, b with "
           "a row count other than N or another dtype than lu, a leading dimension too small, a "
           "trans other than 0 or 1, or b overlapping lu or ipiv. CLOPS_ERR_UNSUPPORTED for other "
           "dtypes, f64 without device support, a matrix with no unit stride. A rejected call "
           "writes nothing.",
    .param_count = (int32_t)(sizeof lu_solve_params / sizeof lu_solve_params[0]),
    .params = lu_solve_params,
    .param_size = sizeof(struct clops_param),
    .entry = (void (*)(void))lu_solve_entry,
};
