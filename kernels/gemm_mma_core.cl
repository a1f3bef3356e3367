/* gemm_mma_core.cl — what the tensor-core GEMM kernels share (gemm_mma.cl's gemm_mma, and
 * gemm_tf32.cl's tf32_pack and gemm_tf32 with -DPACKED): the element type, the instruction
 * (mma.sync), TF32's rounding and passes, and the write of C. Built after gemm_pipeline.cl and
 * before one of those two files. */

/* TF32_PASSES = 1 ("tf32"): each f32 operand is rounded to TF32 (10 explicit mantissa bits) and
 * multiplied once, products summed in f32. TF32_PASSES = 3 ("3xtf32"): each operand x is split
 * into hi = tf32(x) and lo = tf32(x - hi), and the product is lo*hi' + hi*lo' + hi*hi' (the
 * lo*lo' term, below f32's rounding, is left out), each summed in f32: about f32's accuracy at
 * three TF32 products' cost. Without it the kernel is f64. */
#ifdef TF32_PASSES
#if TF32_PASSES != 1 && TF32_PASSES != 3
#error "TF32_PASSES must be 1 or 3"
#endif
#if !defined(MMA_SHAPE) || MMA_SHAPE != 1688
#error "the TF32 kernel runs m16n8k8 (-DMMA_SHAPE=1688)"
#endif
typedef float real;
typedef float2 real2;
#define REAL_BYTES 4
#else
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
typedef double2 real2;
#define REAL_BYTES 8
#endif

#if defined(PACKED) && (!defined(TF32_PASSES) || TF32_PASSES != 1)
#error "-DPACKED is gemm's tf32: it needs -DTF32_PASSES=1"
#endif

#if !defined(TILE_M) || !defined(TILE_N) || !defined(TILE_K) || !defined(WARP_M) ||                \
    !defined(WARP_N) || !defined(MMA_SHAPE) || !defined(STAGES)
#error "tensor-core kernels need -DTILE_M -DTILE_N -DTILE_K -DWARP_M -DWARP_N -DMMA_SHAPE -DSTAGES"
#endif

/* The instruction (f64): MMA_SHAPE 884 is m8n8k4 (sm_80; two of them make a 16x8x4 step, at half
 * the rate of the others on an H100), 1684, 1688 and 16816 are m16n8k4, m16n8k8 and m16n8k16
 * (sm_90). Each computes D = A B + C on a 16 x 8 (8 x 8) block of C, in f64 throughout: every
 * product and sum is an IEEE double fused multiply-add. */
#if defined(TF32_PASSES)
#define MMA_K 8
#elif MMA_SHAPE == 884 || MMA_SHAPE == 1684
#define MMA_K 4
#elif MMA_SHAPE == 1688
#define MMA_K 8
#elif MMA_SHAPE == 16816
#define MMA_K 16
#else
#error "MMA_SHAPE must be 884, 1684, 1688 or 16816"
#endif

#define WARPS_N (TILE_N / WARP_N)
#define WG_SIZE ((TILE_M / WARP_M) * WARPS_N * 32)
#define MU (WARP_M / 16) /* 16-row units of a warp's block */
#define NU (WARP_N / 8)  /* 8-column units */
#define NP (WARP_N / 16) /* pairs of column units, read with one 16-byte local load */

/* One MMA_K step of the 16x8 C unit c[0..3] (rows g and g + 8, columns 2t and 2t + 1), from
 * fa[q] (rows g and g + 8 at k-row 4q + t: .x and .y) and b[q], column g at k-row 4q + t. */
#if MMA_SHAPE == 884
#define MMA_STEP(c, fa, b)                                                                         \
    do {                                                                                           \
        asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"        \
            : "+d"((c)[0]), "+d"((c)[1])                                                           \
            : "d"((fa)[0].x), "d"((b)[0]));                                                        \
        asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"        \
            : "+d"((c)[2]), "+d"((c)[3])                                                           \
            : "d"((fa)[0].y), "d"((b)[0]));                                                        \
    } while (0)
#elif MMA_SHAPE == 1684
#define MMA_STEP(c, fa, b)                                                                         \
    asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, "          \
        "{%0,%1,%2,%3};"                                                                           \
        : "+d"((c)[0]), "+d"((c)[1]), "+d"((c)[2]), "+d"((c)[3])                                   \
        : "d"((fa)[0].x), "d"((fa)[0].y), "d"((b)[0]))
#elif MMA_SHAPE == 1688
#define MMA_STEP(c, fa, b)                                                                         \
    asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "          \
        "{%8,%9}, {%0,%1,%2,%3};"                                                                  \
        : "+d"((c)[0]), "+d"((c)[1]), "+d"((c)[2]), "+d"((c)[3])                                   \
        : "d"((fa)[0].x), "d"((fa)[0].y), "d"((fa)[1].x), "d"((fa)[1].y), "d"((b)[0]),             \
          "d"((b)[1]))
#else
#define MMA_STEP(c, fa, b)                                                                         \
    asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "                        \
        "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"                           \
        : "+d"((c)[0]), "+d"((c)[1]), "+d"((c)[2]), "+d"((c)[3])                                   \
        : "d"((fa)[0].x), "d"((fa)[0].y), "d"((fa)[1].x), "d"((fa)[1].y), "d"((fa)[2].x),          \
          "d"((fa)[2].y), "d"((fa)[3].x), "d"((fa)[3].y), "d"((b)[0]), "d"((b)[1]), "d"((b)[2]),   \
          "d"((b)[3]))
#endif

/* The offset of 16-element unit w of a warp's rows (columns) from this lane's fragment: `flip` is
 * the part of the lane's swizzle that moves it to the neighbouring unit (f32 only, else 0), which
 * for an even unit is the next one and for an odd unit the previous one. */
#define UNIT(w) (16 * (w) + (((w)&1) ? -flip : flip))

#ifdef TF32_PASSES
/* x rounded to TF32 (to nearest, ties away from zero, as cvt.rna), as the bits the instruction
 * takes: the 13 low mantissa bits cleared. */
static inline uint tf32_round(float x)
{
    return (as_uint(x) + 0x1000u) & 0xffffe000u;
}

/* hi and lo of x (the header's split); lo is exact before its own rounding. */
#define SPLIT(x, hi, lo)                                                                           \
    do {                                                                                           \
        const float x_ = (x);                                                                      \
        (hi) = tf32_round(x_);                                                                     \
        (lo) = tf32_round(x_ - as_float(hi));                                                      \
    } while (0)

#define MMA_TF32(c, a, b)                                                                          \
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "        \
        "{%8,%9}, {%0,%1,%2,%3};"                                                                  \
        : "+f"((c)[0]), "+f"((c)[1]), "+f"((c)[2]), "+f"((c)[3])                                   \
        : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]), "r"((b)[1]))

/* The small products first, so that they are summed before the large one swamps them. */
#if TF32_PASSES == 3
#define MMA_PASSES(c, ah, al, bh, bl)                                                              \
    do {                                                                                           \
        MMA_TF32(c, al, bh);                                                                       \
        MMA_TF32(c, ah, bl);                                                                       \
        MMA_TF32(c, ah, bh);                                                                       \
    } while (0)
#else
#define MMA_PASSES(c, ah, al, bh, bl) MMA_TF32(c, ah, bh)
#endif

/* The tensor cores add each instruction's products into the f32 accumulator with truncation,
 * not rounding to nearest (about 2^-23 of it lost per instruction, always the same way), which
 * over K = 4096 made 3xtf32 10 to 20 times less accurate than fp32. So for 3xtf32 each stage's
 * products of a 16x8 unit go into a fresh accumulator, added to the unit's own with a rounded
 * f32 addition: the truncations then fall on sums of TILE_K products only. */
#if TF32_PASSES == 3
#define TILE_SUM(c, part) part
#else
#define TILE_SUM(c, part) c
#endif
#define MMA_UNIT(c, ah, al, bh, bl)                                                                \
    do {                                                                                           \
        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};                                                  \
        _Pragma("unroll") for (int ks = 0; ks < TILE_K / MMA_K; ks++)                              \
            MMA_PASSES(TILE_SUM(c, part), ah[ks], al[ks], bh[ks], bl[ks]);                         \
        if (TF32_PASSES == 3)                                                                      \
            _Pragma("unroll") for (int e = 0; e < 4; e++)(c)[e] += part[e];                        \
    } while (0)
#endif

/* Runs the statements for each of this lane's accumulators acc[u][v][2 * h + e] within M x N,
 * i and j its row and column of C (the 16x8 units of its warp's block at wm0, wn0 of the group's
 * block at i0, j0; the mma layout: rows g and g + 8, columns 2t and 2t + 1). A macro, as
 * MULTIPLY_STAGE, for the accumulators' sake. */
#define EACH_ACC(...)                                                                              \
    do {                                                                                           \
        _Pragma("unroll") for (int u = 0; u < MU; u++)                                             \
        {                                                                                          \
            _Pragma("unroll") for (int h = 0; h < 2; h++)                                          \
            {                                                                                      \
                const int i = i0 + wm0 + 16 * u + 8 * h + g;                                       \
                if (i >= M)                                                                        \
                    continue;                                                                      \
                _Pragma("unroll") for (int v = 0; v < NU; v++)                                     \
                {                                                                                  \
                    _Pragma("unroll") for (int e = 0; e < 2; e++)                                  \
                    {                                                                              \
                        const int j = j0 + wn0 + 8 * v + 2 * t + e;                                \
                        if (j >= N)                                                                \
                            continue;                                                              \
                        __VA_ARGS__                                                                \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* With -DCARRY (gemm_pipeline.cl): this lane's accumulators loaded from W (TO_W 0) or stored
 * there (1), at the elements WRITE_C writes. */
#define CARRY_SUMS(TO_W)                                                                           \
    EACH_ACC(const long at = offW + (long)i * ldw + j; if (TO_W) W[at] = acc[u][v][2 * h + e];     \
             else acc[u][v][2 * h + e] = W[at];)

/* Writes this lane's accumulators to C as alpha * acc + beta * C. beta == 0 takes a branch of
 * its own that never loads C, so that NaN or garbage there cannot reach the result. */
#define WRITE_C()                                                                                  \
    do {                                                                                           \
        const int read_c = beta != (real)0;                                                        \
        EACH_ACC(const long at = offC + (long)i * ldc + j;                                         \
                 if (read_c) C[at] = alpha * acc[u][v][2 * h + e] + beta * C[at];                  \
                 else C[at] = alpha * acc[u][v][2 * h + e];);                                      \
    } while (0)
