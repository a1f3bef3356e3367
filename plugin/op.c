/* op.c — what operators use in their steps (op.h): expected outputs, parameters by name, and
 * their tuning tables and settings. */
#include "op.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int32_t call_param_index(const struct op_impl *impl, const char *name)
{
    for (int32_t i = 0; i < impl->desc->param_count; i++)
        if (strcmp(impl->desc->params[i].name, name) == 0)
            return i;
    return -1;
}

void call_expect(struct op_call *call, int32_t param, int32_t dtype, int32_t rank,
                 const int64_t *shape)
{
    struct op_output *o = &call->expect[param];
    o->dtype = dtype;
    o->rank = rank;
    for (int32_t i = 0; i < CLOPS_MAX_RANK; i++)
        o->shape[i] = i < rank ? shape[i] : 0;
}

void call_expect_same(struct op_call *call, int32_t param)
{
    const struct clops_tensor *t = call->values[param].tensor;
    call_expect(call, param, t->dtype, t->rank, t->shape);
}

size_t call_tuning_row(const struct pool_device *dev, const struct tuning_match *first,
                       size_t row_size, size_t rows)
{
    /* Row i's match lies i rows past row 0's. */
    for (size_t i = 0; i + 1 < rows; i++) {
        const struct tuning_match *m =
            (const struct tuning_match *)((const char *)first + i * row_size);
        if (pool_device_matches(dev, m->vendor, m->type))
            return i;
    }
    return rows - 1;
}

void call_apply_settings(const struct clops_pool *pool, const struct op_impl *impl,
                         int32_t *const *fields, size_t count)
{
    for (size_t s = 0; s < count; s++)
        if (fields[s] != NULL)
            *fields[s] = pool_op_setting(pool, impl, (int32_t)s, *fields[s]);
}

int32_t call_refuse_settings(const struct clops_pool *pool, const struct op_impl *impl,
                             const char *fmt, ...)
{
    char configured[512], detail[512];
    pool_op_describe_settings(pool, impl->desc->name, configured, sizeof configured);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return err_set(CLOPS_ERR_CONFIG, "%s: %s: %s", impl->desc->name, configured, detail);
}

int call_cancel_requested(const struct op_call *call)
{
    return call->control != NULL && atomic_load(&call->control->cancel) != 0;
}

int32_t call_refuse_cancelled(const struct op_call *call, int64_t done, int64_t total,
                              const char *unit)
{
    return err_set(CLOPS_ERR_CANCELLED, "%s: cancelled after %lld of %lld %s",
                   call->impl->desc->name, (long long)done, (long long)total, unit);
}

void call_progress(struct op_call *call, int64_t done, int64_t total)
{
    if (call->control == NULL)
        return;
    atomic_store(&call->control->total, total);
    atomic_store(&call->control->done, done);
}
