/* mandelbrot_land.c — a split Mandelbrot call's host outputs written as their tiles land
 * (mandelbrot_land.h). */
#include "mandelbrot_land.h"

#include <stdlib.h>
#include <string.h>

#include "host_copy.h"
#include "pool.h"
#include "tensor.h"

atomic_llong mandel_landed_tiles;

void mandel_land_init(struct mandel_land *l, int64_t h, int64_t w, int32_t tile, int32_t tiles_x,
                      int32_t tile_count, const struct clops_tensor *const host[2],
                      const struct clops_tensor *const temp[2])
{
    *l = (struct mandel_land){
        .h = h, .w = w, .tile = tile, .tiles_x = tiles_x, .tile_count = tile_count};
    for (int o = 0; o < 2; o++) {
        l->host[o] = host[o];
        l->temp[o] = temp[o];
    }
    l->landed = calloc((size_t)tile_count, 1);
}

void mandel_land_free(struct mandel_land *l)
{
    free(l->landed);
    l->landed = NULL;
}

/* Swaps `bytes` between a and b. */
static void swap_bytes(unsigned char *a, unsigned char *b, size_t bytes)
{
    unsigned char held[4096];
    for (size_t at = 0; at < bytes; at += sizeof held) {
        const size_t n = bytes - at < sizeof held ? bytes - at : sizeof held;
        memcpy(held, a + at, n);
        memcpy(a + at, b + at, n);
        memcpy(b + at, held, n);
    }
}

int mandel_pixels_in_rows(const struct clops_tensor *t, int o)
{
    return o == 0 ? t->strides[1] == 1 : t->strides[1] == 4 && t->strides[2] == 1;
}

void mandel_pixels_move(const struct clops_tensor *t, int o, int64_t i, int64_t j0, int64_t cols,
                        unsigned char *packed, int swap)
{
    const int64_t es = dtype_size(t->dtype), channels = o == 0 ? 1 : 4;
    const int64_t s2 = o == 0 ? 0 : t->strides[2];
    unsigned char *host = (unsigned char *)t->data;
    const int64_t row = t->offset + i * t->strides[0] + j0 * t->strides[1];
    if (mandel_pixels_in_rows(t, o)) {
        if (swap)
            swap_bytes(host + row * es, packed, (size_t)(cols * 4));
        else
            memcpy(host + row * es, packed, (size_t)(cols * 4));
        return;
    }
    for (int64_t c = 0; c < cols; c++)
        for (int64_t ch = 0; ch < channels; ch++) {
            unsigned char *to = host + (row + c * t->strides[1] + ch * s2) * es;
            unsigned char *at = packed + (c * channels + ch) * es;
            if (swap)
                swap_bytes(to, at, (size_t)es);
            else
                memcpy(to, at, (size_t)es);
        }
}

/* Pixels [j0, j0 + cols) of image row i of output o between the host tensor and the packed
 * temporary, whose pixels lie in rows (mandelbrot.c lands only such ones). */
static void move_span(const struct mandel_land *l, int o, int64_t i, int64_t j0, int64_t cols,
                      int swap)
{
    unsigned char *from = (unsigned char *)l->temp[o]->data + (i * l->w + j0) * 4;
    mandel_pixels_move(l->host[o], o, i, j0, cols, from, swap);
}

/* Tiles side by side in one row of tiles, as one rectangle of the image: rows i0 .. i0 + rows,
 * columns j0 .. j0 + cols. A chunk's tiles are consecutive numbers (the splitter's workers that
 * land take chunks from the front of the list), so that a chunk of whole rows of tiles moves as
 * whole rows of the image: moved tile by tile, a 256-tile chunk of a 8192^2 image moved at
 * ~15 GB/s on the H200s' host, its 1 KiB rows 32 KiB apart. */
struct tile_run {
    int64_t i0, rows, j0, cols;
};

/* Runs moved at once (a batch: the runs of a chunk's whole rows of tiles are one per row). */
enum { RUNS_MAX = 64 };

/* One move of a batch of runs, cut into parts for pool_host_copy: a share of their image rows
 * each. */
struct runs_move {
    const struct mandel_land *l;
    const struct tile_run *runs;
    int32_t count;
    int64_t rows;
    int swap;
};

static void move_runs_part(void *ctx, int part, int parts)
{
    const struct runs_move *m = ctx;
    size_t first, last;
    host_copy_share((size_t)m->rows, part, parts, &first, &last);
    const int64_t begin = (int64_t)first, end = (int64_t)last;
    int64_t at = 0;
    for (int32_t k = 0; k < m->count && at < end; at += m->runs[k++].rows) {
        const struct tile_run *r = &m->runs[k];
        const int64_t lo = begin > at ? begin - at : 0;
        const int64_t hi = end < at + r->rows ? end - at : r->rows;
        for (int64_t i = lo; i < hi; i++)
            for (int o = 0; o < 2; o++)
                if (m->l->host[o] != NULL)
                    move_span(m->l, o, r->i0 + i, r->j0, r->cols, m->swap);
    }
}

/* The n tiles numbered in `tiles` moved (swapped, or copied from the temporaries), in batches of
 * runs, each on the pool's copier where it is many bytes. */
static void move_tiles(struct clops_pool *pool, const struct mandel_land *l, const int32_t *tiles,
                       int32_t n, int swap)
{
    const int outputs = (l->host[0] != NULL) + (l->host[1] != NULL);
    const int64_t T = l->tile;
    struct tile_run runs[RUNS_MAX];
    int32_t k = 0;
    while (k < n) {
        int32_t count = 0;
        int64_t rows = 0, pixels = 0;
        for (; k < n && count < RUNS_MAX; count++) {
            const int32_t first = tiles[k], row = first / l->tiles_x;
            int32_t m = 1; /* the tiles after it: consecutive, in its row of tiles */
            while (k + m < n && tiles[k + m] == first + m && (first + m) / l->tiles_x == row)
                m++;
            k += m;
            const int64_t i0 = (int64_t)row * T, j0 = (int64_t)(first % l->tiles_x) * T;
            struct tile_run *r = &runs[count];
            *r = (struct tile_run){.i0 = i0,
                                   .rows = l->h - i0 < T ? l->h - i0 : T,
                                   .j0 = j0,
                                   .cols = l->w - j0 < m * T ? l->w - j0 : m * T};
            rows += r->rows;
            pixels += r->rows * r->cols;
        }
        struct runs_move move = {l, runs, count, rows, swap};
        /* A swap reads and writes both sides: twice a copy's traffic. */
        pool_host_copy(pool, move_runs_part, &move,
                       (size_t)(pixels * 4 * outputs) * (swap ? 2u : 1u));
    }
}

void mandel_land_tiles(struct clops_pool *pool, struct mandel_land *l, const int32_t *tiles,
                       int32_t n)
{
    if (n <= 0)
        return;
    move_tiles(pool, l, tiles, n, 1);
    for (int32_t k = 0; k < n; k++)
        l->landed[tiles[k]] = 1; /* each tile's byte is its worker's alone */
    atomic_fetch_add(&mandel_landed_tiles, n);
}

/* The numbers of the tiles whose landed mark is `landed`, in a new array, and their count in
 * *count; NULL where there are none, or where no host memory is left for the array (*count is
 * then -1). */
static int32_t *tiles_marked(const struct mandel_land *l, unsigned char landed, int32_t *count)
{
    int32_t n = 0;
    for (int32_t t = 0; t < l->tile_count; t++)
        n += l->landed[t] == landed;
    *count = n;
    if (n == 0)
        return NULL;
    int32_t *tiles = malloc((size_t)n * sizeof *tiles);
    if (tiles == NULL) {
        *count = -1;
        return NULL;
    }
    n = 0;
    for (int32_t t = 0; t < l->tile_count; t++)
        if (l->landed[t] == landed)
            tiles[n++] = t;
    return tiles;
}

/* Tiles whose mark is `landed` copied from the temporaries, one at a time where no host memory
 * is left for their list (a commit and an undo cannot fail). */
static void copy_marked(struct clops_pool *pool, const struct mandel_land *l, unsigned char landed)
{
    int32_t n = 0;
    int32_t *tiles = tiles_marked(l, landed, &n);
    if (n > 0)
        move_tiles(pool, l, tiles, n, 0);
    for (int32_t t = 0; n < 0 && t < l->tile_count; t++)
        if (l->landed[t] == landed)
            move_tiles(pool, l, &t, 1, 0);
    free(tiles);
}

void mandel_land_rest(struct clops_pool *pool, struct mandel_land *l)
{
    int any = 0;
    for (int32_t t = 0; l->landed != NULL && t < l->tile_count && !any; t++)
        any = l->landed[t];
    if (!any) { /* one pass over each output, its gaps left as they are */
        for (int o = 0; o < 2; o++)
            if (l->host[o] != NULL)
                tensor_unpack(pool, l->host[o], l->temp[o]->data);
        return;
    }
    copy_marked(pool, l, 0);
}

void mandel_land_undo(struct clops_pool *pool, struct mandel_land *l)
{
    if (l->landed == NULL)
        return;
    copy_marked(pool, l, 1);
    memset(l->landed, 0, (size_t)l->tile_count);
}
