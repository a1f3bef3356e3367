/* mandelbrot_land.h — a split Mandelbrot call's host outputs written as their tiles land, and
 * written back where the call fails.
 *
 * The splitter's workers deliver a split call's host outputs into packed temporaries of the
 * call's own (mandelbrot.c, mandel_state), so that a failed call leaves the host's arrays as they
 * were; the commit step then wrote each temporary into the host's array after the last tile. On
 * two H200s that pass was the tail of the call: 7.6-10.8 ms of 27.9 for a 8192^2 deep zoom into
 * host memory, with the GPUs' renders over at 19.7 ms (hosts/bench/RESULTS.md, 2026-11-30).
 *
 * Now a worker that renders ahead swaps each chunk's tiles, once their downloads are done,
 * between the temporary and the host's arrays while its device renders the next chunk
 * (mandel_land_tiles): the host's pixels then hold the tile, and the temporary what they held
 * before the call. A call that then fails or is cancelled writes those back
 * (mandel_land_undo), so that its host outputs end as they were; one that succeeds writes in its
 * commit only the tiles that did not land (mandel_land_rest). A swap reads and writes both
 * sides, twice a copy's traffic, so a worker lands a piece of tiles at a time only while the
 * next chunk renders (mandelbrot.c, land_set), its last chunk not at all: what is left waits for
 * the commit's copy. Whole rows of tiles move as whole image rows (a chunk's tiles are
 * consecutive numbers): tile by tile, 1 KiB rows 32 KiB apart at 8192^2, they moved at about two
 * thirds of the rate (45-51 tiles/ms a worker against 70-72). The splitter tapers the
 * chunks of such a call (split_job.taper), so that the last ones, which do not land, are small.
 * Two H200s, deep zoom into host memory against one H200 (hosts/bench/RESULTS.md, 2026-11-30
 * 13:45): 8192^2 22.8-23.3 ms (27.9 before), 4096^2 5.9-6.3 (7.5): 0.99-1.09 of the sum of
 * the two GPUs' throughputs alone (0.81-0.84 before).
 *
 * While a call runs its host outputs are the call's: the host reads them after the call's end. */
#ifndef CLOPS_MANDELBROT_LAND_H
#define CLOPS_MANDELBROT_LAND_H

#include <stdatomic.h>
#include <stdint.h>

#include "clops.h"

struct clops_pool;

struct mandel_land {
    int64_t h, w;
    int32_t tile, tiles_x, tile_count;
    const struct clops_tensor *host[2]; /* the call's host outputs (NULL: none, or on a device) */
    const struct clops_tensor *temp[2]; /* their packed temporaries (tensor_packed_like) */
    unsigned char *landed;              /* per tile: 1 once swapped into the host outputs */
};

/* Whether output o's pixels (0: counts, 1: RGBA; 4 bytes a pixel either way) lie in rows of t,
 * one after the other. */
int mandel_pixels_in_rows(const struct clops_tensor *t, int o);
/* Pixels [j0, j0 + cols) of image row i of output o of host tensor t, and `cols` pixels side by
 * side at `packed`: copied from `packed` into t (`swap` 0: `packed` is only read), or swapped.
 * Whole where t's pixels lie in rows, else element by element through its strides. */
void mandel_pixels_move(const struct clops_tensor *t, int o, int64_t i, int64_t j0, int64_t cols,
                        unsigned char *packed, int swap);

/* Tiles swapped between temporaries and host outputs, over every call (tests). */
extern atomic_llong mandel_landed_tiles;
/* mandelbrot.c's, for tests: which chunks of a worker that renders ahead land. ADAPTIVE (the
 * default): a chunk while the next one renders, where that hides it (land_beside); BESIDE: every
 * chunk while the next one renders; ALL: those and each worker's last chunk too. The others
 * wait for the commit. */
enum { MANDEL_LAND_ADAPTIVE, MANDEL_LAND_BESIDE, MANDEL_LAND_ALL };
extern int mandel_land_mode;

/* Tiles of `tile` x `tile` over an h x w image, tiles_x a row, into outputs host[o] through
 * temp[o], none landed yet; l->landed is NULL without host memory for the per-tile marks (no
 * tile lands then: they wait for the commit, as before). */
void mandel_land_init(struct mandel_land *l, int64_t h, int64_t w, int32_t tile, int32_t tiles_x,
                      int32_t tile_count, const struct clops_tensor *const host[2],
                      const struct clops_tensor *const temp[2]);
/* Swaps the n tiles numbered in `tiles` (none landed yet, their downloads done) between the
 * temporaries and the host outputs, on the pool's copier where they are many bytes. Workers call
 * it for disjoint tiles at once. */
void mandel_land_tiles(struct clops_pool *pool, struct mandel_land *l, const int32_t *tiles,
                       int32_t n);
/* The commit: the tiles that did not land written from the temporaries into the host outputs
 * (all of them, as one pass, where none landed). */
void mandel_land_rest(struct clops_pool *pool, struct mandel_land *l);
/* After a failure: the landed tiles' earlier pixels, which the temporaries hold, written back
 * into the host outputs; then no tile counts as landed. */
void mandel_land_undo(struct clops_pool *pool, struct mandel_land *l);
void mandel_land_free(struct mandel_land *l);

#endif
