/* pipeline_model.c — the lookups on a validated pipeline's steps and the arguments a step passes
 * to its operator (pipeline_model.h), shared by the parser, the operators' knowledge and the
 * runner. */
#include "pipeline_model.h"

#include <string.h>

int step_param_index(const struct pl_step *step, const char *name)
{
    for (int32_t i = 0; step->op != NULL && i < step->op->param_count; i++)
        if (strcmp(step->op->params[i].name, name) == 0)
            return i;
    return -1;
}

const struct pl_value *step_value(const struct pl_step *step, const char *name)
{
    int i = step_param_index(step, name);
    return i >= 0 ? &step->values[i] : NULL;
}

const struct pl_tensor *step_tensor(const struct pipeline *pl, const struct pl_step *step,
                                    const char *name)
{
    const struct pl_value *v = step_value(step, name);
    return v != NULL && v->tensor >= 0 ? &pl->tensors[v->tensor] : NULL;
}

int param_kind_writes(int32_t kind)
{
    return kind == CLOPS_PARAM_TENSOR_OUT || kind == CLOPS_PARAM_TENSOR_INOUT;
}

struct clops_tensor pl_tensor_view(const struct pl_tensor *t, void *data)
{
    struct clops_tensor view = {0};
    view.data = data;
    view.dtype = t->dtype;
    view.rank = t->rank;
    int64_t stride = 1;
    for (int32_t axis = t->rank - 1; axis >= 0; axis--) {
        view.shape[axis] = t->shape[axis];
        view.strides[axis] = stride;
        stride *= t->shape[axis] > 1 ? t->shape[axis] : 1;
    }
    return view;
}

int32_t step_args(const struct pipeline *pl, const struct pl_step *step, struct clops_arg *args)
{
    int32_t count = 0;
    for (int32_t p = 0; p < step->op->param_count; p++) {
        const struct pl_value *v = &step->values[p];
        if (!v->given)
            continue;
        struct clops_arg *a = &args[count++];
        memset(a, 0, sizeof *a);
        a->name = step->op->params[p].name;
        a->kind = step->op->params[p].kind;
        a->tensor = v->tensor >= 0 ? &pl->tensors[v->tensor].view : NULL;
        a->i = v->i;
        a->d = v->d;
        a->s = v->s;
    }
    return count;
}
