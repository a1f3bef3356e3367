/* tensor.h — checks on clops_tensor descriptors and staging of host tensors into device
 * memory for the duration of one operator call. */
#ifndef CLOPS_TENSOR_H
#define CLOPS_TENSOR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

struct clops_buffer {
    struct clops_pool *pool; /* held (pool_hold) while the buffer lives */
    struct pool_device *dev;
    cl_mem mem;
    int64_t bytes;
    /* 1: the host's cl_mem (buffer_wrap_cl), retained, not counted in dev's memory, released
     * at the end; 0: clops' own (pool_alloc_device_memory). */
    int32_t wrapped;
    /* 1: clops' own from the pool's kept staging buffers (pool_staged_take), given back there
     * at the end (a split call's moved operands, buffer_create_kept). */
    int32_t kept;
    /* The host's reference until buffer_release, and one per entry point using the buffer
     * (buffer_hold): the last to go frees it. */
    atomic_int holds;
    atomic_int released; /* buffer_release was called */
};

int64_t dtype_size(int32_t dtype); /* 0 for an invalid dtype */
const char *dtype_name(int32_t dtype);

/* Checks that `t` is a well-formed tensor of rank `rank` with a dtype in `dtypes` (bit mask):
 * exactly one of data/buffer, extents >= 0, strides >= 1 on axes of extent > 1, offset >= 0,
 * no int64 overflow of the addressed span in bytes nor of the element count in bytes (so that
 * tensor_span, tensor_elements and any product of extents are safe afterwards), and a device
 * buffer large enough and on `dev`.
 * Messages read "<op>: parameter '<param>' ...". */
int32_t tensor_check(const struct clops_tensor *t, const char *op, const char *param,
                     uint32_t dtypes, int32_t rank, const struct pool_device *dev);
/* While on (for this thread: call_check), tensor_check accepts descriptions, tensors with
 * neither data nor buffer (only their dtype, rank, shape and strides are checked), and
 * tensor_check_disjoint takes them to overlap nothing. */
void tensor_describing(int on);
/* tensor_check for a rank-1 i32 tensor (pivots, flags), and then at least `min_len` elements
 * (exactly `min_len` when `exact`). */
int32_t tensor_check_i32_vector(const struct clops_tensor *t, const char *op, const char *param,
                                int64_t min_len, int32_t exact, const struct pool_device *dev);

/* A view's elements as runs of `run` contiguous elements, one per index of its outer axes
 * (count[i] indices, stride[i] elements apart, innermost first): the axes of extent > 1 sorted
 * by stride (stably), each merged into the one before where it continues it, the first being
 * the run when its stride is 1. Transfers read and write these runs only, never the gaps
 * between them, which may be other views' elements that other threads are writing (a padded C
 * whose column blocks threads compute); host temporaries hold the runs back to back in this
 * order, "packed". */
struct view_runs {
    int64_t run;
    int32_t outer;
    int64_t count[CLOPS_MAX_RANK], stride[CLOPS_MAX_RANK];
};

void view_runs(const struct clops_tensor *t, struct view_runs *v); /* a checked, non-empty t */

/* Elements from the tensor's first addressed element to its last, inclusive (0 when empty). */
int64_t tensor_span(const struct clops_tensor *t);
int64_t tensor_elements(const struct clops_tensor *t);

/* For a rank-2 tensor: row-major (unit column stride, rows far enough apart not to overlap) or
 * column-major. Strides of axes of extent 1 do not matter. */
int tensor_is_row_major(const struct clops_tensor *t);
int tensor_is_column_major(const struct clops_tensor *t);
/* Bytes of an upload's chunk. 16 MiB: the one chunk's copy that overlaps no DMA (the first)
 * costs ~1.5 ms at a host copy's ~10 GB/s, under 5% of a 512 MiB upload (an 8192^2 f64
 * matrix), while a chunk's enqueue and wait, some 20 us, are ~3% of its DMA at 25-50 GB/s;
 * and two blocks per upload in flight pin 32 MiB. A variable only so that tests can make small
 * views span many chunks. */
enum { TENSOR_STAGE_CHUNK = 16 << 20 };
extern size_t tensor_stage_chunk;
/* CPU devices get one write straight from the view instead (upload_direct in tensor_stage.c says
 * why); tests, which run on PoCL, set this to 1 to stage there too. */
extern int tensor_stage_on_cpu;

/* A tensor made reachable by a kernel: `mem` + `offset` (elements). Host tensors get a
 * temporary buffer laid out as their span, of which only the tensor's elements are ever
 * transferred, in either direction: the gaps between them (padding, or other views' elements
 * that other threads may be writing) are neither read nor written in host memory. Device
 * tensors are used in place. */
struct staged_tensor {
    const struct clops_tensor *t;
    cl_mem mem;
    int64_t offset;
    int32_t temporary;
    struct pool_device *dev; /* the device staged for, where a temporary `mem` lives */
    struct clops_pool *pool; /* whose host blocks `host` and `block` come from */
    size_t host_capacity;
    void *host;         /* tensor_download's copy of the elements; freed by commit */
    int32_t host_spans; /* 1: `host` is laid out as the device buffer (the view's span) */
    /* The upload's staging blocks: its writes, not waited for, may read them until the call's
     * wait, so they go back to the pool only with tensor_release. */
    void *block[2];
    size_t block_capacity[2];
    /* The host's registered range the upload read straight from (host_register.h): held, so
     * that it stays page-locked until tensor_release, after the call's one wait. */
    struct host_registration *registered;
};

/* Stages `t` for `dev`. upload = 1 copies the host tensor's elements in (inputs, and outputs
 * that kernels read); outputs that kernels only write need none. The copy goes through two
 * pinned blocks of the pool (pool_host_take) in chunks of at most tensor_stage_chunk bytes of
 * the view's elements, packed: the copy of a chunk into one overlaps the DMA of the chunk before
 * from the other (on a CPU device, unless tensor_stage_on_cpu: one write from the view). The
 * writes are enqueued without waiting for the last of them: the host memory they read (the
 * view, or the blocks `out` keeps) must stay as it is until the call has waited for its queue,
 * before tensor_release. */
int32_t tensor_stage(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                     const struct clops_tensor *t, int32_t upload, struct staged_tensor *out,
                     const char *op, const char *param);
/* Copies host view `t` (a dense view, or one whose runs make a rectangle) into device buffer
 * `mem` of `dev` packed (its elements in view_runs' order, from byte 0), through the pool's
 * staging blocks as tensor_stage does, and returns once every write is done: `mem` can then be
 * read on any queue of the device, and `t` changes nothing more (a split call's operand that
 * several parts on a device read, call_split.c). */
int32_t tensor_upload_packed(struct clops_pool *pool, struct pool_device *dev,
                             cl_command_queue queue, const struct clops_tensor *t, cl_mem mem,
                             const char *op, const char *param);
/* A failed call leaves host outputs untouched, even when a device step or a download fails
 * after others succeeded: outputs are downloaded first (tensor_download, enqueued without a
 * wait into a host temporary), and written into host memory only once the call has waited for
 * its queue and every device step and download of it has succeeded (tensor_commit, which cannot
 * fail). The cost is a host copy of each output's elements and one pass over them, next to a
 * transfer over the bus. No-ops for device tensors. */
int32_t tensor_download(struct clops_pool *pool, cl_command_queue queue, struct staged_tensor *s,
                        const char *op, const char *param);
void tensor_commit(struct staged_tensor *s);
/* Frees the temporary buffer and an uncommitted download. */
void tensor_release(struct staged_tensor *s);

/* Reads or writes the first n elements of a rank-1 i32 host tensor (checked), and nothing
 * between them: what lies between strided elements may be another view's. Device pivots and
 * flags never come back to the host inside a call (LU's stay on the device, lu_solve checks its
 * own there), so these are host memory only. */
void tensor_read_i32(const struct clops_tensor *t, int32_t *values, int64_t n);
void tensor_write_i32(const struct clops_tensor *t, const int32_t *values, int64_t n);

/* A host tensor over `data` with t's dtype, shape and order of axes in memory but no gaps
 * (tensor_elements(t) elements): a temporary that tensor_unpack then writes into t's memory,
 * only into t's elements. */
void tensor_packed_like(const struct clops_tensor *t, void *data, struct clops_tensor *out);
void tensor_unpack(struct clops_pool *pool, const struct clops_tensor *t, const void *packed);

/* Whether x and y share a byte of an element (same host memory or same device buffer; the
 * gaps between elements do not count), of any dtypes. Exact in O(1) for blocks of one matrix
 * with one leading dimension (rank 2, a unit stride: the BLAS case), and for other views as
 * long as the search takes at most 2^22 steps (one per pair of runs along their outer axes
 * past the first, and per run where two views step by different pitches); past that, and for
 * byte ranges over 2^62, conservative (1). Both tensors already checked. */
int tensor_views_overlap(const struct clops_tensor *x, const struct clops_tensor *y);

/* An operator's tensor parameter for tensor_check_disjoint; t = NULL when left out. */
struct tensor_use {
    const struct clops_tensor *t;
    const char *name;
    int32_t written;
};
/* The overlap check of every operator: no two of `uses` share an element when either of them
 * is written (inputs may share). CLOPS_ERR_INVALID_ARGUMENT naming both, with `hint` (or NULL)
 * appended to the message. */
int32_t tensor_check_disjoint(const char *op, const struct tensor_use *uses, int32_t count,
                              const char *hint);

/* Device buffers (buffer.c), behind the table's buffer_* members. */
int32_t buffer_create(struct clops_pool *pool, int64_t bytes, struct clops_buffer **out);
/* The same on the pool's device `device` (ABI 1.4's buffer_create_on), `entry` naming the
 * entry point in messages. */
int32_t buffer_create_on(struct clops_pool *pool, int32_t device, int64_t bytes,
                         struct clops_buffer **out, const char *entry);
/* The same for clops' own use (a split call's operands moved to another device), its memory
 * taken from the pool's kept staging buffers and given back there when it is freed: on NVIDIA's
 * OpenCL a release waits for the device to go idle (pool_internal.h), and a new buffer of a
 * GiB costs milliseconds to map. */
int32_t buffer_create_kept(struct clops_pool *pool, int32_t device, int64_t bytes,
                           struct clops_buffer **out, const char *entry);
int32_t buffer_upload(struct clops_buffer *b, int64_t offset, const void *src, int64_t bytes);
int32_t buffer_download(struct clops_buffer *b, int64_t offset, void *dst, int64_t bytes);
/* Drops the host's reference (a second release does nothing): the buffer is freed now, or when
 * the last call using it ends. */
void buffer_release(struct clops_buffer *b);
/* Holds b (NULL is a no-op) for the duration of an entry point using it, so that a host thread
 * releasing it meanwhile does not free it under the call; buffer_unhold lets go. */
void buffer_hold(struct clops_buffer *b);
void buffer_unhold(struct clops_buffer *b);
int64_t buffer_size(const struct clops_buffer *b);
/* The table's buffer_wrap_cl and buffer_cl (ABI 1.4 interop), `args` non-NULL and of ABI 1.4's
 * size at least: a buffer over the host's cl_mem, and a buffer's cl_mem and context. */
int32_t buffer_wrap_cl(struct clops_buffer_wrap_args *args);
int32_t buffer_cl(struct clops_buffer_cl_args *args);

#endif
