/* tensor.c — validation of clops_tensor descriptors, and staging of host tensors into device
 * memory for the length of one operator call. */
#include "tensor.h"

#include <stdio.h>
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

int tensor_has_gaps(const struct clops_tensor *t)
{
    return tensor_span(t) != tensor_elements(t);
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
    if ((t->data == NULL) == (t->buffer == NULL))
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
                           op, param, t->buffer->dev->info.name, dev->info.name);
        if (span > 0 && end_bytes > t->buffer->bytes)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter '%s' addresses %lld bytes but its buffer holds %lld", op,
                           param, (long long)end_bytes, (long long)t->buffer->bytes);
    }
    return CLOPS_OK;
}

int32_t tensor_stage(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                     const struct clops_tensor *t, int32_t upload, struct staged_tensor *out,
                     const char *op, const char *param)
{
    memset(out, 0, sizeof *out);
    out->t = t;
    out->dev = dev;
    if (t->buffer != NULL) {
        out->mem = t->buffer->mem;
        out->offset = t->offset;
        return CLOPS_OK;
    }
    size_t bytes = (size_t)(tensor_span(t) * dtype_size(t->dtype));
    if (bytes == 0)
        return CLOPS_OK;
    char what[96];
    snprintf(what, sizeof what, "parameter '%s'", param);
    int32_t status = pool_alloc_device_memory(dev, (int64_t)bytes, op, what, &out->mem);
    if (status != CLOPS_OK)
        return status;
    out->temporary = 1;
    if (!upload)
        return CLOPS_OK;
    const char *src = (const char *)t->data + t->offset * dtype_size(t->dtype);
    cl_int rc = clEnqueueWriteBuffer(queue, out->mem, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: uploading parameter '%s' (%zu bytes) failed", op, param, bytes);
    atomic_fetch_add(&pool->bytes_uploaded, (long long)bytes);
    return CLOPS_OK;
}

int32_t tensor_unstage_output(struct clops_pool *pool, cl_command_queue queue,
                              struct staged_tensor *s, const char *op, const char *param)
{
    if (!s->temporary)
        return CLOPS_OK;
    const struct clops_tensor *t = s->t;
    size_t bytes = (size_t)(tensor_span(t) * dtype_size(t->dtype));
    char *dst = (char *)t->data + t->offset * dtype_size(t->dtype);
    cl_int rc = clEnqueueReadBuffer(queue, s->mem, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: downloading parameter '%s' (%zu bytes) failed", op, param, bytes);
    atomic_fetch_add(&pool->bytes_downloaded, (long long)bytes);
    return CLOPS_OK;
}

void tensor_release(struct staged_tensor *s)
{
    if (s->temporary)
        pool_free_device_memory(s->dev, s->mem);
    s->mem = NULL;
    s->temporary = 0;
}
