/* gemm.cl — C = alpha * op(A) * op(B) + beta * C for one REAL type (float, or double with
 * -DUSE_FP64), tiled in local memory and register-blocked; tile sizes are -D options per device. */

#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#if !defined(REAL) || !defined(TILE_M) || !defined(TILE_N) || !defined(TILE_K) ||               \
    !defined(WPT_M) || !defined(WPT_N)
#error "gemm.cl needs -DREAL, -DTILE_M, -DTILE_N, -DTILE_K, -DWPT_M and -DWPT_N"
#endif

/* Work-items per work-group along M and N: each computes WPT_M x WPT_N elements of C. */
#define RTS_M (TILE_M / WPT_M)
#define RTS_N (TILE_N / WPT_N)
#define WG_SIZE (RTS_M * RTS_N)

/* Which WPT_M x WPT_N elements of the group's block work-item (tm, tn) owns: runs of VW
 * neighbouring rows (columns), the runs RTS_M*VW (RTS_N*VW) apart. VW = 1 gives the strided
 * layout (neighbouring work-items read neighbouring local addresses and write neighbouring
 * columns of C); VW = 4 lets each run be one 16-byte local load (float4), a quarter of the
 * load instructions per multiply-add, which is what keeps a GPU's FMA units fed; VW = WPT_M =
 * WPT_N gives contiguous blocks, for CPU compilers such as PoCL's that vectorise within a
 * work-item. */
#ifndef VW
#define VW 1
#endif
#if WPT_M % VW != 0 || WPT_N % VW != 0
#error "WPT_M and WPT_N must be multiples of VW"
#endif
#define BLOCK_ROW(tm, r) (((r) / VW) * (RTS_M * VW) + (tm) * VW + (r) % VW)
#define BLOCK_COL(tn, c) (((c) / VW) * (RTS_N * VW) + (tn) * VW + (c) % VW)

/* Local rows are padded: the k-fast tile stores write with a stride of a row, and a row of a
 * power-of-two length would put those stores all in one bank. With VW > 1 the padding is VW
 * elements, so that every run stays aligned for its vector load. */
#ifndef LOCAL_PAD
#define LOCAL_PAD VW
#endif
#define LDA (TILE_M + LOCAL_PAD)
#define LDB (TILE_N + LOCAL_PAD)

#if TILE_M % WPT_M != 0 || TILE_N % WPT_N != 0
#error "TILE_M and TILE_N must be multiples of WPT_M and WPT_N"
#endif
#if (TILE_M * TILE_K) % WG_SIZE != 0 || (TILE_K * TILE_N) % WG_SIZE != 0
#error "each tile must split evenly over the work-group's loads"
#endif
#if LOCAL_PAD % VW != 0
#error "LOCAL_PAD must be a multiple of VW"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VW > 1
typedef CAT(REAL, VW) realv;
#endif

/* Reads VW elements of a local row into the private array `dst` (one vector load: the run's
 * start is a multiple of VW and both arrays are declared as vectors, so aligned). A plain
 * vector assignment, not vstoreN: a call that takes a vector of 16 by value makes clang warn
 * (-Wpsabi) on a CPU without AVX-512, and PoCL prints "2 warnings generated." on the host's
 * stderr. */
#if VW > 1
#define LOAD_RUN(dst, base, at) (*(realv *)(dst) = *(const __local realv *)((base) + (at)))
#else
#define LOAD_RUN(dst, base, at) (*(dst) = (base)[at])
#endif

#define A_LOADS (TILE_M * TILE_K / WG_SIZE)
#define B_LOADS (TILE_N * TILE_K / WG_SIZE)

/* Fetches this work-item's share of the TILE_K x tile_x block starting at (x0, k0) of an
 * operand into registers. Element (x, k) of the operand lives at src[off + x*sx + k*sk]; outside
 * xn x kn it reads as 0, so partial tiles need no other care. The work-group walks the tile
 * along whichever axis is contiguous in global memory (k when sk == 1, else x), so neighbouring
 * work-items read neighbouring addresses in both layouts; the choice depends on kernel
 * arguments only, uniform over the work-group. */
#if WG_SIZE % TILE_K == 0 && WG_SIZE % TILE_M == 0 && WG_SIZE % TILE_N == 0
/* Each work-item's loads are then a fixed step apart (WG_SIZE / TILE_K along x, or
 * WG_SIZE / tile_x along k): one 64-bit address computation per tile instead of one per
 * element, and no bounds checks on tiles inside the matrix. */
static void fetch_tile(REAL *regs, const __global REAL *src, long off, long sx, long sk, int x0,
                       int xn, int k0, int kn, const int tile_x, const int loads, int lid)
{
    const int k_fast = sk == 1;
    const int x = k_fast ? lid / TILE_K : lid % tile_x;
    const int k = k_fast ? lid % TILE_K : lid / tile_x;
    const int dx = k_fast ? WG_SIZE / TILE_K : 0;
    const int dk = k_fast ? 0 : WG_SIZE / tile_x;
    const __global REAL *p = src + off + (long)(x0 + x) * sx + (long)(k0 + k) * sk;
    const long step = dx * sx + dk * sk;
    if (x0 + tile_x <= xn && k0 + TILE_K <= kn) {
        for (int l = 0; l < loads; l++)
            regs[l] = p[l * step];
    } else {
        for (int l = 0; l < loads; l++)
            regs[l] = x + l * dx < xn - x0 && k + l * dk < kn - k0 ? p[l * step] : (REAL)0;
    }
}
#else
static void fetch_tile(REAL *regs, const __global REAL *src, long off, long sx, long sk, int x0,
                       int xn, int k0, int kn, const int tile_x, const int loads, int lid)
{
    const int k_fast = sk == 1;
    for (int l = 0; l < loads; l++) {
        const int e = lid + l * WG_SIZE;
        const int x = k_fast ? e / TILE_K : e % tile_x;
        const int k = k_fast ? e % TILE_K : e / tile_x;
        const int gx = x0 + x, gk = k0 + k;
        regs[l] = gx < xn && gk < kn ? src[off + gx * sx + gk * sk] : (REAL)0;
    }
}
#endif

/* Stores fetched registers into the local tile, laid out k-major: dst[k * ld + x]. */
static void store_tile(__local REAL *dst, const REAL *regs, long sk, const int tile_x,
                       const int ld, const int loads, int lid)
{
    const int k_fast = sk == 1;
    for (int l = 0; l < loads; l++) {
        const int e = lid + l * WG_SIZE;
        const int x = k_fast ? e / TILE_K : e % tile_x;
        const int k = k_fast ? e % TILE_K : e / tile_x;
        dst[k * ld + x] = regs[l];
    }
}

/* reqd_work_group_size, left out when the plugin passes -DCLOPS_NO_REQD_WG: on PoCL before 7,
 * whose kernel-library cache then aborts the process (see pool_programs.c). */
#ifdef CLOPS_NO_REQD_WG
#define REQD_WG(x, y, z)
#else
#define REQD_WG(x, y, z) __attribute__((reqd_work_group_size(x, y, z)))
#endif

/* Work decomposition: a 1-D range of work-groups of WG_SIZE work-items; group g computes the
 * TILE_M x TILE_N block (g / groups_n, g % groups_n) of C (1-D so that no grid dimension limit,
 * such as 65535 blocks along y on CUDA devices, bounds M or N). Work-item lid = tm*RTS_N + tn
 * accumulates its WPT_M x WPT_N elements of the block (BLOCK_ROW, BLOCK_COL) in registers.
 *
 * Memory traffic: per TILE_K step the group reads a TILE_M x TILE_K block of op(A) and a
 * TILE_K x TILE_N block of op(B) from global memory once, so global reads total
 * M*N*K * (1/TILE_N + 1/TILE_M) elements instead of the naive 2*M*N*K. From local memory each
 * work-item reads WPT_M + WPT_N elements per k for WPT_M * WPT_N multiply-adds. C is read (only
 * when beta != 0) and written exactly once per element, with no read of C at all for beta == 0
 * so that NaN or garbage in C never reaches the result.
 *
 * Contract: C (row-major, ldc, offsets in elements) = alpha * op(A) * op(B) + beta * C, where
 * op(A)(i,k) = A[offA + i*sAi + k*sAk] and op(B)(k,j) = B[offB + k*sBk + j*sBj]: strides express
 * transposes and both storage orders. K == 0 (the host passes it also for alpha == 0) reads
 * neither A nor B, which may then be NULL.
 *
 * With -DCARRY the kernel takes four arguments more and computes one slab of K of a product cut
 * along K (gemm_launch.c): `carry` & CARRY_IN starts each element's sum from W (offW, row stride
 * ldw, C's shape) instead of 0, and & CARRY_OUT leaves the sum in W and C untouched. The slabs
 * are whole TILE_K steps of the whole product's, taken in order, so that each element sees the
 * same multiply-adds in the same order as in one launch: the result is the same, bit for bit. */
#define CARRY_IN 1
#define CARRY_OUT 2
/* With -DCARRY: runs the statements for each of this work-item's sums acc[r][c] within M x N, i
 * and j its row and column of C (its load from W, its store there). */
#define EACH_SUM(...)                                                                              \
    do {                                                                                           \
        for (int r = 0; r < WPT_M; r++)                                                            \
            for (int c = 0; c < WPT_N; c++) {                                                      \
                const int i = i0 + BLOCK_ROW(tm, r), j = j0 + BLOCK_COL(tn, c);                    \
                if (i < M && j < N) {                                                              \
                    __VA_ARGS__                                                                    \
                }                                                                                  \
            }                                                                                      \
    } while (0)

__kernel REQD_WG(WG_SIZE, 1, 1) void
gemm(const int M, const int N, const int K, const REAL alpha, const REAL beta,
     const __global REAL *restrict A, const long offA, const long sAi, const long sAk,
     const __global REAL *restrict B, const long offB, const long sBk, const long sBj,
     __global REAL *C, const long offC, const long ldc
#ifdef CARRY
     ,
     __global REAL *W, const long offW, const long ldw, const int carry
#endif
)
{
#if VW > 1
    /* Declared as vectors for the alignment of LOAD_RUN's vector loads. */
    __local realv As_v[TILE_K * LDA / VW];
    __local realv Bs_v[TILE_K * LDB / VW];
    __local REAL *As = (__local REAL *)As_v;
    __local REAL *Bs = (__local REAL *)Bs_v;
#else
    __local REAL As[TILE_K * LDA];
    __local REAL Bs[TILE_K * LDB];
#endif

    const long groups_n = (N + TILE_N - 1) / TILE_N;
    const long group = (long)get_group_id(0);
    const int i0 = (int)(group / groups_n) * TILE_M;
    const int j0 = (int)(group % groups_n) * TILE_N;
    const int lid = (int)get_local_id(0);
    const int tm = lid / RTS_N;
    const int tn = lid % RTS_N;

    REAL acc[WPT_M][WPT_N];
    for (int r = 0; r < WPT_M; r++)
        for (int c = 0; c < WPT_N; c++)
            acc[r][c] = 0;
#ifdef CARRY
    /* A slab of K after the first: the sums so far, as the slab before left them. */
    if (carry & CARRY_IN)
        EACH_SUM(acc[r][c] = W[offW + i * ldw + j];);
#endif

    /* Register double-buffering: the next tiles' global loads are issued before the current
     * tiles are multiplied, so their latency hides behind the arithmetic. */
    REAL ra[A_LOADS], rb[B_LOADS];
    if (K > 0) {
        fetch_tile(ra, A, offA, sAi, sAk, i0, M, 0, K, TILE_M, A_LOADS, lid);
        fetch_tile(rb, B, offB, sBj, sBk, j0, N, 0, K, TILE_N, B_LOADS, lid);
    }
    for (int k0 = 0; k0 < K; k0 += TILE_K) {
        store_tile(As, ra, sAk, TILE_M, LDA, A_LOADS, lid);
        store_tile(Bs, rb, sBk, TILE_N, LDB, B_LOADS, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + TILE_K < K) {
            fetch_tile(ra, A, offA, sAi, sAk, i0, M, k0 + TILE_K, K, TILE_M, A_LOADS, lid);
            fetch_tile(rb, B, offB, sBj, sBk, j0, N, k0 + TILE_K, K, TILE_N, B_LOADS, lid);
        }
        /* Unrolled so that the compiler can issue the local loads of step k + 1 while the
         * multiply-adds of step k run. */
#pragma unroll
        for (int k = 0; k < TILE_K; k++) {
#if VW > 1
            realv a_v[WPT_M / VW], b_v[WPT_N / VW]; /* vectors: aligned for LOAD_RUN */
            REAL *a = (REAL *)a_v, *b = (REAL *)b_v;
#else
            REAL a[WPT_M], b[WPT_N];
#endif
            for (int r = 0; r < WPT_M; r += VW)
                LOAD_RUN(a + r, As, k * LDA + BLOCK_ROW(tm, r));
            for (int c = 0; c < WPT_N; c += VW)
                LOAD_RUN(b + c, Bs, k * LDB + BLOCK_COL(tn, c));
            for (int r = 0; r < WPT_M; r++)
                for (int c = 0; c < WPT_N; c++)
                    acc[r][c] += a[r] * b[c];
        }
        /* The next iteration's stores overwrite the tiles this one is still reading. */
        barrier(CLK_LOCAL_MEM_FENCE);
    }

#ifdef CARRY
    /* A slab of K before the last: the sums as they stand, for the next slab; C untouched. */
    if (carry & CARRY_OUT) {
        EACH_SUM(W[offW + i * ldw + j] = acc[r][c];);
        return;
    }
#endif
    /* beta == 0 takes a branch of its own that never loads C, so that NaN or garbage there
     * cannot reach the result whatever the compiler makes of the select. */
    const int read_c = beta != (REAL)0;
    for (int r = 0; r < WPT_M; r++) {
        const int i = i0 + BLOCK_ROW(tm, r);
        for (int c = 0; c < WPT_N; c++) {
            const int j = j0 + BLOCK_COL(tn, c);
            if (i >= M || j >= N)
                continue;
            const long at = offC + i * ldc + j;
            if (read_c)
                C[at] = alpha * acc[r][c] + beta * C[at];
            else
                C[at] = alpha * acc[r][c];
        }
    }
}
