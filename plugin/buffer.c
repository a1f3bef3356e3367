/* buffer.c — device buffers on a pool's primary device, for tensors that stay on the device
 * between calls: clops' own, or the host's cl_mem wrapped without a copy (ABI 1.4 interop). */
#include <stdint.h>
#include <stdlib.h>

#include "cl_names.h"
#include "tensor.h"

int32_t buffer_create(struct clops_pool *pool, int64_t bytes, struct clops_buffer **out)
{
    return buffer_create_on(pool, 0, bytes, out, "buffer_create");
}

/* buffer_create_on's, from the kept staging buffers where `kept`. */
static int32_t create_on(struct clops_pool *pool, int32_t device, int64_t bytes, int kept,
                         struct clops_buffer **out, const char *entry)
{
    if (out == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'out' is NULL", entry);
    *out = NULL;
    if (pool == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'pool' is NULL", entry);
    if (bytes <= 0)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'bytes' = %lld; expected > 0",
                       entry, (long long)bytes);
#if SIZE_MAX < INT64_MAX
    if (bytes > (int64_t)SIZE_MAX)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'bytes' = %lld; expected at most %zu on this host", entry,
                       (long long)bytes, (size_t)SIZE_MAX);
#endif
    struct clops_buffer *b = calloc(1, sizeof *b);
    if (b == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", entry);
    /* The buffer holds its pool: its memory is counted on its device. */
    int32_t status = pool_hold(pool, entry);
    if (status == CLOPS_OK && (device < 0 || device >= pool_device_count(pool))) {
        status =
            err_set(CLOPS_ERR_NOT_FOUND, "%s: parameter 'device' = %d; the pool has %d device(s)",
                    entry, (int)device, (int)pool_device_count(pool));
        pool_unhold(pool);
        free(b);
        return status;
    }
    if (status == CLOPS_OK) {
        b->pool = pool;
        b->dev = pool_device_at(pool, device);
        b->bytes = bytes;
        atomic_init(&b->holds, 1); /* the host's, until buffer_release */
        atomic_init(&b->released, 0);
        const char *what = kept ? "operands moved between devices" : "parameter 'bytes'";
        b->kept = kept;
        status = kept ? pool_staged_take(pool, b->dev, bytes, entry, what, &b->mem)
                      : pool_alloc_device_memory(b->dev, bytes, entry, what, &b->mem);
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

int32_t buffer_create_on(struct clops_pool *pool, int32_t device, int64_t bytes,
                         struct clops_buffer **out, const char *entry)
{
    return create_on(pool, device, bytes, 0, out, entry);
}

int32_t buffer_create_kept(struct clops_pool *pool, int32_t device, int64_t bytes,
                           struct clops_buffer **out, const char *entry)
{
    return create_on(pool, device, bytes, 1, out, entry);
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
    if (b->wrapped)
        clReleaseMemObject(b->mem); /* the host's: never counted, only held */
    else if (b->kept)
        pool_staged_give(pool, b->dev, b->mem);
    else
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

/* A fixed-size property of the host's cl_mem; an invalid handle is the host's error. */
static int32_t mem_value(cl_mem mem, cl_mem_info param, const char *query, size_t size, void *value)
{
    cl_int rc = clGetMemObjectInfo(mem, param, size, value, NULL);
    if (rc == CL_INVALID_MEM_OBJECT)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "buffer_wrap_cl: parameter 'cl_mem' is not a cl_mem: %s gives %s", query,
                       cl_error_name(rc));
    return rc == CL_SUCCESS ? CLOPS_OK : err_cl(rc, "buffer_wrap_cl: %s failed", query);
}

/* The host's cl_mem is a buffer (not an image) of `dev`'s context; *bytes its size. */
static int32_t check_host_mem(cl_mem mem, const struct pool_device *dev, int64_t *bytes)
{
    cl_mem_object_type type = 0;
    cl_context context = NULL;
    size_t size = 0;
    int32_t status =
        mem_value(mem, CL_MEM_TYPE, "clGetMemObjectInfo(CL_MEM_TYPE)", sizeof type, &type);
    if (status == CLOPS_OK)
        status = mem_value(mem, CL_MEM_CONTEXT, "clGetMemObjectInfo(CL_MEM_CONTEXT)",
                           sizeof context, &context);
    if (status == CLOPS_OK)
        status = mem_value(mem, CL_MEM_SIZE, "clGetMemObjectInfo(CL_MEM_SIZE)", sizeof size, &size);
    if (status != CLOPS_OK)
        return status;
    if (type != CL_MEM_OBJECT_BUFFER)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "buffer_wrap_cl: parameter 'cl_mem' is not a buffer (CL_MEM_TYPE = 0x%x); "
                       "images cannot be wrapped",
                       (unsigned)type);
    if (context != pool_device_context(dev))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "buffer_wrap_cl: parameter 'cl_mem' is a buffer of another cl_context than "
                       "the pool's device %d (CL_MEM_CONTEXT); make the pool on that context "
                       "(pool_create_from_cl)",
                       (int)pool_device_index(dev));
    *bytes = (int64_t)size;
    return CLOPS_OK;
}

/* The wrap's checks, with the pool held: *dev the device it names. */
static int32_t check_wrap(const struct clops_buffer_wrap_args *a, struct pool_device **dev,
                          int64_t *bytes)
{
    const int32_t count = pool_device_count(a->pool);
    if (a->device < 0 || a->device >= count)
        return err_set(CLOPS_ERR_NOT_FOUND,
                       "buffer_wrap_cl: parameter 'device' = %d; the pool has %d device(s)",
                       (int)a->device, (int)count);
    *dev = pool_device_at(a->pool, a->device);
    return check_host_mem(a->cl_mem, *dev, bytes);
}

int32_t buffer_wrap_cl(struct clops_buffer_wrap_args *a)
{
    a->buffer = NULL;
    a->bytes = 0;
    if (a->pool == NULL || a->cl_mem == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "buffer_wrap_cl: parameter '%s' is NULL",
                       a->pool == NULL ? "pool" : "cl_mem");
    /* The buffer holds its pool from here on, as buffer_create's. */
    int32_t status = pool_hold(a->pool, "buffer_wrap_cl");
    if (status != CLOPS_OK)
        return status;
    struct pool_device *dev = NULL;
    int64_t bytes = 0;
    struct clops_buffer *b = NULL;
    status = check_wrap(a, &dev, &bytes);
    if (status == CLOPS_OK && (b = calloc(1, sizeof *b)) == NULL)
        status = err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "buffer_wrap_cl: out of host memory");
    cl_int rc = status == CLOPS_OK ? clRetainMemObject(a->cl_mem) : CL_SUCCESS;
    if (rc != CL_SUCCESS)
        status = err_cl(rc, "buffer_wrap_cl: clRetainMemObject failed");
    if (status != CLOPS_OK) {
        free(b);
        pool_unhold(a->pool);
        return status;
    }
    b->pool = a->pool;
    b->dev = dev;
    b->mem = a->cl_mem;
    b->bytes = bytes;
    b->wrapped = 1;
    atomic_init(&b->holds, 1); /* the host's, until buffer_release */
    atomic_init(&b->released, 0);
    a->buffer = b;
    a->bytes = bytes;
    return CLOPS_OK;
}

int32_t buffer_cl(struct clops_buffer_cl_args *a)
{
    a->cl_mem = a->cl_context = NULL;
    a->device = 0;
    if (a->buffer == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "buffer_cl: parameter 'buffer' is NULL");
    const struct clops_buffer *b = a->buffer;
    a->device = pool_device_index(b->dev);
    a->cl_mem = b->mem;
    a->cl_context = pool_device_context(b->dev);
    return CLOPS_OK;
}
