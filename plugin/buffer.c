/* buffer.c — device buffers on a pool's primary device, for tensors that stay on the device
 * between calls. */
#include <stdint.h>
#include <stdlib.h>

#include "tensor.h"

int32_t buffer_create(struct clops_pool *pool, int64_t bytes, struct clops_buffer **out)
{
    if (out == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "buffer_create: parameter 'out' is NULL");
    *out = NULL;
    if (pool == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "buffer_create: parameter 'pool' is NULL");
    if (bytes <= 0)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "buffer_create: parameter 'bytes' = %lld; expected > 0", (long long)bytes);
#if SIZE_MAX < INT64_MAX
    if (bytes > (int64_t)SIZE_MAX)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "buffer_create: parameter 'bytes' = %lld; expected at most %zu on this host",
                       (long long)bytes, (size_t)SIZE_MAX);
#endif
    struct clops_buffer *b = calloc(1, sizeof *b);
    if (b == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "buffer_create: out of host memory");
    /* The buffer holds its pool: its memory is counted on the pool's device. */
    int32_t status = pool_hold(pool, "buffer_create");
    if (status == CLOPS_OK) {
        b->pool = pool;
        b->dev = pool_device_at(pool, 0);
        b->bytes = bytes;
        atomic_init(&b->holds, 1); /* the host's, until buffer_release */
        atomic_init(&b->released, 0);
        status =
            pool_alloc_device_memory(b->dev, bytes, "buffer_create", "parameter 'bytes'", &b->mem);
        if (status != CLOPS_OK)
            pool_unhold(pool);
    }
    if (status != CLOPS_OK) {
        free(b);
        return status;
    }
    *out = b;
    return CLOPS_OK;
}

static int32_t check_transfer(const char *what, const struct clops_buffer *b, int64_t offset,
                              const void *host, int64_t bytes)
{
    if (b == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'buffer' is NULL", what);
    if (host == NULL && bytes > 0)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: host pointer is NULL", what);
    if (offset < 0 || bytes < 0 || offset > b->bytes || bytes > b->bytes - offset)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: range [%lld, %lld + %lld) is outside the buffer of %lld bytes", what,
                       (long long)offset, (long long)offset, (long long)bytes, (long long)b->bytes);
    return CLOPS_OK;
}

/* One blocking transfer between host memory and the buffer: from `src` when `dst` is NULL, else
 * into `dst`. Blocking because the synchronous ABI's buffer_upload and buffer_download promise
 * that the data is there when they return (the host may then reuse `src` or read `dst`). On any
 * queue of the buffer's device: operators finish before they return, so the buffer's contents
 * are complete whichever queue wrote them. */
static int32_t transfer(const char *what, struct clops_buffer *b, int64_t offset, const void *src,
                        void *dst, int64_t bytes)
{
    const int download = dst != NULL;
    int32_t status = check_transfer(what, b, offset, download ? dst : src, bytes);
    if (status != CLOPS_OK || bytes == 0)
        return status;
    cl_command_queue queue = pool_acquire_queue(b->dev);
    cl_int rc = download ? clEnqueueReadBuffer(queue, b->mem, CL_TRUE, (size_t)offset,
                                               (size_t)bytes, dst, 0, NULL, NULL)
                         : clEnqueueWriteBuffer(queue, b->mem, CL_TRUE, (size_t)offset,
                                                (size_t)bytes, src, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: %s failed", what,
                      download ? "clEnqueueReadBuffer" : "clEnqueueWriteBuffer");
    if (download)
        pool_record_download(b->pool, bytes);
    else
        pool_record_upload(b->pool, bytes);
    return CLOPS_OK;
}

/* transfer, holding the buffer (and so its pool) while it runs. */
static int32_t held_transfer(const char *what, struct clops_buffer *b, int64_t offset,
                             const void *src, void *dst, int64_t bytes)
{
    buffer_hold(b);
    int32_t status = transfer(what, b, offset, src, dst, bytes);
    buffer_unhold(b);
    return status;
}

int32_t buffer_upload(struct clops_buffer *b, int64_t offset, const void *src, int64_t bytes)
{
    return held_transfer("buffer_upload", b, offset, src, NULL, bytes);
}

int32_t buffer_download(struct clops_buffer *b, int64_t offset, void *dst, int64_t bytes)
{
    return held_transfer("buffer_download", b, offset, NULL, dst, bytes);
}

void buffer_hold(struct clops_buffer *b)
{
    if (b != NULL)
        atomic_fetch_add(&b->holds, 1);
}

/* The last hold gives the memory back to the device's count, then lets go of the pool, which
 * may free it. */
void buffer_unhold(struct clops_buffer *b)
{
    if (b == NULL || atomic_fetch_sub(&b->holds, 1) != 1)
        return;
    struct clops_pool *pool = b->pool;
    pool_free_device_memory(b->dev, b->mem);
    free(b);
    pool_unhold(pool);
}

void buffer_release(struct clops_buffer *b)
{
    if (b != NULL && atomic_exchange(&b->released, 1) == 0)
        buffer_unhold(b);
}

int64_t buffer_size(const struct clops_buffer *b)
{
    return b == NULL ? 0 : b->bytes;
}
