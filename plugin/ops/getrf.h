/* getrf.h — the LU engine behind the lu, solve and lu_solve operators: their argument checks, a
 * call's context (device, queue, kernels, scratch), the row-major working matrix on the device,
 * the blocked factorization (getrf) and the blocked solves with its factors (getrs). */
#ifndef CLOPS_OPS_GETRF_H
#define CLOPS_OPS_GETRF_H

#include <stdint.h>

#include "op.h"
#include "pool.h"
#include "tensor.h"

enum { LU_DTYPES = CLOPS_DTYPE_BIT(CLOPS_F32) | CLOPS_DTYPE_BIT(CLOPS_F64) };
enum lu_pivoting { LU_PIVOTING_PARTIAL = 0, LU_PIVOTING_NONE = 1 };

/* The settings of lu, solve and lu_solve (operators.<name>.nb, panel_nb, panel_rows,
 * panel_resident, panel_groups), each operator configured on its own. */
extern const struct op_settings lu_settings;

/* A queue of a call and the scratch its steps use there: the inverse of a diagonal block, a
 * block row of the right-hand side of apply_inverse and laswp's plan. A call has its main lane and,
 * with look-ahead, a side lane whose queue runs the trailing updates beside the next panel. */
struct lu_lane {
    cl_command_queue queue;
    cl_mem inv_mem, tmp_mem;
    cl_mem plan_mem; /* laswp's row moves */
    int64_t inv_bytes, tmp_bytes, plan_bytes;
};

/* One call's device, queue, kernels and scratch buffers. */
struct lu_ctx {
    struct clops_pool *pool;
    struct pool_device *dev;
    cl_command_queue queue;
    const struct op_impl *impl; /* the operator: its settings */
    const char *op; /* the operator's name, for messages, its configuration and its statistics */
    int32_t dtype;
    int64_t elem_size;
    int64_t nb;              /* outer panel width, and the triangular solves' block */
    int64_t panel_nb;        /* inner panel width: the panel kernel's */
    int32_t panel_wg;        /* work-items of a work-group of the panel and inversion kernels */
    int64_t panel_rows;      /* rows of the panel per work-group of a panel step (about) */
    int64_t resident_groups; /* groups of the resident panel kernel; 0: not used */
    int64_t resident_rows;   /* its most rows per group */
    int64_t arrivals;        /* what its arrival counter holds */
    int64_t laswp_chunk;     /* the most interchanges one laswp plan takes */
    cl_kernel copy, laswp_plan, laswp_apply, panel, invert, resident;
    struct lu_lane main;                      /* its queue is `queue` */
    struct lu_lane side;                      /* queue NULL: no look-ahead */
    cl_mem ipiv_mem;                          /* pivots */
    cl_mem part_v_mem, part_i_mem, count_mem; /* the panel steps' candidates and counter */
    cl_mem xrow_mem, arrived_mem;             /* the resident kernel's rows and counter */
    int64_t ipiv_bytes;
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

/* ---- Checks ---------------------------------------------------------------------------------- */

/* A f32/f64 rank-2 tensor, row- or column-major with its leading dimension at least the extent
 * it steps over, f64 only on a device with double precision. */
int32_t lu_check_matrix(const struct clops_tensor *t, const char *op, const char *param,
                        const struct pool_device *dev);
/* A square matrix (already checked by lu_check_matrix). */
int32_t lu_check_square(const struct clops_tensor *t, const char *op, const char *param);
/* b: N x NRHS of the dtype of a (parameter `a_param`, already checked), which is N x N. */
int32_t lu_check_rhs(const struct pool_device *dev, const struct clops_tensor *a,
                     const char *a_param, const struct clops_tensor *b, const char *op);

/* ---- A call's context ------------------------------------------------------------------------ */

/* Takes the call's device and queue, the block sizes (for a matrix of `rows` rows whose
 * factorization or solves take mn columns) and the kernels for `dtype`, once the checks have
 * passed; the context must be zeroed before (the call's plan is). */
int32_t lu_ctx_init(struct lu_ctx *ctx, struct clops_pool *pool, struct pool_device *dev,
                    cl_command_queue queue, const struct op_impl *impl, int32_t dtype, int64_t rows,
                    int64_t mn);
/* Waits for the call's kernels, adding their device time: the last device step of a call,
 * before it writes host outputs. */
int32_t lu_ctx_finish(struct lu_ctx *ctx);
/* Frees the context, having waited as lu_ctx_finish unless that was done (so that nothing
 * still running uses what is freed). A no-op on a context never initialised. */
void lu_ctx_release(struct lu_ctx *ctx);

/* ---- The three operators' call steps (op.h) -------------------------------------------------- */

/* What an LU operator's call holds from its enqueue to its release: it must be the first
 * member of the operator's plan. The engine stages its own operands (a row-major working copy
 * of a column-major matrix, pivots read or written on the host), so the operators leave the
 * core's staging out (STAGE_NONE). */
struct lu_call {
    struct lu_ctx ctx;
    struct lu_staged a, b; /* the matrix (a or lu) and the right-hand sides */
    int32_t *piv;          /* pivots, on the host */
    int32_t inf;           /* getrf's info */
};

/* The first step of an enqueue: the context for `dtype` and a matrix of `rows` rows, and room
 * for `npiv` pivots. */
int32_t lu_call_open(struct op_call *call, struct lu_call *l, int32_t dtype, int64_t rows,
                     int64_t npiv);
/* getrf, the device steps of lu and solve before their own: opens the call (l = call->plan,
 * room for `npiv` pivots), stages `a` (parameter "a") and factors it with `pivoting`, its pivots
 * into l->piv and its info into l->inf. */
int32_t lu_call_factor(struct op_call *call, const struct clops_tensor *a, int32_t pivoting,
                       int64_t npiv);
/* Their last device steps: the factors back into a (lu_unstage), the `npiv` pivots into ipiv
 * and info where those are device tensors, and the wait for the device. */
int32_t lu_call_write_factors(struct op_call *call, const struct clops_tensor *ipiv,
                              const struct clops_tensor *info, int64_t npiv);
/* Their commit step: a and b (where downloaded) and ipiv and info (where in host memory). */
void lu_call_commit(struct op_call *call, const struct clops_tensor *ipiv,
                    const struct clops_tensor *info, int64_t npiv);
/* The release step of all three (op_impl.release). */
void lu_call_release(struct op_call *call);
/* Leaves every tensor parameter to the engine (in an operator's check). */
void lu_call_stage_none(struct op_call *call);

/* ---- The working matrix ---------------------------------------------------------------------- */

/* Stages `t` (its contents uploaded) and views it as a row-major matrix. */
int32_t lu_stage(struct lu_ctx *ctx, const struct clops_tensor *t, const char *param,
                 struct lu_staged *out);
/* Writes the working matrix back into a device tensor, or downloads it for a host tensor, which
 * lu_commit then writes (tensor_download, tensor_commit: once the call has succeeded). */
int32_t lu_unstage(struct lu_ctx *ctx, struct lu_staged *s);
void lu_commit(struct lu_staged *s);
void lu_staged_release(struct lu_staged *s);

/* ipiv[0 .. n-1] = piv, info[0] = inf: those of the two on the device as a device step
 * (on_host = 0), those in host memory as the commit of a call that succeeded (on_host = 1,
 * which cannot fail). */
int32_t lu_write_pivots(struct lu_ctx *ctx, const struct clops_tensor *ipiv, const int32_t *piv,
                        int64_t n, const struct clops_tensor *info, int32_t inf, int32_t on_host);

/* ---- getrf, getrs ---------------------------------------------------------------------------- */

/* getrf on the working matrix: ipiv receives min(M, N) 1-based pivots, *info 0 or the first
 * k with U(k, k) = 0. */
int32_t lu_factor(struct lu_ctx *ctx, const struct lu_matrix *a, int32_t pivoting, int32_t *ipiv,
                  int32_t *info);
/* getrs: b (N x NRHS) = op(A)^-1 b from the factors and pivots of lu_factor. */
int32_t lu_solve_factored(struct lu_ctx *ctx, const struct lu_matrix *lu, const int32_t *ipiv,
                          const struct lu_matrix *b, int32_t trans);
/* getrs on a tensor: stages b into *sb, solves, and writes b back on the device or downloads it
 * for the caller to lu_commit once the call has succeeded (and to release in any case). */
int32_t lu_solve_tensor(struct lu_ctx *ctx, const struct lu_matrix *lu, const int32_t *ipiv,
                        const struct clops_tensor *b, int32_t trans, struct lu_staged *sb);

#endif
