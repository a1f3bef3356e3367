/* transpose.cl — y = x^T over the last two axes of a batch of strided matrices, through square
 * tiles in local memory; out of place (with vector loads and stores when both matrices are
 * row-major and aligned), or in place for square matrices. Elements are copied as raw bits of -DT
 * (uchar, uint or ulong), so every dtype of a size shares one program. */

#if !defined(T) || !defined(TILE) || !defined(ROWS) || !defined(VEC) || !defined(VEC_TILE) || \
    !defined(VEC_ROWS)
#error "transpose.cl needs -DT, -DTILE, -DROWS, -DVEC, -DVEC_TILE and -DVEC_ROWS"
#endif
#if TILE % ROWS != 0
#error "TILE must be a multiple of ROWS"
#endif

/* A tile row has TILE + 1 elements: a column of the tile then walks the banks instead of
 * hitting one bank TILE times (a local-memory bank conflict), whichever way it is read. */
typedef T tile_t[TILE][TILE + 1];

/* One matrix of the batch: element (i, j) at base + i*s_i + j*s_j; m x n. */
struct view {
    long base, s_i, s_j, m, n;
};

/* The element of the tile at rows m0.., columns n0.. of `v` that this work-item moves on line
 * `k` of its sweep: its place (*li, *lj) in the tile, and its index in memory, or -1 when it
 * lies outside the matrix. The work-group's TILE x ROWS work-items sweep the tile ROWS lines at
 * a time; `i_fast` (the matrix's rows are adjacent in memory: column-major) makes local x run
 * down i instead of along j, so neighbouring work-items always touch neighbouring addresses. */
static long tile_element(struct view v, long m0, long n0, int k, int i_fast, int *li, int *lj)
{
    const int tx = (int)get_local_id(0);
    *li = i_fast ? tx : k;
    *lj = i_fast ? k : tx;
    const long i = m0 + *li, j = n0 + *lj;
    return i < v.m && j < v.n ? v.base + i * v.s_i + j * v.s_j : -1;
}

/* Reads the tile of x at rows m0.., columns n0.. into tile[i - m0][j - n0]. Elements outside
 * the matrix are skipped. */
static void load_tile(__local tile_t *tile, __global const T *x, struct view v, long m0, long n0,
                      int i_fast)
{
    for (int k = (int)get_local_id(1); k < TILE; k += ROWS) {
        int li, lj;
        const long at = tile_element(v, m0, n0, k, i_fast, &li, &lj);
        if (at >= 0)
            (*tile)[li][lj] = x[at];
    }
}

/* Writes tile[i - m0][j - n0] to y(j, i), y's element (j, i) at base + j*s_i + i*s_j of `v`'s
 * terms (v describes y as the n x m matrix it is: rows j, columns i). `i_fast` when y's
 * columns i are adjacent in memory (y row-major), so that the writes coalesce. */
static void store_tile(__local const tile_t *tile, __global T *y, struct view v, long m0, long n0,
                       int i_fast)
{
    const struct view yt = {v.base, v.s_j, v.s_i, v.n, v.m}; /* y(j, i) as element (i, j) */
    for (int k = (int)get_local_id(1); k < TILE; k += ROWS) {
        int li, lj;
        const long at = tile_element(yt, m0, n0, k, i_fast, &li, &lj);
        if (at >= 0)
            y[at] = (*tile)[li][lj];
    }
}

/* reqd_work_group_size, left out when the plugin passes -DCLOPS_NO_REQD_WG: on PoCL before 7,
 * whose kernel-library cache then aborts the process (see pool_programs.c). */
#ifdef CLOPS_NO_REQD_WG
#define REQD_WG(x, y, z)
#else
#define REQD_WG(x, y, z) __attribute__((reqd_work_group_size(x, y, z)))
#endif

/* Out of place. Work decomposition: a TILE x ROWS work-group per TILE x TILE tile of one matrix
 * (dimension 0: tiles along x's columns, 1: along its rows, 2: the batch); each work-item moves
 * TILE/ROWS elements in and out. Traffic: every element read once and written once, both
 * coalesced whatever the two layouts; local memory turns the tile around. */
__kernel REQD_WG(TILE, ROWS, 1) void
transpose(__global const T *x, long x_off, long xb, long xm, long xn, __global T *y, long y_off,
          long yb, long yn, long ym, long m, long n, int x_i_fast, int y_i_fast)
{
    __local tile_t tile;
    const long b = get_global_id(2);
    const long m0 = get_group_id(1) * TILE, n0 = get_group_id(0) * TILE;
    const struct view vx = {x_off + b * xb, xm, xn, m, n};
    const struct view vy = {y_off + b * yb, yn, ym, n, m};
    load_tile(&tile, x, vx, m0, n0, x_i_fast);
    barrier(CLK_LOCAL_MEM_FENCE);
    store_tile(&tile, y, vy, m0, n0, y_i_fast);
}

/* In place, for n x n matrices (y is x). Work decomposition: dimension 0 numbers the pairs of
 * tiles (I, J), I <= J, of the upper triangle; the group loads tiles (I, J) and (J, I), waits
 * until both are in local memory, then writes each transposed into the other's place (a
 * diagonal tile into its own). Groups touch disjoint pairs, so no tile is overwritten before it
 * is read. Traffic: every element read once and written once. */
__kernel REQD_WG(TILE, ROWS, 1) void
transpose_square_in_place(__global T *x, long x_off, long xb, long xm, long xn, long n, int i_fast)
{
    __local tile_t upper, lower;
    const long b = get_global_id(2), pair = get_group_id(0);
    /* pair = J (J + 1) / 2 + I; the float estimate of J is corrected both ways. */
    long J = (long)((sqrt(8.0f * (float)pair + 1.0f) - 1.0f) / 2.0f);
    while (J * (J + 1) / 2 > pair)
        J--;
    while ((J + 1) * (J + 2) / 2 <= pair)
        J++;
    const long I = pair - J * (J + 1) / 2;
    const struct view v = {x_off + b * xb, xm, xn, n, n};
    /* The same strides for reading and writing: x's fast axis i is y's fast axis j. */
    load_tile(&upper, x, v, I * TILE, J * TILE, i_fast);
    if (I != J)
        load_tile(&lower, x, v, J * TILE, I * TILE, i_fast);
    barrier(CLK_LOCAL_MEM_FENCE);
    store_tile(&upper, x, v, I * TILE, J * TILE, !i_fast);
    if (I != J)
        store_tile(&lower, x, v, J * TILE, I * TILE, !i_fast);
}

#if VEC > 1 && VEC_TILE % VEC == 0 && VEC_TILE % VEC_ROWS == 0
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
typedef CAT(T, VEC) TV;
/* Padded by one element, as tile_t: a column read of VEC_TILE work-items walks the banks. */
typedef T vec_tile_t[VEC_TILE][VEC_TILE + 1];

/* Out of place, x and y both row-major (x(i, j) at xb*b + i*xm + j, y(j, i) at yb*b + j*yn + i),
 * every row start and both extents multiples of VEC (the host checks). Work decomposition: a
 * VEC_TILE/VEC x VEC_ROWS work-group per VEC_TILE x VEC_TILE tile; each work-item loads
 * VEC_TILE/VEC_ROWS vectors of VEC
 * elements along x's rows and stores as many along y's rows, gathering each from a column of the
 * tile in local memory. Fewer, wider memory instructions than `transpose` (16-byte accesses for
 * VEC elements of 16 bytes), every one coalesced: a warp reads and writes whole lines. Traffic:
 * every element read once and written once. */
__kernel REQD_WG(VEC_TILE / VEC, VEC_ROWS, 1) void
transpose_vec(__global const T *x, long x_off, long xb, long xm, __global T *y, long y_off,
              long yb, long yn, long m, long n)
{
    __local vec_tile_t tile;
    const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
    const long b = get_global_id(2);
    const long m0 = get_group_id(1) * VEC_TILE, n0 = get_group_id(0) * VEC_TILE;
    const long j = n0 + tx * VEC;
    __global const T *xs = x + x_off + b * xb;
    for (int k = ty; k < VEC_TILE; k += VEC_ROWS) {
        const long i = m0 + k;
        if (i < m && j < n) {
            const TV v = *(__global const TV *)(xs + i * xm + j);
            T e[VEC];
            CAT(vstore, VEC)(v, 0, e);
            for (int c = 0; c < VEC; c++)
                tile[k][tx * VEC + c] = e[c];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* y's row jj = n0 + k, its columns i = m0 + tx*VEC .. + VEC: tile[tx*VEC + c][k]. */
    const long i = m0 + tx * VEC;
    __global T *ys = y + y_off + b * yb;
    for (int k = ty; k < VEC_TILE; k += VEC_ROWS) {
        const long jj = n0 + k;
        if (jj < n && i < m) {
            T e[VEC];
            for (int c = 0; c < VEC; c++)
                e[c] = tile[tx * VEC + c][k];
            *(__global TV *)(ys + jj * yn + i) = CAT(vload, VEC)(0, e);
        }
    }
}
#endif
