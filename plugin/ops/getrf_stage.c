/* getrf_stage.c — the LU engine's working matrix (getrf.h): a tensor staged as a row-major
 * matrix on the device, and written back. */
#include "getrf.h"

#include <stdio.h>
#include <string.h>

/* dst = src, rows x cols, each with its own strides, unless guard_at >= 0 and
 * ctx->ipiv_mem[guard_at] != 0 (kernels/lu.cl: lu_copy). */
int32_t lu_copy_matrix(struct lu_ctx *ctx, cl_command_queue queue, int64_t rows, int64_t cols,
                       cl_mem src, const cl_long src_geom[3], cl_mem dst, const cl_long dst_geom[3],
                       int64_t guard_at)
{
    const cl_int r = (cl_int)rows, c = (cl_int)cols, at = (cl_int)guard_at;
    const cl_mem guard = guard_at >= 0 ? ctx->ipiv_mem : dst; /* dst: any buffer, never read */
    const struct kernel_arg args[] = {KARG(r),           KARG(c),           KARG(src),
                                      KARG(src_geom[0]), KARG(src_geom[1]), KARG(src_geom[2]),
                                      KARG(dst),         KARG(dst_geom[0]), KARG(dst_geom[1]),
                                      KARG(dst_geom[2]), KARG(guard),       KARG(at)};
    const size_t global[2] = {(size_t)cols, (size_t)rows};
    return lu_run_kernel(ctx, queue, ctx->copy, args, (cl_uint)(sizeof args / sizeof args[0]), 2,
                         global, NULL);
}

int32_t lu_stage(struct lu_ctx *ctx, const struct clops_tensor *t, const char *param,
                 int64_t guard_at, struct lu_staged *out)
{
    memset(out, 0, sizeof *out);
    out->param = param;
    out->guard_at = guard_at;
    const int64_t rows = t->shape[0], cols = t->shape[1];
    int32_t status = tensor_stage(ctx->pool, ctx->dev, ctx->queue, t, 1, &out->st, ctx->op, param);
    if (status != CLOPS_OK || rows == 0 || cols == 0)
        return status;
    out->m = (struct lu_matrix){out->st.mem, out->st.offset, rows > 1 ? t->strides[0] : cols, rows,
                                cols};
    /* A guarded device tensor must stay as it was until the device decides: its working copy
     * is the one the call changes. */
    if (tensor_is_row_major(t) && (guard_at < 0 || t->buffer == NULL))
        return CLOPS_OK;
    /* A column-major tensor: factor a row-major copy, so that row swaps stay contiguous. */
    char what[96];
    snprintf(what, sizeof what, "a working copy of parameter '%s'", param);
    status =
        pool_alloc_device_memory(ctx->dev, rows * cols * ctx->elem_size, ctx->op, what, &out->copy);
    if (status != CLOPS_OK)
        return status;
    out->m = (struct lu_matrix){out->copy, 0, cols, rows, cols};
    const cl_long src[3] = {out->st.offset, t->strides[0], t->strides[1]};
    const cl_long dst[3] = {0, cols, 1};
    return lu_copy_matrix(ctx, ctx->queue, rows, cols, out->st.mem, src, out->copy, dst, -1);
}

int32_t lu_unstage(struct lu_ctx *ctx, struct lu_staged *s)
{
    const struct clops_tensor *t = s->st.t;
    if (s->copy != NULL) {
        const cl_long src[3] = {0, s->m.cols, 1};
        const cl_long dst[3] = {s->st.offset, t->strides[0], t->strides[1]};
        int32_t status = lu_copy_matrix(ctx, ctx->queue, s->m.rows, s->m.cols, s->copy, src,
                                        s->st.mem, dst, s->guard_at);
        if (status != CLOPS_OK)
            return status;
    }
    return tensor_download(ctx->pool, ctx->queue, &s->st, ctx->op, s->param);
}

void lu_commit(struct lu_staged *s)
{
    tensor_commit(&s->st);
}

void lu_staged_release(struct lu_staged *s)
{
    lu_release_mem(s->st.dev, &s->copy);
    tensor_release(&s->st);
}
