/* solve.c — the solve operator: LAPACK's gesv, A = P·L·U (getrf) and then A·X = B solved with
 * the factors (getrs), on the LU engine (getrf.h). */
#include "call.h"
#include "getrf.h"
#include "op.h"
#include "registry.h"

static const char op_name[] = "solve";

static int32_t solve_check_args(struct op_call *call, const struct clops_tensor *a,
                                const struct clops_tensor *b, const struct clops_tensor *ipiv,
                                const struct clops_tensor *info)
{
    const struct pool_device *dev = call->dev;
    int32_t status = lu_check_matrix(a, op_name, "a", dev);
    if (status == CLOPS_OK)
        status = lu_check_square(a, op_name, "a");
    if (status == CLOPS_OK) {
        const int64_t one = 1;
        call_expect_same(call, 0);
        call_expect(call, 2, CLOPS_I32, 1, &a->shape[0]);
        call_expect(call, 3, CLOPS_I32, 1, &one);
        status = lu_check_rhs(dev, a, "a", b, op_name);
    }
    if (status == CLOPS_OK)
        call_expect_same(call, 1);
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

/* ---- The operator's steps (call.h runs them) ------------------------------------------------- */

/* The parameters' positions in the descriptor (solve_params below). */
enum { P_A, P_B, P_IPIV, P_INFO };

static int32_t solve_check(struct op_call *call)
{
    const union op_value *v = call->values;
    lu_call_stage_none(call);
    return solve_check_args(call, v[P_A].tensor, v[P_B].tensor, v[P_IPIV].tensor, v[P_INFO].tensor);
}

/* gesv: a, ipiv and info are written whatever info says; b only when A is nonsingular. X is
 * computed whatever info says, so that no host step waits for the factorization to decide:
 * for a singular A the device calls off the copy of X into a device b (lu_stage's guard, on
 * info) and solve_commit does not write a host b. Host outputs are written by solve_commit,
 * once every device step has succeeded. */
static int32_t solve_enqueue(struct op_call *call)
{
    struct lu_call *l = call->plan;
    const union op_value *v = call->values;
    const int64_t n = v[P_A].tensor->shape[0];
    int32_t status = lu_call_factor(call, v[P_A].tensor, LU_PIVOTING_PARTIAL, n);
    if (status == CLOPS_OK)
        status = lu_solve_tensor(&l->ctx, &l->a.m, v[P_B].tensor, 0, n, &l->b);
    if (status == CLOPS_OK)
        status = lu_call_write_factors(call, v[P_IPIV].tensor, v[P_INFO].tensor, n);
    return status;
}

static void solve_commit(struct op_call *call)
{
    const union op_value *v = call->values;
    lu_call_commit(call, v[P_IPIV].tensor, v[P_INFO].tensor, v[P_A].tensor->shape[0]);
}

static int32_t solve_entry(struct clops_pool *pool, const struct clops_tensor *a,
                           const struct clops_tensor *b, const struct clops_tensor *ipiv,
                           const struct clops_tensor *info)
{
    const union op_value values[] = {
        {.tensor = a}, {.tensor = b}, {.tensor = ipiv}, {.tensor = info}};
    return call_run(pool, &impl_solve, values);
}

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

static const struct clops_op op_solve = {
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
    OP_DESCRIPTOR_COMMON(op_name, solve_params, solve_entry, clops_solve_fn),
};

const struct op_impl impl_solve = {.desc = &op_solve,
                                   .plan_size = sizeof(struct lu_call),
                                   .check = solve_check,
                                   .enqueue = solve_enqueue,
                                   .commit = solve_commit,
                                   .release = lu_call_release,
                                   .settings = &lu_settings,
                                   .across_devices = 1};
