/* gemm_mma.cl — gemm_mma: C = alpha * op(A) * op(B) + beta * C on NVIDIA GPUs of compute
 * capability 8.0 and later, in double precision on the FP64 tensor cores, or, with
 * -DTF32_PASSES, in single precision on the TF32 ones: its tiles, its copies into local memory,
 * the multiplication of a stage and the kernel. Built after gemm_pipeline.cl and
 * gemm_mma_core.cl. */

/* gemm_mma's tiles */
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

/* gemm_mma's copies */
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

#ifdef TF32_PASSES
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
         __global real *C, const long offC, const long ldc CARRY_PARAMS(real))
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
#ifdef CARRY
    if (carry & CARRY_IN)
        CARRY_SUMS(0);
#endif

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

#ifdef CARRY
    if (carry & CARRY_OUT) {
        CARRY_SUMS(1);
        return;
    }
#endif
    WRITE_C();
}
