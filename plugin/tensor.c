/* tensor.c — clops_tensor descriptors: dtypes, extents and spans, the checks every operator makes
 * of its tensors, and whether two views share an element (tensor_stage.c moves them). */
#include "tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t dtype_size(int32_t dtype)
{
    switch (dtype) {
    case CLOPS_F32: return 4;
    case CLOPS_F64: return 8;
    case CLOPS_I32: return 4;
    case CLOPS_U32: return 4;
    case CLOPS_U8: return 1;
    case CLOPS_I64: return 8;
    default: return 0;
    }
}

const char *dtype_name(int32_t dtype)
{
    switch (dtype) {
    case CLOPS_F32: return "f32";
    case CLOPS_F64: return "f64";
    case CLOPS_I32: return "i32";
    case CLOPS_U32: return "u32";
    case CLOPS_U8: return "u8";
    case CLOPS_I64: return "i64";
    default: return "invalid";
    }
}

/* "f32 or f64" for a dtype mask. */
static void describe_dtypes(uint32_t dtypes, char *out, size_t size)
{
    out[0] = '\0';
    size_t used = 0;
    int first = 1;
    for (int32_t d = CLOPS_F32; d <= CLOPS_I64; d++) {
        if (!(dtypes & CLOPS_DTYPE_BIT(d)))
            continue;
        int n = snprintf(out + used, size - used, "%s%s", first ? "" : ", ", dtype_name(d));
        if (n < 0 || (size_t)n >= size - used)
            return;
        used += (size_t)n;
        first = 0;
    }
}

int64_t tensor_elements(const struct clops_tensor *t)
{
    int64_t n = 1;
    for (int32_t i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

/* The element count and its bytes, with overflow checked (tensor_elements assumes they were):
 * views may repeat elements (strides that alias), so the count can overflow where the span
 * does not, e.g. {2^16, 2^16, 2^16, 2^16} with unit strides spans 262141 elements. */
static int checked_elements(const struct clops_tensor *t, int64_t *elements)
{
    int64_t n = 1, bytes;
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->shape[i] == 0) {
            *elements = 0;
            return 1;
        }
        if (__builtin_mul_overflow(n, t->shape[i], &n))
            return 0;
    }
    *elements = n;
    return !__builtin_mul_overflow(n, dtype_size(t->dtype), &bytes);
}

int tensor_is_row_major(const struct clops_tensor *t)
{
    return (t->shape[1] <= 1 || t->strides[1] == 1) &&
           (t->shape[0] <= 1 || t->strides[0] >= t->shape[1]);
}

int tensor_is_column_major(const struct clops_tensor *t)
{
    return (t->shape[0] <= 1 || t->strides[0] == 1) &&
           (t->shape[1] <= 1 || t->strides[1] >= t->shape[0]);
}

int64_t tensor_span(const struct clops_tensor *t)
{
    int64_t last = 0;
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->shape[i] == 0)
            return 0;
        last += (t->shape[i] - 1) * t->strides[i];
    }
    return last + 1;
}

/* The span in elements, with overflow checked (tensor_span assumes it was). */
static int checked_span(const struct clops_tensor *t, int64_t *span)
{
    int64_t last = 0;
    for (int32_t i = 0; i < t->rank; i++) {
        int64_t step;
        if (t->shape[i] == 0) {
            *span = 0;
            return 1;
        }
        if (__builtin_mul_overflow(t->shape[i] - 1, t->strides[i], &step) ||
            __builtin_add_overflow(last, step, &last))
            return 0;
    }
    *span = last + 1;
    return 1;
}

/* Set while this thread checks a call without running it (call_check): tensors may then be
 * descriptions, with neither data nor buffer. */
static _Thread_local int describing;

void tensor_describing(int on)
{
    describing = on;
}

static int is_description(const struct clops_tensor *t)
{
    return describing && t->data == NULL && t->buffer == NULL;
}

int32_t tensor_check(const struct clops_tensor *t, const char *op, const char *param,
                     uint32_t dtypes, int32_t rank, const struct pool_device *dev)
{
    if (t == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter '%s' is NULL (expected a tensor)",
                       op, param);
    if (dtype_size(t->dtype) == 0 || !(dtypes & CLOPS_DTYPE_BIT(t->dtype))) {
        char allowed[128];
        describe_dtypes(dtypes, allowed, sizeof allowed);
        return err_set(dtype_size(t->dtype) == 0 ? CLOPS_ERR_INVALID_ARGUMENT
                                                 : CLOPS_ERR_UNSUPPORTED,
                       "%s: parameter '%s' has dtype %s (%d); expected one of: %s", op, param,
                       dtype_name(t->dtype), (int)t->dtype, allowed);
    }
    if (t->rank != rank)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter '%s' has rank %d; expected %d",
                       op, param, (int)t->rank, (int)rank);
    if ((t->data == NULL) == (t->buffer == NULL) && !is_description(t))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' must have exactly one of data (host memory) and "
                       "buffer (device memory) set; it has %s",
                       op, param, t->data == NULL ? "neither" : "both");
    if (t->offset < 0)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' has offset %lld; expected >= 0", op, param,
                       (long long)t->offset);
    for (int32_t i = 0; i < rank; i++) {
        if (t->shape[i] < 0)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter '%s' has shape[%d] = %lld; expected >= 0", op, param,
                           (int)i, (long long)t->shape[i]);
        if (t->shape[i] > 1 && t->strides[i] < 1)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter '%s' has strides[%d] = %lld on an axis of extent "
                           "%lld; expected >= 1",
                           op, param, (int)i, (long long)t->strides[i], (long long)t->shape[i]);
    }
    int64_t span, end_bytes;
    if (!checked_span(t, &span) || __builtin_add_overflow(span, t->offset, &end_bytes) ||
        __builtin_mul_overflow(end_bytes, dtype_size(t->dtype), &end_bytes))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s': shape and strides address more than 2^63 bytes", op,
                       param);
    int64_t elements;
    if (!checked_elements(t, &elements)) {
        char shape[160];
        int used = 0;
        for (int32_t i = 0; i < rank && used >= 0 && (size_t)used < sizeof shape; i++)
            used += snprintf(shape + used, sizeof shape - (size_t)used, "%s%lld", i ? "x" : "",
                             (long long)t->shape[i]);
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' has shape %s: its element count overflows 64 bits "
                       "(expected at most 2^63 - 1 bytes of elements, repeated ones included)",
                       op, param, shape);
    }
    if (t->buffer != NULL) {
        if (dev != NULL && t->buffer->dev != dev)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter '%s' is a buffer on device '%s' of another pool or "
                           "device; this call runs on '%s'",
                           op, param, pool_device_info(t->buffer->dev)->name,
                           pool_device_info(dev)->name);
        if (span > 0 && end_bytes > t->buffer->bytes)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter '%s' addresses %lld bytes but its buffer holds %lld", op,
                           param, (long long)end_bytes, (long long)t->buffer->bytes);
    }
    return CLOPS_OK;
}

int32_t tensor_check_i32_vector(const struct clops_tensor *t, const char *op, const char *param,
                                int64_t min_len, int32_t exact, const struct pool_device *dev)
{
    int32_t status = tensor_check(t, op, param, CLOPS_DTYPE_BIT(CLOPS_I32), 1, dev);
    if (status != CLOPS_OK)
        return status;
    if (t->shape[0] < min_len || (exact && t->shape[0] != min_len))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' has %lld elements; expected %s%lld", op, param,
                       (long long)t->shape[0], exact ? "" : "at least ", (long long)min_len);
    return CLOPS_OK;
}

/* ---- Views as runs of contiguous elements --------------------------------------------------- */

/* For a checked view with at least one element. */
void view_runs(const struct clops_tensor *t, struct view_runs *v)
{
    int64_t extent[CLOPS_MAX_RANK], stride[CLOPS_MAX_RANK];
    int32_t k = 0;
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->shape[i] <= 1)
            continue;
        int32_t j = k++;
        while (j > 0 && stride[j - 1] > t->strides[i]) {
            extent[j] = extent[j - 1];
            stride[j] = stride[j - 1];
            j--;
        }
        extent[j] = t->shape[i];
        stride[j] = t->strides[i];
    }
    int32_t m = 0;
    for (int32_t j = 0; j < k; j++) {
        int64_t next;
        if (m > 0 && !__builtin_mul_overflow(stride[m - 1], extent[m - 1], &next) &&
            next == stride[j]) {
            extent[m - 1] *= extent[j]; /* at most the element count, which tensor_check bounds */
            continue;
        }
        extent[m] = extent[j];
        stride[m++] = stride[j];
    }
    const int32_t first = m > 0 && stride[0] == 1;
    v->run = first ? extent[0] : 1;
    v->outer = 0;
    for (int32_t j = first; j < m; j++) {
        v->count[v->outer] = extent[j];
        v->stride[v->outer++] = stride[j];
    }
}

/* ---- Overlap ------------------------------------------------------------------------------- */

/* Bytes [base + i*pitch, base + i*pitch + len) for i < count, from an origin common to the two
 * views compared: the runs of one view along its first outer axis. */
struct comb {
    int64_t base, len, pitch, count;
};

static int64_t floor_div(int64_t a, int64_t b) /* b > 0 */
{
    return a / b - (a % b < 0);
}

static int64_t ceil_div(int64_t a, int64_t b) /* b > 0 */
{
    return -floor_div(-a, b);
}

/* The runs i of c, first to last, that meet bytes [s, s + len): empty when *lo > *hi. */
static void runs_meeting(const struct comb *c, int64_t s, int64_t len, int64_t *lo, int64_t *hi)
{
    if (c->count == 1) {
        *lo = 0;
        *hi = s < c->base + c->len && c->base < s + len ? 0 : -1;
        return;
    }
    *lo = floor_div(s - c->len - c->base, c->pitch) + 1;
    *hi = ceil_div(s + len - c->base, c->pitch) - 1;
    *lo = *lo > 0 ? *lo : 0;
    *hi = *hi < c->count - 1 ? *hi : c->count - 1;
}

/* Whether two combs share a byte. Equal pitches (two blocks of one matrix: the BLAS case) take
 * one division; others a step per run of the comb with fewer runs within the other's range,
 * counted from *budget, and at 0 the answer is yes: the safe side. */
static int combs_meet(const struct comb *x, const struct comb *y, int64_t *budget)
{
    int64_t lo, hi;
    if (y->count == 1 || x->count == 1) {
        const struct comb *one = y->count == 1 ? y : x, *other = one == y ? x : y;
        runs_meeting(other, one->base, one->len, &lo, &hi);
        return lo <= hi;
    }
    if (x->pitch == y->pitch) {
        /* Run i of x meets run j of y when -y.len < d + (j - i) pitch < x.len. */
        const int64_t d = y->base - x->base, p = x->pitch;
        lo = floor_div(-y->len - d, p) + 1;
        hi = ceil_div(x->len - d, p) - 1;
        lo = lo > -(x->count - 1) ? lo : -(x->count - 1);
        hi = hi < y->count - 1 ? hi : y->count - 1;
        return lo <= hi;
    }
    const struct comb *few = x->count <= y->count ? x : y, *many = few == x ? y : x;
    runs_meeting(few, many->base, (many->count - 1) * many->pitch + many->len, &lo, &hi);
    for (int64_t i = lo; i <= hi; i++) {
        if ((*budget)-- <= 0)
            return 1;
        int64_t mlo, mhi;
        runs_meeting(many, few->base + i * few->pitch, few->len, &mlo, &mhi);
        if (mlo <= mhi)
            return 1;
    }
    return 0;
}

/* A view's combs: one for each index of its outer axes past the first (`axes` of them, strides
 * in bytes). */
struct comb_set {
    struct comb first;
    int32_t axes;
    int64_t count[CLOPS_MAX_RANK], stride[CLOPS_MAX_RANK];
    int64_t total;
};

static void comb_set_of(const struct clops_tensor *t, int64_t start, struct comb_set *c)
{
    const int64_t es = dtype_size(t->dtype);
    struct view_runs v;
    view_runs(t, &v);
    c->first = (struct comb){start, v.run * es, v.outer > 0 ? v.stride[0] * es : 0,
                             v.outer > 0 ? v.count[0] : 1};
    c->axes = 0;
    c->total = 1;
    for (int32_t a = 1; a < v.outer; a++) {
        c->count[c->axes] = v.count[a];
        c->stride[c->axes++] = v.stride[a] * es;
        c->total *= v.count[a];
    }
}

static struct comb comb_at(const struct comb_set *c, int64_t k)
{
    struct comb r = c->first;
    for (int32_t a = 0; a < c->axes; a++) {
        r.base += (k % c->count[a]) * c->stride[a];
        k /= c->count[a];
    }
    return r;
}

/* Steps an exact answer may take (a few milliseconds) before it gives the safe one. */
static const int64_t overlap_budget = INT64_C(1) << 22;

int tensor_views_overlap(const struct clops_tensor *x, const struct clops_tensor *y)
{
    if (tensor_span(x) == 0 || tensor_span(y) == 0 || x->buffer != y->buffer)
        return 0;
    const uintptr_t base = x->buffer != NULL ? 0 : (uintptr_t)x->data;
    const uintptr_t base_y = y->buffer != NULL ? 0 : (uintptr_t)y->data;
    const uintptr_t ex = (uintptr_t)dtype_size(x->dtype), ey = (uintptr_t)dtype_size(y->dtype);
    const uintptr_t lo_x = base + (uintptr_t)x->offset * ex,
                    hi_x = lo_x + (uintptr_t)tensor_span(x) * ex;
    const uintptr_t lo_y = base_y + (uintptr_t)y->offset * ey,
                    hi_y = lo_y + (uintptr_t)tensor_span(y) * ey;
    if (!(lo_x < hi_y && lo_y < hi_x))
        return 0;
    /* From here on bytes are counted from the lower start, within 2^62 so that no sum of the
     * arithmetic below overflows; larger ranges (not in any real memory) count as overlapping. */
    const uintptr_t origin = lo_x < lo_y ? lo_x : lo_y, end = hi_x > hi_y ? hi_x : hi_y;
    if (end - origin > (UINT64_C(1) << 62))
        return 1;
    struct comb_set cx, cy;
    comb_set_of(x, (int64_t)(lo_x - origin), &cx);
    comb_set_of(y, (int64_t)(lo_y - origin), &cy);
    int64_t budget = overlap_budget;
    if (cx.total > budget / cy.total)
        return 1;
    for (int64_t i = 0; i < cx.total; i++) {
        const struct comb a = comb_at(&cx, i);
        for (int64_t j = 0; j < cy.total; j++) {
            const struct comb b = comb_at(&cy, j);
            if (budget-- <= 0 || combs_meet(&a, &b, &budget))
                return 1;
        }
    }
    return 0;
}

int32_t tensor_check_disjoint(const char *op, const struct tensor_use *uses, int32_t count,
                              const char *hint)
{
    for (int32_t j = 1; j < count; j++)
        for (int32_t i = 0; i < j; i++) {
            const struct tensor_use *a = &uses[i], *b = &uses[j];
            if (a->t == NULL || b->t == NULL || !(a->written || b->written) ||
                is_description(a->t) || is_description(b->t) || !tensor_views_overlap(a->t, b->t))
                continue;
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter '%s' overlaps parameter '%s' in memory: they share "
                           "elements, and '%s' is written%s%s",
                           op, b->name, a->name, b->written ? b->name : a->name,
                           hint != NULL ? "; " : "", hint != NULL ? hint : "");
        }
    return CLOPS_OK;
}
