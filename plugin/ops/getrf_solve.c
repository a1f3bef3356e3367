/* getrf_solve.c — LAPACK's getrs on the LU engine (getrf.h): blocked triangular solves with the
 * factors and pivots, each diagonal block inverted on the device and applied with a GEMM. */
#include "getrf.h"

#include "gemm.h"

/* Solves op(T) X = B in place for a triangle of the factors in `lu`: the unit lower L (lower = 1)
 * or U, transposed or not. Blocked by NB: each diagonal block is inverted on the device and
 * applied with a GEMM, then the rest of B is updated by one GEMM with the block's column of
 * op(T), from the top for a lower op(T), from the bottom for an upper one. */
static int32_t trsm(struct lu_ctx *ctx, const struct lu_matrix *lu, int lower, int32_t trans,
                    const struct lu_matrix *b)
{
    const int64_t n = lu->rows, nb = ctx->nb, nrhs = b->cols;
    const int64_t si = trans ? 1 : lu->ld, sk = trans ? lu->ld : 1; /* op(T)(i,k) strides */
    const int forward = lower != (trans != 0);
    const int64_t full = n / nb, rest = n - full * nb, blocks = full + (rest > 0);
    /* Every diagonal block's inverse first, in two launches (the full blocks, the last): they
     * depend on the factors only. */
    int32_t status = lu_ensure_buffer(ctx, &ctx->main.inv_mem, &ctx->main.inv_bytes,
                                      (full * nb * nb + rest * rest) * ctx->elem_size);
    if (status == CLOPS_OK && full > 0)
        status =
            lu_invert_diagonal_blocks(ctx, &ctx->main, lu, 0, nb, full, 0, trans, forward, lower);
    if (status == CLOPS_OK && rest > 0)
        status = lu_invert_diagonal_blocks(ctx, &ctx->main, lu, full * nb, rest, 1, full * nb * nb,
                                           trans, forward, lower);
    for (int64_t s = 0; status == CLOPS_OK && s < blocks; s++) {
        const int64_t block = forward ? s : blocks - 1 - s, b0 = block * nb;
        const int64_t bs = n - b0 < nb ? n - b0 : nb;
        status = lu_apply_inverse(ctx, &ctx->main, bs, block * nb * nb, b, b0, 0, nrhs);
        /* The rows of B still to solve: below the block (forward) or above it. */
        const int64_t r0 = forward ? b0 + bs : 0, rows = forward ? n - b0 - bs : b0;
        if (status != CLOPS_OK || rows == 0)
            continue;
        const struct gemm_operand t_op = {lu->mem, lu->offset + r0 * si + b0 * sk, si, sk};
        const struct gemm_operand x_op = lu_operand(b, b0, 0), c_op = lu_operand(b, r0, 0);
        status = gemm_enqueue(&ctx->gemm, ctx->queue, ctx->dtype, rows, nrhs, bs, -1.0, &t_op,
                              &x_op, 1.0, &c_op, ctx->op);
    }
    return status;
}

/* A small system's getrs in one launch (kernels/lu.cl: lu_getrs_small), a work-item per
 * column of B. */
static int32_t solve_small(struct lu_ctx *ctx, const struct lu_matrix *lu,
                           const struct lu_matrix *b, int32_t trans)
{
    const cl_int n = (cl_int)lu->rows, nrhs = (cl_int)b->cols, tr = trans != 0;
    const cl_long lu_off = lu->offset, ld = lu->ld, b_off = b->offset, ldb = b->ld;
    const struct kernel_arg args[] = {
        KARG(n),  KARG(nrhs),          KARG(tr),     KARG(lu->mem), KARG(lu_off),
        KARG(ld), KARG(ctx->ipiv_mem), KARG(b->mem), KARG(b_off),   KARG(ldb)};
    const size_t local = (size_t)ctx->panel_wg;
    const size_t global = ((size_t)nrhs + local - 1) / local * local;
    return lu_run_kernel(ctx, ctx->queue, ctx->getrs_small, args,
                         (cl_uint)(sizeof args / sizeof args[0]), 1, &global, &local);
}

/* LAPACK getrs: A = P L U, so A X = B is X = U^-1 L^-1 P^T B, and A^T X = B is
 * X = P L^-T U^-T B. A system of at most LU_SMALL_SOLVE_N unknowns takes one launch
 * (solve_small), whose substitutions run in the order LAPACK's unblocked trsm does. */
int32_t lu_solve_factored(struct lu_ctx *ctx, const struct lu_matrix *lu, const struct lu_matrix *b,
                          int32_t trans)
{
    const int64_t n = lu->rows;
    if (n == 0 || b->cols == 0)
        return CLOPS_OK;
    if (n <= LU_SMALL_SOLVE_N)
        return solve_small(ctx, lu, b, trans);
    int32_t status = CLOPS_OK;
    if (!trans)
        status = lu_laswp(ctx, &ctx->main, b, 0, 0, 0, n, 0);
    if (status == CLOPS_OK)
        status = trsm(ctx, lu, !trans, trans, b);
    if (status == CLOPS_OK)
        status = trsm(ctx, lu, trans, trans, b);
    if (status == CLOPS_OK && trans)
        status = lu_laswp(ctx, &ctx->main, b, 0, 0, 0, n, 1);
    return status;
}

int32_t lu_solve_tensor(struct lu_ctx *ctx, const struct lu_matrix *lu,
                        const struct clops_tensor *b, int32_t trans, int64_t guard_at,
                        struct lu_staged *sb)
{
    int32_t status = lu_stage(ctx, b, "b", guard_at, sb);
    if (status == CLOPS_OK)
        status = lu_solve_factored(ctx, lu, &sb->m, trans);
    if (status == CLOPS_OK)
        status = lu_unstage(ctx, sb);
    return status;
}
