/* transpose.c — the transpose operator: y = x^T over the last two axes of a matrix or a batch,
 * out of place for any layouts, or in place for square matrices; kernels in transpose.cl. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "op.h"
#include "pool.h"
#include "registry.h"
#include "tensor.h"

static const char op_name[] = "transpose";

enum {
    TRANSPOSE_DTYPES = CLOPS_DTYPE_BIT(CLOPS_F32) | CLOPS_DTYPE_BIT(CLOPS_F64) |
                       CLOPS_DTYPE_BIT(CLOPS_I32) | CLOPS_DTYPE_BIT(CLOPS_U32) |
                       CLOPS_DTYPE_BIT(CLOPS_U8)
};

/* ---- Tiles per device ------------------------------------------------------------------------ */

/* TILE x TILE elements per work-group, moved by TILE x ROWS work-items (-DTILE, -DROWS). 32 x 8
 * is the classic GPU choice: a warp reads one 32-element line of a tile, and each work-item moves
 * 4 elements, which hides latency without a large group. vec_bytes: the width of the vector
 * accesses of transpose_vec (row-major aligned matrices), 1 = scalar only; 16 bytes is a GPU's
 * widest load. vec_tile x vec_tile elements per work-group of transpose_vec, moved by
 * vec_tile/VEC x vec_rows work-items (VEC = vec_bytes / element size elements per access;
 * -DVEC_TILE, -DVEC_ROWS). On an H100, 64 x 16 (256 work-items, four 16-byte loads and stores
 * each, 256-byte runs of a row) ran 8192^2 f32 in 0.191 ms against 0.204 for 32 x 8 and 0.220
 * for the scalar kernel; the in-place kernel, scalar, stays faster at 32 x 8 (0.255 ms against
 * 0.317 at 64 x 16). */
static const struct transpose_tiles {
    struct tuning_match match;
    int32_t tile, rows, vec_bytes, vec_tile, vec_rows;
} tunings[] = {
    {{"NVIDIA", CLOPS_DEVICE_GPU}, 32, 8, 16, 64, 16},
    {{"", CLOPS_DEVICE_GPU}, 32, 8, 16, 64, 16},
    {{"", CLOPS_DEVICE_CPU}, 32, 8, 16, 32, 8},
    {{"", 0}, 16, 4, 1, 16, 4},
};

/* The tiles as settings (operators.transpose.tile = 16; rows = 4;), each replacing the table's. */
enum { SET_TILE, SET_ROWS, SET_VEC_BYTES, SET_VEC_TILE, SET_VEC_ROWS };
static const struct op_setting transpose_setting_list[] = {
    [SET_TILE] = {"tile", SETTING_INT, 1, 64, SETTING_PER_DEVICE, "TILE"},
    [SET_ROWS] = {"rows", SETTING_INT, 1, 64, SETTING_PER_DEVICE, "ROWS"},
    [SET_VEC_BYTES] = {"vec_bytes", SETTING_INT, 1, 16, SETTING_PER_DEVICE, "VEC_BYTES"},
    [SET_VEC_TILE] = {"vec_tile", SETTING_INT, 1, 64, SETTING_PER_DEVICE, "VEC_TILE"},
    [SET_VEC_ROWS] = {"vec_rows", SETTING_INT, 1, 64, SETTING_PER_DEVICE, "VEC_ROWS"},
};
static const struct op_settings transpose_settings = {
    transpose_setting_list,
    (int32_t)(sizeof transpose_setting_list / sizeof transpose_setting_list[0])};

/* Halves *rows (keeping it a divisor of tile) while a tile x rows group is larger than the device
 * allows. */
static void fit_rows(int32_t tile, int32_t *rows, size_t max_group)
{
    while ((size_t)(tile * *rows) > max_group && *rows > 1)
        *rows = *rows % 2 == 0 && tile % (*rows / 2) == 0 ? *rows / 2 : 1;
}

/* The table's tiles for `dev`, or the configured ones, shrunk to the device's work-group limit.
 * Each setting is in its range (checked with the configuration); that tile is a multiple of rows
 * may involve the device's value for one left out, so it is checked here. */
static int32_t tiles_for(struct clops_pool *pool, const struct pool_device *dev,
                         struct transpose_tiles *out)
{
    *out = tunings[CALL_TUNING_ROW(tunings, dev)];
    /* In the order of the settings (SET_TILE ...). */
    int32_t *const fields[] = {&out->tile, &out->rows, &out->vec_bytes, &out->vec_tile,
                               &out->vec_rows};
    call_apply_settings(pool, &impl_transpose, fields, sizeof fields / sizeof fields[0]);
    if (out->tile % out->rows != 0 || out->vec_tile % out->vec_rows != 0)
        return call_refuse_settings(pool, &impl_transpose,
                                    "tile %d must be a multiple of rows %d, vec_tile %d of "
                                    "vec_rows %d",
                                    (int)out->tile, (int)out->rows, (int)out->vec_tile,
                                    (int)out->vec_rows);
    const size_t max_group = pool_device_max_work_group(dev);
    fit_rows(out->tile, &out->rows, max_group);
    fit_rows(out->vec_tile, &out->vec_rows, max_group);
    return CLOPS_OK;
}

/* ---- The call ----------------------------------------------------------------------------------
 */

/* A batch of `batch` m x n matrices x and their n x m transposes y; strides of the batch, row
 * and column axes (batch strides 0 for rank 2). */
struct transpose_plan {
    const struct clops_tensor *x, *y;
    int64_t batch, m, n;
    int64_t xb, xm, xn, yb, yn, ym;
    int32_t in_place;
};

static void plan_from(const struct clops_tensor *x, const struct clops_tensor *y,
                      struct transpose_plan *p)
{
    const int32_t r = x->rank - 2;
    *p = (struct transpose_plan){.x = x,
                                 .y = y,
                                 .batch = r > 0 ? x->shape[0] : 1,
                                 .m = x->shape[r],
                                 .n = x->shape[r + 1],
                                 .xb = r > 0 ? x->strides[0] : 0,
                                 .xm = x->strides[r],
                                 .xn = x->strides[r + 1],
                                 .yb = r > 0 ? y->strides[0] : 0,
                                 .yn = y->strides[r],
                                 .ym = y->strides[r + 1]};
}

/* ---- Validation ------------------------------------------------------------------------------ */

/* The same view of the same memory: what "in place" means. */
static int same_view(const struct clops_tensor *x, const struct clops_tensor *y)
{
    if (x->data != y->data || x->buffer != y->buffer || x->offset != y->offset ||
        x->rank != y->rank)
        return 0;
    for (int32_t i = 0; i < x->rank; i++)
        if (x->shape[i] != y->shape[i] || (x->shape[i] > 1 && x->strides[i] != y->strides[i]))
            return 0;
    return 1;
}

/* Whether no two elements of t share an address: with the axes of extent > 1 ordered by
 * stride, each stride must step over everything the smaller ones span. Written elements that
 * alias each other would make the result depend on the order of the writes. */
static int elements_are_distinct(const struct clops_tensor *t)
{
    int64_t extent[CLOPS_MAX_RANK], stride[CLOPS_MAX_RANK];
    int k = 0;
    for (int32_t i = 0; i < t->rank; i++)
        if (t->shape[i] > 1) {
            int j = k++;
            while (j > 0 && stride[j - 1] > t->strides[i]) { /* insertion sort by stride */
                extent[j] = extent[j - 1];
                stride[j] = stride[j - 1];
                j--;
            }
            extent[j] = t->shape[i];
            stride[j] = t->strides[i];
        }
    for (int j = 1; j < k; j++)
        if (stride[j] < stride[j - 1] * extent[j - 1])
            return 0;
    return 1;
}

static int32_t check_tensors(const struct pool_device *dev, const struct clops_tensor *x,
                             const struct clops_tensor *y)
{
    if (x != NULL && x->rank != 2 && x->rank != 3)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'x' has rank %d; expected 2 (a matrix) or 3 (a batch)",
                       op_name, (int)x->rank);
    int32_t status = tensor_check(x, op_name, "x", TRANSPOSE_DTYPES, x != NULL ? x->rank : 2, dev);
    if (status == CLOPS_OK)
        status = tensor_check(y, op_name, "y", TRANSPOSE_DTYPES, x->rank, dev);
    if (status == CLOPS_OK && y->dtype != x->dtype)
        status = err_set(CLOPS_ERR_INVALID_ARGUMENT,
                         "%s: parameter 'y' has dtype %s but 'x' has %s; expected the same",
                         op_name, dtype_name(y->dtype), dtype_name(x->dtype));
    return status;
}

/* "3x17x31" for messages. */
static void shape_text(const int64_t *shape, int32_t rank, char *out, size_t size)
{
    int used = 0;
    for (int32_t i = 0; i < rank && used >= 0 && (size_t)used < size; i++)
        used +=
            snprintf(out + used, size - (size_t)used, "%s%lld", i ? "x" : "", (long long)shape[i]);
}

static int32_t check_shape(struct op_call *call, const struct clops_tensor *x,
                           const struct clops_tensor *y)
{
    int64_t want[CLOPS_MAX_RANK];
    memcpy(want, x->shape, sizeof want);
    want[x->rank - 2] = x->shape[x->rank - 1];
    want[x->rank - 1] = x->shape[x->rank - 2];
    call_expect(call, 1, x->dtype, x->rank, want);
    if (memcmp(want, y->shape, (size_t)x->rank * sizeof want[0]) == 0)
        return CLOPS_OK;
    char expected[96], got[96];
    shape_text(want, x->rank, expected, sizeof expected);
    shape_text(y->shape, y->rank, got, sizeof got);
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter 'y' has shape %s; expected %s (x's last two axes swapped)",
                   op_name, got, expected);
}

static int32_t check_memory(const struct clops_tensor *x, const struct clops_tensor *y)
{
    if (!elements_are_distinct(y))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'y' has strides under which elements share memory; every "
                       "element written must have its own address",
                       op_name);
    if (same_view(x, y))
        return CLOPS_OK;
    const struct tensor_use uses[2] = {{x, "x", 0}, {y, "y", 1}};
    return tensor_check_disjoint(op_name, uses, 2,
                                 "in place needs y to be exactly x (same memory, offset, shape "
                                 "and strides) and square matrices");
}

/* Every check, before anything touches the device. */
static int32_t transpose_check_args(struct op_call *call, const struct clops_tensor *x,
                                    const struct clops_tensor *y, struct transpose_plan *p)
{
    int32_t status = check_tensors(call->dev, x, y);
    if (status == CLOPS_OK)
        status = check_shape(call, x, y);
    if (status == CLOPS_OK)
        status = check_memory(x, y);
    if (status != CLOPS_OK)
        return status;
    plan_from(x, y, p);
    p->in_place = same_view(x, y) && tensor_span(x) > 0;
    return CLOPS_OK;
}

/* ---- The device side ------------------------------------------------------------------------- */

static const char *element_type(int32_t dtype)
{
    switch (dtype_size(dtype)) {
    case 1: return "uchar";
    case 8: return "ulong";
    default: return "uint";
    }
}

/* Elements per vector access of transpose_vec: vec_bytes of them, a power of two that divides
 * the tile (1: no vector kernel). */
static int32_t vector_elements(int32_t dtype, const struct transpose_tiles *t)
{
    int32_t vec = 1;
    while (vec * 2 * dtype_size(dtype) <= t->vec_bytes && t->vec_tile % (vec * 2) == 0 && vec < 16)
        vec *= 2;
    return vec;
}

static int32_t create_kernel(struct clops_pool *pool, struct pool_device *dev, int32_t dtype,
                             const struct transpose_tiles *t, const char *name, cl_kernel *out)
{
    char options[128];
    snprintf(options, sizeof options,
             "-DT=%s -DTILE=%d -DROWS=%d -DVEC=%d -DVEC_TILE=%d -DVEC_ROWS=%d", element_type(dtype),
             (int)t->tile, (int)t->rows, (int)vector_elements(dtype, t), (int)t->vec_tile,
             (int)t->vec_rows);
    return pool_create_kernel(pool, dev, op_name, "transpose", options, name, out);
}

static int64_t tile_count(int64_t extent, int32_t tile)
{
    return (extent + tile - 1) / tile;
}

/* Whether transpose_vec can take the plan: out of place, x's rows and y's rows contiguous (both
 * row-major), and every vector it loads or stores aligned: the offsets, the row and batch
 * strides and both extents multiples of vec elements. */
static int vector_path(const struct transpose_plan *p, int64_t vec)
{
    if (vec <= 1 || p->in_place || p->xn != 1 || p->ym != 1)
        return 0;
    const int64_t must_divide[] = {p->m, p->n, p->xm, p->yn, p->xb, p->yb};
    for (size_t k = 0; k < sizeof must_divide / sizeof must_divide[0]; k++)
        if (must_divide[k] % vec != 0)
            return 0;
    return 1;
}

/* Both matrices column-major: the same transpose as of the n x m row-major matrix x^T (rows j)
 * into the m x n row-major y^T, so the row-major kernel serves it. */
static struct transpose_plan row_major_plan(const struct transpose_plan *p)
{
    struct transpose_plan q = *p;
    if (p->m > 1 && p->n > 1 && p->xm == 1 && p->yn == 1) {
        q.m = p->n, q.n = p->m;
        q.xm = p->xn, q.xn = p->xm;
        q.yn = p->ym, q.ym = p->yn;
    }
    return q;
}

/* Launches transpose_vec on the row-major form of the plan; *taken = 0 (and nothing launched)
 * when it cannot take it. */
static int32_t launch_vector(struct clops_pool *pool, struct pool_device *dev,
                             cl_command_queue queue, const struct transpose_plan *plan,
                             const struct transpose_tiles *t, const struct staged_tensor *sx,
                             const struct staged_tensor *sy, struct pool_work *work, int *taken)
{
    const int32_t vec = vector_elements(plan->x->dtype, t);
    const struct transpose_plan p = row_major_plan(plan);
    *taken = vector_path(&p, vec) && sx->offset % vec == 0 && sy->offset % vec == 0;
    if (!*taken)
        return CLOPS_OK;
    const cl_long x_off = sx->offset, xb = p.xb, xm = p.xm, y_off = sy->offset, yb = p.yb,
                  yn = p.yn, m = p.m, n = p.n;
    const struct kernel_arg args[] = {KARG(sx->mem), KARG(x_off), KARG(xb), KARG(xm), KARG(sy->mem),
                                      KARG(y_off),   KARG(yb),    KARG(yn), KARG(m),  KARG(n)};
    const size_t local[3] = {(size_t)(t->vec_tile / vec), (size_t)t->vec_rows, 1};
    const size_t global[3] = {(size_t)(tile_count(p.n, t->vec_tile) * (int64_t)local[0]),
                              (size_t)(tile_count(p.m, t->vec_tile) * t->vec_rows),
                              (size_t)p.batch};
    cl_kernel kernel = NULL;
    int32_t status = create_kernel(pool, dev, p.x->dtype, t, "transpose_vec", &kernel);
    if (status == CLOPS_OK)
        status = pool_set_kernel_args(kernel, 0, args, sizeof args / sizeof args[0], op_name);
    if (status == CLOPS_OK)
        status = pool_launch_kernel(pool, work, queue, kernel, 3, global, local, op_name);
    pool_release_kernel(pool, kernel);
    return status;
}

/* Binds and launches one of the two kernels; `in_place` picks which. */
static int32_t launch(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                      const struct transpose_plan *p, const struct transpose_tiles *t,
                      const struct staged_tensor *sx, const struct staged_tensor *sy,
                      struct pool_work *work)
{
    const cl_long x_off = sx->offset, xb = p->xb, xm = p->xm, xn = p->xn, y_off = sy->offset;
    const cl_long yb = p->yb, yn = p->yn, ym = p->ym, m = p->m, n = p->n;
    /* The axis of smaller stride is the one whose neighbours are adjacent in memory. */
    const cl_int x_i_fast = p->m > 1 && (p->n == 1 || p->xm < p->xn);
    const cl_int y_i_fast = p->m > 1 && (p->n == 1 || p->ym < p->yn);
    const struct kernel_arg out_of_place[] = {
        KARG(sx->mem), KARG(x_off), KARG(xb), KARG(xm), KARG(xn), KARG(sy->mem),  KARG(y_off),
        KARG(yb),      KARG(yn),    KARG(ym), KARG(m),  KARG(n),  KARG(x_i_fast), KARG(y_i_fast)};
    const struct kernel_arg in_place[] = {KARG(sx->mem), KARG(x_off), KARG(xb),      KARG(xm),
                                          KARG(xn),      KARG(n),     KARG(x_i_fast)};
    const int64_t tn = tile_count(p->n, t->tile), tm = tile_count(p->m, t->tile);
    size_t local[3] = {(size_t)t->tile, (size_t)t->rows, 1};
    size_t global[3] = {(size_t)(tn * t->tile), (size_t)(tm * t->rows), (size_t)p->batch};
    /* In place, the tn (tn + 1) / 2 tiles of a triangle: halved before the product, which then
     * cannot overflow (x's element count bounds tn^2). */
    const int64_t triangle = tn % 2 == 0 ? tn / 2 * (tn + 1) : (tn + 1) / 2 * tn;
    if (p->in_place)
        global[0] = (size_t)(triangle * t->tile), global[1] = (size_t)t->rows;
    cl_kernel kernel = NULL;
    int32_t status =
        create_kernel(pool, dev, p->x->dtype, t,
                      p->in_place ? "transpose_square_in_place" : "transpose", &kernel);
    if (status == CLOPS_OK)
        status = p->in_place ? pool_set_kernel_args(kernel, 0, in_place, 7, op_name)
                             : pool_set_kernel_args(kernel, 0, out_of_place, 14, op_name);
    if (status == CLOPS_OK)
        status = pool_launch_kernel(pool, work, queue, kernel, 3, global, local, op_name);
    pool_release_kernel(pool, kernel);
    return status;
}

/* ---- The operator's steps: check and enqueue (call.h runs the rest) ------------------------- */

struct transpose_call {
    struct transpose_plan plan;
    struct transpose_tiles tiles;
};

static int32_t transpose_check(struct op_call *call)
{
    struct transpose_call *t = call->plan;
    int32_t status =
        transpose_check_args(call, call->values[0].tensor, call->values[1].tensor, &t->plan);
    if (status != CLOPS_OK)
        return status;
    if (t->plan.batch == 0 || t->plan.m == 0 || t->plan.n == 0) {
        call->nothing_to_do = 1;
        return CLOPS_OK;
    }
    /* In place, x's staging is y's: one copy in, the same copy back. */
    if (t->plan.in_place) {
        call->stage[0] = STAGE_INOUT;
        call->stage[1] = STAGE_NONE;
    }
    /* A check without a pool has no tuning to check. */
    return call->pool != NULL ? tiles_for(call->pool, call->dev, &t->tiles) : CLOPS_OK;
}

static int32_t transpose_enqueue(struct op_call *call)
{
    const struct transpose_call *t = call->plan;
    const struct staged_tensor *sy = &call->staged[t->plan.in_place ? 0 : 1];
    int taken = 0;
    int32_t status = launch_vector(call->pool, call->dev, call->queue, &t->plan, &t->tiles,
                                   &call->staged[0], sy, &call->work, &taken);
    if (status != CLOPS_OK || taken)
        return status;
    return launch(call->pool, call->dev, call->queue, &t->plan, &t->tiles, &call->staged[0], sy,
                  &call->work);
}

/* ---- The entry point ------------------------------------------------------------------------- */

static int32_t transpose_entry(struct clops_pool *pool, const struct clops_tensor *x,
                               const struct clops_tensor *y)
{
    const union op_value values[] = {{.tensor = x}, {.tensor = y}};
    return call_run(pool, &impl_transpose, values);
}

/* ---- The descriptor -------------------------------------------------------------------------- */

static const struct clops_param transpose_params[] = {
    {"x", CLOPS_PARAM_TENSOR_IN, TRANSPOSE_DTYPES, NULL, NULL,
     "M x N, or a batch B x M x N. Any strides."},
    {"y", CLOPS_PARAM_TENSOR_OUT, TRANSPOSE_DTYPES, NULL, NULL,
     "N x M (B x N x M), x's dtype, any strides with distinct elements. Either disjoint from "
     "x, or x itself (same memory, offset, shape and strides) for square matrices: in place."},
};

static const struct clops_op op_transpose = {
    .summary = "y = x^T over the last two axes: a matrix, or a batch; in place when square.",
    .doc = "Writes y(b, j, i) = x(b, i, j) for a matrix x (rank 2, M x N; y is N x M) or a batch "
           "of them (rank 3, B x M x N; y is B x N x M). Elements are copied bit for bit, so every "
           "dtype (f32, f64, i32, u32, u8) is exact; f64 needs no double-precision device. Any "
           "strides on both sides: row-major, column-major, padded or strided views; the kernel "
           "moves TILE x TILE tiles through local memory so that reads and writes are coalesced "
           "whatever the two layouts.\n"
           "\n"
           "In place: when y is exactly x (the same data pointer or buffer, offset, shape and "
           "strides) the matrices are square (y's shape must be x's with the last two axes "
           "swapped) and each is transposed in place, tile pairs swapped through local memory. Any "
           "other overlap of y with x (a y over part of x, or over x with other strides, such as a "
           "non-square 'in place' transpose) is rejected, as is a y whose strides make two "
           "elements share an address. Gaps in a padded y are left untouched. Empty extents are a "
           "valid call that writes nothing.\n"
           "\n"
           "Errors: CLOPS_ERR_INVALID_ARGUMENT, naming the parameter, for a NULL or malformed "
           "tensor, a rank other than 2 or 3 (y's must be x's), dtypes that differ, a y shape that "
           "is not x's transposed, a device buffer too small, or y overlapping x other than in "
           "place. CLOPS_ERR_UNSUPPORTED for another dtype (i64). A rejected call touches neither "
           "the device nor y.\n"
           "\n"
           "Tuning (settings in operators.transpose, checked when the pool is created): tile "
           "(1..64), the side of the square a work-group moves; rows (1..64), the rows of "
           "work-items moving it, tile a multiple of rows (a call where it is not, with the "
           "device's value for one left out, is CLOPS_ERR_CONFIG naming them). Defaults: 32 and "
           "8 (16 and 4 on devices that are neither GPUs nor CPUs); rows is halved while the "
           "group is larger than the device allows; vec_bytes (1..16), the width in bytes of "
           "the vector loads and stores used when x and y are both row-major (or both "
           "column-major) with aligned rows and extents (a power of two number of elements that "
           "divides vec_tile; 16 by default, 1 on devices that are neither GPUs nor CPUs, 1 or "
           "less than an element: scalar only); vec_tile and vec_rows (1..64), the same as tile "
           "and rows for that vector kernel (vec_tile a multiple of vec_rows; GPUs 64 and 16, "
           "CPUs 32 and 8). -DTILE=<n>, -DROWS=<n>, -DVEC_BYTES=<n>, -DVEC_TILE=<n> and "
           "-DVEC_ROWS=<n> in operators.transpose.build_options are read as these settings too.",
    OP_DESCRIPTOR_COMMON(op_name, transpose_params, transpose_entry, clops_transpose_fn),
};

const struct op_impl impl_transpose = OP_IMPL(&op_transpose, struct transpose_call, transpose_check,
                                              transpose_enqueue, NULL, NULL, &transpose_settings);
