/* gemm_mma.cl — C = alpha * op(A) * op(B) + beta * C on NVIDIA GPUs of compute capability 8.0 and
 * later, through inline PTX (mma.sync, cp.async): in double precision on the FP64 tensor cores,
 * or, with -DTF32_PASSES, in single precision on the TF32 ones; with -DSIMT (gemm_simt) in f32 on
 * the FP32 units, its tiles fed by cp.async. gemm_kernel.c builds it only for the devices it
 * sends here: any other compiler would reject the asm. The arguments and the contract are
 * gemm.cl's; tile sizes, the instruction and the passes are -D options. With -DPACKED (f32,
 * TF32_PASSES = 1: gemm's tf32) the file builds tf32_pack and gemm_tf32 instead (the end of the
 * file), which share the instruction, the copies' pipeline, the order of the blocks and the write
 * of C with gemm_mma. */

#ifndef GROUP_M
#define GROUP_M 8
#endif

/* ---- Shared by every kernel of the file: the copies' groups and the order of the blocks ---- */

static void copies_commit(void)
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}

/* Waits until at most `pending` of this work-item's committed groups are still in flight. */
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

/* The copies' pipeline of every kernel here: tile kt goes to stage kt % STAGES, copied STAGES - 1
 * tiles ahead of its use. Each iteration commits one group of copies (empty past the last tile),
 * so that waiting for all but the STAGES - 2 newest groups waits for tile kt; the barrier then
 * publishes every work-item's copies, and tells that every warp is done with tile kt - 1, whose
 * stage the copies issued next overwrite. COPY(stage, kt) issues this work-item's copies of tile
 * kt into a stage, MULTIPLY(stage) multiplies a stage's tiles into the accumulators; tiles_k = 0
 * copies nothing (A and B may then be NULL). A macro, so that the accumulators stay in
 * registers whatever a compiler decides about inlining. */
#define RUN_PIPELINE(tiles_k, COPY, MULTIPLY)                                                      \
    do {                                                                                           \
        for (int s_ = 0; s_ < STAGES - 1; s_++) {                                                  \
            if (s_ < (tiles_k))                                                                    \
                COPY(s_, s_);                                                                      \
            copies_commit();                                                                       \
        }                                                                                          \
        int stage_ = 0, fill_ = STAGES - 1;                                                        \
        for (int kt_ = 0; kt_ < (tiles_k); kt_++) {                                                \
            COPIES_WAIT(STAGES - 2);                                                               \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
            if (kt_ + STAGES - 1 < (tiles_k))                                                      \
                COPY(fill_, kt_ + STAGES - 1);                                                     \
            copies_commit();                                                                       \
            fill_ = fill_ + 1 == STAGES ? 0 : fill_ + 1;                                           \
            MULTIPLY(stage_);                                                                      \
            stage_ = stage_ + 1 == STAGES ? 0 : stage_ + 1;                                        \
        }                                                                                          \
    } while (0)

#ifdef SIMT
/* ---- gemm_simt: f32 on the FP32 units, fed by cp.async (gemm's fp32 on these devices) ------- */

/* IEEE f32 throughout: every product and sum is a rounded f32 fused multiply-add, summed over k
 * in order, as gemm.cl's. What differs from gemm.cl is how the tiles reach local memory: copies
 * issued STAGES - 1 tiles ahead through cp.async (no registers in between, one barrier a tile),
 * 16 bytes at a time where the operand's rows are contiguous along the tile (B row-major, A
 * column-major), one element at a time where the copy transposes (A row-major).
 *
 * A work-group of THREADS_M x THREADS_N work-items computes a TILE_M x TILE_N block of C, each
 * work-item THREAD_M x THREAD_N elements in registers: runs of 4 neighbouring rows (columns),
 * the runs 4 * THREADS_M (4 * THREADS_N) apart, so that each run is one 16-byte local load. A
 * warp's 32 work-items are WARP_TM rows of 32 / WARP_TM: its loads of a k-row then touch
 * WARP_TM runs of A and 32 / WARP_TM of B, each a contiguous piece of the row (one pass of the
 * local memory for WARP_TM = 4). */
#if !defined(TILE_M) || !defined(TILE_N) || !defined(TILE_K) || !defined(THREAD_M) ||             \
    !defined(THREAD_N) || !defined(WARP_TM) || !defined(STAGES)
#error "gemm_simt needs -DTILE_M, -DTILE_N, -DTILE_K, -DTHREAD_M, -DTHREAD_N, -DWARP_TM, -DSTAGES"
#endif
#define THREADS_M (TILE_M / THREAD_M)
#define THREADS_N (TILE_N / THREAD_N)
#define WG_SIZE (THREADS_M * THREADS_N)
#define WARP_TN (32 / WARP_TM)
#define WARPS_TN (THREADS_N / WARP_TN)
#if TILE_M % THREAD_M != 0 || TILE_N % THREAD_N != 0 || THREAD_M % 4 != 0 ||                      \
    THREAD_N % 4 != 0 || 32 % WARP_TM != 0 || THREADS_M % WARP_TM != 0 ||                         \
    THREADS_N % WARP_TN != 0
#error "TILE_M, TILE_N: multiples of THREAD_M, THREAD_N (of 4); the warps must tile the threads"
#endif
#if WG_SIZE % TILE_K != 0 || WG_SIZE % TILE_M != 0 || WG_SIZE % TILE_N != 0 ||                    \
    (TILE_M * TILE_K) % (4 * WG_SIZE) != 0 || (TILE_N * TILE_K) % (4 * WG_SIZE) != 0
#error "the tiles must split evenly over the work-group's copies, in elements and in 16 bytes"
#endif
#if STAGES < 2
#error "STAGES must be at least 2"
#endif

/* Local tiles are k-major, As[k][m] and Bs[k][n], each k-row padded by 4 elements: 16-byte
 * aligned for the loads, and the transposing copies (work-items along k) fall on distinct banks
 * for 8 neighbouring k. */
#define LDA_S (TILE_M + 4)
#define LDB_S (TILE_N + 4)
#define STAGE_A (TILE_K * LDA_S)
#define STAGE_B (TILE_K * LDB_S)

/* This work-item's copies of an operand's tiles: element (x, k) of op(X) at src[x*sx + k*sk].
 * vec: the operand's rows are contiguous along x and 16 bytes aligned, and each copy moves 4
 * elements; else one element each, the work-group walking the tile along whichever axis is
 * contiguous in global memory. Uniform over the work-group. */
struct simt_walk {
    const __global float *p; /* this work-item's first element of the current tile */
    long step;               /* between its copies */
    long next;               /* from one tile to the next, TILE_K along k */
    int x, k, dx, dk, vec;
};

static struct simt_walk simt_walk_new(const __global float *src, long off, long sx, long sk,
                                      int x0, const int tile_x, int lid, int vec)
{
    struct simt_walk w;
    const int k_fast = !vec && sk == 1;
    const int row = vec ? tile_x / 4 : tile_x; /* copies along a k-row of the tile */
    w.x = k_fast ? lid / TILE_K : (vec ? 4 : 1) * (lid % row);
    w.k = k_fast ? lid % TILE_K : lid / row;
    w.dx = k_fast ? WG_SIZE / TILE_K : 0;
    w.dk = k_fast ? 0 : WG_SIZE / row;
    w.p = src + off + (long)(x0 + w.x) * sx + (long)w.k * sk;
    w.step = w.dx * sx + w.dk * sk;
    w.next = TILE_K * sk;
    w.vec = vec;
    return w;
}

/* Copies this work-item's share of the current tile into `tile` (k-rows of `ld`) and moves the
 * walk on. Outside xn x kn (what is left of the operand from the tile's corner) nothing is read
 * and zeros are stored: a source size of 0 (from `safe`, a valid address) or, for a run of 4
 * that crosses xn, the run's elements inside. */
static void simt_copy(__local float *tile, const int ld, const int tile_x, struct simt_walk *w,
                      int xn, int kn, const __global float *safe)
{
    if (w->vec) {
        for (int l = 0; l < tile_x * TILE_K / (4 * WG_SIZE); l++) {
            const int k = w->k + l * w->dk;
            const int n = k < kn ? clamp(xn - w->x, 0, 4) : 0;
            const __local float *dst = tile + k * ld + w->x;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                         :
                         : "r"((uint)(ulong)dst), "l"(n > 0 ? w->p + l * w->step : safe),
                           "r"(4 * n)
                         : "memory");
        }
    } else {
        for (int l = 0; l < tile_x * TILE_K / WG_SIZE; l++) {
            const int x = w->x + l * w->dx, k = w->k + l * w->dk;
            const int ok = x < xn && k < kn;
            const __local float *dst = tile + k * ld + x;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
                         :
                         : "r"((uint)(ulong)dst), "l"(ok ? w->p + l * w->step : safe),
                           "r"(ok ? 4 : 0)
                         : "memory");
        }
    }
    w->p += w->next;
}

/* Element r of this work-item's rows (columns) within the block: runs of 4, 4 * threads apart. */
#define RUN_AT(t, r, threads) (((r) / 4) * (4 * (threads)) + 4 * (t) + (r) % 4)

/* Multiplies stage `stage`'s tiles into acc: for each k, this work-item's rows and columns (runs
 * of 4, one 16-byte load each) and THREAD_M x THREAD_N fused multiply-adds. */
#define MULTIPLY_SIMT(stage)                                                                       \
    do {                                                                                           \
        const __local float *as = As + (stage)*STAGE_A + 4 * tm;                                   \
        const __local float *bs = Bs + (stage)*STAGE_B + 4 * tn;                                   \
        _Pragma("unroll") for (int k = 0; k < TILE_K; k++)                                         \
        {                                                                                          \
            float a[THREAD_M], b[THREAD_N];                                                        \
            _Pragma("unroll") for (int r = 0; r < THREAD_M; r += 4)                                \
                vstore4(*(const __local float4 *)(as + k * LDA_S + r * THREADS_M), 0, a + r);     \
            _Pragma("unroll") for (int c = 0; c < THREAD_N; c += 4)                                \
                vstore4(*(const __local float4 *)(bs + k * LDB_S + c * THREADS_N), 0, b + c);     \
            _Pragma("unroll") for (int r = 0; r < THREAD_M; r++)                                   \
                _Pragma("unroll") for (int c = 0; c < THREAD_N; c++) acc[r][c] =                   \
                    fma(a[r], b[c], acc[r][c]);                                                    \
        }                                                                                          \
    } while (0)

/* Work decomposition: a 1-D range of work-groups of WG_SIZE; group g computes the block of C
 * that block_of_group gives (bands of GROUP_M block rows, for L2). Work-item (tm, tn) of warp w,
 * lane l: tm = (w / WARPS_TN) * WARP_TM + l / WARP_TN, tn = (w % WARPS_TN) * WARP_TN +
 * l % WARP_TN.
 *
 * Memory traffic: per TILE_K step the group copies a TILE_M x TILE_K block of op(A) and a
 * TILE_K x TILE_N block of op(B) from global into local memory once (global reads M*N*K *
 * (1/TILE_N + 1/TILE_M) elements); from local memory each work-item reads THREAD_M / 4 +
 * THREAD_N / 4 float4 a k-row for THREAD_M * THREAD_N fused multiply-adds. C is read (only for
 * beta != 0) and written once per element.
 *
 * Contract: as gemm.cl's gemm with REAL = float. */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
gemm_simt(const int M, const int N, const int K, const float alpha, const float beta,
          const __global float *restrict A, const long offA, const long sAi, const long sAk,
          const __global float *restrict B, const long offB, const long sBk, const long sBj,
          __global float *C, const long offC, const long ldc)
{
    /* Declared as float4 for the alignment of the 16-byte loads and copies. */
    __local float4 tiles[STAGES * (STAGE_A + STAGE_B) / 4];
    __local float *As = (__local float *)tiles;
    __local float *Bs = As + STAGES * STAGE_A;

    int bm, bn;
    block_of_group(M, N, &bm, &bn);
    const int i0 = bm * TILE_M, j0 = bn * TILE_N;
    const int lid = (int)get_local_id(0);
    const int lane = lid & 31, warp = lid >> 5;
    const int tm = (warp / WARPS_TN) * WARP_TM + lane / WARP_TN;
    const int tn = (warp % WARPS_TN) * WARP_TN + lane % WARP_TN;

    float acc[THREAD_M][THREAD_N];
#pragma unroll
    for (int r = 0; r < THREAD_M; r++)
#pragma unroll
        for (int c = 0; c < THREAD_N; c++)
            acc[r][c] = 0.0f;

    const int vec_a = sAi == 1 && (offA & 3) == 0 && (sAk & 3) == 0;
    const int vec_b = sBj == 1 && (offB & 3) == 0 && (sBk & 3) == 0;
    struct simt_walk wa = simt_walk_new(A, offA, sAi, sAk, i0, TILE_M, lid, vec_a);
    struct simt_walk wb = simt_walk_new(B, offB, sBj, sBk, j0, TILE_N, lid, vec_b);
    const __global float *safe_a = A + offA, *safe_b = B + offB;
#define COPY_SIMT(stage, kt)                                                                       \
    do {                                                                                           \
        simt_copy(As + (stage)*STAGE_A, LDA_S, TILE_M, &wa, M - i0, K - (kt)*TILE_K, safe_a);      \
        simt_copy(Bs + (stage)*STAGE_B, LDB_S, TILE_N, &wb, N - j0, K - (kt)*TILE_K, safe_b);      \
    } while (0)
    RUN_PIPELINE((K + TILE_K - 1) / TILE_K, COPY_SIMT, MULTIPLY_SIMT);

    /* beta == 0 takes a branch of its own that never loads C (NaN or garbage there cannot reach
     * the result). */
    const int read_c = beta != 0.0f;
#pragma unroll
    for (int r = 0; r < THREAD_M; r++) {
        const int i = i0 + RUN_AT(tm, r, THREADS_M);
        if (i >= M)
            continue;
#pragma unroll
        for (int c = 0; c < THREAD_N; c++) {
            const int j = j0 + RUN_AT(tn, c, THREADS_N);
            if (j >= N)
                continue;
            const long at = offC + (long)i * ldc + j;
            if (read_c)
                C[at] = alpha * acc[r][c] + beta * C[at];
            else
                C[at] = alpha * acc[r][c];
        }
    }
}

#else /* the tensor-core kernels */

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
#error "gemm_mma.cl needs -DTILE_M, -DTILE_N, -DTILE_K, -DWARP_M, -DWARP_N, -DMMA_SHAPE, -DSTAGES"
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

#ifndef PACKED /* gemm_mma's tiles */
/* A warp's rows (columns) are whole 16-element units, in f32 whole pairs of them (SWIZZLE). */
#define WARP_UNIT (128 / REAL_BYTES)
#if TILE_M % WARP_M != 0 || TILE_N % WARP_N != 0 || WARP_M % WARP_UNIT != 0 ||                     \
    WARP_N % WARP_UNIT != 0
#error "TILE_M and TILE_N must be multiples of WARP_M and WARP_N, multiples of 16 (f64) or 32 (f32)"
#endif
#if TILE_K % MMA_K != 0 || WG_SIZE % TILE_K != 0 || WG_SIZE % TILE_M != 0 ||                       \
    WG_SIZE % TILE_N != 0 || (TILE_M * TILE_K) % WG_SIZE != 0 || (TILE_N * TILE_K) % WG_SIZE != 0
#error "the tiles must split evenly over the work-group's copies and the instruction's K"
#endif
#if STAGES < 2
#error "STAGES must be at least 2"
#endif

/* Local tiles are k-major, As[k][m] and Bs[k][n], unpadded (STAGES of them must fit in the
 * 48 KiB that OpenCL gives a work-group on NVIDIA). Within each 16 rows (columns) the order is
 * permuted, x = 16u + 8h + r stored at 16u + 2r + h, so that the two elements a lane needs from
 * one k-row, rows r and r + 8 of a 16-row unit (column r of two neighbouring 8-column units), are
 * neighbours: one load of a real2. These pairs are then XOR-swizzled by the k-row so that the
 * four k-rows t = lane % 4 of a fragment load, whose rows' length (a multiple of 32 banks) would
 * put them on the same banks, fall on distinct ones. f64: the 16-byte column c of k-row k goes
 * to c ^ 2 * (k % 4), and a quarter-warp's loads (g = lane / 4 in {2q, 2q + 1}) hit 8 distinct
 * groups of banks, c ^ 2t = g ^ 2t mod 8. f32: element x of k-row k goes to x ^ 8 * (k % 4),
 * and a half-warp's 8-byte loads (g in 0..3 or 4..7, four k-rows) cover the 32 banks once; the
 * XOR reaches into the neighbouring 16-unit, which is why an f32 warp owns pairs of them. */
#define LDA_S TILE_M
#define LDB_S TILE_N
#define STAGE_A (TILE_K * LDA_S)
#define STAGE_B (TILE_K * LDB_S)
#define PERM16(x) (((x) & ~15) | (((x)&7) << 1) | (((x) >> 3) & 1))
#define SWIZZLE(k) (((k)&3) << (REAL_BYTES == 8 ? 2 : 3))

#define A_COPIES (TILE_M * TILE_K / WG_SIZE)
#define B_COPIES (TILE_N * TILE_K / WG_SIZE)
#endif

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

#ifndef PACKED /* gemm_mma's copies */
/* This work-item's share of the tiles of an operand: `copies` elements a fixed step apart,
 * element (x, k) of the operand at src[x*sx + k*sk]. The work-group walks a tile along whichever
 * axis is contiguous in global memory (k when sk == 1, else x), so that neighbouring work-items
 * read neighbouring addresses in both layouts; uniform over the work-group. */
struct tile_walk {
    const __global real *p; /* this work-item's first element of the current tile */
    long step;              /* between its copies */
    long next;              /* from one tile to the next, TILE_K along k */
    int x, k, dx, dk;       /* its first element in the tile, and the step in tile terms */
};

static struct tile_walk walk_new(const __global real *src, long off, long sx, long sk, int x0,
                                 const int tile_x, int lid)
{
    struct tile_walk w;
    const int k_fast = sk == 1;
    w.x = k_fast ? lid / TILE_K : lid % tile_x;
    w.k = k_fast ? lid % TILE_K : lid / tile_x;
    w.dx = k_fast ? WG_SIZE / TILE_K : 0;
    w.dk = k_fast ? 0 : WG_SIZE / tile_x;
    w.p = src + off + (long)(x0 + w.x) * sx + (long)w.k * sk;
    w.step = w.dx * sx + w.dk * sk;
    w.next = TILE_K * sk;
    return w;
}

/* Copies this work-item's share of the current tile into `tile` asynchronously (cp.async, one
 * element each, cached in L1 as well as L2) and moves the walk on to the next tile. Outside xn x kn
 * (what is left of the operand from the tile's corner) the source size is 0, which stores 0
 * without reading: from `safe`, a valid address, so that no address outside the operand is
 * formed for the copy. */
static void walk_copy(__local real *tile, const int ld, struct tile_walk *w, int xn, int kn,
                      const __global real *safe, const int copies)
{
    for (int l = 0; l < copies; l++) {
        const int x = w->x + l * w->dx, k = w->k + l * w->dk;
        const int ok = x < xn && k < kn;
        const __local real *dst = tile + k * ld + (PERM16(x) ^ SWIZZLE(k));
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;"
                     :
                     : "r"((uint)(ulong)dst), "l"(ok ? w->p + l * w->step : safe), "n"(REAL_BYTES),
                       "r"(ok ? REAL_BYTES : 0)
                     : "memory");
    }
    w->p += w->next;
}

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

/* As the f64 MULTIPLY_STAGE below, with m16n8k8 and the stage's K steps innermost (MMA_UNIT): a
 * lane's B fragments of the whole stage, column g at k-rows t and t + 4 of each step, are split
 * into hi and lo as they leave local memory, then for each 16-row unit its A fragments (rows g
 * and g + 8, the same k-rows: two 8-byte loads a step); with one pass the unused lo is never
 * computed. */
#define MULTIPLY_STAGE(as, bs)                                                                     \
    do {                                                                                           \
        uint bh[NU][TILE_K / MMA_K][2], bl[NU][TILE_K / MMA_K][2];                                 \
        _Pragma("unroll") for (int ks = 0; ks < TILE_K / MMA_K; ks++)                              \
        {                                                                                          \
            _Pragma("unroll") for (int q = 0; q < 2; q++)                                          \
            {                                                                                      \
                _Pragma("unroll") for (int p = 0; p < NP; p++)                                     \
                {                                                                                  \
                    const float2 f =                                                               \
                        *(const __local float2 *)((bs) + (MMA_K * ks + 4 * q) * LDB_S + UNIT(p));  \
                    SPLIT(f.x, bh[2 * p][ks][q], bl[2 * p][ks][q]);                                \
                    SPLIT(f.y, bh[2 * p + 1][ks][q], bl[2 * p + 1][ks][q]);                        \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        _Pragma("unroll") for (int u = 0; u < MU; u++)                                             \
        {                                                                                          \
            uint ah[TILE_K / MMA_K][4], al[TILE_K / MMA_K][4];                                     \
            _Pragma("unroll") for (int ks = 0; ks < TILE_K / MMA_K; ks++)                          \
            {                                                                                      \
                _Pragma("unroll") for (int q = 0; q < 2; q++)                                      \
                {                                                                                  \
                    const float2 f =                                                               \
                        *(const __local float2 *)((as) + (MMA_K * ks + 4 * q) * LDA_S + UNIT(u));  \
                    SPLIT(f.x, ah[ks][2 * q], al[ks][2 * q]);                                      \
                    SPLIT(f.y, ah[ks][2 * q + 1], al[ks][2 * q + 1]);                              \
                }                                                                                  \
            }                                                                                      \
            _Pragma("unroll") for (int v = 0; v < NU; v++)                                         \
                MMA_UNIT(acc[u][v], ah, al, bh[v], bl[v]);                                         \
        }                                                                                          \
    } while (0)
#else
/* Multiplies the local tiles of a stage (`as` and `bs` at this lane's fragment offsets) into the
 * accumulators, MMA_K k-rows at a time: each lane loads its B fragments (NP 16-byte loads a
 * k-row quad: columns g of the 8-column units 2p and 2p + 1), then for each 16-row unit its A
 * fragment (one 16-byte load a quad: rows g and g + 8) and issues NU instructions; loading A
 * unit by unit keeps fewer fragments live next to the accumulators. A macro, so that the
 * accumulators stay in registers whatever a compiler decides about inlining. */
#define MULTIPLY_STAGE(as, bs)                                                                     \
    do {                                                                                           \
        _Pragma("unroll") for (int kc = 0; kc < TILE_K; kc += MMA_K)                               \
        {                                                                                          \
            double b[NU][MMA_K / 4];                                                               \
            _Pragma("unroll") for (int q = 0; q < MMA_K / 4; q++)                                  \
            {                                                                                      \
                _Pragma("unroll") for (int p = 0; p < NP; p++)                                     \
                {                                                                                  \
                    const double2 f =                                                              \
                        *(const __local double2 *)((bs) + (kc + 4 * q) * LDB_S + UNIT(p));         \
                    b[2 * p][q] = f.x;                                                             \
                    b[2 * p + 1][q] = f.y;                                                         \
                }                                                                                  \
            }                                                                                      \
            _Pragma("unroll") for (int u = 0; u < MU; u++)                                         \
            {                                                                                      \
                double2 fa[MMA_K / 4];                                                             \
                _Pragma("unroll") for (int q = 0; q < MMA_K / 4; q++) fa[q] =                      \
                    *(const __local double2 *)((as) + (kc + 4 * q) * LDA_S + UNIT(u));             \
                _Pragma("unroll") for (int v = 0; v < NU; v++) MMA_STEP(acc[u][v], fa, b[v]);      \
            }                                                                                      \
        }                                                                                          \
    } while (0)
#endif

/* Writes this lane's accumulators acc[MU][NU][4] (the 16x8 units of its warp's block at wm0,
 * wn0 of the group's block at i0, j0) to C as alpha * acc + beta * C, within M x N. beta == 0
 * takes a branch of its own that never loads C, so that NaN or garbage there cannot reach the
 * result. A macro, as MULTIPLY_STAGE, for the accumulators' sake. */
#define WRITE_C()                                                                                  \
    do {                                                                                           \
        const int read_c = beta != (real)0;                                                        \
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
                        const long at = offC + (long)i * ldc + j;                                  \
                        if (read_c)                                                                \
                            C[at] = alpha * acc[u][v][2 * h + e] + beta * C[at];                   \
                        else                                                                       \
                            C[at] = alpha * acc[u][v][2 * h + e];                                  \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#ifndef PACKED
/* Work decomposition: a 1-D range of work-groups of WG_SIZE work-items (warps of 32); group g
 * computes the TILE_M x TILE_N block of C that block_of_group gives. Warp w computes the
 * WARP_M x WARP_N sub-block (w / WARPS_N, w % WARPS_N) as MU x NU units of 16 x 8, each lane
 * holding 4 elements of each unit in registers (the mma accumulator layout: rows g and g + 8,
 * columns 2t and 2t + 1, g = lane / 4, t = lane % 4).
 *
 * Memory traffic: per TILE_K step the group copies a TILE_M x TILE_K block of op(A) and a
 * TILE_K x TILE_N block of op(B) from global into local memory once, so that global reads total
 * M*N*K * (1/TILE_N + 1/TILE_M) elements; the copies run STAGES - 1 steps ahead of the
 * multiplications, without passing through registers. From local memory each warp reads
 * (MU + NP) fragments (real2) per k-row quad for MU x NU 16x8x4 products (f64; f32 reads as many
 * for half the products of a 16x8x8 instruction, done TF32_PASSES times). C is read (only for
 * beta != 0) and written once per element.
 *
 * Contract: as gemm.cl's gemm, in double precision, or in f32 with TF32 products. */
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void
gemm_mma(const int M, const int N, const int K, const real alpha, const real beta,
         const __global real *restrict A, const long offA, const long sAi, const long sAk,
         const __global real *restrict B, const long offB, const long sBk, const long sBj,
         __global real *C, const long offC, const long ldc)
{
    /* Declared as real2 for the alignment of the fragment loads. */
    __local real2 tiles[STAGES * (STAGE_A + STAGE_B) / 2];
    __local real *As = (__local real *)tiles;
    __local real *Bs = As + STAGES * STAGE_A;

    int bm, bn;
    block_of_group(M, N, &bm, &bn);
    const int i0 = bm * TILE_M, j0 = bn * TILE_N;
    const int lid = (int)get_local_id(0);
    const int lane = lid & 31, warp = lid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm0 = (warp / WARPS_N) * WARP_M, wn0 = (warp % WARPS_N) * WARP_N;
    /* This lane's fragments within a stage: k-row t, the permuted rows 2g and 2g + 1 of its even
     * units (UNIT). */
    const int frag_a = t * LDA_S + wm0 + ((2 * g) ^ (SWIZZLE(t) & 15));
    const int frag_b = t * LDB_S + wn0 + ((2 * g) ^ (SWIZZLE(t) & 15));
    const int flip = SWIZZLE(t) & 16;

    real acc[MU][NU][4];
#pragma unroll
    for (int u = 0; u < MU; u++)
#pragma unroll
        for (int v = 0; v < NU; v++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[u][v][e] = (real)0;

    struct tile_walk wa = walk_new(A, offA, sAi, sAk, i0, TILE_M, lid);
    struct tile_walk wb = walk_new(B, offB, sBj, sBk, j0, TILE_N, lid);
    const __global real *safe_a = A + offA, *safe_b = B + offB;
#define COPY_MMA(stage, kt)                                                                        \
    do {                                                                                           \
        walk_copy(As + (stage)*STAGE_A, LDA_S, &wa, M - i0, K - (kt)*TILE_K, safe_a, A_COPIES);    \
        walk_copy(Bs + (stage)*STAGE_B, LDB_S, &wb, N - j0, K - (kt)*TILE_K, safe_b, B_COPIES);    \
    } while (0)
#define MULTIPLY_MMA(stage) MULTIPLY_STAGE(As + (stage)*STAGE_A + frag_a, Bs + (stage)*STAGE_B + frag_b)
    RUN_PIPELINE((K + TILE_K - 1) / TILE_K, COPY_MMA, MULTIPLY_MMA);

    WRITE_C();
}
#else                       /* PACKED: gemm's tf32 from operands packed beforehand */

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

#endif /* PACKED */
#endif /* SIMT */
