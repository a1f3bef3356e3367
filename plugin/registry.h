/* registry.h — the table of operators. Adding an operator: its call steps here and one line in
 * registry.c. */
#ifndef CLOPS_REGISTRY_H
#define CLOPS_REGISTRY_H

#include <stdint.h>

#include "clops.h"

int32_t registry_count(void);
const struct clops_op *registry_at(int32_t index);
struct op_impl;
const struct op_impl *registry_impl(int32_t index); /* the operator's call steps (op.h) */
const struct clops_op *registry_find(const char *name);

/* The operators' call steps (plugin/ops/<name>.c), listed by registry.c. */
extern const struct op_impl impl_gemm, impl_reduce, impl_transpose, impl_mandelbrot;
extern const struct op_impl impl_lu, impl_solve, impl_lu_solve;
int32_t registry_index(const struct clops_op *op); /* -1 when unknown */
int32_t registry_index_by_name(const char *name);  /* -1 when unknown */

#endif
