/* gemm_tf32.cl — f32 C = alpha * op(A) * op(B) + beta * C on the TF32 tensor cores of NVIDIA GPUs
 * (compute capability 8.0 and later, inline PTX: mma.sync, cp.async), from operands packed
 * beforehand: tf32_pack rounds (and for 3xtf32 splits) each operand once, into the order in which
 * the instruction's fragments sit in a warp's registers; gemm_tf32 then copies whole 16-byte runs
 * of it into local memory and loads each fragment with one 16-byte load, with no rounding,
 * permuting or bounds checks left in its inner loop. gemm.c builds it only for the devices it
 * sends here: any other compiler would reject the asm. */

/* TF32_PASSES = 1 ("tf32"): each operand rounded to TF32 (10 explicit mantissa bits, to nearest,
 * ties away, as cvt.rna) and multiplied once, the products summed in f32. TF32_PASSES = 3
 * ("3xtf32"): each operand x split into hi = tf32(x) and lo = tf32(x - hi), the product taken as
 * lo*hi' + hi*lo' + hi*hi' (lo*lo', below f32's rounding, is left out): about f32's accuracy at
 * three TF32 products' cost. */
#if !defined(TF32_PASSES) || (TF32_PASSES != 1 && TF32_PASSES != 3)
#error "gemm_tf32.cl needs -DTF32_PASSES=1 or 3"
#endif

/* The packed layout of an operand with `rows` rows (M of op(A), N of op(B)) and depth K, padded
 * with zeros to whole tiles: 16-row units by 8-deep steps, unit-major, each unit-step a block of
 * 32 float4, one per lane of a warp. Lane L = 4 * (r % 8) + k % 4 holds, as .x .y .z .w, rows
 * r and r + 8 at depth k, then both at depth k + 4: exactly an A fragment of m16n8k8 (a0..a3),
 * and for B (rows = columns n) the b0 b1 of two neighbouring 8-column units ({.x .z} and
 * {.y .w}). For 3xtf32 the lo parts follow the hi parts as a second array of the same shape. */
#define UNIT_STEP 32 /* float4 in one unit-step */

/* x rounded to TF32 (to nearest, ties away from zero, as cvt.rna), with its 13 low mantissa bits
 * cleared: the bits the instruction takes. */
static inline float tf32_round(float x)
{
    return as_float((as_uint(x) + 0x1000u) & 0xffffe000u);
}

/* Work decomposition: one work-item per packed float4 (one lane of one unit-step), over
 * (rows_pad / 16) * (depth_pad / 8) * 32 work-items; it reads its 4 elements of op(X), element
 * (r, k) at src[off + r * s_row + k * s_depth] (0 outside rows x depth), and writes one float4
 * at packed[hi_at + id] (and the lo parts' at packed[lo_at + id]). Memory traffic: op(X) read once,
 * the packed copy written once (twice for 3xtf32); a warp reads a 16 x 8 block, whole 32-byte
 * sectors in either layout. */
__kernel void tf32_pack(const int rows, const int depth, const int depth_pad,
                        const __global float *restrict src, const long off, const long s_row,
                        const long s_depth, __global float4 *restrict packed, const long hi_at,
                        const long lo_at)
{
    const long id = (long)get_global_id(0);
    const int lane = (int)(id % 32);
    const long unit_step = id / 32;
    const int steps = depth_pad / 8;
    const int unit = (int)(unit_step / steps), step = (int)(unit_step % steps);
    const int r = 16 * unit + lane / 4, k = 8 * step + lane % 4;
    float v[4];
    for (int e = 0; e < 4; e++) {
        const int re = r + 8 * (e & 1), ke = k + 4 * (e >> 1);
        v[e] = re < rows && ke < depth ? src[off + (long)re * s_row + (long)ke * s_depth] : 0.0f;
    }
    const float4 hi =
        (float4)(tf32_round(v[0]), tf32_round(v[1]), tf32_round(v[2]), tf32_round(v[3]));
    packed[hi_at + id] = hi;
#if TF32_PASSES == 3
    packed[lo_at + id] = (float4)(tf32_round(v[0] - hi.x), tf32_round(v[1] - hi.y),
                                  tf32_round(v[2] - hi.z), tf32_round(v[3] - hi.w));
#endif
}

#if !defined(TILE_M) || !defined(TILE_N) || !defined(TILE_K) || !defined(WARP_M) ||                \
    !defined(WARP_N) || !defined(STAGES)
#error "gemm_tf32.cl needs -DTILE_M, -DTILE_N, -DTILE_K, -DWARP_M, -DWARP_N, -DSTAGES"
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

#define PARTS (TF32_PASSES == 3 ? 2 : 1) /* hi, or hi and lo */
#define WARPS_N (TILE_N / WARP_N)
#define WG_SIZE ((TILE_M / WARP_M) * WARPS_N * 32)
#define MU (WARP_M / 16) /* 16-row units of a warp's block */
#define NP (WARP_N / 16) /* 16-column units: pairs of the instruction's 8-column ones */
#define KS (TILE_K / 8)  /* the instruction's steps in a tile */
#define UNITS_M (TILE_M / 16)
#define UNITS_N (TILE_N / 16)
#define RUN (KS * UNIT_STEP) /* float4 of one unit in one stage */
/* A stage in local memory: A's units (hi, then lo), then B's, each unit a run of RUN float4 as
 * it lies in the packed operand. */
#define STAGE_A (UNITS_M * RUN)
#define STAGE_B (UNITS_N * RUN)
#define STAGE (PARTS * (STAGE_A + STAGE_B))

#if TILE_M % WARP_M != 0 || TILE_N % WARP_N != 0 || WARP_M % 16 != 0 || WARP_N % 16 != 0 ||        \
    TILE_K % 8 != 0
#error "TILE_M, TILE_N: multiples of WARP_M, WARP_N, themselves multiples of 16; TILE_K of 8"
#endif
#if STAGE % WG_SIZE != 0 || STAGES < 2
#error "a stage must split evenly over the work-group's 16-byte copies; STAGES at least 2"
#endif

#define MMA_TF32(c, a0, a1, a2, a3, b0, b1)                                                        \
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "        \
        "{%8,%9}, {%0,%1,%2,%3};"                                                                  \
        : "+f"((c)[0]), "+f"((c)[1]), "+f"((c)[2]), "+f"((c)[3])                                   \
        : "r"(as_uint(a0)), "r"(as_uint(a1)), "r"(as_uint(a2)), "r"(as_uint(a3)),                  \
          "r"(as_uint(b0)), "r"(as_uint(b1)))

/* The 8-column unit h (0 or 1) of a 16-column fragment f: b0 at depth t, b1 at t + 4. */
#define B0(f, h) ((h) ? (f).y : (f).x)
#define B1(f, h) ((h) ? (f).w : (f).z)
#define MMA_FRAG(c, a, b, h) MMA_TF32(c, (a).x, (a).y, (a).z, (a).w, B0(b, h), B1(b, h))

/* The small products first, so that they are summed before the large one swamps them. */
#if TF32_PASSES == 3
#define MMA_PASSES(c, ah, al, bh, bl, h)                                                           \
    do {                                                                                           \
        MMA_FRAG(c, al, bh, h);                                                                    \
        MMA_FRAG(c, ah, bl, h);                                                                    \
        MMA_FRAG(c, ah, bh, h);                                                                    \
    } while (0)
#else
#define MMA_PASSES(c, ah, al, bh, bl, h) MMA_FRAG(c, ah, bh, h)
#endif

/* The tensor cores add each instruction's products into the f32 accumulator with truncation,
 * not rounding to nearest; for 3xtf32 each stage's products of a 16x8 unit go into a fresh
 * accumulator, added to the unit's own with a rounded f32 addition, so that the truncations
 * fall on sums of TILE_K products only (gemm_mma.cl measured the difference). */
#if TF32_PASSES == 3
#define MMA_UNIT(c, ah, al, bh, bl, h)                                                             \
    do {                                                                                           \
        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};                                                  \
        _Pragma("unroll") for (int ks = 0; ks < KS; ks++)                                          \
            MMA_PASSES(part, ah[ks], al[ks], bh[ks], bl[ks], h);                                   \
        _Pragma("unroll") for (int e = 0; e < 4; e++)(c)[e] += part[e];                            \
    } while (0)
#else
#define MMA_UNIT(c, ah, al, bh, bl, h)                                                             \
    _Pragma("unroll") for (int ks = 0; ks < KS; ks++)                                              \
        MMA_PASSES(c, ah[ks], al[ks], bh[ks], bl[ks], h)
#endif

/* Copies the stage of tile kt (A's units from unit_a, B's from unit_b, depth steps from
 * KS * kt) into `stage`: RUN float4 a unit, contiguous in the packed operand, 16 bytes a
 * cp.async (cached in L2 only: each is read once by this work-group). */
static void copy_stage(__local float4 *stage, const __global float4 *packed, long a_hi, long a_lo,
                       long b_hi, long b_lo, int unit_a, int unit_b, int steps, int kt, int lid)
{
#pragma unroll
    for (int l = 0; l < STAGE / WG_SIZE; l++) {
        const int idx = lid + l * WG_SIZE;
        const int unit = idx / RUN, at = idx % RUN;
        long src;
        if (unit < UNITS_M)
            src = a_hi + (long)(unit_a + unit) * steps * UNIT_STEP;
        else if (PARTS == 2 && unit < 2 * UNITS_M)
            src = a_lo + (long)(unit_a + unit - UNITS_M) * steps * UNIT_STEP;
        else if (unit < PARTS * UNITS_M + UNITS_N)
            src = b_hi + (long)(unit_b + unit - PARTS * UNITS_M) * steps * UNIT_STEP;
        else
            src = b_lo + (long)(unit_b + unit - PARTS * UNITS_M - UNITS_N) * steps * UNIT_STEP;
        src += (long)kt * RUN + at;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                     :
                     : "r"((uint)(ulong)(stage + idx)), "l"(packed + src)
                     : "memory");
    }
}

static void copies_commit(void)
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}

#define COPIES_WAIT(pending) asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory")

/* The block of C of work-group `group`: groups run down bands of GROUP_M block rows, column by
 * column, so that the groups resident at once share their A rows and B columns in L2. */
static void block_of_group(int m, int n, int *bm, int *bn)
{
    const int groups_m = (m + TILE_M - 1) / TILE_M, groups_n = (n + TILE_N - 1) / TILE_N;
    const long group = (long)get_group_id(0);
    const long per_band = (long)GROUP_M * groups_n;
    const int band = (int)(group / per_band);
    const int first = band * GROUP_M;
    const int rows = min(groups_m - first, GROUP_M);
    const int in_band = (int)(group - band * per_band);
    *bm = first + in_band % rows;
    *bn = in_band / rows;
}

/* Work decomposition: a 1-D range of work-groups of WG_SIZE work-items (warps of 32); group g
 * computes the TILE_M x TILE_N block of C that block_of_group gives, warp w the WARP_M x WARP_N
 * sub-block (w / WARPS_N, w % WARPS_N) as MU x 2 NP units of 16 x 8 in registers (the mma
 * accumulator layout: rows g and g + 8, columns 2t and 2t + 1, g = lane / 4, t = lane % 4).
 *
 * Memory traffic: per TILE_K step the group copies its A and B units of the packed operands into
 * local memory once (global reads M*N*K * (1/TILE_N + 1/TILE_M) elements, times PARTS), STAGES - 1
 * steps ahead of the multiplications, without passing through registers. From local memory each
 * warp reads, per 8-deep step, MU + NP float4 (times PARTS) for 2 MU NP instructions (times
 * TF32_PASSES), each a conflict-free 16-byte load of 32 consecutive lanes. C is read (only for
 * beta != 0) and written once per element.
 *
 * Contract: the packed operands of tf32_pack, A's with M rows and B's with N, both of depth_pad
 * = whole TILE_Ks and rows padded to whole TILE_M (TILE_N); hi parts at a_hi and b_hi, lo parts
 * (3xtf32) at a_lo and b_lo, in float4 from `packed`. */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
gemm_tf32(const int M, const int N, const int depth_pad, const float alpha, const float beta,
          const __global float4 *restrict packed, const long a_hi, const long a_lo, const long b_hi,
          const long b_lo, __global float *C, const long offC, const long ldc)
{
    __local float4 tiles[STAGES * STAGE];

    int bm, bn;
    block_of_group(M, N, &bm, &bn);
    const int i0 = bm * TILE_M, j0 = bn * TILE_N;
    const int lid = (int)get_local_id(0);
    const int lane = lid & 31, warp = lid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm0 = (warp / WARPS_N) * WARP_M, wn0 = (warp % WARPS_N) * WARP_N;
    const int steps = depth_pad / 8;
    const int unit_a = i0 / 16, unit_b = j0 / 16;
    /* This lane's float4 of its warp's first unit of A (B) in a stage, hi part. */
    const int frag_a = (wm0 / 16) * RUN + lane;
    const int frag_b = PARTS * STAGE_A + (wn0 / 16) * RUN + lane;

    float acc[MU][2 * NP][4];
#pragma unroll
    for (int u = 0; u < MU; u++)
#pragma unroll
        for (int v = 0; v < 2 * NP; v++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[u][v][e] = 0.0f;

    /* Tile kt goes to stage kt % STAGES, copied STAGES - 1 tiles ahead of its use; each
     * iteration commits one group of copies (empty past the last tile), so that waiting for all
     * but the STAGES - 2 newest waits for tile kt; the barrier then publishes every work-item's
     * copies and tells that every warp is done with tile kt - 1, whose stage is refilled next. */
    const int tiles_k = depth_pad / TILE_K;
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles_k)
            copy_stage(tiles + s * STAGE, packed, a_hi, a_lo, b_hi, b_lo, unit_a, unit_b, steps, s,
                       lid);
        copies_commit();
    }
    int stage = 0, fill = STAGES - 1;
    for (int kt = 0; kt < tiles_k; kt++) {
        COPIES_WAIT(STAGES - 2);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int next = kt + STAGES - 1;
        if (next < tiles_k)
            copy_stage(tiles + fill * STAGE, packed, a_hi, a_lo, b_hi, b_lo, unit_a, unit_b, steps,
                       next, lid);
        copies_commit();
        fill = fill + 1 == STAGES ? 0 : fill + 1;

        const __local float4 *as = tiles + stage * STAGE + frag_a;
        const __local float4 *bs = tiles + stage * STAGE + frag_b;
        float4 bh[NP][KS], bl[NP][KS];
#pragma unroll
        for (int p = 0; p < NP; p++)
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                bh[p][ks] = bs[p * RUN + ks * UNIT_STEP];
                bl[p][ks] = PARTS == 2 ? bs[UNITS_N * RUN + p * RUN + ks * UNIT_STEP] : bh[p][ks];
            }
#pragma unroll
        for (int u = 0; u < MU; u++) {
            float4 ah[KS], al[KS];
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                ah[ks] = as[u * RUN + ks * UNIT_STEP];
                al[ks] = PARTS == 2 ? as[UNITS_M * RUN + u * RUN + ks * UNIT_STEP] : ah[ks];
            }
#pragma unroll
            for (int p = 0; p < NP; p++) {
                MMA_UNIT(acc[u][2 * p], ah, al, bh[p], bl[p], 0);
                MMA_UNIT(acc[u][2 * p + 1], ah, al, bh[p], bl[p], 1);
            }
        }
        stage = stage + 1 == STAGES ? 0 : stage + 1;
    }

    /* beta == 0 takes a branch of its own that never loads C, so that NaN or garbage there
     * cannot reach the result. */
    const int read_c = beta != 0.0f;
#pragma unroll
    for (int u = 0; u < MU; u++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int i = i0 + wm0 + 16 * u + 8 * h + g;
            if (i >= M)
                continue;
#pragma unroll
            for (int v = 0; v < 2 * NP; v++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int j = j0 + wn0 + 8 * v + 2 * t + e;
                    if (j >= N)
                        continue;
                    const long at = offC + (long)i * ldc + j;
                    if (read_c)
                        C[at] = alpha * acc[u][v][2 * h + e] + beta * C[at];
                    else
                        C[at] = alpha * acc[u][v][2 * h + e];
                }
            }
        }
    }
}
