/* gemm.c — the gemm operator, C = alpha * op(A) * op(B) + beta * C in f32 or f64: its descriptor
 * and its steps. One file a job: gemm_check.c (arguments and plan), gemm_tune.c (tiles per
 * device, settings), gemm_kernel.c (the kernel for a plan: kernels/gemm.cl, portable, or, on
 * NVIDIA GPUs of compute capability 8.0 and later, kernels/gemm_mma.cl and gemm_tf32.cl: f64 and
 * f32 in the TF32 precisions on the tensor cores, gemm_simt.cl: f32 in fp32 on the FP32 units fed
 * by cp.async), gemm_tf32.c (tf32 from packed operands), gemm_launch.c (the launches). */
#include "gemm_impl.h"

#include "registry.h"

const char gemm_op_name[] = "gemm";

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
        "Submitted calls of at least 2^30 multiply-adds (M N K) run in blocks of C, whole tiles "
        "of at least 2^28 multiply-adds, 16 at most, each one launch over all of K, with the "
        "same results bit for bit: the progress counts blocks done, a cancel stops the call "
        "between two blocks (CLOPS_ERR_CANCELLED; a host C untouched), and at most 2 blocks "
        "stay queued beyond those the device finished. Smaller and synchronous calls run in one "
        "launch; tf32 from packed operands in one piece.\n"
        "\n"
        "Tuning (settings in operators.gemm, checked when the pool is created): tile_m and "
        "tile_n (1..512), the block of C a work-group computes; tile_k (1..128), its K step; "
        "wpt_m and wpt_n (1..32), the block of a work-item; vw (1..16), rows per local vector "
        "load. Each left out takes the device's value (NVIDIA GPUs 128x128x16 of 8x8, vw 4, or "
        "64x64x16 of 4x4 when there are fewer blocks than compute units; other GPUs 64x64x8 of "
        "4x4; CPUs 64x128x8 of 16x16, vw 16, or 32x32x8 of 8x8, vw 8, when there are fewer "
        "blocks than compute units). tile_m must be a multiple of wpt_m, tile_n of "
        "wpt_n, wpt_m and wpt_n of vw, and each tile must split evenly over the work-group's "
        "loads: a call with tiles that do not is CLOPS_ERR_CONFIG naming the settings. These "
        "settings describe the portable kernel: with any of them set, f64 and fp32 run on it on "
        "NVIDIA GPUs too, instead of the tensor cores and the cp.async kernel (tf32 and 3xtf32 "
        "keep theirs). "
        "-DTILE_M=<n> ... -DVW=<n> in operators.gemm.build_options are read as these settings "
        "too.",
    OP_DESCRIPTOR_COMMON(gemm_op_name, gemm_params, gemm_entry, clops_gemm_fn),
};

const struct op_impl impl_gemm = {.desc = &op_gemm,
                                  .plan_size = sizeof(struct gemm_plan),
                                  .check = gemm_check,
                                  .enqueue = gemm_run,
                                  .commit = gemm_commit,
                                  .settings = &gemm_settings,
                                  .cut = gemm_cut,
                                  .pieces = gemm_pieces};
