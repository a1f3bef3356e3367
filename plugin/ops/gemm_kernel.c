/* gemm_kernel.c — the kernel for a gemm plan (gemm_impl.h): kernels/gemm_mma.cl's tensor-core or
 * kernels/gemm_simt.cl's cp.async kernel where they apply, else kernels/gemm.cl with the device's
 * tiles; and the arguments they all take. */
#include <stdio.h>
#include <string.h>

#include "gemm_impl.h"

#include "registry.h"

static int32_t options_fit(int n, size_t size)
{
    if (n < 0 || (size_t)n >= size)
        return err_set(CLOPS_ERR_INTERNAL, "%s: build options do not fit %zu bytes", gemm_op_name,
                       size);
    return CLOPS_OK;
}

static int32_t build_options(const struct gemm_tiles *t, int32_t dtype, char *out, size_t size)
{
    int n = snprintf(
        out, size, "-DREAL=%s%s -DTILE_M=%d -DTILE_N=%d -DTILE_K=%d -DWPT_M=%d -DWPT_N=%d -DVW=%d",
        dtype == CLOPS_F64 ? "double" : "float", dtype == CLOPS_F64 ? " -DUSE_FP64" : "",
        (int)t->tile_m, (int)t->tile_n, (int)t->tile_k, (int)t->wpt_m, (int)t->wpt_n, (int)t->vw);
    return options_fit(n, size);
}

/* `passes`: 0 for f64, else the TF32 products of an f32 product (gemm_mma_core.cl's TF32_PASSES);
 * `packed`: the file's tf32_pack and gemm_tf32 instead of gemm_mma (-DPACKED). */
int32_t gemm_mma_build_options(const struct gemm_mma_tiles *t, int32_t passes, int packed,
                               char *out, size_t size)
{
    int n = snprintf(out, size,
                     "-DTILE_M=%d -DTILE_N=%d -DTILE_K=%d -DWARP_M=%d -DWARP_N=%d -DMMA_SHAPE=%d "
                     "-DSTAGES=%d",
                     (int)t->tile_m, (int)t->tile_n, (int)t->tile_k, (int)t->warp_m, (int)t->warp_n,
                     (int)t->shape, (int)t->stages);
    if (n >= 0 && (size_t)n < size && passes > 0)
        n += snprintf(out + n, size - (size_t)n, " -DTF32_PASSES=%d", (int)passes);
    if (n >= 0 && (size_t)n < size && packed)
        n += snprintf(out + n, size - (size_t)n, " -DPACKED");
    return options_fit(n, size);
}

/* A kernel object of the call's own (pool_create_kernel): `name` from the pool's program of
 * kernels/<source>.cl built with `options`. *fits = 0 when the device cannot run `group_size`
 * work-items per group of it. */
int32_t gemm_create_kernel(struct clops_pool *pool, struct pool_device *dev, const char *source,
                           const char *name, const char *options, size_t group_size, cl_kernel *out,
                           int *fits)
{
    int32_t status = pool_create_kernel(pool, dev, gemm_op_name, source, options, name, out);
    if (status != CLOPS_OK)
        return status;
    size_t max_group = 0;
    status = pool_kernel_max_work_group(dev, *out, gemm_op_name, &max_group);
    if (status != CLOPS_OK) {
        clReleaseKernel(*out);
        *out = NULL;
        return status;
    }
    *fits = group_size <= max_group;
    return CLOPS_OK;
}

/* One way to run a plan: kernel `name` of kernels/<source>.cl built with `options`, `group`
 * work-items a group, each covering tile_m x tile_n of C with local_bytes of local memory.
 * `last_resort`: taken even beyond the device's limits (its launch then reports them). */
struct gemm_choice {
    const char *source, *name;
    char options[256];
    size_t group;
    int64_t local_bytes;
    int32_t tile_m, tile_n, tile_k;
    int last_resort;
};

/* The kernels, in order of preference: each gives its choices for a plan on a device, best
 * first (*count = 0: it does not apply). */
typedef int32_t (*gemm_choices_fn)(const struct clops_pool *pool, const struct pool_device *dev,
                                   const struct gemm_plan *p, struct gemm_choice out[2],
                                   int *count);

/* The large tiles first when they give every compute unit a work-group, else the small ones
 * alone (a kernel's two tile sets of its tuning table). */
static int first_choice(const struct pool_device *dev, const struct gemm_plan *p,
                        const struct gemm_choice *large)
{
    const int64_t blocks = gemm_blocks_covering(p->m, p->n, large->tile_m, large->tile_n);
    return blocks >= pool_device_info(dev)->compute_units ? 0 : 1;
}

/* Keeps choices[first..1] as out[0..]. */
static int keep_from(struct gemm_choice choice[2], int first, struct gemm_choice out[2])
{
    for (int c = first; c < 2; c++)
        out[c - first] = choice[c];
    return 2 - first;
}

/* The tensor-core kernel: f64 with the tiles not configured (they are the portable kernel's),
 * or f32 in a TF32 precision, on an NVIDIA device of a compute capability in the tables. */
static int32_t mma_choices(const struct clops_pool *pool, const struct pool_device *dev,
                           const struct gemm_plan *p, struct gemm_choice out[2], int *count)
{
    *count = 0;
    const struct gemm_mma_tuning *tuning = gemm_mma_tuning_for(dev, p->dtype, p->precision);
    if (tuning == NULL || (p->dtype == CLOPS_F64 && gemm_tiles_configured(pool)))
        return CLOPS_OK;
    const int32_t passes = p->dtype == CLOPS_F64 ? 0 : (p->precision == GEMM_3XTF32 ? 3 : 1);
    const struct gemm_mma_tiles *tiles[2] = {&tuning->large, &tuning->small};
    struct gemm_choice choice[2];
    for (int c = 0; c < 2; c++) {
        const struct gemm_mma_tiles *t = tiles[c];
        choice[c] =
            (struct gemm_choice){.source = "gemm_pipeline+gemm_mma_core+gemm_mma",
                                 .name = "gemm_mma",
                                 .group = gemm_mma_group_size(t),
                                 .local_bytes = gemm_mma_local_bytes(t, dtype_size(p->dtype)),
                                 .tile_m = t->tile_m,
                                 .tile_n = t->tile_n,
                                 .tile_k = t->tile_k};
        int32_t status =
            gemm_mma_build_options(t, passes, 0, choice[c].options, sizeof choice[c].options);
        if (status != CLOPS_OK)
            return status;
    }
    *count = keep_from(choice, first_choice(dev, p, &choice[0]), out);
    return CLOPS_OK;
}

/* gemm_simt: f32 in fp32 with the tiles not configured, on an NVIDIA device of a compute
 * capability in simt_tunings (cp.async). */
static int32_t simt_choices(const struct clops_pool *pool, const struct pool_device *dev,
                            const struct gemm_plan *p, struct gemm_choice out[2], int *count)
{
    *count = 0;
    const struct gemm_simt_tuning *tuning = gemm_simt_tuning_for(dev);
    if (tuning == NULL || p->dtype != CLOPS_F32 || p->precision != GEMM_FP32 ||
        gemm_tiles_configured(pool))
        return CLOPS_OK;
    const struct gemm_simt_tiles *tiles[2] = {&tuning->large, &tuning->small};
    struct gemm_choice choice[2];
    for (int c = 0; c < 2; c++) {
        const struct gemm_simt_tiles *t = tiles[c];
        choice[c] = (struct gemm_choice){.source = "gemm_pipeline+gemm_simt",
                                         .name = "gemm_simt",
                                         .group = gemm_simt_group_size(t),
                                         .local_bytes = gemm_simt_local_bytes(t),
                                         .tile_m = t->tile_m,
                                         .tile_n = t->tile_n,
                                         .tile_k = t->tile_k};
        int n = snprintf(choice[c].options, sizeof choice[c].options,
                         "-DTILE_M=%d -DTILE_N=%d -DTILE_K=%d -DTHREAD_M=%d -DTHREAD_N=%d "
                         "-DWARP_TM=%d -DSTAGES=%d",
                         (int)t->tile_m, (int)t->tile_n, (int)t->tile_k, (int)t->thread_m,
                         (int)t->thread_n, (int)t->warp_tm, (int)t->stages);
        int32_t status = options_fit(n, sizeof choice[c].options);
        if (status != CLOPS_OK)
            return status;
    }
    *count = keep_from(choice, first_choice(dev, p, &choice[0]), out);
    return CLOPS_OK;
}

static int32_t portable_choice(const struct gemm_tiles *t, int32_t dtype, struct gemm_choice *out)
{
    *out = (struct gemm_choice){.source = "gemm",
                                .name = "gemm",
                                .group = gemm_tiles_group_size(t),
                                .local_bytes = gemm_tiles_local_bytes(t, dtype_size(dtype)),
                                .tile_m = t->tile_m,
                                .tile_n = t->tile_n,
                                .tile_k = t->tile_k};
    return build_options(t, dtype, out->options, sizeof out->options);
}

/* The portable kernel, everywhere: the tuning table's tiles (or the configured ones), then the
 * fallback tiles, the last resort, for a device whose local memory or work-group limit the
 * first do not fit. */
static int32_t portable_choices(const struct clops_pool *pool, const struct pool_device *dev,
                                const struct gemm_plan *p, struct gemm_choice out[2], int *count)
{
    *count = 0;
    struct gemm_tiles tiles = gemm_tiles_with_settings(pool, gemm_tiles_for_call(dev, p->m, p->n));
    if (!gemm_tiles_are_valid(&tiles)) {
        /* The table's tiles are valid: only configured ones can fail here. */
        return call_refuse_settings(pool, &impl_gemm,
                                    "the tiles %dx%dx%d of %dx%d, vw %d, do not divide (tile_m %% "
                                    "wpt_m, tile_n %% wpt_n, wpt %% vw and the tile loads over the "
                                    "work-group must all be exact)",
                                    (int)tiles.tile_m, (int)tiles.tile_n, (int)tiles.tile_k,
                                    (int)tiles.wpt_m, (int)tiles.wpt_n, (int)tiles.vw);
    }
    int32_t status = CLOPS_OK;
    if (memcmp(&tiles, &gemm_fallback_tiles, sizeof tiles) != 0)
        status = portable_choice(&tiles, p->dtype, &out[(*count)++]);
    if (status == CLOPS_OK)
        status = portable_choice(&gemm_fallback_tiles, p->dtype, &out[(*count)++]);
    out[*count - 1].last_resort = 1;
    return status;
}

static const gemm_choices_fn gemm_variants[] = {mma_choices, simt_choices, portable_choices};

/* The engine's kernel for `c`, or a new one it keeps (*fits: within the work-group limit). */
static int32_t engine_kernel(struct gemm_engine *e, const struct gemm_choice *c, cl_kernel *out,
                             int *fits, int *kept)
{
    for (int i = 0; i < e->count; i++)
        if (e->kept[i].name == c->name && strcmp(e->kept[i].options, c->options) == 0) {
            *out = e->kept[i].kernel;
            *fits = e->kept[i].fits;
            *kept = 1;
            return CLOPS_OK;
        }
    *kept = 0;
    int32_t status =
        gemm_create_kernel(e->pool, e->dev, c->source, c->name, c->options, c->group, out, fits);
    if (status != CLOPS_OK || e->count == GEMM_ENGINE_KERNELS)
        return status;
    e->kept[e->count].name = c->name;
    snprintf(e->kept[e->count].options, sizeof e->kept[e->count].options, "%s", c->options);
    e->kept[e->count].kernel = *out;
    e->kept[e->count].fits = *fits;
    e->count++;
    *kept = 1;
    return CLOPS_OK;
}

/* Takes the first of the variants' choices that fits `dev` (local memory, then the kernel's
 * work-group limit), or a last resort; the kernel from the engine where it has one. */
static int32_t take_choice(struct gemm_engine *e, const struct gemm_choice *c, int *taken,
                           struct gemm_launch *out)
{
    *taken = 0;
    if (c->local_bytes > pool_device_info(e->dev)->local_mem_bytes && !c->last_resort)
        return CLOPS_OK;
    int fits = 0, kept = 0;
    cl_kernel kernel = NULL;
    int32_t status = engine_kernel(e, c, &kernel, &fits, &kept);
    if (status != CLOPS_OK)
        return status;
    if (!fits && !c->last_resort) {
        log_msg(CLOPS_LOG_INFO,
                "%s: '%s' cannot run %zu work-items per group of %s; trying the next", gemm_op_name,
                pool_device_info(e->dev)->name, c->group, c->name);
        if (!kept)
            pool_release_kernel(e->pool, kernel);
        return CLOPS_OK;
    }
    *out = (struct gemm_launch){.kernel = kernel,
                                .local = c->group,
                                .tile_m = c->tile_m,
                                .tile_n = c->tile_n,
                                .tile_k = c->tile_k,
                                .borrowed = kept};
    *taken = 1;
    return CLOPS_OK;
}

/* The choice's -DCARRY build, for one slab of K (gemm_plan.carry). */
static int32_t carry_build(struct gemm_choice *c)
{
    const size_t used = strlen(c->options);
    return options_fit(snprintf(c->options + used, sizeof c->options - used, " -DCARRY"),
                       sizeof c->options - used);
}

int32_t gemm_engine_launch(struct gemm_engine *e, const struct gemm_plan *p,
                           struct gemm_launch *out)
{
    *out = (struct gemm_launch){0};
    for (size_t v = 0; v < sizeof gemm_variants / sizeof gemm_variants[0]; v++) {
        struct gemm_choice choice[2];
        int count = 0, taken = 0;
        int32_t status = gemm_variants[v](e->pool, e->dev, p, choice, &count);
        for (int c = 0; c < count && status == CLOPS_OK && p->carry != 0; c++)
            status = carry_build(&choice[c]);
        for (int c = 0; c < count && status == CLOPS_OK && !taken; c++)
            status = take_choice(e, &choice[c], &taken, out);
        if (status != CLOPS_OK)
            return status;
        if (taken) {
            out->global =
                out->local * (size_t)gemm_blocks_covering(p->m, p->n, out->tile_m, out->tile_n);
            return CLOPS_OK;
        }
    }
    return err_set(CLOPS_ERR_INTERNAL, "%s: no kernel for the call", gemm_op_name);
}

void gemm_engine_init(struct gemm_engine *e, struct clops_pool *pool, struct pool_device *dev)
{
    *e = (struct gemm_engine){.pool = pool, .dev = dev};
}

void gemm_engine_release(struct gemm_engine *e)
{
    for (int i = 0; i < e->count; i++)
        pool_release_kernel(e->pool, e->kept[i].kernel);
    e->count = 0;
}

void gemm_launch_release(struct gemm_engine *e, struct gemm_launch *l)
{
    if (!l->borrowed)
        pool_release_kernel(e->pool, l->kernel);
    l->kernel = NULL;
}

/* Binds the plan and the staged operands to the kernel's parameters, in its order. */
int32_t gemm_bind_plan(cl_kernel kernel, const struct gemm_plan *p, const struct staged_tensor *sa,
                       const struct staged_tensor *sb, const struct staged_tensor *sc)
{
    const cl_int m = (cl_int)p->m, n = (cl_int)p->n, k = (cl_int)p->k;
    const float alpha_f = (float)p->alpha, beta_f = (float)p->beta;
    const int f64 = p->dtype == CLOPS_F64;
    const size_t real = f64 ? sizeof(double) : sizeof(float);
    const cl_long off_a = sa->offset, off_b = sb->offset, off_c = sc->offset;
    const cl_long ka_si = p->ka_si, ka_sk = p->ka_sk, kb_sk = p->kb_sk, kb_sj = p->kb_sj;
    const cl_long ldc = p->ldc;
    const struct kernel_arg args[] = {
        KARG(m),
        KARG(n),
        KARG(k),
        {real, f64 ? (const void *)&p->alpha : (const void *)&alpha_f},
        {real, f64 ? (const void *)&p->beta : (const void *)&beta_f},
        KARG(sa->mem),
        KARG(off_a),
        KARG(ka_si),
        KARG(ka_sk),
        KARG(sb->mem),
        KARG(off_b),
        KARG(kb_sk),
        KARG(kb_sj),
        KARG(sc->mem),
        KARG(off_c),
        KARG(ldc)};
    int32_t status = pool_set_kernel_args(kernel, 0, args, (cl_uint)(sizeof args / sizeof args[0]),
                                          gemm_op_name);
    if (status != CLOPS_OK || p->carry == 0)
        return status;
    const cl_long off_w = p->w_offset, ldw = p->ldw;
    const cl_int carry = p->carry;
    const struct kernel_arg carried[] = {KARG(p->w), KARG(off_w), KARG(ldw), KARG(carry)};
    return pool_set_kernel_args(kernel, (cl_uint)(sizeof args / sizeof args[0]), carried,
                                (cl_uint)(sizeof carried / sizeof carried[0]), gemm_op_name);
}
