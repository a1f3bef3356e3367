/* buffer_copy.h — copies between device buffers of one pool device (ABI 1.4's buffer_copy, a
 * stream operation): the checks a refused copy fails at once with, and the enqueue of the copy
 * that the stream's job makes, which waits for nothing. */
#ifndef CLOPS_BUFFER_COPY_H
#define CLOPS_BUFFER_COPY_H

#include <stdint.h>

#include "tensor.h"

/* Checks a copy of `bytes` from src (from src_offset) to dst (from dst_offset): both non-NULL,
 * of one pool and one device, and those `pool` and `dev` (the stream's; NULL: not checked), the
 * ranges inside their buffers, bytes >= 0, and the two ranges disjoint when they lie in one
 * cl_mem (the same buffer, two wraps of one cl_mem, or sub-buffers of one parent): OpenCL
 * refuses those copies (CL_MEM_COPY_OVERLAP). CLOPS_ERR_INVALID_ARGUMENT naming the parameter,
 * "<what>: parameter 'src_offset' ...". Touches no device. The caller holds both buffers
 * (buffer_hold) from the check until the copy has completed. */
int32_t buffer_copy_check(const struct clops_buffer *src, int64_t src_offset,
                          const struct clops_buffer *dst, int64_t dst_offset, int64_t bytes,
                          const struct clops_pool *pool, const struct pool_device *dev,
                          const char *what);

/* Enqueues the checked copy on `queue` (of the buffers' device) after the `wait_count` events
 * of `wait` (may be NULL when 0), without waiting; *event (event may be NULL) gets the copy's
 * event, the caller's to release. A copy of 0 bytes enqueues a marker, so that the event and
 * the ordering are the same. On failure nothing is enqueued and *event is NULL; `what` names
 * the entry in the message ("<what>: clEnqueueCopyBuffer failed: CL_..."). */
int32_t buffer_copy_enqueue(cl_command_queue queue, const struct clops_buffer *src,
                            int64_t src_offset, const struct clops_buffer *dst, int64_t dst_offset,
                            int64_t bytes, cl_uint wait_count, const cl_event *wait,
                            cl_event *event, const char *what);

/* The table's buffer_copy, `args` non-NULL and of ABI 1.4's size at least: checked at once
 * (buffer_copy_check against the stream's device), then queued on the stream as a job that
 * holds both buffers until it has ended, with its event in args->event. */
int32_t buffer_copy_submit(struct clops_buffer_copy_args *args);

#endif
