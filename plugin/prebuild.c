/* prebuild.c — kernels built ahead of time (ABI 1.5's pool_prebuild, abi/clops.h): each named
 * operator run once per dtype on each device of the pool on small operands of its own, so that
 * every program its first calls would compile (on PoCL, seconds each) is built into the pool
 * and the on-disk cache beforehand.
 *
 * Why calls, not a list of programs: which programs a call builds follows from its plan (the
 * device's tuning, the dtype, the reduction and axis, gemm's tile class, LU's panel settings),
 * and running the call through the lifecycle builds exactly those, where a list kept here would
 * drift from the operators. The calls are the operators' own (checked, staged and run as any
 * call) on the device chosen, counted in no statistics (call_mark_part); their results are
 * thrown away. */
#include "prebuild.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "call.h"
#include "error.h"
#include "invoke.h"
#include "platform.h"
#include "pool.h"
#include "registry.h"
#include "tensor.h"

/* The edge of gemm's second call, M = N = GEMM_LARGE and K = 1: enough blocks of its largest
 * tiles (128 x 128) to give every compute unit of a 132-unit GPU one, so that it takes the
 * large tiles; K = 1 keeps its work and operands small (16 MiB of C in f32). */
enum { GEMM_LARGE = 2048, SMALL = 8, LU_ORDER = 300 };

/* Host operands for the calls: one block, zeroed once, large enough for the largest (gemm's C).
 * What a call leaves there is the next one's input, which any values do: results are dropped
 * (lu_call writes its own matrix). */
struct scratch {
    void *data;
    size_t bytes;
};

static struct clops_tensor tensor_of(struct scratch *s, int32_t dtype, int32_t rank, int64_t d0,
                                     int64_t d1)
{
    struct clops_tensor t = {.data = s->data, .dtype = dtype, .rank = rank};
    t.shape[0] = d0;
    t.shape[1] = d1;
    t.strides[rank - 1] = 1;
    if (rank == 2)
        t.strides[0] = d1;
    return t;
}

/* One call of the operator at `index` on `dev` (NULL: its configured device) with `args`
 * (bound as invoke binds them, the defaults filled), not counted in the statistics. */
static int32_t run_on(struct clops_pool *pool, int32_t index, struct pool_device *dev,
                      const struct clops_arg *args, int32_t nargs)
{
    union op_value values[CALL_MAX_PARAMS];
    int32_t bound = -1;
    int32_t status =
        invoke_bind(registry_at(index), args, nargs, sizeof *args, "pool_prebuild", &bound, values);
    struct call *call = NULL;
    if (status == CLOPS_OK)
        status = call_prepare(pool, index, dev, values, &call);
    if (status != CLOPS_OK)
        return status;
    call_mark_part(call);
    struct pool_device *on = call_op(call)->dev;
    call_start(call, pool_acquire_queue(on));
    status = call_complete(call);
    if (status != CLOPS_OK)
        status = err_set(status, "pool_prebuild: %s on '%s': %s", registry_at(index)->name,
                         on != NULL ? pool_device_info(on)->name : "the pool",
                         call_error_of(call)->message);
    call_free(call);
    return status;
}

static struct clops_arg tensor_arg(const char *name, const struct clops_tensor *t)
{
    return (struct clops_arg){.name = name, .kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = t};
}

/* ---- The operators' calls ------------------------------------------------------------------ */

static int32_t prebuild_gemm(struct clops_pool *pool, int32_t index, struct pool_device *dev,
                             int32_t dtype, struct scratch *s)
{
    int32_t status = CLOPS_OK;
    const int64_t sizes[2][3] = {{SMALL, SMALL, SMALL}, {GEMM_LARGE, GEMM_LARGE, 1}};
    for (int c = 0; c < 2 && status == CLOPS_OK; c++) {
        const int64_t m = sizes[c][0], n = sizes[c][1], k = sizes[c][2];
        /* A and B read the block's start, C is written: overlap between inputs is allowed, and
         * C lies past them. */
        const struct clops_tensor a = tensor_of(s, dtype, 2, m, k),
                                  b = tensor_of(s, dtype, 2, k, n);
        struct clops_tensor cm = tensor_of(s, dtype, 2, m, n);
        cm.offset = m * k + k * n;
        const struct clops_arg args[] = {tensor_arg("a", &a), tensor_arg("b", &b),
                                         tensor_arg("c", &cm)};
        status = run_on(pool, index, dev, args, 3);
    }
    return status;
}

/* lu, solve and lu_solve on I + 2J of order n (J the anti-diagonal: eigenvalues 3 and -1, and
 * every column's largest element off the diagonal, so that partial pivoting interchanges rows,
 * as on a general matrix) with nrhs right-hand sides; lu_solve takes it as factors with
 * pivots 1..n (any factors do: nothing is checked). The operands lie in one block, A, B, then
 * the pivots and info: in host memory, or with `buffer` in that device buffer (whose pivots
 * the kernels of their own copy and check on the device). */
static int32_t lu_call(struct clops_pool *pool, int32_t index, struct pool_device *dev,
                       int32_t dtype, struct scratch *s, int64_t n, int64_t nrhs,
                       struct clops_buffer *buffer)
{
    const size_t es = dtype == CLOPS_F64 ? 8 : 4, ints_at = (size_t)(n * n + n * nrhs) * es;
    char *base = s->data;
    memset(base, 0, ints_at + 4 * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        if (dtype == CLOPS_F64) {
            ((double *)base)[i * n + i] = 1;
            ((double *)base)[i * n + n - 1 - i] += 2;
        } else {
            ((float *)base)[i * n + i] = 1;
            ((float *)base)[i * n + n - 1 - i] += 2;
        }
    }
    int32_t *ipiv = (int32_t *)(base + ints_at);
    for (int64_t i = 0; i < n; i++)
        ipiv[i] = (int32_t)i + 1;
    struct clops_tensor a = tensor_of(s, dtype, 2, n, n), b = tensor_of(s, dtype, 2, n, nrhs),
                        piv = tensor_of(s, CLOPS_I32, 1, n, 0),
                        info = tensor_of(s, CLOPS_I32, 1, 1, 0);
    b.offset = n * n;
    piv.offset = (int64_t)(ints_at / 4);
    info.offset = piv.offset + n;
    if (buffer != NULL) {
        int32_t status = buffer_upload(buffer, 0, base, (int64_t)ints_at + 4 * (n + 1));
        if (status != CLOPS_OK)
            return status;
        struct clops_tensor *each[4] = {&a, &b, &piv, &info};
        for (int t = 0; t < 4; t++) {
            each[t]->data = NULL;
            each[t]->buffer = buffer;
        }
    }
    const char *name = registry_at(index)->name;
    if (strcmp(name, "lu") == 0) {
        const struct clops_arg args[] = {tensor_arg("a", &a), tensor_arg("ipiv", &piv),
                                         tensor_arg("info", &info)};
        return run_on(pool, index, dev, args, 3);
    }
    if (strcmp(name, "solve") == 0) {
        const struct clops_arg args[] = {tensor_arg("a", &a), tensor_arg("b", &b),
                                         tensor_arg("ipiv", &piv), tensor_arg("info", &info)};
        return run_on(pool, index, dev, args, 4);
    }
    const struct clops_arg args[] = {tensor_arg("lu", &a), tensor_arg("ipiv", &piv),
                                     tensor_arg("b", &b)};
    return run_on(pool, index, dev, args, 3);
}

/* Orders 8 and LU_ORDER (several block columns with a trailing update, 3 right-hand sides),
 * on host operands and again on a buffer of the device: the two take kernels of their own
 * (device pivots are copied and checked there). */
static int32_t prebuild_lu(struct clops_pool *pool, int32_t index, struct pool_device *dev,
                           int32_t dtype, struct scratch *s)
{
    int32_t status = lu_call(pool, index, dev, dtype, s, SMALL, 1, NULL);
    if (status == CLOPS_OK)
        status = lu_call(pool, index, dev, dtype, s, LU_ORDER, 3, NULL);
    struct clops_buffer *buffer = NULL;
    if (status == CLOPS_OK)
        status =
            buffer_create_on(pool, pool_device_index(dev),
                             (int64_t)(LU_ORDER * LU_ORDER + LU_ORDER * 3) * 8 + 4 * (LU_ORDER + 1),
                             &buffer, "pool_prebuild");
    if (status == CLOPS_OK)
        status = lu_call(pool, index, dev, dtype, s, LU_ORDER, 3, buffer);
    buffer_release(buffer);
    return status;
}

static int32_t prebuild_transpose(struct clops_pool *pool, int32_t index, struct pool_device *dev,
                                  int32_t dtype, struct scratch *s)
{
    const struct clops_tensor x = tensor_of(s, dtype, 2, SMALL, SMALL + 1);
    struct clops_tensor y = tensor_of(s, dtype, 2, SMALL + 1, SMALL);
    y.offset = SMALL * (SMALL + 1);
    const struct clops_arg args[] = {tensor_arg("x", &x), tensor_arg("y", &y)};
    return run_on(pool, index, dev, args, 2);
}

/* Every reduction ("op"'s values) along every axis (-1, 0, 1): each builds kernels of its own. */
static int32_t prebuild_reduce(struct clops_pool *pool, int32_t index, struct pool_device *dev,
                               int32_t dtype, struct scratch *s)
{
    const struct clops_op *op = registry_at(index);
    const char *const *kinds = NULL;
    for (int32_t p = 0; p < op->param_count; p++)
        if (strcmp(op->params[p].name, "op") == 0)
            kinds = op->params[p].enum_values;
    const int64_t rows = 33, cols = 65;
    const struct clops_tensor x = tensor_of(s, dtype, 2, rows, cols);
    int32_t status = CLOPS_OK;
    for (int k = 0; kinds != NULL && kinds[k] != NULL && status == CLOPS_OK; k++) {
        const int argx = strncmp(kinds[k], "arg", 3) == 0;
        if (strcmp(kinds[k], "norm2") == 0 && dtype != CLOPS_F32 && dtype != CLOPS_F64)
            continue; /* norm2 takes floats only */
        const int32_t out_dtype =
            argx                                                                         ? CLOPS_I64
            : (dtype == CLOPS_I32 || dtype == CLOPS_U32) && strcmp(kinds[k], "sum") == 0 ? CLOPS_I64
                                                                                         : dtype;
        for (int64_t axis = -1; axis <= 1 && status == CLOPS_OK; axis++) {
            struct scratch at_out = {(char *)s->data + rows * cols * 8, 0};
            const struct clops_tensor out = tensor_of(&at_out, out_dtype, 1,
                                                      axis < 0    ? 1
                                                      : axis == 0 ? cols
                                                                  : rows,
                                                      0);
            const struct clops_arg args[] = {
                tensor_arg("x", &x),
                tensor_arg("out", &out),
                {.name = "op", .kind = CLOPS_PARAM_ENUM, .s = kinds[k]},
                {.name = "axis", .kind = CLOPS_PARAM_INT64, .i = axis}};
            status = run_on(pool, index, dev, args, 4);
        }
    }
    return status;
}

/* ---- The whole call ------------------------------------------------------------------------ */

typedef int32_t (*prebuild_fn)(struct clops_pool *pool, int32_t index, struct pool_device *dev,
                               int32_t dtype, struct scratch *s);

/* The operator's calls by name; Mandelbrot's run apart (prebuild_mandelbrot). */
static prebuild_fn prebuild_for(const char *name)
{
    static const struct {
        const char *name;
        prebuild_fn fn;
    } table[] = {{"gemm", prebuild_gemm},
                 {"lu", prebuild_lu},
                 {"solve", prebuild_lu},
                 {"lu_solve", prebuild_lu},
                 {"transpose", prebuild_transpose},
                 {"reduce", prebuild_reduce}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].fn;
    return NULL;
}

/* The dtypes of the operator's first tensor parameter (Mandelbrot: its precisions f32, f64). */
static uint32_t dtypes_taken(const struct clops_op *op)
{
    if (strcmp(op->name, "mandelbrot") == 0)
        return CLOPS_DTYPE_BIT(CLOPS_F32) | CLOPS_DTYPE_BIT(CLOPS_F64);
    for (int32_t p = 0; p < op->param_count; p++)
        if (op->params[p].kind == CLOPS_PARAM_TENSOR_IN ||
            op->params[p].kind == CLOPS_PARAM_TENSOR_INOUT)
            return op->params[p].dtypes;
    return 0;
}

/* Mandelbrot in one precision: calls on each side of the split ("1": the GPUs, "0": the other
 * devices), of 64 tiles, so that every device of the side takes some (its workers start on
 * every one), and of 4 large ones. f64 is left out where a device of the pool has no double
 * precision (the splitter would refuse it there). */
static int32_t prebuild_mandelbrot(struct clops_pool *pool, int32_t index, int32_t dtype,
                                   struct scratch *s)
{
    for (int32_t d = 0; dtype == CLOPS_F64 && d < pool_device_count(pool); d++)
        if (!pool_device_info(pool_device_at(pool, d))->fp64)
            return CLOPS_OK;
    int32_t status = CLOPS_OK;
    static const char *const sides[2] = {"1", "0"};
    /* 64 tiles of 16, and 4 of the default 256: PoCL compiles a kernel again for a grid past
     * its "small grid" bound (the demo's 400 x 600 was one). */
    static const int64_t shapes[2][2] = {{128, 16}, {512, 256}};
    for (int k = 0; k < 4 && status == CLOPS_OK; k++) {
        const int64_t edge = shapes[k / 2][0], tile = shapes[k / 2][1];
        const struct clops_tensor iterations = tensor_of(s, CLOPS_U32, 2, edge, edge);
        const struct clops_arg args[] = {
            tensor_arg("iterations", &iterations),
            {.name = "max_iterations", .kind = CLOPS_PARAM_INT64, .i = 16},
            {.name = "precision",
             .kind = CLOPS_PARAM_ENUM,
             .s = dtype == CLOPS_F64 ? "f64" : "f32"},
            {.name = "split", .kind = CLOPS_PARAM_STRING, .s = sides[k % 2]},
            {.name = "tile", .kind = CLOPS_PARAM_INT64, .i = tile}};
        status = run_on(pool, index, NULL, args, 5);
    }
    return status;
}

/* Whether `dtype` is among the host's (all when dtypes is NULL). */
static int wanted(const struct clops_prebuild_args *a, int32_t dtype)
{
    if (a->dtypes == NULL)
        return 1;
    for (int32_t i = 0; i < a->dtype_count; i++)
        if (a->dtypes[i] == dtype)
            return 1;
    return 0;
}

/* The operators named (all when ops is NULL), by registry index, checked: *count of them. */
static int32_t named_ops(const struct clops_prebuild_args *a, int32_t *indices, int32_t *count)
{
    *count = 0;
    if (a->ops == NULL) {
        for (int32_t i = 0; i < registry_count(); i++)
            indices[(*count)++] = i;
        return CLOPS_OK;
    }
    for (int32_t i = 0; i < a->op_count; i++) {
        const int32_t index = a->ops[i] != NULL ? registry_index_by_name(a->ops[i]) : -1;
        if (index < 0)
            return err_set(CLOPS_ERR_NOT_FOUND,
                           "pool_prebuild: ops[%d] = \"%s\" is not an operator (clops ops lists "
                           "them)",
                           (int)i, a->ops[i] != NULL ? a->ops[i] : "(null)");
        indices[(*count)++] = index;
    }
    return CLOPS_OK;
}

int32_t prebuild_run(struct clops_prebuild_args *a)
{
    int32_t indices[64], count = 0;
    int32_t status = named_ops(a, indices, &count);
    if (status != CLOPS_OK)
        return status;
    uint32_t any = 0;
    for (int32_t i = 0; i < count; i++)
        any |= dtypes_taken(registry_at(indices[i]));
    for (int32_t d = 0; a->dtypes != NULL && d < a->dtype_count; d++)
        if (a->dtypes[d] <= 0 || a->dtypes[d] > 31 || !(any & CLOPS_DTYPE_BIT(a->dtypes[d])))
            return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                           "pool_prebuild: dtypes[%d] = %d is taken by none of the operators "
                           "named",
                           (int)d, (int)a->dtypes[d]);
    struct clops_stats before = {.struct_size = sizeof before}, after = before;
    pool_read_stats(a->pool, &before);
    const int64_t start = os_monotonic_ns();
    /* Gemm's large C (f64) and both inputs, which lie before it. */
    struct scratch s = {.bytes = (size_t)(GEMM_LARGE + 2) * GEMM_LARGE * 8};
    s.data = calloc(1, s.bytes);
    if (s.data == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool_prebuild: out of host memory");
    for (int32_t i = 0; i < count && status == CLOPS_OK; i++) {
        const struct clops_op *op = registry_at(indices[i]);
        const uint32_t taken = dtypes_taken(op);
        for (int32_t dtype = 1; dtype < 32 && status == CLOPS_OK; dtype++) {
            if (!(taken & CLOPS_DTYPE_BIT(dtype)) || !wanted(a, dtype))
                continue;
            if (strcmp(op->name, "mandelbrot") == 0) {
                status = prebuild_mandelbrot(a->pool, indices[i], dtype, &s);
                continue;
            }
            const prebuild_fn fn = prebuild_for(op->name);
            for (int32_t d = 0; fn != NULL && d < pool_device_count(a->pool) && status == CLOPS_OK;
                 d++) {
                struct pool_device *dev = pool_device_at(a->pool, d);
                if (dtype == CLOPS_F64 && !pool_device_info(dev)->fp64)
                    continue; /* a call would be refused: nothing to build there */
                status = fn(a->pool, indices[i], dev, dtype, &s);
            }
        }
    }
    free(s.data);
    pool_read_stats(a->pool, &after);
    a->programs_built = after.programs_built - before.programs_built;
    a->programs_loaded = after.programs_loaded - before.programs_loaded;
    a->build_ns = after.build_ns - before.build_ns;
    a->wall_ns = os_monotonic_ns() - start;
    return status;
}
