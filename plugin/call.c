/* call.c — the lifecycle of an operator call (call.h): check, stage, enqueue, finish. */
#include "call.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

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

/* Enqueues the download of every staged output into host temporaries; nothing reaches host
 * memory yet. */
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

/* Stage, enqueue, download, each enqueued on the call's in-order queue without a wait, then the
 * end marker. What was enqueued is waited for by call_complete, on every path. */
static int32_t start_work(struct op_call *c)
{
    int32_t status = stage_operands(c);
    if (status == CLOPS_OK)
        status = c->impl->enqueue(c);
    pool_chain_drop(); /* a chain the enqueue began ends within it, also when it failed */
    if (status == CLOPS_OK)
        status = download_outputs(c);
    /* A submitted call ends with a marker, also after a failure: its wait then waits for what
     * it enqueued, not for the calls queued behind it on its stream. A synchronous call's queue
     * has no work of its after it: its wait is clFinish, cheaper on NVIDIA's driver than a
     * marker's enqueue, wait and release (about 1 us of a 15 us reduce on an H200). */
    if (!c->control->submitted && !c->control->part)
        return status;
    int32_t marked = pool_work_end(&c->work, c->queue, c->impl->desc->name);
    return status != CLOPS_OK ? status : marked;
}

/* The call's one wait and what decides whether its outputs may be written: host outputs are
 * written only after every device step and every download of the call succeeded
 * (docs/reliability.md), and not at all when the host asked the call to stop before then. */
static int32_t await_work(struct op_call *c, int32_t status)
{
    /* On every path: nothing before waited for the device, and what goes back to the pool next
     * (host blocks, scratch, buffers) must be free of queued work. A synchronous call's end is
     * looked for first on a CPU device (pool_work_poll), where waking from the wait costs more
     * than a small call's work. */
    if (!c->control->submitted && !c->control->part && status == CLOPS_OK)
        pool_work_poll(c->dev, c->queue);
    status =
        pool_work_finish(c->pool, &c->work, c->queue, status, &c->device_ns, c->impl->desc->name);
    if (status == CLOPS_OK && call_cancel_requested(c))
        status = err_set(CLOPS_ERR_CANCELLED, "%s: cancelled before its outputs were written",
                         c->impl->desc->name);
    if (status == CLOPS_OK && c->impl->verify != NULL)
        status = c->impl->verify(c);
    return status;
}

/* The commit of a call that succeeded (cannot fail), and the release of its operands. */
static void settle_work(struct op_call *c, int32_t status)
{
    if (status == CLOPS_OK)
        commit_outputs(c);
    release_operands(c);
}

/* One call in one allocation: the operator's state and plan, and copies of everything the host
 * passed that the call reads after it starts (parameter values, tensor descriptors, strings):
 * the host may change or reuse its descriptors meanwhile (a log callback during the call; a
 * host whose non-blocking submit has returned). The memory the tensors point to is the call's
 * operands and is not copied. */
struct call {
    struct op_call op;
    struct call_error error;
    struct call_control control; /* a synchronous call's; a submitted one uses its event's */
    int32_t index;               /* the operator's, in the registry */
    int32_t started;             /* call_start enqueued work: call_complete waits for it */
    int32_t part;                /* a part of a split call: its parent counts in the statistics */
    int32_t awaited;             /* call_await ran: call_complete only commits and releases */
    struct split_state *split;   /* its parts across devices, until call_complete (call_split.c) */
    int32_t writes_back; /* a submitted split call's device outputs come back after its parts */
    union op_value values[CALL_MAX_PARAMS];
    struct clops_tensor tensors[CALL_MAX_PARAMS];
    /* The plan (op.plan, impl->plan_size bytes), then the copies of the strings. */
    alignas(max_align_t) unsigned char tail[];
};

/* Bytes of the copies of the string values among `values`. */
static size_t strings_size(const struct clops_op *op, const union op_value *values)
{
    size_t bytes = 0;
    for (int32_t i = 0; i < op->param_count; i++)
        if (op->params[i].kind == CLOPS_PARAM_STRING && values[i].string != NULL)
            bytes += strlen(values[i].string) + 1;
    return bytes;
}

/* call->values = `values`, with tensor descriptors and strings pointing at the call's copies
 * (strings at `strings`, strings_size bytes). */
static void copy_values(struct call *call, const union op_value *values, char *strings)
{
    const struct clops_op *op = call->op.impl->desc;
    for (int32_t i = 0; i < op->param_count; i++) {
        call->values[i] = values[i];
        if (op_kind_is_tensor(op->params[i].kind) && values[i].tensor != NULL) {
            call->tensors[i] = *values[i].tensor;
            call->values[i].tensor = &call->tensors[i];
        } else if (op->params[i].kind == CLOPS_PARAM_STRING && values[i].string != NULL) {
            size_t size = strlen(values[i].string) + 1;
            memcpy(strings, values[i].string, size);
            call->values[i].string = strings;
            strings += size;
        }
    }
}

int32_t call_new(struct clops_pool *pool, const struct op_impl *impl, const union op_value *values,
                 struct call **out)
{
    const struct clops_op *op = impl->desc;
    const size_t bytes = sizeof(struct call) + impl->plan_size + strings_size(op, values);
    struct call *call = malloc(bytes);
    if (call == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                       "%s: cannot allocate a call's state (%zu bytes)", op->name, bytes);
    struct op_call *c = &call->op;
    memset(c, 0, sizeof *c);
    memset(call->tail, 0, impl->plan_size);
    c->pool = pool;
    c->impl = impl;
    c->values = call->values;
    c->plan = call->tail;
    atomic_init(&call->control.cancel, 0);
    atomic_init(&call->control.done, 0);
    atomic_init(&call->control.total, 0);
    call->control.submitted = 0;
    call->control.part = 0;
    c->control = &call->control;
    call->error.status = CLOPS_OK;
    call->error.message[0] = '\0';
    call->index = registry_index(op);
    call->started = 0;
    call->part = 0;
    call->awaited = 0;
    call->split = NULL;
    for (int32_t i = 0; i < op->param_count; i++) {
        c->stage[i] =
            op_kind_is_tensor(op->params[i].kind) ? default_stage(op->params[i].kind) : STAGE_NONE;
        c->expect[i].rank = -1;
    }
    copy_values(call, values, (char *)call->tail + impl->plan_size);
    *out = call;
    return CLOPS_OK;
}

void call_free(struct call *call)
{
    free(call);
}

const struct call_error *call_error_of(const struct call *call)
{
    return &call->error;
}

/* A step of the call returned `status`: a failure and this thread's message, which describes
 * it, go into the call's error unless an earlier step failed. */
static int32_t call_step(struct call *call, int32_t status)
{
    if (status != CLOPS_OK && call->error.status == CLOPS_OK) {
        call->error.status = status;
        snprintf(call->error.message, sizeof call->error.message, "%s", err_last());
    }
    return status;
}

/* The end of a synchronous call: its status, and its error's message as the calling thread's
 * last_error where it failed. */
static int32_t call_report(const struct call *call)
{
    if (call->error.status != CLOPS_OK)
        err_restore(call->error.message);
    return call->error.status;
}

/* Holds (hold = 1) or lets go of (0) the device buffers the call's tensors name: a host thread
 * releasing one of them during the call frees it when the call ends, not under it. */
static void hold_buffers(const struct op_call *c, int hold)
{
    for (int32_t i = 0; i < c->impl->desc->param_count; i++) {
        const struct clops_tensor *t =
            op_kind_is_tensor(c->impl->desc->params[i].kind) ? c->values[i].tensor : NULL;
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
    if (impl->desc->param_count > CALL_MAX_PARAMS)
        return err_set(CLOPS_ERR_INTERNAL, "%s: more parameters than a call holds",
                       impl->desc->name);
    *out = impl;
    return CLOPS_OK;
}

/* Where a call runs: on the device its device buffers live on (the first such operand's, when
 * it is a device of `pool`; the tensors' check refuses operands on other devices), else on the
 * operator's configured device. */
static struct pool_device *device_of_operands(struct clops_pool *pool, const struct clops_op *op,
                                              const union op_value *values, int32_t index)
{
    for (int32_t i = 0; i < op->param_count; i++) {
        if (!op_kind_is_tensor(op->params[i].kind) || values[i].tensor == NULL)
            continue;
        const struct clops_buffer *b = values[i].tensor->buffer;
        if (b != NULL && b->pool == pool)
            return b->dev;
    }
    return pool_device_for_op(pool, index);
}

/* A new call of the operator at `index` on `pool` (NULL: a check without a pool), holding the
 * pool and the device buffers it names until call_end. */
static int32_t call_begin(struct clops_pool *pool, int32_t index, const struct op_impl *impl,
                          const union op_value *values, struct call **out)
{
    struct call *call = NULL;
    int32_t status = call_new(pool, impl, values, &call);
    if (status != CLOPS_OK)
        return status;
    status = pool != NULL ? pool_hold(pool, impl->desc->name) : CLOPS_OK;
    if (status != CLOPS_OK) {
        call_free(call);
        return status;
    }
    call->op.dev = pool != NULL ? device_of_operands(pool, impl->desc, values, index) : NULL;
    hold_buffers(&call->op, 1);
    *out = call;
    return CLOPS_OK;
}

/* The operator's release step, then what call_begin held; the call itself is left. */
static void call_end(struct call *call)
{
    if (call->op.impl->release != NULL)
        call->op.impl->release(&call->op);
    hold_buffers(&call->op, 0);
    if (call->op.pool != NULL)
        pool_unhold(call->op.pool); /* last: a pool released during the call is freed here */
}

int32_t call_check_index(struct clops_pool *pool, int32_t index, const union op_value *values,
                         struct op_output expect[CALL_MAX_PARAMS])
{
    err_clear();
    const struct op_impl *impl = NULL;
    int32_t status = call_impl(index, &impl);
    struct call *call = NULL;
    if (status == CLOPS_OK)
        status = call_begin(pool, index, impl, values, &call);
    if (status != CLOPS_OK)
        return status;
    call->op.checking = 1;
    tensor_describing(1);
    call_step(call, impl->check(&call->op));
    tensor_describing(0);
    memcpy(expect, call->op.expect, sizeof call->op.expect);
    call_end(call);
    status = call_report(call);
    call_free(call);
    return status;
}

int32_t call_prepare(struct clops_pool *pool, int32_t index, struct pool_device *dev,
                     const union op_value *values, struct call **out)
{
    *out = NULL;
    const struct op_impl *impl = NULL;
    int32_t status = call_impl(index, &impl);
    if (status != CLOPS_OK)
        return status;
    if (pool == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'pool' is NULL",
                       impl->desc->name);
    struct call *call = NULL;
    status = call_begin(pool, index, impl, values, &call);
    if (status != CLOPS_OK)
        return status;
    if (dev != NULL)
        call->op.dev = dev;
    call->index = index;
    status = impl->check(&call->op);
    if (status != CLOPS_OK) {
        pool_record_call(pool, index, status, 0); /* a refused call counts as a failure */
        call_end(call);
        call_free(call);
        return status;
    }
    *out = call;
    return CLOPS_OK;
}

void call_set_control(struct call *call, struct call_control *control)
{
    call->op.control = control;
}

int32_t call_start(struct call *call, cl_command_queue queue)
{
    struct op_call *c = &call->op;
    c->queue = queue;
    if (c->nothing_to_do)
        return CLOPS_OK;
    if (call_cancel_requested(c))
        return call_step(call, err_set(CLOPS_ERR_CANCELLED, "%s: cancelled before it started",
                                       c->impl->desc->name));
    call->started = 1;
    return call_step(call, start_work(c));
}

cl_event call_done_marker(const struct call *call)
{
    return call->op.work.done;
}

int32_t call_await(struct call *call)
{
    if (call->started && !call->awaited) {
        call_step(call, await_work(&call->op, call->error.status));
        call->awaited = 1;
    }
    return call->error.status;
}

struct split_state *call_split_state(const struct call *call)
{
    return call->split;
}

void call_set_split_state(struct call *call, struct split_state *s)
{
    call->split = s;
}

int32_t call_complete(struct call *call)
{
    struct op_call *c = &call->op;
    const int split = call->split != NULL;
    if (split)
        call_split_finish(call); /* its parts awaited and committed, or failed, here */
    int32_t status = call->error.status;
    if (call->started) {
        status = call_await(call);
        settle_work(c, status);
    } else if (!split && status == CLOPS_OK && call_cancel_requested(c))
        status = call_step(call, err_set(CLOPS_ERR_CANCELLED, "%s: cancelled before it started",
                                         c->impl->desc->name));
    if (!call->part)
        pool_record_call(c->pool, call->index, status, c->device_ns);
    call_end(call);
    return status;
}

int32_t call_fail(struct call *call, int32_t status, const char *message)
{
    if (call->error.status == CLOPS_OK) {
        call->error.status = status;
        snprintf(call->error.message, sizeof call->error.message, "%s", message);
    }
    return call->error.status;
}

/* Parameter i of the call, when it is an output tensor in host memory. */
static const struct clops_tensor *host_output(const struct op_call *c, int32_t i)
{
    const int32_t kind = c->impl->desc->params[i].kind;
    const struct clops_tensor *t = op_kind_is_tensor(kind) ? c->values[i].tensor : NULL;
    return kind != CLOPS_PARAM_TENSOR_IN && t != NULL && t->data != NULL ? t : NULL;
}

int call_writes_host(const struct call *call)
{
    for (int32_t i = 0; i < call->op.impl->desc->param_count; i++)
        if (host_output(&call->op, i) != NULL)
            return 1;
    return 0;
}

int call_host_overlaps(const struct call *writer, const struct call *other)
{
    const struct op_call *w = &writer->op, *o = &other->op;
    for (int32_t i = 0; i < w->impl->desc->param_count; i++) {
        const struct clops_tensor *x = host_output(w, i);
        for (int32_t j = 0; x != NULL && j < o->impl->desc->param_count; j++) {
            const struct clops_tensor *y =
                op_kind_is_tensor(o->impl->desc->params[j].kind) ? o->values[j].tensor : NULL;
            if (y != NULL && y->data != NULL && tensor_views_overlap(x, y))
                return 1;
        }
    }
    return 0;
}

int call_writes_back(const struct call *call)
{
    return call->writes_back;
}

void call_set_writes_back(struct call *call)
{
    call->writes_back = 1;
}

struct op_call *call_op(struct call *call)
{
    return &call->op;
}

int32_t call_index(const struct call *call)
{
    return call->index;
}

void call_mark_part(struct call *call)
{
    call->part = 1;
}

int32_t call_run_index(struct clops_pool *pool, int32_t index, const union op_value *values)
{
    err_clear();
    struct call *call = NULL;
    int32_t status = call_prepare(pool, index, NULL, values, &call);
    if (status != CLOPS_OK)
        return status;
    if (!call_split_run(call)) {
        call_start(call, pool_acquire_queue(call->op.dev));
        call_complete(call);
    }
    status = call_report(call);
    call_free(call);
    return status;
}

int32_t call_run(struct clops_pool *pool, const struct op_impl *impl, const union op_value *values)
{
    return call_run_index(pool, registry_index(impl->desc), values);
}
