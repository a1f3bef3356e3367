/* getrf_ctx.c — a call's context in the LU engine (getrf.h): its kernels, queues and scratch
 * buffers, taken at the start of a call and released at its end. */
#include "getrf.h"

#include <stdio.h>

/* The context's kernels, the resident panel kernel last (built only where it is used). */
enum { lu_kernel_count = 9 };
static void kernel_slots(struct lu_ctx *ctx, cl_kernel *kernels[lu_kernel_count])
{
    cl_kernel *const slots[lu_kernel_count] = {
        &ctx->copy,  &ctx->copy_int, &ctx->take_pivots, &ctx->laswp_plan, &ctx->laswp_apply,
        &ctx->panel, &ctx->invert,   &ctx->getrs_small, &ctx->resident};
    for (int i = 0; i < lu_kernel_count; i++)
        kernels[i] = slots[i];
}

static int32_t create_kernels(struct lu_ctx *ctx)
{
    char options[160];
    /* lu_invert_lower's rows per work-item: the diagonal blocks are at most NB or PANEL_NB. */
    const int64_t block = ctx->nb > ctx->panel_nb ? ctx->nb : ctx->panel_nb;
    int n = snprintf(options, sizeof options,
                     "-DREAL=%s -DPANEL_WG=%d -DINVERT_ROWS=%d -DLASWP_COLS=%d",
                     ctx->dtype == CLOPS_F64 ? "double -DUSE_FP64" : "float", (int)ctx->panel_wg,
                     (int)((block + ctx->panel_wg - 1) / ctx->panel_wg), (int)lu_laswp_cols(ctx));
    /* Warp shuffles (shfl.sync) for the pivot searches: NVIDIA, compute capability 7.0 on. */
    if (pool_device_nv_compute_capability(ctx->dev) >= 70)
        n += snprintf(options + n, sizeof options - (size_t)n, " -DNV_WARP_SHUFFLE");
    if (ctx->resident_groups > 0)
        snprintf(options + n, sizeof options - (size_t)n, " -DRESIDENT_ROWS=%d -DRESIDENT_NB=%d",
                 (int)ctx->resident_rows, (int)ctx->panel_nb);
    /* Through pool_create_kernel, which rebuilds a cached binary that lacks a kernel. */
    static const char *const names[lu_kernel_count] = {
        "lu_copy",         "lu_copy_int",    "lu_take_pivots",
        "lu_laswp_plan",   "lu_laswp_apply", "lu_panel_column",
        "lu_invert_lower", "lu_getrs_small", "lu_panel_resident"};
    cl_kernel *kernels[lu_kernel_count];
    kernel_slots(ctx, kernels);
    const int count = ctx->resident_groups > 0 ? lu_kernel_count : lu_kernel_count - 1;
    int32_t status = CLOPS_OK;
    for (int i = 0; i < count && status == CLOPS_OK; i++)
        status =
            pool_create_kernel(ctx->pool, ctx->dev, ctx->op, "lu", options, names[i], kernels[i]);
    return status;
}

static void release_kernels(struct lu_ctx *ctx)
{
    cl_kernel *kernels[lu_kernel_count];
    kernel_slots(ctx, kernels);
    for (int i = 0; i < lu_kernel_count; i++) {
        pool_release_kernel(ctx->pool, *kernels[i]);
        *kernels[i] = NULL;
    }
}

int32_t lu_ctx_init(struct lu_ctx *ctx, struct clops_pool *pool, struct pool_device *dev,
                    cl_command_queue queue, const struct op_impl *impl, int32_t dtype, int64_t mn)
{
    const char *op = impl->desc->name;
    ctx->pool = pool;
    ctx->dev = dev;
    ctx->impl = impl;
    ctx->op = op;
    ctx->queue = queue;
    ctx->main.queue = queue;
    ctx->dtype = dtype;
    ctx->elem_size = dtype_size(dtype);
    gemm_engine_init(&ctx->gemm, pool, dev);
    lu_plan(ctx, mn);
    /* Every kernel of the call goes on this one in-order queue without a wait in between;
     * lu_ctx_finish closes the chain into the call's work, whose one wait covers it. */
    int32_t status = pool_chain_begin(pool, ctx->queue, &ctx->chain_start, op);
    if (status == CLOPS_OK && lu_plan_lookahead(ctx))
        status = pool_open_queue(pool, dev, op, &ctx->side.queue);
    if (status == CLOPS_OK)
        status = create_kernels(ctx);
    size_t kernel_max = 0;
    if (status == CLOPS_OK)
        status = pool_kernel_max_work_group(ctx->dev, ctx->panel, op, &kernel_max);
    if (status != CLOPS_OK || kernel_max >= (size_t)ctx->panel_wg)
        return status;
    /* The compiled kernel allows fewer work-items than the device (registers): rebuild. */
    release_kernels(ctx);
    while (ctx->panel_wg > 1 && (size_t)ctx->panel_wg > kernel_max)
        ctx->panel_wg /= 2;
    return create_kernels(ctx);
}

void lu_release_mem(struct pool_device *dev, cl_mem *m)
{
    pool_free_device_memory(dev, *m);
    *m = NULL;
}

/* The side lane's work joins the main queue through an event, a marker there and a barrier
 * here, so that the one wait of the call, on the main queue, covers both lanes and the host never
 * waits on the side queue. factor_lookahead joins them at its end already; a call that failed
 * between may not have. Only where the join itself fails does the host wait for the side queue,
 * so that nothing it still runs uses what lu_ctx_release frees. */
static int32_t join_side_lane(struct lu_ctx *ctx)
{
    if (ctx->side.queue == NULL)
        return CLOPS_OK;
    cl_event side_done = NULL;
    int32_t status = lu_queue_mark(ctx, ctx->side.queue, &side_done);
    if (status == CLOPS_OK)
        status = lu_queue_wait_for(ctx, ctx->queue, &side_done);
    if (side_done != NULL)
        clReleaseEvent(side_done); /* marked, but its flush failed */
    if (status != CLOPS_OK)
        clFinish(ctx->side.queue); /* its status adds nothing to the one being returned */
    return status;
}

int32_t lu_ctx_finish(struct lu_ctx *ctx)
{
    ctx->finished = 1;
    const int32_t joined = join_side_lane(ctx);
    /* Not waited for: the call's one wait, on ctx->queue, covers the chain and the joined side
     * lane; the chain's device time is taken after it (pool_chain_close). */
    int32_t status =
        pool_chain_close(ctx->pool, &ctx->call->work, ctx->queue, ctx->chain_start, ctx->op);
    ctx->chain_start = NULL;
    return status == CLOPS_OK ? joined : status;
}

static void release_lane(struct pool_device *dev, struct lu_lane *lane, int owned)
{
    lu_release_mem(dev, &lane->inv_mem);
    lu_release_mem(dev, &lane->tmp_mem);
    lu_release_mem(dev, &lane->plan_mem);
    if (owned && lane->queue != NULL)
        clReleaseCommandQueue(lane->queue);
    lane->queue = NULL;
}

void lu_ctx_release(struct lu_ctx *ctx)
{
    if (ctx->queue == NULL)
        return;
    /* After the call's wait on ctx->queue. A call that failed before lu_ctx_finish may have
     * left work on the side lane, which that wait did not cover. */
    if (!ctx->finished && ctx->side.queue != NULL)
        clFinish(ctx->side.queue);
    if (ctx->chain_start != NULL)
        clReleaseEvent(ctx->chain_start);
    ctx->chain_start = NULL;
    pace_release(&ctx->pace);
    release_kernels(ctx);
    gemm_engine_release(&ctx->gemm);
    lu_release_mem(ctx->dev, &ctx->ipiv_mem);
    release_lane(ctx->dev, &ctx->main, 0);
    release_lane(ctx->dev, &ctx->side, 1);
    lu_release_mem(ctx->dev, &ctx->part_v_mem);
    lu_release_mem(ctx->dev, &ctx->part_i_mem);
    lu_release_mem(ctx->dev, &ctx->count_mem);
    lu_release_mem(ctx->dev, &ctx->xrow_mem);
    lu_release_mem(ctx->dev, &ctx->arrived_mem);
}

/* A device buffer of at least `bytes`, kept across the steps of one call. */
int32_t lu_ensure_buffer(struct lu_ctx *ctx, cl_mem *mem, int64_t *have, int64_t bytes)
{
    if (*mem != NULL && *have >= bytes)
        return CLOPS_OK;
    lu_release_mem(ctx->dev, mem);
    int32_t status = pool_alloc_device_memory(ctx->dev, bytes, ctx->op, "scratch", mem);
    if (status != CLOPS_OK)
        return status;
    *have = bytes;
    return CLOPS_OK;
}

/* A kernel launched without a work-group size of its own (the element-wise copies, which check
 * their bounds) gets a fixed one, LU_ELEMENTWISE_GROUP items (64, or 32 x 8), its grid rounded up
 * to whole groups: PoCL compiles a kernel again for each work-group size at its first launch,
 * and the sizes it picked from the extents made every new shape compile anew (a 256 x 256 LU's
 * first call spent 1.7 s of its time in seven such compilations of lu_copy on 2 cores). */
enum { LU_ELEMENTWISE_GROUP = 256 };

int32_t lu_run_kernel(struct lu_ctx *ctx, cl_command_queue queue, cl_kernel kernel,
                      const struct kernel_arg *args, cl_uint count, cl_uint dims,
                      const size_t *global, const size_t *local)
{
    int32_t status = pool_set_kernel_args(kernel, 0, args, count, ctx->op);
    if (status != CLOPS_OK)
        return status;
    size_t fixed[2], rounded[2];
    if (local == NULL && dims <= 2) {
        size_t items = LU_ELEMENTWISE_GROUP;
        while (items > pool_device_max_work_group(ctx->dev) && items > 1)
            items /= 2;
        fixed[0] = dims == 1 ? (items < 64 ? items : 64) : (items < 32 ? items : 32);
        fixed[1] = dims == 2 ? items / fixed[0] : 1;
        for (cl_uint d = 0; d < dims; d++)
            rounded[d] = (global[d] + fixed[d] - 1) / fixed[d] * fixed[d];
        if (rounded[0] == 0 || (dims == 2 && rounded[1] == 0))
            return CLOPS_OK; /* nothing to do: an empty grid */
        global = rounded;
        local = fixed;
    }
    return pool_enqueue_kernel(queue, kernel, dims, global, local, ctx->op);
}
