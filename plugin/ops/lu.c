/* lu.c — the lu operator: LAPACK's getrf, P·A = L·U with partial pivoting, on the LU engine
 * (getrf.h). */
#include "call.h"
#include "getrf.h"
#include "op.h"
#include "registry.h"

static const char op_name[] = "lu";

static int32_t check_pivoting(int32_t pivoting)
{
    if (pivoting == LU_PIVOTING_PARTIAL || pivoting == LU_PIVOTING_NONE)
        return CLOPS_OK;
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter 'pivoting' = %d; expected 0 (partial) or 1 (none)", op_name,
                   (int)pivoting);
}

static int32_t lu_check_args(struct op_call *call, const struct clops_tensor *a,
                             const struct clops_tensor *ipiv, const struct clops_tensor *info,
                             int32_t pivoting)
{
    const struct pool_device *dev = call->dev;
    int32_t status = lu_check_matrix(a, op_name, "a", dev);
    if (status != CLOPS_OK)
        return status;
    const int64_t mn = a->shape[0] < a->shape[1] ? a->shape[0] : a->shape[1], one = 1;
    call_expect_same(call, 0);
    call_expect(call, 1, CLOPS_I32, 1, &mn);
    call_expect(call, 2, CLOPS_I32, 1, &one);
    status = tensor_check_i32_vector(ipiv, op_name, "ipiv", mn, 0, dev);
    if (status == CLOPS_OK)
        status = tensor_check_i32_vector(info, op_name, "info", 1, 1, dev);
    if (status == CLOPS_OK)
        status = check_pivoting(pivoting);
    if (status != CLOPS_OK)
        return status;
    const struct tensor_use uses[3] = {{a, "a", 1}, {ipiv, "ipiv", 1}, {info, "info", 1}};
    return tensor_check_disjoint(op_name, uses, 3, NULL);
}

/* ---- The operator's steps (call.h runs them) ------------------------------------------------- */

/* The parameters' positions in the descriptor (lu_params below). */
enum { P_A, P_IPIV, P_INFO, P_PIVOTING };

static int32_t lu_check(struct op_call *call)
{
    const union op_value *v = call->values;
    lu_call_stage_none(call);
    return lu_check_args(call, v[P_A].tensor, v[P_IPIV].tensor, v[P_INFO].tensor,
                         v[P_PIVOTING].i32);
}

static int64_t pivot_count(const struct clops_tensor *a)
{
    return a->shape[0] < a->shape[1] ? a->shape[0] : a->shape[1];
}

/* Factors the staged a and downloads it, writes ipiv and info where they are device tensors,
 * waits for the device; the host outputs are written by lu_commit, once all that succeeded. */
static int32_t lu_enqueue(struct op_call *call)
{
    const union op_value *v = call->values;
    const int64_t npiv = pivot_count(v[P_A].tensor);
    int32_t status = lu_call_factor(call, v[P_A].tensor, v[P_PIVOTING].i32, npiv);
    if (status == CLOPS_OK)
        status = lu_call_write_factors(call, v[P_IPIV].tensor, v[P_INFO].tensor, npiv);
    return status;
}

static void lu_commit_step(struct op_call *call)
{
    const union op_value *v = call->values;
    lu_call_commit(call, v[P_IPIV].tensor, v[P_INFO].tensor, pivot_count(v[P_A].tensor));
}

static int32_t lu_entry(struct clops_pool *pool, const struct clops_tensor *a,
                        const struct clops_tensor *ipiv, const struct clops_tensor *info,
                        int32_t pivoting)
{
    const union op_value values[] = {
        {.tensor = a}, {.tensor = ipiv}, {.tensor = info}, {.i32 = pivoting}};
    return call_run(pool, &impl_lu, values);
}

/* ---- The descriptor -------------------------------------------------------------------------- */

static const char *const pivoting_values[] = {"partial", "none", NULL};

static const struct clops_param lu_params[] = {
    {"a", CLOPS_PARAM_TENSOR_INOUT, LU_DTYPES, NULL, NULL,
     "A, rank 2, M x N, f32 or f64, row- or column-major (leading dimension at least the extent "
     "it steps over): overwritten by L (below the diagonal, unit diagonal not stored) and U."},
    {"ipiv", CLOPS_PARAM_TENSOR_OUT, CLOPS_DTYPE_BIT(CLOPS_I32), NULL, NULL,
     "i32, rank 1, at least min(M, N) elements: the first min(M, N) receive LAPACK's 1-based "
     "pivots (row i was interchanged with row ipiv[i], in order i = 1, 2, ...)."},
    {"info", CLOPS_PARAM_TENSOR_OUT, CLOPS_DTYPE_BIT(CLOPS_I32), NULL, NULL,
     "i32, rank 1, 1 element: 0, or the first (1-based) k with U(k, k) exactly zero."},
    {"pivoting", CLOPS_PARAM_ENUM, 0, pivoting_values, "partial",
     "partial: row interchanges as LAPACK's getrf. none: no interchanges (unsafe: unstable, or "
     "a division by zero, whenever a leading minor is small or singular; for comparison)."},
};

static const struct clops_op op_lu = {
    .summary = "LU factorization with partial pivoting, P·A = L·U (LAPACK getrf), f32 or f64.",
    .doc = "Factors the M x N matrix A as P·A = L·U with partial pivoting (row interchanges), as "
           "LAPACK's getrf: L is M x min(M,N) unit lower triangular (trapezoidal when M > N), U is "
           "min(M,N) x N upper triangular (trapezoidal when M < N), and both overwrite A. ipiv "
           "receives the interchanges 1-based, as LAPACK's: for i = 1 .. min(M,N) in order, row i "
           "was swapped with row ipiv[i] >= i. The pivot of each column is its first entry of "
           "largest magnitude on or below the diagonal, so pivots equal LAPACK's wherever no two "
           "candidates tie to within rounding.\n"
           "\n"
           "Singular matrices: info receives 0, or the first k (1-based) with U(k,k) exactly zero; "
           "as in LAPACK the factorization still completes (the zero column is not scaled) and the "
           "call returns CLOPS_OK; U is then singular and must not be used to solve.\n"
           "\n"
           "Algorithm: right-looking blocked LU on a row-major working matrix on the pool's device "
           "(the tensor itself when row-major, else a copy), so that row interchanges stay "
           "contiguous. Each step factors an (M-j) x NB panel, applies its interchanges to the "
           "other columns, forms U12 = L11^-1 A12 as one GEMM with L11's inverse (one work-group "
           "per column of it), and updates A22 -= L21 U12 with the gemm "
           "operator's kernel. The panel is itself factored the same way in blocks of PANEL_NB "
           "columns, column by column as LAPACK's getf2 (pivot search, interchange, scaling, "
           "rank-1 update), in one launch per panel whose work-groups keep their rows in local "
           "memory and meet at a grid-wide barrier per column (one group per compute unit on GPUs, "
           "one group elsewhere), or, for panels taller than those groups hold, one launch per "
           "column over the whole device. NB and PANEL_NB are 256 and 64 on GPUs (NB 512 from "
           "min(M, N) = 12288 on; PANEL_NB halved down to 16 while those groups cannot hold all "
           "M rows), 32 and 8 elsewhere. With look-ahead (setting lookahead) the updates of each "
           "step beyond the "
           "next panel run on a second queue beside that panel's factorization; the factors and "
           "pivots are the same bit for bit. pivoting = none skips the interchanges (Doolittle "
           "elimination without pivoting): unstable, for comparison only.\n"
           "\n"
           "Submitted calls: the progress counts NB panels done, and a cancel stops the call "
           "between two panels (CLOPS_ERR_CANCELLED; host outputs untouched, a device a partly "
           "factored); a submitted call keeps at most 2 panels queued beyond those the device "
           "finished, a synchronous one all of them.\n"
           "\n"
           "Tuning (settings in operators.lu, and the same in operators.solve and "
           "operators.lu_solve, checked when the pool is created): nb (1..1024), NB; panel_nb "
           "(1..1024), PANEL_NB; panel_resident (true or false, default true), the resident panel "
           "kernel; panel_groups (1..1024), its work-groups (default one per compute unit on "
           "GPUs, 1 elsewhere; more than the device's compute units are not used); panel_rows "
           "(1..1024, default 64), rows per work-group of the per-column panel kernel; "
           "lookahead (true or false, default false: on an H100 it was 1-3 % slower, the queues' "
           "kernels not overlapping), the second queue. "
           "-DLU_NB=<n>, -DLU_PANEL_NB=<n>, -DLU_PANEL_RESIDENT=0|1, -DLU_PANEL_GROUPS=<n> and "
           "-DLU_PANEL_ROWS=<n> in build_options are read as these settings too; they do not "
           "reach the kernel compiler.\n"
           "\n"
           "Overlap: a, ipiv and info must not share an element (interleaved views of one "
           "array that share none are fine).\n"
           "\n"
           "Errors: CLOPS_ERR_INVALID_ARGUMENT, naming the parameter, for a NULL or malformed "
           "tensor, a rank other than 2 (a) or 1 (ipiv, info), a negative extent, a leading "
           "dimension too small, ipiv shorter than min(M,N), info not of 1 element, a pivoting "
           "value other than 0 or 1, tensors that overlap. CLOPS_ERR_UNSUPPORTED for a dtype "
           "other than f32/f64 (a) or i32 (ipiv, info), f64 on a device without double "
           "precision, a matrix with no unit stride, or an extent over 2^30 - 1. A rejected call "
           "writes nothing.",
    OP_DESCRIPTOR_COMMON(op_name, lu_params, lu_entry, clops_lu_fn),
};

const struct op_impl impl_lu = {.desc = &op_lu,
                                .plan_size = sizeof(struct lu_call),
                                .check = lu_check,
                                .enqueue = lu_enqueue,
                                .commit = lu_commit_step,
                                .release = lu_call_release,
                                .settings = &lu_settings,
                                .across_devices = 1};
