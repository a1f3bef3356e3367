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

/* A caller's GEMMs on one device: the kernels they took, kept for its next GEMMs (a plan's
 * kernel is chosen from the table of variants, gemm_kernel.c, and created once), so that a
 * call of many GEMMs (LU's updates) looks no program up again. One thread's; released by its
 * caller (gemm_engine_release) once its GEMMs are enqueued. */
enum { GEMM_ENGINE_KERNELS = 8 };
struct gemm_engine {
    struct clops_pool *pool;
    struct pool_device *dev;
    int count;
    struct {
        const char *name; /* the kernel's, a string of gemm_kernel.c's */
        char options[256];
        cl_kernel kernel;
        int fits; /* within the device's work-group limit */
    } kept[GEMM_ENGINE_KERNELS];
};
void gemm_engine_init(struct gemm_engine *e, struct clops_pool *pool, struct pool_device *dev);
void gemm_engine_release(struct gemm_engine *e);

/* C = alpha * A * B + beta * C with A m x k, B k x n, C m x n, all of `dtype` (f32 or f64) on
 * the engine's device, launched on `queue`, not waited for (callers chain it with their own
 * kernels). C needs a unit stride (row- or column-major) and must not overlap A or B. No
 * argument checks: the caller validated its own tensors; extents must be below 2^30. beta = 0
 * ignores C. `caller` names the calling operator in front of a failure's message. */
int32_t gemm_enqueue(struct gemm_engine *e, cl_command_queue queue, int32_t dtype, int64_t m,
                     int64_t n, int64_t k, double alpha, const struct gemm_operand *a,
                     const struct gemm_operand *b, double beta, const struct gemm_operand *c,
                     const char *caller);

#endif
