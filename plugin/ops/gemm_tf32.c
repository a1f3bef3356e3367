/* gemm_tf32.c — f32 gemm in tf32 from packed operands (gemm_impl.h): kernels/gemm_tf32.cl's
 * tf32_pack and gemm_tf32 (-DPACKED). */
#include "gemm_impl.h"

/* The program's source files (pool_programs.c joins them in this order). */
static const char tf32_source[] = "gemm_pipeline+gemm_mma_core+gemm_tf32";

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* The packed operands of a call: A's rows padded to whole TILE_M, B's columns to whole TILE_N,
 * both depths to whole TILE_K; in float4 from the buffer's start, A's then B's. */
struct tf32_packing {
    int64_t m_pad, n_pad, k_pad;
    cl_long a_at, b_at, bytes;
};

static struct tf32_packing tf32_packing_for(const struct gemm_plan *p)
{
    const struct gemm_mma_tiles *t = &gemm_tf32_packed_tiles;
    struct tf32_packing k = {.m_pad = round_up(p->m, t->tile_m),
                             .n_pad = round_up(p->n, t->tile_n),
                             .k_pad = round_up(p->k, t->tile_k)};
    k.a_at = 0;
    k.b_at = k.m_pad * k.k_pad / 4;
    k.bytes = (k.m_pad + k.n_pad) * k.k_pad * (cl_long)sizeof(float);
    return k;
}

/* Whether the call runs gemm_tf32: f32 in tf32 with A and B read, on a device with TF32 tensor
 * cores, within the kernel's int extents. */
int gemm_takes_tf32_packed(const struct pool_device *dev, const struct gemm_plan *p)
{
    return p->dtype == CLOPS_F32 && p->precision == GEMM_TF32 && p->k > 0 &&
           gemm_mma_tuning_for(dev, p->dtype, p->precision) != NULL &&
           round_up(p->k, gemm_tf32_packed_tiles.tile_k) <= INT32_MAX &&
           gemm_mma_local_bytes(&gemm_tf32_packed_tiles, 4) <=
               pool_device_info(dev)->local_mem_bytes;
}

/* Enqueues tf32_pack for one operand: `rows` rows of depth K, element (r, k) at
 * mem[offset + r * s_row + k * s_depth], into packed[at ...]. */
static int32_t enqueue_pack(cl_command_queue queue, cl_kernel pack, const struct tf32_packing *k,
                            cl_int rows, cl_int depth, const struct staged_tensor *src,
                            cl_long s_row, cl_long s_depth, cl_mem packed, cl_long at,
                            int64_t rows_pad)
{
    const cl_int depth_pad = (cl_int)k->k_pad;
    const cl_long off = src->offset;
    const struct kernel_arg args[] = {KARG(rows),     KARG(depth),  KARG(depth_pad),
                                      KARG(src->mem), KARG(off),    KARG(s_row),
                                      KARG(s_depth),  KARG(packed), KARG(at)};
    int32_t status =
        pool_set_kernel_args(pack, 0, args, (cl_uint)(sizeof args / sizeof args[0]), gemm_op_name);
    /* One work-item a float4; the padded rows make the count a multiple of 32 * 8. */
    const size_t global = (size_t)(rows_pad / 16) * (size_t)(k->k_pad / 8) * 32, local = 256;
    if (status == CLOPS_OK)
        status = pool_enqueue_kernel(queue, pack, 1, &global, &local, gemm_op_name);
    return status;
}

static int32_t enqueue_tf32_gemm(cl_command_queue queue, cl_kernel gemm, const struct gemm_plan *p,
                                 const struct tf32_packing *k, cl_mem packed,
                                 const struct staged_tensor *sc)
{
    const struct gemm_mma_tiles *t = &gemm_tf32_packed_tiles;
    const cl_int m = (cl_int)p->m, n = (cl_int)p->n, depth_pad = (cl_int)k->k_pad;
    const float alpha = (float)p->alpha, beta = (float)p->beta;
    const cl_long off_c = sc->offset, ldc = p->ldc;
    const struct kernel_arg args[] = {KARG(m),       KARG(n),      KARG(depth_pad), KARG(alpha),
                                      KARG(beta),    KARG(packed), KARG(k->a_at),   KARG(k->b_at),
                                      KARG(sc->mem), KARG(off_c),  KARG(ldc)};
    int32_t status =
        pool_set_kernel_args(gemm, 0, args, (cl_uint)(sizeof args / sizeof args[0]), gemm_op_name);
    const size_t local = gemm_mma_group_size(t);
    const size_t global = local * (size_t)gemm_blocks_covering(p->m, p->n, t->tile_m, t->tile_n);
    if (status == CLOPS_OK)
        status = pool_enqueue_kernel(queue, gemm, 1, &global, &local, gemm_op_name);
    return status;
}

/* Packs A and B into device scratch (tf32_pack) and multiplies them (gemm_tf32), one chain on
 * the call's queue, waited for once; the scratch is released after the wait. *taken = 0 when
 * the device has no room for the packed operands (the caller then runs gemm_mma, which needs
 * none): the call must not fail for want of memory that only this path asks. */
int32_t gemm_run_tf32_packed(struct op_call *call, const struct staged_tensor *sa,
                             const struct staged_tensor *sb, int *taken)
{
    *taken = 1;
    const struct gemm_plan *p = call->plan;
    const struct gemm_mma_tiles *t = &gemm_tf32_packed_tiles;
    const struct tf32_packing k = tf32_packing_for(p);
    char options[256];
    int32_t status = gemm_mma_build_options(t, 1, 1, options, sizeof options);
    cl_kernel pack = NULL, gemm = NULL;
    cl_mem packed = NULL;
    int fits = 0;
    if (status == CLOPS_OK)
        status = pool_create_kernel(call->pool, call->dev, gemm_op_name, tf32_source, options,
                                    "tf32_pack", &pack);
    if (status == CLOPS_OK)
        status = gemm_create_kernel(call->pool, call->dev, tf32_source, "gemm_tf32", options,
                                    gemm_mma_group_size(t), &gemm, &fits);
    if (status == CLOPS_OK && !fits)
        status =
            err_set(CLOPS_ERR_DEVICE, "%s: gemm_tf32 does not fit %zu work-items a group on '%s'",
                    gemm_op_name, gemm_mma_group_size(t), pool_device_info(call->dev)->name);
    if (status == CLOPS_OK) {
        status =
            pool_alloc_device_memory(call->dev, k.bytes, gemm_op_name, "packed operands", &packed);
        if (status == CLOPS_ERR_OUT_OF_DEVICE_MEMORY) {
            err_clear();
            pool_release_kernel(call->pool, pack);
            pool_release_kernel(call->pool, gemm);
            *taken = 0;
            return CLOPS_OK;
        }
    }
    cl_event start = NULL;
    if (status == CLOPS_OK)
        status = pool_chain_begin(call->pool, call->queue, &start, gemm_op_name);
    if (status == CLOPS_OK)
        status = enqueue_pack(call->queue, pack, &k, (cl_int)p->m, (cl_int)p->k, sa, p->ka_si,
                              p->ka_sk, packed, k.a_at, k.m_pad);
    if (status == CLOPS_OK)
        status = enqueue_pack(call->queue, pack, &k, (cl_int)p->n, (cl_int)p->k, sb, p->kb_sj,
                              p->kb_sk, packed, k.b_at, k.n_pad);
    if (status == CLOPS_OK)
        status = enqueue_tf32_gemm(call->queue, gemm, p, &k, packed, &call->staged[P_C]);
    /* Waits for whatever was enqueued, also after a failure, before the scratch goes. */
    const int32_t waited =
        pool_chain_end(call->pool, call->queue, start, &call->device_ns, gemm_op_name);
    if (status == CLOPS_OK)
        status = waited;
    pool_free_device_memory(call->dev, packed);
    pool_release_kernel(call->pool, pack);
    pool_release_kernel(call->pool, gemm);
    return status;
}
