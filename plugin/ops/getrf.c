/* getrf.c — the LU engine of lu, solve and lu_solve (getrf.h): LAPACK's getrf as a blocked
 * right-looking factorization whose panels one work-group (or a resident grid) factors on the
 * device and whose O(N^3) work, the trailing updates, goes to gemm.cl; getrs as blocked
 * triangular solves, each diagonal block inverted on the device and applied with a GEMM. */
#include "getrf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"

/* ---- Block size per device ------------------------------------------------------------------ */

/* Two block sizes. NB, the outer panel width, is the K of the trailing GEMM updates: a GPU
 * wants it large enough for the GEMM to run near its peak. Each outer panel is itself factored
 * blocked, in inner panels of PANEL_NB columns: those go to the panel kernel, one launch per
 * column over the whole device, and the rest of the outer panel is updated by small GEMMs. On a CPU
 * device 32 and 8 keep the tests at N = 127 or 300 crossing several blocks of both levels. Both
 * are settings of each operator (nb, panel_nb).
 */
static const struct {
    int32_t type;
    int64_t nb, panel_nb;
    int64_t large_nb, large_from; /* NB from min(M, N) = large_from on (0: never) */
} block_sizes[] = {
    /* H100, N = 8192 f32 (clops-bench lu --config, hosts/bench/RESULTS.md): with the resident
     * panel kernel 256/32 6.34 TFLOP/s, 256/64 6.50, 512/64 6.44; with one launch per column
     * (kernel time) 128/8 136 ms, 128/32 113, 256/32 105. H200, with laswp and the inversions
     * no longer waiting on memory (2026-11-27): N = 8192 f32 256/64 46.3 ms, 512/64 46.8, f64
     * 51.4 / 49.4; N = 16384 f32 174.1 / 164.2, f64 (panel_nb 32, below) 205.0 / 181.4. */
    {CLOPS_DEVICE_GPU, 256, 64, 512, 12288},
    {CLOPS_DEVICE_CPU, 32, 8, 32, 0},
    {0, 32, 8, 32, 0},
};

/* The engine's tunings, none of which a kernel reads as a -D value: they shape the launches.
 * The old spellings -DLU_NB=<n> ... in build_options are still read as these. */
enum { SET_NB, SET_PANEL_NB, SET_PANEL_ROWS, SET_PANEL_RESIDENT, SET_PANEL_GROUPS, SET_LOOKAHEAD };
static const struct op_setting lu_setting_list[] = {
    [SET_NB] = {"nb", SETTING_INT, 1, 1024, SETTING_PER_DEVICE, "LU_NB"},
    [SET_PANEL_NB] = {"panel_nb", SETTING_INT, 1, 1024, SETTING_PER_DEVICE, "LU_PANEL_NB"},
    [SET_PANEL_ROWS] = {"panel_rows", SETTING_INT, 1, 1024, 64, "LU_PANEL_ROWS"},
    [SET_PANEL_RESIDENT] = {"panel_resident", SETTING_BOOL, 0, 1, 1, "LU_PANEL_RESIDENT"},
    [SET_PANEL_GROUPS] = {"panel_groups", SETTING_INT, 1, 1024, SETTING_PER_DEVICE,
                          "LU_PANEL_GROUPS"},
    [SET_LOOKAHEAD] = {"lookahead", SETTING_BOOL, 0, 1, 0, NULL},
};
const struct op_settings lu_settings = {
    lu_setting_list, (int32_t)(sizeof lu_setting_list / sizeof lu_setting_list[0])};

/* NB and PANEL_NB for a matrix whose factorization takes mn columns: configured, or the
 * device's from the table (*panel_nb_configured says which). */
static void block_sizes_for(const struct clops_pool *pool, const struct pool_device *dev,
                            const struct op_impl *op, int64_t mn, int64_t *nb, int64_t *panel_nb,
                            int *panel_nb_configured)
{
    size_t i = 0;
    while (block_sizes[i].type != 0 && block_sizes[i].type != pool_device_info(dev)->type)
        i++;
    const int large = block_sizes[i].large_from > 0 && mn >= block_sizes[i].large_from;
    *nb = pool_op_setting(pool, op, SET_NB,
                          (int32_t)(large ? block_sizes[i].large_nb : block_sizes[i].nb));
    *panel_nb = pool_op_setting(pool, op, SET_PANEL_NB, SETTING_PER_DEVICE);
    *panel_nb_configured = *panel_nb != SETTING_PER_DEVICE;
    if (!*panel_nb_configured)
        *panel_nb = block_sizes[i].panel_nb;
}

/* ---- Validation ------------------------------------------------------------------------------ */

/* Kernel indices are 32-bit ints (gemm.cl's limit). */
static const int64_t lu_extent_max = INT32_MAX / 2;

/* LAPACK's lda >= max(1, M): the matrix is written in place, so rows or columns that overlap
 * (a leading dimension too small) would corrupt each other. */
static int32_t check_layout(const struct clops_tensor *t, const char *op, const char *param)
{
    if (tensor_is_row_major(t) || tensor_is_column_major(t))
        return CLOPS_OK;
    const long long s0 = (long long)t->strides[0], s1 = (long long)t->strides[1];
    if (s1 == 1)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' strides[0] (the leading dimension) = %lld is smaller "
                       "than its %lld columns (row-major)",
                       op, param, s0, (long long)t->shape[1]);
    if (s0 == 1)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' strides[1] (the leading dimension) = %lld is smaller "
                       "than its %lld rows (column-major)",
                       op, param, s1, (long long)t->shape[0]);
    return err_set(CLOPS_ERR_UNSUPPORTED,
                   "%s: parameter '%s' has strides {%lld, %lld}; expected one of them to be 1 "
                   "(a row- or column-major matrix)",
                   op, param, s0, s1);
}

int32_t lu_check_matrix(const struct clops_tensor *t, const char *op, const char *param,
                        const struct pool_device *dev)
{
    int32_t status = tensor_check(t, op, param, LU_DTYPES, 2, dev);
    if (status != CLOPS_OK)
        return status;
    if (dev != NULL && t->dtype == CLOPS_F64 && !pool_device_info(dev)->fp64)
        return err_set(CLOPS_ERR_UNSUPPORTED,
                       "%s: parameter '%s' is f64 but device '%s' has no double precision "
                       "(cl_khr_fp64)",
                       op, param, pool_device_info(dev)->name);
    for (int i = 0; i < 2; i++)
        if (t->shape[i] > lu_extent_max)
            return err_set(CLOPS_ERR_UNSUPPORTED,
                           "%s: parameter '%s' has shape[%d] = %lld, over the kernels' 32-bit "
                           "indexing (at most %lld)",
                           op, param, i, (long long)t->shape[i], (long long)lu_extent_max);
    return check_layout(t, op, param);
}

int32_t lu_check_square(const struct clops_tensor *t, const char *op, const char *param)
{
    if (t->shape[0] == t->shape[1])
        return CLOPS_OK;
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter '%s' has shape %lldx%lld; expected a square N x N matrix", op,
                   param, (long long)t->shape[0], (long long)t->shape[1]);
}

int32_t lu_check_rhs(const struct pool_device *dev, const struct clops_tensor *a,
                     const char *a_param, const struct clops_tensor *b, const char *op)
{
    int32_t status = lu_check_matrix(b, op, "b", dev);
    if (status != CLOPS_OK)
        return status;
    if (b->dtype != a->dtype)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'b' has dtype %s but '%s' has %s; they must match", op,
                       dtype_name(b->dtype), a_param, dtype_name(a->dtype));
    if (b->shape[0] != a->shape[0])
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'b' has %lld rows but '%s' is %lldx%lld; expected N = %lld "
                       "rows",
                       op, (long long)b->shape[0], a_param, (long long)a->shape[0],
                       (long long)a->shape[0], (long long)a->shape[0]);
    return CLOPS_OK;
}

/* ---- Context, scratch buffers, staging ------------------------------------------------------- */

/* Most work-groups of a panel step: the size of the buffers of their pivot candidates. */
enum { panel_groups_max = 1024 };

/* The work-group of the panel and inversion kernels: 256 work-items on a GPU (8 warps per
 * chunk of panel rows); narrow on a CPU, where PoCL runs a work-group on one core and more
 * work-items only add loop overhead. A power of two (the kernels' tree reductions) within the
 * device's limit. */
static int32_t panel_group_size(const struct pool_device *dev)
{
    const size_t max_group = pool_device_max_work_group(dev);
    size_t want = pool_device_info(dev)->type == CLOPS_DEVICE_GPU ? 256 : 64, wg = 1;
    while (wg * 2 <= want && wg * 2 <= max_group)
        wg *= 2;
    return (int32_t)wg;
}

/* The columns side by side in a work-group of lu_laswp_apply: 64 bytes of each row, at most the
 * work-group (its -DLASWP_COLS). */
static int64_t laswp_cols(const struct lu_ctx *ctx)
{
    const int64_t cols = 64 / ctx->elem_size;
    return cols < ctx->panel_wg ? cols : ctx->panel_wg;
}

static int32_t create_kernels(struct lu_ctx *ctx)
{
    char options[160];
    /* lu_invert_lower's rows per work-item: the diagonal blocks are at most NB or PANEL_NB. */
    const int64_t block = ctx->nb > ctx->panel_nb ? ctx->nb : ctx->panel_nb;
    int n = snprintf(options, sizeof options,
                     "-DREAL=%s -DPANEL_WG=%d -DINVERT_ROWS=%d -DLASWP_COLS=%d",
                     ctx->dtype == CLOPS_F64 ? "double -DUSE_FP64" : "float", (int)ctx->panel_wg,
                     (int)((block + ctx->panel_wg - 1) / ctx->panel_wg), (int)laswp_cols(ctx));
    /* Warp shuffles (shfl.sync) for the pivot searches: NVIDIA, compute capability 7.0 on. */
    if (pool_device_nv_compute_capability(ctx->dev) >= 70)
        n += snprintf(options + n, sizeof options - (size_t)n, " -DNV_WARP_SHUFFLE");
    if (ctx->resident_groups > 0)
        snprintf(options + n, sizeof options - (size_t)n, " -DRESIDENT_ROWS=%d -DRESIDENT_NB=%d",
                 (int)ctx->resident_rows, (int)ctx->panel_nb);
    /* Through pool_create_kernel, which rebuilds a cached binary that lacks a kernel. */
    const char *names[6] = {"lu_copy",         "lu_laswp_plan",   "lu_laswp_apply",
                            "lu_panel_column", "lu_invert_lower", "lu_panel_resident"};
    cl_kernel *kernels[6] = {&ctx->copy,  &ctx->laswp_plan, &ctx->laswp_apply,
                             &ctx->panel, &ctx->invert,     &ctx->resident};
    const int count = ctx->resident_groups > 0 ? 6 : 5;
    int32_t status = CLOPS_OK;
    for (int i = 0; i < count && status == CLOPS_OK; i++)
        status =
            pool_create_kernel(ctx->pool, ctx->dev, ctx->op, "lu", options, names[i], kernels[i]);
    return status;
}

static void release_kernels(struct lu_ctx *ctx)
{
    cl_kernel *kernels[6] = {&ctx->copy,  &ctx->laswp_plan, &ctx->laswp_apply,
                             &ctx->panel, &ctx->invert,     &ctx->resident};
    for (int i = 0; i < 6; i++) {
        pool_release_kernel(ctx->pool, *kernels[i]);
        *kernels[i] = NULL;
    }
}

/* The resident panel kernel (kernels/lu.cl: lu_panel_resident) needs every one of its
 * work-groups running at once. On GPUs it runs one group per compute unit, a guarantee in
 * practice (one group fits an SM, and the queue runs one kernel at a time) but not OpenCL's;
 * elsewhere one group, which needs no guarantee (a CPU device's work-groups may run one after
 * another) and on PoCL beats a launch per column: N = 1024 f32 121 ms against 136, f64 149
 * against 225. The setting panel_resident = false turns it off (a launch per column over the
 * whole device instead), panel_groups sets its groups (more than one on a CPU device can
 * deadlock). Each group keeps its rows of the panel in local
 * memory: RESIDENT_ROWS of them, what fits beside the kernel's other local arrays; a panel
 * taller than the groups hold takes the per-column kernel. */
static int64_t resident_rows_for(const struct lu_ctx *ctx, int64_t panel_nb)
{
    const int64_t es = ctx->elem_size;
    const int64_t other = ctx->panel_wg * (es + 4) + 2 * panel_nb * es + 1024;
    return (pool_device_info(ctx->dev)->local_mem_bytes - other) / (panel_nb * es);
}

/* Also narrows an unconfigured PANEL_NB (down to 16) until the groups hold all `rows` of the
 * first panels: the per-column kernel those would take costs more than the narrower panels
 * (H200, N = 16384 f64, NB 512: PANEL_NB 64, whose 86 rows a group x 132 groups fall short,
 * 191.0 ms; 32 181.4). */
static void resident_setup(struct lu_ctx *ctx, int64_t rows_total, int panel_nb_configured)
{
    const struct clops_device_info *info = pool_device_info(ctx->dev);
    const int gpu = info->type == CLOPS_DEVICE_GPU;
    if (!pool_op_setting(ctx->pool, ctx->impl, SET_PANEL_RESIDENT, 1))
        return;
    const int64_t units = info->compute_units;
    int64_t groups =
        pool_op_setting(ctx->pool, ctx->impl, SET_PANEL_GROUPS, gpu ? (int32_t)units : 1);
    if (groups > units)
        groups = units;
    if (groups > panel_groups_max / 2)
        groups = panel_groups_max / 2;
    int64_t rows = resident_rows_for(ctx, ctx->panel_nb);
    while (!panel_nb_configured && ctx->panel_nb > 16 && groups > 0 &&
           (rows_total + groups - 1) / groups > (rows < 1024 ? rows : 1024)) {
        ctx->panel_nb /= 2;
        rows = resident_rows_for(ctx, ctx->panel_nb);
    }
    if (rows < 1 || groups < 1)
        return;
    ctx->resident_rows = rows < 1024 ? rows : 1024;
    ctx->resident_groups = groups;
}

/* The most interchanges one plan takes: up to 256, as many as lu_laswp_apply's rows (two per
 * interchange) and lu_laswp_plan's pivots leave room for in the device's local memory. */
static int64_t laswp_chunk_for(const struct lu_ctx *ctx)
{
    const int64_t row_bytes = laswp_cols(ctx) * ctx->elem_size;
    const int64_t room = pool_device_info(ctx->dev)->local_mem_bytes - 1024;
    const int64_t chunk = room / (2 * row_bytes + 4);
    return chunk < 256 ? (chunk > 1 ? chunk : 1) : 256;
}

/* Look-ahead (factor_lookahead), off unless the setting lookahead turns it on: on the H100
 * (NVIDIA OpenCL 3.0, driver 580) the second queue's GEMMs did not run beside the resident
 * panel kernel, whose work-groups must all be resident at once, and it cost 1-3 % (N = 8192 f32
 * 57.2 ms against 55.9, f64 61.5 against 59.5; 16384 within 1 %; with the panel on 64 or 100
 * groups, to leave compute units to the GEMMs, up to 25 % slower: hosts/bench/RESULTS.md). */
static int lookahead_wanted(const struct lu_ctx *ctx)
{
    return pool_op_setting(ctx->pool, ctx->impl, SET_LOOKAHEAD, 0) != 0;
}

int32_t lu_ctx_init(struct lu_ctx *ctx, struct clops_pool *pool, struct pool_device *dev,
                    cl_command_queue queue, const struct op_impl *impl, int32_t dtype, int64_t rows,
                    int64_t mn)
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
    int panel_nb_configured = 0;
    block_sizes_for(pool, ctx->dev, impl, mn, &ctx->nb, &ctx->panel_nb, &panel_nb_configured);
    ctx->panel_wg = panel_group_size(ctx->dev);
    ctx->panel_rows = pool_op_setting(pool, impl, SET_PANEL_ROWS, 64);
    resident_setup(ctx, rows, panel_nb_configured);
    ctx->laswp_chunk = laswp_chunk_for(ctx);
    /* Every kernel of the call goes on this one in-order queue without a wait in between;
     * lu_ctx_finish waits once and takes the device time of the whole chain. */
    int32_t status = pool_chain_begin(pool, ctx->queue, &ctx->chain_start, op);
    if (status == CLOPS_OK && lookahead_wanted(ctx))
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

static void release_mem(struct pool_device *dev, cl_mem *m)
{
    pool_free_device_memory(dev, *m);
    *m = NULL;
}

int32_t lu_ctx_finish(struct lu_ctx *ctx)
{
    ctx->finished = 1;
    /* The side queue's work is ordered before the main queue's last steps (factor_lookahead);
     * after a failure it may not be, so it is waited for here too. */
    cl_int rc = ctx->side.queue != NULL ? clFinish(ctx->side.queue) : CL_SUCCESS;
    int32_t status =
        pool_chain_end(ctx->pool, ctx->queue, ctx->chain_start, &ctx->device_ns, ctx->op);
    ctx->chain_start = NULL;
    if (status == CLOPS_OK && rc != CL_SUCCESS)
        status = err_cl(rc, "%s: waiting for the look-ahead queue failed", ctx->op);
    return status;
}

static void release_lane(struct pool_device *dev, struct lu_lane *lane, int owned)
{
    release_mem(dev, &lane->inv_mem);
    release_mem(dev, &lane->tmp_mem);
    release_mem(dev, &lane->plan_mem);
    if (owned && lane->queue != NULL)
        clReleaseCommandQueue(lane->queue);
    lane->queue = NULL;
}

void lu_ctx_release(struct lu_ctx *ctx)
{
    if (ctx->queue == NULL)
        return;
    if (!ctx->finished)
        lu_ctx_finish(ctx); /* the call failed already; this wait's status adds nothing */
    release_kernels(ctx);
    release_mem(ctx->dev, &ctx->ipiv_mem);
    release_lane(ctx->dev, &ctx->main, 0);
    release_lane(ctx->dev, &ctx->side, 1);
    release_mem(ctx->dev, &ctx->part_v_mem);
    release_mem(ctx->dev, &ctx->part_i_mem);
    release_mem(ctx->dev, &ctx->count_mem);
    release_mem(ctx->dev, &ctx->xrow_mem);
    release_mem(ctx->dev, &ctx->arrived_mem);
}

int32_t lu_call_open(struct op_call *call, struct lu_call *l, int32_t dtype, int64_t rows,
                     int64_t npiv)
{
    const char *op = call->impl->desc->name;
    l->piv = malloc((size_t)(npiv > 0 ? npiv : 1) * sizeof *l->piv);
    if (l->piv == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", op);
    return lu_ctx_init(&l->ctx, call->pool, call->dev, call->queue, call->impl, dtype, rows, npiv);
}

int32_t lu_call_factor(struct op_call *call, const struct clops_tensor *a, int32_t pivoting,
                       int64_t npiv)
{
    struct lu_call *l = call->plan;
    int32_t status = lu_call_open(call, l, a->dtype, a->shape[0], npiv);
    if (status == CLOPS_OK)
        status = lu_stage(&l->ctx, a, "a", &l->a);
    if (status == CLOPS_OK)
        status = lu_factor(&l->ctx, &l->a.m, pivoting, l->piv, &l->inf);
    return status;
}

int32_t lu_call_write_factors(struct op_call *call, const struct clops_tensor *ipiv,
                              const struct clops_tensor *info, int64_t npiv)
{
    struct lu_call *l = call->plan;
    int32_t status = lu_unstage(&l->ctx, &l->a);
    if (status == CLOPS_OK)
        status = lu_write_pivots(&l->ctx, ipiv, l->piv, npiv, info, l->inf, 0);
    if (status == CLOPS_OK)
        status = lu_ctx_finish(&l->ctx);
    return status;
}

void lu_call_commit(struct op_call *call, const struct clops_tensor *ipiv,
                    const struct clops_tensor *info, int64_t npiv)
{
    struct lu_call *l = call->plan;
    lu_commit(&l->a);
    lu_commit(&l->b);
    lu_write_pivots(&l->ctx, ipiv, l->piv, npiv, info, l->inf, 1);
}

void lu_call_release(struct op_call *call)
{
    struct lu_call *l = call->plan;
    lu_staged_release(&l->b);
    lu_staged_release(&l->a);
    lu_ctx_release(&l->ctx);
    call->device_ns += l->ctx.device_ns;
    free(l->piv);
    l->piv = NULL;
}

void lu_call_stage_none(struct op_call *call)
{
    for (int32_t i = 0; i < call->impl->desc->param_count; i++)
        call->stage[i] = STAGE_NONE;
}

/* A device buffer of at least `bytes`, kept across the steps of one call. */
static int32_t ensure_buffer(struct lu_ctx *ctx, cl_mem *mem, int64_t *have, int64_t bytes)
{
    if (*mem != NULL && *have >= bytes)
        return CLOPS_OK;
    release_mem(ctx->dev, mem);
    int32_t status = pool_alloc_device_memory(ctx->dev, bytes, ctx->op, "scratch", mem);
    if (status != CLOPS_OK)
        return status;
    *have = bytes;
    return CLOPS_OK;
}

static int32_t run_kernel(struct lu_ctx *ctx, cl_command_queue queue, cl_kernel kernel,
                          const struct kernel_arg *args, cl_uint count, cl_uint dims,
                          const size_t *global, const size_t *local)
{
    int32_t status = pool_set_kernel_args(kernel, 0, args, count, ctx->op);
    if (status != CLOPS_OK)
        return status;
    return pool_enqueue_kernel(queue, kernel, dims, global, local, ctx->op);
}

/* dst = src, rows x cols, each with its own strides (kernels/lu.cl: lu_copy). */
static int32_t copy_matrix(struct lu_ctx *ctx, cl_command_queue queue, int64_t rows, int64_t cols,
                           cl_mem src, const cl_long src_geom[3], cl_mem dst,
                           const cl_long dst_geom[3])
{
    const cl_int r = (cl_int)rows, c = (cl_int)cols;
    const struct kernel_arg args[] = {
        KARG(r),           KARG(c),   KARG(src),         KARG(src_geom[0]), KARG(src_geom[1]),
        KARG(src_geom[2]), KARG(dst), KARG(dst_geom[0]), KARG(dst_geom[1]), KARG(dst_geom[2])};
    const size_t global[2] = {(size_t)cols, (size_t)rows};
    return run_kernel(ctx, queue, ctx->copy, args, (cl_uint)(sizeof args / sizeof args[0]), 2,
                      global, NULL);
}

int32_t lu_stage(struct lu_ctx *ctx, const struct clops_tensor *t, const char *param,
                 struct lu_staged *out)
{
    memset(out, 0, sizeof *out);
    out->param = param;
    const int64_t rows = t->shape[0], cols = t->shape[1];
    int32_t status = tensor_stage(ctx->pool, ctx->dev, ctx->queue, t, 1, &out->st, ctx->op, param);
    if (status != CLOPS_OK || rows == 0 || cols == 0)
        return status;
    out->m = (struct lu_matrix){out->st.mem, out->st.offset, rows > 1 ? t->strides[0] : cols, rows,
                                cols};
    if (tensor_is_row_major(t))
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
    return copy_matrix(ctx, ctx->queue, rows, cols, out->st.mem, src, out->copy, dst);
}

int32_t lu_unstage(struct lu_ctx *ctx, struct lu_staged *s)
{
    const struct clops_tensor *t = s->st.t;
    if (s->copy != NULL) {
        const cl_long src[3] = {0, s->m.cols, 1};
        const cl_long dst[3] = {s->st.offset, t->strides[0], t->strides[1]};
        int32_t status =
            copy_matrix(ctx, ctx->queue, s->m.rows, s->m.cols, s->copy, src, s->st.mem, dst);
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
    release_mem(s->st.dev, &s->copy);
    tensor_release(&s->st);
}

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

/* ---- Device steps ---------------------------------------------------------------------------- */

/* The interchanges k_begin .. k_end - 1 of ctx->ipiv_mem, at most ctx->laswp_chunk, on the
 * columns of m outside [skip_begin, skip_begin + skip_count): their plan into lane->plan_mem,
 * then its moves (kernels/lu.cl: lu_laswp_plan, lu_laswp_apply). */
static int32_t laswp_piece(struct lu_ctx *ctx, struct lu_lane *lane, const struct lu_matrix *m,
                           int64_t skip_begin, int64_t skip_count, int64_t k_begin, int64_t k_end,
                           int32_t reverse)
{
    int32_t status = ensure_buffer(ctx, &lane->plan_mem, &lane->plan_bytes,
                                   (1 + 4 * ctx->laswp_chunk) * (int64_t)sizeof(cl_int));
    if (status != CLOPS_OK)
        return status;
    const int64_t n = k_end - k_begin, wcols = laswp_cols(ctx);
    const cl_int kb = (cl_int)k_begin, ke = (cl_int)k_end, rev = reverse;
    const struct kernel_arg plan_args[] = {KARG(ctx->ipiv_mem),
                                           KARG(kb),
                                           KARG(ke),
                                           KARG(rev),
                                           KARG(lane->plan_mem),
                                           KARG_LOCAL((size_t)n * sizeof(cl_int))};
    /* The plan: a work-item per touched row (two per interchange) where the device allows. */
    const size_t max_group = pool_device_max_work_group(ctx->dev);
    const size_t local = (size_t)ctx->panel_wg,
                 plan_local = 2 * local <= max_group ? 2 * local : local;
    status =
        run_kernel(ctx, lane->queue, ctx->laswp_plan, plan_args,
                   (cl_uint)(sizeof plan_args / sizeof plan_args[0]), 1, &plan_local, &plan_local);
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
    return run_kernel(ctx, lane->queue, ctx->laswp_apply, apply_args,
                      (cl_uint)(sizeof apply_args / sizeof apply_args[0]), 1, &global, &local);
}

/* LAPACK's laswp: row interchanges k_begin .. k_end - 1 of `ipiv` (already in ctx->ipiv_mem),
 * in that order or the reverse, on the columns of m outside [skip_begin, skip_begin +
 * skip_count), on `lane`'s queue; in pieces of at most ctx->laswp_chunk interchanges. */
static int32_t laswp(struct lu_ctx *ctx, struct lu_lane *lane, const struct lu_matrix *m,
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

/* ctx->ipiv_mem = ipiv[0 .. n - 1] (lu_solve's pivots, for laswp). */
static int32_t upload_pivots(struct lu_ctx *ctx, const int32_t *ipiv, int64_t n)
{
    int32_t status =
        ensure_buffer(ctx, &ctx->ipiv_mem, &ctx->ipiv_bytes, (n + 1) * (int64_t)sizeof(int32_t));
    if (status != CLOPS_OK)
        return status;
    cl_int rc = clEnqueueWriteBuffer(ctx->queue, ctx->ipiv_mem, CL_TRUE, 0,
                                     (size_t)n * sizeof(int32_t), ipiv, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: uploading pivots failed", ctx->op);
    return CLOPS_OK;
}

static struct gemm_operand operand(const struct lu_matrix *m, int64_t r0, int64_t c0)
{
    return (struct gemm_operand){m->mem, m->offset + r0 * m->ld + c0, m->ld, 1};
}

/* lane->inv_mem from element inv_at: op(T)^-1 (n x n, row-major) for each of `count` diagonal
 * blocks of `m`, at (b0 + s n, b0 + s n) for s = 0 .. count - 1, one after another: their lower
 * triangle (unit: the factor L) when `lower`, else their upper one, transposed when `trans`
 * (kernels/lu.cl: lu_invert_lower, which an upper triangle reaches read backwards). The blocks
 * are independent: one launch inverts them all, in the time of one. */
static int32_t invert_diagonal_blocks(struct lu_ctx *ctx, struct lu_lane *lane,
                                      const struct lu_matrix *m, int64_t b0, int64_t n,
                                      int64_t count, int64_t inv_at, int32_t trans, int lower,
                                      int unit)
{
    int32_t status = ensure_buffer(ctx, &lane->inv_mem, &lane->inv_bytes,
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
    return run_kernel(ctx, lane->queue, ctx->invert, args, (cl_uint)(sizeof args / sizeof args[0]),
                      2, global, local);
}

/* B(r0 : r0+n, c0 : c0+cols) = inv * B(...) with the n x n inverse at element inv_at of
 * lane->inv_mem: the block goes to lane->tmp_mem and a GEMM writes the product back in place. */
static int32_t apply_inverse(struct lu_ctx *ctx, struct lu_lane *lane, int64_t n, int64_t inv_at,
                             const struct lu_matrix *b, int64_t r0, int64_t c0, int64_t cols)
{
    const int64_t es = ctx->elem_size;
    int32_t status = ensure_buffer(ctx, &lane->tmp_mem, &lane->tmp_bytes, n * cols * es);
    if (status != CLOPS_OK)
        return status;
    /* With the copy kernel, not clEnqueueCopyBufferRect: NVIDIA's driver rejects some rect
     * origins inside a matrix with CL_INVALID_VALUE (seen on the H100). */
    const cl_long src_geom[3] = {b->offset + r0 * b->ld + c0, b->ld, 1};
    const cl_long dst_geom[3] = {0, cols, 1};
    status = copy_matrix(ctx, lane->queue, n, cols, b->mem, src_geom, lane->tmp_mem, dst_geom);
    if (status != CLOPS_OK)
        return status;
    const struct gemm_operand a_op = {lane->inv_mem, inv_at, n, 1};
    const struct gemm_operand b_op = {lane->tmp_mem, 0, cols, 1}, c_op = operand(b, r0, c0);
    return gemm_enqueue(ctx->pool, ctx->dev, lane->queue, ctx->dtype, n, cols, n, 1.0, &a_op, &b_op,
                        0.0, &c_op, &ctx->device_ns, ctx->op);
}

/* ---- getrf ----------------------------------------------------------------------------------- */

/* The panel steps' scratch: one pivot candidate per work-group, and the count of finished
 * groups, which starts at 0 and which the last group of each step resets. */
/* *counter (a device int, made when NULL) = 0, in queue order. */
static int32_t clear_counter(struct lu_ctx *ctx, cl_mem *counter)
{
    int64_t bytes = *counter != NULL ? 4 : 0;
    int32_t status = ensure_buffer(ctx, counter, &bytes, 4);
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
        ensure_buffer(ctx, &ctx->part_v_mem, &v_bytes, panel_groups_max * ctx->elem_size);
    if (status == CLOPS_OK)
        status = ensure_buffer(ctx, &ctx->part_i_mem, &i_bytes, panel_groups_max * 4);
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
        status = ensure_buffer(ctx, &ctx->xrow_mem, &r_bytes,
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
static int32_t factor_panel(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t j, int64_t jb,
                            int32_t pivoting, int64_t mn)
{
    const int64_t rows = a->rows - j;
    int64_t resident = ctx->resident_groups;
    if (resident > (rows + 31) / 32)
        resident = (rows + 31) / 32; /* at least 32 rows a group */
    if (resident > 0 && (rows + resident - 1) / resident <= ctx->resident_rows)
        return factor_panel_resident(ctx, a, j, jb, pivoting, mn, resident);
    int32_t status = ensure_panel_scratch(ctx);
    if (status == CLOPS_OK)
        status = set_panel_args(ctx, ctx->panel, a, j, jb, pivoting, mn, ctx->count_mem);
    int64_t groups = (rows + ctx->panel_rows - 1) / ctx->panel_rows;
    if (groups > panel_groups_max)
        groups = panel_groups_max;
    const size_t local = (size_t)ctx->panel_wg, global = (size_t)groups * local;
    for (cl_int k = 0; status == CLOPS_OK && k <= (cl_int)jb; k++) {
        const struct kernel_arg arg = KARG(k);
        status = pool_set_kernel_args(ctx->panel, panel_common_args, &arg, 1, ctx->op);
        if (status == CLOPS_OK)
            status = pool_enqueue_kernel(ctx->queue, ctx->panel, 1, &global, &local, ctx->op);
    }
    return status;
}

/* Columns [c0, c1) of a, as a matrix of its own (rows unchanged, so pivots stay valid). */
static struct lu_matrix column_range(const struct lu_matrix *a, int64_t c0, int64_t c1)
{
    struct lu_matrix v = *a;
    v.offset += c0;
    v.cols = c1 - c0;
    return v;
}

/* Right-looking blocked LU of the first `count` columns from c0 of the rows c0 .. M - 1, with
 * its interchanges and updates applied to the columns [c0, c1): c1 = N at the outer level
 * (blocks of NB), the end of the outer panel at the inner one (blocks of PANEL_NB). Each step at
 * column j, width jb: the panel A(j:M, j:j+jb) is factored (inner level, or the panel kernel);
 * its interchanges are applied to the range's other columns; the block row right of the panel
 * becomes U12 = L11^-1 A12 (one GEMM with L11's inverse); the rows below get A22 -= L21 U12
 * through gemm.cl. */
static int32_t factor_lookahead(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t count,
                                int32_t pivoting, int64_t mn);

static int32_t factor_range(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t c0, int64_t c1,
                            int64_t count, int inner, int32_t pivoting, int64_t mn)
{
    if (!inner && ctx->side.queue != NULL)
        return factor_lookahead(ctx, a, count, pivoting, mn);
    const int64_t nb = inner ? ctx->panel_nb : ctx->nb;
    const struct lu_matrix range = column_range(a, c0, c1);
    int32_t status = CLOPS_OK;
    for (int64_t j = c0; status == CLOPS_OK && j < c0 + count; j += nb) {
        const int64_t jb = c0 + count - j < nb ? c0 + count - j : nb;
        const int64_t rows = a->rows - j, right = c1 - j - jb;
        if (!inner && jb > ctx->panel_nb)
            status = factor_range(ctx, a, j, j + jb, jb, 1, pivoting, mn);
        else
            status = factor_panel(ctx, a, j, jb, pivoting, mn);
        if (status == CLOPS_OK && pivoting == LU_PIVOTING_PARTIAL)
            status = laswp(ctx, &ctx->main, &range, j - c0, jb, j, j + jb, 0);
        if (status != CLOPS_OK || right == 0)
            continue;
        status = invert_diagonal_blocks(ctx, &ctx->main, a, j, jb, 1, 0, 0, 1, 1);
        if (status == CLOPS_OK)
            status = apply_inverse(ctx, &ctx->main, jb, 0, a, j, j + jb, right);
        if (status != CLOPS_OK || rows == jb)
            continue;
        const struct gemm_operand l21 = operand(a, j + jb, j), u12 = operand(a, j, j + jb);
        const struct gemm_operand a22 = operand(a, j + jb, j + jb);
        status = gemm_enqueue(ctx->pool, ctx->dev, ctx->queue, ctx->dtype, rows - jb, right, jb,
                              -1.0, &l21, &u12, 1.0, &a22, &ctx->device_ns, ctx->op);
    }
    return status;
}

/* *event = a marker of what `queue` holds so far, submitted (clFlush) so that another queue can
 * wait for it. */
static int32_t mark(struct lu_ctx *ctx, cl_command_queue queue, cl_event *event)
{
    cl_int rc = clEnqueueMarkerWithWaitList(queue, 0, NULL, event);
    if (rc == CL_SUCCESS)
        rc = clFlush(queue);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: ordering the look-ahead queues failed", ctx->op);
    return CLOPS_OK;
}

/* Nothing enqueued on `queue` after this starts before `*event` (released, and NULL after). */
static int32_t wait_for(struct lu_ctx *ctx, cl_command_queue queue, cl_event *event)
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
static int32_t update_columns(struct lu_ctx *ctx, struct lu_lane *lane, const struct lu_matrix *a,
                              int64_t j, int64_t jb, int64_t c0, int64_t cols, int32_t pivoting)
{
    const struct lu_matrix block = column_range(a, c0, c0 + cols);
    int32_t status = CLOPS_OK;
    if (pivoting == LU_PIVOTING_PARTIAL)
        status = laswp(ctx, lane, &block, 0, 0, j, j + jb, 0);
    if (status == CLOPS_OK)
        status = invert_diagonal_blocks(ctx, lane, a, j, jb, 1, 0, 0, 1, 1);
    if (status == CLOPS_OK)
        status = apply_inverse(ctx, lane, jb, 0, a, j, c0, cols);
    const int64_t rows = a->rows - j;
    if (status != CLOPS_OK || rows == jb)
        return status;
    const struct gemm_operand l21 = operand(a, j + jb, j), u12 = operand(a, j, c0);
    const struct gemm_operand a22 = operand(a, j + jb, c0);
    return gemm_enqueue(ctx->pool, ctx->dev, lane->queue, ctx->dtype, rows - jb, cols, jb, -1.0,
                        &l21, &u12, 1.0, &a22, &ctx->device_ns, ctx->op);
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
        const int64_t jb = count - j < nb ? count - j : nb;
        const int64_t right = c1 - j - jb, next = right < nb ? right : nb;
        if (jb > ctx->panel_nb)
            status = factor_range(ctx, a, j, j + jb, jb, 1, pivoting, mn);
        else
            status = factor_panel(ctx, a, j, jb, pivoting, mn);
        if (status != CLOPS_OK || right == 0)
            continue;
        if (right > next) {
            status = mark(ctx, ctx->queue, &panel_done);
            if (status == CLOPS_OK)
                status = wait_for(ctx, ctx->side.queue, &panel_done);
            if (status == CLOPS_OK)
                status = update_columns(ctx, &ctx->side, a, j, jb, j + jb + next, right - next,
                                        pivoting);
        }
        cl_event step_done = NULL;
        if (status == CLOPS_OK && right > next)
            status = mark(ctx, ctx->side.queue, &step_done);
        if (status == CLOPS_OK)
            status = wait_for(ctx, ctx->queue, &side_done); /* the step before's T holds N */
        side_done = step_done;
        if (status == CLOPS_OK)
            status = update_columns(ctx, &ctx->main, a, j, jb, j + jb, next, pivoting);
    }
    if (status == CLOPS_OK)
        status = wait_for(ctx, ctx->queue, &side_done);
    for (int64_t j = nb; status == CLOPS_OK && pivoting == LU_PIVOTING_PARTIAL && j < count;
         j += nb) {
        const int64_t jb = count - j < nb ? count - j : nb;
        const struct lu_matrix left = column_range(a, 0, j);
        status = laswp(ctx, &ctx->main, &left, 0, 0, j, j + jb, 0);
    }
    if (side_done != NULL)
        clReleaseEvent(side_done);
    if (panel_done != NULL)
        clReleaseEvent(panel_done);
    return status;
}

/* The pivots and info the panels left in ctx->ipiv_mem. */
static int32_t read_pivots(struct lu_ctx *ctx, int64_t mn, int32_t *ipiv, int32_t *info)
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

int32_t lu_factor(struct lu_ctx *ctx, const struct lu_matrix *a, int32_t pivoting, int32_t *ipiv,
                  int32_t *info)
{
    *info = 0;
    const int64_t mn = a->rows < a->cols ? a->rows : a->cols;
    if (mn == 0)
        return CLOPS_OK;
    int32_t status =
        ensure_buffer(ctx, &ctx->ipiv_mem, &ctx->ipiv_bytes, (mn + 1) * (int64_t)sizeof(int32_t));
    if (status == CLOPS_OK) { /* info starts at 0 */
        cl_int rc =
            clEnqueueWriteBuffer(ctx->queue, ctx->ipiv_mem, CL_TRUE, (size_t)mn * sizeof(int32_t),
                                 sizeof(int32_t), info, 0, NULL, NULL);
        if (rc != CL_SUCCESS)
            status = err_cl(rc, "%s: clearing info failed", ctx->op);
    }
    if (status == CLOPS_OK)
        status = factor_range(ctx, a, 0, a->cols, mn, 0, pivoting, mn);
    if (status == CLOPS_OK)
        status = read_pivots(ctx, mn, ipiv, info);
    return status;
}

/* ---- getrs ----------------------------------------------------------------------------------- */

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
    int32_t status = ensure_buffer(ctx, &ctx->main.inv_mem, &ctx->main.inv_bytes,
                                   (full * nb * nb + rest * rest) * ctx->elem_size);
    if (status == CLOPS_OK && full > 0)
        status = invert_diagonal_blocks(ctx, &ctx->main, lu, 0, nb, full, 0, trans, forward, lower);
    if (status == CLOPS_OK && rest > 0)
        status = invert_diagonal_blocks(ctx, &ctx->main, lu, full * nb, rest, 1, full * nb * nb,
                                        trans, forward, lower);
    for (int64_t s = 0; status == CLOPS_OK && s < blocks; s++) {
        const int64_t block = forward ? s : blocks - 1 - s, b0 = block * nb;
        const int64_t bs = n - b0 < nb ? n - b0 : nb;
        status = apply_inverse(ctx, &ctx->main, bs, block * nb * nb, b, b0, 0, nrhs);
        /* The rows of B still to solve: below the block (forward) or above it. */
        const int64_t r0 = forward ? b0 + bs : 0, rows = forward ? n - b0 - bs : b0;
        if (status != CLOPS_OK || rows == 0)
            continue;
        const struct gemm_operand t_op = {lu->mem, lu->offset + r0 * si + b0 * sk, si, sk};
        const struct gemm_operand x_op = operand(b, b0, 0), c_op = operand(b, r0, 0);
        status = gemm_enqueue(ctx->pool, ctx->dev, ctx->queue, ctx->dtype, rows, nrhs, bs, -1.0,
                              &t_op, &x_op, 1.0, &c_op, &ctx->device_ns, ctx->op);
    }
    return status;
}

/* LAPACK getrs: A = P L U, so A X = B is X = U^-1 L^-1 P^T B, and A^T X = B is
 * X = P L^-T U^-T B. */
int32_t lu_solve_factored(struct lu_ctx *ctx, const struct lu_matrix *lu, const int32_t *ipiv,
                          const struct lu_matrix *b, int32_t trans)
{
    const int64_t n = lu->rows;
    if (n == 0 || b->cols == 0)
        return CLOPS_OK;
    int32_t status = upload_pivots(ctx, ipiv, n);
    if (status == CLOPS_OK && !trans)
        status = laswp(ctx, &ctx->main, b, 0, 0, 0, n, 0);
    if (status == CLOPS_OK)
        status = trsm(ctx, lu, !trans, trans, b);
    if (status == CLOPS_OK)
        status = trsm(ctx, lu, trans, trans, b);
    if (status == CLOPS_OK && trans)
        status = laswp(ctx, &ctx->main, b, 0, 0, 0, n, 1);
    return status;
}

int32_t lu_solve_tensor(struct lu_ctx *ctx, const struct lu_matrix *lu, const int32_t *ipiv,
                        const struct clops_tensor *b, int32_t trans, struct lu_staged *sb)
{
    int32_t status = lu_stage(ctx, b, "b", sb);
    if (status == CLOPS_OK)
        status = lu_solve_factored(ctx, lu, ipiv, &sb->m, trans);
    if (status == CLOPS_OK)
        status = lu_unstage(ctx, sb);
    return status;
}
