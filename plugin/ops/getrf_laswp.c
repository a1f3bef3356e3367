/* getrf_laswp.c — LAPACK's laswp on the device (getrf.h): row interchanges as planned moves. */
#include "getrf.h"

/* The interchanges k_begin .. k_end - 1 of ctx->ipiv_mem, at most ctx->laswp_chunk, on the
 * columns of m outside [skip_begin, skip_begin + skip_count): their plan into lane->plan_mem,
 * then its moves (kernels/lu.cl: lu_laswp_plan, lu_laswp_apply). */
static int32_t laswp_piece(struct lu_ctx *ctx, struct lu_lane *lane, const struct lu_matrix *m,
                           int64_t skip_begin, int64_t skip_count, int64_t k_begin, int64_t k_end,
                           int32_t reverse)
{
    int32_t status = lu_ensure_buffer(ctx, &lane->plan_mem, &lane->plan_bytes,
                                      (1 + 4 * ctx->laswp_chunk) * (int64_t)sizeof(cl_int));
    if (status != CLOPS_OK)
        return status;
    const int64_t n = k_end - k_begin, wcols = lu_laswp_cols(ctx);
    const cl_int kb = (cl_int)k_begin, ke = (cl_int)k_end, rev = reverse, rows = (cl_int)m->rows;
    const struct kernel_arg plan_args[] = {KARG(ctx->ipiv_mem),
                                           KARG(kb),
                                           KARG(ke),
                                           KARG(rev),
                                           KARG(rows),
                                           KARG(lane->plan_mem),
                                           KARG_LOCAL((size_t)n * sizeof(cl_int))};
    /* The plan: a work-item per touched row (two per interchange) where the device allows. */
    const size_t max_group = pool_device_max_work_group(ctx->dev);
    const size_t local = (size_t)ctx->panel_wg,
                 plan_local = 2 * local <= max_group ? 2 * local : local;
    status = lu_run_kernel(ctx, lane->queue, ctx->laswp_plan, plan_args,
                           (cl_uint)(sizeof plan_args / sizeof plan_args[0]), 1, &plan_local,
                           &plan_local);
    if (status != CLOPS_OK)
        return status;
    const cl_long off = m->offset, ld = m->ld;
    const cl_int cols = (cl_int)m->cols, sb = (cl_int)skip_begin, sc = (cl_int)skip_count;
    const struct kernel_arg apply_args[] = {KARG(m->mem),
                                            KARG(off),
                                            KARG(ld),
                                            KARG(cols),
                                            KARG(sb),
                                            KARG(sc),
                                            KARG(lane->plan_mem),
                                            KARG_LOCAL((size_t)(2 * n * wcols * ctx->elem_size))};
    const size_t groups = (size_t)((m->cols - skip_count + wcols - 1) / wcols);
    const size_t global = groups * local;
    return lu_run_kernel(ctx, lane->queue, ctx->laswp_apply, apply_args,
                         (cl_uint)(sizeof apply_args / sizeof apply_args[0]), 1, &global, &local);
}

/* LAPACK's laswp: row interchanges k_begin .. k_end - 1 of `ipiv` (already in ctx->ipiv_mem),
 * in that order or the reverse, on the columns of m outside [skip_begin, skip_begin +
 * skip_count), on `lane`'s queue; in pieces of at most ctx->laswp_chunk interchanges. */
int32_t lu_laswp(struct lu_ctx *ctx, struct lu_lane *lane, const struct lu_matrix *m,
                 int64_t skip_begin, int64_t skip_count, int64_t k_begin, int64_t k_end,
                 int32_t reverse)
{
    if (m->cols - skip_count <= 0 || k_end <= k_begin)
        return CLOPS_OK;
    const int64_t chunk = ctx->laswp_chunk, pieces = (k_end - k_begin + chunk - 1) / chunk;
    int32_t status = CLOPS_OK;
    for (int64_t p = 0; status == CLOPS_OK && p < pieces; p++) {
        const int64_t at = k_begin + (reverse ? pieces - 1 - p : p) * chunk;
        const int64_t end = at + chunk < k_end ? at + chunk : k_end;
        status = laswp_piece(ctx, lane, m, skip_begin, skip_count, at, end, reverse);
    }
    return status;
}
