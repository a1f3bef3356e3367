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
/* "tensor (in)", "int64", ... for messages. */
const char *invoke_kind_name(int32_t kind);

#endif
