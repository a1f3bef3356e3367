/* getrf_factor.c — LAPACK's getrf on the LU engine (getrf.h): a blocked right-looking factorization
 * whose panels go to the panel kernels and whose O(N^3) work, the trailing updates, to gemm.cl;
 * with look-ahead, those updates run on a second lane beside the next panel. */
#include "getrf.h"

#include "gemm.h"

/* Right-looking blocked LU of the first `count` columns from c0 of the rows c0 .. M - 1, with
 * its interchanges and updates applied to the columns [c0, c1): c1 = N at the outer level
 * (blocks of NB), the end of the outer panel at the inner one (blocks of at most PANEL_NB, as
 * wide as lu_panel_width makes them for the outer panel's rows). Each step at column j, width
 * jb: the panel A(j:M, j:j+jb) is factored (inner level, or the panel kernel); its
 * interchanges are applied to the range's other columns; the block row right of the panel
 * becomes U12 = L11^-1 A12 (one GEMM with L11's inverse); the rows below get A22 -= L21 U12
 * through gemm.cl. Between the outer steps, the call's pace (pace.h): a cancel stops it there,
 * and a submitted call runs at most its pace's lag of panels ahead of the device (pace.h). */
static int32_t factor_lookahead(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t count,
                                int32_t pivoting, int64_t mn);

static int32_t factor_range(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t c0, int64_t c1,
                            int64_t count, int inner, int32_t pivoting, int64_t mn)
{
    if (!inner && ctx->side.queue != NULL)
        return factor_lookahead(ctx, a, count, pivoting, mn);
    const int64_t nb = inner ? lu_panel_width(ctx, a->rows - c0) : ctx->nb;
    const struct lu_matrix range = lu_column_range(a, c0, c1);
    int32_t status = CLOPS_OK;
    for (int64_t j = c0; status == CLOPS_OK && j < c0 + count; j += nb) {
        if (!inner && j > c0)
            status = pace_unit_queued(&ctx->pace); /* the panel before is queued */
        if (status != CLOPS_OK)
            break;
        const int64_t jb = c0 + count - j < nb ? c0 + count - j : nb;
        const int64_t rows = a->rows - j, right = c1 - j - jb;
        if (!inner)
            status = lu_factor_block(ctx, a, j, jb, pivoting, mn);
        else
            status = lu_factor_panel(ctx, a, j, jb, pivoting, mn);
        if (status == CLOPS_OK && pivoting == LU_PIVOTING_PARTIAL)
            status = lu_laswp(ctx, &ctx->main, &range, j - c0, jb, j, j + jb, 0);
        if (status != CLOPS_OK || right == 0)
            continue;
        status = lu_invert_diagonal_blocks(ctx, &ctx->main, a, j, jb, 1, 0, 0, 1, 1);
        if (status == CLOPS_OK)
            status = lu_apply_inverse(ctx, &ctx->main, jb, 0, a, j, j + jb, right);
        if (status != CLOPS_OK || rows == jb)
            continue;
        const struct gemm_operand l21 = lu_operand(a, j + jb, j), u12 = lu_operand(a, j, j + jb);
        const struct gemm_operand a22 = lu_operand(a, j + jb, j + jb);
        status = gemm_enqueue(&ctx->gemm, ctx->queue, ctx->dtype, rows - jb, right, jb, -1.0, &l21,
                              &u12, 1.0, &a22, ctx->op);
    }
    return status;
}

/* factor_range's outer level with a look-ahead of one panel, on two queues. At the step of the
 * panel P at column j, the main queue factors P, then updates the next panel's columns N (so
 * that it can factor N next), while the side queue updates all the columns T beyond N: the
 * biggest GEMM of the step runs beside the next panel, which, bound by its grid barriers, leaves
 * most of the device idle. The main queue updates N only once the side queue has finished the
 * step before, which wrote N as part of its T; the side queue starts a step once the main queue
 * has factored its panel. Each inverts L11 for its own U12 (a small kernel), so that neither
 * waits for the other's scratch. The panels' interchanges on the columns left of them, which
 * LAPACK applies at each step, are applied once all steps are done, in the same order: the
 * side queue may still be reading a panel's L21 while the main queue factors the next panel,
 * and no step reads those columns again. The same operations reach every element as without
 * look-ahead, so the factors and pivots are the same, bit for bit. */
static int32_t factor_lookahead(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t count,
                                int32_t pivoting, int64_t mn)
{
    const int64_t nb = ctx->nb, c1 = a->cols;
    cl_event side_done = NULL, panel_done = NULL;
    int32_t status = CLOPS_OK;
    for (int64_t j = 0; status == CLOPS_OK && j < count; j += nb) {
        if (j > 0)
            status = pace_unit_queued(&ctx->pace); /* the step before is queued */
        if (status != CLOPS_OK)
            break;
        const int64_t jb = count - j < nb ? count - j : nb;
        const int64_t right = c1 - j - jb, next = right < nb ? right : nb;
        status = lu_factor_block(ctx, a, j, jb, pivoting, mn);
        if (status != CLOPS_OK || right == 0)
            continue;
        if (right > next) {
            status = lu_queue_mark(ctx, ctx->queue, &panel_done);
            if (status == CLOPS_OK)
                status = lu_queue_wait_for(ctx, ctx->side.queue, &panel_done);
            if (status == CLOPS_OK)
                status = lu_update_columns(ctx, &ctx->side, a, j, jb, j + jb + next, right - next,
                                           pivoting);
        }
        cl_event step_done = NULL;
        if (status == CLOPS_OK && right > next)
            status = lu_queue_mark(ctx, ctx->side.queue, &step_done);
        if (status == CLOPS_OK)
            status =
                lu_queue_wait_for(ctx, ctx->queue, &side_done); /* the step before's T holds N */
        side_done = step_done;
        if (status == CLOPS_OK)
            status = lu_update_columns(ctx, &ctx->main, a, j, jb, j + jb, next, pivoting);
    }
    if (status == CLOPS_OK)
        status = lu_queue_wait_for(ctx, ctx->queue, &side_done);
    for (int64_t j = nb; status == CLOPS_OK && pivoting == LU_PIVOTING_PARTIAL && j < count;
         j += nb) {
        const int64_t jb = count - j < nb ? count - j : nb;
        const struct lu_matrix left = lu_column_range(a, 0, j);
        status = lu_laswp(ctx, &ctx->main, &left, 0, 0, j, j + jb, 0);
    }
    if (side_done != NULL)
        clReleaseEvent(side_done);
    if (panel_done != NULL)
        clReleaseEvent(panel_done);
    return status;
}

int32_t lu_factor_block(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t j, int64_t jb,
                        int32_t pivoting, int64_t mn)
{
    if (jb > lu_panel_width(ctx, a->rows - j))
        return factor_range(ctx, a, j, j + jb, jb, 1, pivoting, mn);
    return lu_factor_panel(ctx, a, j, jb, pivoting, mn);
}

int32_t lu_factor(struct lu_ctx *ctx, const struct lu_matrix *a, int32_t pivoting)
{
    const int64_t mn = a->rows < a->cols ? a->rows : a->cols;
    if (ctx->call != NULL) /* the call's units: the outer panels */
        pace_begin(&ctx->pace, ctx->call, ctx->queue, (mn + ctx->nb - 1) / ctx->nb, "panels");
    int32_t status = lu_clear_info(ctx, mn);
    if (status == CLOPS_OK && mn > 0)
        status = factor_range(ctx, a, 0, a->cols, mn, 0, pivoting, mn);
    return status;
}
