/* gemm_simt.cl — gemm_simt: C = alpha * op(A) * op(B) + beta * C in f32 on the FP32 units of
 * NVIDIA GPUs of compute capability 8.0 and later (gemm's fp32 there), its tiles fed by cp.async.
 * Built after gemm_pipeline.cl (the copies' pipeline and the order of the blocks). */

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

/* Runs the statements for each of this thread's accumulators acc[r][c] within M x N, i and j its
 * row and column of C (the runs of THREADS_M and THREADS_N apart from tm, tn of the group's
 * block at i0, j0): the write of C and, with -DCARRY, the load and store of the sums. A macro,
 * unrolled, so that the accumulators stay in registers. */
#define EACH_THREAD_ACC(...)                                                                       \
    do {                                                                                           \
        _Pragma("unroll") for (int r = 0; r < THREAD_M; r++)                                       \
        {                                                                                          \
            const int i = i0 + RUN_AT(tm, r, THREADS_M);                                           \
            if (i >= M)                                                                            \
                continue;                                                                          \
            _Pragma("unroll") for (int c = 0; c < THREAD_N; c++)                                   \
            {                                                                                      \
                const int j = j0 + RUN_AT(tn, c, THREADS_N);                                       \
                if (j >= N)                                                                        \
                    continue;                                                                      \
                __VA_ARGS__                                                                        \
            }                                                                                      \
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
          __global float *C, const long offC, const long ldc CARRY_PARAMS(float))
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
#ifdef CARRY
    if (carry & CARRY_IN)
        EACH_THREAD_ACC(acc[r][c] = W[offW + (long)i * ldw + j];);
#endif

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

#ifdef CARRY
    if (carry & CARRY_OUT) {
        EACH_THREAD_ACC(W[offW + (long)i * ldw + j] = acc[r][c];);
        return;
    }
#endif
    /* beta == 0 takes a branch of its own that never loads C (NaN or garbage there cannot reach
     * the result). */
    const int read_c = beta != 0.0f;
    EACH_THREAD_ACC(const long at = offC + (long)i * ldc + j;
                    if (read_c) C[at] = alpha * acc[r][c] + beta * C[at];
                    else C[at] = alpha * acc[r][c];);
}
