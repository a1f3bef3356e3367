/* call.c — the lifecycle of an operator call (call.h): check, stage, enqueue, finish. */
#include "call.h"

#include <stdalign.h>
#include <string.h>

#include "registry.h"

static int is_tensor(int32_t kind)
{
    return kind == CLOPS_PARAM_TENSOR_IN || kind == CLOPS_PARAM_TENSOR_OUT ||
           kind == CLOPS_PARAM_TENSOR_INOUT;
}

/* The staging a tensor parameter gets unless the operator's check says otherwise. */
static int8_t default_stage(int32_t kind)
{
    switch (kind) {
    case CLOPS_PARAM_TENSOR_IN: return STAGE_IN;
    case CLOPS_PARAM_TENSOR_OUT: return STAGE_OUT;
    case CLOPS_PARAM_TENSOR_INOUT: return STAGE_INOUT;
    default: return STAGE_NONE;
    }
}

/* Stages every tensor the check left to the core, in the descriptor's order. */
static int32_t stage_operands(struct op_call *c)
{
    const struct clops_op *op = c->impl->desc;
    for (int32_t i = 0; i < op->param_count; i++) {
        const struct clops_tensor *t = c->values[i].tensor;
        if (c->stage[i] == STAGE_NONE || t == NULL)
            continue;
        const int upload = c->stage[i] == STAGE_IN || c->stage[i] == STAGE_INOUT;
        int32_t status = tensor_stage(c->pool, c->dev, c->queue, t, upload, &c->staged[i], op->name,
                                      op->params[i].name);
        if (status != CLOPS_OK)
            return status;
    }
    return CLOPS_OK;
}

/* Downloads every staged output into host temporaries; nothing reaches host memory yet. */
static int32_t download_outputs(struct op_call *c)
{
    const struct clops_op *op = c->impl->desc;
    for (int32_t i = 0; i < op->param_count; i++) {
        if (c->stage[i] != STAGE_OUT && c->stage[i] != STAGE_INOUT)
            continue;
        int32_t status =
            tensor_download(c->pool, c->queue, &c->staged[i], op->name, op->params[i].name);
        if (status != CLOPS_OK)
            return status;
    }
    return CLOPS_OK;
}

/* Every device step and download succeeded: the outputs go into host memory (cannot fail). */
static void commit_outputs(struct op_call *c)
{
    for (int32_t i = 0; i < c->impl->desc->param_count; i++)
        if (c->stage[i] == STAGE_OUT || c->stage[i] == STAGE_INOUT)
            tensor_commit(&c->staged[i]);
    if (c->impl->commit != NULL)
        c->impl->commit(c);
}

static void release_operands(struct op_call *c)
{
    for (int32_t i = c->impl->desc->param_count - 1; i >= 0; i--)
        tensor_release(&c->staged[i]);
}

/* Stage, enqueue, download, commit: host outputs are written only after every device step
 * and every download of the call succeeded (docs/reliability.md). */
static int32_t execute(struct op_call *c)
{
    c->queue = pool_acquire_queue(c->dev);
    int32_t status = stage_operands(c);
    if (status == CLOPS_OK)
        status = c->impl->enqueue(c);
    if (status == CLOPS_OK)
        status = download_outputs(c);
    if (status == CLOPS_OK)
        commit_outputs(c);
    release_operands(c);
    return status;
}

/* A call's state before its check: the plan zeroed, the default staging, nothing expected. */
static void call_init(struct op_call *c, struct clops_pool *pool, const struct op_impl *impl,
                      const union op_value *values, void *plan)
{
    const struct clops_op *op = impl->desc;
    memset(c, 0, sizeof *c);
    memset(plan, 0, impl->plan_size);
    c->pool = pool;
    c->impl = impl;
    c->values = values;
    c->plan = plan;
    for (int32_t i = 0; i < op->param_count; i++) {
        c->stage[i] =
            is_tensor(op->params[i].kind) ? default_stage(op->params[i].kind) : STAGE_NONE;
        c->expect[i].rank = -1;
    }
}

/* Holds (hold = 1) or lets go of (0) the device buffers the call's tensors name: a host thread
 * releasing one of them during the call frees it when the call ends, not under it. */
static void hold_buffers(const struct op_impl *impl, const union op_value *values, int hold)
{
    for (int32_t i = 0; i < impl->desc->param_count; i++) {
        const struct clops_tensor *t =
            is_tensor(impl->desc->params[i].kind) ? values[i].tensor : NULL;
        if (t != NULL && t->buffer != NULL)
            (hold ? buffer_hold : buffer_unhold)(t->buffer);
    }
}

/* The operator at `index`, if a call of it fits what a call holds. */
static int32_t call_impl(int32_t index, const struct op_impl **out)
{
    const struct op_impl *impl = registry_impl(index);
    if (impl == NULL)
        return err_set(CLOPS_ERR_INTERNAL, "call: no operator at index %d", (int)index);
    if (impl->desc->param_count > CALL_MAX_PARAMS || impl->plan_size > CALL_PLAN_MAX)
        return err_set(CLOPS_ERR_INTERNAL, "%s: more parameters or plan than a call holds",
                       impl->desc->name);
    *out = impl;
    return CLOPS_OK;
}

int32_t call_check_index(struct clops_pool *pool, int32_t index, const union op_value *values,
                         struct op_output expect[CALL_MAX_PARAMS])
{
    err_clear();
    const struct op_impl *impl = NULL;
    int32_t status = call_impl(index, &impl);
    if (status != CLOPS_OK)
        return status;
    status = pool != NULL ? pool_hold(pool, impl->desc->name) : CLOPS_OK;
    if (status != CLOPS_OK)
        return status;
    hold_buffers(impl, values, 1);
    alignas(max_align_t) unsigned char plan[CALL_PLAN_MAX];
    struct op_call c;
    call_init(&c, pool, impl, values, plan);
    c.checking = 1;
    c.dev = pool != NULL ? pool_device_for_op(pool, index) : NULL;
    tensor_describing(1);
    status = impl->check(&c);
    tensor_describing(0);
    if (impl->release != NULL)
        impl->release(&c);
    memcpy(expect, c.expect, sizeof c.expect);
    hold_buffers(impl, values, 0);
    if (pool != NULL)
        pool_unhold(pool);
    return status;
}

int32_t call_run_index(struct clops_pool *pool, int32_t index, const union op_value *values)
{
    err_clear();
    const struct op_impl *impl = NULL;
    int32_t status = call_impl(index, &impl);
    if (status != CLOPS_OK)
        return status;
    const struct clops_op *op = impl->desc;
    if (pool == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'pool' is NULL", op->name);
    status = pool_hold(pool, op->name);
    if (status != CLOPS_OK)
        return status;
    hold_buffers(impl, values, 1);
    alignas(max_align_t) unsigned char plan[CALL_PLAN_MAX];
    struct op_call c;
    call_init(&c, pool, impl, values, plan);
    c.dev = pool_device_for_op(pool, index);
    status = impl->check(&c);
    if (status == CLOPS_OK && !c.nothing_to_do)
        status = execute(&c);
    if (impl->release != NULL)
        impl->release(&c);
    pool_record_call(pool, index, status, c.device_ns);
    hold_buffers(impl, values, 0);
    pool_unhold(pool); /* last: a pool released during the call is freed here */
    return status;
}

int32_t call_run(struct clops_pool *pool, const struct op_impl *impl, const union op_value *values)
{
    return call_run_index(pool, registry_index(impl->desc), values);
}
