/* tensor_stage.c — host tensors staged into device memory for the length of one operator call:
 * only the elements a view holds are transferred, in either direction, and outputs reach host
 * memory only in a commit step once everything before it succeeded; i32 vectors read and
 * written for the LU engine. */
#include "tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies every run between `view` (the view's first element, runs at their strides) and
 * `other`, which holds them packed or, with packed = 0, laid out as the view; to_view gives the
 * direction. */
static void copy_runs(const struct view_runs *v, int64_t es, char *view, char *other, int packed,
                      int to_view)
{
    const size_t bytes = (size_t)(v->run * es);
    int64_t index[CLOPS_MAX_RANK] = {0}, at = 0, next = 0; /* elements from the first */
    for (;;) {
        char *o = other + (packed ? next : at) * es;
        if (to_view)
            memcpy(view + at * es, o, bytes);
        else
            memcpy(o, view + at * es, bytes);
        next += v->run;
        int32_t a = 0;
        for (; a < v->outer; a++) {
            if (++index[a] < v->count[a]) {
                at += v->stride[a];
                break;
            }
            index[a] = 0;
            at -= (v->count[a] - 1) * v->stride[a];
        }
        if (a == v->outer)
            return;
    }
}

/* The runs as one rectangle of clEnqueue{Read,Write}BufferRect, the buffer side laid out as the
 * view from its origin: region (bytes of a run, runs of the first outer axis, of the second)
 * and the buffer's row and slice pitches. 0 when they make none: more than two outer axes, or
 * pitches OpenCL does not take (runs that overlap, a slice pitch not a multiple of the row
 * pitch or smaller than a slice). */
static int rect_of(const struct view_runs *v, int64_t es, size_t region[3], size_t pitch[2])
{
    if (v->outer > 2 || (v->outer > 0 && v->stride[0] < v->run))
        return 0;
    if (v->outer == 2 &&
        (v->stride[1] % v->stride[0] != 0 || v->stride[1] / v->stride[0] < v->count[0]))
        return 0;
    region[0] = (size_t)(v->run * es);
    region[1] = v->outer > 0 ? (size_t)v->count[0] : 1;
    region[2] = v->outer > 1 ? (size_t)v->count[1] : 1;
    pitch[0] = v->outer > 0 ? (size_t)(v->stride[0] * es) : 0;
    pitch[1] = v->outer > 1 ? (size_t)(v->stride[1] * es) : 0;
    return 1;
}

/* The bytes of a temporary device buffer for view `t`: its span, or, when it moves as one
 * rectangle, the rectangle's whole pitch (every row and slice full length, the last ones too).
 * NVIDIA's OpenCL refuses a rectangle whose last slice's pitch ends past the buffer
 * (CL_INVALID_VALUE), though OpenCL's bound is where its last run ends; the difference is at
 * most the padding after the last row or slice. */
static size_t staged_bytes(const struct clops_tensor *t)
{
    const int64_t es = dtype_size(t->dtype), span_bytes = tensor_span(t) * es;
    if (span_bytes == 0)
        return 0;
    struct view_runs v;
    view_runs(t, &v);
    size_t region[3], pitch[2];
    if (v.outer == 0 || !rect_of(&v, es, region, pitch))
        return (size_t)span_bytes;
    const size_t whole = v.outer == 1 ? region[1] * pitch[0] : region[2] * pitch[1];
    return whole > (size_t)span_bytes ? whole : (size_t)span_bytes;
}

void tensor_packed_like(const struct clops_tensor *t, void *data, struct clops_tensor *out)
{
    *out = *t;
    out->data = data;
    out->buffer = NULL;
    out->offset = 0;
    int32_t order[CLOPS_MAX_RANK], k = 0;
    for (int32_t i = 0; i < t->rank; i++) {
        out->strides[i] = 1;
        if (t->shape[i] <= 1)
            continue;
        int32_t j = k++; /* the stable sort of view_runs, so that the orders agree */
        while (j > 0 && t->strides[order[j - 1]] > t->strides[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    int64_t step = 1;
    for (int32_t j = 0; j < k; j++) {
        out->strides[order[j]] = step;
        step *= t->shape[order[j]];
    }
}

void tensor_unpack(const struct clops_tensor *t, const void *packed)
{
    if (tensor_span(t) == 0)
        return;
    const int64_t es = dtype_size(t->dtype);
    struct view_runs v;
    view_runs(t, &v);
    copy_runs(&v, es, (char *)t->data + t->offset * es, (char *)packed, 1, 1);
}

/* The end of a transfer of `moved` bytes of parameter `param`: its error, or its count in the
 * pool's statistics. */
static int32_t transfer_done(struct clops_pool *pool, cl_int rc, int64_t moved, int download,
                             const char *op, const char *param)
{
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: %s parameter '%s' (%lld bytes) failed", op,
                      download ? "downloading" : "uploading", param, (long long)moved);
    if (download)
        pool_record_download(pool, moved);
    else
        pool_record_upload(pool, moved);
    return CLOPS_OK;
}

/* Copies a host view's elements into `mem`, laid out as the view, reading nothing else of host
 * memory: one transfer when the view is dense or its runs make a rectangle (a padded matrix,
 * the BLAS case), else through a host copy of the span whose gaps are zeros (kernels read only
 * the view's elements). */
static int32_t upload_view(struct clops_pool *pool, cl_command_queue queue,
                           const struct clops_tensor *t, cl_mem mem, const char *op,
                           const char *param)
{
    const int64_t es = dtype_size(t->dtype), span_bytes = tensor_span(t) * es;
    char *first = (char *)t->data + t->offset * es, *scratch = NULL;
    struct view_runs v;
    view_runs(t, &v);
    const size_t origin[3] = {0, 0, 0};
    size_t region[3], pitch[2];
    int64_t moved = span_bytes;
    cl_int rc;
    if (v.outer == 0) {
        rc = clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, (size_t)span_bytes, first, 0, NULL, NULL);
    } else if (rect_of(&v, es, region, pitch)) {
        moved = (int64_t)(region[0] * region[1] * region[2]);
        rc = clEnqueueWriteBufferRect(queue, mem, CL_TRUE, origin, origin, region, pitch[0],
                                      pitch[1], pitch[0], pitch[1], first, 0, NULL, NULL);
    } else {
        scratch = calloc((size_t)span_bytes, 1);
        if (scratch == NULL)
            return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                           "%s: no host memory to stage parameter '%s' (%lld bytes)", op, param,
                           (long long)span_bytes);
        copy_runs(&v, es, first, scratch, 0, 0);
        rc = clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, (size_t)span_bytes, scratch, 0, NULL,
                                  NULL);
        free(scratch);
    }
    return transfer_done(pool, rc, moved, 0, op, param);
}

int32_t tensor_stage(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                     const struct clops_tensor *t, int32_t upload, struct staged_tensor *out,
                     const char *op, const char *param)
{
    memset(out, 0, sizeof *out);
    out->t = t;
    out->dev = dev;
    out->pool = pool;
    if (t->buffer != NULL) {
        out->mem = t->buffer->mem;
        out->offset = t->offset;
        return CLOPS_OK;
    }
    size_t bytes = staged_bytes(t);
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
    return upload_view(pool, queue, t, out->mem, op, param);
}

int32_t tensor_download(struct clops_pool *pool, cl_command_queue queue, struct staged_tensor *s,
                        const char *op, const char *param)
{
    if (!s->temporary)
        return CLOPS_OK;
    const struct clops_tensor *t = s->t;
    const int64_t es = dtype_size(t->dtype), span_bytes = tensor_span(t) * es;
    const int64_t bytes = tensor_elements(t) * es;
    struct view_runs v;
    view_runs(t, &v);
    const size_t origin[3] = {0, 0, 0};
    size_t region[3], pitch[2];
    /* Pinned memory of earlier calls (pool_host_take says why it matters). */
    pool_host_give(s->pool, s->host, s->host_capacity);
    s->host = pool_host_take(s->pool, s->dev, queue, (size_t)bytes, &s->host_capacity);
    if (s->host == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                       "%s: no host memory to download parameter '%s' (%lld bytes)", op, param,
                       (long long)bytes);
    int64_t moved = span_bytes;
    cl_int rc;
    if (v.outer == 0) {
        rc = clEnqueueReadBuffer(queue, s->mem, CL_TRUE, 0, (size_t)span_bytes, s->host, 0, NULL,
                                 NULL);
    } else if (rect_of(&v, es, region, pitch)) {
        moved = bytes;
        rc = clEnqueueReadBufferRect(queue, s->mem, CL_TRUE, origin, origin, region, pitch[0],
                                     pitch[1], region[0], region[0] * region[1], s->host, 0, NULL,
                                     NULL);
    } else {
        size_t capacity = 0;
        char *scratch = pool_host_take(s->pool, s->dev, queue, (size_t)span_bytes, &capacity);
        if (scratch == NULL)
            return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                           "%s: no host memory to download parameter '%s' (%lld bytes)", op, param,
                           (long long)span_bytes);
        rc = clEnqueueReadBuffer(queue, s->mem, CL_TRUE, 0, (size_t)span_bytes, scratch, 0, NULL,
                                 NULL);
        if (rc == CL_SUCCESS)
            copy_runs(&v, es, scratch, s->host, 1, 0);
        pool_host_give(s->pool, scratch, capacity);
    }
    return transfer_done(pool, rc, moved, 1, op, param);
}

void tensor_commit(struct staged_tensor *s)
{
    if (s->host == NULL)
        return;
    tensor_unpack(s->t, s->host);
    pool_host_give(s->pool, s->host, s->host_capacity);
    s->host = NULL;
}

int32_t tensor_unstage_output(struct clops_pool *pool, cl_command_queue queue,
                              struct staged_tensor *s, const char *op, const char *param)
{
    int32_t status = tensor_download(pool, queue, s, op, param);
    if (status == CLOPS_OK)
        tensor_commit(s);
    return status;
}

void tensor_release(struct staged_tensor *s)
{
    if (s->temporary)
        pool_free_device_memory(s->dev, s->mem);
    s->mem = NULL;
    s->temporary = 0;
    pool_host_give(s->pool, s->host, s->host_capacity);
    s->host = NULL;
}

/* ---- i32 vectors ----------------------------------------------------------------------------- */

/* The rectangle of clEnqueue{Read,Write}BufferRect that holds the first n elements of a rank-1
 * i32 device tensor and nothing between them: one row of n when they are contiguous, else n
 * rows of one, strides[0] apart. */
static void i32_rect(const struct clops_tensor *t, int64_t n, size_t origin[3], size_t region[3],
                     size_t *pitch)
{
    const int64_t stride = n > 1 ? t->strides[0] : 1;
    origin[0] = (size_t)t->offset * sizeof(int32_t);
    origin[1] = origin[2] = 0;
    region[0] = stride == 1 ? (size_t)n * sizeof(int32_t) : sizeof(int32_t);
    region[1] = stride == 1 ? 1 : (size_t)n;
    region[2] = 1;
    *pitch = stride == 1 ? 0 : (size_t)stride * sizeof(int32_t);
}

/* The tensor's first n elements = from[0 .. n), or to[0 .. n) = them: one of the two is NULL. */
static int32_t transfer_i32(struct clops_pool *pool, cl_command_queue queue,
                            const struct clops_tensor *t, const int32_t *from, int32_t *to,
                            int64_t n, const char *op)
{
    const int64_t stride = n > 1 ? t->strides[0] : 1;
    if (t->buffer == NULL) {
        int32_t *elements = (int32_t *)t->data + t->offset;
        for (int64_t i = 0; i < n; i++) {
            if (from != NULL)
                elements[i * stride] = from[i];
            else
                to[i] = elements[i * stride];
        }
        return CLOPS_OK;
    }
    if (n == 0)
        return CLOPS_OK;
    const size_t zero[3] = {0, 0, 0};
    size_t origin[3], region[3], pitch;
    i32_rect(t, n, origin, region, &pitch);
    cl_int rc;
    if (from != NULL)
        rc = clEnqueueWriteBufferRect(queue, t->buffer->mem, CL_TRUE, origin, zero, region, pitch,
                                      0, region[0], 0, from, 0, NULL, NULL);
    else
        rc = clEnqueueReadBufferRect(queue, t->buffer->mem, CL_TRUE, origin, zero, region, pitch, 0,
                                     region[0], 0, to, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc,
                      from != NULL ? "%s: writing an i32 vector to the device failed"
                                   : "%s: reading an i32 vector from the device failed",
                      op);
    const int64_t bytes = n * (int64_t)sizeof(int32_t);
    if (from != NULL)
        pool_record_upload(pool, bytes);
    else
        pool_record_download(pool, bytes);
    return CLOPS_OK;
}

int32_t tensor_read_i32(struct clops_pool *pool, cl_command_queue queue,
                        const struct clops_tensor *t, int32_t *values, int64_t n, const char *op)
{
    return transfer_i32(pool, queue, t, NULL, values, n, op);
}

int32_t tensor_write_i32(struct clops_pool *pool, cl_command_queue queue,
                         const struct clops_tensor *t, const int32_t *values, int64_t n,
                         const char *op)
{
    return transfer_i32(pool, queue, t, values, NULL, n, op);
}
