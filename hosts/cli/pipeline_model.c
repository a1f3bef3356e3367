/* pipeline_model.c — the lookups on a validated pipeline's steps (pipeline_model.h), shared by
 * the parser, the operators' knowledge and the runner. */
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
