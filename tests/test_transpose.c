/* test_transpose.c — the transpose operator, bit-exact: awkward shapes, every dtype, row- and
 * column-major and padded layouts on both sides, batches, in place for square matrices, device
 * buffers, other tile sizes, and bad arguments rejected with the parameter named and nothing
 * written. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static clops_transpose_fn transpose_entry(void)
{
    return (clops_transpose_fn)tu_op("transpose")->entry;
}

static int64_t elem_size(int32_t dtype)
{
    switch (dtype) {
    case CLOPS_F64: return 8;
    case CLOPS_U8: return 1;
    default: return 4;
    }
}

/* A batch x m x n array with row or column-major matrices, padded by `pad` in the leading
 * dimension, batch stride = one matrix plus `pad` more, from element `offset`. */
struct array {
    int32_t dtype, rank;
    int64_t batch, m, n, pad, offset, count;
    int col_major;
    void *data;
    struct clops_tensor t;
};

static struct array array_new(int32_t dtype, int32_t rank, int64_t batch, int64_t m, int64_t n,
                              int col_major, int64_t pad, int64_t offset)
{
    struct array a = {.dtype = dtype,
                      .rank = rank,
                      .batch = rank == 3 ? batch : 1,
                      .m = m,
                      .n = n,
                      .pad = pad,
                      .offset = offset,
                      .col_major = col_major};
    int64_t ld = (col_major ? m : n) + pad, matrix = ld * (col_major ? n : m) + pad;
    a.count = offset + a.batch * matrix + 1;
    /* Random bytes: every bit pattern (NaN payloads included) must come through unchanged. */
    a.data = tu_random_bytes((size_t)(a.count * elem_size(dtype)));
    struct clops_tensor t = {.data = a.data, .dtype = dtype, .rank = rank, .offset = offset};
    int r = rank - 2;
    if (r) {
        t.shape[0] = batch;
        t.strides[0] = matrix;
    }
    t.shape[r] = m;
    t.shape[r + 1] = n;
    t.strides[r] = col_major ? 1 : ld;
    t.strides[r + 1] = col_major ? ld : 1;
    a.t = t;
    return a;
}

static int64_t at(const struct clops_tensor *t, int64_t b, int64_t i, int64_t j)
{
    int r = t->rank - 2;
    return t->offset + (r ? b * t->strides[0] : 0) + i * t->strides[r] + j * t->strides[r + 1];
}

/* Marks which elements of y's allocation are elements of y (the rest are gaps). */
static char *element_mask(const struct array *y)
{
    char *mask = calloc((size_t)y->count, 1);
    ck_assert_ptr_nonnull(mask);
    for (int64_t b = 0; b < y->batch; b++)
        for (int64_t i = 0; i < y->m; i++)
            for (int64_t j = 0; j < y->n; j++)
                mask[at(&y->t, b, i, j)] = 1;
    return mask;
}

/* y(b, j, i) == x(b, i, j) bit for bit; y's gaps equal `before` (y's prior contents). */
static void check_transposed(const char *what, const struct array *x, const struct array *y,
                             const void *before)
{
    const int64_t es = elem_size(x->dtype);
    const char *xd = x->data, *yd = y->data;
    for (int64_t b = 0; b < x->batch; b++)
        for (int64_t i = 0; i < x->m; i++)
            for (int64_t j = 0; j < x->n; j++)
                ck_assert_msg(memcmp(yd + at(&y->t, b, j, i) * es, xd + at(&x->t, b, i, j) * es,
                                     (size_t)es) == 0,
                              "%s: y(%lld, %lld, %lld) differs from x(%lld, %lld, %lld)", what,
                              (long long)b, (long long)j, (long long)i, (long long)b, (long long)i,
                              (long long)j);
    char *mask = element_mask(y);
    for (int64_t e = 0; e < y->count; e++)
        if (!mask[e])
            ck_assert_msg(memcmp(yd + e * es, (const char *)before + e * es, (size_t)es) == 0,
                          "%s: gap element %lld of y was written", what, (long long)e);
    free(mask);
}

static const int32_t dtypes[] = {CLOPS_F32, CLOPS_F64, CLOPS_I32, CLOPS_U32, CLOPS_U8};
enum { DTYPE_COUNT = 5 };

/* Transposes x into y on the case's pool, checks the result and frees both arrays. */
static void transpose_and_check(struct array *x, struct array *y, int x_col, int y_col)
{
    void *before = tu_memdup(y->data, (size_t)(y->count * elem_size(x->dtype)));
    char what[160];
    snprintf(what, sizeof what,
             "dtype %d rank %d %lldx%lldx%lld x %s y %s pads %lld %lld offsets %lld %lld",
             (int)x->dtype, (int)x->rank, (long long)x->batch, (long long)x->m, (long long)x->n,
             x_col ? "col" : "row", y_col ? "col" : "row", (long long)x->pad, (long long)y->pad,
             (long long)x->offset, (long long)y->offset);
    int32_t status = transpose_entry()(tu_case_pool(), &x->t, &y->t);
    ck_assert_msg(status == CLOPS_OK, "%s: %s", what, tu_api()->last_error());
    check_transposed(what, x, y, before);
    free(before);
    free(x->data);
    free(y->data);
}

static void run_case(int32_t dtype, int32_t rank, int64_t batch, int64_t m, int64_t n, int x_col,
                     int y_col, int64_t pad)
{
    struct array x = array_new(dtype, rank, batch, m, n, x_col, pad, 3);
    struct array y = array_new(dtype, rank, batch, n, m, y_col, pad + 1, 1);
    transpose_and_check(&x, &y, x_col, y_col);
}

/* Transposes the square x in place on pool and checks it against its copy from before. */
static void check_in_place(struct clops_pool *pool, struct array *x, const char *what)
{
    struct array orig = *x;
    orig.data = tu_memdup(x->data, (size_t)(x->count * elem_size(x->dtype)));
    orig.t.data = orig.data;
    ck_assert_msg(transpose_entry()(pool, &x->t, &x->t) == CLOPS_OK, "%s: %s", what,
                  tu_api()->last_error());
    check_transposed(what, &orig, x, orig.data);
    free(orig.data);
}

/* ---- Out of place ---------------------------------------------------------------------------- */

static const int64_t shapes[][2] = {{1, 1},    {1, 77},  {77, 1},  {33, 65},  {1000, 3},
                                    {3, 1000}, {64, 64}, {31, 33}, {129, 257}};
enum { SHAPE_COUNT = sizeof shapes / sizeof shapes[0] };

/* _i: shape * DTYPE_COUNT + dtype; the four storage-order pairs, dense and padded. */
START_TEST(test_transpose_shapes_layouts_and_dtypes_are_exact)
{
    tu_seed(10 + (uint64_t)_i);
    const int64_t *s = shapes[_i / DTYPE_COUNT];
    int32_t dtype = dtypes[_i % DTYPE_COUNT];
    for (int layout = 0; layout < 8; layout++)
        run_case(dtype, 2, 1, s[0], s[1], layout & 1, (layout >> 1) & 1, layout >= 4 ? 2 : 0);
}
END_TEST

START_TEST(test_transpose_batches_are_exact)
{
    tu_seed(20 + (uint64_t)_i);
    int32_t dtype = dtypes[_i];
    for (int layout = 0; layout < 4; layout++) {
        run_case(dtype, 3, 3, 17, 31, layout & 1, layout >> 1, layout);
        run_case(dtype, 3, 5, 1, 40, layout & 1, layout >> 1, 0);
    }
    run_case(dtype, 3, 2, 70, 33, 1, 0, 1);
}
END_TEST

START_TEST(test_transpose_empty_extents_are_valid_and_write_nothing)
{
    const int64_t cases[][3] = {{1, 0, 5}, {1, 5, 0}, {0, 4, 4}};
    for (int c = 0; c < 3; c++)
        run_case(CLOPS_F32, 3, cases[c][0], cases[c][1], cases[c][2], 0, 0, 1);
}
END_TEST

/* Strided (not unit-stride) views on both sides, e.g. every other column of a wider matrix. */
START_TEST(test_transpose_general_strided_views_are_exact)
{
    tu_seed(30);
    enum { M = 45, N = 29 };
    float *xd = tu_random_bytes(4 * (3 * M * N + 10)), *yd = tu_random_bytes(4 * (5 * M * N + 10));
    float *before = tu_memdup(yd, 4 * (5 * M * N + 10));
    struct array x = {.dtype = CLOPS_F32, .rank = 2, .batch = 1, .m = M, .n = N, .data = xd};
    struct array y = {.dtype = CLOPS_F32,
                      .rank = 2,
                      .batch = 1,
                      .m = N,
                      .n = M,
                      .data = yd,
                      .count = 5 * M * N + 10};
    x.t = (struct clops_tensor){.data = xd,
                                .dtype = CLOPS_F32,
                                .rank = 2,
                                .offset = 1,
                                .shape = {M, N},
                                .strides = {3 * N, 3}};
    y.t = (struct clops_tensor){.data = yd,
                                .dtype = CLOPS_F32,
                                .rank = 2,
                                .offset = 2,
                                .shape = {N, M},
                                .strides = {2, 2 * N + 1}};
    ck_assert_msg(transpose_entry()(tu_pool(), &x.t, &y.t) == CLOPS_OK, "%s",
                  tu_api()->last_error());
    check_transposed("strided", &x, &y, before);
    free(xd);
    free(yd);
    free(before);
}
END_TEST

/* ---- In place ----------------------------------------------------------------------------------
 */

/* y is x itself: square matrices, sizes below, at and across tile boundaries; batches. */
START_TEST(test_transpose_in_place_square_matches_out_of_place)
{
    static const int64_t sizes[] = {1, 2, 31, 32, 33, 100, 257};
    tu_seed(40 + (uint64_t)_i);
    int32_t dtype = dtypes[_i % DTYPE_COUNT];
    int64_t n = sizes[_i / DTYPE_COUNT];
    for (int variant = 0; variant < 3; variant++) {
        int32_t rank = variant == 2 ? 3 : 2;
        struct array x = array_new(dtype, rank, 3, n, n, variant == 1, variant, 2);
        char what[96];
        snprintf(what, sizeof what, "in place dtype %d n=%lld variant %d", (int)dtype, (long long)n,
                 variant);
        check_in_place(tu_pool(), &x, what);
        free(x.data);
    }
}
END_TEST

START_TEST(test_transpose_in_place_non_square_is_rejected)
{
    float data[15];
    for (int i = 0; i < 15; i++)
        data[i] = (float)i;
    struct clops_tensor x = clops_matrix(data, CLOPS_F32, 3, 5, 5, 0);
    struct clops_tensor y = clops_matrix(data, CLOPS_F32, 5, 3, 3, 0);
    ck_assert_int_eq(transpose_entry()(tu_pool(), &x, &y), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "'y' overlaps parameter 'x'"));
    for (int i = 0; i < 15; i++)
        ck_assert_float_eq(data[i], (float)i);
}
END_TEST

/* ---- Device buffers and tunings
 * ------------------------------------------------------------------ */

START_TEST(test_transpose_device_buffers_out_of_place_and_in_place)
{
    const struct clops_api *api = tu_api();
    tu_seed(50);
    enum { M = 70, N = 45, OFF = 6 };
    float *h = tu_random_bytes(4 * (M * N + OFF)), *back = tu_malloc(4 * (M * N + OFF));
    struct clops_buffer *bx = NULL, *by = NULL;
    ck_assert_int_eq(api->buffer_create(tu_pool(), 4 * (M * N + OFF), &bx), CLOPS_OK);
    ck_assert_int_eq(api->buffer_create(tu_pool(), 4 * (M * N + OFF), &by), CLOPS_OK);
    ck_assert_int_eq(api->buffer_upload(bx, 0, h, 4 * (M * N + OFF)), CLOPS_OK);
    struct clops_tensor x = clops_matrix_on_device(bx, CLOPS_F32, M, N, N, 0);
    struct clops_tensor y = clops_matrix_on_device(by, CLOPS_F32, N, M, N, 1); /* col-major */
    x.offset = OFF;
    y.offset = OFF;
    ck_assert_msg(transpose_entry()(tu_pool(), &x, &y) == CLOPS_OK, "%s", api->last_error());
    ck_assert_int_eq(api->buffer_download(by, 0, back, 4 * (M * N + OFF)), CLOPS_OK);
    /* A column-major N x M transpose of a row-major M x N x has x's very layout. */
    ck_assert(memcmp(back + OFF, h + OFF, 4 * M * N) == 0);
    /* In place on a square device view, twice: back to the start. */
    struct clops_tensor s = clops_matrix_on_device(bx, CLOPS_F32, 40, 40, 41, 0);
    s.offset = OFF;
    ck_assert_int_eq(transpose_entry()(tu_pool(), &s, &s), CLOPS_OK);
    ck_assert_int_eq(api->buffer_download(bx, 0, back, 4 * (M * N + OFF)), CLOPS_OK);
    ck_assert(back[OFF + 1] == h[OFF + 41] && back[OFF + 41] == h[OFF + 1]);
    ck_assert_int_eq(transpose_entry()(tu_pool(), &s, &s), CLOPS_OK);
    ck_assert_int_eq(api->buffer_download(bx, 0, back, 4 * (M * N + OFF)), CLOPS_OK);
    ck_assert(memcmp(back, h, 4 * (M * N + OFF)) == 0);
    /* Two disjoint views of one buffer are not an overlap. */
    struct clops_tensor lo = clops_matrix_on_device(bx, CLOPS_F32, 10, 20, 20, 0);
    struct clops_tensor hi = clops_matrix_on_device(bx, CLOPS_F32, 20, 10, 10, 0);
    hi.offset = 200;
    ck_assert_msg(transpose_entry()(tu_pool(), &lo, &hi) == CLOPS_OK, "%s", api->last_error());
    api->buffer_release(by);
    api->buffer_release(bx);
    free(h);
    free(back);
}
END_TEST

static const char *const tile_options[] = {"-DTILE=16 -DROWS=16", "-DVEC_TILE=8 -DVEC_ROWS=2",
                                           "-DTILE=64 -DROWS=4", "-DTILE=1 -DROWS=1"};

START_TEST(test_transpose_other_tiles_are_exact)
{
    tu_set_case_build_options("transpose", tile_options[_i]);
    tu_seed(60 + (uint64_t)_i);
    run_case(CLOPS_F32, 2, 1, 33, 65, 0, 0, 1);
    run_case(CLOPS_F64, 3, 2, 70, 17, 1, 0, 0);
    run_case(CLOPS_U8, 2, 1, 129, 3, 0, 1, 2);
    /* In place through the same tiles. */
    struct array x = array_new(CLOPS_I32, 2, 1, 67, 67, 0, 1, 0);
    check_in_place(tu_case_pool(), &x, tile_options[_i]);
    free(x.data);
    tu_release_case_pool();
}
END_TEST

/* ---- Vector loads and stores -----------------------------------------------------------------
 */

/* Extents that are multiples of 4 (of 16 too, for u8's 16-element vectors, in some), tiles
 * cut at the edges, one row or column of vectors, and batches. */
static const int64_t aligned_shapes[][3] = {{1, 4, 4},    {1, 16, 16},  {1, 32, 32}, {1, 64, 64},
                                            {1, 36, 100}, {1, 100, 36}, {1, 128, 4}, {1, 4, 1000},
                                            {1, 96, 160}, {1, 16, 48},  {3, 36, 20}, {2, 48, 80}};
enum { ALIGNED_SHAPES = sizeof aligned_shapes / sizeof aligned_shapes[0] };

/* The device's tiles, and others forced through the configuration: small and large tiles,
 * 8-byte vectors. */
static const char *const vector_tile_options[] = {NULL, "-DVEC_TILE=8 -DVEC_ROWS=2",
                                                  "-DVEC_TILE=64 -DVEC_ROWS=4",
                                                  "-DVEC_TILE=16 -DVEC_ROWS=16 -DVEC_BYTES=8"};

/* Both matrices row-major, or both column-major, with row starts, extents and offsets that are
 * multiples of the vector width: the vector kernel's layouts (and, where an extent is not, the
 * scalar kernel's), bit for bit, gaps untouched. _i: tiles * DTYPE_COUNT + dtype. */
START_TEST(test_transpose_aligned_row_major_uses_vectors_exactly)
{
    const char *options = vector_tile_options[_i / DTYPE_COUNT];
    tu_set_case_build_options("transpose", options);
    tu_seed(70 + (uint64_t)_i);
    int32_t dtype = dtypes[_i % DTYPE_COUNT];
    for (int s = 0; s < ALIGNED_SHAPES; s++)
        for (int variant = 0; variant < 4; variant++) {
            const int64_t *sh = aligned_shapes[s];
            const int col = variant & 1, pad = variant & 2 ? 16 : 0;
            struct array x = array_new(dtype, sh[0] > 1 ? 3 : 2, sh[0], sh[1], sh[2], col, pad, 32);
            struct array y = array_new(dtype, sh[0] > 1 ? 3 : 2, sh[0], sh[2], sh[1], col, pad + 16,
                                       16 * variant);
            transpose_and_check(&x, &y, col, col);
        }
    tu_release_case_pool();
}
END_TEST

/* ---- Bad arguments -----------------------------------------------------------------------------
 */

enum { BAD_M = 4, BAD_N = 6, BAD_ALLOC = 64 };

struct bad_call {
    struct clops_pool *pool;
    struct clops_tensor x, y;
    const struct clops_tensor *px, *py;
    int32_t status;
};

static float bad_x[BAD_ALLOC], bad_y[BAD_ALLOC];

static const char *spoil(int which, struct bad_call *c)
{
    switch (which) {
    case 0: c->x.dtype = CLOPS_I64, c->status = CLOPS_ERR_UNSUPPORTED; return "'x' has dtype i64";
    case 1: c->y.dtype = CLOPS_U32; return "'y' has dtype u32 but 'x' has f32";
    case 2:
        c->y.shape[0] = BAD_M;
        c->y.shape[1] = BAD_N;
        return "'y' has shape 4x6; expected 6x4";
    case 3: c->x.rank = 1; return "'x' has rank 1";
    case 4: c->x.rank = 4; return "'x' has rank 4";
    case 5: c->x.rank = 5; return "'x' has rank 5";
    case 6:
        c->y.rank = 3;
        c->y.shape[2] = 1;
        return "'y' has rank 3; expected 2";
    case 7: c->px = NULL; return "'x' is NULL";
    case 8: c->py = NULL; return "'y' is NULL";
    case 9:
        c->y.data = NULL;
        c->y.buffer = tu_kept_buffer(16);
        return "'y' addresses 96 bytes but its buffer holds 16";
    case 10:
        c->y.data = bad_x;
        c->y.offset = 10;
        return "'y' overlaps parameter 'x'";
    case 11: c->y.strides[0] = 2; return "'y' has strides under which elements share memory";
    case 12: c->x.shape[1] = -1; return "'x' has shape[1] = -1";
    case 13: c->pool = NULL; return "'pool' is NULL";
    case 14: c->y.buffer = tu_kept_buffer(16); return "'y' must have exactly one";
    case 15: c->x.strides[1] = 0; return "'x' has strides[1] = 0";
    case 16: c->y.dtype = 0; return "'y' has dtype invalid";
    default: ck_abort_msg("no bad case %d", which); return NULL;
    }
}
enum { BAD_CASE_COUNT = 17 };

START_TEST(test_transpose_rejects_bad_arguments_naming_them)
{
    struct tu_guard guard = {0};
    tu_guard_random_f32(&guard, 9000 + (uint64_t)_i, BAD_ALLOC, bad_x, bad_y, NULL);
    struct bad_call c = {.pool = tu_pool(),
                         .x = clops_matrix(bad_x, CLOPS_F32, BAD_M, BAD_N, BAD_N, 0),
                         .y = clops_matrix(bad_y, CLOPS_F32, BAD_N, BAD_M, BAD_M, 0),
                         .status = CLOPS_ERR_INVALID_ARGUMENT};
    c.px = &c.x;
    c.py = &c.y;
    const char *needle = spoil(_i, &c);
    int32_t got = transpose_entry()(c.pool, c.px, c.py);
    tu_expect_refusal("transpose", _i, got, c.status, needle, &guard);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_LOOP(test_transpose_shapes_layouts_and_dtypes_are_exact, SHAPE_COUNT * DTYPE_COUNT),
        TU_LOOP(test_transpose_batches_are_exact, DTYPE_COUNT),
        TU_TEST(test_transpose_empty_extents_are_valid_and_write_nothing),
        TU_TEST(test_transpose_general_strided_views_are_exact),
        TU_LOOP(test_transpose_in_place_square_matches_out_of_place, 7 * DTYPE_COUNT),
        TU_TEST(test_transpose_in_place_non_square_is_rejected),
        TU_TEST(test_transpose_device_buffers_out_of_place_and_in_place),
        TU_LOOP(test_transpose_other_tiles_are_exact, 4),
        TU_LOOP(test_transpose_aligned_row_major_uses_vectors_exactly, 4 * DTYPE_COUNT),
        TU_LOOP(test_transpose_rejects_bad_arguments_naming_them, BAD_CASE_COUNT),
    };
    return tu_run_tests("transpose", 600, 0, tests, TU_COUNT(tests));
}
