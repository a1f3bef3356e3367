/* bridge.h — host memory between the devices of a pool, page-locked in every context of the
 * pool (host_register's way: a CL_MEM_USE_HOST_PTR buffer over it in each context), so that
 * a download from one device into it and an upload from it to another both run as DMA. On
 * NVIDIA's OpenCL every path between two GPUs inside OpenCL (migration, a copy between their
 * buffers, a kernel reading a buffer last written on the other) runs at about 1 GB/s, and a
 * pinned transfer at about 55 GB/s each way: data that crosses devices goes through a bridge.
 * Page-locking costs milliseconds, so the pool keeps the bridges calls give back (POOL_BRIDGES,
 * the largest ones) until it is freed. */
#ifndef CLOPS_BRIDGE_H
#define CLOPS_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct clops_pool;
struct bridge_block; /* bridge.c */

struct bridge {
    void *data;   /* page-aligned */
    size_t bytes; /* at least those asked for */
    struct bridge_block *block;
};

/* A bridge of at least `bytes` (a kept one where one is large enough, else a new one); `op`
 * names the caller in a failure's message. */
int32_t bridge_take(struct clops_pool *pool, size_t bytes, const char *op, struct bridge *out);
/* Gives a bridge back (nothing queued may read or write it any more); one never taken (data
 * NULL) is a no-op. The pool keeps it for later calls, within POOL_BRIDGES bridges and
 * bridge_keep_bytes bytes in all (the larger others let go first; one larger than that
 * alone is let go): a split Mandelbrot call's host temporaries are bridges as large as its
 * outputs. */
void bridge_give(struct clops_pool *pool, struct bridge *b);
/* A rows x width bytes rectangle of a device buffer: row r at byte offset + r * pitch of mem,
 * on `queue` (a queue of the buffer's device). */
struct bridge_rect {
    cl_command_queue queue;
    cl_mem mem;
    size_t offset, pitch;
};
/* Rows [r0, r0 + rows) of rectangle r, `width` bytes wide, in clEnqueue{Read,Write}BufferRect's
 * terms: `origin` (its x within a row, as some drivers check) and `region`; the host side is
 * packed (row pitch `width`). */
void bridge_rect_terms(const struct bridge_rect *r, size_t r0, size_t rows, size_t width,
                       size_t origin[3], size_t region[3]);
/* Copies a rows x width bytes rectangle between buffers of two devices through bridges, in
 * chunks of rows double-buffered (a chunk's download from one while the other's upload runs),
 * and returns once the last upload is done; `op` names the caller in a failure's message.
 * Whatever the source's queue holds before runs first, and so on the destination's. */
int32_t bridge_copy(struct clops_pool *pool, const struct bridge_rect *from,
                    const struct bridge_rect *to, size_t rows, size_t width, const char *op);

/* The most bytes of bridges a pool keeps: 0 (default) is the host block cache's bound,
 * pool_host_cache_bound(); a variable so that tests can make it small. */
extern size_t bridge_keep_bytes;

/* pool_free: frees the kept bridges. */
void bridge_release_all(struct clops_pool *pool);
/* Bridges made since the pool was created (for tests: calls reuse them). */
int64_t bridge_made(const struct clops_pool *pool);

#endif
