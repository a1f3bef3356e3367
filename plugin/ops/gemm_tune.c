/* gemm_tune.c — the gemm operator's tiles per device (gemm_impl.h): the tuning tables of its
 * kernels, and the settings that replace the portable kernel's tiles. */
#include "gemm_impl.h"

#include "registry.h"

/* ---- Tiles per device ------------------------------------------------------------------------ */

/* First match wins: `vendor` is a case-insensitive substring of the device's vendor ("" = any),
 * `type` an enum clops_device_type (0 = any). `large` is used when it gives every compute unit
 * a work-group, else `small`, whose more numerous groups keep a big GPU busy on small matrices.
 * Starting points, to be tuned: on an H100 (clops-bench, f32, N = 4096) 128x128 tiles of 8x8
 * reach 17.8 TFLOP/s against 10.0 for 64x64 of 4x4, which win at N <= 1024 (11.2 against 8.4).
 * Under PoCL on 2 AVX-512 cores 64x128 contiguous tiles reach 50 GFLOP/s (f32, N = 1024)
 * against 11 for 64x64 strided ones, as PoCL vectorises inside a work-item. A C smaller than a
 * block per core takes 32x32 tiles of 8x8 (vw 8): a 32 x 32 f64 gemm computed a 64 x 128 block
 * in 32 us of kernel time, and takes 7 us in its own 32 x 32 one. */
static const struct gemm_tuning {
    struct tuning_match match;
    struct gemm_tiles large, small;
} tunings[] = {
    {{"NVIDIA", CLOPS_DEVICE_GPU}, {128, 128, 16, 8, 8, 4}, {64, 64, 16, 4, 4, 4}},
    {{"", CLOPS_DEVICE_GPU}, {64, 64, 8, 4, 4, 4}, {64, 64, 8, 4, 4, 4}},
    {{"", CLOPS_DEVICE_CPU}, {64, 128, 8, 16, 16, 16}, {32, 32, 8, 8, 8, 8}},
    {{"", 0}, {32, 32, 8, 4, 4, 1}, {32, 32, 8, 4, 4, 1}},
};

/* For a device that cannot run the chosen tiles (work-group size, local memory): 64 work-items
 * and 2 KiB of local memory in f64. */
const struct gemm_tiles gemm_fallback_tiles = {16, 16, 8, 2, 2, 1};

/* The blocks of tile_m x tile_n that cover an m x n C, one work-group each (either kernel). */
int64_t gemm_blocks_covering(int64_t m, int64_t n, int32_t tile_m, int32_t tile_n)
{
    return ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
}

int64_t gemm_tiles_group_count(const struct gemm_tiles *t, int64_t m, int64_t n)
{
    return gemm_blocks_covering(m, n, t->tile_m, t->tile_n);
}

struct gemm_tiles gemm_tiles_for_call(const struct pool_device *dev, int64_t m, int64_t n)
{
    const struct gemm_tuning *t = &tunings[CALL_TUNING_ROW(tunings, dev)];
    return gemm_tiles_group_count(&t->large, m, n) >= pool_device_info(dev)->compute_units
               ? t->large
               : t->small;
}

size_t gemm_tiles_group_size(const struct gemm_tiles *t)
{
    return (size_t)(t->tile_m / t->wpt_m) * (size_t)(t->tile_n / t->wpt_n);
}

/* The kernel's two local tiles, with their rows padded by VW elements (gemm.cl says why). */
int64_t gemm_tiles_local_bytes(const struct gemm_tiles *t, int64_t elem_size)
{
    return (int64_t)t->tile_k * (t->tile_m + t->vw + t->tile_n + t->vw) * elem_size;
}

/* The tiles as settings (operators.gemm.tile_m = 64; ...), each replacing the table's: the way
 * to try other tiles on a device without rebuilding (see clops-bench's tune area). */
enum { SET_TILE_M, SET_TILE_N, SET_TILE_K, SET_WPT_M, SET_WPT_N, SET_VW };
static const struct op_setting gemm_setting_list[] = {
    [SET_TILE_M] = {"tile_m", SETTING_INT, 1, 512, SETTING_PER_DEVICE, "TILE_M"},
    [SET_TILE_N] = {"tile_n", SETTING_INT, 1, 512, SETTING_PER_DEVICE, "TILE_N"},
    [SET_TILE_K] = {"tile_k", SETTING_INT, 1, 128, SETTING_PER_DEVICE, "TILE_K"},
    [SET_WPT_M] = {"wpt_m", SETTING_INT, 1, 32, SETTING_PER_DEVICE, "WPT_M"},
    [SET_WPT_N] = {"wpt_n", SETTING_INT, 1, 32, SETTING_PER_DEVICE, "WPT_N"},
    [SET_VW] = {"vw", SETTING_INT, 1, 16, SETTING_PER_DEVICE, "VW"},
};
const struct op_settings gemm_settings = {
    gemm_setting_list, (int32_t)(sizeof gemm_setting_list / sizeof gemm_setting_list[0])};

struct gemm_tiles gemm_tiles_with_settings(const struct clops_pool *pool, struct gemm_tiles t)
{
    int32_t *const fields[] = {
        [SET_TILE_M] = &t.tile_m, [SET_TILE_N] = &t.tile_n, [SET_TILE_K] = &t.tile_k,
        [SET_WPT_M] = &t.wpt_m,   [SET_WPT_N] = &t.wpt_n,   [SET_VW] = &t.vw};
    call_apply_settings(pool, &impl_gemm, fields, sizeof fields / sizeof fields[0]);
    return t;
}

/* Configured tiles must still make a kernel that compiles and covers C (gemm.cl's #errors): each
 * setting is in its range (checked with the configuration), but whether they divide one another
 * depends on the device's own tiles for those not configured, so it is checked here. */
int gemm_tiles_are_valid(const struct gemm_tiles *t)
{
    if (t->tile_m % t->wpt_m || t->tile_n % t->wpt_n || t->wpt_m % t->vw || t->wpt_n % t->vw)
        return 0;
    int64_t group = (int64_t)(t->tile_m / t->wpt_m) * (t->tile_n / t->wpt_n);
    return (t->tile_m * t->tile_k) % group == 0 && (t->tile_n * t->tile_k) % group == 0;
}

/* Whether any of the tiles is configured: they describe the portable kernel, so a pool that sets
 * them runs that kernel for f64 too (0 is outside every tile setting's range, so it comes back
 * only for a setting left out). */
int gemm_tiles_configured(const struct clops_pool *pool)
{
    for (int32_t s = SET_TILE_M; s <= SET_VW; s++)
        if (pool_op_setting(pool, &impl_gemm, s, 0) != 0)
            return 1;
    return 0;
}

/* ---- Tensor-core tiles (kernels/gemm_mma.cl, f64 on NVIDIA compute capability 8.0+) ---------- */

/* First match wins: NVIDIA devices of compute capability (major * 10 + minor) `min_cc` or later;
 * `large` when it gives every compute unit a work-group, else `small`. m8n8k4 is the FP64
 * instruction of compute capability 8.x; 9.0 adds m16n8k4/k8/k16, which an H100 runs at twice
 * its rate (66 against 33 TFLOP/s in a loop of independent instructions). On an H100 (f64,
 * N = 4096 / 8192) 128x64 tiles of 4 warps, two work-groups per compute unit, reach 48.8 / 46.3
 * TFLOP/s against 44 / 44 for 128x128 tiles of 8 warps, whose one work-group per unit meets at
 * every tile's barrier; deeper copies (4-5 stages), m16n8k8, 16-byte copies and mbarriers in
 * place of the barrier were no faster. */
static const struct gemm_mma_tuning mma_tunings[] = {
    {90, {128, 64, 8, 64, 32, 1684, 3}, {64, 64, 8, 32, 32, 1684, 4}},
    {80, {128, 64, 8, 64, 32, 884, 3}, {64, 64, 8, 32, 32, 884, 4}},
};

/* The same for f32 in TF32 (m16n8k8, compute capability 8.0 and later); the warps' blocks are
 * multiples of 32 (gemm_mma.cl's swizzle). */
static const struct gemm_mma_tuning tf32_tunings[] = {
    {80, {128, 256, 8, 64, 64, 1688, 3}, {64, 64, 16, 32, 32, 1688, 3}},
};

/* f32 in tf32 (one TF32 product) runs gemm_tf32.cl's -DPACKED kernels instead, on operands packed
 * once into the fragments' order: 128x128 tiles 16 deep of 64x32 warps, 3 stages. On an H200 at
 * N = 8192 it ran at 142 TFLOP/s (128x256x8 of 64x64 warps: 129) against gemm_mma's 97; for
 * 3xtf32 the packed lo parts doubled the copies and local loads (45 against gemm_mma's 50), so
 * 3xtf32 stays on gemm_mma (RESULTS.md, 2026-11-27). Same devices as tf32_tunings. */
const struct gemm_mma_tiles gemm_tf32_packed_tiles = {128, 128, 16, 64, 32, 1688, 3};

/* f32 in fp32 (IEEE products and sums) on NVIDIA devices of compute capability 8.0 and later runs
 * gemm_simt.cl's gemm_simt: gemm.cl's arithmetic with its tiles copied into local
 * memory through cp.async, STAGES - 1 tiles ahead. On an H100 (N = 8192 f32, the kernel alone)
 * 128x128 tiles 8 deep, 16x8 a work-item, 4 stages ran at 43.3 TFLOP/s with both operands
 * row-major and 46.2 with A column-major (its copies 16 bytes wide), against 41.1 / 41.3 for
 * gemm.cl's 128x128x16 of 8x8; 8x8 a work-item was no faster than gemm.cl (39.6 / 42.5), with
 * 3 or 5 stages or 16 deep neither, nor were 128x256 or 256x128 tiles (RESULTS.md, 2026-11-28).
 * The small tiles ran N = 1024 at 23 TFLOP/s against gemm.cl's 20. */
static const struct gemm_simt_tuning simt_tunings[] = {
    {80, {128, 128, 8, 16, 8, 4, 4}, {64, 64, 16, 4, 4, 4, 3}},
};

static const struct gemm_mma_tuning *mma_tuning_in(const struct pool_device *dev,
                                                   const struct gemm_mma_tuning *table, size_t n)
{
    const int32_t cc = pool_device_nv_compute_capability(dev);
    for (size_t i = 0; i < n; i++)
        if (cc >= table[i].min_cc)
            return &table[i];
    return NULL;
}

/* The tensor-core tiles for a call's dtype and precision on `dev`, or NULL for none. */
const struct gemm_mma_tuning *gemm_mma_tuning_for(const struct pool_device *dev, int32_t dtype,
                                                  int32_t precision)
{
    if (dtype == CLOPS_F64)
        return mma_tuning_in(dev, mma_tunings, sizeof mma_tunings / sizeof mma_tunings[0]);
    if (precision == GEMM_FP32)
        return NULL;
    return mma_tuning_in(dev, tf32_tunings, sizeof tf32_tunings / sizeof tf32_tunings[0]);
}

size_t gemm_mma_group_size(const struct gemm_mma_tiles *t)
{
    return (size_t)(t->tile_m / t->warp_m) * (size_t)(t->tile_n / t->warp_n) * 32;
}

/* The kernel's local tiles: `stages` of each operand, unpadded (gemm_mma.cl and gemm_simt.cl say
 * why). */
int64_t gemm_mma_local_bytes(const struct gemm_mma_tiles *t, int64_t elem_size)
{
    return (int64_t)t->stages * t->tile_k * (t->tile_m + t->tile_n) * elem_size;
}

size_t gemm_simt_group_size(const struct gemm_simt_tiles *t)
{
    return (size_t)(t->tile_m / t->thread_m) * (size_t)(t->tile_n / t->thread_n);
}

/* gemm_simt's local tiles: `stages` of each operand, k-rows padded by 4 elements. */
int64_t gemm_simt_local_bytes(const struct gemm_simt_tiles *t)
{
    return (int64_t)t->stages * t->tile_k * (t->tile_m + 4 + t->tile_n + 4) *
           (int64_t)sizeof(float);
}

/* gemm_simt's tiles on `dev`, or NULL where it has none (cp.async). */
const struct gemm_simt_tuning *gemm_simt_tuning_for(const struct pool_device *dev)
{
    const int32_t cc = pool_device_nv_compute_capability(dev);
    for (size_t i = 0; i < sizeof simt_tunings / sizeof simt_tunings[0]; i++)
        if (cc >= simt_tunings[i].min_cc)
            return &simt_tunings[i];
    return NULL;
}
