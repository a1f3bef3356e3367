/* reduce.cl — sum, min, max, norm2, argmin and argmax of one dtype (-DDTYPE, -DOP), over a whole
 * strided tensor or along the rows of a strided 2-D view, each in one launch: work-groups write
 * partial states and the last group to finish merges them; work-group size, vector width and
 * loads in flight are -D options. */

#if !defined(DTYPE) || !defined(OP) || !defined(WG) || !defined(VEC) || !defined(STATE_BYTES) || \
    !defined(UNROLL)
#error "reduce.cl needs -DDTYPE, -DOP, -DWG, -DVEC, -DUNROLL and -DSTATE_BYTES"
#endif

/* DTYPE is an enum clops_dtype, OP an index into the operator's op values: the host passes the
 * values they are compared with, so that they are written once, in abi/clops.h and reduce.c. */
#if !defined(DT_F32) || !defined(DT_F64) || !defined(DT_I32) || !defined(DT_U32)
#error "reduce.cl needs -DDT_F32, -DDT_F64, -DDT_I32 and -DDT_U32 (enum clops_dtype)"
#endif
#if !defined(OP_SUM) || !defined(OP_MIN) || !defined(OP_MAX) || !defined(OP_NORM2) || \
    !defined(OP_ARGMIN) || !defined(OP_ARGMAX)
#error "reduce.cl needs -DOP_SUM, -DOP_MIN, -DOP_MAX, -DOP_NORM2, -DOP_ARGMIN and -DOP_ARGMAX"
#endif

#if DTYPE == DT_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#if DTYPE == DT_F32
#define T_NAME float
#define T_MAX INFINITY
#define T_LOWEST (-INFINITY)
#elif DTYPE == DT_F64
#define T_NAME double
#define T_MAX ((double)INFINITY)
#define T_LOWEST ((double)-INFINITY)
#elif DTYPE == DT_I32
#define T_NAME int
#define T_MAX INT_MAX
#define T_LOWEST INT_MIN
#elif DTYPE == DT_U32
#define T_NAME uint
#define T_MAX UINT_MAX
#define T_LOWEST 0u
#else
#error "DTYPE must be one of DT_F32, DT_F64, DT_I32 or DT_U32"
#endif
typedef T_NAME T;

#define IS_FLOAT (DTYPE == DT_F32 || DTYPE == DT_F64)

#if (WG & (WG - 1)) != 0
#error "WG must be a power of two (the tree halves it)"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VEC > 1
typedef CAT(T_NAME, VEC) TV;
#define VSTORE CAT(vstore, VEC)
#if OP == OP_SUM || OP == OP_MIN || OP == OP_MAX
#define LANES VEC
#else
#define LANES 1
#endif
#endif

/* ---- The state of each operation: a streaming update per element, an associative merge, and
 * the result. Every merge is order-independent (arg ties compare indices), so the result does
 * not depend on the work decomposition except for float rounding, which compensation bounds. */

#if IS_FLOAT && (OP == OP_SUM || OP == OP_NORM2)
/* Neumaier's compensated sum: `c` gathers the rounding errors of `s` exactly (Fast2Sum with the
 * larger operand first), so a sum is within about 2 eps |sum| + n eps^2 sum|x| whatever the
 * order of its additions, and so whatever the work decomposition. */
typedef struct {
    T s, c;
} csum;
static csum csum_zero(void)
{
    csum z = {0, 0};
    return z;
}
static void csum_add(csum *a, T x)
{
    T t = a->s + x;
    a->c += fabs(a->s) >= fabs(x) ? (a->s - t) + x : (x - t) + a->s;
    a->s = t;
}
static csum csum_merge(csum a, csum b)
{
    csum_add(&a, b.s);
    a.c += b.c;
    return a;
}
/* Once s is infinite or NaN it stays so, and c may hold inf - inf: the value is s itself. */
static T csum_value(csum a)
{
    return isfinite(a.s) ? a.s + a.c : a.s;
}
#endif

#if OP == OP_SUM && IS_FLOAT
typedef csum state;
typedef T result;
static state st_identity(void)
{
    return csum_zero();
}
static void st_add(state *st, T x, long i)
{
    (void)i;
    csum_add(st, x);
}
static state st_merge(state a, state b)
{
    return csum_merge(a, b);
}
static result st_result(state st)
{
    return csum_value(st);
}

#elif OP == OP_SUM
/* Integers: 64-bit two's complement, exact while the sum fits (wraps modulo 2^64 past it). */
typedef struct {
    long s;
} state;
typedef long result;
static state st_identity(void)
{
    state z = {0};
    return z;
}
static void st_add(state *st, T x, long i)
{
    (void)i;
    st->s += (long)x;
}
static state st_merge(state a, state b)
{
    a.s += b.s;
    return a;
}
static result st_result(state st)
{
    return st.s;
}

#elif OP == OP_MIN || OP == OP_MAX
/* NaN propagates: a NaN element makes the result NaN. */
typedef struct {
    T v;
} state;
typedef T result;
#if OP == OP_MIN
#define PICK(a, b) ((b) < (a) ? (b) : (a))
#define IDENTITY T_MAX
#else
#define PICK(a, b) ((b) > (a) ? (b) : (a))
#define IDENTITY T_LOWEST
#endif
static state st_identity(void)
{
    state z = {IDENTITY};
    return z;
}
static void st_add(state *st, T x, long i)
{
    (void)i;
#if IS_FLOAT
    if (isnan(st->v) || isnan(x)) {
        st->v = isnan(x) ? x : st->v;
        return;
    }
#endif
    st->v = PICK(st->v, x);
}
static state st_merge(state a, state b)
{
    st_add(&a, b.v, 0);
    return a;
}
static result st_result(state st)
{
    return st.v;
}

#elif OP == OP_NORM2
/* Blue's algorithm, as LAPACK 3.10's xNRM2: squares of elements above TBIG are summed scaled
 * down by SBIG, below TSML scaled up by SSML, the rest as they are, so no square overflows or
 * underflows (elements near the largest float or the smallest normal ones), with no division
 * and no data-dependent rescaling; each of the three sums is compensated. A NaN element lands in
 * `med` and makes the result NaN; an infinite one makes `big` infinite. Constants: powers of two
 * from the format's exponent range and precision (LAPACK's la_constants). */
#if DTYPE == DT_F32
#define TSML 0x1p-63f
#define TBIG 0x1p52f
#define SSML 0x1p75f
#define SBIG 0x1p-76f
#else
#define TSML 0x1p-511
#define TBIG 0x1p486
#define SSML 0x1p537
#define SBIG 0x1p-538
#endif
typedef struct {
    csum big, med, sml;
} state;
typedef T result;
static state st_identity(void)
{
    state z = {csum_zero(), csum_zero(), csum_zero()};
    return z;
}
static void st_add(state *st, T x, long i)
{
    (void)i;
    T ax = fabs(x);
    if (ax > TBIG)
        csum_add(&st->big, (ax * SBIG) * (ax * SBIG));
    else if (ax < TSML)
        csum_add(&st->sml, (ax * SSML) * (ax * SSML));
    else
        csum_add(&st->med, ax * ax);
}
static state st_merge(state a, state b)
{
    a.big = csum_merge(a.big, b.big);
    a.med = csum_merge(a.med, b.med);
    a.sml = csum_merge(a.sml, b.sml);
    return a;
}
/* LAPACK's combination: the medium sum joins whichever scaled sum is present. */
static result st_result(state st)
{
    T big = csum_value(st.big), med = csum_value(st.med), sml = csum_value(st.sml);
    const int has_med = med > 0 || isnan(med);
    if (big > 0)
        return sqrt(has_med ? big + (med * SBIG) * SBIG : big) / SBIG;
    if (sml > 0 && has_med) {
        T ymed = sqrt(med), ysml = sqrt(sml) / SSML;
        T ymin = ysml > ymed ? ymed : ysml, ymax = ysml > ymed ? ysml : ymed;
        return ymax * sqrt(1 + (ymin / ymax) * (ymin / ymax));
    }
    return sml > 0 ? sqrt(sml) / SSML : sqrt(med);
}

#elif OP == OP_ARGMIN || OP == OP_ARGMAX
/* The index of the first extreme element; NaN counts as more extreme than any number, so the
 * first NaN's index wins (as NumPy's argmin/argmax). The identity's index LONG_MAX loses every
 * tie, and its value (+inf for argmin) ties with the most extreme numbers only. */
typedef struct {
    T v;
    long i;
} state;
typedef long result;
#if OP == OP_ARGMIN
#define BEYOND(a, b) ((a) < (b))
#define IDENTITY T_MAX
#else
#define BEYOND(a, b) ((a) > (b))
#define IDENTITY T_LOWEST
#endif
static state st_identity(void)
{
    state z = {IDENTITY, LONG_MAX};
    return z;
}
/* Whether b comes before a in the result's order. */
static bool precedes(state b, state a)
{
#if IS_FLOAT
    if (isnan(b.v) || isnan(a.v))
        return isnan(b.v) && (!isnan(a.v) || b.i < a.i);
#endif
    return BEYOND(b.v, a.v) || (b.v == a.v && b.i < a.i);
}
static state st_merge(state a, state b)
{
    return precedes(b, a) ? b : a;
}
static void st_add(state *st, T x, long i)
{
    state e = {x, i};
    *st = st_merge(*st, e);
}
static result st_result(state st)
{
    return st.i;
}

#else
#error "OP must be one of OP_SUM, OP_MIN, OP_MAX, OP_NORM2, OP_ARGMIN or OP_ARGMAX"
#endif

/* The host allocates STATE_BYTES per partial state: exactly a state, so that the buffer of
 * partial states is no larger than it must be. */
typedef char state_is_state_bytes[sizeof(state) == STATE_BYTES ? 1 : -1];

/* Reduces the states of the work-items sharing local column `lx` (`ny` of them, a power of two,
 * at scratch[lx * ny + ly]) to scratch[lx * ny] by a tree: log2(ny) levels, each with a barrier,
 * which keeps float rounding to O(log ny) merges. Every work-item of the group must call it. */
static state tree_reduce(state mine, __local state *scratch, int lx, int ly, int ny)
{
    __local state *col = scratch + lx * ny;
    col[ly] = mine;
    for (int step = ny / 2; step > 0; step /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ly < step)
            col[ly] = st_merge(col[ly], col[ly + step]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return col[0];
}

/* Element i (in the row-major order of the logical shape) of a strided tensor of up to 4 axes,
 * shape and strides padded in front with extents of 1. Below 2^32 elements the divisions are
 * 32-bit: a GPU emulates 64-bit division in dozens of instructions. */
static long strided_at(long i, long n, long4 shape, long4 strides)
{
    long i0, i1, i2, i3;
    if (n <= UINT_MAX) {
        uint rest = (uint)i, e3 = (uint)shape.s3, e2 = (uint)shape.s2, e1 = (uint)shape.s1;
        i3 = rest % e3;
        rest /= e3;
        i2 = rest % e2;
        rest /= e2;
        i1 = rest % e1;
        i0 = rest / e1;
    } else {
        long rest = i / shape.s3;
        i3 = i % shape.s3;
        i2 = rest % shape.s2;
        rest /= shape.s2;
        i1 = rest % shape.s1;
        i0 = rest / shape.s1;
    }
    return i0 * strides.s0 + i1 * strides.s1 + i2 * strides.s2 + i3 * strides.s3;
}

/* The partial states' buffer: `states` states of STATE_BYTES, then the counts of finished groups
 * (zero at the launch, and set back to zero by the last group of each count, so that the host
 * can hand the buffer to the next call of the same shape without clearing it). */
static __global volatile int *counts_after(__global state *partials, long states)
{
    return (__global volatile int *)((__global char *)partials + states * STATE_BYTES);
}

/* Whether this group is the last of `of` to finish with *count: the pattern of CUDA's
 * threadFenceReduction sample. Every work-item that wrote a partial state has fenced its writes
 * before the barrier; work-item 0 then takes a ticket. The last group sees every other group's
 * partial state in memory (and reads them through volatile pointers, past any stale cache).
 * Every work-item of the group must call it. */
static bool is_last_group(__global volatile int *count, int of, __local int *flag)
{
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0)
        *flag = atomic_inc(count) == of - 1;
    barrier(CLK_LOCAL_MEM_FENCE);
    return *flag;
}

/* reqd_work_group_size, left out when the plugin passes -DCLOPS_NO_REQD_WG: on PoCL before 7,
 * whose kernel-library cache then aborts the process (see pool_programs.c). */
#ifdef CLOPS_NO_REQD_WG
#define REQD_WG(x, y, z)
#else
#define REQD_WG(x, y, z) __attribute__((reqd_work_group_size(x, y, z)))
#endif

/* A whole-tensor reduction in one launch. Work decomposition: get_num_groups(0) groups of WG
 * work-items walk the n elements with a grid stride, each folding its elements into a private
 * state (VEC contiguous elements per load when `contiguous`, UNROLL loads issued before the first
 * is used, so a GPU has 16-byte loads in flight and neighbouring work-items read neighbouring
 * vectors: coalesced); the group's states are merged by a tree in local memory and written to
 * partials[group]; the last group to finish merges those and writes out[out_offset] (n = 0: one
 * group, the identity: 0 for an empty sum or norm). Traffic: each element read once, one state
 * (STATE_BYTES) written per group and read once, one result written. */
__kernel REQD_WG(WG, 1, 1) void
reduce_whole(__global const T *x, long offset, long n, long4 shape, long4 strides, int contiguous,
             __global state *partials, __global result *out, long out_offset)
{
    __local state scratch[WG];
    __local int last;
    const long gid = get_global_id(0), threads = get_global_size(0);
    state st = st_identity();
    if (contiguous) {
        __global const T *base = x + offset;
#if VEC > 1
        /* Vector-typed loads need VEC-element alignment (buffers start aligned): the first
         * `head` elements up to that boundary and the last partial vector are read singly. */
        const long head = min((long)((VEC - offset % VEC) % VEC), n);
        const long vectors = (n - head) / VEC;
        __global const TV *vbase = (__global const TV *)(base + head);
        /* Sums, min and max keep one state per vector lane: VEC independent dependency chains
         * instead of one, so a compensated sum is not bound by the latency of its additions.
         * The larger states of norm2 and the arg ops lose more to register pressure (measured
         * under PoCL: 2x slower) than they gain, and keep one. Merged at the end like any
         * partial states. */
        state lane[LANES];
        for (int k = 0; k < LANES; k++)
            lane[k] = st_identity();
        long v = gid;
        /* UNROLL vectors loaded before any is folded: the loads' latencies overlap. */
        for (; v + (UNROLL - 1) * threads < vectors; v += UNROLL * threads) {
            T e[UNROLL][VEC];
            for (int u = 0; u < UNROLL; u++)
                VSTORE(vbase[v + u * threads], 0, e[u]);
            for (int u = 0; u < UNROLL; u++)
                for (int k = 0; k < VEC; k++)
                    st_add(&lane[k % LANES], e[u][k], head + (v + u * threads) * VEC + k);
        }
        for (; v < vectors; v += threads) {
            T e[VEC];
            VSTORE(vbase[v], 0, e);
            for (int k = 0; k < VEC; k++)
                st_add(&lane[k % LANES], e[k], head + v * VEC + k);
        }
        for (int k = 0; k < LANES; k++)
            st = st_merge(st, lane[k]);
        for (long i = gid; i < head; i += threads)
            st_add(&st, base[i], i);
        for (long i = head + vectors * VEC + gid; i < n; i += threads)
            st_add(&st, base[i], i);
#else
        for (long i = gid; i < n; i += threads)
            st_add(&st, base[i], i);
#endif
    } else {
        for (long i = gid; i < n; i += threads)
            st_add(&st, x[offset + strided_at(i, n, shape, strides)], i);
    }
    const int lid = (int)get_local_id(0), groups = (int)get_num_groups(0);
    state total = tree_reduce(st, scratch, 0, lid, WG);
    if (lid == 0) {
        partials[get_group_id(0)] = total;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    __global volatile int *count = counts_after(partials, groups);
    if (!is_last_group(count, groups, &last))
        return;
    const volatile __global state *done = partials;
    st = st_identity();
    for (int p = lid; p < groups; p += WG)
        st = st_merge(st, done[p]);
    total = tree_reduce(st, scratch, 0, lid, WG);
    if (lid == 0) {
        out[out_offset] = st_result(total);
        *count = 0; /* every group has counted: the next call finds it zero */
    }
}

/* Folds elements [l, end) of a row, `step` apart, into *st: UNROLL loads issued before the first
 * is used, so that a work-item has several loads in flight. */
static void fold_row(state *st, __global const T *row, long elem_stride, long l, long end,
                     long step)
{
    for (; l + (UNROLL - 1) * step < end; l += UNROLL * step) {
        T e[UNROLL];
        for (int u = 0; u < UNROLL; u++)
            e[u] = row[(l + u * step) * elem_stride];
        for (int u = 0; u < UNROLL; u++)
            st_add(st, e[u], l + u * step);
    }
    for (; l < end; l += step)
        st_add(st, row[l * elem_stride], l);
}

/* Along one axis: `rows` results, row r reducing the `len` elements x[offset + r*row_stride +
 * l*elem_stride]. Work decomposition: a work-group of WG work-items takes WG/ny rows, the ny
 * work-items of a row walking its part with stride ny, then a tree per row. When the elements of
 * a row are the closer ones in memory (`lanes_fast`), neighbouring work-items are lanes of one
 * row and read neighbouring elements; the host sizes ny to the row (about 16 elements a lane), so
 * short rows share a group instead of idling most of it. When rows are the closer ones,
 * neighbouring work-items take neighbouring rows, so each step of the walk reads neighbouring
 * addresses (a column reduction of a row-major matrix). Dimension 1 cuts each row into
 * get_num_groups(1) parts of `part` elements, so that few long rows (a column reduction of a
 * tall matrix) still fill the device: with more than one part, each group writes its rows'
 * partial states to partials[part * rows + r] and the last group of the rows (counted per group
 * of rows) merges them. Traffic: each element read once, each result written once; with parts,
 * one state per row and part written and read once. */
__kernel REQD_WG(WG, 1, 1) void
reduce_axis(__global const T *x, long offset, long rows, long len, long row_stride,
            long elem_stride, int ny, int lanes_fast, long part, __global state *partials,
            __global result *out, long out_offset, long out_stride)
{
    __local state scratch[WG];
    __local int last;
    const int lid = (int)get_local_id(0), nx = WG / ny;
    const int lx = lanes_fast ? lid / ny : lid % nx, ly = lanes_fast ? lid % ny : lid / nx;
    const long r = get_group_id(0) * nx + lx;
    const int parts = (int)get_num_groups(1), p = (int)get_group_id(1);
    const long begin = p * part, end = min(len, begin + part);
    state st = st_identity();
    if (r < rows)
        fold_row(&st, x + offset + r * row_stride, elem_stride, begin + ly, end, ny);
    state total = tree_reduce(st, scratch, lx, ly, ny);
    if (parts > 1) {
        if (ly == 0 && r < rows) {
            partials[p * rows + r] = total;
            mem_fence(CLK_GLOBAL_MEM_FENCE);
        }
        __global volatile int *count = counts_after(partials, parts * rows) + get_group_id(0);
        if (!is_last_group(count, parts, &last))
            return;
        if (lid == 0)
            *count = 0; /* every part has counted: the next call finds it zero */
        const volatile __global state *done = partials;
        st = st_identity();
        for (int q = ly; r < rows && q < parts; q += ny)
            st = st_merge(st, done[q * rows + r]);
        total = tree_reduce(st, scratch, lx, ly, ny);
    }
    if (ly == 0 && r < rows)
        out[out_offset + r * out_stride] = st_result(total);
}
