/* buffer_copy.c — copies between device buffers of one pool device (buffer_copy.h): checked
 * before anything is queued, then one clEnqueueCopyBuffer that waits for nothing. */
#include "buffer_copy.h"

#include <stdlib.h>

#include "stream.h"

/* `param`'s range [offset, offset + bytes) lies in b. */
static int32_t check_range(const struct clops_buffer *b, int64_t offset, int64_t bytes,
                           const char *param, const char *what)
{
    if (offset < 0 || offset > b->bytes || bytes > b->bytes - offset)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s_offset' = %lld with bytes = %lld: the range is outside "
                       "'%s', a buffer of %lld bytes",
                       what, param, (long long)offset, (long long)bytes, param,
                       (long long)b->bytes);
    return CLOPS_OK;
}

/* The cl_mem whose bytes b's are, and where b's start in it: a sub-buffer's parent (a wrapped
 * cl_mem may be one), else b's own. */
static int32_t memory_of(const struct clops_buffer *b, cl_mem *base, int64_t *start,
                         const char *what)
{
    cl_mem parent = NULL;
    size_t offset = 0;
    cl_int rc =
        clGetMemObjectInfo(b->mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL);
    if (rc == CL_SUCCESS && parent != NULL)
        rc = clGetMemObjectInfo(b->mem, CL_MEM_OFFSET, sizeof offset, &offset, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: clGetMemObjectInfo(CL_MEM_ASSOCIATED_MEMOBJECT) failed", what);
    *base = parent != NULL ? parent : b->mem;
    *start = (int64_t)offset;
    return CLOPS_OK;
}

/* The two ranges share no byte of memory. */
static int32_t check_disjoint(const struct clops_buffer *src, int64_t src_offset,
                              const struct clops_buffer *dst, int64_t dst_offset, int64_t bytes,
                              const char *what)
{
    cl_mem src_base = NULL, dst_base = NULL;
    int64_t src_start = 0, dst_start = 0;
    int32_t status = memory_of(src, &src_base, &src_start, what);
    if (status == CLOPS_OK)
        status = memory_of(dst, &dst_base, &dst_start, what);
    if (status != CLOPS_OK || src_base != dst_base || bytes == 0)
        return status;
    const int64_t from = src_start + src_offset, to = dst_start + dst_offset;
    if (from < to + bytes && to < from + bytes)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'dst' range [%lld, %lld) overlaps 'src' range [%lld, %lld) "
                       "in the same memory; copy through a second buffer",
                       what, (long long)dst_offset, (long long)(dst_offset + bytes),
                       (long long)src_offset, (long long)(src_offset + bytes));
    return CLOPS_OK;
}

int32_t buffer_copy_check(const struct clops_buffer *src, int64_t src_offset,
                          const struct clops_buffer *dst, int64_t dst_offset, int64_t bytes,
                          const struct clops_pool *pool, const struct pool_device *dev,
                          const char *what)
{
    if (src == NULL || dst == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter '%s' is NULL", what,
                       src == NULL ? "src" : "dst");
    if (bytes < 0)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'bytes' = %lld; expected >= 0",
                       what, (long long)bytes);
    if (dst->pool != src->pool)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'dst' is a buffer of another pool than 'src'", what);
    if (dst->dev != src->dev)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'dst' is on the pool's device %d, 'src' on device %d", what,
                       (int)pool_device_index(dst->dev), (int)pool_device_index(src->dev));
    if (pool != NULL && src->pool != pool)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'src' is a buffer of another pool than the stream's", what);
    if (dev != NULL && src->dev != dev)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'src' is on the pool's device %d, the stream on device %d",
                       what, (int)pool_device_index(src->dev), (int)pool_device_index(dev));
    int32_t status = check_range(src, src_offset, bytes, "src", what);
    if (status == CLOPS_OK)
        status = check_range(dst, dst_offset, bytes, "dst", what);
    if (status == CLOPS_OK)
        status = check_disjoint(src, src_offset, dst, dst_offset, bytes, what);
    return status;
}

int32_t buffer_copy_enqueue(cl_command_queue queue, const struct clops_buffer *src,
                            int64_t src_offset, const struct clops_buffer *dst, int64_t dst_offset,
                            int64_t bytes, cl_uint wait_count, const cl_event *wait,
                            cl_event *event, const char *what)
{
    if (event != NULL)
        *event = NULL;
    cl_int rc = bytes == 0 ? clEnqueueMarkerWithWaitList(queue, wait_count, wait, event)
                           : clEnqueueCopyBuffer(queue, src->mem, dst->mem, (size_t)src_offset,
                                                 (size_t)dst_offset, (size_t)bytes, wait_count,
                                                 wait, event);
    if (rc != CL_SUCCESS) {
        if (event != NULL)
            *event = NULL;
        return err_cl(rc, "%s: %s failed", what,
                      bytes == 0 ? "clEnqueueMarkerWithWaitList" : "clEnqueueCopyBuffer");
    }
    return CLOPS_OK;
}

/* A copy queued on a stream: its buffers held from its submission until it has ended. */
struct copy_job {
    struct clops_buffer *src, *dst;
    int64_t src_offset, dst_offset, bytes;
};

static int32_t copy_start(void *ctx, cl_command_queue queue)
{
    const struct copy_job *j = ctx;
    return buffer_copy_enqueue(queue, j->src, j->src_offset, j->dst, j->dst_offset, j->bytes, 0,
                               NULL, NULL, "buffer_copy");
}

static void copy_release(void *ctx)
{
    struct copy_job *j = ctx;
    buffer_unhold(j->src);
    buffer_unhold(j->dst);
    free(j);
}

int32_t buffer_copy_submit(struct clops_buffer_copy_args *a)
{
    a->event = NULL;
    if (a->stream == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "buffer_copy: parameter 'stream' is NULL");
    const struct clops_pool *pool = stream_pool(a->stream);
    const struct pool_device *dev = pool_device_at(pool, stream_device(a->stream));
    int32_t status = buffer_copy_check(a->src, a->src_offset, a->dst, a->dst_offset, a->bytes, pool,
                                       dev, "buffer_copy");
    if (status != CLOPS_OK)
        return status;
    struct copy_job *j = malloc(sizeof *j);
    if (j == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "buffer_copy: out of host memory");
    *j = (struct copy_job){a->src, a->dst, a->src_offset, a->dst_offset, a->bytes};
    buffer_hold(j->src);
    buffer_hold(j->dst);
    const struct stream_waits waits = {a->wait_events, a->wait_count, NULL, 0};
    const struct stream_work work = {copy_start, copy_release, j};
    return stream_submit_work(a->stream, &work, &waits, &a->event);
}
