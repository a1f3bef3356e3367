/* mandelbrot.cl — iteration counts and palette colours of the Mandelbrot set over a list of square
 * tiles of the image, in one REAL type (float, or double with -DUSE_FP64), plus the copy that
 * places tiles rendered elsewhere into strided device outputs. */

#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* OpenCL C contracts a*b + c into fma by default, where the compiler sees fit: one device would
 * round once where another (or the host reference) rounds twice, so the CPU and GPU halves of a
 * split image would disagree; the result must be bit-identical whichever device renders a tile.
 * So no contraction: the steps below call fma() explicitly where they want one (OpenCL's fma
 * and C's are both correctly rounded, so every device and the host agree), and nothing else is
 * fused. Never build this file with -cl-mad-enable, -cl-unsafe-math-optimizations or
 * -cl-fast-relaxed-math. */
#pragma OPENCL FP_CONTRACT OFF

#ifndef REAL
#error "mandelbrot.cl needs -DREAL=float or -DREAL=double"
#endif

/* The tile geometry shared by both kernels: the image is H x W pixels cut into T x T tiles,
 * tiles_x per row of tiles, numbered row-major; a launch covers rows row0 .. row0+rows-1 of
 * `count` tiles whose numbers are tile_ids[0 .. count-1] (a number < 0: skip that slot), or
 * first .. first+count-1 when tile_ids is NULL (a device rendering every tile alone), with
 * rows*T work-items per tile (the partial tiles at the right and bottom edges leave some idle).
 * A launch of fewer than T rows is a band: the host renders a CPU's tile in bands so that it can
 * give the tile up between them once a GPU has rendered and delivered it. */
struct pixel {
    int k;    /* which tile of the launch */
    int ti;   /* row within the tile */
    int tj;   /* column within the tile */
    int i, j; /* row and column in the image */
};

/* Which pixel work-item `gid` owns, or 0 when it owns none. In 32-bit integers (a GPU divides
 * 64-bit ones in software): the host keeps every launch under 2^31 work-items. Runs of BLOCK_W x
 * BLOCK_H work-items (a GPU's 32-wide warp) take a BLOCK_W x BLOCK_H block of a tile rather than a
 * 32 x 1 strip of a row: pixels of a compact block escape after more similar iteration counts,
 * so a warp waits less for its slowest pixel. Tiles or bands the blocks do not divide fall back
 * to rows. */
#ifndef BLOCK_W
#define BLOCK_W 8
#endif
/* Iterations per escape test (the kernel's loop); "-DUNROLL=<n>" in the operator's
 * build_options overrides it. H100, 4096^2 f32 in one launch: 1 (a test per step) 1.99e12
 * iterations/s, 8 2.15e12; with the fma steps 2.44e12; with the test on the block's last state
 * only 2.87e12 (unroll 4: 2.54e12, 16: 2.84e12, 32: 2.80e12), where the seed's kernel makes
 * 2.54e12. */
#ifndef UNROLL
#define UNROLL 8
#endif
#ifndef BLOCK_H
#define BLOCK_H 4
#endif
static int pixel_of(int gid, int count, int row0, int rows, int T, int tiles_x, int H, int W,
                    int first, const __global int *tile_ids, struct pixel *p)
{
    const int per_launch = rows * T;
    p->k = gid / per_launch;
    if (p->k >= count)
        return 0;
    const int within = gid % per_launch;
    const int tile = tile_ids != 0 ? tile_ids[p->k] : first + p->k;
    if (tile < 0)
        return 0;
    if (T % BLOCK_W == 0 && rows % BLOCK_H == 0) {
        const int block = within / (BLOCK_W * BLOCK_H), lane = within % (BLOCK_W * BLOCK_H);
        const int blocks_per_row = T / BLOCK_W;
        p->ti = row0 + (block / blocks_per_row) * BLOCK_H + lane / BLOCK_W;
        p->tj = (block % blocks_per_row) * BLOCK_W + lane % BLOCK_W;
    } else {
        p->ti = row0 + within / T;
        p->tj = within % T;
    }
    p->i = (tile / tiles_x) * T + p->ti;
    p->j = (tile % tiles_x) * T + p->tj;
    return p->i < H && p->j < W;
}

/* Where pixel p goes in a target: a compact staging buffer of `count` T x T slots (slot k,
 * row-major), or the output itself, element (i, j) at off + i*s0 + j*s1 (+ channel*s2 for the
 * image, added by the caller). Each output has its own `compact` flag: the host stages one
 * output and not the other when only one of them is a device buffer. */
static long target_index(const struct pixel *p, int compact, int T, long off, long s0, long s1)
{
    return compact ? ((long)p->k * T + p->ti) * T + p->tj : off + p->i * s0 + p->j * s1;
}

/* The palette: a cycle of 256 iterations through four colours, linearly interpolated in
 * integers (so every device and the host agree to the bit); points that never escaped are black.
 * position = (n * 4) mod 1024, segment = position / 256, weight = position mod 256, and each
 * channel is (c[segment] * (256 - weight) + c[segment + 1 mod 4] * weight) / 256. */
__constant uchar palette[4][3] = {{0, 7, 100}, {32, 107, 203}, {237, 255, 255}, {255, 170, 0}};

static uchar4 colour_of(uint n, uint max_iterations)
{
    if (n >= max_iterations)
        return (uchar4)(0, 0, 0, 255);
    const uint position = (n * 4u) & 1023u;
    const uint seg = position >> 8, next = (seg + 1u) & 3u, w = position & 255u;
    uchar4 c;
    c.x = (uchar)((palette[seg][0] * (256u - w) + palette[next][0] * w) >> 8);
    c.y = (uchar)((palette[seg][1] * (256u - w) + palette[next][1] * w) >> 8);
    c.z = (uchar)((palette[seg][2] * (256u - w) + palette[next][2] * w) >> 8);
    c.w = 255;
    return c;
}

static void store_pixel(const struct pixel *p, int T, uint n, uint max_iterations,
                        __global uint *iters, int it_compact, long it_off, long it_s0, long it_s1,
                        __global uchar *img, int img_compact, long img_off, long img_s0,
                        long img_s1, long img_s2)
{
    iters[target_index(p, it_compact, T, it_off, it_s0, it_s1)] = n;
    if (img == 0)
        return;
    const uchar4 c = colour_of(n, max_iterations);
    /* Compact image slots hold 4 bytes per pixel, channel fastest. */
    const long at = img_compact ? 4 * target_index(p, 1, T, 0, 0, 0)
                                : target_index(p, 0, T, img_off, img_s0, img_s1);
    const long s2 = img_compact ? 1 : img_s2;
    img[at] = c.x;
    img[at + s2] = c.y;
    img[at + 2 * s2] = c.z;
    img[at + 3 * s2] = c.w;
}

/* Work decomposition: a 1-D range of count*rows*T work-items (rounded up to the work-group
 * size); each computes one pixel of one tile of the launch (pixel_of). No local memory, no
 * barriers.
 *
 * Memory traffic: none to speak of; per pixel one read of tile_ids (cached) and one 4-byte store
 * (plus 4 one-byte stores with an image). The cost is the iteration loop: per iteration 1
 * multiplication, 2 additions and 2 fmas (the escape test once per UNROLL of them), with a
 * data-dependent trip count, so the kernel is compute bound and its throughput is iterations
 * per second.
 *
 * Contract, written out identically in the host reference of tests/test_mandelbrot.c: pixel
 * (i, j) maps to c = (cx, cy) with
 *     cx = center_x + (((REAL)j + 0.5) - half_w) * px,
 *     cy = center_y - (((REAL)i + 0.5) - half_h) * px
 * (center_x, center_y, px = scale / W, half_w = W / 2, half_h = H / 2 rounded to REAL by the
 * host), z starts at 0, and each step computes y2 = y*y, stops when fma(x, x, y2) > 4, else
 * sets y = fma(x + x, y, cy) and x = fma(x, x, cx - y2) (both from the step's x and y). n = the
 * steps taken, at most max_iterations. */
__kernel void mandelbrot(const REAL center_x, const REAL center_y, const REAL px, const REAL half_w,
                         const REAL half_h, const uint max_iterations, const int H, const int W,
                         const int T, const int tiles_x, const int count, const int row0,
                         const int rows, const int first, const __global int *tile_ids,
                         __global uint *iters,
                         const int it_compact, const long it_off, const long it_s0,
                         const long it_s1, __global uchar *img, const int img_compact,
                         const long img_off, const long img_s0, const long img_s1,
                         const long img_s2)
{
    struct pixel p;
    if (!pixel_of((int)get_global_id(0), count, row0, rows, T, tiles_x, H, W, first, tile_ids,
                  &p))
        return;
    const REAL cx = center_x + (((REAL)p.j + (REAL)0.5) - half_w) * px;
    const REAL cy = center_y - (((REAL)p.i + (REAL)0.5) - half_h) * px;
    REAL x = 0, y = 0;
    uint n = 0;
    /* The steps in blocks of UNROLL with one escape test per block, on the state after it: an
     * orbit that has left |z| <= 2 keeps growing (|z'| >= |z|^2 - |c| > |z| once |z| > 2 and
     * |z| >= |c|, and a c with |c| > 2 leaves at its first step), so if any step of the block
     * would have stopped, |z|^2 is still over 4 at its end, or has overflowed to inf or NaN,
     * which !(... <= 4) counts as out too. Such a block is undone and run again step by step
     * below, so n stops exactly where the plain loop stops; every step does the same operations
     * in the same order as there, so the bits are the same too. The steps themselves skip the
     * test's fma: 5 operations a step instead of 6 and a branch. */
    while (max_iterations - n >= UNROLL) {
        const REAL x0 = x, y0 = y;
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const REAL y2 = y * y;
            const REAL y_next = fma(x + x, y, cy);
            x = fma(x, x, cx - y2);
            y = y_next;
        }
        if (!(fma(x, x, y * y) <= (REAL)4)) {
            x = x0;
            y = y0;
            break;
        }
        n += UNROLL;
    }
    while (n < max_iterations) {
        const REAL y2 = y * y;
        if (fma(x, x, y2) > (REAL)4)
            break;
        const REAL y_next = fma(x + x, y, cy);
        x = fma(x, x, cx - y2);
        y = y_next;
        n++;
    }
    store_pixel(&p, T, n, max_iterations, iters, it_compact, it_off, it_s0, it_s1, img, img_compact,
                img_off, img_s0, img_s1, img_s2);
}

/* Places tiles rendered elsewhere (uploaded compact, as `mandelbrot` writes them with compact =
 * 1) into strided outputs on this device; iters or img is NULL for an output that is not a device
 * buffer, and slots whose tile number is < 0 are skipped. Work decomposition as for `mandelbrot`:
 * one work-item per pixel of the launch's tiles. Memory traffic: per pixel one 4-byte load and
 * store, plus 4 one-byte loads and stores with an image. */
__kernel void mandelbrot_place(const int H, const int W, const int T, const int tiles_x,
                               const int count, const __global int *tile_ids,
                               const __global uint *src_iters, const __global uchar *src_img,
                               __global uint *iters, const long it_off, const long it_s0,
                               const long it_s1, __global uchar *img, const long img_off,
                               const long img_s0, const long img_s1, const long img_s2)
{
    struct pixel p;
    if (!pixel_of((int)get_global_id(0), count, 0, T, T, tiles_x, H, W, 0, tile_ids, &p))
        return;
    const long from = target_index(&p, 1, T, 0, 0, 0);
    if (iters != 0)
        iters[target_index(&p, 0, T, it_off, it_s0, it_s1)] = src_iters[from];
    if (img == 0)
        return;
    const long at = target_index(&p, 0, T, img_off, img_s0, img_s1);
    for (int ch = 0; ch < 4; ch++)
        img[at + ch * img_s2] = src_img[4 * from + ch];
}
