/* gemm_tf32.cl — gemm's tf32 from operands packed beforehand (-DPACKED, -DTF32_PASSES=1):
 * tf32_pack and gemm_tf32, which share the instruction, the copies' pipeline, the order of the
 * blocks and the write of C with gemm_mma. Built after gemm_pipeline.cl and gemm_mma_core.cl. */

/* tf32_pack rounds each operand to TF32 once, into the order in which the instruction's fragments
 * sit in a warp's registers, padded with zeros to whole tiles; gemm_tf32 then copies whole 16-byte
 * runs of it into local memory and loads each fragment with one 16-byte load, with no rounding,
 * permuting or bounds checks left in its inner loop (on an H200 at N = 8192, 142 against
 * gemm_mma's 97 TFLOP/s in tf32).
 *
 * The packed layout of an operand with `rows` rows (M of op(A), N of op(B)) and depth K: 16-row
 * units by 8-deep steps, unit-major, each unit-step a block of 32 float4, one per lane of a warp.
 * Lane L = 4 * (r % 8) + k % 4 holds, as .x .y .z .w, rows r and r + 8 at depth k, then both at
 * depth k + 4: exactly an A fragment of m16n8k8 (a0..a3), and for B (rows = columns n) the b0 b1
 * of two neighbouring 8-column units ({.x .z} and {.y .w}). */
#define UNIT_STEP 32        /* float4 in one unit-step */
#define KS (TILE_K / MMA_K) /* the instruction's steps in a tile */
#define UNITS_M (TILE_M / 16)
#define UNITS_N (TILE_N / 16)
#define RUN (KS * UNIT_STEP) /* float4 of one unit in one stage */
/* A stage in local memory: A's units, then B's, each a run of RUN float4 as in the operand. */
#define STAGE_A (UNITS_M * RUN)
#define STAGE (STAGE_A + UNITS_N * RUN)

#if TILE_M % WARP_M != 0 || TILE_N % WARP_N != 0 || WARP_M % 16 != 0 || WARP_N % 16 != 0 ||        \
    TILE_K % MMA_K != 0 || TILE_M % 128 != 0 || TILE_N % 128 != 0
#error "TILE_M, TILE_N: multiples of 128, of WARP_M and WARP_N, multiples of 16; TILE_K of 8"
#endif
#if STAGE % WG_SIZE != 0 || STAGES < 2
#error "a stage must split evenly over the work-group's 16-byte copies; STAGES at least 2"
#endif

/* Work decomposition: one work-item per packed float4 (one lane of one unit-step), over
 * (rows_pad / 16) * (depth_pad / 8) * 32 work-items (rows_pad: whole tiles, so groups of 256
 * divide it); it reads its 4 elements of op(X), element (r, k) at src[off + r * s_row +
 * k * s_depth] (0 outside rows x depth), and writes one float4 at packed[at + id]. Memory
 * traffic: op(X) read once and its packed copy written once; a warp reads a 16 x 8 block, whole
 * 32-byte sectors in either layout. */
__kernel void tf32_pack(const int rows, const int depth, const int depth_pad,
                        const __global float *restrict src, const long off, const long s_row,
                        const long s_depth, __global float4 *restrict packed, const long at)
{
    const long id = (long)get_global_id(0);
    const int lane = (int)(id % 32);
    const long unit_step = id / 32;
    const int steps = depth_pad / MMA_K;
    const int unit = (int)(unit_step / steps), step = (int)(unit_step % steps);
    const int r = 16 * unit + lane / 4, k = MMA_K * step + lane % 4;
    float v[4];
    for (int e = 0; e < 4; e++) {
        const int re = r + 8 * (e & 1), ke = k + 4 * (e >> 1);
        const float x =
            re < rows && ke < depth ? src[off + (long)re * s_row + (long)ke * s_depth] : 0.0f;
        v[e] = as_float(tf32_round(x));
    }
    packed[at + id] = (float4)(v[0], v[1], v[2], v[3]);
}

/* Copies the stage of tile kt (A's units from unit_a, B's from unit_b, in `steps`-step runs) into
 * `stage`: RUN float4 a unit, contiguous in the packed operand, 16 bytes a cp.async (cached in L2
 * only: this work-group reads each once). */
static void copy_stage(__local float4 *stage, const __global float4 *packed, long a_at, long b_at,
                       int unit_a, int unit_b, int steps, int kt, int lid)
{
#pragma unroll
    for (int l = 0; l < STAGE / WG_SIZE; l++) {
        const int idx = lid + l * WG_SIZE;
        const int unit = idx / RUN, in_run = idx % RUN;
        const long src =
            (unit < UNITS_M ? a_at + (long)(unit_a + unit) * steps * UNIT_STEP
                            : b_at + (long)(unit_b + unit - UNITS_M) * steps * UNIT_STEP) +
            (long)kt * RUN + in_run;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                     :
                     : "r"((uint)(ulong)(stage + idx)), "l"(packed + src)
                     : "memory");
    }
}

/* Multiplies stage `stage`'s tiles into acc: a lane's B fragments of the stage (one float4 for
 * two 8-column units a step), then for each 16-row unit its A fragments and NU instructions a
 * step. A macro, for the accumulators' sake. */
#define MULTIPLY_PACKED(stage)                                                                     \
    do {                                                                                           \
        const __local float4 *as = tiles + (stage)*STAGE + frag_a;                                 \
        const __local float4 *bs = tiles + (stage)*STAGE + frag_b;                                 \
        float4 bf[NP][KS];                                                                         \
        _Pragma("unroll") for (int p = 0; p < NP; p++)                                             \
            _Pragma("unroll") for (int ks = 0; ks < KS; ks++) bf[p][ks] =                          \
                bs[p * RUN + ks * UNIT_STEP];                                                      \
        _Pragma("unroll") for (int u = 0; u < MU; u++)                                             \
        {                                                                                          \
            float4 af[KS];                                                                         \
            _Pragma("unroll") for (int ks = 0; ks < KS; ks++) af[ks] = as[u * RUN + ks * UNIT_STEP]; \
            _Pragma("unroll") for (int v = 0; v < NU; v++)                                         \
                _Pragma("unroll") for (int ks = 0; ks < KS; ks++)                                  \
                {                                                                                  \
                    const float4 f = af[ks], h = bf[v / 2][ks];                                    \
                    const uint a[4] = {as_uint(f.x), as_uint(f.y), as_uint(f.z), as_uint(f.w)};    \
                    const uint b[2] = {as_uint(v & 1 ? h.y : h.x), as_uint(v & 1 ? h.w : h.z)};    \
                    MMA_TF32(acc[u][v], a, b);                                                     \
                }                                                                                  \
        }                                                                                          \
    } while (0)

/* Work decomposition: as gemm_mma's, the group's block of C from block_of_group and warp w's
 * WARP_M x WARP_N sub-block as MU x NU units of 16 x 8 in registers.
 *
 * Memory traffic: per TILE_K step the group copies its A and B units of the packed operands into
 * local memory once (global reads M*N*K * (1/TILE_N + 1/TILE_M) elements), STAGES - 1 steps ahead
 * of the multiplications, without passing through registers. From local memory each warp reads,
 * per 8-deep step, MU + NP float4 for MU x NU instructions, each a conflict-free 16-byte load of
 * 32 consecutive lanes. C is read (only for beta != 0) and written once per element.
 *
 * Contract: the packed operands of tf32_pack, A's (M rows) at a_at and B's (N rows) at b_at, in
 * float4 from `packed`, both of depth depth_pad (whole TILE_Ks) with rows padded to whole TILE_M
 * (TILE_N). */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
gemm_tf32(const int M, const int N, const int depth_pad, const float alpha, const float beta,
          const __global float4 *restrict packed, const long a_at, const long b_at,
          __global float *C, const long offC, const long ldc)
{
    __local float4 tiles[STAGES * STAGE];

    int bm, bn;
    block_of_group(M, N, &bm, &bn);
    const int i0 = bm * TILE_M, j0 = bn * TILE_N;
    const int lid = (int)get_local_id(0);
    const int lane = lid & 31, warp = lid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm0 = (warp / WARPS_N) * WARP_M, wn0 = (warp % WARPS_N) * WARP_N;
    const int steps = depth_pad / MMA_K;
    const int unit_a = i0 / 16, unit_b = j0 / 16;
    /* This lane's float4 of its warp's first unit of A (B) in a stage. */
    const int frag_a = (wm0 / 16) * RUN + lane;
    const int frag_b = STAGE_A + (wn0 / 16) * RUN + lane;

    float acc[MU][NU][4];
#pragma unroll
    for (int u = 0; u < MU; u++)
#pragma unroll
        for (int v = 0; v < NU; v++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[u][v][e] = 0.0f;

#define COPY_PACKED(stage, kt)                                                                     \
    copy_stage(tiles + (stage)*STAGE, packed, a_at, b_at, unit_a, unit_b, steps, kt, lid)
    RUN_PIPELINE(depth_pad / TILE_K, COPY_PACKED, MULTIPLY_PACKED);

    WRITE_C();
}
