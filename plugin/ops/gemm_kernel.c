/* gemm_kernel.c — the kernel for a gemm plan (gemm_impl.h): kernels/gemm_mma.cl's tensor-core or
 * cp.async kernels where they apply, else kernels/gemm.cl with the device's tiles; and the
 * arguments they all take. */
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

/* `passes`: 0 for f64, else the TF32 products of an f32 product (gemm_mma.cl's TF32_PASSES);
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

static int32_t create_portable_kernel(struct clops_pool *pool, struct pool_device *dev,
                                      int32_t dtype, const struct gemm_tiles *tiles, cl_kernel *out,
                                      int *fits)
{
    char options[256];
    int32_t status = build_options(tiles, dtype, options, sizeof options);
    if (status == CLOPS_OK)
        status = gemm_create_kernel(pool, dev, "gemm", "gemm", options,
                                    gemm_tiles_group_size(tiles), out, fits);
    return status;
}

/* The portable kernel for the plan on `dev`, with the tiles of the tuning table, or the fallback
 * ones when those do not fit the device's local memory or the kernel's work-group limit (should
 * even these not fit, the launch reports CL_INVALID_WORK_GROUP_SIZE). */
static int32_t get_portable_kernel(struct clops_pool *pool, struct pool_device *dev,
                                   const struct gemm_plan *p, struct gemm_launch *out)
{
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
    if (gemm_tiles_local_bytes(&tiles, dtype_size(p->dtype)) >
        pool_device_info(dev)->local_mem_bytes)
        tiles = gemm_fallback_tiles;
    int fits = 0;
    int32_t status = create_portable_kernel(pool, dev, p->dtype, &tiles, &out->kernel, &fits);
    if (status == CLOPS_OK && !fits && memcmp(&tiles, &gemm_fallback_tiles, sizeof tiles) != 0) {
        log_msg(CLOPS_LOG_INFO, "%s: '%s' cannot run %zu work-items per group; using smaller tiles",
                gemm_op_name, pool_device_info(dev)->name, gemm_tiles_group_size(&tiles));
        clReleaseKernel(out->kernel);
        out->kernel = NULL;
        tiles = gemm_fallback_tiles;
        status = create_portable_kernel(pool, dev, p->dtype, &tiles, &out->kernel, &fits);
    }
    out->local = gemm_tiles_group_size(&tiles);
    out->global = out->local * (size_t)gemm_tiles_group_count(&tiles, p->m, p->n);
    out->tile_m = tiles.tile_m;
    out->tile_n = tiles.tile_n;
    return status;
}

/* One of a kernel's two tile sets (large, small), in the terms launching it takes. */
struct tiles_choice {
    char options[256];
    size_t group;        /* work-items a group */
    int64_t local_bytes; /* its local memory */
    int32_t tile_m, tile_n;
};

/* Takes kernel `name` of kernels/gemm_mma.cl with the first of choice[0] (the large tiles, when
 * they give every compute unit a group) and choice[1] that fits `dev`'s local memory and
 * work-group limits. *taken = 0: neither fits. */
static int32_t take_first_fitting(struct clops_pool *pool, struct pool_device *dev,
                                  const struct gemm_plan *p, const char *name,
                                  const struct tiles_choice choice[2], struct gemm_launch *out,
                                  int *taken)
{
    const int64_t blocks = gemm_blocks_covering(p->m, p->n, choice[0].tile_m, choice[0].tile_n);
    for (int c = blocks >= pool_device_info(dev)->compute_units ? 0 : 1; c < 2; c++) {
        const struct tiles_choice *t = &choice[c];
        if (t->local_bytes > pool_device_info(dev)->local_mem_bytes)
            continue;
        int fits = 0;
        int32_t status = gemm_create_kernel(pool, dev, "gemm_mma", name, t->options, t->group,
                                            &out->kernel, &fits);
        if (status != CLOPS_OK)
            return status;
        if (!fits) {
            clReleaseKernel(out->kernel);
            out->kernel = NULL;
            continue;
        }
        out->local = t->group;
        out->global = out->local * (size_t)gemm_blocks_covering(p->m, p->n, t->tile_m, t->tile_n);
        out->tile_m = t->tile_m;
        out->tile_n = t->tile_n;
        *taken = 1;
        return CLOPS_OK;
    }
    return CLOPS_OK;
}

/* The tensor-core kernel for the plan, when `dev` has one that applies: f64 with the tiles not
 * configured (they are the portable kernel's), or f32 in a TF32 precision, on an NVIDIA device
 * of a compute capability in the tables, and the kernel's tiles within the device's local memory
 * and work-group limits. *taken = 0 leaves the call to the next kernel. */
static int32_t get_mma_kernel(struct clops_pool *pool, struct pool_device *dev,
                              const struct gemm_plan *p, struct gemm_launch *out, int *taken)
{
    *taken = 0;
    const struct gemm_mma_tuning *tuning = gemm_mma_tuning_for(dev, p->dtype, p->precision);
    if (tuning == NULL || (p->dtype == CLOPS_F64 && gemm_tiles_configured(pool)))
        return CLOPS_OK;
    const int32_t passes = p->dtype == CLOPS_F64 ? 0 : (p->precision == GEMM_3XTF32 ? 3 : 1);
    const struct gemm_mma_tiles *tiles[2] = {&tuning->large, &tuning->small};
    struct tiles_choice choice[2];
    for (int c = 0; c < 2; c++) {
        const struct gemm_mma_tiles *t = tiles[c];
        int32_t status =
            gemm_mma_build_options(t, passes, 0, choice[c].options, sizeof choice[c].options);
        if (status != CLOPS_OK)
            return status;
        choice[c].group = gemm_mma_group_size(t);
        choice[c].local_bytes = gemm_mma_local_bytes(t, dtype_size(p->dtype));
        choice[c].tile_m = t->tile_m;
        choice[c].tile_n = t->tile_n;
    }
    return take_first_fitting(pool, dev, p, "gemm_mma", choice, out, taken);
}

/* gemm_simt for the plan, when it applies: f32 in fp32 with the tiles not configured, on an
 * NVIDIA device of a compute capability in simt_tunings (cp.async), within its limits. */
static int32_t get_simt_kernel(struct clops_pool *pool, struct pool_device *dev,
                               const struct gemm_plan *p, struct gemm_launch *out, int *taken)
{
    *taken = 0;
    const struct gemm_simt_tuning *tuning = gemm_simt_tuning_for(dev);
    if (tuning == NULL || p->dtype != CLOPS_F32 || p->precision != GEMM_FP32 ||
        gemm_tiles_configured(pool))
        return CLOPS_OK;
    const struct gemm_simt_tiles *tiles[2] = {&tuning->large, &tuning->small};
    struct tiles_choice choice[2];
    for (int c = 0; c < 2; c++) {
        const struct gemm_simt_tiles *t = tiles[c];
        int n = snprintf(choice[c].options, sizeof choice[c].options,
                         "-DSIMT -DTILE_M=%d -DTILE_N=%d -DTILE_K=%d -DTHREAD_M=%d -DTHREAD_N=%d "
                         "-DWARP_TM=%d -DSTAGES=%d",
                         (int)t->tile_m, (int)t->tile_n, (int)t->tile_k, (int)t->thread_m,
                         (int)t->thread_n, (int)t->warp_tm, (int)t->stages);
        int32_t status = options_fit(n, sizeof choice[c].options);
        if (status != CLOPS_OK)
            return status;
        choice[c].group = gemm_simt_group_size(t);
        choice[c].local_bytes = gemm_simt_local_bytes(t);
        choice[c].tile_m = t->tile_m;
        choice[c].tile_n = t->tile_n;
    }
    return take_first_fitting(pool, dev, p, "gemm_simt", choice, out, taken);
}

/* The kernel for the plan on `dev`: the tensor-core one where it applies, else gemm_simt where
 * it applies, else the portable one. All take the same arguments (gemm_bind_plan). */
int32_t gemm_get_launch(struct clops_pool *pool, struct pool_device *dev, const struct gemm_plan *p,
                        struct gemm_launch *out)
{
    *out = (struct gemm_launch){0};
    int taken = 0;
    int32_t status = get_mma_kernel(pool, dev, p, out, &taken);
    if (status == CLOPS_OK && !taken)
        status = get_simt_kernel(pool, dev, p, out, &taken);
    if (status != CLOPS_OK || taken)
        return status;
    return get_portable_kernel(pool, dev, p, out);
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
    return pool_set_kernel_args(kernel, 0, args, (cl_uint)(sizeof args / sizeof args[0]),
                                gemm_op_name);
}
