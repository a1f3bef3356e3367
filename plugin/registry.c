/* registry.c — the table of operators. Adding an operator: its descriptor in plugin/ops/<name>.c
 * and one line here. */
#include "registry.h"

#include <string.h>

extern const struct clops_op op_gemm;
extern const struct clops_op op_reduce, op_transpose;
extern const struct clops_op op_mandelbrot;
extern const struct clops_op op_lu, op_solve, op_lu_solve;

static const struct clops_op *const operators[] = {
    &op_gemm, &op_reduce, &op_transpose, &op_mandelbrot, &op_lu, &op_solve, &op_lu_solve,
};

enum { OPERATOR_COUNT = (int)(sizeof operators / sizeof operators[0]) };

int32_t registry_count(void)
{
    return OPERATOR_COUNT;
}

const struct clops_op *registry_at(int32_t index)
{
    return index >= 0 && index < OPERATOR_COUNT ? operators[index] : NULL;
}

int32_t registry_index_by_name(const char *name)
{
    for (int32_t i = 0; name != NULL && i < OPERATOR_COUNT; i++)
        if (strcmp(operators[i]->name, name) == 0)
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
        if (operators[i] == op)
            return i;
    return -1;
}
