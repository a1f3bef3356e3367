/* getrf_triangle.c — the triangular blocks of the LU engine (getrf.h): the inverses of diagonal
 * blocks, and their application to a block of rows through the GEMM engine. */
#include "getrf.h"

#include "gemm.h"

/* lane->inv_mem from element inv_at: op(T)^-1 (n x n, row-major) for each of `count` diagonal
 * blocks of `m`, at (b0 + s n, b0 + s n) for s = 0 .. count - 1, one after another: their lower
 * triangle (unit: the factor L) when `lower`, else their upper one, transposed when `trans`
 * (kernels/lu.cl: lu_invert_lower, which an upper triangle reaches read backwards). The blocks
 * are independent: one launch inverts them all, in the time of one. */
int32_t lu_invert_diagonal_blocks(struct lu_ctx *ctx, struct lu_lane *lane,
                                  const struct lu_matrix *m, int64_t b0, int64_t n, int64_t count,
                                  int64_t inv_at, int32_t trans, int lower, int unit)
{
    int32_t status = lu_ensure_buffer(ctx, &lane->inv_mem, &lane->inv_bytes,
                                      (inv_at + count * n * n) * ctx->elem_size);
    if (status != CLOPS_OK)
        return status;
    const cl_long si = trans ? 1 : m->ld, sk = trans ? m->ld : 1, last = n - 1;
    const cl_long base = m->offset + b0 * m->ld + b0;
    const cl_long t_off = lower ? base : base + last * (si + sk);
    const cl_long ti = lower ? si : -si, tk = lower ? sk : -sk;
    const cl_long v_off = inv_at + (lower ? 0 : last * (n + 1)), vi = lower ? n : -n;
    const cl_long vk = lower ? 1 : -1, t_step = n * (m->ld + 1), v_step = n * n;
    const cl_int nn = (cl_int)n, u = unit;
    const struct kernel_arg args[] = {KARG(nn), KARG(u),  KARG(m->mem),        KARG(t_off),
                                      KARG(ti), KARG(tk), KARG(lane->inv_mem), KARG(v_off),
                                      KARG(vi), KARG(vk), KARG(t_step),        KARG(v_step)};
    /* One work-group per column of a block, of up to panel_wg work-items (a power of two). */
    size_t local[2] = {1, 1};
    while (local[0] < (size_t)n && local[0] < (size_t)ctx->panel_wg)
        local[0] *= 2;
    const size_t global[2] = {(size_t)n * local[0], (size_t)count};
    return lu_run_kernel(ctx, lane->queue, ctx->invert, args,
                         (cl_uint)(sizeof args / sizeof args[0]), 2, global, local);
}

/* B(r0 : r0+n, c0 : c0+cols) = inv * B(...) with the n x n inverse at element inv_at of
 * lane->inv_mem: the block goes to lane->tmp_mem and a GEMM writes the product back in place. */
int32_t lu_apply_inverse(struct lu_ctx *ctx, struct lu_lane *lane, int64_t n, int64_t inv_at,
                         const struct lu_matrix *b, int64_t r0, int64_t c0, int64_t cols)
{
    const int64_t es = ctx->elem_size;
    int32_t status = lu_ensure_buffer(ctx, &lane->tmp_mem, &lane->tmp_bytes, n * cols * es);
    if (status != CLOPS_OK)
        return status;
    /* With the copy kernel, not clEnqueueCopyBufferRect: NVIDIA's driver rejects some rect
     * origins inside a matrix with CL_INVALID_VALUE (seen on the H100). */
    const cl_long src_geom[3] = {b->offset + r0 * b->ld + c0, b->ld, 1};
    const cl_long dst_geom[3] = {0, cols, 1};
    status =
        lu_copy_matrix(ctx, lane->queue, n, cols, b->mem, src_geom, lane->tmp_mem, dst_geom, -1);
    if (status != CLOPS_OK)
        return status;
    const struct gemm_operand a_op = {lane->inv_mem, inv_at, n, 1};
    const struct gemm_operand b_op = {lane->tmp_mem, 0, cols, 1}, c_op = lu_operand(b, r0, c0);
    return gemm_enqueue(&ctx->gemm, lane->queue, ctx->dtype, n, cols, n, 1.0, &a_op, &b_op, 0.0,
                        &c_op, ctx->op);
}
