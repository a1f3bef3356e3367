/* gemm_impl.h — what the gemm operator's files share (other operators use gemm.h): its plan, its
 * tiles per device and the kernel chosen for a plan. One file a job: gemm.c (the descriptor),
 * gemm_check.c (the check step and the plan), gemm_tune.c (tiles per device, settings),
 * gemm_kernel.c (the kernel for a plan and its arguments), gemm_tf32.c (tf32 from packed
 * operands), gemm_launch.c (the enqueue step and gemm_enqueue). */
#ifndef CLOPS_OPS_GEMM_IMPL_H
#define CLOPS_OPS_GEMM_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "call.h"
#include "gemm.h"
#include "op.h"
#include "pool.h"
#include "tensor.h"

extern const char gemm_op_name[]; /* "gemm", in messages */

/* The dtypes of a, b and c (one of them for all three). */
enum { GEMM_DTYPES = CLOPS_DTYPE_BIT(CLOPS_F32) | CLOPS_DTYPE_BIT(CLOPS_F64) };

/* The precision parameter's values, in the order of the descriptor's strings. */
enum { GEMM_FP32, GEMM_3XTF32, GEMM_TF32 };

/* The parameters' positions in the descriptor (gemm.c's gemm_params). */
enum { P_A, P_B, P_C, P_TRANS_A, P_TRANS_B, P_ALPHA, P_BETA, P_PRECISION };

/* What the kernel computes: the row-major M x N matrix Ck (ldc) = alpha * Ak * Bk + beta * Ck,
 * with Ak(i,k) = ka[offset + i*ka_si + k*ka_sk] and Bk(k,j) = kb[offset + k*kb_sk + j*kb_sj],
 * each with its tensor's offset. For a row-major C that is op(A) op(B) itself; for a
 * column-major C it is C^T = op(B)^T op(A)^T, so the kernel only ever writes rows (coalesced)
 * whatever the layout. */
struct gemm_plan {
    int32_t dtype;
    int32_t precision; /* GEMM_FP32, GEMM_3XTF32 or GEMM_TF32 (f32 only) */
    int64_t m, n, k;   /* of the kernel's product; k = 0 when A and B are not read */
    const struct clops_tensor *ka, *kb, *c;
    const char *ka_param, *kb_param; /* "a" or "b", for messages */
    int64_t ka_si, ka_sk, kb_sk, kb_sj, ldc;
    double alpha, beta;
    int64_t blocks; /* launches over blocks of C, paced (gemm_launch.c); 1: one over all of C */
    /* One slab of K of a product cut along K (gemm_launch.c): GEMM_CARRY_IN starts each sum
     * from w (w_offset, row stride ldw, the kernel's C shape), GEMM_CARRY_OUT leaves it there and
     * C untouched; 0: the whole product. Only kernels that carry take such a plan. */
    int32_t carry;
    cl_mem w;
    int64_t w_offset, ldw;
};

enum { GEMM_CARRY_IN = OP_CARRY_IN, GEMM_CARRY_OUT = OP_CARRY_OUT };

/* Tests: the slabs of K that gemm_run cuts a call into, its kernel carrying sums from one to the
 * next (0 or 1: none; gemm_launch.c), and the slabs launched so. */
extern int gemm_k_slabs;
extern atomic_llong gemm_slab_launches;

/* ---- The operator's steps -------------------------------------------------------------------- */

/* gemm_check.c: every check, before anything touches the device; fills the plan (call->plan). */
int32_t gemm_check(struct op_call *call);
/* gemm_launch.c: the kernel over the whole of C on call->queue, in one launch or, for a large
 * submitted call, in blocks between which it may be cancelled; the commit step, which completes
 * the progress of those blocks. */
int32_t gemm_run(struct op_call *call);
void gemm_commit(struct op_call *call);
/* gemm_cut.c: the call cut into parts by blocks of C for a split across devices, and a part
 * into pieces (op.h's cut and pieces). */
int32_t gemm_cut(const struct op_call *call, int32_t count, const double *shares,
                 struct op_part *parts);
int32_t gemm_pieces(const struct op_call *call, const struct op_part *part, int32_t moves,
                    int32_t room, int grid, int32_t slabs, struct op_part *pieces);
/* gemm_tune.c: the tiles as settings (operators.gemm.tile_m, ...). */
extern const struct op_settings gemm_settings;

/* ---- Tiles per device (gemm_tune.c) ---------------------------------------------------------- */

/* The -D parameters of kernels/gemm.cl (its comment explains them). */
struct gemm_tiles {
    int32_t tile_m, tile_n, tile_k; /* the C block of a work-group, and the K step */
    int32_t wpt_m, wpt_n;           /* the C block of a work-item, in registers */
    int32_t vw;                     /* rows/columns per local vector load (-DVW): 1 strided,
                                       4 for GPUs, = wpt for CPUs (contiguous blocks) */
};

/* The -D parameters of kernels/gemm_mma.cl and gemm_tf32.cl (gemm_mma_core.cl explains them). */
struct gemm_mma_tiles {
    int32_t tile_m, tile_n, tile_k; /* the C block of a work-group, and the K step */
    int32_t warp_m, warp_n;         /* the C block of a warp */
    int32_t shape;                  /* the mma.sync instruction: 884 = m8n8k4, 1684 = m16n8k4 */
    int32_t stages;                 /* tiles in local memory at once (the copies' lead + 1) */
};

/* The -D parameters of kernels/gemm_simt.cl's gemm_simt (gemm_tune.c says why). */
struct gemm_simt_tiles {
    int32_t tile_m, tile_n, tile_k; /* the C block of a work-group, and the K step */
    int32_t thread_m, thread_n;     /* the C block of a work-item */
    int32_t warp_tm;                /* a warp's work-items along M */
    int32_t stages;                 /* tiles in local memory at once */
};

/* A table row: `large` when it gives every compute unit a work-group, else `small`. */
struct gemm_mma_tuning {
    int32_t min_cc; /* NVIDIA compute capability (major * 10 + minor) from which it applies */
    struct gemm_mma_tiles large, small;
};
struct gemm_simt_tuning {
    int32_t min_cc;
    struct gemm_simt_tiles large, small;
};

/* For a device that cannot run the chosen tiles of the portable kernel. */
extern const struct gemm_tiles gemm_fallback_tiles;
/* gemm_tf32's tiles (gemm_tune.c says why). */
extern const struct gemm_mma_tiles gemm_tf32_packed_tiles;

/* The blocks of tile_m x tile_n that cover an m x n C, one work-group each (any kernel). */
int64_t gemm_blocks_covering(int64_t m, int64_t n, int32_t tile_m, int32_t tile_n);
/* The portable kernel's tiles for an m x n C on `dev` (the table's), their work-groups, their
 * work-items a group and their local memory; the tiles with the pool's settings in place of
 * the table's; whether tiles divide as the kernel needs; whether any tile is configured. */
struct gemm_tiles gemm_tiles_for_call(const struct pool_device *dev, int64_t m, int64_t n);
int64_t gemm_tiles_group_count(const struct gemm_tiles *t, int64_t m, int64_t n);
size_t gemm_tiles_group_size(const struct gemm_tiles *t);
int64_t gemm_tiles_local_bytes(const struct gemm_tiles *t, int64_t elem_size);
struct gemm_tiles gemm_tiles_with_settings(const struct clops_pool *pool, struct gemm_tiles t);
int gemm_tiles_are_valid(const struct gemm_tiles *t);
int gemm_tiles_configured(const struct clops_pool *pool);
/* The tensor-core tiles for a dtype and precision on `dev` (NULL: none), their work-items a
 * group and their local memory. */
const struct gemm_mma_tuning *gemm_mma_tuning_for(const struct pool_device *dev, int32_t dtype,
                                                  int32_t precision);
size_t gemm_mma_group_size(const struct gemm_mma_tiles *t);
int64_t gemm_mma_local_bytes(const struct gemm_mma_tiles *t, int64_t elem_size);
/* gemm_simt's tiles on `dev` (NULL: none), their work-items a group and their local memory. */
const struct gemm_simt_tuning *gemm_simt_tuning_for(const struct pool_device *dev);
size_t gemm_simt_group_size(const struct gemm_simt_tiles *t);
int64_t gemm_simt_local_bytes(const struct gemm_simt_tiles *t);

/* ---- The kernel for a plan (gemm_kernel.c) --------------------------------------------------- */

/* A kernel ready to launch: one work-group of `local` work-items per block of C, on a 1-D range
 * (the kernels say why). */
struct gemm_launch {
    cl_kernel kernel;
    size_t local, global;
    int32_t tile_m, tile_n; /* the block of C a work-group computes */
    int32_t tile_k;         /* its step along K */
    int borrowed;           /* the engine keeps the kernel (gemm_launch_release) */
};

/* The kernel for the plan on the engine's device: the first variant of the table that applies
 * and fits (the tensor-core one, gemm_simt, the portable one). All take the same arguments
 * (gemm_bind_plan). gemm_launch_release: lets go of it once enqueued. A plan with a carry gets the
 * same variant's -DCARRY build (every variant has one). */
int32_t gemm_engine_launch(struct gemm_engine *e, const struct gemm_plan *p,
                           struct gemm_launch *out);
void gemm_launch_release(struct gemm_engine *e, struct gemm_launch *l);
/* Binds the plan and the staged operands to the kernel's parameters, in its order. */
int32_t gemm_bind_plan(cl_kernel kernel, const struct gemm_plan *p, const struct staged_tensor *sa,
                       const struct staged_tensor *sb, const struct staged_tensor *sc);
/* A kernel object of the call's own: `name` of kernels/<source>.cl built with `options`;
 * *fits = 0 when the device cannot run `group_size` work-items a group of it. */
int32_t gemm_create_kernel(struct clops_pool *pool, struct pool_device *dev, const char *source,
                           const char *name, const char *options, size_t group_size, cl_kernel *out,
                           int *fits);
/* gemm_mma.cl's and gemm_tf32.cl's build options for tiles `t`; `passes`: 0 for f64, else the TF32
 * products of an f32 product; `packed`: the -DPACKED kernels. */
int32_t gemm_mma_build_options(const struct gemm_mma_tiles *t, int32_t passes, int packed,
                               char *out, size_t size);

/* ---- tf32 from packed operands (gemm_tf32.c) ------------------------------------------------- */

/* Whether the call runs gemm_tf32; the call's product through it (*taken = 0: no room for the
 * packed operands on the device, nothing done). */
int gemm_takes_tf32_packed(const struct pool_device *dev, const struct gemm_plan *p);
int32_t gemm_run_tf32_packed(struct op_call *call, const struct staged_tensor *sa,
                             const struct staged_tensor *sb, int *taken);

#endif
