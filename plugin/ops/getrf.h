/* getrf.h — the LU engine behind the lu, solve and lu_solve operators: their argument checks, a
 * call's context (device, queue, kernels, scratch), the row-major working matrix on the device,
 * the blocked factorization (getrf) and the blocked solves with its factors (getrs). One file a
 * job: getrf_check.c, getrf_plan.c, getrf_ctx.c, getrf_call.c, getrf_stage.c, getrf_pivots.c,
 * getrf_panel.c, getrf_laswp.c, getrf_triangle.c, getrf_lanes.c, getrf_factor.c (getrf) and
 * getrf_solve.c (getrs). */
#ifndef CLOPS_OPS_GETRF_H
#define CLOPS_OPS_GETRF_H

#include <stdatomic.h>
#include <stdint.h>

#include "gemm.h"
#include "op.h"
#include "pace.h"
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
    int64_t nb_forced;       /* set before lu_ctx_init: nb (getrf_multi.c's devices share it) */
    int64_t panel_nb;        /* widest inner panel (lu_panel_width): the panel kernels' */
    int32_t panel_wg;        /* work-items of a work-group of the panel and inversion kernels */
    int64_t panel_rows;      /* rows of the panel per work-group of a panel step (about) */
    int64_t resident_groups; /* groups of the resident panel kernel; 0: not used */
    int64_t resident_rows;   /* its most rows per group in a panel panel_nb wide */
    int64_t arrivals;        /* what its arrival counter holds */
    int64_t laswp_chunk;     /* the most interchanges one laswp plan takes */
    cl_kernel copy, copy_int, take_pivots, laswp_plan, laswp_apply, panel, invert, getrs_small,
        resident;
    struct lu_lane main;                      /* its queue is `queue` */
    struct lu_lane side;                      /* queue NULL: no look-ahead */
    cl_mem ipiv_mem;                          /* pivots, then info: they stay on the device */
    cl_mem part_v_mem, part_i_mem, count_mem; /* the panel steps' candidates and counter */
    cl_mem xrow_mem, arrived_mem;             /* the resident kernel's rows and counter */
    int64_t ipiv_bytes;
    int64_t device_ns;
    struct gemm_engine gemm; /* the call's GEMMs' kernels, kept across them */
    cl_event chain_start;    /* pool_chain_begin's marker; NULL when profiling is off */
    int32_t finished;        /* lu_ctx_finish waited for the chain */
    struct op_call *call;    /* the operator's call: cancellation and progress; NULL: none */
    struct pace pace;        /* getrf's outer panels, the call's units of work */
};

/* A row-major matrix in device memory: element (i, j) at offset + i*ld + j of `mem`. */
struct lu_matrix {
    cl_mem mem;
    int64_t offset, ld, rows, cols;
};

/* A tensor made into an lu_matrix: in place when it is row-major, else through a row-major
 * working copy (`copy`) that lu_unstage writes back; with guard_at >= 0 a device tensor always
 * through the copy, written back only where ctx->ipiv_mem[guard_at] is then 0. */
struct lu_staged {
    struct staged_tensor st;
    struct lu_matrix m;
    cl_mem copy;
    const char *param;
    int64_t guard_at;
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

/* Takes the call's device and queue, the block sizes (for a matrix whose factorization or
 * solves take mn columns) and the kernels for `dtype`, once the checks have passed; the context
 * must be zeroed before (the call's plan is). */
int32_t lu_ctx_init(struct lu_ctx *ctx, struct clops_pool *pool, struct pool_device *dev,
                    cl_command_queue queue, const struct op_impl *impl, int32_t dtype, int64_t mn);
/* Waits for the call's kernels, adding their device time: the last device step of a call,
 * before it writes host outputs. */
int32_t lu_ctx_finish(struct lu_ctx *ctx);
/* Frees the context, having waited as lu_ctx_finish unless that was done (so that nothing
 * still running uses what is freed). A no-op on a context never initialised. */
void lu_ctx_release(struct lu_ctx *ctx);

/* ---- The three operators' call steps (op.h) -------------------------------------------------- */

/* What an LU operator's call holds from its enqueue to its release: it must be the first
 * member of the operator's plan. The engine stages its own operands (a row-major working copy
 * of a column-major matrix, the pivots kept on the device), so the operators leave the core's
 * staging out (STAGE_NONE). */
struct lu_call {
    struct lu_ctx ctx;
    struct lu_staged a, b; /* the matrix (a or lu) and the right-hand sides */
    int32_t *piv;          /* npiv + 1: the pivots, then getrf's info, as downloaded or to upload */
    struct lu_multi *multi; /* getrf across devices (getrf_multi.c); NULL: on ctx's device */
};

/* The first step of an enqueue: the context for `dtype`, and room for `npiv` pivots. */
int32_t lu_call_open(struct op_call *call, struct lu_call *l, int32_t dtype, int64_t npiv);
/* getrf, the device steps of lu and solve before their own: opens the call (l = call->plan,
 * room for `npiv` pivots), stages `a` (parameter "a") and factors it with `pivoting`, its pivots
 * and info left in l->ctx.ipiv_mem. */
int32_t lu_call_factor(struct op_call *call, const struct clops_tensor *a, int32_t pivoting,
                       int64_t npiv);
/* Their last device steps: the factors back into a (lu_unstage), the `npiv` pivots into ipiv
 * and info where those are device tensors, all of them downloaded into l->piv, and the wait for
 * the device. */
int32_t lu_call_write_factors(struct op_call *call, const struct clops_tensor *ipiv,
                              const struct clops_tensor *info, int64_t npiv);
/* Their commit step: a, b (where downloaded, and only when info is 0: gesv leaves b as it was
 * for a singular A) and ipiv and info (where in host memory). */
void lu_call_commit(struct op_call *call, const struct clops_tensor *ipiv,
                    const struct clops_tensor *info, int64_t npiv);
/* The release step of all three (op_impl.release). */
void lu_call_release(struct op_call *call);
/* Leaves every tensor parameter to the engine (in an operator's check). */
void lu_call_stage_none(struct op_call *call);

/* ---- The working matrix ---------------------------------------------------------------------- */

/* Stages `t` (its contents uploaded) and views it as a row-major matrix; guard_at as in
 * struct lu_staged (-1: none). */
int32_t lu_stage(struct lu_ctx *ctx, const struct clops_tensor *t, const char *param,
                 int64_t guard_at, struct lu_staged *out);
/* Writes the working matrix back into a device tensor, or downloads it for a host tensor, which
 * lu_commit then writes (tensor_download, tensor_commit: once the call has succeeded). */
int32_t lu_unstage(struct lu_ctx *ctx, struct lu_staged *s);
void lu_commit(struct lu_staged *s);
void lu_staged_release(struct lu_staged *s);

/* Pivots and info stay in ctx->ipiv_mem (n pivots, then info at [n]) from the panels that
 * write them to the solves that read them. lu_clear_info: info = 0, before the panels.
 * lu_upload_pivots: the pivots from host memory that lives until the call's wait (lu_solve's).
 * lu_take_pivots: the pivots from an i32 device tensor (lu_solve's), checked on the device: after
 * lu_clear_info, [n] = n - the first i with ipiv[i] outside 1 .. n, or 0.
 * lu_pivots_out: the device tensors among ipiv and info (either may be NULL) copied on the
 * device, and the n pivots and info downloaded into host[0 .. n] without a wait (read once the
 * call has waited). lu_pivots_commit: the host tensors among them from host[], once the call has
 * succeeded (cannot fail). */
int32_t lu_clear_info(struct lu_ctx *ctx, int64_t n);
int32_t lu_upload_pivots(struct lu_ctx *ctx, const int32_t *ipiv, int64_t n);
int32_t lu_take_pivots(struct lu_ctx *ctx, const struct clops_tensor *ipiv, int64_t n);
int32_t lu_pivots_out(struct lu_ctx *ctx, const struct clops_tensor *ipiv,
                      const struct clops_tensor *info, int64_t n, int32_t *host);
void lu_pivots_commit(const struct clops_tensor *ipiv, const struct clops_tensor *info, int64_t n,
                      const int32_t *host);

/* ---- getrf, getrs ---------------------------------------------------------------------------- */

/* getrf on the working matrix: ctx->ipiv_mem receives min(M, N) = mn 1-based pivots and, at
 * [mn], info: 0 or the first k with U(k, k) = 0. */
int32_t lu_factor(struct lu_ctx *ctx, const struct lu_matrix *a, int32_t pivoting);
/* getrs: b (N x NRHS) = op(A)^-1 b from the factors and the pivots in ctx->ipiv_mem; up to
 * LU_SMALL_SOLVE_N unknowns in one launch (a work-item per column of b), else blocked. */
enum { LU_SMALL_SOLVE_N = 32 };
int32_t lu_solve_factored(struct lu_ctx *ctx, const struct lu_matrix *lu, const struct lu_matrix *b,
                          int32_t trans);
/* getrs on a tensor: stages b into *sb (guard_at as lu_stage's), solves, and writes b back on
 * the device or downloads it for the caller to lu_commit once the call has succeeded (and to
 * release in any case). */
int32_t lu_solve_tensor(struct lu_ctx *ctx, const struct lu_matrix *lu,
                        const struct clops_tensor *b, int32_t trans, int64_t guard_at,
                        struct lu_staged *sb);

/* ---- Inside the engine: what its files share (the operators use none of it) ------------------ */

/* Most work-groups of a panel step: the size of the buffers of their pivot candidates. */
enum { lu_panel_groups_max = 1024 };

/* getrf_plan.c: the block sizes, the panel kernels' shapes and laswp's pieces for a matrix
 * whose factorization or solves take mn columns (ctx's device, operator and dtype set); whether the
 * look-ahead lane is wanted; laswp's columns per work-group. */
void lu_plan(struct lu_ctx *ctx, int64_t mn);
int lu_plan_lookahead(const struct lu_ctx *ctx);
int64_t lu_laswp_cols(const struct lu_ctx *ctx);
/* The resident panel kernel's work-groups for a panel of `rows` rows, and whether they hold
 * all of a panel `width` wide (0 where the kernel is not used); the inner panels' width in an
 * outer panel of `rows` rows. */
int64_t lu_resident_groups(const struct lu_ctx *ctx, int64_t rows);
int lu_resident_holds(const struct lu_ctx *ctx, int64_t rows, int64_t width);
int64_t lu_panel_width(const struct lu_ctx *ctx, int64_t rows);

/* getrf_ctx.c: a device buffer of at least `bytes`, kept across the steps of one call (*have:
 * its size); a kernel's arguments set and the kernel enqueued; a buffer freed and NULL. */
int32_t lu_ensure_buffer(struct lu_ctx *ctx, cl_mem *mem, int64_t *have, int64_t bytes);
int32_t lu_run_kernel(struct lu_ctx *ctx, cl_command_queue queue, cl_kernel kernel,
                      const struct kernel_arg *args, cl_uint count, cl_uint dims,
                      const size_t *global, const size_t *local);
void lu_release_mem(struct pool_device *dev, cl_mem *m);

/* getrf_stage.c: dst = src, rows x cols, each as {offset, row stride, column stride}, unless
 * guard_at >= 0 and ctx->ipiv_mem[guard_at] is then not 0. */
int32_t lu_copy_matrix(struct lu_ctx *ctx, cl_command_queue queue, int64_t rows, int64_t cols,
                       cl_mem src, const cl_long src_geom[3], cl_mem dst, const cl_long dst_geom[3],
                       int64_t guard_at);

/* getrf_laswp.c: LAPACK's laswp, interchanges k_begin .. k_end - 1 of ctx->ipiv_mem, in order
 * or reversed, on the columns of m outside [skip_begin, skip_begin + skip_count). */
int32_t lu_laswp(struct lu_ctx *ctx, struct lu_lane *lane, const struct lu_matrix *m,
                 int64_t skip_begin, int64_t skip_count, int64_t k_begin, int64_t k_end,
                 int32_t reverse);

/* getrf_triangle.c: the inverses of `count` diagonal n x n blocks of m from (b0, b0) into
 * lane->inv_mem at inv_at; B(r0 : r0+n, c0 : c0+cols) = inverse * B(...). */
int32_t lu_invert_diagonal_blocks(struct lu_ctx *ctx, struct lu_lane *lane,
                                  const struct lu_matrix *m, int64_t b0, int64_t n, int64_t count,
                                  int64_t inv_at, int32_t trans, int lower, int unit);
int32_t lu_apply_inverse(struct lu_ctx *ctx, struct lu_lane *lane, int64_t n, int64_t inv_at,
                         const struct lu_matrix *b, int64_t r0, int64_t c0, int64_t cols);

/* getrf_factor.c: the outer panel at (j, j), jb <= NB wide, factored: through the inner blocked
 * level when wider than PANEL_NB, else by the panel kernels; its interchanges applied within
 * it, its pivots into ctx->ipiv_mem[j ..] and a zero pivot into ctx->ipiv_mem[mn]. */
int32_t lu_factor_block(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t j, int64_t jb,
                        int32_t pivoting, int64_t mn);

/* getrf_multi.c: getrf of the staged matrix l->a across the devices of operators.<op>.devices,
 * for a synchronous call large enough to gain (*taken = 0: not taken, nothing done): each
 * device updates the block columns it owns (1-D block-column cyclic; the devices other than
 * the call's hold only those and a panel's place), the
 * panels are broadcast through pinned host memory, and at the end the factors and pivots are
 * in l->a and l->ctx.ipiv_mem as lu_factor leaves them. lu_multi_release: after the call's
 * wait, frees what it holds (NULL is a no-op). */
struct lu_multi;
/* A panel crosses between devices in pieces of about this many bytes (at most
 * LU_PANEL_PIECES_MAX of them): a piece's upload runs while the next one downloads. A
 * variable so that tests can make small panels cross in pieces. */
enum { LU_PANEL_PIECE_BYTES = 16 << 20, LU_PANEL_PIECES_MAX = 8 };
extern int64_t lu_panel_piece_bytes;
/* Block columns are dealt to the devices one at a time up to the first LU_MULTI_SHORT_EIGHTHS
 * eighths of them, then in runs of up to LU_MULTI_RUN_MAX (getrf_multi.c's deal and run_for);
 * lu_multi_run > 0 sets the run (tests: runs at sizes where it would be 1; no block columns
 * dealt one at a time then), lu_multi_short >= 0 how many are dealt one at a time. */
enum { LU_MULTI_RUN_MAX = 8, LU_MULTI_SHORT_EIGHTHS = 0 };
extern int64_t lu_multi_run;
extern int64_t lu_multi_short;
/* The other devices' block columns leave the call's matrix during the steps, all of them
 * within LU_MULTI_LEAVE_STEPS steps, through bridges of at most LU_MULTI_LEAVE_BYTES
 * (getrf_multi.c's plan_leaving); LU_MULTI_SENT_TEXT bounds the debug line that says when each
 * panel reached the host. lu_multi_left_in_steps: how many of the last call's block columns
 * left after its first step (tests). */
enum { LU_MULTI_LEAVE_BYTES = 1 << 30, LU_MULTI_LEAVE_STEPS = 4, LU_MULTI_SENT_TEXT = 1024 };
extern _Atomic int64_t lu_multi_left_in_steps;
/* Test hook: with lu_multi_hold = h >= 0, device 1's updates of step h wait on the host until
 * panel h + 2 has been sent (and 20 ms more), so that where both panels go into the same place
 * of device 1, one that did not wait for those updates would overwrite what they read. With
 * lu_multi_run = 1 and h even: panel h + 1, device 1's, is factored there before the hold
 * (the host waits for it). -1: none. */
extern int64_t lu_multi_hold;
int32_t lu_multi_factor(struct op_call *call, struct lu_call *l, int32_t pivoting, int *taken);
void lu_multi_release(struct lu_multi *m);

/* getrf_panel.c: the rows x jb panel at (j, j) factored on the device, its pivots into
 * ctx->ipiv_mem[j ..] and a zero pivot into ctx->ipiv_mem[mn] (info). */
int32_t lu_factor_panel(struct lu_ctx *ctx, const struct lu_matrix *a, int64_t j, int64_t jb,
                        int32_t pivoting, int64_t mn);

/* getrf_lanes.c: a marker of `queue` that another queue can wait for; `queue` made to wait for
 * *event (released, NULL after); the update right of the panel (j, jb) of the columns
 * [c0, c0 + cols) on `lane`. */
int32_t lu_queue_mark(struct lu_ctx *ctx, cl_command_queue queue, cl_event *event);
int32_t lu_queue_wait_for(struct lu_ctx *ctx, cl_command_queue queue, cl_event *event);
int32_t lu_update_columns(struct lu_ctx *ctx, struct lu_lane *lane, const struct lu_matrix *a,
                          int64_t j, int64_t jb, int64_t c0, int64_t cols, int32_t pivoting);

/* m's element (r0, c0) on as a GEMM operand. */
static inline struct gemm_operand lu_operand(const struct lu_matrix *m, int64_t r0, int64_t c0)
{
    return (struct gemm_operand){m->mem, m->offset + r0 * m->ld + c0, m->ld, 1};
}

/* Columns [c0, c1) of a, as a matrix of its own (rows unchanged, so pivots stay valid). */
static inline struct lu_matrix lu_column_range(const struct lu_matrix *a, int64_t c0, int64_t c1)
{
    struct lu_matrix v = *a;
    v.offset += c0;
    v.cols = c1 - c0;
    return v;
}

#endif
