/* gemm_launch.c — the gemm kernel's launches (gemm_impl.h): the operator's enqueue step, and
 * gemm_enqueue, the GEMM other operators chain with their own kernels (gemm.h). */
#include "gemm_impl.h"

/* Runs the kernel once over the whole of C. */
int32_t gemm_run(struct op_call *call)
{
    const struct gemm_plan *p = call->plan;
    /* The kernel's Ak and Bk are A and B, or B and A for a column-major C (gemm_plan). */
    const int a_first = p->ka == call->values[P_A].tensor;
    const struct staged_tensor *sa = &call->staged[a_first ? P_A : P_B];
    const struct staged_tensor *sb = &call->staged[a_first ? P_B : P_A];
    if (gemm_takes_tf32_packed(call->dev, p)) {
        int taken = 0;
        const int32_t status = gemm_run_tf32_packed(call, sa, sb, &taken);
        if (status != CLOPS_OK || taken)
            return status;
    }
    struct gemm_launch launch;
    int32_t status = gemm_get_launch(call->pool, call->dev, p, &launch);
    if (status == CLOPS_OK)
        status = gemm_bind_plan(launch.kernel, p, sa, sb, &call->staged[P_C]);
    if (status == CLOPS_OK)
        status = pool_launch_kernel(call->pool, &call->work, call->queue, launch.kernel, 1,
                                    &launch.global, &launch.local, gemm_op_name);
    pool_release_kernel(call->pool, launch.kernel);
    return status;
}

int32_t gemm_enqueue(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                     int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha,
                     const struct gemm_operand *a, const struct gemm_operand *b, double beta,
                     const struct gemm_operand *c, int64_t *device_ns, const char *caller)
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
    int32_t status = gemm_get_launch(pool, dev, &p, &launch);
    if (status == CLOPS_OK)
        status = gemm_bind_plan(launch.kernel, &p, &sa, &sb, &sc);
    /* Not waited for: callers chain it with their own kernels, and pool_chain_end waits and
     * counts the chain's device time (so device_ns is theirs to fill). */
    (void)device_ns;
    if (status == CLOPS_OK)
        status = pool_enqueue_kernel(queue, launch.kernel, 1, &launch.global, &launch.local,
                                     gemm_op_name);
    pool_release_kernel(pool, launch.kernel);
    if (status != CLOPS_OK)
        err_prefix(caller);
    return status;
}
