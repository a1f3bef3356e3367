/* registry.c — the table of operators. Adding an operator: its descriptor and its call steps
 * (struct op_impl) in plugin/ops/<name>.c, declared in registry.h, and one line here. */
#include "registry.h"

#include <string.h>

#include "op.h"

static const struct op_impl *const operators[] = {
    &impl_gemm, &impl_reduce, &impl_transpose, &impl_mandelbrot,
    &impl_lu,   &impl_solve,  &impl_lu_solve,
};

enum { OPERATOR_COUNT = (int)(sizeof operators / sizeof operators[0]) };

int32_t registry_count(void)
{
    return OPERATOR_COUNT;
}

const struct op_impl *registry_impl(int32_t index)
{
    return index >= 0 && index < OPERATOR_COUNT ? operators[index] : NULL;
}

const struct clops_op *registry_at(int32_t index)
{
    return index >= 0 && index < OPERATOR_COUNT ? operators[index]->desc : NULL;
}

int32_t registry_index_by_name(const char *name)
{
    for (int32_t i = 0; name != NULL && i < OPERATOR_COUNT; i++)
        if (strcmp(operators[i]->desc->name, name) == 0)
            return i;
    return -1;
}

const struct clops_op *registry_find(const char *name)
{
    return registry_at(registry_index_by_name(name));
}

int32_t registry_index(const struct clops_op *op)
{
    for (int32_t i = 0; i < OPERATOR_COUNT; i++)
        if (operators[i]->desc == op)
            return i;
    return -1;
}
