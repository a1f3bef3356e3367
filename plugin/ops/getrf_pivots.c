/* getrf_pivots.c — the LU engine's pivots and info between the device and the host (getrf.h). */
#include "getrf.h"

int32_t lu_write_pivots(struct lu_ctx *ctx, const struct clops_tensor *ipiv, const int32_t *piv,
                        int64_t n, const struct clops_tensor *info, int32_t inf, int32_t on_host)
{
    int32_t status = CLOPS_OK;
    if ((ipiv->buffer == NULL) == (on_host != 0))
        status = tensor_write_i32(ctx->pool, ctx->queue, ipiv, piv, n, ctx->op);
    if (status == CLOPS_OK && (info->buffer == NULL) == (on_host != 0))
        status = tensor_write_i32(ctx->pool, ctx->queue, info, &inf, 1, ctx->op);
    return status;
}

/* ctx->ipiv_mem = ipiv[0 .. n - 1] (lu_solve's pivots, for laswp). */
int32_t lu_upload_pivots(struct lu_ctx *ctx, const int32_t *ipiv, int64_t n)
{
    int32_t status =
        lu_ensure_buffer(ctx, &ctx->ipiv_mem, &ctx->ipiv_bytes, (n + 1) * (int64_t)sizeof(int32_t));
    if (status != CLOPS_OK)
        return status;
    cl_int rc = clEnqueueWriteBuffer(ctx->queue, ctx->ipiv_mem, CL_TRUE, 0,
                                     (size_t)n * sizeof(int32_t), ipiv, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: uploading pivots failed", ctx->op);
    return CLOPS_OK;
}

/* The pivots and info the panels left in ctx->ipiv_mem. */
int32_t lu_read_pivots(struct lu_ctx *ctx, int64_t mn, int32_t *ipiv, int32_t *info)
{
    cl_int rc = clEnqueueReadBuffer(ctx->queue, ctx->ipiv_mem, CL_TRUE, 0,
                                    (size_t)mn * sizeof(int32_t), ipiv, 0, NULL, NULL);
    if (rc == CL_SUCCESS)
        rc = clEnqueueReadBuffer(ctx->queue, ctx->ipiv_mem, CL_TRUE, (size_t)mn * sizeof(int32_t),
                                 sizeof(int32_t), info, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: downloading the pivots failed", ctx->op);
    return CLOPS_OK;
}
