/* lu.h — the machinery shared by lu.c (lu) and solve.c (solve, lu_solve): argument checks, the
 * row-major working matrix on the device, the blocked factorization and the blocked solves. */
#ifndef CLOPS_OPS_LU_H
#define CLOPS_OPS_LU_H

#include <stdint.h>

#include "pool.h"
#include "tensor.h"

enum { LU_DTYPES = CLOPS_DTYPE_BIT(CLOPS_F32) | CLOPS_DTYPE_BIT(CLOPS_F64) };
enum lu_pivoting { LU_PIVOTING_PARTIAL = 0, LU_PIVOTING_NONE = 1 };

/* One call's device, queue, kernels and scratch buffers. */
struct lu_ctx {
    struct clops_pool *pool;
    struct pool_device *dev;
    cl_command_queue queue;
    const char *op; /* the operator's name, for messages and its configuration */
    int32_t dtype;
    int64_t elem_size;
    int64_t nb;              /* outer panel width, and the triangular solves' block */
    int64_t panel_nb;        /* inner panel width: the panel kernel's */
    int32_t panel_wg;        /* work-items of a work-group of the panel and inversion kernels */
    int64_t panel_rows;      /* rows of the panel per work-group of a panel step (about) */
    int64_t resident_groups; /* groups of the resident panel kernel; 0: not used */
    int64_t resident_rows;   /* its most rows per group */
    int64_t arrivals;        /* what its arrival counter holds */
    cl_kernel copy, laswp, panel, invert, resident;
    cl_mem ipiv_mem, inv_mem, tmp_mem;        /* pivots; an inverted diagonal block; a block row */
    cl_mem part_v_mem, part_i_mem, count_mem; /* the panel steps' candidates and counter */
    cl_mem xrow_mem, arrived_mem;             /* the resident kernel's rows and counter */
    int64_t ipiv_bytes, inv_bytes, tmp_bytes;
    int64_t device_ns;
    cl_event chain_start; /* pool_chain_begin's marker; NULL when profiling is off */
    int32_t finished;     /* lu_ctx_finish waited for the chain */
};

/* A row-major matrix in device memory: element (i, j) at offset + i*ld + j of `mem`. */
struct lu_matrix {
    cl_mem mem;
    int64_t offset, ld, rows, cols;
};

/* A tensor made into an lu_matrix: in place when it is row-major, else through a row-major
 * working copy (`copy`) that lu_unstage writes back. */
struct lu_staged {
    struct staged_tensor st;
    struct lu_matrix m;
    cl_mem copy;
    const char *param;
};

/* Checks: a f32/f64 rank-2 tensor, row- or column-major with its leading dimension at least the
 * extent it steps over, f64 only on a device with double precision. */
int32_t lu_check_matrix(const struct clops_tensor *t, const char *op, const char *param,
                        const struct pool_device *dev);
/* A rank-1 i32 tensor of at least `min_len` elements (exactly when `exact`). */
int32_t lu_check_i32_vector(const struct clops_tensor *t, const char *op, const char *param,
                            int64_t min_len, int32_t exact, const struct pool_device *dev);
int32_t lu_check_pivoting(int32_t pivoting, const char *op);

int32_t lu_ctx_init(struct lu_ctx *ctx, struct clops_pool *pool, struct pool_device *dev,
                    const char *op, int32_t dtype);
/* Waits for the call's kernels, adding their device time: the last device step of a call,
 * before it writes host outputs. */
int32_t lu_ctx_finish(struct lu_ctx *ctx);
/* Waits as lu_ctx_finish unless that was done, and frees the context; returns the wait's
 * status. */
int32_t lu_ctx_release(struct lu_ctx *ctx);

/* Stages `t` (its contents uploaded) and views it as a row-major matrix. */
int32_t lu_stage(struct lu_ctx *ctx, const struct clops_tensor *t, const char *param,
                 struct lu_staged *out);
/* Writes the working matrix back into a device tensor, or downloads it for a host tensor, which
 * lu_commit then writes (tensor_download, tensor_commit: once the call has succeeded). */
int32_t lu_unstage(struct lu_ctx *ctx, struct lu_staged *s);
void lu_commit(struct lu_staged *s);
void lu_staged_release(struct lu_staged *s);

/* Reads or writes the first n elements of a rank-1 i32 tensor, host or device, and nothing
 * between them. Writing host memory cannot fail. */
int32_t lu_read_i32(struct lu_ctx *ctx, const struct clops_tensor *t, int32_t *values, int64_t n);
int32_t lu_write_i32(struct lu_ctx *ctx, const struct clops_tensor *t, const int32_t *values,
                     int64_t n);
/* ipiv[0 .. n-1] = piv, info[0] = inf: those of the two on the device as a device step
 * (on_host = 0), those in host memory as the commit of a call that succeeded (on_host = 1,
 * which cannot fail). */
int32_t lu_write_pivots(struct lu_ctx *ctx, const struct clops_tensor *ipiv, const int32_t *piv,
                        int64_t n, const struct clops_tensor *info, int32_t inf, int32_t on_host);

/* getrf on the working matrix: ipiv receives min(M, N) 1-based pivots, *info 0 or the first
 * k with U(k, k) = 0. */
int32_t lu_factor(struct lu_ctx *ctx, const struct lu_matrix *a, int32_t pivoting, int32_t *ipiv,
                  int32_t *info);
/* getrs: b (N x NRHS) = op(A)^-1 b from the factors and pivots of lu_factor. */
int32_t lu_solve_factored(struct lu_ctx *ctx, const struct lu_matrix *lu, const int32_t *ipiv,
                          const struct lu_matrix *b, int32_t trans);

#endif
