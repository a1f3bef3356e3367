/* tensor_stage.c — host tensors staged into device memory for the length of one operator call:
 * only the elements a view holds are transferred, in either direction, and outputs reach host
 * memory only in a commit step once everything before it succeeded; i32 vectors read and
 * written for the LU engine. */
#include "tensor.h"

#include "host_register.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs [first, first + count) of a view (in view_runs' order, the innermost outer axis fastest)
 * between `view` (the view's first element, runs at their strides) and `other`, which holds
 * them packed or, with packed = 0, laid out as the view; to_view gives the direction. */
static void copy_run_range(const struct view_runs *v, int64_t es, char *view, char *other,
                           int packed, int to_view, int64_t first, int64_t count)
{
    const size_t bytes = (size_t)(v->run * es);
    int64_t index[CLOPS_MAX_RANK] = {0}, at = 0, next = first * v->run; /* in elements */
    int64_t rest = first;
    for (int32_t a = 0; a < v->outer; a++) {
        index[a] = rest % v->count[a];
        rest /= v->count[a];
        at += index[a] * v->stride[a];
    }
    for (int64_t done = 0; done < count; done++) {
        char *o = other + (packed ? next : at) * es;
        if (to_view)
            memcpy(view + at * es, o, bytes);
        else
            memcpy(o, view + at * es, bytes);
        next += v->run;
        for (int32_t a = 0; a < v->outer; a++) {
            if (++index[a] < v->count[a]) {
                at += v->stride[a];
                break;
            }
            index[a] = 0;
            at -= (v->count[a] - 1) * v->stride[a];
        }
    }
}

/* One copy_runs cut into parts for pool_host_copy: a share of the runs each, or of the
 * bytes of the one run a dense view is. */
struct runs_copy {
    const struct view_runs *v;
    int64_t es, runs;
    char *view, *other;
    int packed, to_view;
};

static void copy_runs_part(void *ctx, int part, int parts)
{
    const struct runs_copy *c = ctx;
    size_t begin, end;
    if (c->runs == 1) {
        host_copy_share((size_t)(c->v->run * c->es), part, parts, &begin, &end);
        if (c->to_view)
            memcpy(c->view + begin, c->other + begin, end - begin);
        else
            memcpy(c->other + begin, c->view + begin, end - begin);
        return;
    }
    host_copy_share((size_t)c->runs, part, parts, &begin, &end);
    copy_run_range(c->v, c->es, c->view, c->other, c->packed, c->to_view, (int64_t)begin,
                   (int64_t)(end - begin));
}

/* Copies every run of the view between `view` and `other` (copy_run_range), on the pool's
 * copier when it is large (pool_host_copy). */
static void copy_runs(struct clops_pool *pool, const struct view_runs *v, int64_t es, char *view,
                      char *other, int packed, int to_view)
{
    int64_t runs = 1;
    for (int32_t a = 0; a < v->outer; a++)
        runs *= v->count[a];
    struct runs_copy c = {v, es, runs, view, other, packed, to_view};
    pool_host_copy(pool, copy_runs_part, &c, (size_t)(runs * v->run * es));
}

/* The runs as one rectangle of clEnqueue{Read,Write}BufferRect, the buffer side laid out as the
 * view from its origin: region (bytes of a run, runs of the first outer axis, of the second)
 * and the buffer's row and slice pitches. 0 when they make none: more than two outer axes, or
 * pitches OpenCL does not take (runs that overlap, a slice pitch not a multiple of the row
 * pitch or smaller than a slice). */
static int rect_of(const struct view_runs *v, int64_t es, size_t region[3], size_t pitch[2])
{
    if (v->outer > 2 || (v->outer > 0 && v->stride[0] < v->run))
        return 0;
    if (v->outer == 2 &&
        (v->stride[1] % v->stride[0] != 0 || v->stride[1] / v->stride[0] < v->count[0]))
        return 0;
    region[0] = (size_t)(v->run * es);
    region[1] = v->outer > 0 ? (size_t)v->count[0] : 1;
    region[2] = v->outer > 1 ? (size_t)v->count[1] : 1;
    pitch[0] = v->outer > 0 ? (size_t)(v->stride[0] * es) : 0;
    pitch[1] = v->outer > 1 ? (size_t)(v->stride[1] * es) : 0;
    return 1;
}

/* The bytes of a temporary device buffer for view `t`: its span, or, when it moves as one
 * rectangle, the rectangle's whole pitch (every row and slice full length, the last ones too).
 * NVIDIA's OpenCL refuses a rectangle whose last slice's pitch ends past the buffer
 * (CL_INVALID_VALUE), though OpenCL's bound is where its last run ends; the difference is at
 * most the padding after the last row or slice. */
static size_t staged_bytes(const struct clops_tensor *t)
{
    const int64_t es = dtype_size(t->dtype), span_bytes = tensor_span(t) * es;
    if (span_bytes == 0)
        return 0;
    struct view_runs v;
    view_runs(t, &v);
    size_t region[3], pitch[2];
    if (v.outer == 0 || !rect_of(&v, es, region, pitch))
        return (size_t)span_bytes;
    const size_t whole = v.outer == 1 ? region[1] * pitch[0] : region[2] * pitch[1];
    return whole > (size_t)span_bytes ? whole : (size_t)span_bytes;
}

void tensor_packed_like(const struct clops_tensor *t, void *data, struct clops_tensor *out)
{
    *out = *t;
    out->data = data;
    out->buffer = NULL;
    out->offset = 0;
    int32_t order[CLOPS_MAX_RANK], k = 0;
    for (int32_t i = 0; i < t->rank; i++) {
        out->strides[i] = 1;
        if (t->shape[i] <= 1)
            continue;
        int32_t j = k++; /* the stable sort of view_runs, so that the orders agree */
        while (j > 0 && t->strides[order[j - 1]] > t->strides[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    int64_t step = 1;
    for (int32_t j = 0; j < k; j++) {
        out->strides[order[j]] = step;
        step *= t->shape[order[j]];
    }
}

/* Copies t's elements from `from` into t's memory: `from` holds them packed, or, with packed =
 * 0, laid out as t from its first element. */
static void copy_into_view(struct clops_pool *pool, const struct clops_tensor *t, const void *from,
                           int packed)
{
    if (tensor_span(t) == 0)
        return;
    const int64_t es = dtype_size(t->dtype);
    struct view_runs v;
    view_runs(t, &v);
    copy_runs(pool, &v, es, (char *)t->data + t->offset * es, (char *)from, packed, 1);
}

void tensor_unpack(struct clops_pool *pool, const struct clops_tensor *t, const void *packed)
{
    copy_into_view(pool, t, packed, 1);
}

/* The end of a transfer of `moved` bytes of parameter `param`: its error, or its count in the
 * pool's statistics. */
static int32_t transfer_done(struct clops_pool *pool, cl_int rc, int64_t moved, int download,
                             const char *op, const char *param)
{
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: %s parameter '%s' (%lld bytes) failed", op,
                      download ? "downloading" : "uploading", param, (long long)moved);
    if (download)
        pool_record_download(pool, moved);
    else
        pool_record_upload(pool, moved);
    return CLOPS_OK;
}

size_t tensor_stage_chunk = TENSOR_STAGE_CHUNK;
int tensor_stage_on_cpu = 0;

/* An upload through two pinned staging blocks (pool_host_take): the host copies a chunk of the
 * view into one while the device reads the chunk before from the other, by DMA where a copy
 * from the user's pageable memory would go through the driver's own staging at a fraction of
 * the bus's speed. A block is refilled only once the write from it has completed; the last
 * writes are not waited for, and their blocks stay with the staged tensor (upload_end). */
struct upload {
    struct clops_pool *pool;
    struct pool_device *dev;
    cl_command_queue queue;
    cl_mem mem;
    const char *first;   /* the view's first byte in host memory */
    size_t pitch[2];     /* of its rows and slices in host memory */
    size_t dpitch[2];    /* and in `mem`: the same, or packed (tensor_upload_packed) */
    size_t chunk;        /* bytes of a chunk at most (tensor_stage_chunk, or less) */
    char *block[2];      /* the staging blocks, taken when first needed */
    size_t capacity[2];  /* theirs, for pool_host_give */
    cl_event written[2]; /* the write from each block still in flight, or NULL */
    int next;            /* the block the next chunk goes into */
};

/* What upload_chunk returns when no staging block could be had: no OpenCL code (those are 0 or
 * negative), so that a driver's CL_OUT_OF_HOST_MEMORY keeps its name. */
enum { NO_HOST_BLOCK = 1 };

/* `rows` rows of `width` bytes in each of `slices` slices of the view, from byte `x` of row
 * `row` of slice `slice` on: what one staging block holds, packed. */
struct chunk {
    size_t x, row, slice, width, rows, slices;
};

/* Waits for the write from block i, if one is in flight. */
static cl_int upload_wait(struct upload *u, int i)
{
    if (u->written[i] == NULL)
        return CL_SUCCESS;
    cl_int rc = pool_wait_event(u->written[i]);
    clReleaseEvent(u->written[i]);
    u->written[i] = NULL;
    return rc;
}

/* Copies chunk c into the next block and enqueues its write into the buffer, laid out as the
 * view, without waiting for it. */
static cl_int upload_chunk(struct upload *u, const struct chunk *c)
{
    const int i = u->next;
    cl_int rc = upload_wait(u, i);
    if (rc != CL_SUCCESS)
        return rc;
    if (u->block[i] == NULL) {
        u->block[i] = pool_host_take(u->pool, u->dev, u->queue, u->chunk, &u->capacity[i]);
        if (u->block[i] == NULL)
            return NO_HOST_BLOCK;
    }
    const size_t at = c->slice * u->pitch[1] + c->row * u->pitch[0] + c->x;
    const size_t dat = c->slice * u->dpitch[1] + c->row * u->dpitch[0] + c->x; /* in `mem` */
    /* The chunk as a view of bytes: rows of `width`, packed into the block. */
    const struct view_runs rows = {.run = (int64_t)c->width,
                                   .outer = 2,
                                   .count = {(int64_t)c->rows, (int64_t)c->slices},
                                   .stride = {(int64_t)u->pitch[0], (int64_t)u->pitch[1]}};
    copy_runs(u->pool, &rows, 1, (char *)u->first + at, u->block[i], 1, 0);
    if (c->rows == 1 && c->slices == 1) {
        rc = clEnqueueWriteBuffer(u->queue, u->mem, CL_FALSE, dat, c->width, u->block[i], 0, NULL,
                                  &u->written[i]);
    } else {
        /* Origins in whole rows (a chunk of rows) or slices (of slices), never past the rows
         * or slices the view has: NVIDIA checks a rectangle's end at its last pitch
         * (staged_bytes). Host pitches 0: the block holds the rows packed. */
        const size_t origin[3] = {0, c->slices == 1 ? dat / u->dpitch[0] : 0,
                                  c->slices == 1 ? 0 : c->slice};
        const size_t region[3] = {c->width, c->rows, c->slices};
        rc = clEnqueueWriteBufferRect(u->queue, u->mem, CL_FALSE, origin, (size_t[3]){0, 0, 0},
                                      region, u->dpitch[0], c->slices == 1 ? 0 : u->dpitch[1], 0, 0,
                                      u->block[i], 0, NULL, &u->written[i]);
    }
    if (rc != CL_SUCCESS) {
        u->written[i] = NULL;
        return rc;
    }
    /* Started now, so that its DMA runs while the next chunk is copied. */
    rc = clFlush(u->queue);
    u->next = 1 - i;
    return rc;
}

/* Uploads `slices` slices of `rows` rows of `width` bytes in chunks of whole slices where one
 * fits in a chunk, else of whole rows, else of pieces of a row. */
static cl_int upload_rows(struct upload *u, size_t width, size_t rows, size_t slices)
{
    cl_int rc = CL_SUCCESS;
    if (slices > 1 && width * rows <= u->chunk) {
        const size_t per = u->chunk / (width * rows);
        for (size_t s = 0; s < slices && rc == CL_SUCCESS; s += per) {
            const size_t n = slices - s < per ? slices - s : per;
            rc = upload_chunk(u, &(struct chunk){0, 0, s, width, rows, n});
        }
    } else if (width <= u->chunk) {
        const size_t per = u->chunk / width;
        for (size_t s = 0; s < slices; s++)
            for (size_t r = 0; r < rows && rc == CL_SUCCESS; r += per) {
                const size_t n = rows - r < per ? rows - r : per;
                rc = upload_chunk(u, &(struct chunk){0, r, s, width, n, 1});
            }
    } else {
        for (size_t s = 0; s < slices; s++)
            for (size_t r = 0; r < rows; r++)
                for (size_t x = 0; x < width && rc == CL_SUCCESS; x += u->chunk) {
                    const size_t n = width - x < u->chunk ? width - x : u->chunk;
                    rc = upload_chunk(u, &(struct chunk){x, r, s, n, 1, 1});
                }
    }
    return rc;
}

/* After a successful upload the writes still in flight are not waited for: their blocks go to
 * `out`, which keeps them until tensor_release, after the call's one wait. After a failure the
 * writes are waited for and the blocks go back to the pool at once; a wait that fails leaves
 * clFinish to make sure the driver reads them no more. */
static cl_int upload_end(struct upload *u, cl_int rc, struct staged_tensor *out)
{
    for (int i = 0; i < 2; i++) {
        if (rc != CL_SUCCESS) {
            upload_wait(u, i);
            continue;
        }
        if (u->written[i] != NULL)
            clReleaseEvent(u->written[i]);
        out->block[i] = u->block[i];
        out->block_capacity[i] = u->capacity[i];
    }
    if (rc == CL_SUCCESS)
        return rc;
    clFinish(u->queue);
    for (int i = 0; i < 2; i++)
        pool_host_give(u->pool, u->block[i], u->capacity[i]);
    return rc;
}

/* A view whose runs make no rectangle, through one block laid out as its span, the gaps zeros
 * (kernels read only the view's elements). */
static cl_int upload_gathered(struct upload *u, const struct view_runs *v, int64_t es,
                              size_t span_bytes)
{
    u->block[0] = pool_host_take(u->pool, u->dev, u->queue, span_bytes, &u->capacity[0]);
    if (u->block[0] == NULL)
        return NO_HOST_BLOCK;
    memset(u->block[0], 0, span_bytes);
    copy_runs(u->pool, v, es, (char *)u->first, u->block[0], 0, 0);
    return clEnqueueWriteBuffer(u->queue, u->mem, CL_FALSE, 0, span_bytes, u->block[0], 0, NULL,
                                NULL);
}

/* One write straight from the view's memory: a CPU device's buffers are host memory, and its
 * driver's write is one copy, which staging would make two (a 64 MiB upload on PoCL took 70 ms
 * instead of 57); memory the host registered is page-locked, and a GPU's DMA reads it as it
 * would a staging block. Not waited for: the view stays as it is until the call's wait (an output
 * is written only in its commit, after that wait). */
static cl_int upload_direct(struct upload *u, const size_t region[3])
{
    if (region[1] == 1 && region[2] == 1)
        return clEnqueueWriteBuffer(u->queue, u->mem, CL_FALSE, 0, region[0], u->first, 0, NULL,
                                    NULL);
    const size_t origin[3] = {0, 0, 0};
    return clEnqueueWriteBufferRect(u->queue, u->mem, CL_FALSE, origin, origin, region, u->pitch[0],
                                    u->pitch[1], u->pitch[0], u->pitch[1], u->first, 0, NULL, NULL);
}

/* Copies a host view's elements into `mem`, laid out as the view, reading nothing else of host
 * memory: when the view is dense or its runs make a rectangle (a padded matrix, the BLAS case),
 * through the staging blocks in chunks, or on a CPU device in one write; else through a block
 * holding its span. */
static int32_t upload_view(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                           const struct clops_tensor *t, struct staged_tensor *out, const char *op,
                           const char *param)
{
    const int64_t es = dtype_size(t->dtype), span_bytes = tensor_span(t) * es;
    struct upload u = {.pool = pool,
                       .dev = dev,
                       .queue = queue,
                       .mem = out->mem,
                       .first = (const char *)t->data + t->offset * es,
                       .chunk = tensor_stage_chunk > 0 ? tensor_stage_chunk : 1};
    struct view_runs v;
    view_runs(t, &v);
    size_t region[3] = {(size_t)span_bytes, 1, 1}, pitch[2] = {0, 0};
    int64_t moved = span_bytes;
    cl_int rc;
    if (v.outer == 0 || rect_of(&v, es, region, pitch)) {
        moved = (int64_t)(region[0] * region[1] * region[2]);
        if ((size_t)moved < u.chunk)
            u.chunk = (size_t)moved;
        u.pitch[0] = u.dpitch[0] = v.outer == 0 ? region[0] : pitch[0];
        u.pitch[1] = u.dpitch[1] = pitch[1];
        /* From memory the host registered, one DMA from it (host_register.h); a view that
         * only starts in a registered range is staged: a write crossing its end would go
         * through the driver's pageable path. */
        out->registered = host_registration_find(pool, u.first, (size_t)span_bytes);
        if (out->registered != NULL ||
            (pool_device_info(dev)->type == CLOPS_DEVICE_CPU && !tensor_stage_on_cpu))
            rc = upload_direct(&u, region);
        else
            rc = upload_rows(&u, region[0], region[1], region[2]);
    } else {
        rc = upload_gathered(&u, &v, es, (size_t)span_bytes);
    }
    rc = upload_end(&u, rc, out);
    if (rc == NO_HOST_BLOCK)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                       "%s: no host memory to stage parameter '%s' (%lld bytes)", op, param,
                       (long long)span_bytes);
    return transfer_done(pool, rc, moved, 0, op, param);
}

int32_t tensor_stage(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                     const struct clops_tensor *t, int32_t upload, struct staged_tensor *out,
                     const char *op, const char *param)
{
    memset(out, 0, sizeof *out);
    out->t = t;
    out->dev = dev;
    out->pool = pool;
    if (t->buffer != NULL) {
        out->mem = t->buffer->mem;
        out->offset = t->offset;
        return CLOPS_OK;
    }
    size_t bytes = staged_bytes(t);
    if (bytes == 0)
        return CLOPS_OK;
    char what[96];
    snprintf(what, sizeof what, "parameter '%s'", param);
    int32_t status = pool_staged_take(pool, dev, (int64_t)bytes, op, what, &out->mem);
    if (status != CLOPS_OK)
        return status;
    out->temporary = 1;
    if (!upload)
        return CLOPS_OK;
    return upload_view(pool, dev, queue, t, out, op, param);
}

int32_t tensor_upload_packed(struct clops_pool *pool, struct pool_device *dev,
                             cl_command_queue queue, const struct clops_tensor *t, cl_mem mem,
                             const char *op, const char *param)
{
    const int64_t es = dtype_size(t->dtype), span_bytes = tensor_span(t) * es;
    struct view_runs v;
    view_runs(t, &v);
    size_t region[3] = {(size_t)span_bytes, 1, 1}, pitch[2] = {0, 0};
    if (span_bytes == 0)
        return CLOPS_OK;
    if (v.outer > 0 && !rect_of(&v, es, region, pitch))
        return err_set(CLOPS_ERR_INTERNAL, "%s: parameter '%s' is no rectangle to upload packed",
                       op, param);
    struct upload u = {.pool = pool,
                       .dev = dev,
                       .queue = queue,
                       .mem = mem,
                       .first = (const char *)t->data + t->offset * es,
                       .pitch = {v.outer == 0 ? region[0] : pitch[0], pitch[1]},
                       .dpitch = {region[0], region[0] * region[1]},
                       .chunk = tensor_stage_chunk > 0 ? tensor_stage_chunk : 1};
    const size_t bytes = region[0] * region[1] * region[2];
    u.chunk = bytes < u.chunk ? bytes : u.chunk;
    struct host_registration *registered =
        host_registration_find(pool, u.first, (size_t)span_bytes);
    cl_int rc;
    if (registered != NULL ||
        (pool_device_info(dev)->type == CLOPS_DEVICE_CPU && !tensor_stage_on_cpu)) {
        /* One write from the view (upload_direct says why), waited for. */
        const size_t origin[3] = {0, 0, 0};
        rc = clEnqueueWriteBufferRect(queue, mem, CL_FALSE, origin, origin, region, u.dpitch[0],
                                      u.dpitch[1], u.pitch[0], u.pitch[1], u.first, 0, NULL,
                                      &u.written[0]);
        if (rc != CL_SUCCESS)
            u.written[0] = NULL;
    } else {
        rc = upload_rows(&u, region[0], region[1], region[2]);
    }
    /* Every write waited for, so the blocks go back now and the buffer is whole for any queue
     * of the device. */
    for (int i = 0; i < 2; i++) {
        const cl_int waited = upload_wait(&u, i);
        rc = rc == CL_SUCCESS ? waited : rc;
    }
    if (rc != CL_SUCCESS)
        clFinish(queue); /* a failure: make sure the driver reads the blocks no more */
    for (int i = 0; i < 2; i++)
        pool_host_give(pool, u.block[i], u.capacity[i]);
    host_registration_drop(registered);
    if (rc == NO_HOST_BLOCK)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                       "%s: no host memory to stage parameter '%s' (%lld bytes)", op, param,
                       (long long)bytes);
    return transfer_done(pool, rc, (int64_t)bytes, 0, op, param);
}

/* Where a download of view `t` goes: its elements packed when the device buffer's layout makes
 * one rectangle of them, else the whole span, laid out as the buffer (host_spans), from which
 * the commit copies the elements. */
static int64_t download_bytes(const struct clops_tensor *t, const struct view_runs *v,
                              size_t region[3], size_t pitch[2], int *spans)
{
    const int64_t es = dtype_size(t->dtype);
    *spans = v->outer > 0 && !rect_of(v, es, region, pitch);
    return *spans || v->outer == 0 ? tensor_span(t) * es : tensor_elements(t) * es;
}

int32_t tensor_download(struct clops_pool *pool, cl_command_queue queue, struct staged_tensor *s,
                        const char *op, const char *param)
{
    if (!s->temporary)
        return CLOPS_OK;
    struct view_runs v;
    view_runs(s->t, &v);
    size_t region[3] = {0, 0, 0}, pitch[2] = {0, 0}; /* set where the view is a rectangle */
    int spans = 0;
    const int64_t bytes = download_bytes(s->t, &v, region, pitch, &spans);
    /* Pinned memory of earlier calls (pool_host_take says why it matters). */
    pool_host_give(s->pool, s->host, s->host_capacity);
    s->host = pool_host_take(s->pool, s->dev, queue, (size_t)bytes, &s->host_capacity);
    if (s->host == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                       "%s: no host memory to download parameter '%s' (%lld bytes)", op, param,
                       (long long)bytes);
    s->host_spans = spans;
    /* Not waited for: the call's wait comes before the commit reads `host`. */
    const size_t origin[3] = {0, 0, 0};
    cl_int rc;
    if (v.outer == 0 || spans)
        rc = clEnqueueReadBuffer(queue, s->mem, CL_FALSE, 0, (size_t)bytes, s->host, 0, NULL, NULL);
    else
        rc = clEnqueueReadBufferRect(queue, s->mem, CL_FALSE, origin, origin, region, pitch[0],
                                     pitch[1], region[0], region[0] * region[1], s->host, 0, NULL,
                                     NULL);
    return transfer_done(pool, rc, bytes, 1, op, param);
}

void tensor_commit(struct staged_tensor *s)
{
    if (s->host == NULL)
        return;
    copy_into_view(s->pool, s->t, s->host, !s->host_spans);
    pool_host_give(s->pool, s->host, s->host_capacity);
    s->host = NULL;
}

void tensor_release(struct staged_tensor *s)
{
    if (s->temporary)
        pool_staged_give(s->pool, s->dev, s->mem);
    s->mem = NULL;
    s->temporary = 0;
    pool_host_give(s->pool, s->host, s->host_capacity);
    s->host = NULL;
    for (int i = 0; i < 2; i++) {
        pool_host_give(s->pool, s->block[i], s->block_capacity[i]);
        s->block[i] = NULL;
    }
    host_registration_drop(s->registered);
    s->registered = NULL;
}

/* ---- i32 vectors ----------------------------------------------------------------------------- */

/* The host tensor's first n elements, strides[0] apart. */
static int32_t *i32_elements(const struct clops_tensor *t)
{
    return (int32_t *)t->data + t->offset;
}

void tensor_read_i32(const struct clops_tensor *t, int32_t *values, int64_t n)
{
    const int64_t stride = n > 1 ? t->strides[0] : 1;
    const int32_t *elements = i32_elements(t);
    for (int64_t i = 0; i < n; i++)
        values[i] = elements[i * stride];
}

void tensor_write_i32(const struct clops_tensor *t, const int32_t *values, int64_t n)
{
    const int64_t stride = n > 1 ? t->strides[0] : 1;
    int32_t *elements = i32_elements(t);
    for (int64_t i = 0; i < n; i++)
        elements[i * stride] = values[i];
}
