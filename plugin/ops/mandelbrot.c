/* mandelbrot.c — the mandelbrot operator: iteration counts (and an RGBA image) of a view of the
 * Mandelbrot set, cut into tiles that the pool's devices (GPUs and the CPU) share. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bridge.h"
#include "call.h"
#include "host_copy.h"
#include "mandelbrot_land.h"
#include "op.h"
#include "pace.h"
#include "registry.h"
#include "split.h"
#include "tensor.h"

static const char op_name[] = "mandelbrot";

enum { PRECISION_F32 = 0, PRECISION_F64 = 1 };
enum { TILE_MAX = 4096 };
/* Work-items a launch should have at least, by device kind: a GPU needs about 2^20 to keep
 * every multiprocessor busy (an H100 holds 132 x 2048 resident work-items), and 4 times that
 * makes the wait after each launch rarer; a CPU needs far fewer, just enough to hide the
 * launch's overhead. A GPU that shares no tiles (no dynamic split with a CPU) takes launches
 * 4 times larger still: each launch ends in a wait and a tail of a few slow warps, and its
 * chunks need no staging that another device could take over. H100, 4096^2 f32: one launch
 * for the whole image ran at 1.99e12 iterations/s, 256 tiles in launches of 2^22 at 1.22e12. */
enum { GPU_LAUNCH_ITEMS = 1 << 22, GPU_ALONE_LAUNCH_ITEMS = 1 << 24, CPU_LAUNCH_ITEMS = 1 << 14 };
static const int64_t iterations_max = INT64_C(1) << 31;
/* Pixel coordinates are ints in the kernel, with room for a tile past the end. */
static const int64_t extent_max = INT32_MAX / 2;

/* ---- The call, validated --------------------------------------------------------------------- */

struct mandel_plan {
    const struct clops_tensor *iters, *image; /* image may be NULL */
    int in_bridges; /* the host outputs are temporaries in bridges (mandel_enqueue) */
    int64_t h, w;
    int32_t tile, tiles_x, tile_count;
    double center_x, center_y, px, half_w, half_h; /* rounded to the precision for f32 */
    uint32_t max_iterations;
    int32_t precision;
    int32_t dynamic;  /* 1: dynamic scheduling; 0: the static split below */
    double gpu_share; /* static: the share of tiles for the GPU side, 0 .. 1 */
    int32_t alone;    /* 1: the call's device renders every tile, on the call's queue */
};

/* The parameters' positions in the descriptor (mandelbrot_params below). */
enum {
    P_ITERATIONS,
    P_IMAGE,
    P_CENTER_X,
    P_CENTER_Y,
    P_SCALE,
    P_MAX_ITERATIONS,
    P_PRECISION,
    P_SPLIT,
    P_TILE
};

/* The image follows the iterations' extents; the iterations' own are the call's choice. */
static int32_t check_outputs(struct op_call *call, const struct pool_device *primary,
                             const struct clops_tensor *iters, const struct clops_tensor *image)
{
    int32_t status =
        tensor_check(iters, op_name, "iterations", CLOPS_DTYPE_BIT(CLOPS_U32), 2, primary);
    if (status != CLOPS_OK)
        return status;
    call_expect_same(call, 0);
    if (image == NULL)
        return CLOPS_OK;
    const int64_t rgba[3] = {iters->shape[0], iters->shape[1], 4};
    call_expect(call, 1, CLOPS_U8, 3, rgba);
    status = tensor_check(image, op_name, "image", CLOPS_DTYPE_BIT(CLOPS_U8), 3, primary);
    if (status != CLOPS_OK)
        return status;
    if (image->shape[0] != iters->shape[0] || image->shape[1] != iters->shape[1] ||
        image->shape[2] != 4)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'image' has shape %lldx%lldx%lld but 'iterations' is "
                       "%lldx%lld; expected %lldx%lldx4 (RGBA)",
                       op_name, (long long)image->shape[0], (long long)image->shape[1],
                       (long long)image->shape[2], (long long)iters->shape[0],
                       (long long)iters->shape[1], (long long)iters->shape[0],
                       (long long)iters->shape[1]);
    return CLOPS_OK;
}

static int32_t check_extents(const struct clops_tensor *iters, int64_t tile)
{
    if (tile < 1 || tile > TILE_MAX)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'tile' = %lld; expected 1 to %d (the tile edge in pixels)",
                       op_name, (long long)tile, TILE_MAX);
    for (int a = 0; a < 2; a++)
        if (iters->shape[a] > extent_max)
            return err_set(CLOPS_ERR_UNSUPPORTED,
                           "%s: parameter 'iterations' has shape[%d] = %lld; at most %lld", op_name,
                           a, (long long)iters->shape[a], (long long)extent_max);
    int64_t tiles = ((iters->shape[0] + tile - 1) / tile) * ((iters->shape[1] + tile - 1) / tile);
    if (tiles > INT32_MAX)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'tile' = %lld cuts the %lldx%lld image into %lld tiles; at "
                       "most %d (use larger tiles)",
                       op_name, (long long)tile, (long long)iters->shape[0],
                       (long long)iters->shape[1], (long long)tiles, INT32_MAX);
    return CLOPS_OK;
}

/* "dynamic" (or NULL), or a decimal fraction 0 .. 1 such as "0", "0.25", "1", "1.0". Parsed by
 * hand: strtod() reads "0,5" in some locales and accepts "nan", "inf" and hex. The digits make an
 * integer divided once by a power of ten, so that up to 18 digits the value is the correctly
 * rounded double, as strtod() gives (later digits are below double precision and ignored). */
static int parse_fraction(const char *text, double *out)
{
    int64_t mantissa = 0, scale = 1;
    int digits = 0, used = 0, point = 0;
    for (const char *s = text; *s != '\0'; s++) {
        if (*s == '.' && !point) {
            point = 1;
            continue;
        }
        if (*s < '0' || *s > '9')
            return 0;
        digits++;
        if (used == 18 || scale == INT64_C(1000000000000000000))
            continue;
        mantissa = mantissa * 10 + (*s - '0');
        used += mantissa > 0;
        scale *= point ? 10 : 1;
    }
    *out = (double)mantissa / (double)scale;
    return digits > 0 && *out <= 1.0;
}

static int32_t check_split(const char *split, struct mandel_plan *plan)
{
    plan->dynamic = split == NULL || strcmp(split, "dynamic") == 0;
    if (plan->dynamic || parse_fraction(split, &plan->gpu_share))
        return CLOPS_OK;
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter 'split' = \"%s\"; expected \"dynamic\" or a decimal fraction "
                   "from \"0\" to \"1\" (the GPU side's share of tiles)",
                   op_name, split);
}

/* The view, rounded to the precision: the kernel and any host reference start from these. */
static int32_t check_view(double center_x, double center_y, double scale, int32_t precision,
                          struct mandel_plan *plan)
{
    if (!isfinite(center_x) || !isfinite(center_y))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter '%s' = %g; expected a finite number", op_name,
                       isfinite(center_x) ? "center_y" : "center_x",
                       isfinite(center_x) ? center_y : center_x);
    if (!(scale > 0.0) || !isfinite(scale))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'scale' = %g; expected a finite number > 0 (the view's "
                       "width in the complex plane)",
                       op_name, scale);
    const int f32 = precision == PRECISION_F32;
    double px = plan->w > 0 ? scale / (double)plan->w : scale;
    plan->center_x = f32 ? (float)center_x : center_x;
    plan->center_y = f32 ? (float)center_y : center_y;
    plan->px = f32 ? (float)px : px;
    plan->half_w = f32 ? (float)(0.5 * (double)plan->w) : 0.5 * (double)plan->w;
    plan->half_h = f32 ? (float)(0.5 * (double)plan->h) : 0.5 * (double)plan->h;
    if (!isfinite(plan->center_x) || !isfinite(plan->center_y))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameters 'center_x', 'center_y' = (%g, %g) overflow f32; use "
                       "precision f64",
                       op_name, center_x, center_y);
    if (plan->px < (f32 ? FLT_MIN : DBL_MIN) || !isfinite(plan->px))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'scale' = %g gives a pixel size of %g, out of the normal "
                       "range of %s%s",
                       op_name, scale, px, f32 ? "f32" : "f64", f32 ? "; use precision f64" : "");
    return CLOPS_OK;
}

static int32_t mandel_check_args(struct op_call *call, const struct pool_device *primary,
                                 const struct clops_tensor *iters, const struct clops_tensor *image,
                                 double center_x, double center_y, double scale,
                                 int64_t max_iterations, int32_t precision, const char *split,
                                 int64_t tile, struct mandel_plan *plan)
{
    int32_t status = check_outputs(call, primary, iters, image);
    const struct tensor_use uses[2] = {{iters, "iterations", 1}, {image, "image", 1}};
    if (status == CLOPS_OK)
        status = tensor_check_disjoint(op_name, uses, 2, NULL);
    if (status == CLOPS_OK)
        status = check_extents(iters, tile);
    if (status != CLOPS_OK)
        return status;
    if (max_iterations < 1 || max_iterations > iterations_max)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'max_iterations' = %lld; expected 1 to 2^31", op_name,
                       (long long)max_iterations);
    if (precision != PRECISION_F32 && precision != PRECISION_F64)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "%s: parameter 'precision' = %d; expected 0 (f32) or 1 (f64)", op_name,
                       (int)precision);
    *plan = (struct mandel_plan){.iters = iters,
                                 .image = image,
                                 .h = iters->shape[0],
                                 .w = iters->shape[1],
                                 .tile = (int32_t)tile,
                                 .max_iterations = (uint32_t)max_iterations,
                                 .precision = precision};
    plan->tiles_x = (int32_t)((plan->w + tile - 1) / tile);
    plan->tile_count = plan->tiles_x * (int32_t)((plan->h + tile - 1) / tile);
    status = check_view(center_x, center_y, scale, precision, plan);
    if (status == CLOPS_OK)
        status = check_split(split, plan);
    return status;
}

/* ---- Workers --------------------------------------------------------------------------------- */

/* Tiles are the split's units (split.h): the splitter hands each worker chunks of tile numbers;
 * a CPU-side worker's chunks may be contested, rendered in bands and given up between bands. */
/* Pixels per band of a CPU's tiles: a few milliseconds of a deep zoom on a CPU. */
enum { BAND_ITEMS = 1 << 12 };

/* Where a worker's kernel writes one output: straight into the device buffer (the output is a
 * buffer on the primary device, which this worker runs on), or into compact T x T slots on its
 * device, downloaded and then scattered into host memory (HOST) or uploaded and placed into the
 * device buffer by the primary device (PLACE). Tiles that two workers may both render (contested
 * chunks) always go through compact slots, so that only the one that finishes first writes the
 * output. */
enum delivery { DELIVER_NONE = 0, DELIVER_DIRECT, DELIVER_HOST, DELIVER_PLACE };

/* A split worker's state (one per device, or per queue of a device): its kernels and buffers,
 * taken for the call from what the pool keeps (idle kernels, staged buffers, bridges) and given
 * back at its end: calls of one shape after the first create none. They are taken per call,
 * not kept per worker, so that calls on one pool from several threads at once need nothing
 * more than the pool's own caches, which the pool frees with itself. */
enum { PLACE_SETS = 2 };
int mandel_place_sets = 0;
int mandel_land_mode = MANDEL_LAND_ADAPTIVE;
atomic_llong mandel_ahead_chunks;
struct worker {
    struct mandel_call *call;
    struct pool_device *dev;
    cl_command_queue queue;
    int32_t max_chunk, group_size;
    int32_t bound_compact; /* how the render kernel's outputs are bound: -1 not yet, 0, 1 */
    cl_kernel render;
    cl_mem ids, staged[2];  /* on dev: tile numbers, compact outputs */
    struct bridge bridge;   /* host slots of both outputs: page-locked in every context */
    unsigned char *host[2]; /* compact outputs downloaded: in `bridge`, or NULL (set `set`) */
    /* PLACE only: the primary device's queue, kernel and staging buffers, in two sets: a chunk
     * crosses to the primary device from one while the next one renders and downloads into the
     * other (deliver_place). */
    cl_command_queue place_queue;
    int place_queue_own; /* opened for the worker (released with it), else the pool's */
    cl_kernel place;
    int32_t place_group, place_ids_host[PLACE_SETS][SPLIT_CHUNK_MAX];
    cl_mem place_ids[PLACE_SETS], place_staged[PLACE_SETS][2];
    unsigned char *slots[PLACE_SETS][2];     /* each set's host slots, in `bridge` */
    int32_t sets, set;                       /* sets in use (1, or PLACE_SETS), the current one */
    struct pool_work work;                   /* enqueued on queue; waited for per chunk */
    struct pool_work place_work[PLACE_SETS]; /* on place_queue: waited for before a set's reuse */
    int placing[PLACE_SETS];                 /* the set's placement is enqueued, not waited for */
    int64_t device_ns;
    /* For the debug line of the worker's end: its chunks and tiles, and the time its thread
     * spent rendering (enqueue to the chunk's end) and delivering them. */
    int32_t chunks, tiles;
    int64_t render_ns, deliver_ns;
    /* Ahead (render_ahead): chunks render into two sets of compact buffers in turn (set 0 is
     * `ids` and `staged`), and each chunk's tiles download into place on `dl_queue` while the
     * next chunk renders; a set is reused once its downloads are done (settle). */
    int ahead;
    cl_command_queue dl_queue;
    cl_mem ahead_ids[PLACE_SETS], ahead_staged[PLACE_SETS][2];
    int32_t ahead_ids_host[PLACE_SETS][SPLIT_CHUNK_MAX];
    struct pool_work ahead_work[PLACE_SETS], dl_work[PLACE_SETS];
    int rendering[PLACE_SETS], downloading[PLACE_SETS]; /* enqueued, not waited for */
    /* The tiles of set s's chunk (ahead_ids_host[s]) to land in the host outputs once its
     * downloads are done (land_set; 0: none), and the worker's landed tiles and time. */
    int32_t landing[PLACE_SETS], landed;
    int64_t land_ns;
    cl_event after; /* the call's `after` where `queue` is in its context, else NULL */
};

struct mandel_call {
    struct clops_pool *pool;
    struct pool_device *primary;
    const struct mandel_plan *plan;
    struct op_call *op; /* the operator's call: its cancellation and progress */
    int64_t device_ns;  /* the workers', summed as they are released */
    /* Bit o: host output o is a temporary in a bridge (mandel_state), page-locked in every
     * context, with its pixels in rows: a chunk no other worker renders is downloaded tile by
     * tile straight into it (download_in_place), not through host slots and a copy by the
     * worker's thread. */
    unsigned in_place;
    /* Where the host outputs' tiles land as their chunks' downloads end (mandelbrot_land.h): a
     * worker that renders ahead lands each chunk while its device renders the next. NULL: they
     * wait for the commit. */
    struct mandel_land *land;
    /* A submitted call's: completes once its stream's earlier calls have (order_after_stream);
     * an event of the primary device's context, or NULL. */
    cl_event after;
};

static size_t staged_bytes(const struct mandel_plan *p, int32_t chunk)
{
    return (size_t)chunk * (size_t)p->tile * (size_t)p->tile * 4u;
}

static const struct clops_tensor *output_tensor(const struct mandel_plan *p, int o)
{
    return o == 0 ? p->iters : p->image;
}

/* How output o of a chunk is delivered; `compact` chunks never write outputs directly. */
static enum delivery delivery_for(const struct worker *w, int o, int compact)
{
    const struct clops_tensor *t = output_tensor(w->call->plan, o);
    if (t == NULL)
        return DELIVER_NONE;
    if (t->buffer == NULL)
        return DELIVER_HOST;
    return w->dev == w->call->primary && !compact ? DELIVER_DIRECT : DELIVER_PLACE;
}

/* Whether output o of a chunk goes straight from its compact slots into the host temporary. */
static int in_place(const struct worker *w, int o, int contested)
{
    return (w->call->in_place >> o & 1u) && !contested &&
           delivery_for(w, o, contested) == DELIVER_HOST;
}

static int32_t set_args(cl_kernel kernel, const char *name, cl_uint first, cl_uint count,
                        const size_t *sizes, const void *const *values)
{
    for (cl_uint i = 0; i < count; i++) {
        cl_int rc = clSetKernelArg(kernel, first + i, sizes[i], values[i]);
        if (rc != CL_SUCCESS)
            return err_cl(rc, "%s: clSetKernelArg(%s, %u) failed", op_name, name, first + i);
    }
    return CLOPS_OK;
}

static int32_t set_int_arg(cl_kernel kernel, const char *name, cl_uint index, cl_int value)
{
    return set_args(kernel, name, index, 1, (const size_t[]){sizeof value},
                    (const void *const[]){&value});
}

static int32_t set_mem_arg(cl_kernel kernel, const char *name, cl_uint index, cl_mem mem)
{
    return set_args(kernel, name, index, 1, (const size_t[]){sizeof mem},
                    (const void *const[]){&mem});
}

/* From argument `first` on: an output's buffer, then (render kernel: with_flag) whether it is
 * compact, then its offset and `strides` strides. A NULL `t` is a compact or absent output: its
 * offset and strides are unused and passed as 0. */
static int32_t set_output_args(cl_kernel kernel, const char *name, cl_uint first,
                               const struct clops_tensor *t, cl_mem mem, int with_flag,
                               cl_uint strides)
{
    cl_long off = 0, s[3] = {0, 0, 0};
    for (int32_t a = 0; t != NULL && a < t->rank; a++)
        s[a] = t->strides[a];
    if (t != NULL)
        off = t->offset;
    const size_t sizes[] = {sizeof(cl_mem), sizeof off, sizeof s[0], sizeof s[1], sizeof s[2]};
    const void *const values[] = {&mem, &off, &s[0], &s[1], &s[2]};
    int32_t status = set_args(kernel, name, first, 1, sizes, values);
    if (status == CLOPS_OK && with_flag)
        status = set_int_arg(kernel, name, first + 1, t == NULL);
    if (status == CLOPS_OK)
        status = set_args(kernel, name, first + 1 + (with_flag ? 1 : 0), 1 + strides, sizes + 1,
                          values + 1);
    return status;
}

static int32_t create_kernel(struct clops_pool *pool, struct pool_device *dev,
                             const struct mandel_plan *p, const char *name, cl_kernel *out)
{
    const char *options =
        p->precision == PRECISION_F64 ? "-DREAL=double -DUSE_FP64" : "-DREAL=float";
    return pool_create_kernel(pool, dev, op_name, op_name, options, name, out);
}

/* A worker's buffers come from the pool's cache of staged buffers and go back to it, so that a
 * call of the shape of one before it creates none: on NVIDIA's OpenCL a clReleaseMemObject waits
 * until the whole device is idle (pool_internal.h), and a fresh buffer is allocated at its
 * first use. Their contents need not survive: every chunk writes what it reads. */
static int32_t take_buffer(struct worker *w, struct pool_device *dev, size_t bytes, cl_mem *out)
{
    return pool_staged_take(w->call->pool, dev, (int64_t)bytes, op_name, "tile buffers", out);
}

/* The render kernel's fixed arguments: the view, the geometry and the tile numbers (0 .. 14;
 * ids NULL: a launch's tiles are first .. first + count - 1). */
static int32_t bind_view(cl_kernel kernel, const struct mandel_plan *p, cl_mem ids)
{
    const float f[5] = {(float)p->center_x, (float)p->center_y, (float)p->px, (float)p->half_w,
                        (float)p->half_h};
    const double d[5] = {p->center_x, p->center_y, p->px, p->half_w, p->half_h};
    const int f64 = p->precision == PRECISION_F64;
    const size_t real = f64 ? sizeof(double) : sizeof(float);
    const cl_uint maxit = p->max_iterations;
    const cl_int h = (cl_int)p->h, wd = (cl_int)p->w, t = p->tile, tx = p->tiles_x, zero = 0;
    const void *view[5]; /* center_x, center_y, px, half_w, half_h in the kernel's REAL */
    for (int k = 0; k < 5; k++)
        view[k] = f64 ? (const void *)&d[k] : (const void *)&f[k];
    /* count, row0, rows and first (10 .. 13) are set per launch. */
    const size_t sizes[] = {real,         real,        real,      real,        real,
                            sizeof maxit, sizeof h,    sizeof wd, sizeof t,    sizeof tx,
                            sizeof zero,  sizeof zero, sizeof t,  sizeof zero, sizeof(cl_mem)};
    const void *const values[] = {view[0], view[1], view[2], view[3], view[4], &maxit, &h,  &wd,
                                  &t,      &tx,     &zero,   &zero,   &t,      &zero,  &ids};
    return set_args(kernel, "mandelbrot", 0, 15, sizes, values);
}

/* The render kernel's outputs (15 .. 19 and 20 .. 25) for a direct or a compact chunk. */
static int32_t bind_outputs(struct worker *w, int compact)
{
    if (w->bound_compact == compact)
        return CLOPS_OK;
    int32_t status = CLOPS_OK;
    for (int o = 0; o < 2 && status == CLOPS_OK; o++) {
        const struct clops_tensor *out = output_tensor(w->call->plan, o);
        const enum delivery d = delivery_for(w, o, compact);
        cl_mem mem = d == DELIVER_NONE     ? NULL
                     : d == DELIVER_DIRECT ? out->buffer->mem
                                           : w->staged[o];
        status = set_output_args(w->render, "mandelbrot", o == 0 ? 15 : 20,
                                 d == DELIVER_DIRECT ? out : NULL, mem, 1, o == 0 ? 2 : 3);
    }
    w->bound_compact = status == CLOPS_OK ? compact : -1;
    return status;
}

/* The place kernel's fixed arguments (on the primary device): geometry, and the device outputs
 * the tiles go to. The count and the set's tile numbers and compact tiles (4 .. 7) are set per
 * chunk (deliver_place). */
static int32_t bind_place(struct worker *w)
{
    const struct mandel_plan *p = w->call->plan;
    const cl_int h = (cl_int)p->h, wd = (cl_int)p->w, t = p->tile, tx = p->tiles_x;
    const size_t sizes[] = {sizeof h, sizeof wd, sizeof t, sizeof tx};
    const void *const values[] = {&h, &wd, &t, &tx};
    int32_t status = set_args(w->place, "mandelbrot_place", 0, 4, sizes, values);
    for (int o = 0; o < 2 && status == CLOPS_OK; o++) {
        const struct clops_tensor *out = output_tensor(p, o);
        const int place = out != NULL && out->buffer != NULL;
        status = set_output_args(w->place, "mandelbrot_place", o == 0 ? 8 : 12, place ? out : NULL,
                                 place ? out->buffer->mem : NULL, 0, o == 0 ? 2 : 3);
    }
    return status;
}

/* Work-items per work-group: 128 on GPUs (4 warps, enough to hide the loop's latency without
 * starving the scheduler of groups), 64 elsewhere, within what the kernel allows. */
static int32_t group_size_for(cl_kernel kernel, const struct pool_device *dev, int32_t *out)
{
    size_t allowed = 0;
    int32_t status = pool_kernel_max_work_group(dev, kernel, op_name, &allowed);
    if (status != CLOPS_OK)
        return status;
    size_t want = pool_device_info(dev)->type == CLOPS_DEVICE_GPU ? 128 : 64;
    *out = (int32_t)(allowed < want ? (allowed > 0 ? allowed : 1) : want);
    return CLOPS_OK;
}

static int32_t clamp32(int64_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : x > hi ? hi : (int32_t)x;
}

/* Buffers and the kernel for outputs delivered by the primary device (PLACE). */
static int32_t setup_place(struct worker *w, struct pool_device *primary)
{
    const struct mandel_plan *p = w->call->plan;
    /* Placing from two sets (a GPU's worker) on a GPU, a queue of its own: on the primary's
     * queue a placement waited behind the primary's own render (two H200s, deep zoom 4096^2
     * into GPU 0's buffer: GPU 1's one tile placed after GPU 0's 255-tile launch of 8.8 ms).
     * Not on a CPU device: PoCL (3.1 and 5.0) aborts in pocl_release_dlhandle_cache when one
     * kernel runs at once with different grid sizes, and placements of several workers on
     * queues of their own did (CI, test_multi_device on eight PoCL devices). */
    int32_t status = CLOPS_OK;
    if (w->sets == PLACE_SETS && pool_device_info(primary)->type == CLOPS_DEVICE_GPU) {
        status = pool_open_queue(w->call->pool, primary, op_name, &w->place_queue);
        w->place_queue_own = status == CLOPS_OK;
    } else {
        w->place_queue = pool_acquire_queue(primary);
    }
    if (status == CLOPS_OK)
        status = create_kernel(w->call->pool, primary, p, "mandelbrot_place", &w->place);
    if (status == CLOPS_OK)
        status = group_size_for(w->place, primary, &w->place_group);
    for (int32_t s = 0; s < w->sets && status == CLOPS_OK; s++) {
        status = take_buffer(w, primary, (size_t)w->max_chunk * sizeof(cl_int), &w->place_ids[s]);
        for (int o = 0; o < 2 && status == CLOPS_OK; o++)
            if (delivery_for(w, o, 1) == DELIVER_PLACE)
                status =
                    take_buffer(w, primary, staged_bytes(p, w->max_chunk), &w->place_staged[s][o]);
    }
    if (status == CLOPS_OK)
        status = bind_place(w);
    return status;
}

/* Host slots for the outputs with compact slots on the device, in one bridge (bridge.h): the
 * downloads into them and the uploads from them to the primary device run as DMA (pageable
 * memory went through the driver's own staging, 4-7 GB/s on NVIDIA's OpenCL against ~55), and
 * the pool keeps the bridge for the next call (page-locking costs milliseconds). One bridge
 * for both outputs and every set: a pool keeps few of them (POOL_BRIDGES), and a dynamic split
 * on two devices has a worker per queue. */
static int32_t setup_host_slots(struct worker *w, int contested)
{
    const size_t slot = staged_bytes(w->call->plan, w->max_chunk);
    int needed[2], outputs = 0;
    for (int o = 0; o < 2; o++) { /* a worker's chunks are contested, if ever, when it steals */
        needed[o] = w->staged[o] != NULL && (contested || !in_place(w, o, 0));
        outputs += needed[o];
    }
    if (outputs == 0)
        return CLOPS_OK;
    int32_t status =
        bridge_take(w->call->pool, slot * (size_t)(outputs * w->sets), op_name, &w->bridge);
    unsigned char *next = w->bridge.data;
    for (int32_t s = 0; s < w->sets && status == CLOPS_OK; s++)
        for (int o = 0; o < 2; o++)
            if (needed[o]) {
                w->slots[s][o] = next;
                next += slot;
            }
    w->host[0] = w->slots[0][0];
    w->host[1] = w->slots[0][1];
    return status;
}

/* Whether the worker renders ahead (render_ahead), and its second set and download queue if
 * so: a device with DMA beside its compute units (a GPU; split_devices_as_gpus in tests) none
 * of whose chunks another worker renders, with an output downloaded in place and none placed
 * by the primary device. On two H200s the in-place downloads of a deep zoom's tiles otherwise
 * ran between its chunks' renders on the one queue. */
static int32_t setup_ahead(struct worker *w, int contested, int gpu)
{
    int any = 0;
    for (int o = 0; o < 2; o++) {
        const enum delivery d = delivery_for(w, o, 0);
        if (d == DELIVER_PLACE || (d == DELIVER_HOST && !in_place(w, o, 0)))
            return CLOPS_OK;
        any |= d == DELIVER_HOST;
    }
    if (!any || contested || !(gpu || split_devices_as_gpus))
        return CLOPS_OK;
    w->ahead_ids[0] = w->ids;
    w->ahead_staged[0][0] = w->staged[0];
    w->ahead_staged[0][1] = w->staged[1];
    int32_t status = pool_open_queue(w->call->pool, w->dev, op_name, &w->dl_queue);
    for (int32_t s = 1; s < PLACE_SETS && status == CLOPS_OK; s++) {
        status = take_buffer(w, w->dev, (size_t)w->max_chunk * sizeof(cl_int), &w->ahead_ids[s]);
        for (int o = 0; o < 2 && status == CLOPS_OK; o++)
            if (w->staged[o] != NULL)
                status = take_buffer(w, w->dev, staged_bytes(w->call->plan, w->max_chunk),
                                     &w->ahead_staged[s][o]);
    }
    w->ahead = status == CLOPS_OK;
    return status;
}

/* Everything a worker needs (split_job.setup), made before any thread starts. */
static int32_t worker_setup(void *op, const struct split_worker *sw, void *state)
{
    struct mandel_call *c = op;
    struct worker *w = state;
    const struct mandel_plan *p = c->plan;
    *w = (struct worker){.call = c,
                         .dev = sw->dev,
                         .queue = sw->queue,
                         .max_chunk = sw->max_chunk,
                         .bound_compact = -1};
    /* A wait list takes only events of the queue's context: a worker of another context never
     * writes the device outputs (its tiles are placed by the primary device). */
    if (pool_device_context(w->dev) == pool_device_context(c->primary))
        w->after = c->after;
    int32_t status = create_kernel(c->pool, w->dev, p, "mandelbrot", &w->render);
    if (status == CLOPS_OK)
        status = group_size_for(w->render, w->dev, &w->group_size);
    if (status == CLOPS_OK)
        status = take_buffer(w, w->dev, (size_t)w->max_chunk * sizeof(cl_int), &w->ids);
    int any_place = 0;
    for (int o = 0; o < 2 && status == CLOPS_OK; o++) {
        const enum delivery usual = delivery_for(w, o, 0);
        if (usual == DELIVER_NONE || (usual == DELIVER_DIRECT && !sw->contested))
            continue;
        status = take_buffer(w, w->dev, staged_bytes(p, w->max_chunk), &w->staged[o]);
        any_place |= delivery_for(w, o, 1) == DELIVER_PLACE;
    }
    /* A GPU's worker placing every chunk on the primary device: two sets, so that its DMA and
     * the primary device's placing run beside its next chunk. A CPU device's transfers are its
     * own cores' copies, which nothing overlaps (and the PoCL of the H200s' host aborted in
     * test_split_crew with two sets on its CPU devices, 2026-11-29): one set, each placement
     * waited for. */
    const int gpu = pool_device_info(w->dev)->type == CLOPS_DEVICE_GPU;
    w->sets = any_place && w->dev != c->primary && (gpu || mandel_place_sets == PLACE_SETS)
                  ? PLACE_SETS
                  : 1;
    if (status == CLOPS_OK)
        status = setup_ahead(w, sw->contested, gpu);
    if (status == CLOPS_OK)
        status = setup_host_slots(w, sw->contested);
    if (status == CLOPS_OK)
        status = bind_view(w->render, p, w->ids);
    if (status == CLOPS_OK && any_place)
        status = setup_place(w, c->primary);
    return status;
}

/* split_job.teardown: adds the worker's device time to the call's and gives its objects back
 * to the pool (every chunk's work was waited for, on every path: nothing queued uses them). */
static void worker_release(void *state)
{
    struct worker *w = state;
    struct clops_pool *pool = w->call->pool;
    struct pool_device *primary = w->call->primary;
    w->call->device_ns += w->device_ns;
    if (w->chunks > 0)
        log_msg(CLOPS_LOG_DEBUG,
                "%s: device %d: %d chunks, %d tiles, rendering %.2f ms, delivering %.2f ms, "
                "%d tiles landed in %.2f ms",
                op_name, (int)pool_device_index(w->dev), (int)w->chunks, (int)w->tiles,
                (double)w->render_ns * 1e-6, (double)w->deliver_ns * 1e-6, (int)w->landed,
                (double)w->land_ns * 1e-6);
    pool_staged_give(pool, w->dev, w->ids);
    pool_staged_give(pool, w->dev, w->staged[0]);
    pool_staged_give(pool, w->dev, w->staged[1]);
    for (int32_t s = 1; s < PLACE_SETS; s++) { /* set 0's are ids and staged */
        pool_staged_give(pool, w->dev, w->ahead_ids[s]);
        pool_staged_give(pool, w->dev, w->ahead_staged[s][0]);
        pool_staged_give(pool, w->dev, w->ahead_staged[s][1]);
    }
    if (w->dl_queue != NULL)
        clReleaseCommandQueue(w->dl_queue);
    if (w->place_queue_own)
        clReleaseCommandQueue(w->place_queue);
    for (int32_t s = 0; s < PLACE_SETS; s++) {
        pool_staged_give(pool, primary, w->place_ids[s]);
        pool_staged_give(pool, primary, w->place_staged[s][0]);
        pool_staged_give(pool, primary, w->place_staged[s][1]);
    }
    pool_release_kernel(pool, w->render);
    pool_release_kernel(pool, w->place);
    bridge_give(pool, &w->bridge);
}

/* ---- Rendering and delivering a chunk -------------------------------------------------------- */

/* Copies compact slot `k` (tile `tile`) of output o into the host tensor, a row of the tile at a
 * time (mandel_pixels_move). */
static void scatter_tile(const struct mandel_plan *p, int o, const unsigned char *slots, int32_t k,
                         int32_t tile)
{
    const int64_t T = p->tile, i0 = (tile / p->tiles_x) * T, j0 = (tile % p->tiles_x) * T;
    const int64_t rows = p->h - i0 < T ? p->h - i0 : T, cols = p->w - j0 < T ? p->w - j0 : T;
    for (int64_t ti = 0; ti < rows; ti++) /* a copy: the slots are only read */
        mandel_pixels_move(output_tensor(p, o), o, i0 + ti, j0, cols,
                           (unsigned char *)slots + ((k * T + ti) * T) * 4, 0);
}

/* A launch's work-items: `rows` rows of n tiles, rounded up to whole work-groups. At most 2^24
 * plus a group (max_chunk keeps n tiles within the launch items, or n = 1 tile of at most
 * TILE_MAX^2), so the kernels index them in 32-bit ints. */
static size_t global_size(const struct mandel_plan *p, int32_t n, int32_t rows, int32_t group)
{
    size_t items = (size_t)n * (size_t)rows * (size_t)p->tile;
    return (items + (size_t)group - 1) / (size_t)group * (size_t)group;
}

/* Enqueues a write of `bytes` from `src` without waiting, after `after` (NULL: nothing): `src`
 * must stay as it is until the worker waits for its chunk. */
static int32_t enqueue_write(cl_command_queue queue, cl_mem mem, size_t bytes, const void *src,
                             cl_event after, struct clops_pool *pool)
{
    cl_int rc = clEnqueueWriteBuffer(queue, mem, CL_FALSE, 0, bytes, src, after != NULL ? 1 : 0,
                                     after != NULL ? &after : NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: uploading %zu bytes failed", op_name, bytes);
    pool_record_upload(pool, (int64_t)bytes);
    return CLOPS_OK;
}

/* A worker's one wait for what it enqueued on `queue` since the last (its chunk's kernels and
 * transfers), on every path: host memory they read or write is the worker's again after it.
 * `status` is the chunk's so far. */
static int32_t wait_chunk(struct worker *w, struct pool_work *work, cl_command_queue queue,
                          int32_t status)
{
    int32_t marked = pool_work_end(work, queue, op_name);
    if (status == CLOPS_OK)
        status = marked;
    return pool_work_finish(w->call->pool, work, queue, status, &w->device_ns, op_name);
}

/* Waits for `work` on `queue` where *pending says it is enqueued and not waited for yet (its
 * device time into the worker's); *pending is 0 after it. `status` is the worker's so far. */
static int32_t finish_pending(struct worker *w, int *pending, struct pool_work *work,
                              cl_command_queue queue, int32_t status)
{
    if (!*pending)
        return status;
    *pending = 0;
    return pool_work_finish(w->call->pool, work, queue, status, &w->device_ns, op_name);
}

/* Bytes a landing moves at a time (two of the pool copier's least copies: a swap's traffic is
 * twice its bytes), so that it can stop between pieces. */
enum { LAND_PIECE_BYTES = 2 * HOST_COPY_MIN_BYTES };

/* Set s's chunk landed in the host outputs (mandelbrot_land.h), its downloads waited for first
 * where they are still pending, a piece of tiles at a time until `until` is over (NULL: every
 * piece): a landing beside the next chunk's render stops with it, since past that the worker's
 * device would wait for its thread, and the tiles left wait for the commit, whose copy moves half
 * the bytes of a swap (a fast render into host memory then lands little). `status` is the
 * worker's so far: after a failure its tiles stay in the temporaries. */
static int32_t land_set(struct worker *w, int32_t s, int32_t status, cl_event until)
{
    status = finish_pending(w, &w->downloading[s], &w->dl_work[s], w->dl_queue, status);
    const int32_t n = w->landing[s];
    w->landing[s] = 0;
    if (status != CLOPS_OK || n == 0)
        return status;
    const struct mandel_land *l = w->call->land;
    const int outputs = (l->host[0] != NULL) + (l->host[1] != NULL);
    const int64_t tile_bytes = (int64_t)l->tile * l->tile * 4 * outputs;
    const int32_t piece =
        (int32_t)(LAND_PIECE_BYTES / tile_bytes > 1 ? LAND_PIECE_BYTES / tile_bytes : 1);
    const int64_t began = split_clock_ns();
    int32_t done = 0;
    while (done < n && (until == NULL || !pool_event_over(until))) {
        const int32_t m = n - done < piece ? n - done : piece;
        mandel_land_tiles(w->call->pool, w->call->land, w->ahead_ids_host[s] + done, m);
        done += m;
    }
    w->land_ns += split_clock_ns() - began;
    w->landed += done;
    return status;
}

/* Set `before`'s chunk landed while set `now`'s renders, as much of it as lands before that
 * render is over (land_set); tests land all of it (mandel_land_mode). */
static int32_t land_beside(struct worker *w, int32_t before, int32_t now, int32_t status)
{
    const int stop = mandel_land_mode == MANDEL_LAND_ADAPTIVE;
    return land_set(w, before, status, stop ? w->ahead_work[now].done : NULL);
}

/* Waits for set s's placement, if one is enqueued: its host slots and buffers are free again.
 * `status` is the worker's so far. */
static int32_t placed(struct worker *w, int32_t s, int32_t status)
{
    return finish_pending(w, &w->placing[s], &w->place_work[s], w->place_queue, status);
}

/* Waits for set s's chunk rendered ahead, if one is enqueued: its downloads and its kernels
 * (their device time); its buffers and tile numbers are free again. `status` is the worker's
 * so far. */
static int32_t settle(struct worker *w, int32_t s, int32_t status)
{
    status = finish_pending(w, &w->downloading[s], &w->dl_work[s], w->dl_queue, status);
    return finish_pending(w, &w->rendering[s], &w->ahead_work[s], w->queue, status);
}

/* Tiles downloaded from compact slots, going to buffers on the primary device: upload, then
 * place the claimed ones (the others' numbers become -1), on the primary device's queue. Not
 * waited for here: the next chunk renders and downloads into the other set meanwhile, and a set
 * is reused once its placement is done (render_chunk), the last ones at the worker's end
 * (drain). */
static int32_t deliver_place(struct worker *w, const struct split_chunk *chunk, const int *claimed)
{
    struct clops_pool *pool = w->call->pool;
    const int32_t n = chunk->count, s = w->set;
    for (int32_t k = 0; k < n; k++)
        w->place_ids_host[s][k] = claimed[k] ? chunk->units[k] : -1;
    /* The first command of the chunk on the primary device's queue: the placing after it
     * writes the device outputs, once the stream's earlier calls are done with them. */
    int32_t status = enqueue_write(w->place_queue, w->place_ids[s], (size_t)n * sizeof(cl_int),
                                   w->place_ids_host[s], w->call->after, pool);
    for (int o = 0; o < 2 && status == CLOPS_OK; o++)
        if (w->place_staged[s][o] != NULL)
            status = enqueue_write(w->place_queue, w->place_staged[s][o],
                                   staged_bytes(w->call->plan, n), w->slots[s][o], NULL, pool);
    const size_t mem = sizeof(cl_mem);
    const size_t sizes[] = {sizeof n, mem, mem, mem};
    const void *const values[] = {&n, &w->place_ids[s], &w->place_staged[s][0],
                                  &w->place_staged[s][1]};
    if (status == CLOPS_OK)
        status = set_args(w->place, "mandelbrot_place", 4, 4, sizes, values);
    size_t global = global_size(w->call->plan, n, w->call->plan->tile, w->place_group);
    size_t local = (size_t)w->place_group;
    if (status == CLOPS_OK)
        status = pool_launch_kernel(pool, &w->place_work[s], w->place_queue, w->place, 1, &global,
                                    &local, op_name);
    w->placing[s] = 1;
    const int32_t marked = pool_work_end(&w->place_work[s], w->place_queue, op_name);
    status = status == CLOPS_OK ? marked : status;
    if (status == CLOPS_OK && clFlush(w->place_queue) != CL_SUCCESS)
        status = err_set(CLOPS_ERR_DEVICE, "%s: submitting a placement failed", op_name);
    if (status != CLOPS_OK || w->sets == 1)
        return placed(w, s, status);
    w->set = (s + 1) % w->sets;
    w->host[0] = w->slots[w->set][0];
    w->host[1] = w->slots[w->set][1];
    return CLOPS_OK;
}

/* split_job.drain: the placements still in flight waited for, on every path. */
static int32_t drain(void *state)
{
    struct worker *w = state;
    int32_t status = CLOPS_OK;
    for (int32_t s = 0; s < PLACE_SETS; s++)
        status = settle(w, s, placed(w, s, status));
    /* The last chunk's tiles: nothing renders beside them any more, and the commit's copy moves
     * half the bytes of a swap (mandelbrot_land.h). */
    for (int32_t s = 0; s < PLACE_SETS; s++)
        status = mandel_land_mode == MANDEL_LAND_ALL ? land_set(w, s, status, NULL) : status;
    w->landing[0] = w->landing[1] = 0;
    return status;
}

/* Delivers the claimed tiles of a chunk (split_job.deliver): render downloaded the compact
 * slots already; direct outputs are already written. Host outputs are the call's packed
 * temporaries (mandel_state), which the commit step writes into host memory. */
static int32_t deliver(void *state, const struct split_chunk *chunk, const int *claimed)
{
    struct worker *w = state;
    const struct mandel_plan *p = w->call->plan;
    const int64_t began = split_clock_ns();
    int any_place = 0;
    for (int o = 0; o < 2; o++) {
        const enum delivery d = delivery_for(w, o, chunk->contested);
        any_place |= d == DELIVER_PLACE;
        if (in_place(w, o, chunk->contested)) /* its tiles are in place already */
            continue;
        for (int32_t k = 0; d == DELIVER_HOST && k < chunk->count; k++)
            if (claimed[k])
                scatter_tile(p, o, w->host[o], k, chunk->units[k]);
    }
    const int32_t status = any_place ? deliver_place(w, chunk, claimed) : CLOPS_OK;
    w->deliver_ns += split_clock_ns() - began;
    return status;
}

/* Enqueues the download of each tile of the chunk's compact slots of output o into its place in
 * the call's packed host temporary: a rectangle of its rows a read, by DMA into memory
 * page-locked in the worker's context. Two H200s on a deep zoom into host memory spent longer
 * copying tiles out of the host slots into the temporary (~30 ms for 128 MiB a thread, two
 * threads at once) than rendering them (~20 ms), and were slower than one H200 alone. */
static int32_t download_in_place(struct worker *w, const struct split_chunk *chunk, int o,
                                 cl_command_queue queue, cl_mem staged, cl_event after)
{
    const struct mandel_plan *p = w->call->plan;
    const struct clops_tensor *t = output_tensor(p, o);
    /* A one-row image's row stride is any value (a packed one's is 1): its rows' pitch is then
     * the row's bytes, which a rectangle's pitch may not fall short of. */
    const size_t T = (size_t)p->tile, pitch = p->h > 1
                                                  ? (size_t)(t->strides[0] * dtype_size(t->dtype))
                                                  : (size_t)p->w * 4;
    unsigned char *base = (unsigned char *)t->data + t->offset * dtype_size(t->dtype);
    int64_t bytes = 0;
    for (int32_t k = 0; k < chunk->count; k++) {
        const int64_t i0 = (chunk->units[k] / p->tiles_x) * (int64_t)T,
                      j0 = (chunk->units[k] % p->tiles_x) * (int64_t)T;
        const size_t rows = (size_t)(p->h - i0 < (int64_t)T ? p->h - i0 : (int64_t)T),
                     cols = (size_t)(p->w - j0 < (int64_t)T ? p->w - j0 : (int64_t)T);
        /* Slot k's rows are rows k T .. k T + T - 1 of T x 4-byte rows; a pixel is 4 bytes in
         * both outputs (a count, or RGBA). */
        const size_t from[3] = {0, (size_t)k * T, 0}, to[3] = {(size_t)j0 * 4, (size_t)i0, 0};
        const size_t region[3] = {cols * 4, rows, 1};
        /* The first read waits for `after` (NULL: nothing); the queue orders the others. */
        const int wait = k == 0 && after != NULL;
        cl_int rc =
            clEnqueueReadBufferRect(queue, staged, CL_FALSE, from, to, region, T * 4, 0, pitch, 0,
                                    base, wait ? 1 : 0, wait ? &after : NULL, NULL);
        if (rc != CL_SUCCESS)
            return err_cl(rc, "%s: downloading tile %d into host memory failed", op_name,
                          (int)chunk->units[k]);
        bytes += (int64_t)(rows * cols * 4);
    }
    pool_record_download(w->call->pool, bytes);
    return CLOPS_OK;
}

/* Enqueues the download of the chunk's compact slots (outputs delivered through the host). */
static int32_t enqueue_downloads(struct worker *w, const struct split_chunk *chunk)
{
    for (int o = 0; o < 2; o++) {
        const enum delivery d = delivery_for(w, o, chunk->contested);
        if (d != DELIVER_HOST && d != DELIVER_PLACE)
            continue;
        if (in_place(w, o, chunk->contested)) {
            const int32_t status = download_in_place(w, chunk, o, w->queue, w->staged[o], NULL);
            if (status != CLOPS_OK)
                return status;
            continue;
        }
        size_t bytes = staged_bytes(w->call->plan, chunk->count);
        cl_int rc = clEnqueueReadBuffer(w->queue, w->staged[o], CL_FALSE, 0, bytes, w->host[o], 0,
                                        NULL, NULL);
        if (rc != CL_SUCCESS)
            return err_cl(rc, "%s: downloading %zu bytes of tiles failed", op_name, bytes);
        pool_record_download(w->call->pool, (int64_t)bytes);
    }
    return CLOPS_OK;
}

/* Enqueues rows [row0, row0 + rows) of each of the chunk's n tiles (their numbers in the
 * buffer bound as argument 14) on the worker's queue, into `work`. */
static int32_t launch_rows(struct worker *w, struct pool_work *work, int32_t n, int32_t row0,
                           int32_t rows)
{
    int32_t status = set_int_arg(w->render, "mandelbrot", 10, n);
    if (status == CLOPS_OK)
        status = set_int_arg(w->render, "mandelbrot", 11, row0);
    if (status == CLOPS_OK)
        status = set_int_arg(w->render, "mandelbrot", 12, rows);
    size_t global = global_size(w->call->plan, n, rows, w->group_size),
           local = (size_t)w->group_size;
    if (status == CLOPS_OK)
        status = pool_launch_kernel(w->call->pool, work, w->queue, w->render, 1, &global, &local,
                                    op_name);
    return status;
}

/* render_chunk for a worker that renders ahead (setup_ahead): the chunk's tile numbers, its
 * launch into set s's compact buffers and, on dl_queue once the launch is done, its tiles'
 * downloads into place are enqueued; it returns once the launch is done, not its downloads,
 * which run while the next chunk renders into the other set. Its tiles are claimed and
 * delivered before they have landed, which is safe as no other worker renders them; the
 * call's commit reads the temporaries only once every worker has drained (settle). */
static int32_t render_ahead(struct worker *w, const struct split_chunk *chunk)
{
    struct clops_pool *pool = w->call->pool;
    const int32_t s = w->set, n = chunk->count, T = w->call->plan->tile;
    int32_t status = settle(w, s, CLOPS_OK); /* its chunk landed beside the last one's */
    if (status != CLOPS_OK)
        return status;
    w->rendering[s] = w->downloading[s] = 1; /* from here on drain waits, on every path */
    memcpy(w->ahead_ids_host[s], chunk->units, (size_t)n * sizeof(int32_t));
    status = bind_outputs(w, 0);
    for (int o = 0; o < 2 && status == CLOPS_OK; o++)
        if (w->ahead_staged[s][o] != NULL)
            status = set_mem_arg(w->render, "mandelbrot", o == 0 ? 15 : 20, w->ahead_staged[s][o]);
    if (status == CLOPS_OK)
        status = set_mem_arg(w->render, "mandelbrot", 14, w->ahead_ids[s]);
    if (status == CLOPS_OK) /* before launches that may write outputs */
        status = enqueue_write(w->queue, w->ahead_ids[s], (size_t)n * sizeof(cl_int),
                               w->ahead_ids_host[s], w->after, pool);
    if (status == CLOPS_OK)
        status = launch_rows(w, &w->ahead_work[s], n, 0, T);
    if (status == CLOPS_OK)
        status = pool_work_end(&w->ahead_work[s], w->queue, op_name);
    if (status == CLOPS_OK && w->ahead_work[s].done == NULL)
        status = err_set(CLOPS_ERR_DEVICE, "%s: marking a chunk's end failed", op_name);
    /* Submitted: the downloads on another queue wait for its end. */
    if (status == CLOPS_OK && clFlush(w->queue) != CL_SUCCESS)
        status = err_set(CLOPS_ERR_DEVICE, "%s: submitting a chunk failed", op_name);
    for (int o = 0; o < 2 && status == CLOPS_OK; o++)
        if (in_place(w, o, 0))
            status = download_in_place(w, chunk, o, w->dl_queue, w->ahead_staged[s][o],
                                       w->ahead_work[s].done);
    const int32_t marked = pool_work_end(&w->dl_work[s], w->dl_queue, op_name);
    if (status == CLOPS_OK)
        status = marked;
    if (status == CLOPS_OK && clFlush(w->dl_queue) != CL_SUCCESS)
        status = err_set(CLOPS_ERR_DEVICE, "%s: submitting a chunk's downloads failed", op_name);
    w->landing[s] = status == CLOPS_OK && w->call->land != NULL ? n : 0;
    /* The chunk before, its downloads done by now or soon: its tiles land while this one
     * renders, where that hides them (land_beside). */
    status = land_beside(w, 1 - s, s, status);
    /* This chunk's render waited for (not its downloads), as a worker that does not render
     * ahead waits for its chunk: one that returned at once took its next chunks early and, at
     * the splitter's shares of what is left, more than its part (two H200s, deep zoom 8192^2
     * into host memory: GPU 1 ended 2.3 ms after GPU 0, 30.8 ms in all; 27.8-29.2 with it). */
    status = finish_pending(w, &w->rendering[s], &w->ahead_work[s], w->queue, status);
    w->set = 1 - s;
    atomic_fetch_add(&mandel_ahead_chunks, 1);
    return status;
}

/* render_chunk for a worker that does not render ahead: the chunk's tile numbers, launches and
 * the download of its compact slots enqueued, then one wait, so that the claims that follow are
 * of tiles finished. Where a GPU may take the tiles over, in bands, each waited for, giving them
 * up between bands once another worker delivered them all. */
static int32_t render_and_wait(struct worker *w, const struct split_chunk *chunk)
{
    struct clops_pool *pool = w->call->pool;
    const int32_t T = w->call->plan->tile, n = chunk->count;
    const int32_t band = chunk->may_give_up ? clamp32(BAND_ITEMS / ((int64_t)n * T), 1, T) : T;
    int32_t status = bind_outputs(w, chunk->contested);
    if (status == CLOPS_OK) /* chunk->units stays as it is until the chunk is delivered */
        status = enqueue_write(w->queue, w->ids, (size_t)n * sizeof(cl_int), chunk->units, w->after,
                               pool); /* before launches that may write outputs */
    for (int32_t row0 = 0; row0 < T && status == CLOPS_OK; row0 += band) {
        if (row0 > 0 && chunk->may_give_up) {
            status = wait_chunk(w, &w->work, w->queue, status);
            if (status != CLOPS_OK || split_chunk_given_up(chunk))
                return status;
        }
        status = launch_rows(w, &w->work, n, row0, T - row0 < band ? T - row0 : band);
    }
    /* The host slots the downloads fill: free once their set's last placement is done. */
    status = placed(w, w->set, status);
    if (status == CLOPS_OK)
        status = enqueue_downloads(w, chunk);
    return wait_chunk(w, &w->work, w->queue, status);
}

/* Renders the chunk's tiles (split_job.render), ahead of their downloads or waiting for them,
 * counting the worker's chunks, tiles and time for its debug line. */
static int32_t render_chunk(void *state, const struct split_chunk *chunk)
{
    struct worker *w = state;
    const int64_t began = split_clock_ns();
    w->chunks++;
    w->tiles += chunk->count;
    const int32_t status = w->ahead ? render_ahead(w, chunk) : render_and_wait(w, chunk);
    w->render_ns += split_clock_ns() - began;
    return status;
}

/* ---- The whole call -------------------------------------------------------------------------- */

/* f64 needs every device that takes part to have double precision. */
static int32_t check_fp64(const struct mandel_plan *p, const struct pool_device *dev)
{
    if (p->precision == PRECISION_F64 && !pool_device_info(dev)->fp64)
        return err_set(CLOPS_ERR_UNSUPPORTED,
                       "%s: parameter 'precision' is f64 but device '%s' of the pool has no "
                       "double precision (cl_khr_fp64)",
                       op_name, pool_device_info(dev)->name);
    return CLOPS_OK;
}

/* split_job.check_device. */
static int32_t check_device(void *op, const struct pool_device *dev)
{
    return check_fp64(((const struct mandel_call *)op)->plan, dev);
}

/* split_job.stop_requested and .progress: the call's cancellation and progress, in tiles. */
static int stop_requested(void *op)
{
    return call_cancel_requested(((const struct mandel_call *)op)->op);
}

static void tiles_delivered(void *op, int64_t delivered, int64_t total)
{
    call_progress(((struct mandel_call *)op)->op, delivered, total);
}

/* A submitted call's launches cover at most 1/PACED_LAUNCHES of the image (every device's
 * launches are waited for, so a cancel stops the call within one launch per device, and its
 * progress moves at least that often); a synchronous one keeps launches as large as they pay
 * (GPU_ALONE_LAUNCH_ITEMS: the whole of a 4096^2 image at once). */
enum { PACED_LAUNCHES = 16 };
static int64_t launch_items(const struct op_call *op, const struct mandel_plan *p, int64_t items)
{
    const int64_t unit = (int64_t)p->tile * p->tile, paced = p->tile_count * unit / PACED_LAUNCHES;
    if (!op->control->submitted || items <= paced)
        return items;
    return paced > unit ? paced : unit;
}

/* A submitted call's stream may still run its earlier calls, which may read or write this
 * call's device outputs (buffers on the primary device), while the workers write them on queues
 * of their own. A marker on the stream's queue orders them: where that queue is in the primary
 * device's context, the commands writing the outputs wait for it on the device (*after, for
 * their wait lists) and no thread blocks; else this thread waits for it. Host outputs need no
 * order: the workers write the call's own temporaries, and the commit comes after the call's
 * end marker, which the stream's queue runs after its earlier calls. */
static int32_t order_after_stream(struct op_call *op, const struct mandel_plan *p, cl_event *after)
{
    *after = NULL;
    const int device_outputs =
        p->iters->buffer != NULL || (p->image != NULL && p->image->buffer != NULL);
    if (!op->control->submitted || op->queue == NULL || !device_outputs)
        return CLOPS_OK;
    cl_event marker = NULL;
    cl_int rc = clEnqueueMarkerWithWaitList(op->queue, 0, NULL, &marker);
    if (rc == CL_SUCCESS) /* commands of other queues will wait for it: it must be submitted */
        rc = clFlush(op->queue);
    const int same_context =
        pool_device_context(op->dev) == pool_device_context(pool_device_at(op->pool, 0));
    if (rc == CL_SUCCESS && same_context) {
        *after = marker;
        return CLOPS_OK;
    }
    if (rc == CL_SUCCESS)
        rc = pool_wait_event(marker);
    if (marker != NULL)
        clReleaseEvent(marker);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: ordering after the stream's earlier calls failed", op_name);
    return CLOPS_OK;
}

/* The call's split_job as split_only_device and split_record_work read it; mandel_run adds
 * the rest. */
static struct split_job rates_job(const struct mandel_plan *p)
{
    return (struct split_job){.unit_count = p->tile_count,
                              .dynamic = p->dynamic,
                              .gpu_share = p->gpu_share,
                              .unit_items = (int64_t)p->tile * p->tile,
                              .rate_index = registry_index_by_name(op_name)};
}

/* The tiles, shared by the pool's devices through the splitter; a cancel stops them between
 * chunks (CLOPS_ERR_CANCELLED). Host outputs' tiles land through `land` (NULL: none do). */
static int32_t mandel_run(struct op_call *op, const struct mandel_plan *p, struct mandel_land *land)
{
    struct clops_pool *pool = op->pool;
    struct mandel_call call = {
        .pool = pool, .primary = pool_device_at(pool, 0), .plan = p, .op = op, .land = land};
    for (int o = 0; o < 2 && p->in_bridges; o++) {
        const struct clops_tensor *t = output_tensor(p, o);
        if (t != NULL && t->buffer == NULL && mandel_pixels_in_rows(t, o))
            call.in_place |= 1u << o;
    }
    struct split_job job = rates_job(p);
    job.name = op_name;
    job.unit_name = "tiles";
    job.launch_items[SPLIT_LAUNCH_GPU_SHARED] = launch_items(op, p, GPU_LAUNCH_ITEMS);
    job.launch_items[SPLIT_LAUNCH_GPU_ALONE] = launch_items(op, p, GPU_ALONE_LAUNCH_ITEMS);
    job.launch_items[SPLIT_LAUNCH_CPU] = launch_items(op, p, CPU_LAUNCH_ITEMS);
    job.taper = land != NULL; /* the landing of each chunk hides behind the next */
    job.op = &call;
    job.worker_size = sizeof(struct worker);
    job.check_device = check_device;
    job.setup = worker_setup;
    job.render = render_chunk;
    job.deliver = deliver;
    job.drain = drain;
    job.teardown = worker_release;
    job.stop_requested = stop_requested;
    job.progress = tiles_delivered;
    call_progress(op, 0, p->tile_count);
    int32_t status = order_after_stream(op, p, &call.after);
    if (status != CLOPS_OK)
        return status;
    struct split_result result;
    status = split_run(pool, &job, &result);
    if (call.after != NULL)
        clReleaseEvent(call.after); /* the workers' commands waiting for it hold it */
    op->device_ns += call.device_ns;
    if (status == CLOPS_OK && result.stopped)
        status = call_refuse_cancelled(op, result.delivered, p->tile_count, "tiles");
    return status;
}

/* The configuration can add build options to every kernel; those that let the compiler fuse or
 * reassociate break the promise that every device renders a tile to the same bits. */
static void warn_unsafe_options(const struct clops_pool *pool)
{
    static const char *const unsafe[] = {"-cl-mad-enable", "-cl-unsafe-math-optimizations",
                                         "-cl-fast-relaxed-math"};
    const struct config_op *settings = pool_op_settings(pool, op_name);
    for (size_t i = 0; i < sizeof unsafe / sizeof unsafe[0]; i++)
        if (strstr(pool_build_options(pool), unsafe[i]) != NULL ||
            (settings != NULL && strstr(settings->build_options, unsafe[i]) != NULL))
            log_msg(CLOPS_LOG_WARNING,
                    "%s: build option %s is configured: tiles may differ in their last bits "
                    "between devices and from a host computation",
                    op_name, unsafe[i]);
}

/* ---- One device alone, on the call's queue --------------------------------------------------- */

/* Whether the call's device is the one device of the pool that takes part (split_only_device)
 * and can write every output itself: device outputs are buffers on the primary device. Then the
 * core stages the outputs and the tiles run on the call's queue, without the splitter. */
static int renders_alone(const struct op_call *call, const struct mandel_plan *p)
{
    const struct split_job job = rates_job(p);
    if (call->dev == NULL || split_only_device(call->pool, &job) != call->dev)
        return 0;
    const int device_outputs =
        p->iters->buffer != NULL || (p->image != NULL && p->image->buffer != NULL);
    return !device_outputs || call->dev == pool_device_at(call->pool, 0);
}

/* The render kernel's outputs (15 .. 19 and 20 .. 25): those the core staged (a host output's
 * temporary buffer, a device output in place), written directly. */
static int32_t bind_staged_outputs(cl_kernel kernel, const struct op_call *call,
                                   const struct mandel_plan *p)
{
    int32_t status = CLOPS_OK;
    for (int o = 0; o < 2 && status == CLOPS_OK; o++) {
        const struct clops_tensor *t = output_tensor(p, o);
        const struct staged_tensor *staged = &call->staged[o == 0 ? P_ITERATIONS : P_IMAGE];
        struct clops_tensor at = t != NULL ? *t : (struct clops_tensor){0};
        at.offset = staged->offset;
        status = set_output_args(kernel, "mandelbrot", o == 0 ? 15 : 20, t != NULL ? &at : NULL,
                                 t != NULL ? staged->mem : NULL, 1, o == 0 ? 2 : 3);
    }
    return status;
}

/* Launches the tiles in order on the call's queue and waits for none of them (the lifecycle
 * waits once, then downloads and commits the outputs). A submitted call is paced (pace.h), a
 * launch a step: a cancel stops it within its pace's lag of launches (pace.h), and its progress
 * counts the tiles of the launches done. Launches are as large as on the splitter's workers
 * (launch_items). */
static int32_t render_alone(struct op_call *call, const struct mandel_plan *p)
{
    struct clops_pool *pool = call->pool;
    const int gpu = pool_device_info(call->dev)->type == CLOPS_DEVICE_GPU;
    const int64_t unit = (int64_t)p->tile * p->tile;
    const int32_t per_launch =
        clamp32(launch_items(call, p, gpu ? GPU_ALONE_LAUNCH_ITEMS : CPU_LAUNCH_ITEMS) / unit, 1,
                p->tile_count);
    cl_kernel kernel = NULL;
    int32_t group = 1;
    int32_t status = create_kernel(pool, call->dev, p, "mandelbrot", &kernel);
    if (status == CLOPS_OK)
        status = group_size_for(kernel, call->dev, &group);
    if (status == CLOPS_OK)
        status = bind_view(kernel, p, NULL);
    if (status == CLOPS_OK)
        status = bind_staged_outputs(kernel, call, p);
    struct pace pace;
    pace_begin(&pace, call, call->queue, p->tile_count, "tiles");
    for (int32_t first = 0; first < p->tile_count && status == CLOPS_OK; first += per_launch) {
        const int32_t n = p->tile_count - first < per_launch ? p->tile_count - first : per_launch;
        size_t global = global_size(p, n, p->tile, group), local = (size_t)group;
        status = set_int_arg(kernel, "mandelbrot", 10, n);
        if (status == CLOPS_OK)
            status = set_int_arg(kernel, "mandelbrot", 13, first);
        if (status == CLOPS_OK)
            status = pool_launch_kernel(pool, &call->work, call->queue, kernel, 1, &global, &local,
                                        op_name);
        if (status == CLOPS_OK)
            status = pace_units_queued(&pace, n);
    }
    pace_release(&pace);
    pool_release_kernel(pool, kernel);
    return status;
}

/* ---- The operator's steps: check, enqueue, commit (call.h runs the rest) ------------------ */

/* A call its device renders alone (plan.alone) leaves its outputs to the core: staged, written
 * by the kernels, downloaded and committed like any operator's. Otherwise the splitter's workers
 * deliver host outputs into packed host temporaries, which the commit step writes into host
 * memory (only the outputs' elements) once every tile has been delivered: a failed call leaves
 * them untouched, where delivering tiles straight into them would leave those done before the
 * failure. The cost is a host copy of each host output and one pass over it, next to the
 * render; where workers render ahead, each chunk's tiles land in the host outputs by a swap with
 * the temporary while the next chunk renders, and a failed call writes them back
 * (mandelbrot_land.h), so that the commit writes only what did not land. Device outputs are written
 * in place as tiles are delivered; the core stages neither (the tiles go to each device's own
 * buffers). */
struct mandel_state {
    struct mandel_plan plan;
    struct clops_tensor packed[2];
    void *data[2];
    size_t capacity[2];
    struct bridge bridges[2]; /* data[o] where it is a bridge's */
    int64_t started_ns; /* plan.alone: when enqueue began (the device's busy time ends at commit) */
    /* The host outputs and their temporaries, and the tiles that landed in them before the
     * commit (mandelbrot_land.h; land.landed NULL: none land); `committed` once the commit ran,
     * else the release writes the landed tiles' earlier pixels back. */
    struct mandel_land land;
    int committed;
};

static int32_t mandel_check(struct op_call *call)
{
    const union op_value *v = call->values;
    struct mandel_state *s = call->plan;
    /* Its tiles go to every device; buffers must be on the primary one. */
    const struct pool_device *primary = call->pool != NULL ? pool_device_at(call->pool, 0) : NULL;
    int32_t status = mandel_check_args(call, primary, v[P_ITERATIONS].tensor, v[P_IMAGE].tensor,
                                       v[P_CENTER_X].f64, v[P_CENTER_Y].f64, v[P_SCALE].f64,
                                       v[P_MAX_ITERATIONS].i64, v[P_PRECISION].i32,
                                       v[P_SPLIT].string, v[P_TILE].i64, &s->plan);
    if (status != CLOPS_OK)
        return status;
    s->plan.alone = call->pool != NULL && renders_alone(call, &s->plan);
    if (s->plan.alone) {
        status = check_fp64(&s->plan, call->dev);
        if (status != CLOPS_OK)
            return status;
    } else { /* the splitter's workers deliver the tiles: into mandel_state's temporaries */
        call->stage[P_ITERATIONS] = call->stage[P_IMAGE] = STAGE_NONE;
    }
    if (s->plan.tile_count == 0)
        call->nothing_to_do = 1;
    else if (!call->checking)
        warn_unsafe_options(call->pool);
    return CLOPS_OK;
}

static int32_t mandel_enqueue(struct op_call *call)
{
    struct mandel_state *s = call->plan;
    if (s->plan.alone) {
        s->started_ns = split_clock_ns();
        return render_alone(call, &s->plan);
    }
    struct mandel_plan staged = s->plan;
    staged.in_bridges = 1;
    const struct clops_tensor *outputs[2] = {s->plan.iters, s->plan.image};
    const int64_t began = split_clock_ns();
    for (int o = 0; o < 2; o++) {
        const struct clops_tensor *t = outputs[o];
        if (t == NULL || t->buffer != NULL)
            continue;
        /* A bridge, page-locked in every context, which the workers' DMA writes tiles into
         * (download_in_place); else a block of earlier calls, pages already touched
         * (pool_host_take says why), which they copy tiles into. */
        const size_t bytes = (size_t)(tensor_elements(t) * dtype_size(t->dtype));
        if (bridge_take(call->pool, bytes, op_name, &s->bridges[o]) == CLOPS_OK) {
            s->data[o] = s->bridges[o].data;
        } else {
            staged.in_bridges = 1;
            s->data[o] = pool_host_take(call->pool, call->dev, call->queue, bytes, &s->capacity[o]);
            if (s->data[o] == NULL)
                return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", op_name);
        }
        tensor_packed_like(t, s->data[o], &s->packed[o]);
        *(o == 0 ? &staged.iters : &staged.image) = &s->packed[o];
    }
    const struct clops_tensor *host[2] = {NULL, NULL}, *temp[2] = {NULL, NULL};
    for (int o = 0; o < 2; o++)
        if (s->data[o] != NULL) {
            host[o] = outputs[o];
            temp[o] = &s->packed[o];
        }
    /* Without host memory for the marks the tiles wait for the commit, as they did before. */
    if (host[0] != NULL || host[1] != NULL)
        mandel_land_init(&s->land, s->plan.h, s->plan.w, s->plan.tile, s->plan.tiles_x,
                         s->plan.tile_count, host, temp);
    const int64_t taken = split_clock_ns();
    const int32_t status = mandel_run(call, &staged, s->land.landed != NULL ? &s->land : NULL);
    log_msg(CLOPS_LOG_DEBUG, "%s: temporaries taken in %.2f ms, the split ran %.2f ms", op_name,
            (double)(taken - began) * 1e-6, (double)(split_clock_ns() - taken) * 1e-6);
    return status;
}

static void mandel_commit(struct op_call *call)
{
    struct mandel_state *s = call->plan;
    if (s->plan.alone) { /* the core commits the outputs */
        const struct split_job job = rates_job(&s->plan);
        split_record_work(call->pool, &job, call->dev, s->plan.tile_count,
                          split_clock_ns() - s->started_ns);
        call_progress(call, s->plan.tile_count, s->plan.tile_count);
        return;
    }
    const struct clops_tensor *outputs[2] = {s->plan.iters, s->plan.image};
    const int64_t began = split_clock_ns();
    s->committed = 1;
    if (s->land.landed != NULL)
        mandel_land_rest(call->pool, &s->land);
    else
        for (int o = 0; o < 2; o++)
            if (s->data[o] != NULL)
                tensor_unpack(call->pool, outputs[o], s->data[o]);
    if (s->data[0] != NULL || s->data[1] != NULL)
        log_msg(CLOPS_LOG_DEBUG,
                "%s: host outputs written from the temporaries in %.2f ms (the tiles that had "
                "not landed)",
                op_name, (double)(split_clock_ns() - began) * 1e-6);
}

static void mandel_release(struct op_call *call)
{
    struct mandel_state *s = call->plan;
    if (!s->committed) /* failed or cancelled: the host outputs as they were */
        mandel_land_undo(call->pool, &s->land);
    mandel_land_free(&s->land);
    for (int o = 0; o < 2; o++) {
        if (s->bridges[o].data != NULL)
            bridge_give(call->pool, &s->bridges[o]);
        else
            pool_host_give(call->pool, s->data[o], s->capacity[o]);
        s->data[o] = NULL;
    }
}

/* ---- The entry point ------------------------------------------------------------------------- */

static int32_t mandelbrot_entry(struct clops_pool *pool, const struct clops_tensor *iterations,
                                const struct clops_tensor *image, double center_x, double center_y,
                                double scale, int64_t max_iterations, int32_t precision,
                                const char *split, int64_t tile)
{
    const union op_value values[] = {
        {.tensor = iterations}, {.tensor = image}, {.f64 = center_x},
        {.f64 = center_y},      {.f64 = scale},    {.i64 = max_iterations},
        {.i32 = precision},     {.string = split}, {.i64 = tile}};
    return call_run(pool, &impl_mandelbrot, values);
}

/* ---- The descriptor -------------------------------------------------------------------------- */

static const char *const precision_values[] = {"f32", "f64", NULL};

static const struct clops_param mandelbrot_params[] = {
    {"iterations", CLOPS_PARAM_TENSOR_OUT, CLOPS_DTYPE_BIT(CLOPS_U32), NULL, NULL,
     "H x W (u32, any strides): per pixel, the iterations run before escape, or "
     "max_iterations for points that did not escape."},
    {"image", CLOPS_PARAM_TENSOR_OUT, CLOPS_DTYPE_BIT(CLOPS_U8), NULL, CLOPS_OPTIONAL,
     "H x W x 4 (u8, any strides): RGBA colours of the counts through the palette; optional. "
     "Must not overlap iterations."},
    {"center_x", CLOPS_PARAM_DOUBLE, 0, NULL, "-0.5", "Real part of the view's centre."},
    {"center_y", CLOPS_PARAM_DOUBLE, 0, NULL, "0", "Imaginary part of the view's centre."},
    {"scale", CLOPS_PARAM_DOUBLE, 0, NULL, "3",
     "Width of the view in the complex plane, > 0; pixels are square, scale / W on a side."},
    {"max_iterations", CLOPS_PARAM_INT64, 0, NULL, "1024", "Iterations per pixel, 1 to 2^31."},
    {"precision", CLOPS_PARAM_ENUM, 0, precision_values, "f32",
     "Arithmetic of the iteration: f32, or f64 for deep zooms (needs cl_khr_fp64)."},
    {"split", CLOPS_PARAM_STRING, 0, NULL, "dynamic",
     "How tiles are shared between devices: \"dynamic\", or the GPU side's share as a decimal "
     "fraction \"0\" to \"1\"."},
    {"tile", CLOPS_PARAM_INT64, 0, NULL, "256", "Tile edge in pixels, 1 to 4096."},
};

static const struct clops_op op_mandelbrot = {
    .summary = "Mandelbrot set iteration counts and RGBA image, tiles shared by GPU and CPU.",
    .doc =
        "Renders the view of the Mandelbrot set centred on (center_x, center_y), scale wide, "
        "into iterations (H x W, u32) and optionally image (H x W x 4, u8 RGBA).\n"
        "\n"
        "Pixel (i, j) (row i from the top, column j) is the point c = (cx, cy) with "
        "cx = center_x + ((j + 0.5) - W/2) * px and cy = center_y - ((i + 0.5) - H/2) * px, "
        "evaluated in that order in the chosen precision from center_x, center_y, "
        "px = scale / W (divided in double) and W/2, H/2, each rounded to the precision first. "
        "From z = 0 each step computes y2 = y*y, stops if fma(x, x, y2) > 4, else sets "
        "y = fma(x + x, y, cy) and x = fma(x, x, cx - y2) (both from the step's x and y), where "
        "fma is the correctly rounded a*b + c of C and OpenCL C; the count is the number of "
        "steps taken, at most max_iterations (so a point escaping at exactly max_iterations "
        "reads as inside). No other operation is contracted into an fma (the kernel sets "
        "FP_CONTRACT OFF and clops passes no fast-math option): the result is bit-identical on "
        "every IEEE device and to a host computation of these steps (with C's fma). Configured "
        "build options such as "
        "-cl-mad-enable or -cl-fast-relaxed-math would break that; a warning is logged.\n"
        "\n"
        "Palette: points with count = max_iterations are black; others cycle every 256 "
        "iterations through 4 colours, (0,7,100), (32,107,203), (237,255,255), (255,170,0): "
        "with p = (4 n) mod 1024, s = p / 256, w = p mod 256, each channel is "
        "(C[s] (256 - w) + C[(s + 1) mod 4] w) / 256 in integers; alpha is 255.\n"
        "\n"
        "Work split: the image is cut into tile x tile tiles (partial at the right and bottom), "
        "numbered row-major. Every device of the pool takes part, with one host thread per "
        "command queue of each device. The GPU side is the pool's GPU devices and the CPU side "
        "the others; a pool with no GPU and several devices lets its primary device be the GPU "
        "side. split = \"dynamic\": one list of every tile in order; GPU-side threads take "
        "chunks from its front, CPU-side threads from its back (a chunk is up to 2^20 pixels on "
        "a GPU, 2^14 on a CPU, and at most 1/(2 threads) of what is left), so whichever device "
        "is free takes more. When the list is empty, GPU-side threads render again the tiles "
        "CPU-side threads are still on; whoever finishes first delivers the tile. CPU-side "
        "threads render in bands of 2^12 pixels and give a tile up between bands once it was "
        "delivered, so a slow CPU never holds the call up by more than one band. split = f (\"0\" "
        ".. \"1\"): "
        "tile t is the GPU side's when floor((t+1) f) > floor(t f), floor(T f) tiles spread "
        "evenly over the image, and the CPU side's otherwise; each side shares its own tiles "
        "dynamically, without taking over; a side with no device gives its tiles to the other. "
        "Per device, the tiles it delivered and its busy time (summed over its threads, "
        "abandoned work included) go to pool_device_stats; a call's tiles sum to the tile "
        "count. When one device takes part (a pool of one device, or a split that leaves the other "
        "side no tile) and it is the call's (operators.mandelbrot.device, or a stream's), it "
        "renders every tile on the call's own queue, in order, without a thread of its own, in "
        "launches of those sizes that nothing waits for between them. The configuration's "
        "build_options apply.\n"
        "\n"
        "Outputs: host tensors are written once every tile is rendered, and not at all by a call "
        "that fails or is cancelled. Device tensors (buffers on the primary device) are written "
        "in place by the primary device's tiles; tiles of other devices, and tiles two devices "
        "may both render, are downloaded, uploaded to the primary device and copied into place "
        "there.\n"
        "\n"
        "Submitted calls: the progress counts tiles rendered, and a cancel stops the call "
        "between launches (CLOPS_ERR_CANCELLED; host outputs untouched, device ones partly "
        "written); their launches hold at most 1/16 of the tiles, and a device rendering alone "
        "runs at most two launches ahead of its device, so that a cancel stops within about "
        "a sixteenth of the image per device (two on a device alone).\n"
        "\n"
        "Errors: CLOPS_ERR_INVALID_ARGUMENT, naming the parameter, for a NULL or malformed "
        "tensor, a rank other than 2 (iterations) or 3 (image), an image not H x W x 4, outputs "
        "that overlap, a non-finite centre, scale <= 0 or not finite or giving a pixel size out "
        "of the precision's normal range, max_iterations outside 1 .. 2^31, a precision other "
        "than 0 or 1, a split other than \"dynamic\" or a decimal fraction 0 .. 1, or a tile "
        "outside 1 .. 4096 (or cutting the image into more than 2^31 - 1 tiles). "
        "CLOPS_ERR_UNSUPPORTED for dtypes other than u32 and u8, an extent over 2^30 - 1, or f64 "
        "on a device without double precision. A rejected call writes nothing. An empty image "
        "is a valid call that does nothing.",
    OP_DESCRIPTOR_COMMON(op_name, mandelbrot_params, mandelbrot_entry, clops_mandelbrot_fn),
};

const struct op_impl impl_mandelbrot = OP_IMPL(&op_mandelbrot, struct mandel_state, mandel_check,
                                               mandel_enqueue, mandel_commit, mandel_release, NULL);
