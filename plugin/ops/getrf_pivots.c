/* getrf_pivots.c — the LU engine's pivots and info (getrf.h): kept on the device, in
 * ctx->ipiv_mem, from the panels that write them to the solves that read them; downloaded only
 * with the call's outputs. */
#include "getrf.h"

static int32_t ensure_pivots(struct lu_ctx *ctx, int64_t n)
{
    return lu_ensure_buffer(ctx, &ctx->ipiv_mem, &ctx->ipiv_bytes,
                            (n + 1) * (int64_t)sizeof(int32_t));
}

int32_t lu_clear_info(struct lu_ctx *ctx, int64_t mn)
{
    int32_t status = ensure_pivots(ctx, mn);
    if (status != CLOPS_OK)
        return status;
    const cl_int zero = 0;
    cl_int rc = clEnqueueFillBuffer(ctx->queue, ctx->ipiv_mem, &zero, sizeof zero,
                                    (size_t)mn * sizeof(int32_t), sizeof zero, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clearing info failed", ctx->op);
    return CLOPS_OK;
}

int32_t lu_upload_pivots(struct lu_ctx *ctx, const int32_t *ipiv, int64_t n)
{
    int32_t status = ensure_pivots(ctx, n);
    if (status != CLOPS_OK)
        return status;
    cl_int rc = clEnqueueWriteBuffer(ctx->queue, ctx->ipiv_mem, CL_FALSE, 0,
                                     (size_t)n * sizeof(int32_t), ipiv, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: uploading pivots failed", ctx->op);
    return CLOPS_OK;
}

int32_t lu_take_pivots(struct lu_ctx *ctx, const struct clops_tensor *ipiv, int64_t n)
{
    int32_t status = ensure_pivots(ctx, n);
    if (status != CLOPS_OK || n == 0)
        return status;
    const cl_int count = (cl_int)n;
    const cl_long src_off = ipiv->offset, src_step = n > 1 ? ipiv->strides[0] : 1;
    const struct kernel_arg args[] = {KARG(count), KARG(ipiv->buffer->mem), KARG(src_off),
                                      KARG(src_step), KARG(ctx->ipiv_mem)};
    const size_t global = (size_t)n;
    return lu_run_kernel(ctx, ctx->queue, ctx->take_pivots, args,
                         (cl_uint)(sizeof args / sizeof args[0]), 1, &global, NULL);
}

/* The first n elements of the i32 device tensor t = ctx->ipiv_mem[at .. at + n), on the device
 * (kernels/lu.cl: lu_copy_int). */
static int32_t copy_to_tensor(struct lu_ctx *ctx, const struct clops_tensor *t, int64_t at,
                              int64_t n)
{
    const cl_int count = (cl_int)n;
    const cl_long src_off = at, src_step = 1;
    const cl_long dst_off = t->offset, dst_step = n > 1 ? t->strides[0] : 1;
    const struct kernel_arg args[] = {KARG(count),    KARG(ctx->ipiv_mem),  KARG(src_off),
                                      KARG(src_step), KARG(t->buffer->mem), KARG(dst_off),
                                      KARG(dst_step)};
    const size_t global = (size_t)n;
    return lu_run_kernel(ctx, ctx->queue, ctx->copy_int, args,
                         (cl_uint)(sizeof args / sizeof args[0]), 1, &global, NULL);
}

int32_t lu_pivots_out(struct lu_ctx *ctx, const struct clops_tensor *ipiv,
                      const struct clops_tensor *info, int64_t n, int32_t *host)
{
    int32_t status = CLOPS_OK;
    if (ipiv != NULL && ipiv->buffer != NULL && n > 0)
        status = copy_to_tensor(ctx, ipiv, 0, n);
    if (status == CLOPS_OK && info != NULL && info->buffer != NULL)
        status = copy_to_tensor(ctx, info, n, 1);
    if (status != CLOPS_OK)
        return status;
    cl_int rc = clEnqueueReadBuffer(ctx->queue, ctx->ipiv_mem, CL_FALSE, 0,
                                    (size_t)(n + 1) * sizeof(int32_t), host, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: downloading the pivots failed", ctx->op);
    return CLOPS_OK;
}

void lu_pivots_commit(const struct clops_tensor *ipiv, const struct clops_tensor *info, int64_t n,
                      const int32_t *host)
{
    /* Host tensors are written directly (device ones got theirs on the device). */
    if (ipiv->buffer == NULL)
        tensor_write_i32(ipiv, host, n);
    if (info->buffer == NULL)
        tensor_write_i32(info, host + n, 1);
}
