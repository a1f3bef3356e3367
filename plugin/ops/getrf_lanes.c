/* getrf_lanes.c — the look-ahead's lanes (getrf.h): a trailing update on one lane's queue, and
 * the ordering of the two queues through events. */
#include "getrf.h"

#include "gemm.h"

/* *event = a marker of what `queue` holds so far, submitted (clFlush) so that another queue can
 * wait for it. */
int32_t lu_queue_mark(struct lu_ctx *ctx, cl_command_queue queue, cl_event *event)
{
    cl_int rc = clEnqueueMarkerWithWaitList(queue, 0, NULL, event);
    if (rc == CL_SUCCESS)
        rc = clFlush(queue);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: ordering the look-ahead queues failed", ctx->op);
    return CLOPS_OK;
}

/* Nothing enqueued on `queue` after this starts before `*event` (released, and NULL after). */
int32_t lu_queue_wait_for(struct lu_ctx *ctx, cl_command_queue queue, cl_event *event)
{
    if (*event == NULL)
        return CLOPS_OK;
    cl_int rc = clEnqueueBarrierWithWaitList(queue, 1, event, NULL);
    clReleaseEvent(*event);
    *event = NULL;
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: ordering the look-ahead queues failed", ctx->op);
    return CLOPS_OK;
}

/* The update of the columns [c0, c0 + cols) right of the panel at (j, j), width jb, on `lane`:
 * the panel's interchanges, U12 = L11^-1 A12 and A22 -= L21 U12 (factor_range's steps). */
int32_t lu_update_columns(struct lu_ctx *ctx, struct lu_lane *lane, const struct lu_matrix *a,
                          int64_t j, int64_t jb, int64_t c0, int64_t cols, int32_t pivoting)
{
    const struct lu_matrix block = lu_column_range(a, c0, c0 + cols);
    int32_t status = CLOPS_OK;
    if (pivoting == LU_PIVOTING_PARTIAL)
        status = lu_laswp(ctx, lane, &block, 0, 0, j, j + jb, 0);
    if (status == CLOPS_OK)
        status = lu_invert_diagonal_blocks(ctx, lane, a, j, jb, 1, 0, 0, 1, 1);
    if (status == CLOPS_OK)
        status = lu_apply_inverse(ctx, lane, jb, 0, a, j, c0, cols);
    const int64_t rows = a->rows - j;
    if (status != CLOPS_OK || rows == jb)
        return status;
    const struct gemm_operand l21 = lu_operand(a, j + jb, j), u12 = lu_operand(a, j, c0);
    const struct gemm_operand a22 = lu_operand(a, j + jb, c0);
    return gemm_enqueue(&ctx->gemm, lane->queue, ctx->dtype, rows - jb, cols, jb, -1.0, &l21, &u12,
                        1.0, &a22, ctx->op);
}
