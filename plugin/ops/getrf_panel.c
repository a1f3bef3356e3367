/* getrf_panel.c — the panel of the LU engine (getrf.h): a column block factored by the panel
 * kernels, resident or one launch per column, with their scratch. */
#include "getrf.h"

/* The panel steps' scratch: one pivot candidate per work-group, and the count of finished
 * groups, which starts at 0 and which the last group of each step resets. */
/* *counter (a device int, made when NULL) = 0, in queue order. */
static int32_t clear_counter(struct lu_ctx *ctx, cl_mem *counter)
{
    int64_t bytes = *counter != NULL ? 4 : 0;
    int32_t status = lu_ensure_buffer(ctx, counter, &bytes, 4);
    if (status != CLOPS_OK)
        return status;
    const cl_int zero = 0;
    cl_int rc = clEnqueueFillBuffer(ctx->queue, *counter, &zero, sizeof zero, 0, sizeof zero, 0,
                                    NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clearing a panel kernel's counter failed", ctx->op);
    return CLOPS_OK;
}

static int32_t ensure_panel_scratch(struct lu_ctx *ctx)
{
    if (ctx->count_mem != NULL)
        return CLOPS_OK;
    int64_t v_bytes = 0, i_bytes = 0;
    int32_t status =
        lu_ensure_buffer(ctx, &ctx->part_v_mem, &v_bytes, lu_panel_groups_max * ctx->elem_size);
    if (status == CLOPS_OK)
        status = lu_ensure_buffer(ctx, &ctx->part_i_mem, &i_bytes, lu_panel_groups_max * 4);
    return status == CLOPS_OK ? clear_counter(ctx, &ctx->count_mem) : status;
}

/* The resident kernel's scratch: the candidate rows (two sets, by parity) and its arrival
 * counter, which only grows (ctx->arrivals counts what it holds). */
static int32_t ensure_resident_scratch(struct lu_ctx *ctx)
{
    if (ctx->arrived_mem != NULL)
        return CLOPS_OK;
    int64_t r_bytes = 0;
    int32_t status = ensure_panel_scratch(ctx);
    if (status == CLOPS_OK)
        status = lu_ensure_buffer(ctx, &ctx->xrow_mem, &r_bytes,
                                  2 * (ctx->resident_groups + 1) * ctx->panel_nb * ctx->elem_size);
    ctx->arrivals = 0;
    return status == CLOPS_OK ? clear_counter(ctx, &ctx->arrived_mem) : status;
}

/* The arguments both panel kernels start with (kernels/lu.cl): the rows x jb panel at (j, j),
 * the pivots and info, the pivoting, the candidates' buffers and the kernel's counter. */
static int32_t set_panel_args(struct lu_ctx *ctx, cl_kernel kernel, const struct lu_matrix *a,
                              int64_t j, int64_t jb, int32_t pivoting, int64_t mn, cl_mem counter)
{
    const cl_long off = a->offset + j * a->ld + j, ld = a->ld;
    const cl_int rows = (cl_int)(a->rows - j), nb = (cl_int)jb, row0 = (cl_int)j;
    const cl_int partial = pivoting == LU_PIVOTING_PARTIAL, info_at = (cl_int)mn;
    const struct kernel_arg args[] = {KARG(a->mem),
                                      KARG(off),
                                      KARG(ld),
                                      KARG(rows),
                                      KARG(nb),
                                      KARG(row0),
                                      KARG(ctx->ipiv_mem),
                                      KARG(info_at),
                                      KARG(partial),
                                      KARG(ctx->part_v_mem),
                                      KARG(ctx->part_i_mem),
                                      KARG(counter)};
    return pool_set_kernel_args(kernel, 0, args, (cl_uint)(sizeof args / sizeof args[0]), ctx->op);
}
enum { panel_common_args = 12 };

/* Factors the rows x jb panel at (j, j) in one launch of `groups` resident work-groups
 * (kernels/lu.cl: lu_panel_resident); pivots and info as factor_panel. */
static int32_t factor_panel_resident(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t j,
                                     int64_t jb, int32_t pivoting, int64_t mn, int64_t groups)
{
    int32_t status = ensure_resident_scratch(ctx);
    if (status != CLOPS_OK)
        return status;
    /* The counter is a 32-bit int: start it over (a fill, ordered by the queue) before it
     * could wrap. */
    if (ctx->arrivals + jb * groups > INT32_MAX / 2) {
        ctx->arrivals = 0;
        status = clear_counter(ctx, &ctx->arrived_mem);
        if (status != CLOPS_OK)
            return status;
    }
    const cl_int base = (cl_int)ctx->arrivals;
    const struct kernel_arg args[] = {KARG(base), KARG(ctx->xrow_mem)};
    status = set_panel_args(ctx, ctx->resident, a, j, jb, pivoting, mn, ctx->arrived_mem);
    if (status == CLOPS_OK)
        status = pool_set_kernel_args(ctx->resident, panel_common_args, args, 2, ctx->op);
    if (status != CLOPS_OK)
        return status;
    ctx->arrivals += jb * groups;
    const size_t local = (size_t)ctx->panel_wg, global = (size_t)groups * local;
    return pool_enqueue_kernel(ctx->queue, ctx->resident, 1, &global, &local, ctx->op);
}

/* Factors the rows x jb panel at (j, j) on the device, one launch per column and one to finish
 * the last (kernels/lu.cl: lu_panel_column), each over chunks of about panel_rows rows;
 * pivots into ctx->ipiv_mem[j ..], a zero pivot into ctx->ipiv_mem[min(M, N)] (info). */
int32_t lu_factor_panel(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t j, int64_t jb,
                        int32_t pivoting, int64_t mn)
{
    const int64_t rows = a->rows - j;
    if (lu_resident_holds(ctx, rows, jb))
        return factor_panel_resident(ctx, a, j, jb, pivoting, mn, lu_resident_groups(ctx, rows));
    int32_t status = ensure_panel_scratch(ctx);
    if (status == CLOPS_OK)
        status = set_panel_args(ctx, ctx->panel, a, j, jb, pivoting, mn, ctx->count_mem);
    int64_t groups = (rows + ctx->panel_rows - 1) / ctx->panel_rows;
    if (groups > lu_panel_groups_max)
        groups = lu_panel_groups_max;
    const size_t local = (size_t)ctx->panel_wg, global = (size_t)groups * local;
    for (cl_int k = 0; status == CLOPS_OK && k <= (cl_int)jb; k++) {
        const struct kernel_arg arg = KARG(k);
        status = pool_set_kernel_args(ctx->panel, panel_common_args, &arg, 1, ctx->op);
        if (status == CLOPS_OK)
            status = pool_enqueue_kernel(ctx->queue, ctx->panel, 1, &global, &local, ctx->op);
    }
    return status;
}
