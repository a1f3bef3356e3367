/* gemm.c — the gemm operator, C = alpha * op(A) * op(B) + beta * C in f32 or f64: validates the
 * call, reduces every layout to one row-major-C kernel, kernels/gemm.cl (portable) or, on NVIDIA
 * GPUs of compute capability 8.0 and later, kernels/gemm_mma.cl (f64 and f32 in the TF32
 * precisions on the tensor cores, f32 in fp32 on the FP32 units fed by cp.async), and picks its
 * tiles. */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "op.h"
#include "pool.h"
#include "registry.h"
#include "tensor.h"

static const char op_name[] = "gemm";

/* The dtypes of a, b and c (one of them for all three). */
enum { GEMM_DTYPES = CLOPS_DTYPE_BIT(CLOPS_F32) | CLOPS_DTYPE_BIT(CLOPS_F64) };

/* The precision parameter's values, in the order of the descriptor's strings. */
enum { GEMM_FP32, GEMM_3XTF32, GEMM_TF32 };

/* ---- Tiles per device ------------------------------------------------------------------------ */

/* The -D parameters of kernels/gemm.cl (its comment explains them). */
struct gemm_tiles {
    int32_t tile_m, tile_n, tile_k; /* the C block of a work-group, and the K step */
    int32_t wpt_m, wpt_n;           /* the C block of a work-item, in registers */
    int32_t vw;                     /* rows/columns per local vector load (-DVW): 1 strided,
                                       4 for GPUs, = wpt for CPUs (contiguous blocks) */
};

/* First match wins: `vendor` is a case-insensitive substring of the device's vendor ("" = any),
 * `type` an enum clops_device_type (0 = any). `large` is used when it gives every compute unit
 * a work-group, else `small`, whose more numerous groups keep a big GPU busy on small matrices.
 * Starting points, to be tuned: on an H100 (clops-bench, f32, N = 4096) 128x128 tiles of 8x8
 * reach 17.8 TFLOP/s against 10.0 for 64x64 of 4x4, which win at N <= 1024 (11.2 against 8.4).
 * Under PoCL on 2 AVX-512 cores 64x128 contiguous tiles reach 50 GFLOP/s (f32, N = 1024)
 * against 11 for 64x64 strided ones, as PoCL vectorises inside a work-item. */
static const struct gemm_tuning {
    struct tuning_match match;
    struct gemm_tiles large, small;
} tunings[] = {
    {{"NVIDIA", CLOPS_DEVICE_GPU}, {128, 128, 16, 8, 8, 4}, {64, 64, 16, 4, 4, 4}},
    {{"", CLOPS_DEVICE_GPU}, {64, 64, 8, 4, 4, 4}, {64, 64, 8, 4, 4, 4}},
    {{"", CLOPS_DEVICE_CPU}, {64, 128, 8, 16, 16, 16}, {64, 128, 8, 16, 16, 16}},
    {{"", 0}, {32, 32, 8, 4, 4, 1}, {32, 32, 8, 4, 4, 1}},
};

/* For a device that cannot run the chosen tiles (work-group size, local memory): 64 work-items
 * and 2 KiB of local memory in f64. */
static const struct gemm_tiles fallback_tiles = {16, 16, 8, 2, 2, 1};

/* The blocks of tile_m x tile_n that cover an m x n C, one work-group each (either kernel). */
static int64_t blocks_covering(int64_t m, int64_t n, int32_t tile_m, int32_t tile_n)
{
    return ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
}

static int64_t tiles_group_count(const struct gemm_tiles *t, int64_t m, int64_t n)
{
    return blocks_covering(m, n, t->tile_m, t->tile_n);
}

static struct gemm_tiles tiles_for_call(const struct pool_device *dev, int64_t m, int64_t n)
{
    const struct gemm_tuning *t = &tunings[CALL_TUNING_ROW(tunings, dev)];
    return tiles_group_count(&t->large, m, n) >= pool_device_info(dev)->compute_units ? t->large
                                                                                      : t->small;
}

static size_t tiles_group_size(const struct gemm_tiles *t)
{
    return (size_t)(t->tile_m / t->wpt_m) * (size_t)(t->tile_n / t->wpt_n);
}

/* The kernel's two local tiles, with their rows padded by VW elements (gemm.cl says why). */
static int64_t tiles_local_bytes(const struct gemm_tiles *t, int64_t elem_size)
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
static const struct op_settings gemm_settings = {
    gemm_setting_list, (int32_t)(sizeof gemm_setting_list / sizeof gemm_setting_list[0])};

static struct gemm_tiles tiles_with_settings(const struct clops_pool *pool, struct gemm_tiles t)
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
static int tiles_are_valid(const struct gemm_tiles *t)
{
    if (t->tile_m % t->wpt_m || t->tile_n % t->wpt_n || t->wpt_m % t->vw || t->wpt_n % t->vw)
        return 0;
    int64_t group = (int64_t)(t->tile_m / t->wpt_m) * (t->tile_n / t->wpt_n);
    return (t->tile_m * t->tile_k) % group == 0 && (t->tile_n * t->tile_k) % group == 0;
}

/* Whether any of the tiles is configured: they describe the portable kernel, so a pool that sets
 * them runs that kernel for f64 too (0 is outside every tile setting's range, so it comes back
 * only for a setting left out). */
static int tiles_configured(const struct clops_pool *pool)
{
    for (int32_t s = SET_TILE_M; s <= SET_VW; s++)
        if (pool_op_setting(pool, &impl_gemm, s, 0) != 0)
            return 1;
    return 0;
}

/* ---- Tensor-core tiles (kernels/gemm_mma.cl, f64 on NVIDIA compute capability 8.0+) ---------- */

/* The -D parameters of kernels/gemm_mma.cl (its comment explains them). */
struct gemm_mma_tiles {
    int32_t tile_m, tile_n, tile_k; /* the C block of a work-group, and the K step */
    int32_t warp_m, warp_n;         /* the C block of a warp */
    int32_t shape;                  /* the mma.sync instruction: 884 = m8n8k4, 1684 = m16n8k4 */
    int32_t stages;                 /* tiles in local memory at once (the copies' lead + 1) */
};

/* First match wins: NVIDIA devices of compute capability (major * 10 + minor) `min_cc` or later;
 * `large` when it gives every compute unit a work-group, else `small`. m8n8k4 is the FP64
 * instruction of compute capability 8.x; 9.0 adds m16n8k4/k8/k16, which an H100 runs at twice
 * its rate (66 against 33 TFLOP/s in a loop of independent instructions). On an H100 (f64,
 * N = 4096 / 8192) 128x64 tiles of 4 warps, two work-groups per compute unit, reach 48.8 / 46.3
 * TFLOP/s against 44 / 44 for 128x128 tiles of 8 warps, whose one work-group per unit meets at
 * every tile's barrier; deeper copies (4-5 stages), m16n8k8, 16-byte copies and mbarriers in
 * place of the barrier were no faster. */
static const struct gemm_mma_tuning {
    int32_t min_cc;
    struct gemm_mma_tiles large, small;
} mma_tunings[] = {
    {90, {128, 64, 8, 64, 32, 1684, 3}, {64, 64, 8, 32, 32, 1684, 4}},
    {80, {128, 64, 8, 64, 32, 884, 3}, {64, 64, 8, 32, 32, 884, 4}},
};

/* The same for f32 in TF32 (m16n8k8, compute capability 8.0 and later); the warps' blocks are
 * multiples of 32 (gemm_mma.cl's swizzle). */
static const struct gemm_mma_tuning tf32_tunings[] = {
    {80, {128, 256, 8, 64, 64, 1688, 3}, {64, 64, 16, 32, 32, 1688, 3}},
};

/* f32 in tf32 (one TF32 product) runs gemm_mma.cl's -DPACKED kernels instead, on operands packed
 * once into the fragments' order: 128x128 tiles 16 deep of 64x32 warps, 3 stages. On an H200 at
 * N = 8192 it ran at 142 TFLOP/s (128x256x8 of 64x64 warps: 129) against gemm_mma's 97; for
 * 3xtf32 the packed lo parts doubled the copies and local loads (45 against gemm_mma's 50), so
 * 3xtf32 stays on gemm_mma (RESULTS.md, 2026-11-27). Same devices as tf32_tunings. */
static const struct gemm_mma_tiles tf32_packed_tiles = {128, 128, 16, 64, 32, 1688, 3};

/* f32 in fp32 (IEEE products and sums) on NVIDIA devices of compute capability 8.0 and later runs
 * gemm_mma.cl's -DSIMT kernel, gemm_simt: gemm.cl's arithmetic with its tiles copied into local
 * memory through cp.async, STAGES - 1 tiles ahead. On an H100 (N = 8192 f32, the kernel alone)
 * 128x128 tiles 8 deep, 16x8 a work-item, 4 stages ran at 43.3 TFLOP/s with both operands
 * row-major and 46.2 with A column-major (its copies 16 bytes wide), against 41.1 / 41.3 for
 * gemm.cl's 128x128x16 of 8x8; 8x8 a work-item was no faster than gemm.cl (39.6 / 42.5), with
 * 3 or 5 stages or 16 deep neither, nor were 128x256 or 256x128 tiles (RESULTS.md, 2026-11-28).
 * The small tiles ran N = 1024 at 23 TFLOP/s against gemm.cl's 20. */
struct gemm_simt_tiles {
    int32_t tile_m, tile_n, tile_k; /* the C block of a work-group, and the K step */
    int32_t thread_m, thread_n;     /* the C block of a work-item */
    int32_t warp_tm;                /* a warp's work-items along M */
    int32_t stages;                 /* tiles in local memory at once */
};
static const struct gemm_simt_tuning {
    int32_t min_cc;
    struct gemm_simt_tiles large, small;
} simt_tunings[] = {
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
static const struct gemm_mma_tuning *mma_tuning_for(const struct pool_device *dev, int32_t dtype,
                                                    int32_t precision)
{
    if (dtype == CLOPS_F64)
        return mma_tuning_in(dev, mma_tunings, sizeof mma_tunings / sizeof mma_tunings[0]);
    if (precision == GEMM_FP32)
        return NULL;
    return mma_tuning_in(dev, tf32_tunings, sizeof tf32_tunings / sizeof tf32_tunings[0]);
}

static size_t mma_group_size(const struct gemm_mma_tiles *t)
{
    return (size_t)(t->tile_m / t->warp_m) * (size_t)(t->tile_n / t->warp_n) * 32;
}

/* The kernel's local tiles: `stages` of each operand, unpadded (gemm_mma.cl says why). */
static int64_t mma_local_bytes(const struct gemm_mma_tiles *t, int64_t elem_size)
{
    return (int64_t)t->stages * t->tile_k * (t->tile_m + t->tile_n) * elem_size;
}

static size_t simt_group_size(const struct gemm_simt_tiles *t)
{
    return (size_t)(t->tile_m / t->thread_m) * (size_t)(t->tile_n / t->thread_n);
}

/* gemm_simt's local tiles: `stages` of each operand, k-rows padded by 4 elements. */
static int64_t simt_local_bytes(const struct gemm_simt_tiles *t)
{
    return (int64_t)t->stages * t->tile_k * (t->tile_m + 4 + t->tile_n + 4) *
           (int64_t)sizeof(float);
}

/* ---- The call reduced to the kernel's terms ------------------------------------------------- */

/* What the kernel computes: the row-major M x N matrix Ck (ldc) = alpha * Ak * Bk + beta * Ck,
 * with Ak(i,k) = ka[offset + i*ka_si + k*ka_sk] and Bk(k,j) = kb[offset + k*kb_sk + j*kb_sj],
 * each with its tensor's offset. For a row-major C that is op(A) op(B) itself; for a
 * column-major C it is C^T = op(B)^T op(A)^T, so the kernel only ever writes rows (coalesced)
 * whatever the layout. */
struct gemm_plan {
    int32_t dtype;
    int32_t precision; /* GEMM_FP32, GEMM_3XTF32 or GEMM_TF32 (f32 only) */
    int64_t m, n, k;   /* of the kernel's product; k = 0 when A and B are not read */
    const struct clops_tensor *ka, *kb, *c;
    const char *ka_param, *kb_param; /* "a" or "b", for messages */
    int64_t ka_si, ka_sk, kb_sk, kb_sj, ldc;
    double alpha, beta;
};

/* op(X) of a stored matrix: its extents and the strides of its rows and columns. */
struct op_view {
    int64_t rows, cols, row_stride, col_stride;
};

static struct op_view op_view(const struct clops_tensor *t, int32_t trans)
{
    int32_t r = trans ? 1 : 0;
    struct op_view v = {t->shape[r], t->shape[1 - r], t->strides[r], t->strides[1 - r]};
    return v;
}

static struct op_view transposed(struct op_view v)
{
    struct op_view t = {v.cols, v.rows, v.col_stride, v.row_stride};
    return t;
}

/* Kernel indices are 32-bit ints with room for a tile past the end. */
static const int64_t gemm_extent_max = INT32_MAX / 2;

/* ---- Validation ------------------------------------------------------------------------------ */

static const char *trans_name(int32_t trans)
{
    return trans ? "transpose" : "none";
}

static int32_t check_tensors(const struct pool_device *dev, const struct clops_tensor *a,
                             const struct clops_tensor *b, const struct clops_tensor *c)
{
    const struct clops_tensor *t[3] = {a, b, c};
    const char *const names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        int32_t status = tensor_check(t[i], op_name, names[i], GEMM_DTYPES, 2, dev);
        if (status != CLOPS_OK)
            return status;
    }
    for (int i = 1; i < 3; i++)
        if (t[i]->dtype != a->dtype)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter '%s' has dtype %s but 'a' has %s; a, b and c must "
                           "have one dtype",
                           op_name, names[i], dtype_name(t[i]->dtype), dtype_name(a->dtype));
    if (dev != NULL && a->dtype == CLOPS_F64 && !pool_device_info(dev)->fp64)
        return err_set(CLOPS_ERR_UNSUPPORTED,
                       "%s: parameter 'a' is f64 but device '%s' has no double precision "
                       "(cl_khr_fp64)",
                       op_name, pool_device_info(dev)->name);
    return CLOPS_OK;
}

static int32_t check_trans(const char *param, int32_t trans)
{
    if (trans == CLOPS_NO_TRANS || trans == CLOPS_TRANS)
        return CLOPS_OK;
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter '%s' = %d; expected 0 (none) or 1 (transpose)", op_name, param,
                   (int)trans);
}

static int32_t check_shapes(const struct clops_tensor *a, const struct clops_tensor *b,
                            const struct clops_tensor *c, int32_t trans_a, int32_t trans_b)
{
    struct op_view va = op_view(a, trans_a), vb = op_view(b, trans_b);
    if (vb.rows != va.cols)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'b' has op(B) of shape %lldx%lld (trans_b = %s) but "
                       "K = %lld from op(A) requires %lldxN",
                       op_name, (long long)vb.rows, (long long)vb.cols, trans_name(trans_b),
                       (long long)va.cols, (long long)va.cols);
    if (c->shape[0] != va.rows || c->shape[1] != vb.cols)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'c' has shape %lldx%lld but op(A) op(B) is %lldx%lld "
                       "(M from 'a', N from 'b')",
                       op_name, (long long)c->shape[0], (long long)c->shape[1], (long long)va.rows,
                       (long long)vb.cols);
    const int64_t extents[3] = {va.rows, vb.cols, va.cols};
    const char *const names[3] = {"M", "N", "K"};
    for (int i = 0; i < 3; i++)
        if (extents[i] > gemm_extent_max)
            return err_set(CLOPS_ERR_UNSUPPORTED,
                           "%s: %s = %lld exceeds the kernel's 32-bit indexing (at most %lld)",
                           op_name, names[i], (long long)extents[i], (long long)gemm_extent_max);
    return CLOPS_OK;
}

/* A stored matrix with a unit stride must have its other stride, the leading dimension, at
 * least the extent it steps over (BLAS: lda >= max(1, rows)); smaller means overlapping rows or
 * columns, almost surely a wrong ld. Inputs may also be general strided views (the kernel takes
 * any strides); the output C needs a unit stride. `dims` names the extents, e.g. {"M", "K"}. */
static int32_t check_leading_dim(const struct clops_tensor *t, const char *param, const char *ld,
                                 const char *const dims[2], int32_t is_output)
{
    if (tensor_is_row_major(t) || tensor_is_column_major(t))
        return CLOPS_OK;
    const long long s0 = (long long)t->strides[0], s1 = (long long)t->strides[1];
    const char matrix = (char)toupper((unsigned char)param[0]); /* 'a' is A in the text */
    if (s1 == 1)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' strides[0] (%s) = %lld is smaller than %s = %lld "
                       "(row-major %c)",
                       op_name, param, ld, s0, dims[1], (long long)t->shape[1], matrix);
    if (s0 == 1)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' strides[1] (%s) = %lld is smaller than %s = %lld "
                       "(column-major %c)",
                       op_name, param, ld, s1, dims[0], (long long)t->shape[0], matrix);
    if (!is_output)
        return CLOPS_OK;
    return err_set(CLOPS_ERR_UNSUPPORTED,
                   "%s: parameter '%s' has strides {%lld, %lld}; expected one of them to be 1 "
                   "(a row- or column-major C)",
                   op_name, param, s0, s1);
}

static int32_t check_layouts(const struct clops_tensor *a, const struct clops_tensor *b,
                             const struct clops_tensor *c, int32_t trans_a, int32_t trans_b)
{
    static const char *const a_dims[2][2] = {{"M", "K"}, {"K", "M"}};
    static const char *const b_dims[2][2] = {{"K", "N"}, {"N", "K"}};
    static const char *const c_dims[2] = {"M", "N"};
    int32_t status = check_leading_dim(a, "a", "lda", a_dims[trans_a], 0);
    if (status == CLOPS_OK)
        status = check_leading_dim(b, "b", "ldb", b_dims[trans_b], 0);
    if (status == CLOPS_OK)
        status = check_leading_dim(c, "c", "ldc", c_dims, 1);
    return status;
}

/* C is written while A and B are read: it must share no element with them (A and B may share:
 * gemm(A, A^T)). Blocks of one matrix that share none, as LAPACK's blocked codes pass, are fine. */
static int32_t check_no_alias(const struct clops_tensor *a, const struct clops_tensor *b,
                              const struct clops_tensor *c)
{
    const struct tensor_use uses[3] = {{a, "a", 0}, {b, "b", 0}, {c, "c", 1}};
    return tensor_check_disjoint(op_name, uses, 3, NULL);
}

/* C is op(A)'s rows by op(B)'s columns, of their dtype (for check_sized). */
static void expect_c(struct op_call *call, const struct clops_tensor *a,
                     const struct clops_tensor *b, int32_t trans_a, int32_t trans_b)
{
    const int64_t shape[2] = {op_view(a, trans_a).rows, op_view(b, trans_b).cols};
    call_expect(call, 2, a->dtype, 2, shape);
}

/* Every check, before anything touches the device; fills the plan on success. */
static int32_t gemm_check_args(struct op_call *call, const struct clops_tensor *a,
                               const struct clops_tensor *b, const struct clops_tensor *c,
                               int32_t trans_a, int32_t trans_b, struct gemm_plan *plan)
{
    int32_t status = check_tensors(call->dev, a, b, c);
    if (status == CLOPS_OK)
        status = check_trans("trans_a", trans_a);
    if (status == CLOPS_OK)
        status = check_trans("trans_b", trans_b);
    if (status == CLOPS_OK)
        expect_c(call, a, b, trans_a, trans_b);
    if (status == CLOPS_OK)
        status = check_shapes(a, b, c, trans_a, trans_b);
    if (status == CLOPS_OK)
        status = check_layouts(a, b, c, trans_a, trans_b);
    if (status == CLOPS_OK)
        status = check_no_alias(a, b, c);
    if (status != CLOPS_OK)
        return status;

    /* The kernel's left and right operands: op(A) op(B), or op(B)^T op(A)^T for C^T. */
    struct op_view left = op_view(a, trans_a), right = op_view(b, trans_b);
    *plan = (struct gemm_plan){.dtype = a->dtype,
                               .ka = a,
                               .kb = b,
                               .c = c,
                               .ka_param = "a",
                               .kb_param = "b",
                               .ldc = c->strides[0]};
    if (!tensor_is_row_major(c)) {
        struct op_view bt = transposed(right);
        right = transposed(left);
        left = bt;
        plan->ka = b;
        plan->kb = a;
        plan->ka_param = "b";
        plan->kb_param = "a";
        plan->ldc = c->strides[1];
    }
    plan->m = left.rows;
    plan->n = right.cols;
    plan->k = left.cols;
    plan->ka_si = left.row_stride;
    plan->ka_sk = left.col_stride;
    plan->kb_sk = right.row_stride;
    plan->kb_sj = right.col_stride;
    return CLOPS_OK;
}

/* ---- The device side ------------------------------------------------------------------------- */

/* A kernel ready to launch: one work-group of `local` work-items per block of C, on a 1-D range
 * (the kernels say why). */
struct gemm_launch {
    cl_kernel kernel;
    size_t local, global;
};

static int32_t options_fit(int n, size_t size)
{
    if (n < 0 || (size_t)n >= size)
        return err_set(CLOPS_ERR_INTERNAL, "%s: build options do not fit %zu bytes", op_name, size);
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
static int32_t mma_build_options(const struct gemm_mma_tiles *t, int32_t passes, int packed,
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
static int32_t create_kernel(struct clops_pool *pool, struct pool_device *dev, const char *source,
                             const char *name, const char *options, size_t group_size,
                             cl_kernel *out, int *fits)
{
    int32_t status = pool_create_kernel(pool, dev, op_name, source, options, name, out);
    if (status != CLOPS_OK)
        return status;
    size_t max_group = 0;
    status = pool_kernel_max_work_group(dev, *out, op_name, &max_group);
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
        status =
            create_kernel(pool, dev, "gemm", "gemm", options, tiles_group_size(tiles), out, fits);
    return status;
}

/* The portable kernel for the plan on `dev`, with the tiles of the tuning table, or the fallback
 * ones when those do not fit the device's local memory or the kernel's work-group limit (should
 * even these not fit, the launch reports CL_INVALID_WORK_GROUP_SIZE). */
static int32_t get_portable_kernel(struct clops_pool *pool, struct pool_device *dev,
                                   const struct gemm_plan *p, struct gemm_launch *out)
{
    struct gemm_tiles tiles = tiles_with_settings(pool, tiles_for_call(dev, p->m, p->n));
    if (!tiles_are_valid(&tiles)) {
        /* The table's tiles are valid: only configured ones can fail here. */
        return call_refuse_settings(pool, &impl_gemm,
                                    "the tiles %dx%dx%d of %dx%d, vw %d, do not divide (tile_m %% "
                                    "wpt_m, tile_n %% wpt_n, wpt %% vw and the tile loads over the "
                                    "work-group must all be exact)",
                                    (int)tiles.tile_m, (int)tiles.tile_n, (int)tiles.tile_k,
                                    (int)tiles.wpt_m, (int)tiles.wpt_n, (int)tiles.vw);
    }
    if (tiles_local_bytes(&tiles, dtype_size(p->dtype)) > pool_device_info(dev)->local_mem_bytes)
        tiles = fallback_tiles;
    int fits = 0;
    int32_t status = create_portable_kernel(pool, dev, p->dtype, &tiles, &out->kernel, &fits);
    if (status == CLOPS_OK && !fits && memcmp(&tiles, &fallback_tiles, sizeof tiles) != 0) {
        log_msg(CLOPS_LOG_INFO, "%s: '%s' cannot run %zu work-items per group; using smaller tiles",
                op_name, pool_device_info(dev)->name, tiles_group_size(&tiles));
        clReleaseKernel(out->kernel);
        out->kernel = NULL;
        tiles = fallback_tiles;
        status = create_portable_kernel(pool, dev, p->dtype, &tiles, &out->kernel, &fits);
    }
    out->local = tiles_group_size(&tiles);
    out->global = out->local * (size_t)tiles_group_count(&tiles, p->m, p->n);
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
    const int64_t blocks = blocks_covering(p->m, p->n, choice[0].tile_m, choice[0].tile_n);
    for (int c = blocks >= pool_device_info(dev)->compute_units ? 0 : 1; c < 2; c++) {
        const struct tiles_choice *t = &choice[c];
        if (t->local_bytes > pool_device_info(dev)->local_mem_bytes)
            continue;
        int fits = 0;
        int32_t status =
            create_kernel(pool, dev, "gemm_mma", name, t->options, t->group, &out->kernel, &fits);
        if (status != CLOPS_OK)
            return status;
        if (!fits) {
            clReleaseKernel(out->kernel);
            out->kernel = NULL;
            continue;
        }
        out->local = t->group;
        out->global = out->local * (size_t)blocks_covering(p->m, p->n, t->tile_m, t->tile_n);
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
    const struct gemm_mma_tuning *tuning = mma_tuning_for(dev, p->dtype, p->precision);
    if (tuning == NULL || (p->dtype == CLOPS_F64 && tiles_configured(pool)))
        return CLOPS_OK;
    const int32_t passes = p->dtype == CLOPS_F64 ? 0 : (p->precision == GEMM_3XTF32 ? 3 : 1);
    const struct gemm_mma_tiles *tiles[2] = {&tuning->large, &tuning->small};
    struct tiles_choice choice[2];
    for (int c = 0; c < 2; c++) {
        const struct gemm_mma_tiles *t = tiles[c];
        int32_t status =
            mma_build_options(t, passes, 0, choice[c].options, sizeof choice[c].options);
        if (status != CLOPS_OK)
            return status;
        choice[c].group = mma_group_size(t);
        choice[c].local_bytes = mma_local_bytes(t, dtype_size(p->dtype));
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
    const struct gemm_simt_tuning *tuning = NULL;
    const int32_t cc = pool_device_nv_compute_capability(dev);
    for (size_t i = 0; i < sizeof simt_tunings / sizeof simt_tunings[0] && !tuning; i++)
        if (cc >= simt_tunings[i].min_cc)
            tuning = &simt_tunings[i];
    if (tuning == NULL || p->dtype != CLOPS_F32 || p->precision != GEMM_FP32 ||
        tiles_configured(pool))
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
        choice[c].group = simt_group_size(t);
        choice[c].local_bytes = simt_local_bytes(t);
        choice[c].tile_m = t->tile_m;
        choice[c].tile_n = t->tile_n;
    }
    return take_first_fitting(pool, dev, p, "gemm_simt", choice, out, taken);
}

/* The kernel for the plan on `dev`: the tensor-core one where it applies, else gemm_simt where
 * it applies, else the portable one. All take the same arguments (bind_plan). */
static int32_t get_launch(struct clops_pool *pool, struct pool_device *dev,
                          const struct gemm_plan *p, struct gemm_launch *out)
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
static int32_t bind_plan(cl_kernel kernel, const struct gemm_plan *p,
                         const struct staged_tensor *sa, const struct staged_tensor *sb,
                         const struct staged_tensor *sc)
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
    return pool_set_kernel_args(kernel, 0, args, (cl_uint)(sizeof args / sizeof args[0]), op_name);
}

/* ---- The operator's steps: check and enqueue (call.h runs the rest) ------------------------- */

/* The parameters' positions in the descriptor (gemm_params below). */
enum { P_A, P_B, P_C, P_TRANS_A, P_TRANS_B, P_ALPHA, P_BETA, P_PRECISION };

static int32_t check_precision(int32_t precision, int32_t dtype)
{
    if (precision < GEMM_FP32 || precision > GEMM_TF32)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'precision' = %d; expected 0 (fp32), 1 (3xtf32) or 2 (tf32)",
                       op_name, (int)precision);
    if (precision != GEMM_FP32 && dtype != CLOPS_F32)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'precision' = %s applies to f32 operands, but 'a' is %s "
                       "(use fp32, the default, which means the dtype's own precision)",
                       op_name, precision == GEMM_TF32 ? "tf32" : "3xtf32", dtype_name(dtype));
    return CLOPS_OK;
}

static int32_t gemm_check(struct op_call *call)
{
    const union op_value *v = call->values;
    struct gemm_plan *p = call->plan;
    int32_t status = gemm_check_args(call, v[P_A].tensor, v[P_B].tensor, v[P_C].tensor,
                                     v[P_TRANS_A].i32, v[P_TRANS_B].i32, p);
    if (status != CLOPS_OK)
        return status;
    status = check_precision(v[P_PRECISION].i32, p->dtype);
    if (status != CLOPS_OK)
        return status;
    p->precision = v[P_PRECISION].i32;
    p->alpha = v[P_ALPHA].f64;
    p->beta = v[P_BETA].f64;
    /* BLAS: alpha = 0 reads neither A nor B (NaN in them does not leak into C). */
    if (p->alpha == 0.0)
        p->k = 0;
    /* Nothing to compute: an empty C, or C = 1 * C. */
    if (p->m == 0 || p->n == 0 || (p->k == 0 && p->beta == 1.0)) {
        call->nothing_to_do = 1;
        return CLOPS_OK;
    }
    /* A and B are neither staged nor read when k = 0 (the kernel then takes NULL buffers); C
     * is read by the kernel only for beta != 0, and written back, elements only. */
    if (p->k == 0)
        call->stage[P_A] = call->stage[P_B] = STAGE_NONE;
    if (p->beta == 0.0)
        call->stage[P_C] = STAGE_OUT;
    return CLOPS_OK;
}

/* ---- tf32 from packed operands (kernels/gemm_mma.cl, -DPACKED) ------------------------------ */

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
    const struct gemm_mma_tiles *t = &tf32_packed_tiles;
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
static int takes_tf32_packed(const struct pool_device *dev, const struct gemm_plan *p)
{
    return p->dtype == CLOPS_F32 && p->precision == GEMM_TF32 && p->k > 0 &&
           mma_tuning_for(dev, p->dtype, p->precision) != NULL &&
           round_up(p->k, tf32_packed_tiles.tile_k) <= INT32_MAX &&
           mma_local_bytes(&tf32_packed_tiles, 4) <= pool_device_info(dev)->local_mem_bytes;
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
        pool_set_kernel_args(pack, 0, args, (cl_uint)(sizeof args / sizeof args[0]), op_name);
    /* One work-item a float4; the padded rows make the count a multiple of 32 * 8. */
    const size_t global = (size_t)(rows_pad / 16) * (size_t)(k->k_pad / 8) * 32, local = 256;
    if (status == CLOPS_OK)
        status = pool_enqueue_kernel(queue, pack, 1, &global, &local, op_name);
    return status;
}

static int32_t enqueue_tf32_gemm(cl_command_queue queue, cl_kernel gemm, const struct gemm_plan *p,
                                 const struct tf32_packing *k, cl_mem packed,
                                 const struct staged_tensor *sc)
{
    const struct gemm_mma_tiles *t = &tf32_packed_tiles;
    const cl_int m = (cl_int)p->m, n = (cl_int)p->n, depth_pad = (cl_int)k->k_pad;
    const float alpha = (float)p->alpha, beta = (float)p->beta;
    const cl_long off_c = sc->offset, ldc = p->ldc;
    const struct kernel_arg args[] = {KARG(m),       KARG(n),      KARG(depth_pad), KARG(alpha),
                                      KARG(beta),    KARG(packed), KARG(k->a_at),   KARG(k->b_at),
                                      KARG(sc->mem), KARG(off_c),  KARG(ldc)};
    int32_t status =
        pool_set_kernel_args(gemm, 0, args, (cl_uint)(sizeof args / sizeof args[0]), op_name);
    const size_t local = mma_group_size(t);
    const size_t global = local * (size_t)blocks_covering(p->m, p->n, t->tile_m, t->tile_n);
    if (status == CLOPS_OK)
        status = pool_enqueue_kernel(queue, gemm, 1, &global, &local, op_name);
    return status;
}

/* Packs A and B into device scratch (tf32_pack) and multiplies them (gemm_tf32), one chain on
 * the call's queue, waited for once; the scratch is released after the wait. *taken = 0 when
 * the device has no room for the packed operands (the caller then runs gemm_mma, which needs
 * none): the call must not fail for want of memory that only this path asks. */
static int32_t run_tf32_packed(struct op_call *call, const struct staged_tensor *sa,
                               const struct staged_tensor *sb, int *taken)
{
    *taken = 1;
    const struct gemm_plan *p = call->plan;
    const struct gemm_mma_tiles *t = &tf32_packed_tiles;
    const struct tf32_packing k = tf32_packing_for(p);
    char options[256];
    int32_t status = mma_build_options(t, 1, 1, options, sizeof options);
    cl_kernel pack = NULL, gemm = NULL;
    cl_mem packed = NULL;
    int fits = 0;
    if (status == CLOPS_OK)
        status = pool_create_kernel(call->pool, call->dev, op_name, "gemm_mma", options,
                                    "tf32_pack", &pack);
    if (status == CLOPS_OK)
        status = create_kernel(call->pool, call->dev, "gemm_mma", "gemm_tf32", options,
                               mma_group_size(t), &gemm, &fits);
    if (status == CLOPS_OK && !fits)
        status =
            err_set(CLOPS_ERR_DEVICE, "%s: gemm_tf32 does not fit %zu work-items a group on '%s'",
                    op_name, mma_group_size(t), pool_device_info(call->dev)->name);
    if (status == CLOPS_OK) {
        status = pool_alloc_device_memory(call->dev, k.bytes, op_name, "packed operands", &packed);
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
        status = pool_chain_begin(call->pool, call->queue, &start, op_name);
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
        pool_chain_end(call->pool, call->queue, start, &call->device_ns, op_name);
    if (status == CLOPS_OK)
        status = waited;
    pool_free_device_memory(call->dev, packed);
    pool_release_kernel(call->pool, pack);
    pool_release_kernel(call->pool, gemm);
    return status;
}

/* Runs the kernel once over the whole of C. */
static int32_t gemm_run(struct op_call *call)
{
    const struct gemm_plan *p = call->plan;
    /* The kernel's Ak and Bk are A and B, or B and A for a column-major C (gemm_plan). */
    const int a_first = p->ka == call->values[P_A].tensor;
    const struct staged_tensor *sa = &call->staged[a_first ? P_A : P_B];
    const struct staged_tensor *sb = &call->staged[a_first ? P_B : P_A];
    if (takes_tf32_packed(call->dev, p)) {
        int taken = 0;
        const int32_t status = run_tf32_packed(call, sa, sb, &taken);
        if (status != CLOPS_OK || taken)
            return status;
    }
    struct gemm_launch launch;
    int32_t status = get_launch(call->pool, call->dev, p, &launch);
    if (status == CLOPS_OK)
        status = bind_plan(launch.kernel, p, sa, sb, &call->staged[P_C]);
    if (status == CLOPS_OK)
        status = pool_launch_kernel(call->pool, &call->work, call->queue, launch.kernel, 1,
                                    &launch.global, &launch.local, op_name);
    pool_release_kernel(call->pool, launch.kernel);
    return status;
}

/* ---- The entry point ------------------------------------------------------------------------- */

static int32_t gemm_entry(struct clops_pool *pool, const struct clops_tensor *a,
                          const struct clops_tensor *b, const struct clops_tensor *c,
                          int32_t trans_a, int32_t trans_b, double alpha, double beta)
{
    /* The typed entry keeps its 1.0 prototype: precision, appended later, is fp32 here. */
    const union op_value values[] = {{.tensor = a},    {.tensor = b},     {.tensor = c},
                                     {.i32 = trans_a}, {.i32 = trans_b},  {.f64 = alpha},
                                     {.f64 = beta},    {.i32 = GEMM_FP32}};
    return call_run(pool, &impl_gemm, values);
}

/* ---- The descriptor -------------------------------------------------------------------------- */

static const char *const trans_values[] = {"none", "transpose", NULL};
static const char *const precision_values[] = {"fp32", "3xtf32", "tf32", NULL};

static const struct clops_param gemm_params[] = {
    {"a", CLOPS_PARAM_TENSOR_IN, GEMM_DTYPES, NULL, NULL,
     "A, rank 2: M x K, or K x M with trans_a = transpose. Any strides."},
    {"b", CLOPS_PARAM_TENSOR_IN, GEMM_DTYPES, NULL, NULL,
     "B, rank 2: K x N, or N x K with trans_b = transpose. Any strides; a's dtype."},
    {"c", CLOPS_PARAM_TENSOR_INOUT, GEMM_DTYPES, NULL, NULL,
     "C, rank 2, M x N, a's dtype: row- or column-major (one unit stride, the other at least "
     "the extent it steps over); read unless beta = 0, then written. Must not overlap a or b."},
    {"trans_a", CLOPS_PARAM_ENUM, 0, trans_values, "none", "op(A): A itself or its transpose."},
    {"trans_b", CLOPS_PARAM_ENUM, 0, trans_values, "none", "op(B): B itself or its transpose."},
    {"alpha", CLOPS_PARAM_DOUBLE, 0, NULL, "1",
     "Scales op(A) op(B); 0 reads neither A nor B. Rounded to float for f32."},
    {"beta", CLOPS_PARAM_DOUBLE, 0, NULL, "0",
     "Scales C's prior contents; 0 ignores them, NaN included. Rounded to float for f32."},
    {"precision", CLOPS_PARAM_ENUM, 0, precision_values, "fp32",
     "Invoke only (the typed entry runs fp32). f32 products: fp32 (IEEE single), 3xtf32 "
     "(f32-accurate from three TF32 tensor-core products), tf32 (one TF32 product, about 10 "
     "mantissa bits; opt-in). Where a device has no TF32 tensor cores both run fp32. f64 takes "
     "only fp32 (its own precision)."},
};

static const struct clops_op op_gemm = {
    .summary = "General matrix multiply: C = alpha * op(A) * op(B) + beta * C, f32 or f64.",
    .doc =
        "Computes C = alpha * op(A) * op(B) + beta * C, where op(X) is X or its transpose as "
        "trans_a and trans_b say: op(A) is M x K, op(B) is K x N and C is M x N. a, b and c "
        "have one dtype, f32 or f64 (f64 needs a device with cl_khr_fp64); products are "
        "accumulated in that precision, tiled in local memory on the pool's device for gemm. On "
        "NVIDIA GPUs of compute capability 8.0 and later, f64 runs on the FP64 tensor cores "
        "(mma.sync): each product and sum is still an IEEE double operation, summed in another "
        "order.\n"
        "\n"
        "Layouts are strides: element (i, j) of a tensor is at offset + i*strides[0] + "
        "j*strides[1], so row-major (strides {ld, 1}), column-major ({1, ld}), transposed and "
        "strided views of A and B are all taken in place, without copies. C must be row- or "
        "column-major (one unit stride); a column-major C is computed as C^T = op(B)^T op(A)^T. "
        "As in BLAS, a leading dimension smaller than the extent it steps over (lda < K for a "
        "row-major A that is not transposed) is an error, and C must not overlap A or B.\n"
        "\n"
        "BLAS conventions: beta = 0 sets C = alpha * op(A) * op(B) without reading C, so NaN or "
        "garbage in C never reaches the result; alpha = 0 or K = 0 sets C = beta * C without "
        "reading A or B; M = 0 or N = 0 is a valid call that does nothing. Gaps between the rows "
        "(or columns) of a padded C are left untouched.\n"
        "\n"
        "Errors: CLOPS_ERR_INVALID_ARGUMENT, naming the parameter, for a NULL or malformed "
        "tensor, a rank other than 2, dtypes that differ, shapes that do not chain (op(B) must "
        "have K rows, C must be M x N), a leading dimension too small, trans_a or trans_b other "
        "than 0 or 1, or C overlapping A or B. CLOPS_ERR_UNSUPPORTED for a dtype other than f32 "
        "and f64, f64 on a device without double precision, a C without a unit stride, or an "
        "extent over 2^30 - 1. A rejected call touches neither the device nor C; device and "
        "build failures carry the OpenCL error's name.\n"
        "\n"
        "Precision (f32 only; through invoke, the typed entry runs fp32): fp32, the default, "
        "multiplies and adds in IEEE single precision, summed over K in order; on NVIDIA GPUs "
        "of compute capability 8.0 and later it runs a kernel whose tiles reach local memory "
        "through cp.async, in fused multiply-adds as the portable kernel's there. 3xtf32 runs "
        "on the TF32 tensor cores of "
        "NVIDIA GPUs of compute capability 8.0 and later: each operand is split into a TF32 "
        "high part and a TF32 remainder, three products are summed (the remainders' product is "
        "left out) and each tile's sum is added in rounded f32, as accurate as fp32: on an H100, "
        "over K = 64 to 16384 on uniform, normal and badly scaled (2^-24..2^24) inputs, its "
        "largest error was 0.5 to 10.4 f32 ulps of sum |a||b| against fp32's 1.8 to 13 "
        "(test_gemm_precision; hosts/bench/RESULTS.md). tf32 rounds each operand to TF32 (10 "
        "mantissa bits) and multiplies once: about 2^-11 of sum |a||b| (186 to 13300 ulps "
        "measured), opt-in for speed; on NVIDIA GPUs it first packs both operands, rounded, "
        "into device scratch ((M + N) * K * 4 bytes, rounded up to whole 128x16 tiles, released "
        "when the call ends; a device without room for it runs the unpacked kernel instead). "
        "Devices without TF32 tensor cores (CPUs, other GPUs) run "
        "3xtf32 and tf32 as fp32, bit for bit. f64 takes only fp32 (its own precision); tf32 or "
        "3xtf32 with f64 operands is CLOPS_ERR_INVALID_ARGUMENT.\n"
        "\n"
        "Tuning (settings in operators.gemm, checked when the pool is created): tile_m and "
        "tile_n (1..512), the block of C a work-group computes; tile_k (1..128), its K step; "
        "wpt_m and wpt_n (1..32), the block of a work-item; vw (1..16), rows per local vector "
        "load. Each left out takes the device's value (NVIDIA GPUs 128x128x16 of 8x8, vw 4, or "
        "64x64x16 of 4x4 when there are fewer blocks than compute units; other GPUs 64x64x8 of "
        "4x4; CPUs 64x128x8 of 16x16, vw 16). tile_m must be a multiple of wpt_m, tile_n of "
        "wpt_n, wpt_m and wpt_n of vw, and each tile must split evenly over the work-group's "
        "loads: a call with tiles that do not is CLOPS_ERR_CONFIG naming the settings. These "
        "settings describe the portable kernel: with any of them set, f64 and fp32 run on it on "
        "NVIDIA GPUs too, instead of the tensor cores and the cp.async kernel (tf32 and 3xtf32 "
        "keep theirs). "
        "-DTILE_M=<n> ... -DVW=<n> in operators.gemm.build_options are read as these settings "
        "too.",
    OP_DESCRIPTOR_COMMON(op_name, gemm_params, gemm_entry, clops_gemm_fn),
};

const struct op_impl impl_gemm =
    OP_IMPL(&op_gemm, struct gemm_plan, gemm_check, gemm_run, NULL, NULL, &gemm_settings);

/* ---- Internal entry for other operators (gemm.h) -------------------------------------------- */

#include "gemm.h" /* here, not at the top: checks the prototype of what follows */

int32_t gemm_enqueue(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                     int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha,
                     const struct gemm_operand *a, const struct gemm_operand *b, double beta,
                     const struct gemm_operand *c, int64_t *device_ns, const char *caller)
{
    if (m == 0 || n == 0)
        return CLOPS_OK;
    struct gemm_plan p = {
        .dtype = dtype, .m = m, .n = n, .k = alpha == 0.0 ? 0 : k, .alpha = alpha, .beta = beta};
    const struct gemm_operand *left = a, *right = b;
    if (c->col_stride == 1 || n == 1) {
        p.ka_si = a->row_stride;
        p.ka_sk = a->col_stride;
        p.kb_sk = b->row_stride;
        p.kb_sj = b->col_stride;
        p.ldc = c->row_stride;
    } else { /* a column-major C: the kernel writes C^T = B^T A^T, as gemm_check_args does */
        left = b;
        right = a;
        p.m = n;
        p.n = m;
        p.ka_si = b->col_stride;
        p.ka_sk = b->row_stride;
        p.kb_sk = a->col_stride;
        p.kb_sj = a->row_stride;
        p.ldc = c->col_stride;
    }
    const struct staged_tensor sa = {.mem = left->mem, .offset = left->offset};
    const struct staged_tensor sb = {.mem = right->mem, .offset = right->offset};
    const struct staged_tensor sc = {.mem = c->mem, .offset = c->offset};
    struct gemm_launch launch;
    int32_t status = get_launch(pool, dev, &p, &launch);
    if (status == CLOPS_OK)
        status = bind_plan(launch.kernel, &p, &sa, &sb, &sc);
    /* Not waited for: callers chain it with their own kernels, and pool_chain_end waits and
     * counts the chain's device time (so device_ns is theirs to fill). */
    (void)device_ns;
    if (status == CLOPS_OK)
        status =
            pool_enqueue_kernel(queue, launch.kernel, 1, &launch.global, &launch.local, op_name);
    pool_release_kernel(pool, launch.kernel);
    if (status != CLOPS_OK)
        err_prefix(caller);
    return status;
}
