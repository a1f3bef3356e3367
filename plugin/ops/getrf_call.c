/* getrf_call.c — the call steps that lu, solve and lu_solve share (getrf.h): open, factor,
 * write the factors back, commit, release. */
#include "getrf.h"

#include <stdlib.h>

int32_t lu_call_open(struct op_call *call, struct lu_call *l, int32_t dtype, int64_t npiv)
{
    const char *op = call->impl->desc->name;
    l->piv = malloc((size_t)(npiv + 1) * sizeof *l->piv); /* the pivots, then info */
    if (l->piv == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", op);
    l->ctx.call = call;
    return lu_ctx_init(&l->ctx, call->pool, call->dev, call->queue, call->impl, dtype, npiv);
}

int32_t lu_call_factor(struct op_call *call, const struct clops_tensor *a, int32_t pivoting,
                       int64_t npiv)
{
    struct lu_call *l = call->plan;
    int32_t status = lu_call_open(call, l, a->dtype, npiv);
    if (status == CLOPS_OK)
        status = lu_stage(&l->ctx, a, "a", -1, &l->a);
    int across = 0;
    if (status == CLOPS_OK)
        status = lu_multi_factor(call, l, pivoting, &across);
    if (status == CLOPS_OK && !across)
        status = lu_factor(&l->ctx, &l->a.m, pivoting);
    return status;
}

int32_t lu_call_write_factors(struct op_call *call, const struct clops_tensor *ipiv,
                              const struct clops_tensor *info, int64_t npiv)
{
    struct lu_call *l = call->plan;
    int32_t status = lu_unstage(&l->ctx, &l->a);
    if (status == CLOPS_OK)
        status = lu_pivots_out(&l->ctx, ipiv, info, npiv, l->piv);
    if (status == CLOPS_OK)
        status = lu_ctx_finish(&l->ctx);
    return status;
}

void lu_call_commit(struct op_call *call, const struct clops_tensor *ipiv,
                    const struct clops_tensor *info, int64_t npiv)
{
    struct lu_call *l = call->plan;
    if (l->ctx.pace.total > 0)
        pace_complete(&l->ctx.pace); /* after the call's wait: every panel is done */
    lu_commit(&l->a);
    if (l->piv[npiv] == 0) /* info: b holds X only for a nonsingular A (gesv) */
        lu_commit(&l->b);
    lu_pivots_commit(ipiv, info, npiv, l->piv);
}

void lu_call_release(struct op_call *call)
{
    struct lu_call *l = call->plan;
    lu_staged_release(&l->b);
    lu_staged_release(&l->a);
    lu_multi_release(l->multi); /* its secondary devices waited for, its bridges given back */
    l->multi = NULL;
    lu_ctx_release(&l->ctx);
    call->device_ns += l->ctx.device_ns;
    free(l->piv);
    l->piv = NULL;
}

void lu_call_stage_none(struct op_call *call)
{
    for (int32_t i = 0; i < call->impl->desc->param_count; i++)
        call->stage[i] = STAGE_NONE;
}
