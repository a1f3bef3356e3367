/* gemm_launch.c — the gemm kernel's launches (gemm_impl.h): the operator's enqueue step, and
 * gemm_enqueue, the GEMM other operators chain with their own kernels (gemm.h). */
#include "gemm_impl.h"

#include <stdatomic.h>

#include "pace.h"

/* A submitted call expected to run at least GEMM_PACED_MIN_NS on its device (2 M N K flops at
 * pool_device_peak_flops: an estimate above the real rate, so that the time is rather
 * underestimated) is enqueued in blocks of C, each a launch over the whole of K, paced (pace.h):
 * a cancel stops it between blocks and its progress counts blocks. Blocks are whole tiles,
 * expected to take GEMM_PACED_MIN_NS / 2 at least, at most GEMM_PACED_BLOCKS of them: each
 * outlasts a wait's wake-up (~0.3 ms on NVIDIA's driver) several times over, so the device is
 * not starved by the pace's waits; a 4096^3 f32 GEMM on an H200 (~3 ms) runs in one launch,
 * one of 2^30 multiply-adds on PoCL's 2 cores (~40 ms) in blocks. Every element of C is
 * computed by the same kernel with the same tiles, in the same order over K, as without
 * blocks: the result is the same, bit for bit. Smaller calls and synchronous ones run in one
 * launch. */
enum { GEMM_PACED_BLOCKS = 16 };
static const double GEMM_PACED_MIN_NS = 10e6;

/* The blocks of the kernel's C along its longer side (rows when m >= n), each a whole number of
 * `tile` rows or columns: their count, and their extent in *step. 1: the whole of C at once. */
static int64_t paced_blocks(const struct op_call *call, const struct gemm_plan *p,
                            const struct gemm_launch *launch, int64_t *step)
{
    const int64_t side = p->m >= p->n ? p->m : p->n;
    const int64_t tile = p->m >= p->n ? launch->tile_m : launch->tile_n;
    *step = side;
    const double ns = 2.0 * (double)p->m * (double)p->n * (double)p->k /
                      pool_device_peak_flops(call->dev, p->dtype == CLOPS_F64) * 1e9;
    if (!call->control->submitted || ns < GEMM_PACED_MIN_NS || tile <= 0)
        return 1;
    int64_t blocks = (int64_t)(ns / (GEMM_PACED_MIN_NS / 2));
    blocks = blocks < GEMM_PACED_BLOCKS ? blocks : GEMM_PACED_BLOCKS;
    const int64_t tiles = (side + tile - 1) / tile;
    *step = (tiles + blocks - 1) / blocks * tile;
    return (side + *step - 1) / *step;
}

/* Launches the kernel over rows [r0, r0 + rows) and columns [c0, c0 + cols) of the kernel's C:
 * the same product on operands and C moved to the block's first row and column. */
static int32_t launch_block(struct op_call *call, const struct gemm_launch *launch,
                            const struct staged_tensor *sa, const struct staged_tensor *sb,
                            int64_t r0, int64_t rows, int64_t c0, int64_t cols)
{
    const struct gemm_plan *p = call->plan;
    struct gemm_plan block = *p;
    block.m = rows;
    block.n = cols;
    struct staged_tensor ba = *sa, bb = *sb, bc = call->staged[P_C];
    ba.offset += r0 * p->ka_si;
    bb.offset += c0 * p->kb_sj;
    bc.offset += r0 * p->ldc + c0; /* the kernel's C is row-major */
    const size_t global =
        launch->local * (size_t)gemm_blocks_covering(rows, cols, launch->tile_m, launch->tile_n);
    int32_t status = gemm_bind_plan(launch->kernel, &block, &ba, &bb, &bc);
    if (status == CLOPS_OK)
        status = pool_launch_kernel(call->pool, &call->work, call->queue, launch->kernel, 1,
                                    &global, &launch->local, gemm_op_name);
    return status;
}

/* The kernel over the whole of C: one launch, or paced blocks (GEMM_PACED_MIN_NS). */
static int32_t launch_all(struct op_call *call, const struct gemm_launch *launch,
                          const struct staged_tensor *sa, const struct staged_tensor *sb)
{
    struct gemm_plan *p = call->plan;
    int64_t step = 0;
    p->blocks = paced_blocks(call, p, launch, &step);
    if (p->blocks == 1) {
        int32_t status = gemm_bind_plan(launch->kernel, p, sa, sb, &call->staged[P_C]);
        if (status == CLOPS_OK)
            status = pool_launch_kernel(call->pool, &call->work, call->queue, launch->kernel, 1,
                                        &launch->global, &launch->local, gemm_op_name);
        return status;
    }
    struct pace pace;
    pace_begin(&pace, call, call->queue, p->blocks, "blocks");
    const int by_rows = p->m >= p->n;
    const int64_t side = by_rows ? p->m : p->n;
    int32_t status = CLOPS_OK;
    for (int64_t at = 0; at < side && status == CLOPS_OK; at += step) {
        const int64_t extent = side - at < step ? side - at : step;
        status = by_rows ? launch_block(call, launch, sa, sb, at, extent, 0, p->n)
                         : launch_block(call, launch, sa, sb, 0, p->m, at, extent);
        if (status == CLOPS_OK && at + step < side)
            status = pace_unit_queued(&pace);
    }
    pace_release(&pace);
    return status;
}

int gemm_k_slabs = 0;
atomic_llong gemm_slab_launches;

/* The product cut along K into `gemm_k_slabs` slabs of whole TILE_K steps (tests; a cut along K
 * across devices will take it), launched in order on the call's queue, each carrying its sums to
 * the next through a scratch of C's shape (gemm_plan.carry): every element sees the same
 * multiply-adds in the same order as in one launch, and C is the same, bit for bit. *ran = 0:
 * not so cut (one slab, or a kernel that does not carry sums), nothing enqueued. */
static int32_t launch_slabs(struct op_call *call, struct gemm_engine *engine,
                            const struct gemm_launch *whole, const struct staged_tensor *sa,
                            const struct staged_tensor *sb, int *ran)
{
    struct gemm_plan *p = call->plan;
    *ran = 0;
    const int64_t steps = whole->tile_k > 0 ? (p->k + whole->tile_k - 1) / whole->tile_k : 0;
    if (gemm_k_slabs < 2 || steps < 2)
        return CLOPS_OK;
    const int64_t wanted = gemm_k_slabs < steps ? gemm_k_slabs : steps;
    const int64_t extent = (steps + wanted - 1) / wanted * whole->tile_k;
    const int64_t slabs = (p->k + extent - 1) / extent;
    cl_mem w = NULL;
    int64_t zero[2];
    int32_t status = pool_scratch_take(call->pool, call->dev, p->m * p->n * dtype_size(p->dtype),
                                       gemm_op_name, "the sums of a slab of K", &w, zero);
    if (status != CLOPS_OK)
        return status;
    *ran = 1;
    p->blocks = 1;
    struct gemm_plan slab = *p;
    slab.w = w;
    slab.w_offset = 0;
    slab.ldw = p->n;
    for (int64_t s = 0; s < slabs && status == CLOPS_OK; s++) {
        const int64_t k0 = s * extent;
        slab.k = p->k - k0 < extent ? p->k - k0 : extent;
        slab.carry = (s > 0 ? GEMM_CARRY_IN : 0) | (s + 1 < slabs ? GEMM_CARRY_OUT : 0);
        struct staged_tensor ba = *sa, bb = *sb;
        ba.offset += k0 * p->ka_sk;
        bb.offset += k0 * p->kb_sk;
        struct gemm_launch l;
        status = gemm_engine_launch(engine, &slab, &l);
        if (status == CLOPS_OK)
            status = gemm_bind_plan(l.kernel, &slab, &ba, &bb, &call->staged[P_C]);
        if (status == CLOPS_OK)
            status = pool_launch_kernel(call->pool, &call->work, call->queue, l.kernel, 1,
                                        &l.global, &l.local, gemm_op_name);
        if (status == CLOPS_OK)
            atomic_fetch_add(&gemm_slab_launches, 1);
        if (l.kernel != NULL)
            gemm_launch_release(engine, &l);
    }
    pool_work_give_scratch(call->pool, &call->work, call->queue, call->dev, w, 0, 0);
    return status;
}

/* The operator's enqueue step: the product through gemm_tf32 where it applies (in one piece),
 * else the kernel of gemm_get_launch over the whole of C, in slabs of K where tests ask. */
int32_t gemm_run(struct op_call *call)
{
    struct gemm_plan *p = call->plan;
    /* The kernel's Ak and Bk are A and B, or B and A for a column-major C (gemm_plan). */
    const int a_first = p->ka == call->values[P_A].tensor;
    const struct staged_tensor *sa = &call->staged[a_first ? P_A : P_B];
    const struct staged_tensor *sb = &call->staged[a_first ? P_B : P_A];
    if (call->carry != 0) {
        /* A slab of K of a split's piece (op_call.carry): its part's sums, laid out as C. */
        p->carry = call->carry;
        p->w = call->sums;
        p->w_offset = call->staged[P_C].offset;
        p->ldw = p->ldc;
    } else if (gemm_takes_tf32_packed(call->dev, p)) {
        int taken = 0;
        const int32_t status = gemm_run_tf32_packed(call, sa, sb, &taken);
        if (status != CLOPS_OK || taken)
            return status;
    }
    struct gemm_engine engine;
    gemm_engine_init(&engine, call->pool, call->dev);
    struct gemm_launch launch;
    int32_t status = gemm_engine_launch(&engine, p, &launch);
    int slabbed = 0;
    if (status == CLOPS_OK && p->carry == 0)
        status = launch_slabs(call, &engine, &launch, sa, sb, &slabbed);
    if (status == CLOPS_OK && !slabbed)
        status = launch_all(call, &launch, sa, sb);
    gemm_launch_release(&engine, &launch);
    gemm_engine_release(&engine);
    return status;
}

/* The commit step: a paced call's last blocks are done (its progress reaches its total). */
void gemm_commit(struct op_call *call)
{
    const struct gemm_plan *p = call->plan;
    if (p->blocks > 1)
        call_progress(call, p->blocks, p->blocks);
}

int32_t gemm_enqueue(struct gemm_engine *e, cl_command_queue queue, int32_t dtype, int64_t m,
                     int64_t n, int64_t k, double alpha, const struct gemm_operand *a,
                     const struct gemm_operand *b, double beta, const struct gemm_operand *c,
                     const char *caller)
{
    if (m == 0 || n == 0)
        return CLOPS_OK;
    struct gemm_plan p = {
        .dtype = dtype, .m = m, .n = n, .k = alpha == 0.0 ? 0 : k, .alpha = alpha, .beta = beta};
    const struct gemm_operand *left = a, *right = b;
    if (c->col_stride == 1 || n == 1) {
        p.ka_si = a->row_stride;
        p.ka_sk = a->col_stride;
        p.kb_sk = b->row_stride;
        p.kb_sj = b->col_stride;
        p.ldc = c->row_stride;
    } else { /* a column-major C: the kernel writes C^T = B^T A^T, as gemm_check_args does */
        left = b;
        right = a;
        p.m = n;
        p.n = m;
        p.ka_si = b->col_stride;
        p.ka_sk = b->row_stride;
        p.kb_sk = a->col_stride;
        p.kb_sj = a->row_stride;
        p.ldc = c->col_stride;
    }
    const struct staged_tensor sa = {.mem = left->mem, .offset = left->offset};
    const struct staged_tensor sb = {.mem = right->mem, .offset = right->offset};
    const struct staged_tensor sc = {.mem = c->mem, .offset = c->offset};
    struct gemm_launch launch;
    int32_t status = gemm_engine_launch(e, &p, &launch);
    if (status == CLOPS_OK)
        status = gemm_bind_plan(launch.kernel, &p, &sa, &sb, &sc);
    /* Not waited for: callers chain it with their own kernels, and pool_chain_end waits and
     * counts the chain's device time. */
    if (status == CLOPS_OK)
        status = pool_enqueue_kernel(queue, launch.kernel, 1, &launch.global, &launch.local,
                                     gemm_op_name);
    gemm_launch_release(e, &launch);
    if (status != CLOPS_OK)
        err_prefix(caller);
    return status;
}
