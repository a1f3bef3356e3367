/* gemm.h — the GEMM kernel as an internal building block for other operators (LU's trailing
 * update, blocked triangular solves), on device memory that the caller already holds. */
#ifndef CLOPS_OPS_GEMM_H
#define CLOPS_OPS_GEMM_H

#include <stdint.h>

#include "pool.h"

/* A matrix in device memory: element (i, j) at element index offset + i*row_stride +
 * j*col_stride of `mem`. A transposed view swaps the strides, so op() needs no flag. */
struct gemm_operand {
    cl_mem mem;
    int64_t offset, row_stride, col_stride;
};

/* C = alpha * A * B + beta * C with A m x k, B k x n, C m x n, all of `dtype` (f32 or f64) on
 * `dev`, launched on `queue` and waited for; adds the kernel time to *device_ns (may be NULL).
 * C needs a unit stride (row- or column-major) and must not overlap A or B. No argument checks:
 * the caller validated its own tensors; extents must be below 2^30. beta = 0 ignores C.
 * `caller` names the calling operator in front of a failure's message. */
int32_t gemm_enqueue(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                     int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha,
                     const struct gemm_operand *a, const struct gemm_operand *b, double beta,
                     const struct gemm_operand *c, int64_t *device_ns, const char *caller);

#endif
