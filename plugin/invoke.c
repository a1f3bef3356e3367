/* invoke.c — the generic call: matches tagged arguments to an operator's descriptor, checks
 * every kind, fills defaults, then runs the call's lifecycle (call.h) by the descriptor's
 * index, as the typed entry point does. */
#include "invoke.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "error.h"
#include "registry.h"

enum { INVOKE_MAX_PARAMS = CALL_MAX_PARAMS };

/* The growth rule: ABI 1.1's hosts' arrays are read with CLOPS_ARG_SIZE_1_1. */
_Static_assert(sizeof(struct clops_arg) >= CLOPS_ARG_SIZE_1_1, "struct clops_arg only grows");

const char *invoke_kind_name(int32_t kind)
{
    switch (kind) {
    case CLOPS_PARAM_TENSOR_IN: return "tensor (in)";
    case CLOPS_PARAM_TENSOR_OUT: return "tensor (out)";
    case CLOPS_PARAM_TENSOR_INOUT: return "tensor (inout)";
    case CLOPS_PARAM_INT64: return "int64";
    case CLOPS_PARAM_DOUBLE: return "double";
    case CLOPS_PARAM_ENUM: return "enum";
    case CLOPS_PARAM_STRING: return "string";
    default: return "unknown kind";
    }
}

static int32_t enum_index(const struct clops_param *p, const char *text)
{
    for (int32_t i = 0; p->enum_values != NULL && p->enum_values[i] != NULL; i++)
        if (strcmp(p->enum_values[i], text) == 0)
            return i;
    return -1;
}

static int32_t enum_count(const struct clops_param *p)
{
    int32_t n = 0;
    while (p->enum_values != NULL && p->enum_values[n] != NULL)
        n++;
    return n;
}

static int32_t bad_enum(const struct clops_op *op, const struct clops_param *p, const char *got)
{
    char allowed[256] = "";
    for (int32_t i = 0; p->enum_values != NULL && p->enum_values[i] != NULL; i++) {
        strncat(allowed, i ? ", " : "", sizeof allowed - strlen(allowed) - 1);
        strncat(allowed, p->enum_values[i], sizeof allowed - strlen(allowed) - 1);
    }
    return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter '%s' = %s; expected one of: %s",
                   op->name, p->name, got, allowed);
}

static int param_is_optional_tensor(const struct clops_param *p)
{
    return p->default_value != NULL && strcmp(p->default_value, CLOPS_OPTIONAL) == 0;
}

static int32_t convert_arg(const struct clops_op *op, const struct clops_param *p,
                           const struct clops_arg *a, union op_value *out)
{
    int kinds_match = op_kind_is_tensor(p->kind) ? op_kind_is_tensor(a->kind) : a->kind == p->kind;
    if (!kinds_match)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' expects a %s argument, got a %s argument", op->name,
                       p->name, invoke_kind_name(p->kind), invoke_kind_name(a->kind));
    switch (p->kind) {
    case CLOPS_PARAM_INT64: out->i64 = a->i; return CLOPS_OK;
    case CLOPS_PARAM_DOUBLE: out->f64 = a->d; return CLOPS_OK;
    case CLOPS_PARAM_STRING: out->string = a->s; return CLOPS_OK;
    case CLOPS_PARAM_ENUM: {
        if (a->s != NULL) {
            int32_t i = enum_index(p, a->s);
            if (i < 0) {
                char quoted[160];
                snprintf(quoted, sizeof quoted, "\"%.150s\"", a->s);
                return bad_enum(op, p, quoted);
            }
            out->i32 = i;
        } else {
            if (a->i < 0 || a->i >= enum_count(p)) {
                char number[32];
                snprintf(number, sizeof number, "%lld", (long long)a->i);
                return bad_enum(op, p, number);
            }
            out->i32 = (int32_t)a->i;
        }
        return CLOPS_OK;
    }
    default:
        if (a->tensor == NULL && !param_is_optional_tensor(p))
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "%s: parameter '%s' is NULL (expected a tensor)", op->name, p->name);
        out->tensor = a->tensor;
        return CLOPS_OK;
    }
}

static int32_t apply_default(const struct clops_op *op, const struct clops_param *p,
                             union op_value *out)
{
    if (p->default_value == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: missing required parameter '%s' (%s)",
                       op->name, p->name, invoke_kind_name(p->kind));
    char *end = NULL;
    errno = 0;
    switch (p->kind) {
    case CLOPS_PARAM_INT64: out->i64 = strtoll(p->default_value, &end, 0); break;
    case CLOPS_PARAM_DOUBLE: out->f64 = strtod(p->default_value, &end); break;
    case CLOPS_PARAM_ENUM:
        out->i32 = enum_index(p, p->default_value);
        return out->i32 >= 0
                   ? CLOPS_OK
                   : err_set(CLOPS_ERR_INTERNAL, "%s: bad default for '%s'", op->name, p->name);
    case CLOPS_PARAM_STRING: out->string = p->default_value; return CLOPS_OK;
    default:
        if (param_is_optional_tensor(p)) {
            out->tensor = NULL;
            return CLOPS_OK;
        }
        return err_set(CLOPS_ERR_INTERNAL, "%s: tensor parameter '%s' has a default", op->name,
                       p->name);
    }
    if (end == p->default_value || *end != '\0' || errno != 0)
        return err_set(CLOPS_ERR_INTERNAL, "%s: bad default \"%s\" for '%s'", op->name,
                       p->default_value, p->name);
    return CLOPS_OK;
}

static int32_t param_by_name(const struct clops_op *op, const char *name)
{
    for (int32_t i = 0; i < op->param_count; i++)
        if (strcmp(op->params[i].name, name) == 0)
            return i;
    return -1;
}

static int32_t unknown_name(const struct clops_op *op, const char *name)
{
    char names[512] = "";
    for (int32_t i = 0; i < op->param_count; i++) {
        strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
        strncat(names, op->params[i].name, sizeof names - strlen(names) - 1);
    }
    return err_set(CLOPS_ERR_NOT_FOUND, "%s: no parameter named '%s' (parameters: %s)", op->name,
                   name, names);
}

/* Element k of the host's array, whose elements are arg_size bytes apart, as this plugin's
 * struct: members an older host's struct lacks stay zero, and the bytes of a newer host's
 * appended members are not read. Copied, so that no odd arg_size makes an unaligned read. */
static struct clops_arg arg_at(const struct clops_arg *args, int32_t k, uint32_t arg_size)
{
    struct clops_arg a;
    memset(&a, 0, sizeof a);
    memcpy(&a, (const char *)args + (size_t)k * arg_size,
           arg_size < sizeof a ? arg_size : sizeof a);
    return a;
}

/* Matches args to parameters: positional first, then named; each parameter at most once. */
static int32_t bind_args(const struct clops_op *op, const struct clops_arg *args, int32_t nargs,
                         uint32_t arg_size, union op_value *slots, int32_t *given)
{
    int32_t next_position = 0, seen_named = 0;
    for (int32_t k = 0; k < nargs; k++) {
        const struct clops_arg arg = arg_at(args, k, arg_size);
        const struct clops_arg *a = &arg;
        int32_t i;
        if (a->name == NULL) {
            if (seen_named)
                return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                               "%s: argument #%d is positional but follows a named argument",
                               op->name, (int)k + 1);
            i = next_position++;
            if (i >= op->param_count)
                return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                               "%s: extra argument #%d (the operator takes %d parameters)",
                               op->name, (int)k + 1, (int)op->param_count);
        } else {
            seen_named = 1;
            i = param_by_name(op, a->name);
            if (i < 0)
                return unknown_name(op, a->name);
            if (given[i])
                return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                               "%s: parameter '%s' is given twice (argument #%d)", op->name,
                               a->name, (int)k + 1);
        }
        int32_t status = convert_arg(op, &op->params[i], a, &slots[i]);
        if (status != CLOPS_OK)
            return status;
        given[i] = 1;
    }
    for (int32_t i = 0; i < op->param_count; i++) {
        if (given[i])
            continue;
        int32_t status = apply_default(op, &op->params[i], &slots[i]);
        if (status != CLOPS_OK)
            return status;
    }
    return CLOPS_OK;
}

int32_t invoke_op(struct clops_pool *pool, const struct clops_op *op, const struct clops_arg *args,
                  int32_t nargs)
{
    return invoke_op_sized(pool, op, args, nargs, CLOPS_ARG_SIZE_1_1);
}

/* What invoke_sized and check_sized share: the operator's index and the bound values. `verb`
 * names the function in messages. A NULL pool is left to the caller. */
static int32_t bind_call(const struct clops_op *op, const struct clops_arg *args, int32_t nargs,
                         uint32_t arg_size, const char *verb, int32_t *index,
                         union op_value slots[INVOKE_MAX_PARAMS])
{
    *index = registry_index(op);
    if (op == NULL || *index < 0)
        return err_set(CLOPS_ERR_NOT_FOUND,
                       "%s: parameter 'op' is %s (expected a descriptor from op_at or op_find)",
                       verb, op == NULL ? "NULL" : "not an operator of this library");
    if (nargs < 0 || (nargs > 0 && args == NULL))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: %s with nargs = %d and args = %p; expected nargs >= 0 and args "
                       "non-NULL when nargs > 0",
                       op->name, verb, (int)nargs, (const void *)args);
    /* Smaller than ABI 1.1's struct is no clops_arg at all; a size that is no multiple of the
     * members' alignment is no sizeof (a count passed for a size, say). */
    if (arg_size < CLOPS_ARG_SIZE_1_1 || arg_size % 8 != 0)
        return err_set(CLOPS_ERR_ABI_MISMATCH,
                       "%s: %s_sized: parameter 'arg_size' = %u; expected sizeof(struct "
                       "clops_arg) of the host's header: a multiple of 8, at least %d (ABI 1.1)",
                       op->name, verb, (unsigned)arg_size, CLOPS_ARG_SIZE_1_1);
    if (op->param_count > INVOKE_MAX_PARAMS)
        return err_set(CLOPS_ERR_INTERNAL, "%s: too many parameters for %s", op->name, verb);
    int32_t given[INVOKE_MAX_PARAMS] = {0};
    return bind_args(op, args, nargs, arg_size, slots, given);
}

int32_t invoke_bind(const struct clops_op *op, const struct clops_arg *args, int32_t nargs,
                    uint32_t arg_size, const char *verb, int32_t *index, union op_value *values)
{
    return bind_call(op, args, nargs, arg_size, verb, index, values);
}

int32_t invoke_op_sized(struct clops_pool *pool, const struct clops_op *op,
                        const struct clops_arg *args, int32_t nargs, uint32_t arg_size)
{
    err_clear();
    if (op != NULL && registry_index(op) >= 0 && pool == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'pool' is NULL", op->name);
    union op_value slots[INVOKE_MAX_PARAMS];
    int32_t index;
    int32_t status = bind_call(op, args, nargs, arg_size, "invoke", &index, slots);
    if (status != CLOPS_OK)
        return status;
    return call_run_index(pool, index, slots);
}

/* Writes the output parameters' specs into the host's array (elements output_size apart, each
 * member that fits); returns how many outputs the operator has. */
static int32_t write_specs(const struct clops_op *op, const struct op_output *expect,
                           struct clops_output_spec *outputs, uint32_t output_size,
                           int32_t capacity)
{
    int32_t k = 0;
    for (int32_t i = 0; i < op->param_count; i++) {
        const int32_t kind = op->params[i].kind;
        if (kind != CLOPS_PARAM_TENSOR_OUT && kind != CLOPS_PARAM_TENSOR_INOUT)
            continue;
        if (k < capacity) {
            struct clops_output_spec spec;
            memset(&spec, 0, sizeof spec);
            const size_t bytes = output_size < sizeof spec ? output_size : sizeof spec;
            spec.struct_size = (uint32_t)bytes;
            spec.param = i;
            spec.dtype = expect[i].dtype;
            spec.rank = expect[i].rank;
            for (int32_t d = 0; d < CLOPS_MAX_RANK; d++)
                spec.shape[d] = expect[i].shape[d];
            memcpy((char *)outputs + (size_t)k * output_size, &spec, bytes);
        }
        k++;
    }
    return k;
}

int32_t check_op_sized(struct clops_pool *pool, const struct clops_op *op,
                       const struct clops_arg *args, int32_t nargs, uint32_t arg_size,
                       struct clops_output_spec *outputs, uint32_t output_size, int32_t capacity,
                       int32_t *count)
{
    err_clear();
    if (capacity < 0 || (capacity > 0 && outputs == NULL))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "check_sized: capacity = %d and outputs = %p; expected capacity >= 0 and "
                       "outputs non-NULL when capacity > 0",
                       (int)capacity, (const void *)outputs);
    if (capacity > 0 && output_size < CLOPS_OUTPUT_SPEC_SIZE_1_2)
        return err_set(CLOPS_ERR_ABI_MISMATCH,
                       "check_sized: parameter 'output_size' = %u; expected sizeof(struct "
                       "clops_output_spec) of the host's header, at least %d",
                       (unsigned)output_size, CLOPS_OUTPUT_SPEC_SIZE_1_2);
    union op_value slots[INVOKE_MAX_PARAMS];
    struct op_output expect[CALL_MAX_PARAMS];
    for (int32_t i = 0; i < CALL_MAX_PARAMS; i++)
        expect[i].rank = -1;
    int32_t index = -1;
    int32_t status = bind_call(op, args, nargs, arg_size, "check", &index, slots);
    if (status == CLOPS_OK)
        status = call_check_index(pool, index, slots, expect);
    /* bind_call found the operator first (index >= 0) whatever it refused after. */
    const int32_t n = index >= 0 ? write_specs(op, expect, outputs, output_size, capacity) : 0;
    if (count != NULL)
        *count = n;
    return status;
}
