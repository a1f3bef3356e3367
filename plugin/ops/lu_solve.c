/* lu_solve.c — the lu_solve operator: LAPACK's getrs, A·X = B or A^T·X = B solved with the
 * factors and pivots that lu wrote, on the LU engine (getrf.h). */
#include "call.h"
#include "getrf.h"
#include "op.h"
#include "registry.h"

static const char op_name[] = "lu_solve";

/* The refusal of pivot ipiv[i] = value, outside 1 .. n: the same for host and device pivots. */
static int32_t refuse_pivot(int64_t i, int32_t value, int64_t n)
{
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter 'ipiv' has ipiv[%lld] = %d; expected 1 .. N = %lld "
                   "(1-based, as lu writes them)",
                   op_name, (long long)i, (int)value, (long long)n);
}

/* Pivots index rows of the matrix: anything else would make the device read out of bounds.
 * ipiv[i] lies at ipiv[i * stride]. */
static int32_t check_pivot_values(const int32_t *ipiv, int64_t stride, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (ipiv[i * stride] < 1 || ipiv[i * stride] > n)
            return refuse_pivot(i, ipiv[i * stride], n);
    return CLOPS_OK;
}

/* Host pivots are checked with the other arguments, so that check_sized refuses what a run
 * refuses (clops.h); device pivots can only be read by a run, which checks them on the device
 * (pivots_in, device_pivots_verdict). A description (no memory) has no values to check. */
static int32_t check_host_pivots(const struct clops_tensor *ipiv, int64_t n)
{
    if (ipiv->data == NULL)
        return CLOPS_OK;
    const int32_t *first = (const int32_t *)ipiv->data + ipiv->offset;
    return check_pivot_values(first, n > 1 ? ipiv->strides[0] : 1, n);
}

static int32_t lu_solve_check_args(struct op_call *call, const struct clops_tensor *lu,
                                   const struct clops_tensor *ipiv, const struct clops_tensor *b,
                                   int32_t trans)
{
    const struct pool_device *dev = call->dev;
    int32_t status = lu_check_matrix(lu, op_name, "lu", dev);
    if (status == CLOPS_OK)
        status = lu_check_square(lu, op_name, "lu");
    if (status == CLOPS_OK)
        status = tensor_check_i32_vector(ipiv, op_name, "ipiv", lu->shape[0], 0, dev);
    if (status == CLOPS_OK)
        status = lu_check_rhs(dev, lu, "lu", b, op_name);
    if (status == CLOPS_OK)
        call_expect_same(call, 2);
    if (status == CLOPS_OK && trans != CLOPS_NO_TRANS && trans != CLOPS_TRANS)
        status = err_set(CLOPS_ERR_INVALID_ARGUMENT,
                         "%s: parameter 'trans' = %d; expected 0 (none) or 1 (transpose)", op_name,
                         (int)trans);
    if (status != CLOPS_OK)
        return status;
    const struct tensor_use uses[3] = {{lu, "lu", 0}, {ipiv, "ipiv", 0}, {b, "b", 1}};
    status = tensor_check_disjoint(op_name, uses, 3, NULL);
    if (status == CLOPS_OK)
        status = check_host_pivots(ipiv, lu->shape[0]);
    return status;
}

/* ---- The operator's steps (call.h runs them) ------------------------------------------------- */

/* The parameters' positions in the descriptor (lu_solve_params below). */
enum { P_LU, P_IPIV, P_B, P_TRANS };

static int32_t lu_solve_check(struct op_call *call)
{
    const union op_value *v = call->values;
    lu_call_stage_none(call);
    return lu_solve_check_args(call, v[P_LU].tensor, v[P_IPIV].tensor, v[P_B].tensor,
                               v[P_TRANS].i32);
}

/* The pivots into l->ctx.ipiv_mem, the first device steps of the call. Host pivots (checked
 * already) are uploaded without a wait from l->piv, which lives until the call's release. Device
 * pivots are copied and checked on the device (kernels/lu.cl: lu_take_pivots), its verdict in
 * ipiv_mem[n]: no host round trip before the solves, which stay in bounds whatever the pivots. */
static int32_t pivots_in(struct lu_call *l, const struct clops_tensor *ipiv, int64_t n)
{
    int32_t status = lu_clear_info(&l->ctx, n);
    if (status == CLOPS_OK && ipiv->buffer != NULL)
        return lu_take_pivots(&l->ctx, ipiv, n);
    if (status != CLOPS_OK)
        return status;
    tensor_read_i32(ipiv, l->piv, n);
    return lu_upload_pivots(&l->ctx, l->piv, n);
}

/* Device pivots, read with the call's outputs (l->piv: the pivots, then the verdict): the
 * refusal of the first one out of range, as the host check words it. */
static int32_t device_pivots_verdict(const struct lu_call *l, int64_t n)
{
    const int32_t verdict = l->piv[n];
    return verdict == 0 ? CLOPS_OK : refuse_pivot(n - verdict, l->piv[n - verdict], n);
}

/* Every device step goes on the call's queue without a wait; the one wait is the call's. With
 * device pivots, b is guarded by their verdict (a device b is solved in a copy whose copy back
 * the device calls off), and a bad pivot fails the call after the wait (lu_solve_verify), so
 * that lu_solve_commit never writes a host b: a refused call changes nothing. */
static int32_t lu_solve_enqueue(struct op_call *call)
{
    struct lu_call *l = call->plan;
    const union op_value *v = call->values;
    const struct clops_tensor *lu = v[P_LU].tensor, *ipiv = v[P_IPIV].tensor;
    const int64_t n = lu->shape[0], guard_at = ipiv->buffer != NULL ? n : -1;
    int32_t status = lu_call_open(call, l, lu->dtype, n);
    if (status == CLOPS_OK)
        status = pivots_in(l, ipiv, n);
    if (status == CLOPS_OK)
        status = lu_stage(&l->ctx, lu, "lu", -1, &l->a);
    if (status == CLOPS_OK)
        status = lu_solve_tensor(&l->ctx, &l->a.m, v[P_B].tensor, v[P_TRANS].i32, guard_at, &l->b);
    if (status == CLOPS_OK && guard_at >= 0)
        status = lu_pivots_out(&l->ctx, NULL, NULL, n, l->piv);
    if (status == CLOPS_OK)
        status = lu_ctx_finish(&l->ctx);
    return status;
}

/* After the call's wait: device pivots out of range refuse the call (nothing committed). */
static int32_t lu_solve_verify(struct op_call *call)
{
    const struct lu_call *l = call->plan;
    const struct clops_tensor *lu = call->values[P_LU].tensor, *ipiv = call->values[P_IPIV].tensor;
    return ipiv->buffer != NULL ? device_pivots_verdict(l, lu->shape[0]) : CLOPS_OK;
}

static void lu_solve_commit(struct op_call *call)
{
    struct lu_call *l = call->plan;
    lu_commit(&l->b);
}

static int32_t lu_solve_entry(struct clops_pool *pool, const struct clops_tensor *lu,
                              const struct clops_tensor *ipiv, const struct clops_tensor *b,
                              int32_t trans)
{
    const union op_value values[] = {
        {.tensor = lu}, {.tensor = ipiv}, {.tensor = b}, {.i32 = trans}};
    return call_run(pool, &impl_lu_solve, values);
}

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

static const struct clops_op op_lu_solve = {
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
    OP_DESCRIPTOR_COMMON(op_name, lu_solve_params, lu_solve_entry, clops_lu_solve_fn),
};

const struct op_impl impl_lu_solve = {.desc = &op_lu_solve,
                                      .plan_size = sizeof(struct lu_call),
                                      .check = lu_solve_check,
                                      .enqueue = lu_solve_enqueue,
                                      .commit = lu_solve_commit,
                                      .release = lu_call_release,
                                      .settings = &lu_settings,
                                      .verify = lu_solve_verify};
