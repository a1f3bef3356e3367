/* lu.cl — the device-side helpers of lu, solve and lu_solve for one REAL type (float, or double
 * with -DUSE_FP64): layout copies into and out of the row-major working matrix, and row
 * interchanges, and the panel factorization. The bulk of the flops are in gemm.cl (trailing
 * updates, blocked triangular solves). */

#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef REAL
#error "lu.cl needs -DREAL"
#endif

/* The smallest normal number: below it a pivot's reciprocal would overflow. */
#ifdef USE_FP64
#define REAL_MIN DBL_MIN
#else
#define REAL_MIN FLT_MIN
#endif

/* dst(i, j) = src(i, j) for a rows x cols matrix, each side with its own element strides.
 * Work decomposition: a 2-D range, dimension 0 over columns and 1 over rows, one element per
 * work-item. Memory traffic: each element read once and written once; the side with the unit
 * stride along dimension 0 is coalesced, the other strided (a layout change cannot be both
 * without a local-memory transpose, not worth it for an O(N^2) step of an O(N^3) operator). */
__kernel void lu_copy(int rows, int cols, __global const REAL *src, long src_off, long src_si,
                      long src_sj, __global REAL *dst, long dst_off, long dst_si, long dst_sj)
{
    const int j = (int)get_global_id(0), i = (int)get_global_id(1);
    if (i >= rows || j >= cols)
        return;
    dst[dst_off + i * dst_si + j * dst_sj] = src[src_off + i * src_si + j * src_sj];
}

/* LAPACK's laswp on a row-major matrix: for k = k_begin .. k_end - 1 (in that order, or the
 * reverse when `reverse` is 1), rows k and ipiv[k] - 1 (ipiv is 1-based, as LAPACK's) trade
 * places, in every column outside [skip_begin, skip_begin + skip_count) (the panel, already
 * swapped on the host). Work decomposition: one work-item per column, the interchanges in
 * sequence since they do not commute. Memory traffic: each swap reads and writes two elements
 * per column; neighbouring work-items touch neighbouring addresses of one row (coalesced). */
__kernel void lu_laswp(__global REAL *a, long off, long ld, int cols, int skip_begin,
                       int skip_count, __global const int *ipiv, int k_begin, int k_end,
                       int reverse)
{
    int j = (int)get_global_id(0);
    if (j >= cols - skip_count)
        return;
    if (j >= skip_begin)
        j += skip_count;
    const int steps = k_end - k_begin;
    for (int s = 0; s < steps; s++) {
        const int k = reverse ? k_end - 1 - s : k_begin + s;
        const int p = ipiv[k] - 1;
        if (p == k)
            continue;
        __global REAL *x = a + off + (long)k * ld + j, *y = a + off + (long)p * ld + j;
        const REAL t = *x;
        *x = *y;
        *y = t;
    }
}

#ifndef PANEL_WG
#define PANEL_WG 256
#endif

/* The larger of two pivot candidates: magnitude first, then the smaller row (LAPACK's idamax
 * takes the first of equal magnitudes). */
static void keep_better(REAL *v, int *i, REAL v2, int i2)
{
    if (v2 > *v || (v2 == *v && i2 < *i)) {
        *v = v2;
        *i = i2;
    }
}

/* LAPACK's getf2 on the rows x nb panel starting at element `off` of the row-major matrix a,
 * whose first row is row `row0` of the matrix: for each column k, the pivot is the first entry
 * of largest magnitude on or below the diagonal (skipped with pivoting = 0), its row trades
 * places with row k across the panel, the column below is scaled by the pivot's reciprocal (a
 * division where that would overflow) and the rest of the panel gets a rank-1 update. A zero
 * pivot is recorded in ipiv[info_at] (info, if still 0) as a 1-based row and skipped, as LAPACK
 * does. ipiv[row0 + k] receives the 1-based global pivot row.
 * Work decomposition: one work-group of PANEL_WG work-items for the whole panel (its columns
 * depend on each other in sequence); per column, the work-items split the pivot search over
 * rows (then a local-memory tree reduction), the swap over columns, the scaling over rows, and
 * the update over the elements of the trailing panel, a grid of rows x columns in which
 * neighbouring work-items write neighbouring addresses of a row. Memory traffic: per column, one
 * strided pass down the column and one coalesced pass over the trailing panel; the panel (rows x nb
 * elements) stays in the L2 cache of a GPU across the nb passes. */
__kernel void lu_panel(__global REAL *a, long off, long ld, int rows, int nb, int row0,
                       __global int *ipiv, int info_at, int pivoting)
{
    __local REAL best_v[PANEL_WG];
    __local int best_i[PANEL_WG];
    const int lid = (int)get_local_id(0);
    __global REAL *p = a + off;
    for (int k = 0; k < nb; k++) {
        REAL v = -1;
        int piv = k;
        for (int i = k + lid; pivoting && i < rows; i += PANEL_WG)
            keep_better(&v, &piv, fabs(p[(long)i * ld + k]), i);
        best_v[lid] = v;
        best_i[lid] = piv;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int step = PANEL_WG / 2; step > 0; step /= 2) {
            if (lid < step) {
                keep_better(&v, &piv, best_v[lid + step], best_i[lid + step]);
                best_v[lid] = v;
                best_i[lid] = piv;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        piv = pivoting ? best_i[0] : k;
        const REAL d = p[(long)piv * ld + k];
        barrier(CLK_LOCAL_MEM_FENCE); /* best_i is rewritten by the next column */
        if (lid == 0) {
            ipiv[row0 + k] = row0 + piv + 1;
            if (d == 0 && ipiv[info_at] == 0)
                ipiv[info_at] = row0 + k + 1;
        }
        if (d == 0)
            continue; /* uniform: every work-item read the same d */
        for (int c = lid; piv != k && c < nb; c += PANEL_WG) {
            const REAL t = p[(long)k * ld + c];
            p[(long)k * ld + c] = p[(long)piv * ld + c];
            p[(long)piv * ld + c] = t;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        const int recip = fabs(d) >= (REAL)REAL_MIN;
        const REAL r = 1 / d;
        for (int i = k + 1 + lid; i < rows; i += PANEL_WG)
            p[(long)i * ld + k] = recip ? p[(long)i * ld + k] * r : p[(long)i * ld + k] / d;
        barrier(CLK_GLOBAL_MEM_FENCE);
        /* The trailing panel as a grid: `width` neighbouring work-items per row (a row of up
         * to PANEL_WG columns), `height` rows at a time; each work-item keeps its element of
         * the pivot row in a register down its rows. */
        const int cols = nb - k - 1, width = min(cols, PANEL_WG);
        const int height = width > 0 ? PANEL_WG / width : 0;
        if (lid < width * height) {
            for (int c = k + 1 + lid % width; c < nb; c += width) {
                const REAL u = p[(long)k * ld + c];
                for (int i = k + 1 + lid / width; i < rows; i += height)
                    p[(long)i * ld + c] -= p[(long)i * ld + k] * u;
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

/* inv = T^-1 for the n x n lower triangular T(i, k) = t[t_off + i*ti + k*tk] (unit = 1: ones on
 * the diagonal, not read); inv(i, k) = inv[v_off + i*vi + k*vk]. Negative strides read an
 * upper triangle backwards in both indices, which makes it lower (and its inverse, written
 * backwards, too). A triangular solve with an NB x NB diagonal block then becomes one GEMM
 * with its inverse (as MAGMA does) instead of NB dependent steps; with partial pivoting
 * |L| <= 1. Work decomposition: one work-item per column j of the inverse, forward
 * substitution down the column, which only reads its own earlier entries: no synchronization.
 * Memory traffic: T's n^2/2 elements read by every work-item (from cache), each element of the
 * inverse written once and read back by its own work-item. */
__kernel void lu_invert_lower(int n, int unit, __global const REAL *t, long t_off, long ti, long tk,
                              __global REAL *inv, long v_off, long vi, long vk)
{
    const int j = (int)get_global_id(0);
    if (j >= n)
        return;
    const __global REAL *tt = t + t_off;
    __global REAL *x = inv + v_off + j * vk;
    for (int i = 0; i < j; i++)
        x[i * vi] = 0;
    x[j * vi] = unit ? 1 : 1 / tt[j * ti + j * tk];
    for (int i = j + 1; i < n; i++) {
        REAL s = 0;
        for (int k = j; k < i; k++)
            s += tt[i * ti + k * tk] * x[k * vi];
        x[i * vi] = unit ? -s : -s / tt[i * ti + i * tk];
    }
}
