/* invoke.h — the generic, descriptor-checked call of an operator (behind api->invoke). */
#ifndef CLOPS_INVOKE_H
#define CLOPS_INVOKE_H

#include <stdint.h>

#include "clops.h"

int32_t invoke_op(struct clops_pool *pool, const struct clops_op *op, const struct clops_arg *args,
                  int32_t nargs);
/* The same on an array whose elements are arg_size bytes apart (api->invoke_sized). */
int32_t invoke_op_sized(struct clops_pool *pool, const struct clops_op *op,
                        const struct clops_arg *args, int32_t nargs, uint32_t arg_size);
/* Checks a call without running it (api->check_sized, clops.h). */
int32_t check_op_sized(struct clops_pool *pool, const struct clops_op *op,
                       const struct clops_arg *args, int32_t nargs, uint32_t arg_size,
                       struct clops_output_spec *outputs, uint32_t output_size, int32_t capacity,
                       int32_t *count);
/* The binding invoke_sized makes of `args` to `op`'s parameters (every check of the arguments
 * against the descriptor, the defaults filled), for submit: the operator's registry index and
 * the values in the descriptor's order. `verb` names the function in messages. */
union op_value;
int32_t invoke_bind(const struct clops_op *op, const struct clops_arg *args, int32_t nargs,
                    uint32_t arg_size, const char *verb, int32_t *index, union op_value *values);
/* "tensor (in)", "int64", ... for messages. */
const char *invoke_kind_name(int32_t kind);

#endif
