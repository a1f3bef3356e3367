/* getrf_plan.c — the LU engine's plan for a call (getrf.h): its settings, the block sizes per
 * device, and the shapes of its launches: work-groups, the resident panel kernel, laswp's pieces.
 */
#include "getrf.h"

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
 * device's from the table. */
static void block_sizes_for(const struct clops_pool *pool, const struct pool_device *dev,
                            const struct op_impl *op, int64_t mn, int64_t *nb, int64_t *panel_nb)
{
    size_t i = 0;
    while (block_sizes[i].type != 0 && block_sizes[i].type != pool_device_info(dev)->type)
        i++;
    const int large = block_sizes[i].large_from > 0 && mn >= block_sizes[i].large_from;
    *nb = pool_op_setting(pool, op, SET_NB,
                          (int32_t)(large ? block_sizes[i].large_nb : block_sizes[i].nb));
    *panel_nb = pool_op_setting(pool, op, SET_PANEL_NB, (int32_t)block_sizes[i].panel_nb);
}

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
int64_t lu_laswp_cols(const struct lu_ctx *ctx)
{
    const int64_t cols = 64 / ctx->elem_size;
    return cols < ctx->panel_wg ? cols : ctx->panel_wg;
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

/* The resident kernel's groups: one per compute unit on GPUs (panel_groups), one elsewhere. */
static void resident_setup(struct lu_ctx *ctx)
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
    if (groups > lu_panel_groups_max / 2)
        groups = lu_panel_groups_max / 2;
    const int64_t rows = resident_rows_for(ctx, ctx->panel_nb);
    if (rows < 1 || groups < 1)
        return;
    ctx->resident_rows = rows < 1024 ? rows : 1024;
    ctx->resident_groups = groups;
}

int64_t lu_resident_groups(const struct lu_ctx *ctx, int64_t rows)
{
    const int64_t groups = ctx->resident_groups;
    return groups > (rows + 31) / 32 ? (rows + 31) / 32 : groups; /* 32 rows a group at least */
}

/* A group's tile holds resident_rows rows of panel_nb, and as many more rows of a narrower
 * panel as fit in it (kernels/lu.cl), at most 1024. */
int lu_resident_holds(const struct lu_ctx *ctx, int64_t rows, int64_t width)
{
    const int64_t groups = lu_resident_groups(ctx, rows);
    if (groups < 1 || width < 1)
        return 0;
    int64_t held = ctx->resident_rows * ctx->panel_nb / width;
    held = held < 1024 ? held : 1024;
    return (rows + groups - 1) / groups <= held;
}

/* PANEL_NB, halved (down to 16, or to PANEL_NB where that is less) while the resident kernel's
 * groups cannot hold all `rows` rows in local memory: the per-column kernel such a panel would
 * take costs more than narrower panels (H200, N = 16384 f64, NB 512: PANEL_NB 64, whose 86
 * rows a group x 132 groups fall short, 191.0 ms; 32 181.4), and the narrowest panels cost
 * more launches than wider ones that fit (N = 8192, NB 256, PANEL_NB 64 against 32: f32 46.3
 * ms against 48.8, f64 51.4 against 53.7). Each outer panel takes its own width, so the later,
 * shorter ones are wider again. PANEL_NB where no width fits: the per-column kernel takes it
 * (N = 49152 f64 on an H200: 2903.6 ms, against 2914.7-2916.5 with 16-wide panels there). */
int64_t lu_panel_width(const struct lu_ctx *ctx, int64_t rows)
{
    const int64_t least = ctx->panel_nb < 16 ? ctx->panel_nb : 16;
    for (int64_t width = ctx->panel_nb; width >= least && width > 0; width /= 2)
        if (lu_resident_holds(ctx, rows, width))
            return width;
    return ctx->panel_nb;
}

/* The most interchanges one plan takes: up to 256, as many as lu_laswp_apply's rows (two per
 * interchange) and lu_laswp_plan's pivots leave room for in the device's local memory. */
static int64_t laswp_chunk_for(const struct lu_ctx *ctx)
{
    const int64_t row_bytes = lu_laswp_cols(ctx) * ctx->elem_size;
    const int64_t room = pool_device_info(ctx->dev)->local_mem_bytes - 1024;
    const int64_t chunk = room / (2 * row_bytes + 4);
    return chunk < 256 ? (chunk > 1 ? chunk : 1) : 256;
}

/* Look-ahead (factor_lookahead), off unless the setting lookahead turns it on: on the H100
 * (NVIDIA OpenCL 3.0, driver 580) the second queue's GEMMs did not run beside the resident
 * panel kernel, whose work-groups must all be resident at once, and it cost 1-3 % (N = 8192 f32
 * 57.2 ms against 55.9, f64 61.5 against 59.5; 16384 within 1 %; with the panel on 64 or 100
 * groups, to leave compute units to the GEMMs, up to 25 % slower: hosts/bench/RESULTS.md). */
int lu_plan_lookahead(const struct lu_ctx *ctx)
{
    return pool_op_setting(ctx->pool, ctx->impl, SET_LOOKAHEAD, 0) != 0;
}

void lu_plan(struct lu_ctx *ctx, int64_t mn)
{
    block_sizes_for(ctx->pool, ctx->dev, ctx->impl, mn, &ctx->nb, &ctx->panel_nb);
    if (ctx->nb_forced > 0) {
        ctx->nb = ctx->nb_forced;
        ctx->panel_nb = ctx->panel_nb < ctx->nb ? ctx->panel_nb : ctx->nb;
    }
    ctx->panel_wg = panel_group_size(ctx->dev);
    ctx->panel_rows = pool_op_setting(ctx->pool, ctx->impl, SET_PANEL_ROWS, 64);
    resident_setup(ctx);
    ctx->laswp_chunk = laswp_chunk_for(ctx);
}
