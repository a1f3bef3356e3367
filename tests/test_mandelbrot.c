/* test_mandelbrot.c — the mandelbrot operator against a scalar host computation of the same steps:
 * bit-identical counts and palette colours at awkward sizes with partial tiles, for every split
 * on a two-device pool, host and device outputs in any layout, a deep f64 zoom, per-device
 * statistics, and bad arguments rejected with the parameter named and nothing written. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* The reference must round every operation as the kernel does: the fmas it calls explicitly
 * (C's fma is correctly rounded, as OpenCL's), no other contraction (GCC contracts only outside
 * ISO mode, and tests/CMakeLists builds with -std=c11), no excess precision. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#error "build with -std=c11 (not gnu11): GCC contracts a*b+c into fma in GNU mode"
#endif

#include "mandelbrot_ref.h" /* after the pragma: the reference is defined under it */

/* ---- The host reference ---------------------------------------------------------------------- */

struct view {
    double center_x, center_y, scale;
    int64_t max_iterations;
    int32_t precision; /* 0 f32, 1 f64 */
};

/* Compact row-major H x W counts and H x W x 4 colours. */
struct picture {
    int64_t h, w;
    uint32_t *iters;
    uint8_t *image;
};

static struct picture reference(int64_t h, int64_t w, const struct view *v)
{
    struct picture r = {h, w, malloc((size_t)(h * w + 1) * 4), malloc((size_t)(h * w + 1) * 4)};
    ck_assert(r.iters != NULL && r.image != NULL);
    for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < w; j++) {
            const struct mandel_ref_view rv = {v->center_x, v->center_y, v->scale,
                                               (uint32_t)v->max_iterations, v->precision};
            uint32_t n = mandel_ref_count(&rv, i, j, h, w);
            r.iters[i * w + j] = n;
            mandel_ref_colour(n, (uint32_t)v->max_iterations, &r.image[(i * w + j) * 4]);
        }
    return r;
}

static void picture_free(struct picture *p)
{
    free(p->iters);
    free(p->image);
}

/* ---- Outputs in any layout ------------------------------------------------------------------- */

enum { SENTINEL = 0xA5 };

/* Where the operator writes: counts row- or column-major, the image interleaved (RGBA per pixel)
 * or planar (one plane per channel), rows padded by `pad` elements, from element `offset` of
 * their allocations; everything else holds SENTINEL bytes. */
struct outputs {
    int64_t h, w, pad, offset;
    int32_t col_major, planar, with_image;
    int64_t iters_count, image_count; /* elements allocated */
    uint32_t *iters;
    uint8_t *image;
    struct clops_tensor ti, tm;
};

static struct outputs outputs_new(int64_t h, int64_t w, int64_t pad, int64_t offset,
                                  int32_t col_major, int32_t planar, int32_t with_image)
{
    struct outputs o = {.h = h,
                        .w = w,
                        .pad = pad,
                        .offset = offset,
                        .col_major = col_major,
                        .planar = planar,
                        .with_image = with_image};
    const int64_t ld = (col_major ? h : w) + pad;
    o.iters_count = offset + ld * (col_major ? w : h) + 1;
    o.ti = (struct clops_tensor){.dtype = CLOPS_U32,
                                 .rank = 2,
                                 .offset = offset,
                                 .shape = {h, w},
                                 .strides = {col_major ? 1 : ld, col_major ? ld : 1}};
    const int64_t row = w + pad;
    o.image_count = offset + 4 * row * h + 1;
    o.tm = (struct clops_tensor){
        .dtype = CLOPS_U8,
        .rank = 3,
        .offset = offset,
        .shape = {h, w, 4},
        .strides = {planar ? row : 4 * row, planar ? 1 : 4, planar ? row * h : 1}};
    o.iters = tu_malloc((size_t)o.iters_count * 4);
    o.image = tu_malloc((size_t)o.image_count);
    memset(o.iters, SENTINEL, (size_t)o.iters_count * 4);
    memset(o.image, SENTINEL, (size_t)o.image_count);
    o.ti.data = o.iters;
    o.tm.data = o.image;
    return o;
}

static void outputs_free(struct outputs *o)
{
    free(o->iters);
    free(o->image);
}

static int64_t iters_at(const struct outputs *o, int64_t i, int64_t j)
{
    return o->offset + i * o->ti.strides[0] + j * o->ti.strides[1];
}

static int64_t image_at(const struct outputs *o, int64_t i, int64_t j, int64_t ch)
{
    return o->offset + i * o->tm.strides[0] + j * o->tm.strides[1] + ch * o->tm.strides[2];
}

/* Every element equal to the reference, and every byte outside the tensors still SENTINEL. */
static void check_outputs(const struct outputs *o, const struct picture *r, const char *what)
{
    uint8_t *touched = calloc((size_t)o->iters_count, 1);
    uint8_t *touched_image = calloc((size_t)o->image_count, 1);
    ck_assert(touched != NULL && touched_image != NULL);
    for (int64_t i = 0; i < o->h; i++)
        for (int64_t j = 0; j < o->w; j++) {
            const int64_t at = iters_at(o, i, j);
            ck_assert_msg(o->iters[at] == r->iters[i * o->w + j],
                          "%s: iterations(%lld, %lld) = %u, reference %u", what, (long long)i,
                          (long long)j, o->iters[at], r->iters[i * o->w + j]);
            touched[at] = 1;
            for (int64_t ch = 0; o->with_image && ch < 4; ch++) {
                const int64_t ai = image_at(o, i, j, ch);
                ck_assert_msg(o->image[ai] == r->image[(i * o->w + j) * 4 + ch],
                              "%s: image(%lld, %lld, %lld) = %u, reference %u", what, (long long)i,
                              (long long)j, (long long)ch, o->image[ai],
                              r->image[(i * o->w + j) * 4 + ch]);
                touched_image[ai] = 1;
            }
        }
    const uint8_t *bytes = (const uint8_t *)o->iters;
    for (int64_t e = 0; e < o->iters_count; e++)
        for (int b = 0; !touched[e] && b < 4; b++)
            ck_assert_msg(bytes[e * 4 + b] == SENTINEL,
                          "%s: gap element %lld of iterations "
                          "was written",
                          what, (long long)e);
    for (int64_t e = 0; e < o->image_count; e++)
        ck_assert_msg(touched_image[e] || o->image[e] == SENTINEL,
                      "%s: gap byte %lld of image was written", what, (long long)e);
    free(touched);
    free(touched_image);
}

/* ---- Calls ----------------------------------------------------------------------------------- */

static clops_mandelbrot_fn mandelbrot_entry(void)
{
    return (clops_mandelbrot_fn)tu_op("mandelbrot")->entry;
}

static int32_t render(struct clops_pool *pool, const struct clops_tensor *ti,
                      const struct clops_tensor *tm, const struct view *v, const char *split,
                      int64_t tile)
{
    return mandelbrot_entry()(pool, ti, tm, v->center_x, v->center_y, v->scale, v->max_iterations,
                              v->precision, split, tile);
}

static void expect_ok(int32_t status, const char *what)
{
    ck_assert_msg(status == CLOPS_OK, "%s: %s: %s", what, tu_api()->status_name(status),
                  tu_api()->last_error());
}

/* Renders into host outputs and checks them against the reference. */
static void render_and_check(struct clops_pool *pool, struct outputs *o, const struct view *v,
                             const char *split, int64_t tile, const char *what)
{
    struct picture r = reference(o->h, o->w, v);
    expect_ok(render(pool, &o->ti, o->with_image ? &o->tm : NULL, v, split, tile), what);
    check_outputs(o, &r, what);
    picture_free(&r);
}

/* A new pool of two devices where the machine has them: a GPU and a CPU device (a GPU machine
 * with PoCL), else two CPU devices (PoCL with POCL_DEVICES="pthread pthread", set by main()).
 * NULL when neither exists; the split tests then run on the default pool only. */
static struct clops_pool *new_two_device_pool(void)
{
    static const char *const configs[] = {
        "devices = ( { type = \"gpu\"; }, { type = \"cpu\"; } ); cpu_fallback = false;",
        "devices = ( { type = \"cpu\"; }, { type = \"cpu\"; index = 1; } ); cpu_fallback = false;",
    };
    struct clops_pool *pool = NULL;
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        if (tu_api()->pool_create_from_string(configs[c], &pool) == CLOPS_OK)
            return pool;
    return NULL;
}

/* new_two_device_pool's, made once, kept for the process; else the default pool. */
static struct clops_pool *two_device_pool(void)
{
    static struct clops_pool *pool;
    static int tried;
    if (!tried)
        pool = new_two_device_pool();
    if (!tried && pool == NULL)
        fprintf(stderr, "test_mandelbrot: no two-device pool on this machine; split tests run "
                        "on the default pool\n");
    tried = 1;
    return pool != NULL ? pool : tu_pool();
}

static int64_t device_tasks(struct clops_pool *pool, int32_t d)
{
    struct clops_device_stats s = {.struct_size = sizeof s};
    expect_ok(tu_api()->pool_device_stats(pool, d, &s), "pool_device_stats");
    return s.tasks;
}

static int64_t tile_count(int64_t h, int64_t w, int64_t tile)
{
    return ((h + tile - 1) / tile) * ((w + tile - 1) / tile);
}

/* ---- Views and sizes ------------------------------------------------------------------------- */

/* A view around the main cardioid and the period-2 bulb: inside points, fast and slow escapes. */
static const struct view classic = {-0.75, 0.1, 2.7, 300, 0};

static const int64_t sizes[][2] = {{1, 1}, {17, 33}, {100, 7}, {257, 130}};
enum { SIZE_COUNT = 4, TILE = 64 };

static struct view with_precision(struct view v, int32_t precision)
{
    v.precision = precision;
    return v;
}

START_TEST(test_counts_and_colours_match_host_reference)
{
    /* _i: size x precision, on the default pool, dynamic split, partial 64-pixel tiles. */
    const int64_t *s = sizes[_i % SIZE_COUNT];
    struct view v = with_precision(classic, _i / SIZE_COUNT);
    struct outputs o = outputs_new(s[0], s[1], 0, 0, 0, 0, 1);
    char what[96];
    snprintf(what, sizeof what, "%lldx%lld %s", (long long)s[0], (long long)s[1],
             v.precision ? "f64" : "f32");
    render_and_check(tu_pool(), &o, &v, "dynamic", TILE, what);
    outputs_free(&o);
}
END_TEST

/* The reference's emulated fmas (used where the C library's are not correctly rounded: MinGW)
 * against glibc's, bit for bit, on Mandelbrot-sized operands and on ties built to need the
 * exact sum: products whose low half decides the rounding. */
#ifndef __MINGW32__
START_TEST(test_emulated_fma_is_correctly_rounded)
{
    tu_seed(2611);
    for (int k = 0; k < 2000000; k++) {
        const double a = 2 * tu_uniform(), b = 2 * tu_uniform();
        double c = 2 * tu_uniform();
        if (k % 3 == 0)
            c = -(a * b) * (1 + ldexp(tu_uniform() - 0.5, -40)); /* cancellation */
        else if (k % 3 == 1)
            c = -(a * b) + ldexp(1, -60) * (tu_uniform() - 0.5); /* the low half decides */
        const double want = fma(a, b, c), got = mandel_ref_fma_emulated(a, b, c);
        ck_assert_msg(memcmp(&want, &got, sizeof want) == 0, "fma(%a, %a, %a) = %a, emulated %a", a,
                      b, c, want, got);
        const float fa = (float)a, fb = (float)b;
        const float fc = k % 3 == 2 ? (float)c : (float)-((double)fa * fb) + (float)c * 1e-7f;
        const float fwant = fmaf(fa, fb, fc), fgot = mandel_ref_fmaf_emulated(fa, fb, fc);
        ck_assert_msg(memcmp(&fwant, &fgot, sizeof fwant) == 0,
                      "fmaf(%a, %a, %a) = %a, emulated %a", fa, fb, fc, fwant, fgot);
    }
}
END_TEST
#endif

START_TEST(test_reference_view_is_not_trivial)
{
    /* A stub writing one constant would fail the comparisons only if the view varies: it does. */
    struct picture r = reference(257, 130, &classic);
    int64_t inside = 0, distinct = 0;
    uint8_t seen[301] = {0};
    for (int64_t k = 0; k < 257 * 130; k++) {
        inside += r.iters[k] == 300;
        distinct += !seen[r.iters[k]];
        seen[r.iters[k]] = 1;
    }
    ck_assert_int_gt(inside, 1000);
    ck_assert_int_lt(inside, 257 * 130 - 1000);
    ck_assert_int_gt(distinct, 40);
    picture_free(&r);
}
END_TEST

static const char *const splits[] = {"0", "0.5", "1", "dynamic", "0.25"};
enum { SPLIT_COUNT = 5 };

START_TEST(test_every_split_is_bit_identical_and_counted_per_device)
{
    /* _i: split x size x precision on the two-device pool. */
    const char *split = splits[_i % SPLIT_COUNT];
    const int64_t *s = sizes[(_i / SPLIT_COUNT) % SIZE_COUNT];
    struct view v = with_precision(classic, _i / (SPLIT_COUNT * SIZE_COUNT));
    struct clops_pool *pool = two_device_pool();
    const int32_t devices = tu_api()->pool_device_count(pool);
    int64_t before[2] = {0, 0}, after[2] = {0, 0};
    for (int32_t d = 0; d < devices; d++)
        before[d] = device_tasks(pool, d);
    struct outputs o = outputs_new(s[0], s[1], 0, 0, 0, 0, 1);
    char what[96];
    snprintf(what, sizeof what, "split %s %lldx%lld %s", split, (long long)s[0], (long long)s[1],
             v.precision ? "f64" : "f32");
    render_and_check(pool, &o, &v, split, TILE, what);
    outputs_free(&o);
    int64_t total = 0;
    for (int32_t d = 0; d < devices; d++) {
        after[d] = device_tasks(pool, d);
        total += after[d] - before[d];
    }
    const int64_t tiles = tile_count(s[0], s[1], TILE);
    ck_assert_msg(total == tiles, "%s: devices took %lld tiles of %lld", what, (long long)total,
                  (long long)tiles);
    if (devices < 2 || strcmp(split, "dynamic") == 0)
        return;
    /* Device 0 is the GPU side (a GPU, or the primary of a pool without one): it takes
     * floor(T f) tiles, the CPU device the rest. */
    const double f = atof(split);
    const int64_t gpu = (int64_t)floor((double)tiles * f);
    ck_assert_msg(after[0] - before[0] == gpu && after[1] - before[1] == tiles - gpu,
                  "%s: device 0 took %lld tiles, device 1 %lld; expected %lld and %lld", what,
                  (long long)(after[0] - before[0]), (long long)(after[1] - before[1]),
                  (long long)gpu, (long long)(tiles - gpu));
}
END_TEST

/* Counts "N tiles stolen" in the operator's debug log lines. */
static void count_steals(int32_t level, const char *message, void *user)
{
    const char *at = strstr(message, " tiles stolen");
    (void)level;
    if (strncmp(message, "mandelbrot: ", 12) == 0 && at != NULL) {
        while (at > message && at[-1] >= '0' && at[-1] <= '9')
            at--;
        *(int64_t *)user += atoll(at);
    }
}

START_TEST(test_stolen_tiles_are_bit_identical)
{
    /* Dynamic scheduling over two devices: at the end the GPU side renders again the tiles the
     * CPU side is still on, and whichever finishes first delivers. Equal devices leave one of
     * them on its last tile at almost every call; the results must not change, and a steal
     * must have happened within a few calls. */
    struct clops_pool *pool = two_device_pool();
    if (tu_api()->pool_device_count(pool) < 2)
        return;
    int64_t stolen = 0;
    tu_api()->set_log_callback(count_steals, &stolen, CLOPS_LOG_DEBUG);
    for (int attempt = 0; attempt < 20 && stolen == 0; attempt++) {
        /* Tiles of 128: the CPU side renders them in 4 bands and may give them up between. */
        struct outputs o = outputs_new(200, 260, 1, 2, attempt & 1, attempt & 1, 1);
        render_and_check(pool, &o, &classic, "dynamic", attempt & 1 ? 128 : 16, "stealing");
        outputs_free(&o);
    }
    tu_api()->set_log_callback(NULL, NULL, CLOPS_LOG_ERROR);
    ck_assert_msg(stolen > 0, "no tile was stolen in 20 calls");
}
END_TEST

/* Counts the splitter's "mandelbrot: N tiles, W workers, ..." debug lines: runs that shared
 * tiles between both sides (a device that sits out leaves the other to run alone, without
 * one). */
static void count_shared_runs(int32_t level, const char *message, void *user)
{
    (void)level;
    if (strncmp(message, "mandelbrot: ", 12) == 0 && strstr(message, " workers, ") != NULL)
        ++*(int64_t *)user;
}

static int64_t shared_runs(struct clops_pool *pool, int64_t h, int64_t w, int64_t tile)
{
    int64_t runs = 0;
    struct outputs o = outputs_new(h, w, 0, 0, 0, 0, 1);
    tu_api()->set_log_callback(count_shared_runs, &runs, CLOPS_LOG_DEBUG);
    render_and_check(pool, &o, &classic, "dynamic", tile, "sitting out");
    tu_api()->set_log_callback(NULL, NULL, CLOPS_LOG_ERROR);
    outputs_free(&o);
    return runs;
}

START_TEST(test_a_device_that_cannot_help_sits_out)
{
    /* split.h, Sitting out: once the pool has seen both devices' rates, a call of one tile
     * leaves the CPU side out (one tile there takes longer than half of every tile on the
     * other side, whatever the two speeds within a factor 2), and a call of many tiles brings
     * it back. A fresh pool knows no rates: its first call shares, even of one tile. */
    struct clops_pool *pool = new_two_device_pool(); /* the shared one has rates already */
    if (pool == NULL)
        return;
    ck_assert_int_eq(shared_runs(pool, 40, 40, 64), 1);   /* no rates yet: both take part */
    ck_assert_int_eq(shared_runs(pool, 200, 260, 16), 1); /* 221 tiles: both measured */
    ck_assert_int_eq(shared_runs(pool, 40, 40, 64), 0);   /* one tile: the CPU side sits out */
    /* Two devices of one kind (PoCL's two CPU devices, within a factor 2 of each other): back
     * for 221 tiles. Whether a CPU beside a GPU is depends on how much slower it is (an H200's
     * host's PoCL, 100 to 400 times, rightly stays out of 221 tiles too, 2026-11-29). */
    struct clops_device_info d0 = {.struct_size = sizeof d0}, d1 = {.struct_size = sizeof d1};
    expect_ok(tu_api()->pool_device_info(pool, 0, &d0), "pool_device_info");
    expect_ok(tu_api()->pool_device_info(pool, 1, &d1), "pool_device_info");
    const int64_t back = shared_runs(pool, 200, 260, 16);
    if (d0.type == d1.type)
        ck_assert_int_eq(back, 1);
    tu_api()->pool_release(pool);
}
END_TEST

START_TEST(test_host_outputs_in_any_layout)
{
    /* _i bit 0: column-major counts; bit 1: planar image; bit 2: two-device pool, split 0.5. */
    struct outputs o = outputs_new(45, 71, 3, 5, _i & 1, (_i >> 1) & 1, 1);
    struct clops_pool *pool = _i & 4 ? two_device_pool() : tu_pool();
    char what[64];
    snprintf(what, sizeof what, "host layout %d", _i);
    render_and_check(pool, &o, &classic, _i & 4 ? "0.5" : "dynamic", 16, what);
    outputs_free(&o);
}
END_TEST

START_TEST(test_image_is_optional)
{
    struct outputs o = outputs_new(33, 20, 0, 0, 0, 0, 0);
    render_and_check(tu_pool(), &o, &classic, "dynamic", 8, "no image");
    outputs_free(&o);
}
END_TEST

/* The host allocation of a tensor in a device buffer, `lead` bytes into it (what is before is
 * filler), and the tensor on it. */
static struct clops_buffer *upload(struct clops_pool *pool, const void *data, int64_t bytes,
                                   int64_t lead)
{
    struct clops_buffer *b = NULL;
    expect_ok(tu_api()->buffer_create(pool, lead + bytes, &b), "buffer_create");
    expect_ok(tu_api()->buffer_upload(b, lead, data, bytes), "buffer_upload");
    return b;
}

START_TEST(test_device_outputs_in_any_layout)
{
    /* _i bit 0: column-major counts + planar image; bit 1: two-device pool, split 0.5 (the CPU
     * side's tiles are placed by the primary device); bit 2: only the image is a device tensor,
     * the counts stay in host memory. */
    struct clops_pool *pool = _i & 2 ? two_device_pool() : tu_pool();
    struct outputs o = outputs_new(61, 90, 2, 3, _i & 1, _i & 1, 1);
    struct view v = with_precision(classic, 1);
    struct picture r = reference(o.h, o.w, &v);
    const int64_t lead = 64; /* buffer offsets: the tensors start 16 u32 / 64 u8 in */
    const int device_iters = !(_i & 4);
    struct clops_buffer *bi = device_iters ? upload(pool, o.iters, o.iters_count * 4, lead) : NULL;
    struct clops_buffer *bm = upload(pool, o.image, o.image_count, lead);
    struct clops_tensor ti = o.ti, tm = o.tm;
    if (device_iters) {
        ti.data = NULL;
        ti.buffer = bi;
        ti.offset += lead / 4;
    }
    tm.data = NULL;
    tm.buffer = bm;
    tm.offset += lead;
    expect_ok(render(pool, &ti, &tm, &v, _i & 2 ? "0.5" : "dynamic", 32), "device outputs");
    if (device_iters)
        expect_ok(tu_api()->buffer_download(bi, lead, o.iters, o.iters_count * 4), "download");
    expect_ok(tu_api()->buffer_download(bm, lead, o.image, o.image_count), "download");
    char what[64];
    snprintf(what, sizeof what, "device layout %d", _i);
    check_outputs(&o, &r, what);
    tu_api()->buffer_release(bi);
    tu_api()->buffer_release(bm);
    picture_free(&r);
    outputs_free(&o);
}
END_TEST

START_TEST(test_deep_zoom_f64_matches_reference)
{
    /* 1e-10 wide near the seahorse valley: neighbouring pixels differ by 2e-12, far below f32's
     * resolution at |c| ~ 0.75, and counts vary over hundreds of iterations. */
    const struct view deep = {-0.743643887037151, 0.131825904205330, 1e-10, 3000, 1};
    struct picture r = reference(48, 64, &deep);
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int64_t k = 0; k < 48 * 64; k++) {
        lo = r.iters[k] < lo ? r.iters[k] : lo;
        hi = r.iters[k] > hi ? r.iters[k] : hi;
    }
    ck_assert_uint_gt(hi - lo, 100);
    picture_free(&r);
    struct outputs o = outputs_new(48, 64, 0, 0, 0, 0, 1);
    render_and_check(two_device_pool(), &o, &deep, "dynamic", 16, "deep zoom");
    outputs_free(&o);
}
END_TEST

START_TEST(test_default_pool_counts_every_tile)
{
    struct clops_pool *pool = tu_pool();
    int64_t before = device_tasks(pool, 0);
    struct outputs o = outputs_new(100, 130, 0, 0, 0, 0, 0);
    render_and_check(pool, &o, &classic, "1", 32, "stats");
    outputs_free(&o);
    ck_assert_int_eq(device_tasks(pool, 0) - before, tile_count(100, 130, 32));
}
END_TEST

START_TEST(test_invoke_fills_documented_defaults)
{
    /* Only `iterations`: center (-0.5, 0), scale 3, 1024 iterations, f32, dynamic, tile 256. */
    const struct view defaults = {-0.5, 0.0, 3.0, 1024, 0};
    struct outputs o = outputs_new(40, 300, 0, 0, 0, 0, 0);
    struct picture r = reference(o.h, o.w, &defaults);
    const struct clops_op *op = tu_api()->op_find("mandelbrot");
    struct clops_arg arg = {.name = "iterations", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &o.ti};
    expect_ok(tu_api()->invoke(tu_pool(), op, &arg, 1), "invoke");
    check_outputs(&o, &r, "invoke defaults");
    picture_free(&r);
    outputs_free(&o);
}
END_TEST

/* ---- Bad arguments --------------------------------------------------------------------------- */

struct bad_call {
    struct clops_tensor ti, tm;
    const struct clops_tensor *pti, *ptm;
    struct view v;
    const char *split;
    int64_t tile;
    int32_t status;
};

/* Spoils one argument of a valid call; returns the text the message must contain. */
static const char *spoil(int which, struct bad_call *x)
{
    switch (which) {
    case 0: x->ti.dtype = CLOPS_F32, x->status = CLOPS_ERR_UNSUPPORTED; return "'iterations'";
    case 1: x->tm.dtype = CLOPS_U32, x->status = CLOPS_ERR_UNSUPPORTED; return "'image'";
    case 2: x->tm.shape[1] = 9; return "'image' has shape 10x9x4";
    case 3: x->tm.shape[2] = 3; return "'image'";
    case 4: x->ti.rank = 3; return "'iterations' has rank 3";
    case 5: x->pti = NULL; return "'iterations' is NULL";
    case 6: x->v.max_iterations = 0; return "'max_iterations' = 0";
    case 7: x->v.max_iterations = (INT64_C(1) << 31) + 1; return "'max_iterations'";
    case 8: x->v.scale = 0.0; return "'scale'";
    case 9: x->v.scale = -1.0; return "'scale'";
    case 10: x->v.scale = NAN; return "'scale'";
    case 11: x->v.scale = INFINITY; return "'scale'";
    case 12: x->v.center_x = NAN; return "'center_x'";
    case 13: x->v.center_y = INFINITY; return "'center_y'";
    case 14: x->split = "abc"; return "'split' = \"abc\"";
    case 15: x->split = "1.5"; return "'split' = \"1.5\"";
    case 16: x->split = ""; return "'split'";
    case 17: x->split = "-0.5"; return "'split'";
    case 18: x->split = "0.5x"; return "'split'";
    case 19: x->tile = 0; return "'tile' = 0";
    case 20: x->tile = 5000; return "'tile' = 5000";
    case 21: x->v.precision = 2; return "'precision' = 2";
    case 22:
        x->v.scale = 1e-300;
        x->v.precision = 0;
        return "'scale'";
    case 23: x->tm.data = x->ti.data; return "overlaps"; /* the same bytes as the counts */
    default: x->tm.strides[1] = -1; return "'image' has strides[1] = -1";
    }
}
enum { BAD_CASE_COUNT = 25 };

START_TEST(test_bad_arguments_are_named_and_write_nothing)
{
    uint32_t iters[10 * 12];
    uint8_t image[10 * 12 * 4 + 64];
    memset(iters, SENTINEL, sizeof iters);
    memset(image, SENTINEL, sizeof image);
    struct tu_guard guard = {0};
    tu_guard_add(&guard, iters, sizeof iters);
    tu_guard_add(&guard, image, sizeof image);
    struct bad_call x = {
        .ti = {.data = iters, .dtype = CLOPS_U32, .rank = 2, .shape = {10, 12}, .strides = {12, 1}},
        .tm = {.data = image,
               .dtype = CLOPS_U8,
               .rank = 3,
               .shape = {10, 12, 4},
               .strides = {48, 4, 1}},
        .v = classic,
        .split = "dynamic",
        .tile = 4,
        .status = CLOPS_ERR_INVALID_ARGUMENT};
    x.pti = &x.ti;
    x.ptm = &x.tm;
    const char *needle = spoil(_i, &x);
    int32_t got = render(tu_pool(), x.pti, x.ptm, &x.v, x.split, x.tile);
    tu_expect_refusal("mandelbrot", _i, got, x.status, needle, &guard);
}
END_TEST

START_TEST(test_empty_image_is_a_valid_call)
{
    uint32_t dummy = 7;
    struct clops_tensor ti = {
        .data = &dummy, .dtype = CLOPS_U32, .rank = 2, .shape = {0, 5}, .strides = {5, 1}};
    expect_ok(render(tu_pool(), &ti, NULL, &classic, "dynamic", 64), "empty");
    ck_assert_uint_eq(dummy, 7);
}
END_TEST

int main(void)
{
    /* PoCL then shows two CPU devices, so that a pool of two devices exists on a machine
     * without a GPU (a value the user set is kept). */
#ifndef _WIN32 /* under Wine, PoCL reads the Unix environment: ctest sets it there */
    setenv("POCL_DEVICES", "pthread pthread", 0);
#endif
    const struct tu_test tests[] = {
        TU_LOOP(test_counts_and_colours_match_host_reference, 2 * SIZE_COUNT),
#ifndef __MINGW32__
        TU_TEST(test_emulated_fma_is_correctly_rounded),
#endif
        TU_TEST(test_reference_view_is_not_trivial),
        TU_LOOP(test_every_split_is_bit_identical_and_counted_per_device,
                2 * SIZE_COUNT * SPLIT_COUNT),
        TU_TEST(test_stolen_tiles_are_bit_identical),
        TU_TEST(test_a_device_that_cannot_help_sits_out),
        TU_LOOP(test_host_outputs_in_any_layout, 8),
        TU_TEST(test_image_is_optional),
        TU_LOOP(test_device_outputs_in_any_layout, 8),
        TU_TEST(test_deep_zoom_f64_matches_reference),
        TU_TEST(test_default_pool_counts_every_tile),
        TU_TEST(test_invoke_fills_documented_defaults),
        TU_LOOP(test_bad_arguments_are_named_and_write_nothing, BAD_CASE_COUNT),
        TU_TEST(test_empty_image_is_a_valid_call),
    };
    return tu_run_tests("mandelbrot", 600, 0, tests, TU_COUNT(tests));
}
