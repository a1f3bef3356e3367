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

/* The work-group of the panel kernels (a power of two), and of the others that use it. */
#ifndef PANEL_WG
#define PANEL_WG 256
#endif

/* The smallest normal number: below it a pivot's reciprocal would overflow. */
#ifdef USE_FP64
#define REAL_MIN DBL_MIN
#else
#define REAL_MIN FLT_MIN
#endif

/* dst(i, j) = src(i, j) for a rows x cols matrix, each side with its own element strides,
 * unless guard_at >= 0 and guard[guard_at] != 0: a copy back into the caller's matrix that the
 * device itself calls off (solve's b when getrf's info says A is singular), so that the host
 * need not read info in the middle of the call.
 * Work decomposition: a 2-D range, dimension 0 over columns and 1 over rows, one element per
 * work-item. Memory traffic: each element read once and written once (and the guard read once
 * per work-item, from cache); the side with the unit stride along dimension 0 is coalesced, the
 * other strided (a layout change cannot be both without a local-memory transpose, not worth it
 * for an O(N^2) step of an O(N^3) operator). */
__kernel void lu_copy(int rows, int cols, __global const REAL *src, long src_off, long src_si,
                      long src_sj, __global REAL *dst, long dst_off, long dst_si, long dst_sj,
                      __global const int *guard, int guard_at)
{
    const int j = (int)get_global_id(0), i = (int)get_global_id(1);
    if (i >= rows || j >= cols || (guard_at >= 0 && guard[guard_at] != 0))
        return;
    dst[dst_off + i * dst_si + j * dst_sj] = src[src_off + i * src_si + j * src_sj];
}

/* dst[dst_off + k dst_step] = src[src_off + k src_step] for k < n: pivots and info between the
 * engine's buffer and an i32 tensor on the device, which stay there.
 * Work decomposition: one work-item per element. Memory traffic: n ints read and written. */
__kernel void lu_copy_int(int n, __global const int *src, long src_off, long src_step,
                          __global int *dst, long dst_off, long dst_step)
{
    const int k = (int)get_global_id(0);
    if (k < n)
        dst[dst_off + k * dst_step] = src[src_off + k * src_step];
}

/* lu_solve's device pivots into the engine's buffer, checked on the way: dst[k] = src[src_off +
 * k src_step] for k < n, and dst[n] = n - the first k whose pivot lies outside 1 .. n (LAPACK's
 * 1-based rows), or 0 as the host cleared it. The host reads dst[n] with the call's outputs, so
 * that it need not read the pivots back before the solves; the solves stay in bounds meanwhile
 * (lu_laswp_plan takes a pivot out of range as no interchange) and the copy back of b is called
 * off by dst[n] (lu_copy's guard). n - k, not k + 1: atomic_max then keeps the first bad k.
 * Work decomposition: one work-item per pivot. Memory traffic: n ints read and written, one
 * atomic per bad pivot. */
__kernel void lu_take_pivots(int n, __global const int *src, long src_off, long src_step,
                             __global int *dst)
{
    const int k = (int)get_global_id(0);
    if (k >= n)
        return;
    const int p = src[src_off + k * src_step];
    dst[k] = p;
    if (p < 1 || p > n)
        atomic_max(dst + n, n - k);
}

/* LAPACK's laswp on a row-major matrix, in two kernels: for k = k_begin .. k_end - 1 (in that
 * order, or the reverse when `reverse` is 1), rows k and ipiv[k] - 1 (ipiv is 1-based, as
 * LAPACK's) trade places. Done one interchange after another, each column waits for a memory
 * round trip per interchange (256 in a row at NB = 256: about 0.2 ms a call on the H100, 6.7 of
 * 52 ms of an LU at N = 8192). Instead lu_laswp_plan turns the interchanges into their net
 * effect, a list of row moves, and lu_laswp_apply makes every move at once.
 *
 * The plan: plan[0] = the number of moves, then (destination, source) row pairs: after the
 * interchanges row `destination` holds what row `source` held before. The rows an interchange
 * touches are k_begin .. k_end - 1 and the pivots' rows; each one's source is found by undoing
 * the interchanges on its index, the last applied first. Rows that end where they started are
 * left out, a pivot row named twice is listed once. Work decomposition: one work-group, a
 * work-item per touched row (looping when the group is smaller), each following it through the
 * n interchanges in local memory: O(n^2) steps over the group for n = k_end - k_begin, which
 * the host keeps at a few hundred (it splits longer runs into pieces applied in order). Memory
 * traffic: n pivots read, at most 2n pairs written. `piv` holds n ints. */
__kernel void lu_laswp_plan(__global const int *ipiv, int k_begin, int k_end, int reverse,
                            int rows, __global int *plan, __local int *piv)
{
    __local int count;
    const int t0 = (int)get_local_id(0), step = (int)get_local_size(0), n = k_end - k_begin;
    if (t0 == 0)
        count = 0;
    /* A pivot outside the matrix's rows (lu_solve's unchecked device pivots, which fail the
     * call) is no interchange, so that no move leaves the matrix. */
    for (int t = t0; t < n; t += step) {
        const int p = ipiv[k_begin + t] - 1;
        piv[t] = p >= 0 && p < rows ? p : k_begin + t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = t0; t < 2 * n; t += step) {
        /* t < n: row k_begin + t; else the pivot row of interchange t - n, unless it lies in
         * k_begin .. k_end - 1 or an earlier interchange names it too. */
        int d = t < n ? k_begin + t : piv[t - n];
        int listed = t < n || d < k_begin || d >= k_end;
        for (int s = 0; listed && t >= n && s < t - n; s++)
            listed = piv[s] != d;
        if (!listed)
            continue;
        int x = d;
        for (int s = 0; s < n; s++) {
            const int i = reverse ? s : n - 1 - s, k = k_begin + i, p = piv[i];
            x = x == k ? p : x == p ? k : x;
        }
        if (x != d) {
            const int slot = atomic_inc(&count);
            plan[1 + 2 * slot] = d;
            plan[2 + 2 * slot] = x;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t0 == 0)
        plan[0] = count;
}

/* Columns side by side in a work-group of lu_laswp_apply (the host's choice: 64 bytes of each
 * row, at most the work-group). */
#ifndef LASWP_COLS
#error "lu.cl needs -DLASWP_COLS"
#endif

/* The moves of a plan (lu_laswp_plan) on the columns of a outside [skip_begin, skip_begin +
 * skip_count) (the panel, whose rows moved as it was factored). Work decomposition: a
 * work-group takes LASWP_COLS neighbouring columns (work-item x % LASWP_COLS) and the moves
 * x / LASWP_COLS, + local size / LASWP_COLS, ...; it reads the sources of every move of its
 * columns into `tile` (2n rows x LASWP_COLS), waits for the whole group, then writes them to
 * their destinations: no row is written before each of its reads, which another work-item of
 * the group may make. Memory traffic: each moved element read once and written once, 64-byte
 * pieces of rows; the plan is read by every group (cached). */
__kernel void lu_laswp_apply(__global REAL *a, long off, long ld, int cols, int skip_begin,
                             int skip_count, __global const int *plan, __local REAL *tile)
{
    const int count = plan[0];
    const int lx = (int)get_local_id(0) % LASWP_COLS, ly = (int)get_local_id(0) / LASWP_COLS;
    const int lanes = (int)get_local_size(0) / LASWP_COLS;
    int j = (int)get_group_id(0) * LASWP_COLS + lx;
    const int live = j < cols - skip_count;
    if (j >= skip_begin)
        j += skip_count;
    __global REAL *col = a + off + j;
    for (int i = ly; live && i < count; i += lanes)
        tile[i * LASWP_COLS + lx] = col[plan[2 + 2 * i] * ld];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = ly; live && i < count; i += lanes)
        col[plan[1 + 2 * i] * ld] = tile[i * LASWP_COLS + lx];
}

/* The larger of two pivot candidates: magnitude first, then the smaller row (LAPACK's idamax
 * takes the first of equal magnitudes). */
static void keep_better(REAL *v, int *i, REAL v2, int i2)
{
    if (v2 > *v || (v2 == *v && i2 < *i)) {
        *v = v2;
        *i = i2;
    }
}

#if defined(NV_WARP_SHUFFLE) && PANEL_WG % 32 == 0 && PANEL_WG <= 1024
/* x from the lane `delta` above in the warp (its own past the last lane): shfl.sync, compute
 * capability 7.0 and later; every lane of the warp must be here. */
static int shuffle_down(int x, int delta)
{
    int y;
    asm volatile("shfl.sync.down.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(y) : "r"(x), "r"(delta));
    return y;
}

/* The best candidate of the warp's lanes, in lane 0 (the others hold partial results). */
static void warp_best(REAL *v, int *i)
{
    for (int delta = 16; delta > 0; delta /= 2) {
#ifdef USE_FP64
        const int2 w = as_int2(*v);
        const REAL v2 = as_double((int2)(shuffle_down(w.x, delta), shuffle_down(w.y, delta)));
#else
        const REAL v2 = as_float(shuffle_down(as_int(*v), delta));
#endif
        keep_better(v, i, v2, shuffle_down(*i, delta));
    }
}
#endif

/* The work-group's best candidate: each work-item's is in best_v/best_i[its local id], the
 * best ends in [0]. keep_better is a maximum (magnitude, then the smaller row) and never takes a
 * NaN, so any order of combining gives the same pivot. On NVIDIA GPUs (-DNV_WARP_SHUFFLE) each
 * warp combines its lanes' with register shuffles and the first warp the warps' (3 barriers);
 * elsewhere a tree in local memory (1 + log2 PANEL_WG barriers): per column of the panel
 * kernels, which wait at little else. */
static void group_best(__local REAL *best_v, __local int *best_i)
{
    const int lid = (int)get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
#if defined(NV_WARP_SHUFFLE) && PANEL_WG % 32 == 0 && PANEL_WG <= 1024
    REAL v = best_v[lid];
    int i = best_i[lid];
    warp_best(&v, &i);
    barrier(CLK_LOCAL_MEM_FENCE); /* every entry read before the warps' results replace some */
    if ((lid & 31) == 0) {
        best_v[lid / 32] = v;
        best_i[lid / 32] = i;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < 32) {
        v = lid < PANEL_WG / 32 ? best_v[lid] : (REAL)-1;
        i = lid < PANEL_WG / 32 ? best_i[lid] : INT_MAX;
        warp_best(&v, &i);
        if (lid == 0) {
            best_v[0] = v;
            best_i[0] = i;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    for (int step = PANEL_WG / 2; step > 0; step /= 2) {
        if (lid < step) {
            REAL v = best_v[lid];
            int i = best_i[lid];
            keep_better(&v, &i, best_v[lid + step], best_i[lid + step]);
            best_v[lid] = v;
            best_i[lid] = i;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
}

/* Step k of LAPACK's getf2 on the rows x nb panel at element `off` of the row-major matrix a,
 * whose first row is row `row0` of the matrix; the panel is factored by nb + 1 launches,
 * k = 0 .. nb, each finishing column k - 1 and choosing the pivot of column k:
 *  1. column k - 1 (its pivot already in row k - 1) is scaled below the diagonal by the
 *     pivot's reciprocal (a division where that would overflow), and the panel's columns
 *     k .. nb - 1 below row k - 1 get the rank-1 update; skipped for a zero pivot, as LAPACK
 *     does (the column below is zero then);
 *  2. (k < nb) the pivot of column k is its first entry of largest magnitude on or below row k
 *     (row k itself with pivoting = 0): each work-group finds its rows' best, and the last
 *     work-group to finish (counted in *count) picks the best of those, records it in
 *     ipiv[row0 + k] (1-based, global) and a zero pivot in ipiv[info_at] (if still 0), and
 *     interchanges rows k and the pivot's across the panel.
 * Work decomposition: the panel's rows are cut into one contiguous chunk per work-group, so a
 * column's pivot search and update use the whole device; in step 1 the work-items of a group
 * form a grid of rows x columns in which neighbouring work-items write neighbouring addresses of
 * a row. The kernel boundary is the only synchronization between columns, besides the count that
 * elects the last group (the pattern of CUDA's threadFenceReduction sample: every work-item
 * fences its writes before the group's one atomic increment, and the last group reads the
 * others' results through volatile pointers). Memory traffic: per column, one pass over the
 * trailing panel (rows x (nb - k) elements, read and written, in the L2 cache of a GPU) and one
 * strided pass down column k; part_v/part_i hold one candidate per work-group. */
__kernel void lu_panel_column(__global REAL *a, long off, long ld, int rows, int nb, int row0,
                              __global int *ipiv, int info_at, int pivoting, __global REAL *part_v,
                              __global int *part_i, __global volatile int *count, int k)
{
    __local REAL best_v[PANEL_WG];
    __local int best_i[PANEL_WG];
    __local int is_last;
    const int lid = (int)get_local_id(0), group = (int)get_group_id(0);
    const int groups = (int)get_num_groups(0), chunk = (rows + groups - 1) / groups;
    const int first = max(group * chunk, k), end = min(rows, (group + 1) * chunk);
    __global REAL *p = a + off;

    const int e = k - 1; /* the column finished by this launch */
    const REAL d = e >= 0 ? p[(long)e * ld + e] : 0;
    if (e >= 0 && d != 0) {
        const int recip = fabs(d) >= (REAL)REAL_MIN;
        const REAL r = 1 / d;
        for (int i = first + lid; i < end; i += PANEL_WG)
            p[(long)i * ld + e] = recip ? p[(long)i * ld + e] * r : p[(long)i * ld + e] / d;
        barrier(CLK_GLOBAL_MEM_FENCE);
        const int cols = nb - k, width = min(cols, PANEL_WG);
        const int height = width > 0 ? PANEL_WG / width : 0;
        if (lid < width * height) {
            for (int c = k + lid % width; c < nb; c += width) {
                const REAL u = p[(long)e * ld + c];
                for (int i = first + lid / width; i < end; i += height)
                    p[(long)i * ld + c] -= p[(long)i * ld + e] * u;
            }
        }
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    if (k >= nb)
        return;

    REAL v = -1;
    int piv = k;
    for (int i = first + lid; pivoting && i < end; i += PANEL_WG)
        keep_better(&v, &piv, fabs(p[(long)i * ld + k]), i);
    best_v[lid] = v;
    best_i[lid] = piv;
    group_best(best_v, best_i);
    if (lid == 0) {
        part_v[group] = best_v[0];
        part_i[group] = best_i[0];
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        is_last = atomic_inc(count) == groups - 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!is_last)
        return;

    /* The last group: every other group's candidate and update is in memory. */
    const volatile __global REAL *vv = part_v;
    const volatile __global int *vi = part_i;
    v = -1;
    piv = k;
    for (int g = lid; g < groups; g += PANEL_WG)
        keep_better(&v, &piv, vv[g], vi[g]);
    barrier(CLK_LOCAL_MEM_FENCE); /* best_v/best_i[0] were read by work-item 0 */
    best_v[lid] = v;
    best_i[lid] = piv;
    group_best(best_v, best_i);
    piv = best_i[0];
    volatile __global REAL *q = p;
    const REAL pivot = q[(long)piv * ld + k];
    barrier(CLK_GLOBAL_MEM_FENCE); /* every work-item has read the pivot before the swap */
    if (lid == 0) {
        ipiv[row0 + k] = row0 + piv + 1;
        if (pivot == 0 && ipiv[info_at] == 0)
            ipiv[info_at] = row0 + k + 1;
        *count = 0; /* for the next launch */
    }
    for (int c = lid; pivot != 0 && piv != k && c < nb; c += PANEL_WG) {
        const REAL t = q[(long)k * ld + c];
        q[(long)k * ld + c] = q[(long)piv * ld + c];
        q[(long)piv * ld + c] = t;
    }
}

/* Rows of the triangle each work-item of lu_invert_lower owns: n <= INVERT_ROWS x its
 * work-group, which is at most PANEL_WG. */
#ifndef INVERT_ROWS
#define INVERT_ROWS 4
#endif
/* The steps of lu_invert_lower between two loads of its rows' elements. */
#define INVERT_STEP 8

/* T(i, k0 .. k0 + INVERT_STEP - 1) of the rows i a work-item of lu_invert_lower owns, the
 * diagonal included, 0 above it. */
static void load_row_steps(REAL buf[INVERT_ROWS][INVERT_STEP], const __global REAL *tt, long ti,
                           long tk, int n, int k0, int lid, int size)
{
    for (int r = 0; r < INVERT_ROWS; r++) {
        const int i = lid + r * size;
        for (int c = 0; c < INVERT_STEP; c++)
            buf[r][c] = i < n && k0 + c <= i ? tt[i * ti + (k0 + c) * tk] : 0;
    }
}

/* inv = T^-1 for the n x n lower triangular T(i, k) = t[t_off + i*ti + k*tk] (unit = 1: ones on the
 * diagonal, not read), n <= INVERT_ROWS x the work-group; inv(i, k) = inv[v_off + i*vi + k*vk]; for
 * as many such blocks as dimension 1 of the range has, block b's T and inverse t_step and v_step
 * elements after block b - 1's. Negative strides read an upper triangle backwards in both indices,
 * which makes it lower (and its inverse, written backwards, too). A triangular solve with an NB x
 * NB diagonal block then becomes one GEMM with its inverse (as MAGMA does) instead of NB dependent
 * steps; with partial pivoting |L| <= 1. Work decomposition: one work-group per column j of the
 * inverse (of each block), solving T x = e_j by column-oriented forward substitution: work-item l
 * owns x(i) and row i of T for i = l, l + size, ...; at step k the owner of x(k), now final, shares
 * it in local memory and every later x(i) subtracts T(i, k) x(k) (n - j dependent steps of one
 * multiply-add and one barrier). Each work-item loads its rows' next INVERT_STEP elements while it
 * runs the current ones, so the steps do not wait for memory (waiting for T(i, k) at every step
 * made the inversions 4.1 of 52 ms of an LU at N = 8192 f32 on the H200). Memory traffic: the
 * triangle read once per column (from cache), the inverse written once. */
__kernel void lu_invert_lower(int n, int unit, __global const REAL *t, long t_off, long ti, long tk,
                              __global REAL *inv, long v_off, long vi, long vk, long t_step,
                              long v_step)
{
    __local REAL shared_x[INVERT_ROWS * PANEL_WG];
    const int j = (int)get_group_id(0), lid = (int)get_local_id(0);
    const int size = (int)get_local_size(0);
    const long block = (long)get_group_id(1);
    const __global REAL *tt = t + t_off + block * t_step;
    v_off += block * v_step;
    REAL x[INVERT_ROWS], cur[INVERT_ROWS][INVERT_STEP], next[INVERT_ROWS][INVERT_STEP];
    for (int r = 0; r < INVERT_ROWS; r++)
        x[r] = lid + r * size == j ? 1 : 0;
    load_row_steps(cur, tt, ti, tk, n, j, lid, size);
    for (int k0 = j; k0 < n; k0 += INVERT_STEP) {
        load_row_steps(next, tt, ti, tk, n, k0 + INVERT_STEP, lid, size);
        for (int c = 0; c < INVERT_STEP && k0 + c < n; c++) {
            const int k = k0 + c;
            for (int r = 0; r < INVERT_ROWS; r++)
                if (lid + r * size == k) {
                    x[r] = unit ? x[r] : x[r] / cur[r][c];
                    shared_x[k] = x[r];
                }
            barrier(CLK_LOCAL_MEM_FENCE);
            const REAL xk = shared_x[k];
            for (int r = 0; r < INVERT_ROWS; r++)
                if (lid + r * size > k)
                    x[r] -= cur[r][c] * xk;
        }
        for (int r = 0; r < INVERT_ROWS; r++)
            for (int c = 0; c < INVERT_STEP; c++)
                cur[r][c] = next[r][c];
    }
    for (int r = 0; r < INVERT_ROWS; r++)
        if (lid + r * size < n)
            inv[v_off + (lid + r * size) * vi + j * vk] = x[r];
}

#ifdef RESIDENT_ROWS

/* Every work-group of the launch waits here until all `groups` have arrived; `target` is the
 * total count of arrivals the counter reaches then (it only grows, across launches, so nobody
 * resets it under a group still spinning on it). Work-items fence their global writes first,
 * so the other groups see them afterwards (through volatile reads, past their L1 caches). The
 * caller guarantees that every group of the launch is resident at once. */
static void grid_sync(volatile __global int *arrived, int target)
{
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        atomic_inc(arrived);
        while (*arrived - target < 0)
            ;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
}

/* LAPACK's getf2 on the rows x nb panel (nb <= RESIDENT_NB) at element `off` of the row-major
 * matrix a, whose first row is row `row0` of the matrix, in one launch: the same steps as
 * lu_panel_column, but each work-group keeps its chunk of rows in local memory from start to
 * end (its tile holds RESIDENT_ROWS rows of RESIDENT_NB, or more rows of a narrower panel, whose
 * rows lie nb apart: the host sees that a chunk fits), and the groups meet at one grid-wide
 * barrier per column instead of a kernel boundary. Per column k: each group finds its best
 * candidate below row k and posts it with a copy of its row (and the owner of row k a copy of
 * row k) to the exchange buffers; after the barrier every group reads all candidates, so all
 * agree on the pivot and hold the pivot row, and each applies the interchange, the scaling and
 * the rank-1 update to its own rows. The exchange buffers alternate by the parity of k: a group
 * can write column k + 1's while a slower one still reads column k's, and cannot reach column
 * k + 2 before everyone has passed column k + 1's barrier. Only for launches whose every group
 * is resident at once (the host launches at most one group per compute unit, on GPUs):
 * otherwise it would deadlock. Memory traffic: the panel read and written once; per column, a
 * candidate row per group. */
__kernel void lu_panel_resident(__global REAL *a, long off, long ld, int rows, int nb, int row0,
                                __global int *ipiv, int info_at, int pivoting, __global REAL *xv,
                                __global int *xi, volatile __global int *arrived, int arrived_base,
                                __global REAL *xrow)
{
    __local REAL tile[RESIDENT_ROWS * RESIDENT_NB];
    __local REAL urow[RESIDENT_NB], oldk[RESIDENT_NB];
    __local REAL best_v[PANEL_WG];
    __local int best_i[PANEL_WG];
    const int lid = (int)get_local_id(0), group = (int)get_group_id(0);
    const int groups = (int)get_num_groups(0), chunk = (rows + groups - 1) / groups;
    const int g0 = group * chunk, own = clamp(rows - g0, 0, chunk);
    __global REAL *p = a + off;

    for (int e = lid; e < own * nb; e += PANEL_WG)
        tile[e] = p[(long)(g0 + e / nb) * ld + e % nb];
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int k = 0; k < nb; k++) {
        const int parity = k & 1;
        __global REAL *row_slots = xrow + (long)parity * (groups + 1) * RESIDENT_NB;
        /* This group's candidate: the first largest |a(i, k)| of its rows i >= k. */
        REAL v = -1;
        int piv = k;
        for (int r = max(k - g0, 0) + lid; pivoting && r < own; r += PANEL_WG)
            keep_better(&v, &piv, fabs(tile[r * nb + k]), g0 + r);
        best_v[lid] = v;
        best_i[lid] = piv;
        group_best(best_v, best_i);
        const int mine = best_i[0] - g0; /* the candidate's local row, if it is ours */
        if (lid == 0) {
            xv[parity * groups + group] = best_v[0];
            xi[parity * groups + group] = best_i[0];
        }
        for (int c = lid; c < nb; c += PANEL_WG) {
            if (best_v[0] >= 0 && mine >= 0 && mine < own)
                row_slots[group * RESIDENT_NB + c] = tile[mine * nb + c];
            if (k >= g0 && k < g0 + own)
                row_slots[groups * RESIDENT_NB + c] = tile[(k - g0) * nb + c];
        }
        grid_sync(arrived, arrived_base + (k + 1) * groups);

        /* Every group: the best of all candidates, then the pivot row and the old row k. */
        const volatile __global REAL *vv = xv + parity * groups;
        const volatile __global int *vi = xi + parity * groups;
        v = -1;
        piv = k;
        for (int g = lid; g < groups; g += PANEL_WG)
            keep_better(&v, &piv, vv[g], vi[g]);
        best_v[lid] = v;
        best_i[lid] = piv;
        group_best(best_v, best_i);
        piv = best_i[0];
        const volatile __global REAL *slots = row_slots;
        const volatile __global REAL *winner =
            slots + (piv == k ? groups : piv / chunk) * RESIDENT_NB;
        for (int c = lid; c < nb; c += PANEL_WG) {
            urow[c] = winner[c];
            oldk[c] = slots[groups * RESIDENT_NB + c];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const REAL d = urow[k];
        if (group == 0 && lid == 0) {
            ipiv[row0 + k] = row0 + piv + 1;
            if (d == 0 && ipiv[info_at] == 0)
                ipiv[info_at] = row0 + k + 1;
        }
        /* The interchange, in the groups that own row k or the pivot's row. */
        for (int c = lid; piv != k && c < nb; c += PANEL_WG) {
            if (k >= g0 && k < g0 + own)
                tile[(k - g0) * nb + c] = urow[c];
            if (piv >= g0 && piv < g0 + own)
                tile[(piv - g0) * nb + c] = oldk[c];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (d == 0)
            continue; /* the column below is zero: nothing to scale or update (uniform) */
        const int first = max(k + 1 - g0, 0), active = own - first;
        const int recip = fabs(d) >= (REAL)REAL_MIN;
        const REAL rd = 1 / d;
        for (int r = first + lid; r < own; r += PANEL_WG)
            tile[r * nb + k] = recip ? tile[r * nb + k] * rd : tile[r * nb + k] / d;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* The rank-1 update: each work-item keeps one column and takes rows `lanes` apart,
         * one division per column of the panel where an element each took two (integer
         * divisions by a variable are tens of instructions on a GPU). */
        const int cols = nb - k - 1;
        if (cols > 0 && cols <= PANEL_WG) {
            const int lanes = PANEL_WG / cols, c = k + 1 + lid % cols;
            for (int r = first + lid / cols; lid < lanes * cols && r < own; r += lanes)
                tile[r * nb + c] -= tile[r * nb + k] * urow[c];
        }
        for (int e = lid; cols > PANEL_WG && e < active * cols; e += PANEL_WG) {
            const int r = first + e / cols, c = k + 1 + e % cols;
            tile[r * nb + c] -= tile[r * nb + k] * urow[c];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int e = lid; e < own * nb; e += PANEL_WG)
        p[(long)(g0 + e / nb) * ld + e % nb] = tile[e];
}

#endif

/* getrs for a small system (lu_solve_factored takes it for N <= LU_SMALL_SOLVE_N): work-item j
 * solves column j of B (row-major: element i at b[b_off + i * ldb + j]) in place, with the
 * factors in `lu` (row-major, unit lower L and U) and ipiv (LAPACK's, 1-based; one outside the
 * matrix's rows is no interchange, as lu_laswp_plan takes it). trans = 0, A X = B: the
 * interchanges in order, L y = P^T B forward, U x = y backward; trans = 1, A^T X = B: U^T y = B
 * forward, L^T z = y backward, the interchanges in reverse order. One launch where the blocked
 * solve takes eight (swaps, inversions, copies, GEMMs), whose dispatches are the cost of a
 * small solve on a CPU device. */
__kernel void lu_getrs_small(int n, int nrhs, int trans, __global const REAL *lu, long lu_off,
                             long ld, __global const int *ipiv, __global REAL *b, long b_off,
                             long ldb)
{
    const int j = (int)get_global_id(0);
    if (j >= nrhs)
        return;
    __global REAL *x = b + b_off + j;
    __global const REAL *a = lu + lu_off;
    for (int s = 0; s < n && !trans; s++) {
        const int p = ipiv[s] - 1;
        if (p != s && p >= 0 && p < n) {
            const REAL t = x[s * ldb];
            x[s * ldb] = x[p * ldb];
            x[p * ldb] = t;
        }
    }
    for (int i = 0; i < n; i++) { /* forward: L (unit) or U^T */
        REAL v = x[i * ldb];
        for (int k = 0; k < i; k++)
            v -= (trans ? a[k * ld + i] : a[i * ld + k]) * x[k * ldb];
        x[i * ldb] = trans ? v / a[i * ld + i] : v;
    }
    for (int i = n - 1; i >= 0; i--) { /* backward: U or L^T (unit) */
        REAL v = x[i * ldb];
        for (int k = i + 1; k < n; k++)
            v -= (trans ? a[k * ld + i] : a[i * ld + k]) * x[k * ldb];
        x[i * ldb] = trans ? v : v / a[i * ld + i];
    }
    for (int s = n - 1; s >= 0 && trans; s--) {
        const int p = ipiv[s] - 1;
        if (p != s && p >= 0 && p < n) {
            const REAL t = x[s * ldb];
            x[s * ldb] = x[p * ldb];
            x[p * ldb] = t;
        }
    }
}
