/* bridge.c — host memory page-locked for every context of a pool (bridge.h). */
#include "bridge.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "host_register.h"
#include "platform.h"
#include "pool.h"
#include "pool_internal.h"

struct bridge_block {
    void *data;
    size_t bytes;
    struct host_registration *pin; /* one USE_HOST_PTR buffer per context */
};

static void block_free(struct bridge_block *b)
{
    if (b == NULL)
        return;
    host_registration_drop(b->pin); /* before the memory the buffers stand on */
    os_aligned_free(b->data);
    free(b);
}

/* A new block: page-aligned memory, rounded up to whole pages, page-locked everywhere. */
static int32_t block_make(struct clops_pool *pool, size_t bytes, const char *op,
                          struct bridge_block **out)
{
    const size_t page = os_page_size();
    if (bytes > SIZE_MAX - page)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: %zu bytes of host memory is too many", op,
                       bytes);
    bytes = (bytes + page - 1) / page * page;
    struct bridge_block *b = calloc(1, sizeof *b);
    void *data = NULL;
    if (b == NULL || (data = os_aligned_alloc(page, bytes)) == NULL) {
        free(b);
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                       "%s: out of host memory for %zu bytes between devices", op, bytes);
    }
    b->data = data;
    b->bytes = bytes;
    int32_t status = host_registration_pin(pool, data, bytes, &b->pin);
    if (status != CLOPS_OK) {
        err_prefix(op);
        block_free(b);
        return status;
    }
    atomic_fetch_add(&pool->bridges_made, 1);
    log_msg(CLOPS_LOG_DEBUG, "bridge: a pinned block of %zu bytes made", bytes);
    *out = b;
    return CLOPS_OK;
}

/* The size of the block made for `bytes`: 64 KiB at least, else rounded up to an eighth of the
 * power of two below it (at most 12.5% more), so that bridges asked for a few rows apart are
 * the same block: a split's copies ask for chunks of 32 MiB less part of a row (33030144,
 * 33546240 and 33554432 bytes in one 16384^2 f64 GEMM on two H200s), and a kept block of one
 * could not serve the next, so that each call pinned a new one and let an old one go. */
static size_t size_class(size_t bytes)
{
    const size_t least = (size_t)64 << 10;
    if (bytes <= least)
        return least;
    size_t top = least;
    while (top <= bytes / 2)
        top *= 2;
    const size_t step = top / 8;
    return bytes / step * step == bytes         ? bytes
           : bytes / step < SIZE_MAX / step - 1 ? (bytes / step + 1) * step
                                                : bytes;
}

int32_t bridge_take(struct clops_pool *pool, size_t bytes, const char *op, struct bridge *out)
{
    *out = (struct bridge){0};
    bytes = size_class(bytes);
    struct bridge_block *found = NULL;
    os_mutex_lock(&pool->registered_lock);
    int best = -1;
    for (int i = 0; i < POOL_BRIDGES; i++) {
        const struct bridge_block *b = pool->bridges[i];
        if (b != NULL && b->bytes >= bytes && (best < 0 || b->bytes < pool->bridges[best]->bytes))
            best = i;
    }
    if (best >= 0) {
        found = pool->bridges[best];
        pool->bridges[best] = NULL;
    }
    os_mutex_unlock(&pool->registered_lock);
    if (found == NULL) {
        const int32_t status = block_make(pool, bytes, op, &found);
        if (status != CLOPS_OK)
            return status;
    }
    *out = (struct bridge){.data = found->data, .bytes = found->bytes, .block = found};
    return CLOPS_OK;
}

size_t bridge_keep_bytes = 0;

void bridge_give(struct clops_pool *pool, struct bridge *b)
{
    struct bridge_block *give = b->block;
    *b = (struct bridge){0};
    if (give == NULL)
        return;
    const size_t bound = bridge_keep_bytes > 0 ? bridge_keep_bytes : pool_host_cache_bound();
    struct bridge_block *evicted[POOL_BRIDGES + 1];
    int count = 0;
    os_mutex_lock(&pool->registered_lock);
    if (give->bytes <= bound) {
        /* Kept in a free slot, else in place of the smallest kept one when it is larger. */
        int slot = -1;
        for (int i = 0; i < POOL_BRIDGES; i++) {
            if (pool->bridges[i] == NULL) {
                slot = i;
                break;
            }
            if (pool->bridges[i]->bytes < give->bytes &&
                (slot < 0 || pool->bridges[i]->bytes < pool->bridges[slot]->bytes))
                slot = i;
        }
        if (slot >= 0) {
            if (pool->bridges[slot] != NULL)
                evicted[count++] = pool->bridges[slot];
            pool->bridges[slot] = give;
            give = NULL;
            /* Within the bound: the largest others let go first. */
            for (;;) {
                size_t kept = 0;
                int largest = -1;
                for (int i = 0; i < POOL_BRIDGES; i++) {
                    if (pool->bridges[i] == NULL)
                        continue;
                    kept += pool->bridges[i]->bytes;
                    if (i != slot &&
                        (largest < 0 || pool->bridges[i]->bytes > pool->bridges[largest]->bytes))
                        largest = i;
                }
                if (kept <= bound || largest < 0)
                    break;
                evicted[count++] = pool->bridges[largest];
                pool->bridges[largest] = NULL;
            }
        }
    }
    os_mutex_unlock(&pool->registered_lock);
    if (count > 0 || give != NULL)
        log_msg(CLOPS_LOG_DEBUG, "bridge: %d pinned blocks let go (kept: at most %d, %zu bytes)",
                count + (give != NULL), (int)POOL_BRIDGES, bound);
    for (int i = 0; i < count; i++)
        block_free(evicted[i]); /* unpinning takes time: not under the lock */
    block_free(give);
}

void bridge_release_all(struct clops_pool *pool)
{
    for (int i = 0; i < POOL_BRIDGES; i++) {
        block_free(pool->bridges[i]);
        pool->bridges[i] = NULL;
    }
}

int64_t bridge_made(const struct clops_pool *pool)
{
    return atomic_load(&pool->bridges_made);
}

/* Bytes a chunk of bridge_copy moves at most: large enough that a transfer's fixed cost is
 * small beside it, small enough that two bridges of it stay cheap to keep pinned. */
enum { BRIDGE_CHUNK = 32 << 20 };

void bridge_rect_terms(const struct bridge_rect *r, size_t r0, size_t rows, size_t width,
                       size_t origin[3], size_t region[3])
{
    const size_t first = r->offset + r0 * r->pitch;
    origin[0] = first % r->pitch;
    origin[1] = first / r->pitch;
    origin[2] = 0;
    region[0] = width;
    region[1] = rows;
    region[2] = 1;
}

static int32_t copy_failed(cl_int rc, const char *op, const char *what, size_t bytes)
{
    return err_cl(rc, "%s: %s %zu bytes between devices failed", op, what, bytes);
}

int32_t bridge_copy(struct clops_pool *pool, const struct bridge_rect *from,
                    const struct bridge_rect *to, size_t rows, size_t width, const char *op)
{
    if (rows == 0 || width == 0)
        return CLOPS_OK;
    const size_t chunk_rows = width >= BRIDGE_CHUNK ? 1 : BRIDGE_CHUNK / width;
    const size_t chunk = (chunk_rows < rows ? chunk_rows : rows) * width;
    struct bridge b[2] = {{0}};
    cl_event uploaded[2] = {NULL, NULL};
    int32_t status = bridge_take(pool, chunk, op, &b[0]);
    if (status == CLOPS_OK && rows > chunk_rows)
        status = bridge_take(pool, chunk, op, &b[1]);
    const size_t zero[3] = {0, 0, 0};
    for (size_t r0 = 0, k = 0; r0 < rows && status == CLOPS_OK; r0 += chunk_rows, k ^= 1) {
        const size_t n = rows - r0 < chunk_rows ? rows - r0 : chunk_rows;
        cl_int rc = CL_SUCCESS;
        if (uploaded[k] != NULL) { /* the bridge's chunk before has reached the destination */
            rc = pool_wait_event(uploaded[k]);
            clReleaseEvent(uploaded[k]);
            uploaded[k] = NULL;
        }
        size_t origin[3], region[3];
        bridge_rect_terms(from, r0, n, width, origin, region);
        if (rc == CL_SUCCESS)
            rc = clEnqueueReadBufferRect(from->queue, from->mem, CL_TRUE, origin, zero, region,
                                         from->pitch, 0, width, 0, b[k].data, 0, NULL, NULL);
        if (rc != CL_SUCCESS) {
            status = copy_failed(rc, op, "downloading", n * width);
            break;
        }
        pool_record_download(pool, (int64_t)(n * width));
        bridge_rect_terms(to, r0, n, width, origin, region);
        rc = clEnqueueWriteBufferRect(to->queue, to->mem, CL_FALSE, origin, zero, region, to->pitch,
                                      0, width, 0, b[k].data, 0, NULL, &uploaded[k]);
        if (rc == CL_SUCCESS)
            rc = clFlush(to->queue);
        if (rc != CL_SUCCESS)
            status = copy_failed(rc, op, "uploading", n * width);
        else
            pool_record_upload(pool, (int64_t)(n * width));
    }
    /* On every path: no upload may still read a bridge given back. */
    for (int k = 0; k < 2; k++)
        if (uploaded[k] != NULL) {
            const cl_int rc = pool_wait_event(uploaded[k]);
            if (rc != CL_SUCCESS && status == CLOPS_OK)
                status = copy_failed(rc, op, "uploading", width);
            clReleaseEvent(uploaded[k]);
        }
    if (status != CLOPS_OK)
        clFinish(to->queue); /* an upload enqueued without an event (its enqueue failed late) */
    bridge_give(pool, &b[0]);
    bridge_give(pool, &b[1]);
    return status;
}
