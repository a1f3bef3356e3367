/* reduce.c — the reduce operator: sum, min, max, norm2, argmin or argmax of a strided tensor,
 * whole or along one axis of a matrix (one launch of kernels/reduce.cl each); validation and
 * plans. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "op.h"
#include "pool.h"
#include "registry.h"
#include "tensor.h"

static const char op_name[] = "reduce";

enum reduce_op { OP_SUM = 0, OP_MIN, OP_MAX, OP_NORM2, OP_ARGMIN, OP_ARGMAX, OP_COUNT };
static const char *const op_values[] = {"sum", "min", "max", "norm2", "argmin", "argmax", NULL};

enum {
    X_DTYPES = CLOPS_DTYPE_BIT(CLOPS_F32) | CLOPS_DTYPE_BIT(CLOPS_F64) |
               CLOPS_DTYPE_BIT(CLOPS_I32) | CLOPS_DTYPE_BIT(CLOPS_U32),
    OUT_DTYPES = X_DTYPES | CLOPS_DTYPE_BIT(CLOPS_I64),
};

/* ---- Launch parameters per device ------------------------------------------------------------ */

/* wg: work-items per group (-DWG, a power of two); groups_per_cu: groups per compute unit that a
 * reduction is spread over (the whole tensor's groups, and the parts a long axis is cut into),
 * enough in flight to hide memory latency while each work-item still folds many elements; vec:
 * elements per load of a contiguous x (-DVEC); rows_per_group: rows a group takes in a
 * column-wise axis reduction; unroll: loads a work-item issues before using the first (-DUNROLL).
 * Starting points: on a GPU 16-byte loads, several in flight, and ~2000 resident threads per SM
 * are what reaches memory bandwidth; PoCL runs a group's work-items as a loop on one core, so
 * fewer, smaller groups do there. */
struct reduce_tuning {
    struct tuning_match match;
    int32_t wg, groups_per_cu, vec, rows_per_group, unroll;
};

static const struct reduce_tuning tunings[] = {
    {{"NVIDIA", CLOPS_DEVICE_GPU}, 256, 8, 4, 32, 8},
    {{"", CLOPS_DEVICE_GPU}, 256, 4, 4, 32, 4},
    {{"", CLOPS_DEVICE_CPU}, 64, 4, 4, 16, 2},
    {{"", 0}, 64, 4, 1, 16, 1},
};

/* The fewest elements a work-item folds in one part of a row cut into parts (reduce_axis): below
 * it, the partial states' writes and merges would cost more than the parallelism gains. */
enum { PART_MIN_PER_ITEM = 64 };

static int is_power_of_two(int64_t v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

/* The table's values as settings (operators.reduce.wg = 128; ...), each replacing the table's:
 * how to tune on a new device without rebuilding. */
enum { SET_WG, SET_VEC, SET_GROUPS_PER_CU, SET_ROWS_PER_GROUP, SET_UNROLL };
static const struct op_setting reduce_setting_list[] = {
    [SET_WG] = {"wg", SETTING_INT, 1, 1024, SETTING_PER_DEVICE, "WG"},
    [SET_VEC] = {"vec", SETTING_INT, 1, 16, SETTING_PER_DEVICE, "VEC"},
    [SET_GROUPS_PER_CU] = {"groups_per_cu", SETTING_INT, 1, 1024, SETTING_PER_DEVICE,
                           "GROUPS_PER_CU"},
    [SET_ROWS_PER_GROUP] = {"rows_per_group", SETTING_INT, 1, 1024, SETTING_PER_DEVICE,
                            "ROWS_PER_GROUP"},
    [SET_UNROLL] = {"unroll", SETTING_INT, 1, 16, SETTING_PER_DEVICE, "UNROLL"},
};
static const struct op_settings reduce_settings = {
    reduce_setting_list, (int32_t)(sizeof reduce_setting_list / sizeof reduce_setting_list[0])};

/* The device's row of the table with the configured settings in its place. Each is in its range
 * (checked with the configuration); what depends on the others, or on the device's values for
 * those not configured, is checked here. */
static int32_t tuning_for(struct clops_pool *pool, const struct pool_device *dev,
                          struct reduce_tuning *out)
{
    *out = tunings[CALL_TUNING_ROW(tunings, dev)];
    /* In the order of the settings (SET_WG ...). */
    int32_t *const fields[] = {&out->wg, &out->vec, &out->groups_per_cu, &out->rows_per_group,
                               &out->unroll};
    call_apply_settings(pool, &impl_reduce, fields, sizeof fields / sizeof fields[0]);
    if (!is_power_of_two(out->wg) || !is_power_of_two(out->vec) ||
        !is_power_of_two(out->rows_per_group) || out->rows_per_group > out->wg)
        return call_refuse_settings(pool, &impl_reduce,
                                    "wg %d, vec %d, rows_per_group %d: wg must be a power of two, "
                                    "vec 1, 2, 4, 8 or 16, rows_per_group a power of two <= wg",
                                    (int)out->wg, (int)out->vec, (int)out->rows_per_group);
    return CLOPS_OK;
}

/* ---- The call reduced to the kernels' terms ----------------------------------------------------
 */

/* Whole tensor (axis = -1): n elements of x, as up to 4 axes with adjacent ones merged, so that
 * any dense layout becomes one contiguous run. Along an axis: `rows` results, row r reducing
 * x[offset + r*row_stride + l*elem_stride] for l < len. */
struct reduce_plan {
    int32_t dtype, op;
    int64_t axis;
    const struct clops_tensor *x, *out;
    int64_t n;
    int32_t contiguous;
    int64_t shape[4], strides[4];
    int64_t rows, len, row_stride, elem_stride;
};

/* Drops axes of extent 1 and merges an axis into the one before it when the two step through
 * memory as one (outer stride = inner stride * inner extent). Row-major flattening order, and so
 * the element indices argmin/argmax report, are unchanged. Padded in front with extents of 1. */
static void plan_whole(const struct clops_tensor *x, struct reduce_plan *p)
{
    int64_t shape[4], strides[4];
    int k = 0;
    p->n = tensor_elements(x);
    for (int32_t i = 0; i < x->rank; i++) {
        if (x->shape[i] == 1)
            continue;
        int64_t inner;
        if (k > 0 && !__builtin_mul_overflow(x->strides[i], x->shape[i], &inner) &&
            strides[k - 1] == inner) {
            shape[k - 1] *= x->shape[i];
            strides[k - 1] = x->strides[i];
        } else {
            shape[k] = x->shape[i];
            strides[k] = x->strides[i];
            k++;
        }
    }
    p->contiguous = k == 0 || (k == 1 && strides[0] == 1);
    for (int i = 0; i < 4; i++) {
        int from = i - (4 - k);
        p->shape[i] = from >= 0 ? shape[from] : 1;
        p->strides[i] = from >= 0 ? strides[from] : 0;
    }
}

static void plan_axis(const struct clops_tensor *x, struct reduce_plan *p)
{
    int32_t a = (int32_t)p->axis, other = 1 - a;
    p->rows = x->shape[other];
    p->len = x->shape[a];
    p->row_stride = x->strides[other];
    p->elem_stride = x->strides[a];
}

/* What `out` must be: the dtype of the result of `op` on x of `dtype`. */
static int32_t result_dtype(int32_t op, int32_t dtype)
{
    if (op == OP_ARGMIN || op == OP_ARGMAX)
        return CLOPS_I64;
    if (op == OP_SUM && (dtype == CLOPS_I32 || dtype == CLOPS_U32))
        return CLOPS_I64;
    return dtype;
}

/* ---- Validation ------------------------------------------------------------------------------ */

static int32_t check_x(const struct pool_device *dev, const struct clops_tensor *x)
{
    if (x != NULL && (x->rank < 1 || x->rank > CLOPS_MAX_RANK))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'x' has rank %d; expected 1 to %d", op_name, (int)x->rank,
                       CLOPS_MAX_RANK);
    int32_t status = tensor_check(x, op_name, "x", X_DTYPES, x != NULL ? x->rank : 1, dev);
    if (status == CLOPS_OK && dev != NULL && x->dtype == CLOPS_F64 && !pool_device_info(dev)->fp64)
        status = err_set(CLOPS_ERR_UNSUPPORTED,
                         "%s: parameter 'x' is f64 but device '%s' has no double precision "
                         "(cl_khr_fp64)",
                         op_name, pool_device_info(dev)->name);
    return status;
}

static int32_t check_op_axis(const struct clops_tensor *x, int32_t op, int64_t axis)
{
    if (op < 0 || op >= OP_COUNT)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'op' = %d; expected 0..5 (sum, min, max, norm2, argmin, "
                       "argmax)",
                       op_name, (int)op);
    if (op == OP_NORM2 && x->dtype != CLOPS_F32 && x->dtype != CLOPS_F64)
        return err_set(CLOPS_ERR_UNSUPPORTED,
                       "%s: parameter 'x' has dtype %s; norm2 takes f32 or f64", op_name,
                       dtype_name(x->dtype));
    if (axis == -1 || (x->rank == 2 && (axis == 0 || axis == 1)))
        return CLOPS_OK;
    if (x->rank != 2)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'axis' = %lld but x has rank %d; expected -1 (the whole "
                       "tensor), or 0 or 1 for a rank-2 x",
                       op_name, (long long)axis, (int)x->rank);
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter 'axis' = %lld; expected -1 (the whole tensor), 0 or 1", op_name,
                   (long long)axis);
}

static int32_t check_out(const struct pool_device *dev, const struct reduce_plan *p)
{
    int32_t status = tensor_check(p->out, op_name, "out", OUT_DTYPES, 1, dev);
    if (status != CLOPS_OK)
        return status;
    int32_t want = result_dtype(p->op, p->dtype);
    if (p->out->dtype != want)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'out' has dtype %s; %s of %s x gives %s", op_name,
                       dtype_name(p->out->dtype), op_values[p->op], dtype_name(p->dtype),
                       dtype_name(want));
    int64_t count = p->axis < 0 ? 1 : p->rows;
    if (p->out->shape[0] != count)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'out' has shape[0] = %lld; expected %lld (%s)", op_name,
                       (long long)p->out->shape[0], (long long)count,
                       p->axis < 0 ? "one result for the whole tensor"
                                   : "x's extent along the axis not reduced");
    const struct tensor_use uses[2] = {{p->x, "x", 0}, {p->out, "out", 1}};
    return tensor_check_disjoint(op_name, uses, 2, NULL);
}

/* min, max and the arg ops have no value for no elements. */
static int32_t check_not_empty(const struct reduce_plan *p)
{
    int empty = p->axis < 0 ? p->n == 0 : p->rows > 0 && p->len == 0;
    if (!empty || p->op == OP_SUM || p->op == OP_NORM2)
        return CLOPS_OK;
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter 'x' has no elements%s; %s of nothing is undefined (sum and "
                   "norm2 give 0)",
                   op_name, p->axis < 0 ? "" : " along the axis", op_values[p->op]);
}

/* Every check, before anything touches the device; fills the plan on success. */
static int32_t reduce_check_args(struct op_call *call, const struct clops_tensor *x,
                                 const struct clops_tensor *out, int32_t op, int64_t axis,
                                 struct reduce_plan *p)
{
    const struct pool_device *dev = call->dev;
    int32_t status = check_x(dev, x);
    if (status == CLOPS_OK)
        status = check_op_axis(x, op, axis);
    if (status != CLOPS_OK)
        return status;
    *p = (struct reduce_plan){.dtype = x->dtype, .op = op, .axis = axis, .x = x, .out = out};
    if (axis < 0)
        plan_whole(x, p);
    else
        plan_axis(x, p);
    const int64_t count = axis < 0 ? 1 : p->rows;
    call_expect(call, 1, result_dtype(op, x->dtype), 1, &count);
    status = check_out(dev, p);
    if (status == CLOPS_OK)
        status = check_not_empty(p);
    return status;
}

/* ---- The device side ------------------------------------------------------------------------- */

/* The bytes of reduce.cl's partial state for the plan's op and dtype (-DSTATE_BYTES; the kernel
 * checks that they are its sizeof(state)): what the partial results' buffer holds per state.
 * Kept exact because that buffer is allocated per call, and NVIDIA's driver takes longer to hand
 * out a larger one (a 2 MiB buffer cost ~65 us of an axis reduction's wall time on an H100). */
static int32_t state_bytes(const struct reduce_plan *p)
{
    const int32_t elem = (int32_t)dtype_size(p->dtype);
    switch (p->op) {
    case OP_SUM: return p->dtype == CLOPS_F32 || p->dtype == CLOPS_F64 ? 2 * elem : 8;
    case OP_NORM2: return 6 * elem; /* three compensated sums */
    case OP_ARGMIN:
    case OP_ARGMAX: return 16; /* the value, then a long index */
    default: return elem;
    }
}

/* The kernel `name` built for the plan's dtype and operation and the tuning's shape. */
static int32_t create_kernel(struct clops_pool *pool, struct pool_device *dev,
                             const struct reduce_plan *p, const struct reduce_tuning *t,
                             const char *name, cl_kernel *out)
{
    /* The kernel compares DTYPE and OP with these, so that the values of enum clops_dtype and
     * the order of op_values are stated once, here and in the ABI. */
    char options[384];
    snprintf(options, sizeof options,
             "-DDTYPE=%d -DOP=%d -DWG=%d -DVEC=%d -DUNROLL=%d -DSTATE_BYTES=%d -DDT_F32=%d "
             "-DDT_F64=%d -DDT_I32=%d -DDT_U32=%d -DOP_SUM=%d -DOP_MIN=%d -DOP_MAX=%d "
             "-DOP_NORM2=%d -DOP_ARGMIN=%d -DOP_ARGMAX=%d",
             (int)p->dtype, (int)p->op, (int)t->wg, (int)t->vec, (int)t->unroll,
             (int)state_bytes(p), CLOPS_F32, CLOPS_F64, CLOPS_I32, CLOPS_U32, OP_SUM, OP_MIN,
             OP_MAX, OP_NORM2, OP_ARGMIN, OP_ARGMAX);
    return pool_create_kernel(pool, dev, op_name, "reduce", options, name, out);
}

/* The work-group size the device can run: the tuned one, or the largest power of two below the
 * device's limit (small embedded devices). */
static void fit_group_size(const struct pool_device *dev, struct reduce_tuning *t)
{
    const size_t max_group = pool_device_max_work_group(dev);
    while ((size_t)t->wg > max_group && t->wg > 1)
        t->wg /= 2;
    while (t->rows_per_group > t->wg)
        t->rows_per_group /= 2;
}

/* The groups that fill the device: groups_per_cu on each compute unit. */
static int64_t device_groups(const struct pool_device *dev, const struct reduce_tuning *t)
{
    const int32_t units = pool_device_info(dev)->compute_units;
    return (int64_t)(units > 0 ? units : 1) * t->groups_per_cu;
}

/* Whole-tensor groups: enough to fill the device, but no more than there are vectors to load;
 * one for no elements (it writes the identity). */
static int64_t whole_groups(const struct pool_device *dev, const struct reduce_tuning *t, int64_t n)
{
    int64_t per_group = (int64_t)t->wg * t->vec;
    int64_t wanted = n > 0 ? (n + per_group - 1) / per_group : 1;
    int64_t most = device_groups(dev, t);
    return wanted < most ? wanted : most;
}

/* The buffer of `states` partial states followed by `counts` counts of finished groups
 * (reduce.cl's counts_after), the counts zero before the kernel that counts on them: pool
 * scratch whose last user left them zero (the kernels set back to zero the counts they used, so
 * that repeated calls of one shape clear nothing), else zeroed in queue order. */
struct partials {
    cl_mem mem;
    int64_t counts_at, counts_bytes;
};

static int32_t take_partials(struct clops_pool *pool, struct pool_device *dev,
                             cl_command_queue queue, const struct reduce_plan *p, int64_t states,
                             int64_t counts, struct partials *out)
{
    out->counts_at = states * state_bytes(p);
    out->counts_bytes = counts * 4;
    int64_t zero[2];
    int32_t status = pool_scratch_take(pool, dev, out->counts_at + out->counts_bytes, op_name,
                                       "partial results", &out->mem, zero);
    if (status != CLOPS_OK)
        return status;
    if (zero[0] <= out->counts_at && out->counts_at + out->counts_bytes <= zero[0] + zero[1])
        return CLOPS_OK;
    const cl_int zero_count = 0;
    cl_int rc =
        clEnqueueFillBuffer(queue, out->mem, &zero_count, sizeof zero_count, (size_t)out->counts_at,
                            (size_t)out->counts_bytes, 0, NULL, NULL);
    if (rc != CL_SUCCESS) {
        pool_free_device_memory(dev, out->mem);
        out->mem = NULL;
        return err_cl(rc, "%s: clearing the counts of finished work-groups failed", op_name);
    }
    return CLOPS_OK;
}

/* After the kernel is enqueued: back to the pool with its counts zero once the kernel ran to
 * its end (and set them back), at the call's wait; released at once when it was not enqueued,
 * what it holds unknown. */
static void give_partials(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                          struct pool_work *work, const struct partials *s, int32_t status)
{
    if (status == CLOPS_OK)
        pool_work_give_scratch(pool, work, queue, dev, s->mem, s->counts_at, s->counts_bytes);
    else
        pool_free_device_memory(dev, s->mem);
}

static int32_t run_kernel(struct clops_pool *pool, cl_command_queue queue, cl_kernel kernel,
                          size_t global, size_t local, struct pool_work *work)
{
    return pool_launch_kernel(pool, work, queue, kernel, 1, &global, &local, op_name);
}

/* Whole tensor: one launch of `groups` groups into partial states, the last group merging them
 * into out (n = 0: one group writes the identity, 0 for sum and norm2). */
static int32_t run_whole(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                         const struct reduce_plan *p, const struct reduce_tuning *t,
                         const struct staged_tensor *sx, const struct staged_tensor *so,
                         struct pool_work *work)
{
    const int64_t groups = whole_groups(dev, t, p->n);
    struct partials partials = {0};
    cl_kernel kernel = NULL;
    int32_t status = take_partials(pool, dev, queue, p, groups, 1, &partials);
    if (status != CLOPS_OK)
        return status;
    const cl_long4 shape = {{p->shape[0], p->shape[1], p->shape[2], p->shape[3]}};
    const cl_long4 strides = {{p->strides[0], p->strides[1], p->strides[2], p->strides[3]}};
    const cl_long off = sx->offset, n = p->n, out_off = so->offset;
    const cl_int contiguous = p->contiguous;
    const struct kernel_arg args[] = {KARG(sx->mem),      KARG(off),     KARG(n),
                                      KARG(shape),        KARG(strides), KARG(contiguous),
                                      KARG(partials.mem), KARG(so->mem), KARG(out_off)};
    status = create_kernel(pool, dev, p, t, "reduce_whole", &kernel);
    if (status == CLOPS_OK)
        status = pool_set_kernel_args(kernel, 0, args, sizeof args / sizeof args[0], op_name);
    if (status == CLOPS_OK)
        status = run_kernel(pool, queue, kernel, (size_t)(groups * t->wg), (size_t)t->wg, work);
    pool_release_kernel(pool, kernel);
    give_partials(pool, dev, queue, work, &partials, status);
    return status;
}

static int32_t pow2_at_least(int64_t v)
{
    int32_t p = 1;
    while (p < v && p < (1 << 30))
        p *= 2;
    return p;
}

/* How many parts each row is cut into (reduce.cl's reduce_axis, dimension 1): enough that
 * `tiles` groups of rows times the parts fill the device, while each work-item of a part still
 * folds PART_MIN_PER_ITEM elements. */
static int64_t axis_parts(const struct pool_device *dev, const struct reduce_tuning *t,
                          int64_t tiles, int64_t len, int64_t ny)
{
    const int64_t target = device_groups(dev, t);
    if (tiles >= target)
        return 1;
    int64_t parts = (target + tiles - 1) / tiles;
    const int64_t most = len / (ny * PART_MIN_PER_ITEM);
    if (parts > most)
        parts = most;
    if (parts <= 1)
        return 1;
    const int64_t part = (len + parts - 1) / parts;
    return (len + part - 1) / part; /* no part left empty */
}

/* Along an axis: when a row's elements are the closer ones in memory, ny lanes per row with
 * about 16 elements each (so short rows share a group); otherwise rows_per_group neighbouring
 * rows per group, neighbouring work-items on neighbouring rows; long rows in several parts, the
 * last group of each group of rows merging them (reduce.cl). */
static int32_t run_axis(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                        const struct reduce_plan *p, const struct reduce_tuning *t,
                        const struct staged_tensor *sx, const struct staged_tensor *so,
                        struct pool_work *work)
{
    const cl_int lanes_fast = p->elem_stride <= p->row_stride || p->rows == 1;
    const int32_t lanes = pow2_at_least((p->len + 15) / 16);
    const cl_int ny = lanes_fast ? (lanes < t->wg ? lanes : t->wg) : t->wg / t->rows_per_group;
    const int64_t rows_per_group = t->wg / ny;
    const int64_t tiles = (p->rows + rows_per_group - 1) / rows_per_group;
    const int64_t parts = axis_parts(dev, t, tiles, p->len, ny);
    const cl_long part = (p->len + parts - 1) / parts;
    struct partials partials = {0};
    int32_t status = parts > 1
                         ? take_partials(pool, dev, queue, p, parts * p->rows, tiles, &partials)
                         : CLOPS_OK;
    if (status != CLOPS_OK)
        return status;
    const cl_long off = sx->offset, rows = p->rows, len = p->len, rs = p->row_stride,
                  es = p->elem_stride, out_off = so->offset, out_stride = p->out->strides[0];
    const struct kernel_arg args[] = {
        KARG(sx->mem), KARG(off),     KARG(rows),       KARG(len),  KARG(rs),
        KARG(es),      KARG(ny),      KARG(lanes_fast), KARG(part), KARG(partials.mem),
        KARG(so->mem), KARG(out_off), KARG(out_stride)};
    cl_kernel kernel = NULL;
    status = create_kernel(pool, dev, p, t, "reduce_axis", &kernel);
    if (status == CLOPS_OK)
        status = pool_set_kernel_args(kernel, 0, args, sizeof args / sizeof args[0], op_name);
    if (status == CLOPS_OK) {
        const size_t global[2] = {(size_t)tiles * (size_t)t->wg, (size_t)parts};
        const size_t local[2] = {(size_t)t->wg, 1};
        status = pool_launch_kernel(pool, work, queue, kernel, 2, global, local, op_name);
    }
    pool_release_kernel(pool, kernel);
    give_partials(pool, dev, queue, work, &partials, status);
    return status;
}

/* ---- The operator's steps: check and enqueue (call.h runs the rest) ------------------------- */

struct reduce_call {
    struct reduce_plan plan;
    struct reduce_tuning tuning;
};

/* The parameters' positions in the descriptor (reduce_params below). */
enum { P_X, P_OUT, P_OP, P_AXIS };

static int32_t reduce_check(struct op_call *call)
{
    const union op_value *v = call->values;
    struct reduce_call *r = call->plan;
    int32_t status = reduce_check_args(call, v[P_X].tensor, v[P_OUT].tensor, v[P_OP].i32,
                                       v[P_AXIS].i64, &r->plan);
    if (status != CLOPS_OK)
        return status;
    if (r->plan.axis >= 0 && r->plan.rows == 0) {
        call->nothing_to_do = 1; /* no results to write */
        return CLOPS_OK;
    }
    if (call->pool == NULL)
        return CLOPS_OK; /* a check without a pool: no tuning to check */
    status = tuning_for(call->pool, call->dev, &r->tuning);
    if (status == CLOPS_OK)
        fit_group_size(call->dev, &r->tuning);
    return status;
}

static int32_t reduce_enqueue(struct op_call *call)
{
    const struct reduce_call *r = call->plan;
    const struct staged_tensor *sx = &call->staged[P_X], *so = &call->staged[P_OUT];
    return r->plan.axis < 0 ? run_whole(call->pool, call->dev, call->queue, &r->plan, &r->tuning,
                                        sx, so, &call->work)
                            : run_axis(call->pool, call->dev, call->queue, &r->plan, &r->tuning, sx,
                                       so, &call->work);
}

/* ---- The entry point ------------------------------------------------------------------------- */

static int32_t reduce_entry(struct clops_pool *pool, const struct clops_tensor *x,
                            const struct clops_tensor *out, int32_t op, int64_t axis)
{
    const union op_value values[] = {{.tensor = x}, {.tensor = out}, {.i32 = op}, {.i64 = axis}};
    return call_run(pool, &impl_reduce, values);
}

/* ---- The descriptor -------------------------------------------------------------------------- */

static const struct clops_param reduce_params[] = {
    {"x", CLOPS_PARAM_TENSOR_IN, X_DTYPES, NULL, NULL,
     "The input: rank 1 to 4 with axis = -1, rank 2 with axis 0 or 1. Any strides. f32, f64, "
     "i32 or u32 (norm2: f32 or f64)."},
    {"out", CLOPS_PARAM_TENSOR_OUT, OUT_DTYPES, NULL, NULL,
     "The results, rank 1: 1 element for axis = -1, else x's extent along the other axis. "
     "dtype: x's for sum, min, max and norm2, except i64 for the sum of i32 or u32; i64 for "
     "argmin and argmax. Any stride; must not overlap x."},
    {"op", CLOPS_PARAM_ENUM, 0, op_values, NULL, "The reduction."},
    {"axis", CLOPS_PARAM_INT64, 0, NULL, "-1",
     "-1: the whole tensor; 0: down the columns of a matrix (one result per column); 1: along "
     "its rows (one result per row)."},
};

static const struct clops_op op_reduce = {
    .summary = "sum, min, max, norm2, argmin or argmax over a tensor or along a matrix axis.",
    .doc = "Reduces x with `op` over all its elements (axis = -1; x of rank 1 to 4, any strides) "
           "or along axis 0 or 1 of a rank-2 x (out[j] reduces column j for axis 0, out[i] row i "
           "for axis 1). Each is one launch: a whole tensor is streamed by work-groups (16-byte "
           "loads when it is dense) into per-group partial results, which the last work-group "
           "to finish merges; an axis reduction gives a row to a team of work-items (short rows "
           "share a work-group), or neighbouring rows to neighbouring work-items when those are "
           "closer in memory, and cuts long rows into parts over many work-groups whose partial "
           "results the last of them merges (the columns of a tall matrix).\n"
           "\n"
           "Accuracy: float sums are compensated (Neumaier) in every work-item and at every merge; "
           "the result is within 3u |sum| + 4 n u^2 sum|x_i| of the exact sum (u = 2^-24 for "
           "f32, 2^-53 for f64), whatever the order the device adds in. "
           "norm2 is Blue's one-pass algorithm as in LAPACK 3.10's xNRM2: squares of large and of "
           "tiny elements "
           "are summed in separate accumulators scaled by powers of two, so nothing overflows or "
           "underflows for elements near the largest or the smallest normal floats; with "
           "compensated sums the relative error is within 4u. Integer sums (i32, u32) are "
           "exact in 64 bits and written as i64; beyond int64 they wrap modulo 2^64 (impossible "
           "below 2^31 elements). min and max of integers are exact.\n"
           "\n"
           "Special values: NaN propagates: a NaN element makes sum, min, max and norm2 NaN; "
           "argmin and argmax return the index of the first NaN (NaN ranks beyond every number). "
           "Infinities follow IEEE arithmetic (sum of +inf and -inf is NaN; norm2 with an infinite "
           "element is +inf unless a NaN is present). Ties: argmin and argmax return the first "
           "index. Indices are i64 positions in the row-major order of x's shape (for axis = -1), "
           "or along the axis; strides and offset do not enter them.\n"
           "\n"
           "Empty x (or an axis of extent 0 with results to write): sum and norm2 give 0; min, "
           "max, argmin and argmax are CLOPS_ERR_INVALID_ARGUMENT naming 'x'. A rank-2 x whose "
           "other axis has extent 0 gives no results and is a valid call.\n"
           "\n"
           "Errors: CLOPS_ERR_INVALID_ARGUMENT, naming the parameter, for a NULL or malformed "
           "tensor, x of rank 0 or above 4, an op outside 0..5, an axis other than -1 (any rank) "
           "or 0 and 1 (rank 2), an out of the wrong dtype, rank or extent, a device buffer too "
           "small, or out overlapping x. CLOPS_ERR_UNSUPPORTED for a dtype x or out cannot have, "
           "norm2 of integers, or f64 on a device without double precision. A rejected call "
           "touches neither the device nor out.\n"
           "\n"
           "Tuning (settings in operators.reduce, checked when the pool is created): wg "
           "(1..1024, a power of two), work-items per group; vec (1, 2, 4, 8 or 16), elements "
           "per load of a dense x; groups_per_cu (1..1024), first-pass groups per compute unit; "
           "rows_per_group (1..1024, a power of two <= wg), rows a group takes in a column-wise "
           "axis reduction; unroll (1..16), loads a work-item has in flight. Each left out takes "
           "the device's value (wg, vec, groups_per_cu, rows_per_group, unroll: NVIDIA GPUs 256, "
           "4, 8, 32, 8; other GPUs 256, 4, 4, 32, 4; CPUs 64, 4, 4, 16, 2). A call whose settings "
           "break the power of two rules (with the device's values for those left out) is "
           "CLOPS_ERR_CONFIG naming them. -DWG=<n>, -DVEC=<n>, -DGROUPS_PER_CU=<n>, "
           "-DROWS_PER_GROUP=<n> and -DUNROLL=<n> in operators.reduce.build_options are read as "
           "these settings too.",
    OP_DESCRIPTOR_COMMON(op_name, reduce_params, reduce_entry, clops_reduce_fn),
};

const struct op_impl impl_reduce = OP_IMPL(&op_reduce, struct reduce_call, reduce_check,
                                           reduce_enqueue, NULL, NULL, &reduce_settings);
