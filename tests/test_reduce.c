/* test_reduce.c — the reduce operator against long double references: every op and dtype at
 * awkward sizes, strided and column-major views of rank 1..4, axis reductions, ties, NaN and
 * infinities, extreme magnitudes for norm2, empty inputs, device buffers, other launch tunings,
 * and bad arguments rejected with the parameter named and nothing written. */
#include <check.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

enum { SUM = 0, MIN, MAX, NORM2, ARGMIN, ARGMAX, OP_COUNT };
static const char *const op_names[] = {"sum", "min", "max", "norm2", "argmin", "argmax"};

static clops_reduce_fn reduce_entry(void)
{
    return (clops_reduce_fn)tu_op("reduce")->entry;
}

static int64_t elem_size(int32_t dtype)
{
    return dtype == CLOPS_F64 || dtype == CLOPS_I64 ? 8 : 4;
}

static int is_float(int32_t dtype)
{
    return dtype == CLOPS_F32 || dtype == CLOPS_F64;
}

/* ---- Host data ---------------------------------------------------------------------------------
 */

static long double get(const void *data, int32_t dtype, int64_t at)
{
    switch (dtype) {
    case CLOPS_F32: return ((const float *)data)[at];
    case CLOPS_F64: return ((const double *)data)[at];
    case CLOPS_I32: return ((const int32_t *)data)[at];
    case CLOPS_U32: return ((const uint32_t *)data)[at];
    default: return ((const int64_t *)data)[at];
    }
}

static void set(void *data, int32_t dtype, int64_t at, long double v)
{
    switch (dtype) {
    case CLOPS_F32: ((float *)data)[at] = (float)v; break;
    case CLOPS_F64: ((double *)data)[at] = (double)v; break;
    case CLOPS_I32: ((int32_t *)data)[at] = (int32_t)v; break;
    case CLOPS_U32: ((uint32_t *)data)[at] = (uint32_t)v; break;
    default: ((int64_t *)data)[at] = (int64_t)v; break;
    }
}

/* `count` random elements: floats in [lo, lo + 2), integers over their whole range. */
static void *random_data(int32_t dtype, int64_t count, double lo)
{
    void *data = tu_malloc((size_t)(count * elem_size(dtype)));
    for (int64_t i = 0; i < count; i++) {
        double u = tu_uniform();
        if (dtype == CLOPS_I32)
            ((int32_t *)data)[i] = (int32_t)(u * 2147483647.0);
        else if (dtype == CLOPS_U32)
            ((uint32_t *)data)[i] = (uint32_t)((u + 1.0) * 2147483647.0);
        else
            set(data, dtype, i, (long double)(lo + 1.0 + u));
    }
    return data;
}

static struct clops_tensor view(void *data, int32_t dtype, int32_t rank, const int64_t *shape,
                                const int64_t *strides, int64_t offset)
{
    struct clops_tensor t = {.data = data, .dtype = dtype, .rank = rank, .offset = offset};
    for (int32_t i = 0; i < rank; i++) {
        t.shape[i] = shape[i];
        t.strides[i] = strides[i];
    }
    return t;
}

static struct clops_tensor vector(void *data, int32_t dtype, int64_t n)
{
    const int64_t one = 1;
    return view(data, dtype, 1, &n, &one, 0);
}

/* Element `i` (row-major order of the shape) of t, by address. */
static int64_t address_of(const struct clops_tensor *t, int64_t i)
{
    int64_t at = t->offset;
    for (int32_t d = t->rank - 1; d >= 0; d--) {
        at += (i % t->shape[d]) * t->strides[d];
        i /= t->shape[d];
    }
    return at;
}

/* ---- The reference ------------------------------------------------------------------------------
 */

struct ref {
    long double value; /* sum, min, max, norm2; NAN when NaN propagates */
    int64_t index;     /* argmin, argmax */
    long double abs_sum;
    int64_t n;
};

/* Whether b comes before a for argmin (dir = -1) or argmax (+1): NaN first, then ties by index
 * (the earlier element is `a`, so a tie keeps a). */
static int beyond(long double b, long double a, int dir)
{
    if (isnan(a))
        return 0;
    return isnan(b) || (dir < 0 ? b < a : b > a);
}

/* The exact-as-possible result over the elements of t: sums and norms in compensated long
 * double, so that the reference's own error (2^-64 relative) is far below an f64 tolerance. */
static struct ref reference(const struct clops_tensor *t, int op)
{
    struct ref r = {.index = -1};
    long double s = 0, c = 0, best = 0, scale = 0;
    int64_t n = 1;
    for (int32_t d = 0; d < t->rank; d++)
        n *= t->shape[d];
    r.n = n;
    for (int64_t i = 0; i < n; i++)
        scale = fmaxl(scale, fabsl(get(t->data, t->dtype, address_of(t, i))));
    for (int64_t i = 0; i < n; i++) {
        long double x = get(t->data, t->dtype, address_of(t, i));
        long double term = op == NORM2 ? (scale > 0 ? (x / scale) * (x / scale) : 0) : x;
        if (isnan(x))
            term = x;
        long double sum = s + term; /* Neumaier */
        c += fabsl(s) >= fabsl(term) ? (s - sum) + term : (term - sum) + s;
        s = sum;
        r.abs_sum += fabsl(x);
        int dir = op == MIN || op == ARGMIN ? -1 : 1;
        if (i == 0 || beyond(x, best, dir)) {
            best = x;
            r.index = i;
        }
    }
    long double total = isfinite(s) ? s + c : s;
    switch (op) {
    case SUM: r.value = total; break;
    case NORM2: r.value = isinf(scale) && !isnan(total) ? scale : scale * sqrtl(total); break;
    default: r.value = best; break;
    }
    return r;
}

static long double eps_of(int32_t dtype)
{
    return dtype == CLOPS_F64 ? DBL_EPSILON / 2 : FLT_EPSILON / 2; /* unit roundoff */
}

/* The documented bounds: a compensated sum is within 2u|S| + 4 n u^2 sum|x| (plus u|S| for
 * the final rounding to the dtype); norm2 within 4u relative. Integers, min, max exact. */
static void check_value(const char *what, int32_t dtype, int op, long double got,
                        const struct ref *r)
{
    if (isnan(r->value)) {
        ck_assert_msg(isnan(got), "%s: %s = %.9Lg, want NaN", what, op_names[op], got);
        return;
    }
    long double u = eps_of(dtype), tol = 0;
    if (op == SUM && is_float(dtype))
        tol = 3 * u * fabsl(r->value) + 4 * (long double)r->n * u * u * r->abs_sum;
    else if (op == NORM2)
        tol = 4 * u * r->value;
    if (isinf(r->value))
        ck_assert_msg(got == r->value, "%s: %s = %.9Lg, want %.9Lg", what, op_names[op], got,
                      r->value);
    else
        ck_assert_msg(fabsl(got - r->value) <= tol,
                      "%s: %s = %.20Lg, want %.20Lg (error %.3Lg, tolerance %.3Lg)", what,
                      op_names[op], got, r->value, fabsl(got - r->value), tol);
}

static int32_t out_dtype(int op, int32_t dtype)
{
    if (op == ARGMIN || op == ARGMAX || (op == SUM && !is_float(dtype)))
        return CLOPS_I64;
    return dtype;
}

/* Reduces the whole of t with `op` on the host path and checks the result. */
static void check_whole(const char *what, const struct clops_tensor *t, int op)
{
    int32_t od = out_dtype(op, t->dtype);
    int64_t out[2] = {-7, -7}; /* out[1] is a guard */
    struct clops_tensor o = vector(out, od, 1);
    int32_t status = reduce_entry()(tu_case_pool(), t, &o, op, -1);
    ck_assert_msg(status == CLOPS_OK, "%s %s: %s", what, op_names[op], tu_api()->last_error());
    ck_assert_msg(out[1] == -7, "%s: wrote past out", what);
    struct ref r = reference(t, op);
    if (op == ARGMIN || op == ARGMAX)
        ck_assert_msg(out[0] == r.index, "%s: %s = %lld, want %lld", what, op_names[op],
                      (long long)out[0], (long long)r.index);
    else
        check_value(what, t->dtype, op, get(out, od, 0), &r);
}

static void check_all_ops(const char *what, const struct clops_tensor *t)
{
    for (int op = 0; op < OP_COUNT; op++)
        if (op != NORM2 || is_float(t->dtype))
            check_whole(what, t, op);
}

static const int32_t all_dtypes[] = {CLOPS_F32, CLOPS_F64, CLOPS_I32, CLOPS_U32};

/* ---- Whole tensors -----------------------------------------------------------------------------
 */

static const int64_t awkward_sizes[] = {1, 2, 3, 7, 1009, 4099, (1 << 20) + 3};
enum { AWKWARD_COUNT = sizeof awkward_sizes / sizeof awkward_sizes[0] };

/* _i: size index * 4 + dtype index; values in [-1, 1) and, for sums, in [0, 2) (no
 * cancellation: a plain float sum of 2^20 of them is off by ~1e-4 relative, far outside). */
START_TEST(test_reduce_every_op_at_awkward_sizes_matches_long_double)
{
    int32_t dtype = all_dtypes[_i % 4];
    int64_t n = awkward_sizes[_i / 4];
    if (dtype == CLOPS_F64 && !tu_has_fp64())
        return;
    tu_seed(100 + (uint64_t)_i);
    char what[64];
    for (int shift = 0; shift < 2; shift++) {
        /* Offsets 0..3 move the vector loads' alignment boundary. */
        void *data = random_data(dtype, n + 3, shift ? 0.0 : -1.0);
        struct clops_tensor t = vector(data, dtype, n);
        t.offset = (_i + shift) % 4;
        snprintf(what, sizeof what, "dtype %d n=%lld lo=%d", (int)dtype, (long long)n, shift - 1);
        check_all_ops(what, &t);
        free(data);
    }
}
END_TEST

/* Rank 1..4 views that are not dense: padded rows, column-major, permuted axes, negative-free
 * but large strides, offsets; and a dense rank-4 one (merged into one run by the plugin). */
START_TEST(test_reduce_strided_views_of_rank_1_to_4_match_long_double)
{
    static const struct {
        int32_t rank;
        int64_t shape[4], strides[4], offset;
    } views[] = {
        {1, {1000}, {3}, 5},
        {2, {37, 53}, {1, 40}, 2},             /* column-major, padded */
        {2, {53, 37}, {40, 1}, 0},             /* row-major, padded */
        {3, {5, 7, 11}, {1, 5 * 11, 5}, 1},    /* permuted dense */
        {3, {4, 1, 9}, {100, 7, 2}, 3},        /* an axis of extent 1 with an odd stride */
        {4, {3, 4, 5, 6}, {120, 30, 6, 1}, 0}, /* dense: one contiguous run */
        {4, {2, 3, 5, 7}, {1, 2, 6, 30}, 4},   /* column-major rank 4 */
        {4, {3, 2, 17, 5}, {400, 190, 11, 2}, 9},
    };
    int32_t dtype = all_dtypes[_i % 4];
    if (dtype == CLOPS_F64 && !tu_has_fp64())
        return;
    tu_seed(200 + (uint64_t)_i);
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
        int64_t span = 1;
        for (int32_t d = 0; d < views[v].rank; d++)
            span += (views[v].shape[d] - 1) * views[v].strides[d];
        void *data = random_data(dtype, views[v].offset + span, -1.0);
        struct clops_tensor t =
            view(data, dtype, views[v].rank, views[v].shape, views[v].strides, views[v].offset);
        char what[64];
        snprintf(what, sizeof what, "dtype %d view %zu", (int)dtype, v);
        check_all_ops(what, &t);
        free(data);
    }
}
END_TEST

START_TEST(test_reduce_arg_ties_give_the_first_index)
{
    int32_t dtype = all_dtypes[_i];
    if (dtype == CLOPS_F64 && !tu_has_fp64())
        return;
    enum { N = 5000 };
    void *data = calloc(N, 8);
    for (int64_t i = 0; i < N; i++)
        set(data, dtype, i, (long double)(i % 10 + 2));
    /* Extremes repeated at 3 places, the first deep inside the array. */
    const int64_t lows[3] = {1777, 2000, 4999}, highs[3] = {901, 902, 3333};
    for (int k = 0; k < 3; k++) {
        set(data, dtype, lows[k], 1);
        set(data, dtype, highs[k], 20);
    }
    struct clops_tensor t = vector(data, dtype, N);
    int64_t out = -1;
    struct clops_tensor o = vector(&out, CLOPS_I64, 1);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &t, &o, ARGMIN, -1), CLOPS_OK);
    ck_assert_int_eq(out, 1777);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &t, &o, ARGMAX, -1), CLOPS_OK);
    ck_assert_int_eq(out, 901);
    /* Ties in every row (axis 1: lanes of a row) and every column (axis 0: neighbouring
     * work-items on neighbouring columns) of the same data as a 50 x 100 matrix. */
    struct clops_tensor m = clops_matrix(data, dtype, 50, 100, 100, 0);
    int64_t idx[100];
    for (int axis = 0; axis < 2; axis++)
        for (int op = ARGMIN; op <= ARGMAX; op++) {
            int64_t count = axis == 0 ? 100 : 50, len = axis == 0 ? 50 : 100;
            struct clops_tensor oi = vector(idx, CLOPS_I64, count);
            ck_assert_int_eq(reduce_entry()(tu_pool(), &m, &oi, op, axis), CLOPS_OK);
            for (int64_t r = 0; r < count; r++) {
                int64_t stride = m.strides[axis];
                struct clops_tensor line =
                    view(data, dtype, 1, &len, &stride, r * m.strides[1 - axis]);
                ck_assert_msg(idx[r] == reference(&line, op).index, "%s axis %d result %lld: %lld",
                              op_names[op], axis, (long long)r, (long long)idx[r]);
            }
        }
    /* All equal: index 0. */
    for (int64_t i = 0; i < N; i++)
        set(data, dtype, i, 4);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &t, &o, ARGMAX, -1), CLOPS_OK);
    ck_assert_int_eq(out, 0);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &t, &o, ARGMIN, -1), CLOPS_OK);
    ck_assert_int_eq(out, 0);
    free(data);
}
END_TEST

/* NaN propagates through sum, min, max and norm2; argmin/argmax give the first NaN's index. */
START_TEST(test_reduce_nan_propagates_and_arg_ops_find_the_first_nan)
{
    int32_t dtype = _i == 0 ? CLOPS_F32 : CLOPS_F64;
    if (dtype == CLOPS_F64 && !tu_has_fp64())
        return;
    tu_seed(300 + (uint64_t)_i);
    const int64_t n = 100003, nan_at[2] = {70001, 99999};
    void *data = random_data(dtype, n, -1.0);
    for (int k = 0; k < 2; k++)
        set(data, dtype, nan_at[k], NAN);
    set(data, dtype, 5, -1e30); /* a real minimum before the NaNs must not win */
    struct clops_tensor t = vector(data, dtype, n);
    check_all_ops("nan", &t);
    int64_t out = -1;
    struct clops_tensor o = vector(&out, CLOPS_I64, 1);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &t, &o, ARGMIN, -1), CLOPS_OK);
    ck_assert_int_eq(out, nan_at[0]);
    free(data);
}
END_TEST

START_TEST(test_reduce_infinities_follow_ieee)
{
    float x[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)i;
    x[500] = INFINITY;
    struct clops_tensor t = vector(x, CLOPS_F32, 1000);
    float out = 0;
    struct clops_tensor o = vector(&out, CLOPS_F32, 1);
    for (int op = SUM; op <= NORM2; op++) {
        ck_assert_int_eq(reduce_entry()(tu_pool(), &t, &o, op, -1), CLOPS_OK);
        ck_assert_msg(out == (op == MIN ? 0.0f : INFINITY), "%s = %g", op_names[op], out);
    }
    x[900] = -INFINITY;
    ck_assert_int_eq(reduce_entry()(tu_pool(), &t, &o, SUM, -1), CLOPS_OK);
    ck_assert(isnan(out));
    ck_assert_int_eq(reduce_entry()(tu_pool(), &t, &o, NORM2, -1), CLOPS_OK);
    ck_assert(out == INFINITY);
}
END_TEST

/* Elements whose squares overflow (near FLT_MAX / DBL_MAX) or underflow (1e-30f, 1e-300), alone
 * and mixed with ordinary ones: a plain sum of squares gives inf or 0. */
START_TEST(test_reduce_norm2_is_safe_near_overflow_and_underflow)
{
    int32_t dtype = _i / 4 == 0 ? CLOPS_F32 : CLOPS_F64;
    if (dtype == CLOPS_F64 && !tu_has_fp64())
        return;
    const long double big = dtype == CLOPS_F32 ? FLT_MAX / 128 : DBL_MAX / 128;
    const long double tiny = dtype == CLOPS_F32 ? 1e-30L : 1e-300L;
    const long double scales[4][2] = {{big, big}, {tiny, tiny}, {big, 1}, {tiny, 1}};
    const long double *s = scales[_i % 4];
    tu_seed(400 + (uint64_t)_i);
    const int64_t n = 4099;
    void *data = random_data(dtype, n, -1.0);
    for (int64_t i = 0; i < n; i++)
        set(data, dtype, i, get(data, dtype, i) * (i % 3 ? s[0] : s[1]));
    struct clops_tensor t = vector(data, dtype, n);
    check_whole("extreme norm2", &t, NORM2);
    free(data);
}
END_TEST

START_TEST(test_reduce_integer_sums_are_exact_in_64_bits)
{
    enum { N = 100000 };
    int32_t *xi = malloc(N * sizeof *xi);
    uint32_t *xu = malloc(N * sizeof *xu);
    for (int i = 0; i < N; i++) {
        xi[i] = i % 2 ? INT32_MAX : INT32_MIN + 5;
        xu[i] = UINT32_MAX - (uint32_t)i;
    }
    int64_t out = 0, want_i = 0, want_u = 0;
    for (int i = 0; i < N; i++) {
        want_i += xi[i];
        want_u += xu[i];
    }
    struct clops_tensor ti = vector(xi, CLOPS_I32, N), tu = vector(xu, CLOPS_U32, N);
    struct clops_tensor o = vector(&out, CLOPS_I64, 1);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &ti, &o, SUM, -1), CLOPS_OK);
    ck_assert_int_eq(out, want_i);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &tu, &o, SUM, -1), CLOPS_OK);
    ck_assert_int_eq(out, want_u);
    uint32_t um = 0;
    struct clops_tensor ou = vector(&um, CLOPS_U32, 1);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &tu, &ou, MAX, -1), CLOPS_OK);
    ck_assert_uint_eq(um, UINT32_MAX);
    int32_t im = 0;
    struct clops_tensor oi = vector(&im, CLOPS_I32, 1);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &ti, &oi, MIN, -1), CLOPS_OK);
    ck_assert_int_eq(im, INT32_MIN + 5);
    free(xi);
    free(xu);
}
END_TEST

/* Empty x: sum and norm2 write 0, the others are rejected naming 'x' with out unchanged. */
START_TEST(test_reduce_empty_input_sum_is_zero_others_rejected)
{
    float x[1] = {5}, out = 42;
    const int64_t shape[2] = {3, 0}, strides[2] = {1, 3};
    struct clops_tensor t = view(x, CLOPS_F32, 2, shape, strides, 0);
    struct clops_tensor o = vector(&out, CLOPS_F32, 1);
    int64_t idx = 42;
    struct clops_tensor oi = vector(&idx, CLOPS_I64, 1);
    for (int op = 0; op < OP_COUNT; op++) {
        out = 42;
        int32_t status = reduce_entry()(tu_pool(), &t, op >= ARGMIN ? &oi : &o, op, -1);
        if (op == SUM || op == NORM2) {
            ck_assert_msg(status == CLOPS_OK, "%s", tu_api()->last_error());
            ck_assert_float_eq(out, 0.0f);
        } else {
            ck_assert_int_eq(status, CLOPS_ERR_INVALID_ARGUMENT);
            ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "'x' has no elements"));
            ck_assert_float_eq(out, 42.0f);
            ck_assert_int_eq(idx, 42);
        }
    }
}
END_TEST

/* ---- Along an axis -----------------------------------------------------------------------------
 */

/* What the elements of a test are: random in [-1, 1) (integers over their range); few distinct
 * values, so that min, max, argmin and argmax tie everywhere; random with a NaN every 4099
 * elements (floats). */
enum data_kind { DATA_RANDOM, DATA_TIES, DATA_NANS, DATA_KINDS };

static void *data_of_kind(int32_t dtype, int64_t count, enum data_kind kind)
{
    void *data = random_data(dtype, count, -1.0);
    for (int64_t i = 0; kind != DATA_RANDOM && i < count; i++) {
        if (kind == DATA_TIES)
            set(data, dtype, i, (long double)((i * 7919) % 5));
        else if (is_float(dtype) && i % 4099 == 1234)
            set(data, dtype, i, NAN);
    }
    return data;
}

/* Reduces a rows x cols matrix (row- or column-major, padded by 3) of `kind` elements along
 * `axis` into an out with stride 2, and checks every result against the reference of the
 * matching 1-D view and that out's gaps are untouched. */
static void check_axis_of(int32_t dtype, int64_t rows, int64_t cols, int col_major, int axis,
                          int op, enum data_kind kind)
{
    int64_t ld = (col_major ? rows : cols) + 3;
    int64_t count = 2 + ld * (col_major ? cols : rows);
    void *data = data_of_kind(dtype, count, kind);
    struct clops_tensor x = clops_matrix(data, dtype, rows, cols, ld, col_major);
    x.offset = 2;
    int64_t results = axis == 0 ? cols : rows;
    int32_t od = out_dtype(op, dtype);
    void *out = malloc((size_t)((2 * results + 1) * 8));
    for (int64_t i = 0; i < 2 * results + 1; i++)
        set(out, od, i, 77);
    const int64_t stride = 2;
    struct clops_tensor o = view(out, od, 1, &results, &stride, 0);
    char what[128];
    snprintf(what, sizeof what, "dtype %d %lldx%lld %s axis %d data %d", (int)dtype,
             (long long)rows, (long long)cols, col_major ? "col-major" : "row-major", axis,
             (int)kind);
    int32_t status = reduce_entry()(tu_case_pool(), &x, &o, op, axis);
    ck_assert_msg(status == CLOPS_OK, "%s %s: %s", what, op_names[op], tu_api()->last_error());
    for (int64_t r = 0; r < results; r++) {
        int64_t len = axis == 0 ? rows : cols;
        int64_t elem_stride = x.strides[axis];
        struct clops_tensor line =
            view(data, dtype, 1, &len, &elem_stride, x.offset + r * x.strides[1 - axis]);
        struct ref ref = reference(&line, op);
        if (op == ARGMIN || op == ARGMAX)
            ck_assert_msg(get(out, od, 2 * r) == ref.index, "%s %s: result %lld = %lld, want %lld",
                          what, op_names[op], (long long)r, (long long)get(out, od, 2 * r),
                          (long long)ref.index);
        else
            check_value(what, dtype, op, get(out, od, 2 * r), &ref);
        ck_assert_msg(get(out, od, 2 * r + 1) == 77, "%s: out's gap %lld written", what,
                      (long long)r);
    }
    free(out);
    free(data);
}

static void check_axis(int32_t dtype, int64_t rows, int64_t cols, int col_major, int axis, int op)
{
    check_axis_of(dtype, rows, cols, col_major, axis, op, DATA_RANDOM);
}

static const int64_t axis_shapes[][2] = {{1, 1},   {1, 1000}, {1000, 1}, {37, 1009},
                                         {300, 5}, {5, 300},  {129, 65}};
enum { AXIS_SHAPES = sizeof axis_shapes / sizeof axis_shapes[0] };

/* _i: shape index * 4 + dtype index; both axes, both storage orders, every op. */
START_TEST(test_reduce_along_axes_matches_long_double)
{
    int32_t dtype = all_dtypes[_i % 4];
    if (dtype == CLOPS_F64 && !tu_has_fp64())
        return;
    tu_seed(500 + (uint64_t)_i);
    const int64_t *s = axis_shapes[_i / 4];
    for (int col_major = 0; col_major < 2; col_major++)
        for (int axis = 0; axis < 2; axis++)
            for (int op = 0; op < OP_COUNT; op++)
                if (op != NORM2 || is_float(dtype))
                    check_axis(dtype, s[0], s[1], col_major, axis, op);
}
END_TEST

START_TEST(test_reduce_axis_of_extent_zero_gives_zero_sums)
{
    float x[1] = {1}, out[4] = {9, 9, 9, 9};
    struct clops_tensor t = clops_matrix(x, CLOPS_F32, 4, 0, 1, 0);
    struct clops_tensor o = vector(out, CLOPS_F32, 4);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &t, &o, SUM, 1), CLOPS_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(out[i], 0.0f);
    /* No results to write: a 0 x 4 matrix reduced along axis 1. */
    struct clops_tensor e = clops_matrix(x, CLOPS_F32, 0, 4, 4, 0);
    struct clops_tensor o0 = vector(out, CLOPS_F32, 0);
    ck_assert_int_eq(reduce_entry()(tu_pool(), &e, &o0, MAX, 1), CLOPS_OK);
}
END_TEST

/* ---- Device buffers, invoke, tunings
 * ------------------------------------------------------------- */

START_TEST(test_reduce_device_buffers_match_host_results)
{
    const struct clops_api *api = tu_api();
    tu_seed(600);
    const int64_t n = 70001, rows = 101, cols = 257;
    float *h = random_data(CLOPS_F32, n + 16, -1.0);
    struct clops_buffer *bx = NULL, *bo = NULL;
    ck_assert_int_eq(api->buffer_create(tu_pool(), (n + 16) * 4, &bx), CLOPS_OK);
    ck_assert_int_eq(api->buffer_upload(bx, 0, h, (n + 16) * 4), CLOPS_OK);
    ck_assert_int_eq(api->buffer_create(tu_pool(), 1024 * 8, &bo), CLOPS_OK);
    for (int op = 0; op < OP_COUNT; op++) {
        int32_t od = out_dtype(op, CLOPS_F32);
        struct clops_tensor x = vector(NULL, CLOPS_F32, n);
        x.buffer = bx;
        x.offset = 5;
        struct clops_tensor o = vector(NULL, od, 1);
        o.buffer = bo;
        o.offset = 3;
        ck_assert_msg(reduce_entry()(tu_pool(), &x, &o, op, -1) == CLOPS_OK, "%s",
                      api->last_error());
        int64_t dev[4];
        ck_assert_int_eq(api->buffer_download(bo, 0, dev, 4 * elem_size(od)), CLOPS_OK);
        struct clops_tensor hx = vector(h, CLOPS_F32, n);
        hx.offset = 5;
        int64_t host[2] = {0};
        struct clops_tensor ho = vector(host, od, 1);
        ck_assert_int_eq(reduce_entry()(tu_pool(), &hx, &ho, op, -1), CLOPS_OK);
        ck_assert_msg(memcmp((char *)dev + 3 * elem_size(od), host, (size_t)elem_size(od)) == 0,
                      "%s: device and host results differ", op_names[op]);
        /* Along axis 0 of a column-major view of the same buffer. */
        struct clops_tensor m = clops_matrix_on_device(bx, CLOPS_F32, rows, cols, rows + 2, 1);
        struct clops_tensor om = vector(NULL, od, cols);
        om.buffer = bo;
        ck_assert_msg(reduce_entry()(tu_pool(), &m, &om, op, 0) == CLOPS_OK, "%s",
                      api->last_error());
        struct clops_tensor hm = clops_matrix(h, CLOPS_F32, rows, cols, rows + 2, 1);
        int64_t *hout = calloc((size_t)cols, 8), *dout = calloc((size_t)cols, 8);
        struct clops_tensor hom = vector(hout, od, cols);
        ck_assert_int_eq(reduce_entry()(tu_pool(), &hm, &hom, op, 0), CLOPS_OK);
        ck_assert_int_eq(api->buffer_download(bo, 0, dout, cols * elem_size(od)), CLOPS_OK);
        ck_assert_msg(memcmp(hout, dout, (size_t)(cols * elem_size(od))) == 0,
                      "%s axis 0: device and host results differ", op_names[op]);
        free(hout);
        free(dout);
    }
    api->buffer_release(bo);
    api->buffer_release(bx);
    free(h);
}
END_TEST

START_TEST(test_reduce_through_invoke_by_name)
{
    const struct clops_api *api = tu_api();
    double x[5] = {3, -4, 0, 12, 0}, out = 0;
    struct clops_tensor t = vector(x, CLOPS_F64, 5), o = vector(&out, CLOPS_F64, 1);
    if (!tu_has_fp64())
        return;
    struct clops_arg args[3] = {
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &t},
        {.kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &o},
        {.name = "op", .kind = CLOPS_PARAM_ENUM, .s = "norm2"},
    };
    ck_assert_msg(api->invoke(tu_pool(), api->op_find("reduce"), args, 3) == CLOPS_OK, "%s",
                  api->last_error());
    ck_assert_double_eq(out, 13.0);
    /* An op outside the enum's strings is rejected by name, out untouched. */
    args[2].s = "mean";
    out = -1;
    ck_assert_int_eq(api->invoke(tu_pool(), api->op_find("reduce"), args, 3),
                     CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "op"));
    ck_assert_double_eq(out, -1.0);
}
END_TEST

/* The launch shapes of other devices (the GPU rows, scalar loads, tiny groups), forced through
 * the configuration so that they are checked on this machine too. */
static const char *const tunings[] = {
    "-DWG=256 -DVEC=4 -DGROUPS_PER_CU=8 -DROWS_PER_GROUP=32",
    "-DWG=32 -DVEC=1 -DGROUPS_PER_CU=3 -DROWS_PER_GROUP=8",
    "-DWG=128 -DVEC=8 -DGROUPS_PER_CU=1 -DROWS_PER_GROUP=128",
    "-DWG=1 -DVEC=2 -DGROUPS_PER_CU=2 -DROWS_PER_GROUP=1",
};

START_TEST(test_reduce_other_launch_tunings_match_long_double)
{
    tu_set_case_build_options("reduce", tunings[_i]);
    tu_seed(700 + (uint64_t)_i);
    const int64_t n = 100003;
    float *data = random_data(CLOPS_F32, n, 0.0);
    struct clops_tensor t = vector(data, CLOPS_F32, n);
    /* One op of each kind of state (compensated, scaled, indexed): each is its own program. */
    static const int ops[3] = {SUM, NORM2, ARGMAX};
    for (int k = 0; k < 3; k++) {
        check_whole(tunings[_i], &t, ops[k]);
        for (int layout = 0; layout < 4; layout++)
            check_axis(CLOPS_F32, 31, 1001, layout & 1, layout >> 1, ops[k]);
        check_axis(CLOPS_F32, 1000, 3, 0, 1, ops[k]); /* short rows sharing a group */
    }
    free(data);
    tu_release_case_pool();
}
END_TEST

START_TEST(test_reduce_rejects_bad_tunings)
{
    struct clops_pool *pool = tu_pool_with_build_options("reduce", "-DWG=100");
    float x[4] = {1, 2, 3, 4}, out = 7;
    struct clops_tensor t = vector(x, CLOPS_F32, 4), o = vector(&out, CLOPS_F32, 1);
    ck_assert_int_eq(reduce_entry()(pool, &t, &o, SUM, -1), CLOPS_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "operators.reduce.build_options"));
    ck_assert_float_eq(out, 7.0f);
    tu_api()->pool_release(pool);
}
END_TEST

/* ---- Long rows in parts, whole tensors over many groups --------------------------------------
 */

/* The device's tuning, and one that spreads a reduction over 64 groups per compute unit: long
 * rows are cut into many parts (and whole tensors into many groups) even on a CPU, so that the
 * partial states and the last group's merge are exercised at every size. */
static const char *const spread_options[] = {NULL, "-DGROUPS_PER_CU=64 -DUNROLL=3"};

/* Shapes whose reduced axis is long next to the other: many rows and few columns (and the
 * transposed cases), primes, lengths that no part size divides, and the degenerate ones. */
static const int64_t long_axis_shapes[][2] = {{1, 1},     {2, 1},      {100003, 3}, {65537, 1},
                                              {7919, 13}, {3, 100003}, {1, 1009},   {20011, 33}};
enum { LONG_AXIS_SHAPES = sizeof long_axis_shapes / sizeof long_axis_shapes[0] };

/* _i: tuning * 4 + dtype index; both axes and storage orders, every op, on random data, ties
 * and NaNs (the kinds rotate with the op so every op meets each over the shapes). */
START_TEST(test_reduce_long_axes_in_parts_match_long_double)
{
    int32_t dtype = all_dtypes[_i % 4];
    if (dtype == CLOPS_F64 && !tu_has_fp64())
        return;
    const char *options = spread_options[_i / 4];
    tu_set_case_build_options("reduce", options);
    tu_seed(800 + (uint64_t)_i);
    for (int s = 0; s < LONG_AXIS_SHAPES; s++)
        for (int layout = 0; layout < 4; layout++)
            for (int op = 0; op < OP_COUNT; op++)
                if (op != NORM2 || is_float(dtype))
                    check_axis_of(dtype, long_axis_shapes[s][0], long_axis_shapes[s][1], layout & 1,
                                  layout >> 1, op, (enum data_kind)((s + op) % DATA_KINDS));
    tu_release_case_pool();
}
END_TEST

/* One launch whose last group merges the others' partial states: up to 2 x 512 groups of 32
 * work-items, more partial states than the merging group has work-items; every op on every
 * data kind at awkward sizes and alignments. _i: dtype index. */
START_TEST(test_reduce_whole_tensor_over_many_groups_matches_long_double)
{
    static const int64_t sizes[] = {1, 2, 31, 1009, 65537, (1 << 20) + 3};
    int32_t dtype = all_dtypes[_i];
    if (dtype == CLOPS_F64 && !tu_has_fp64())
        return;
    tu_set_case_build_options("reduce", "-DWG=32 -DGROUPS_PER_CU=512 -DUNROLL=2");
    tu_seed(900 + (uint64_t)_i);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int kind = 0; kind < DATA_KINDS; kind++) {
            void *data = data_of_kind(dtype, sizes[k] + 3, (enum data_kind)kind);
            struct clops_tensor t = vector(data, dtype, sizes[k]);
            t.offset = (int64_t)(k + (size_t)kind) % 4;
            char what[80];
            snprintf(what, sizeof what, "many groups: dtype %d n=%lld data %d", (int)dtype,
                     (long long)sizes[k], kind);
            check_all_ops(what, &t);
            free(data);
        }
    tu_release_case_pool();
}
END_TEST

/* One pool, the same reductions again and again, shapes alternating: each call's last group
 * must be found again, so the counts of finished groups a call leaves in the pool's scratch
 * (reduce.cl sets them back to zero for the next call of its shape) must be zero, and a call of
 * another shape, whose counts lie elsewhere in the buffer, must clear its own. Many groups (and
 * many parts along the long axis), so that a count left over would make some result wrong or
 * leave it unwritten. */
START_TEST(test_reduce_repeated_calls_on_one_pool_find_their_last_group)
{
    tu_set_case_build_options("reduce", "-DWG=32 -DGROUPS_PER_CU=64 -DUNROLL=2");
    tu_seed(950);
    void *whole = data_of_kind(CLOPS_F32, 65537, DATA_RANDOM);
    struct clops_tensor t = vector(whole, CLOPS_F32, 65537);
    for (int round = 0; round < 4; round++) {
        char what[64];
        snprintf(what, sizeof what, "round %d", round);
        check_whole(what, &t, SUM);
        check_whole(what, &t, SUM);
        check_axis_of(CLOPS_F32, 20011, 3, 0, 0, SUM, DATA_RANDOM);
        check_axis_of(CLOPS_F32, 20011, 3, 0, 0, SUM, DATA_RANDOM);
        check_whole(what, &t, ARGMAX);
        check_axis_of(CLOPS_F32, 7919, 13, round & 1, 0, MAX, DATA_TIES);
    }
    free(whole);
    tu_release_case_pool();
}
END_TEST

/* ---- Bad arguments -----------------------------------------------------------------------------
 */

enum { BAD_ROWS = 4, BAD_COLS = 6, BAD_ALLOC = 64 };

/* A good call (sum of a 4x6 f32 matrix along axis 1 into 4 floats) that one case spoils. */
struct bad_call {
    struct clops_pool *pool;
    struct clops_tensor x, out;
    const struct clops_tensor *px, *pout;
    int32_t op;
    int64_t axis;
    int32_t status;
};

static float bad_x[BAD_ALLOC], bad_out[BAD_ALLOC];

static const char *spoil(int which, struct bad_call *c)
{
    switch (which) {
    case 0: c->x.dtype = CLOPS_U8, c->status = CLOPS_ERR_UNSUPPORTED; return "'x' has dtype u8";
    case 1: c->out.dtype = CLOPS_F64; return "'out' has dtype f64; sum of f32 x gives f32";
    case 2: c->op = ARGMAX; return "'out' has dtype f32; argmax of f32 x gives i64";
    case 3: c->x.dtype = CLOPS_I32; return "'out' has dtype f32; sum of i32 x gives i64";
    case 4: c->out.shape[0] = 3; return "'out' has shape[0] = 3; expected 4";
    case 5: c->axis = 0; return "'out' has shape[0] = 4; expected 6";
    case 6: c->axis = 2; return "'axis' = 2";
    case 7: c->axis = -2; return "'axis' = -2";
    case 8:
        c->x.rank = 3;
        c->x.shape[2] = 1;
        return "'axis' = 1 but x has rank 3";
    case 9: c->op = 6; return "'op' = 6";
    case 10: c->op = -1; return "'op' = -1";
    case 11: c->x.rank = 5; return "'x' has rank 5";
    case 12: c->x.rank = 0; return "'x' has rank 0";
    case 13: c->px = NULL; return "'x' is NULL";
    case 14: c->pout = NULL; return "'out' is NULL";
    case 15:
        c->out.data = NULL;
        c->out.buffer = tu_kept_buffer(8);
        return "'out' addresses 16 bytes but its buffer holds 8";
    case 16: c->out.rank = 2; return "'out' has rank 2";
    case 17:
        c->out.data = bad_x;
        c->out.offset = 3;
        return "'out' overlaps parameter 'x'";
    case 18:
        c->x.dtype = CLOPS_I32;
        c->out.dtype = CLOPS_I32;
        c->op = NORM2;
        c->status = CLOPS_ERR_UNSUPPORTED;
        return "norm2 takes f32 or f64";
    case 19: c->x.strides[0] = -1; return "'x' has strides[0] = -1";
    case 20: c->pool = NULL; return "'pool' is NULL";
    case 21:
        c->x.shape[1] = 0;
        c->op = MIN;
        return "'x' has no elements along the axis";
    case 22: c->out.dtype = 42; return "'out' has dtype";
    case 23: c->x.offset = -4; return "'x' has offset -4";
    default: ck_abort_msg("no bad case %d", which); return NULL;
    }
}
enum { BAD_CASE_COUNT = 24 };

START_TEST(test_reduce_rejects_bad_arguments_naming_them)
{
    struct tu_guard guard = {0};
    tu_guard_random_f32(&guard, 9000 + (uint64_t)_i, BAD_ALLOC, bad_x, bad_out, NULL);
    struct bad_call c = {.pool = tu_pool(),
                         .x = clops_matrix(bad_x, CLOPS_F32, BAD_ROWS, BAD_COLS, BAD_COLS, 0),
                         .out = vector(bad_out, CLOPS_F32, BAD_ROWS),
                         .op = SUM,
                         .axis = 1,
                         .status = CLOPS_ERR_INVALID_ARGUMENT};
    c.px = &c.x;
    c.pout = &c.out;
    const char *needle = spoil(_i, &c);
    int32_t got = reduce_entry()(c.pool, c.px, c.pout, c.op, c.axis);
    tu_expect_refusal("reduce", _i, got, c.status, needle, &guard);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_LOOP(test_reduce_every_op_at_awkward_sizes_matches_long_double, 4 * AWKWARD_COUNT),
        TU_LOOP(test_reduce_strided_views_of_rank_1_to_4_match_long_double, 4),
        TU_LOOP(test_reduce_arg_ties_give_the_first_index, 4),
        TU_LOOP(test_reduce_nan_propagates_and_arg_ops_find_the_first_nan, 2),
        TU_TEST(test_reduce_infinities_follow_ieee),
        TU_LOOP(test_reduce_norm2_is_safe_near_overflow_and_underflow, 8),
        TU_TEST(test_reduce_integer_sums_are_exact_in_64_bits),
        TU_TEST(test_reduce_empty_input_sum_is_zero_others_rejected),
        TU_LOOP(test_reduce_along_axes_matches_long_double, 4 * AXIS_SHAPES),
        TU_TEST(test_reduce_axis_of_extent_zero_gives_zero_sums),
        TU_TEST(test_reduce_device_buffers_match_host_results),
        TU_TEST(test_reduce_through_invoke_by_name),
        /* Quick runs: the first tuning, and the long axes with the first spread options in f32
         * and f64: 70 of the suite's 76 s here are these 12 iterations. */
        TU_LOOP(test_reduce_other_launch_tunings_match_long_double, tu_quick() ? 1 : 4),
        TU_LOOP(test_reduce_long_axes_in_parts_match_long_double, tu_quick() ? 2 : 8),
        TU_LOOP(test_reduce_whole_tensor_over_many_groups_matches_long_double, 4),
        TU_TEST(test_reduce_repeated_calls_on_one_pool_find_their_last_group),
        TU_TEST(test_reduce_rejects_bad_tunings),
        TU_LOOP(test_reduce_rejects_bad_arguments_naming_them, BAD_CASE_COUNT),
    };
    return tu_run_tests("reduce", 600, 0, tests, TU_COUNT(tests));
}
