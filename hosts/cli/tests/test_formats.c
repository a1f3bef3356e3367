/* test_formats.c — the CLI's file formats (formats.c): round trips of every writer through its
 * reader at awkward shapes and every dtype, hand-made Matrix Market and NumPy files expanded to
 * known values, malformed files rejected with the file, line and fault named, atomic writes
 * that leave nothing behind when they fail, and PNGs read back through libpng. */
#include <dirent.h>
#include <math.h>
#include <png.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_test.h"
#include "formats.h"
#include "util.h"

/* ---- A fresh directory per test ------------------------------------------------------------- */

static char dir[256];

static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_formats.XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
    host_remove_tree(dir);
}

/* `name` inside the test's directory; the result lives until the next call with the same
 * slot (0..3). */
static const char *at(int slot, const char *name)
{
    static char paths[4][512];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", dir, name);
    return paths[slot];
}

static const char *in_dir(const char *name)
{
    return at(0, name);
}

static void write_bytes(const char *path, const void *bytes, size_t size)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, size, f), size);
    ck_assert_int_eq(fclose(f), 0);
}

static void write_text(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

/* The whole file, NUL-terminated; *size its length. */
static char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    if (size != NULL)
        *size = (size_t)n;
    return text;
}

/* The names in `path`, sorted and joined with spaces (dot entries left out). */
static void list_dir(const char *path, char *out, size_t size)
{
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    ck_assert_int_ge(n, 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0)
            host_append(out, size, " ", names[i]->d_name);
        free(names[i]);
    }
    free(names);
}

/* The names in `path` are `names` (as list_dir gives them). */
static void expect_listing(const char *path, const char *names)
{
    char got[1024];
    list_dir(path, got, sizeof got);
    ck_assert_str_eq(got, names);
}

/* ---- Tensors ------------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int64_t count_of(int32_t rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int32_t a = 0; a < rank; a++)
        n *= shape[a];
    return n;
}

/* Random bits in every element. With `finite`, float exponents are never all ones (text
 * formats print NaN without its payload); subnormals, -0 and extremes stay in. */
static struct fmt_tensor random_tensor(int32_t dtype, int32_t rank, const int64_t *shape,
                                       int finite)
{
    struct fmt_tensor t = {.dtype = dtype, .rank = rank};
    memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
    const int64_t n = count_of(rank, shape), esize = host_dtype_size(dtype);
    unsigned char *p = malloc((size_t)(n * esize) + 1);
    ck_assert_ptr_nonnull(p);
    for (int64_t i = 0; i < n * esize; i++)
        p[i] = (unsigned char)next_random();
    for (int64_t i = 0; finite && dtype == CLOPS_F32 && i < n; i++) {
        float *x = (float *)p + i;
        if (!isfinite(*x))
            *x = (float)(next_random() % 1000) * 1e-3f;
    }
    for (int64_t i = 0; finite && dtype == CLOPS_F64 && i < n; i++) {
        double *x = (double *)p + i;
        if (!isfinite(*x))
            *x = (double)(next_random() % 1000) * 1e-3;
    }
    t.data = p;
    return t;
}

static void assert_same(const struct fmt_tensor *got, const struct fmt_tensor *want,
                        const char *what)
{
    ck_assert_msg(got->dtype == want->dtype, "%s: dtype %d, expected %d", what, (int)got->dtype,
                  (int)want->dtype);
    ck_assert_msg(got->rank == want->rank, "%s: rank %d, expected %d", what, (int)got->rank,
                  (int)want->rank);
    for (int32_t a = 0; a < want->rank; a++)
        ck_assert_msg(got->shape[a] == want->shape[a], "%s: shape[%d] = %lld, expected %lld", what,
                      (int)a, (long long)got->shape[a], (long long)want->shape[a]);
    const size_t bytes = (size_t)(count_of(want->rank, want->shape) * host_dtype_size(want->dtype));
    ck_assert_msg(bytes == 0 || memcmp(got->data, want->data, bytes) == 0, "%s: the data differs",
                  what);
}

static void assert_zeroed(const struct fmt_tensor *t)
{
    ck_assert_ptr_null(t->data);
    ck_assert_int_eq(t->dtype, 0);
    ck_assert_int_eq(t->rank, 0);
    ck_assert_int_eq(t->shape[0], 0);
}

static const int32_t all_dtypes[] = {CLOPS_F32, CLOPS_F64, CLOPS_I32,
                                     CLOPS_U32, CLOPS_U8,  CLOPS_I64};
enum { DTYPE_COUNT = (int)(sizeof all_dtypes / sizeof all_dtypes[0]) };

struct shape {
    int32_t rank;
    int64_t extents[CLOPS_MAX_RANK];
};

/* 1x1, 1xN, Nx1, a prime-ish 17x5, rank 1 (one and many), rank 3 and rank 4. */
static const struct shape awkward_shapes[] = {
    {1, {1}},    {1, {13}},    {2, {1, 1}},    {2, {1, 9}},
    {2, {9, 1}}, {2, {17, 5}}, {3, {3, 4, 5}}, {4, {2, 3, 1, 4}},
};
enum { SHAPE_COUNT = (int)(sizeof awkward_shapes / sizeof awkward_shapes[0]) };

static void describe_case(char *out, size_t size, const char *format, int32_t dtype,
                          const struct shape *s)
{
    snprintf(out, size, "%s %s rank %d [%lld %lld %lld %lld]", format, host_dtype_name(dtype),
             (int)s->rank, (long long)s->extents[0], (long long)s->extents[1],
             (long long)s->extents[2], (long long)s->extents[3]);
}

/* The message names the file and contains `expected`; the output stays zeroed. */
static void assert_failed(int rc, const struct fmt_tensor *out, const char *err, const char *path,
                          const char *expected)
{
    ck_assert_msg(rc == -1, "%s: read succeeded; expected an error containing \"%s\"", path,
                  expected);
    assert_zeroed(out);
    ck_assert_msg(strstr(err, path) != NULL, "message \"%s\" does not name %s", err, path);
    ck_assert_msg(strstr(err, expected) != NULL, "message \"%s\" lacks \"%s\"", err, expected);
    ck_assert_msg(strchr(err, '\n') == NULL, "message \"%s\" is not one line", err);
}

/* fmt_read of `path` as `dtype` (0: the file's) gives back t (`what` in failures). */
static void expect_reads_back(const char *path, int32_t dtype, const struct fmt_tensor *t,
                              const char *what)
{
    struct fmt_tensor back;
    char err[512];
    ck_assert_msg(fmt_read(path, dtype, 0, NULL, &back, err, sizeof err) == 0, "%s: %s", what, err);
    assert_same(&back, t, what);
    fmt_tensor_free(&back);
}

/* fmt_read of `name` (in the test's directory) as `dtype` fails as assert_failed expects. */
static void expect_read_error(const char *name, int32_t dtype, const char *expected)
{
    struct fmt_tensor t;
    char err[512] = "";
    int rc = fmt_read(in_dir(name), dtype, 0, NULL, &t, err, sizeof err);
    assert_failed(rc, &t, err, in_dir(name), expected);
}

/* ---- NumPy --------------------------------------------------------------------------------- */

/* A .npy file made by hand: any version, any header text (not padded), then `data`. */
static void write_npy_fixture(const char *path, int major, const char *header, const void *data,
                              size_t data_size)
{
    const size_t hl = strlen(header);
    const size_t lead = major == 1 ? 10 : 12;
    unsigned char *bytes = malloc(lead + hl + data_size + 1);
    memcpy(bytes, "\x93NUMPY", 6);
    bytes[6] = (unsigned char)major;
    bytes[7] = 0;
    for (size_t i = 0; i < lead - 8; i++)
        bytes[8 + i] = (unsigned char)(hl >> (8 * i));
    memcpy(bytes + lead, header, hl);
    if (data_size > 0)
        memcpy(bytes + lead + hl, data, data_size);
    write_bytes(path, bytes, lead + hl + data_size);
    free(bytes);
}

/* Writes a .npy fixture (as write_npy_fixture) and reads it into *t, which must succeed. */
static void read_npy_fixture(const char *name, int major, const char *header, const void *data,
                             size_t data_size, struct fmt_tensor *t)
{
    char err[512];
    write_npy_fixture(in_dir(name), major, header, data, data_size);
    ck_assert_msg(fmt_read_npy(in_dir(name), t, err, sizeof err) == 0, "%s: %s", name, err);
}

/* Reading the .npy file `name` fails as assert_failed expects. */
static void expect_npy_read_error(const char *name, const char *expected)
{
    struct fmt_tensor t;
    char err[512] = "";
    int rc = fmt_read_npy(in_dir(name), &t, err, sizeof err);
    assert_failed(rc, &t, err, in_dir(name), expected);
}

/* ---- Round trips: every dtype at every awkward shape ------------------------------------- */

/* One format's round trip (its fields in this order). Each case is written to `file`, checked on
 * disk by check_file (NULL: nothing more) and, where read is not NULL, read back and compared with
 * what was written, which read may first reshape to what the format holds. */
struct round_trip {
    const char *format, *file;
    int32_t max_rank; /* cases of a higher rank are left out */
    int finite;       /* random_tensor's: no NaN or infinity, for the text formats */
    int (*write)(const char *path, const struct fmt_tensor *t, char *err, size_t size);
    void (*check_file)(const char *path, const struct fmt_tensor *t, const char *what);
    int (*read)(const char *path, struct fmt_tensor *t, struct fmt_tensor *back, char *err,
                size_t size);
};

static void round_trip_every_case(const struct round_trip *rt)
{
    for (int d = 0; d < DTYPE_COUNT; d++)
        for (int s = 0; s < SHAPE_COUNT; s++) {
            const struct shape *shape = &awkward_shapes[s];
            if (shape->rank > rt->max_rank)
                continue;
            struct fmt_tensor t =
                random_tensor(all_dtypes[d], shape->rank, shape->extents, rt->finite);
            char what[128], err[512];
            describe_case(what, sizeof what, rt->format, all_dtypes[d], shape);
            ck_assert_msg(rt->write(in_dir(rt->file), &t, err, sizeof err) == 0, "%s: %s", what,
                          err);
            if (rt->check_file != NULL)
                rt->check_file(in_dir(rt->file), &t, what);
            if (rt->read != NULL) {
                struct fmt_tensor back;
                ck_assert_msg(rt->read(in_dir(rt->file), &t, &back, err, sizeof err) == 0, "%s: %s",
                              what, err);
                assert_same(&back, &t, what);
                fmt_tensor_free(&back);
            }
            fmt_tensor_free(&t);
        }
}

/* The layout NumPy writes: version 1.0, data at a multiple of 64, header ends in '\n'. */
static void npy_layout_is_numpys(const char *path, const struct fmt_tensor *t, const char *what)
{
    (void)what;
    size_t size;
    unsigned char *file = (unsigned char *)slurp(path, &size);
    const size_t header_end = 10u + file[8] + 256u * file[9];
    ck_assert_int_eq(file[6], 1);
    ck_assert_int_eq(file[7], 0);
    ck_assert_uint_eq(header_end % 64, 0);
    ck_assert_int_eq(file[header_end - 1], '\n');
    ck_assert_uint_eq(size - header_end,
                      (size_t)(count_of(t->rank, t->shape) * host_dtype_size(t->dtype)));
    free(file);
}

static int read_npy(const char *path, struct fmt_tensor *t, struct fmt_tensor *back, char *err,
                    size_t size)
{
    (void)t;
    return fmt_read_npy(path, back, err, size);
}

START_TEST(test_npy_round_trips_every_dtype_and_shape)
{
    round_trip_every_case(&(struct round_trip){"npy", "t.npy", CLOPS_MAX_RANK, 0, fmt_write_npy,
                                               npy_layout_is_numpys, read_npy});
}
END_TEST

START_TEST(test_npy_empty_tensor_round_trips)
{
    struct fmt_tensor t = {.dtype = CLOPS_F64, .rank = 2, .shape = {3, 0}}, back;
    char err[512];
    ck_assert_int_eq(fmt_write_npy(in_dir("e.npy"), &t, err, sizeof err), 0);
    ck_assert_int_eq(fmt_read_npy(in_dir("e.npy"), &back, err, sizeof err), 0);
    ck_assert_int_eq(back.rank, 2);
    ck_assert_int_eq(back.shape[0], 3);
    ck_assert_int_eq(back.shape[1], 0);
    fmt_tensor_free(&back);
}
END_TEST

START_TEST(test_npy_fortran_order_is_transposed_to_row_major)
{
    /* A[i][j] = 10 i + j, 2 x 3, stored column by column. */
    const double column_major[6] = {0, 10, 1, 11, 2, 12};
    struct fmt_tensor t;
    read_npy_fixture("f.npy", 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }\n",
                     column_major, sizeof column_major, &t);
    ck_assert_int_eq(t.rank, 2);
    ck_assert_int_eq(t.shape[0], 2);
    ck_assert_int_eq(t.shape[1], 3);
    const double row_major[6] = {0, 1, 2, 10, 11, 12};
    for (int k = 0; k < 6; k++)
        ck_assert_double_eq(((double *)t.data)[k], row_major[k]);
    fmt_tensor_free(&t);

    /* Rank 3, i32: B[i][j][k] = 100 i + 10 j + k for 2 x 3 x 4, i fastest in the file. */
    int32_t fortran[24];
    for (int k = 0, n = 0; k < 4; k++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 2; i++)
                fortran[n++] = 100 * i + 10 * j + k;
    read_npy_fixture("g.npy", 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }\n",
                     fortran, sizeof fortran, &t);
    ck_assert_int_eq(t.rank, 3);
    for (int i = 0, n = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                ck_assert_int_eq(((int32_t *)t.data)[n++], 100 * i + 10 * j + k);
    fmt_tensor_free(&t);
}
END_TEST

START_TEST(test_npy_versions_2_and_3_are_read)
{
    const float values[3] = {1.5f, -2.25f, 3e-39f};
    for (int major = 2; major <= 3; major++) {
        struct fmt_tensor t;
        read_npy_fixture("v.npy", major,
                         "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", values,
                         sizeof values, &t);
        ck_assert_int_eq(t.dtype, CLOPS_F32);
        ck_assert_int_eq(t.rank, 1);
        ck_assert_int_eq(t.shape[0], 3);
        ck_assert_mem_eq(t.data, values, sizeof values);
        fmt_tensor_free(&t);
    }
}
END_TEST

START_TEST(test_npy_header_dict_parsed_in_any_spacing_and_order)
{
    struct fmt_tensor t;
    const int32_t six[6] = {1, 2, 3, 4, 5, 6};
    /* Keys reordered, double quotes, spaces everywhere, trailing commas in tuple and dict. */
    read_npy_fixture("a.npy", 1,
                     "{ \"shape\" : ( 2 , 3 , ) ,'fortran_order':False,  'descr':'<i4' , }  \n",
                     six, sizeof six, &t);
    ck_assert_int_eq(t.dtype, CLOPS_I32);
    ck_assert_int_eq(t.rank, 2);
    ck_assert_int_eq(t.shape[0], 2);
    ck_assert_int_eq(t.shape[1], 3);
    ck_assert_mem_eq(t.data, six, sizeof six);
    fmt_tensor_free(&t);

    /* No trailing comma; Python 2 longs. */
    read_npy_fixture("b.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3L, 2L)}", six,
                     sizeof six, &t);
    ck_assert_int_eq(t.shape[0], 3);
    ck_assert_int_eq(t.shape[1], 2);
    fmt_tensor_free(&t);

    /* A 0-d array is one element of rank 1. */
    const double pi = 3.14159;
    read_npy_fixture("c.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n", &pi,
                     sizeof pi, &t);
    ck_assert_int_eq(t.rank, 1);
    ck_assert_int_eq(t.shape[0], 1);
    ck_assert_double_eq(*(double *)t.data, pi);
    fmt_tensor_free(&t);

    /* u8 and i64 descrs. */
    const uint8_t bytes[5] = {0, 1, 127, 128, 255};
    read_npy_fixture("d.npy", 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }", bytes,
                     sizeof bytes, &t);
    ck_assert_int_eq(t.dtype, CLOPS_U8);
    ck_assert_mem_eq(t.data, bytes, sizeof bytes);
    fmt_tensor_free(&t);
}
END_TEST

/* One malformed .npy: header text and the size of the data after it. */
static void expect_npy_error(const char *name, int major, const char *header, size_t data_size,
                             const char *expected)
{
    void *data = calloc(1, data_size + 1);
    write_npy_fixture(in_dir(name), major, header, data, data_size);
    free(data);
    expect_npy_read_error(name, expected);
}

START_TEST(test_npy_malformed_files_are_rejected_with_the_fault_named)
{
    const char *good = "{'descr': '<f8', 'fortran_order': False, 'shape': (12, 7), }\n";
    /* Truncated: the whole message, as the header promises more than the file has. */
    write_npy_fixture(in_dir("t.npy"), 1, good, (const char[80]){0}, 80);
    struct fmt_tensor t;
    char err[512], want[600];
    ck_assert_int_eq(fmt_read_npy(in_dir("t.npy"), &t, err, sizeof err), -1);
    assert_zeroed(&t);
    snprintf(want, sizeof want,
             "%s: truncated: the header says 12 x 7 f64 (672 bytes of data) but the file has 80",
             in_dir("t.npy"));
    ck_assert_str_eq(err, want);

    expect_npy_error("extra.npy", 1, good, 680, "bytes after the data");
    expect_npy_error("v4.npy", 4, good, 672, "unsupported .npy format version 4.0");
    expect_npy_error("colon.npy", 1, "{'descr' '<f8', 'fortran_order': False, 'shape': (2,)}", 16,
                     "bad header: expected ':'");
    expect_npy_error("brace.npy", 1, "'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", 16,
                     "bad header: expected '{'");
    expect_npy_error("key.npy", 1,
                     "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1}", 16,
                     "unknown key 'x'");
    expect_npy_error("twice.npy", 1,
                     "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", 16,
                     "key 'descr' appears twice");
    expect_npy_error("noshape.npy", 1, "{'descr': '<f8', 'fortran_order': False}", 16,
                     "no 'shape' key");
    expect_npy_error("order.npy", 1, "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2,)}", 16,
                     "True or False");
    expect_npy_error("after.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} x",
                     16, "text after the dict");
    expect_npy_error("negative.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}",
                     16, "bad header");
    expect_npy_error("be.npy", 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,)}", 16,
                     "unsupported descr '>f8'");
    expect_npy_error("i1.npy", 1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2,)}", 2,
                     "unsupported descr '|i1'");
    expect_npy_error("struct.npy", 1,
                     "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", 8,
                     "structured dtypes are not supported");
    expect_npy_error("rank5.npy", 1,
                     "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1)}", 8,
                     "more than 4 dimensions");
    expect_npy_error("huge.npy", 1,
                     "{'descr': '<f8', 'fortran_order': False, 'shape': (1073741824, "
                     "1073741824)}",
                     8, "more than 2^40 bytes");
    expect_npy_error("overflow.npy", 1,
                     "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,)}",
                     8, "bad header");

    /* Wrong magic; a header length past the end of the file; a file shorter than the magic. */
    write_bytes(in_dir("magic.npy"), "\x93NUMPZ\x01\x00\x02\x00{}", 12);
    expect_npy_read_error("magic.npy", "not a NumPy file");
    write_bytes(in_dir("long.npy"), "\x93NUMPY\x01\x00\xff\x00{}", 12);
    expect_npy_read_error("long.npy", "truncated: the header is 255 bytes long");
    write_bytes(in_dir("short.npy"), "\x93NUM", 4);
    expect_npy_read_error("short.npy", "not a NumPy file");
    expect_npy_read_error("missing.npy", "cannot open");
}
END_TEST

/* What a message quotes from a file can be any bytes: a newline or a terminal escape in a descr
 * or a token comes out as '?', and the message stays one line (found by tests/fuzz/fuzz_npy). */
START_TEST(test_messages_quoting_file_bytes_have_no_control_characters)
{
    expect_npy_error("newline.npy", 1, "{'descr': '<f4\n\x1b[2J', 'fortran_order': False}", 8,
                     "unsupported descr '<f4??[2J'");
    write_text(in_dir("cr.mtx"),
               "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\r5\n");
    struct fmt_tensor t;
    char err[512] = "";
    assert_failed(fmt_read_mtx(in_dir("cr.mtx"), CLOPS_F64, &t, err, sizeof err), &t, err,
                  in_dir("cr.mtx"), "'2?5' is not a number");
}
END_TEST

START_TEST(test_read_npy_checks_the_wanted_dtype)
{
    const int64_t shape[1] = {4};
    struct fmt_tensor t = random_tensor(CLOPS_F64, 1, shape, 0);
    char err[512];
    ck_assert_int_eq(fmt_write(in_dir("d.npy"), &t, err, sizeof err), 0);
    expect_reads_back(in_dir("d.npy"), 0, &t, "dtype 0");
    expect_reads_back(in_dir("d.npy"), CLOPS_F64, &t, "dtype f64");
    expect_read_error("d.npy", CLOPS_F32, "holds f64 but f32 is wanted");
    fmt_tensor_free(&t);
}
END_TEST

/* ---- Matrix Market -------------------------------------------------------------------------- */

/* A vector comes back as the N x 1 matrix the file holds. */
static int read_mtx(const char *path, struct fmt_tensor *t, struct fmt_tensor *back, char *err,
                    size_t size)
{
    if (t->rank == 1) {
        t->rank = 2;
        t->shape[1] = 1;
    }
    return fmt_read_mtx(path, t->dtype, back, err, size);
}

START_TEST(test_mtx_round_trips_every_dtype_in_ranks_1_and_2)
{
    round_trip_every_case(
        &(struct round_trip){"mtx", "t.mtx", 2, 1, fmt_write_mtx, NULL, read_mtx});
}
END_TEST

START_TEST(test_mtx_written_column_major_with_the_right_banner)
{
    const int32_t values[6] = {1, 2, 3, 4, 5, -6}; /* 2 x 3, row-major */
    struct fmt_tensor t = {.dtype = CLOPS_I32, .rank = 2, .shape = {2, 3}, .data = (void *)values};
    char err[512];
    ck_assert_int_eq(fmt_write_mtx(in_dir("c.mtx"), &t, err, sizeof err), 0);
    char *text = slurp(in_dir("c.mtx"), NULL);
    ck_assert_str_eq(text, "%%MatrixMarket matrix array integer general\n2 3\n1\n4\n2\n5\n3\n-6\n");
    free(text);
    const double x[2] = {0.1, -1e-300};
    struct fmt_tensor v = {.dtype = CLOPS_F64, .rank = 1, .shape = {2}, .data = (void *)x};
    ck_assert_int_eq(fmt_write_mtx(in_dir("v.mtx"), &v, err, sizeof err), 0);
    text = slurp(in_dir("v.mtx"), NULL);
    ck_assert_str_eq(text, "%%MatrixMarket matrix array real general\n2 1\n"
                           "0.10000000000000001\n-1e-300\n");
    free(text);
}
END_TEST

/* Reads `text` as .mtx into `dtype` and compares with the row-major `expected` rows x cols. */
static void expect_mtx_dense(const char *text, int32_t dtype, int64_t rows, int64_t cols,
                             const double *expected)
{
    write_text(in_dir("m.mtx"), text);
    struct fmt_tensor t;
    char err[512];
    ck_assert_msg(fmt_read_mtx(in_dir("m.mtx"), dtype, &t, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(t.dtype, dtype);
    ck_assert_int_eq(t.rank, 2);
    ck_assert_int_eq(t.shape[0], rows);
    ck_assert_int_eq(t.shape[1], cols);
    for (int64_t k = 0; k < rows * cols; k++) {
        double got = 0;
        switch (dtype) {
        case CLOPS_F32: got = ((float *)t.data)[k]; break;
        case CLOPS_F64: got = ((double *)t.data)[k]; break;
        case CLOPS_I32: got = ((int32_t *)t.data)[k]; break;
        case CLOPS_I64: got = (double)((int64_t *)t.data)[k]; break;
        case CLOPS_U8: got = ((uint8_t *)t.data)[k]; break;
        default: got = ((uint32_t *)t.data)[k]; break;
        }
        ck_assert_msg(got == expected[k], "%s element (%lld, %lld) = %g, expected %g",
                      host_dtype_name(dtype), (long long)(k / cols), (long long)(k % cols), got,
                      expected[k]);
    }
    fmt_tensor_free(&t);
}

START_TEST(test_mtx_coordinate_general_expands_and_sums_duplicates)
{
    /* Upper-case words, comments, blank lines, CRLF endings, a duplicate (2, 3) summed. */
    const char *text = "%%MatrixMarket MATRIX Coordinate Real General\r\n"
                       "% a comment\r\n"
                       "\r\n"
                       "3 4 5\r\n"
                       "1 1 1.5\r\n"
                       "2 3 -2\r\n"
                       "% between entries\r\n"
                       "3 4 1e-3\r\n"
                       "2 3 0.5\r\n"
                       "  3   1   7  \r\n";
    const double dense[12] = {1.5, 0, 0, 0, 0, 0, -1.5, 0, 7, 0, 0, 1e-3};
    expect_mtx_dense(text, CLOPS_F64, 3, 4, dense);
    const double dense_f32[12] = {1.5, 0, 0, 0, 0, 0, -1.5, 0, 7, 0, 0, (float)1e-3};
    expect_mtx_dense(text, CLOPS_F32, 3, 4, dense_f32);
}
END_TEST

START_TEST(test_mtx_coordinate_symmetric_and_skew_are_mirrored)
{
    const char *symmetric = "%%MatrixMarket matrix coordinate real symmetric\n"
                            "3 3 4\n1 1 1\n2 1 2\n3 2 3\n3 3 4\n";
    const double sym[9] = {1, 2, 0, 2, 0, 3, 0, 3, 4};
    expect_mtx_dense(symmetric, CLOPS_F64, 3, 3, sym);
    const char *skew = "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                       "3 3 2\n2 1 5\n3 1 -1.5\n";
    const double sk[9] = {0, -5, 1.5, 5, 0, 0, -1.5, 0, 0};
    expect_mtx_dense(skew, CLOPS_F64, 3, 3, sk);
    const char *integer = "%%MatrixMarket matrix coordinate integer skew-symmetric\n"
                          "2 2 1\n2 1 1099511627776\n";
    const double in[4] = {0, -1099511627776.0, 1099511627776.0, 0};
    expect_mtx_dense(integer, CLOPS_I64, 2, 2, in);
}
END_TEST

START_TEST(test_mtx_pattern_reads_as_ones)
{
    const char *general = "%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 3\n2 1\n";
    const double g[6] = {0, 0, 1, 1, 0, 0};
    expect_mtx_dense(general, CLOPS_F32, 2, 3, g);
    expect_mtx_dense(general, CLOPS_U8, 2, 3, g);
    const char *symmetric = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n"
                            "1 1\n3 1\n3 2\n";
    const double s[9] = {1, 0, 1, 0, 0, 1, 1, 1, 0};
    expect_mtx_dense(symmetric, CLOPS_I32, 3, 3, s);
}
END_TEST

START_TEST(test_mtx_array_formats_fill_column_by_column)
{
    const double general[6] = {1, 3, 5, 2, 4, 6};
    expect_mtx_dense("%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n6\n", CLOPS_F64,
                     2, 3, general);
    const double symmetric[9] = {1, 2, 3, 2, 4, 5, 3, 5, 6};
    expect_mtx_dense("%%MatrixMarket matrix array integer symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
                     CLOPS_U32, 3, 3, symmetric);
    const double skew[9] = {0, -1, -2, 1, 0, -3, 2, 3, 0};
    expect_mtx_dense("%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n", CLOPS_F64,
                     3, 3, skew);
}
END_TEST

static void expect_mtx_error(const char *text, int32_t dtype, const char *expected)
{
    write_text(in_dir("b.mtx"), text);
    struct fmt_tensor t;
    char err[512] = "";
    int rc = fmt_read_mtx(in_dir("b.mtx"), dtype, &t, err, sizeof err);
    char want[600];
    snprintf(want, sizeof want, "%s%s", in_dir("b.mtx"), expected);
    assert_failed(rc, &t, err, in_dir("b.mtx"), want);
}

/* expect_mtx_error for a general real coordinate file (its banner, a comment line, then `rest`)
 * read as f64. */
static void expect_coordinate_error(const char *rest, const char *expected)
{
    char text[512];
    snprintf(text, sizeof text, "%%%%MatrixMarket matrix coordinate real general\n%% c\n%s", rest);
    expect_mtx_error(text, CLOPS_F64, expected);
}

START_TEST(test_mtx_malformed_files_name_the_line)
{
    expect_mtx_error("hello\n1 1\n1\n", CLOPS_F64, ":1: bad banner: expected '%%MatrixMarket");
    expect_mtx_error("", CLOPS_F64, ":1: bad banner");
    expect_mtx_error("%%MatrixMarket matrix sparse real general\n", CLOPS_F64,
                     ":1: bad banner: unknown format 'sparse'");
    expect_mtx_error("%%MatrixMarket vector array real general\n", CLOPS_F64,
                     ":1: bad banner: '%%MatrixMarket vector' is not a matrix");
    expect_mtx_error("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n",
                     CLOPS_F64, ":1: complex matrices are not supported");
    expect_mtx_error("%%MatrixMarket matrix array pattern general\n", CLOPS_F64,
                     ":1: bad banner: the pattern field needs the coordinate format");
    expect_mtx_error("%%MatrixMarket matrix array real general\n1 1\n1\n", CLOPS_I32,
                     ":1: a real matrix cannot be read as i32");
    expect_coordinate_error("3 3\n", ":3: expected 3 entries ('rows cols nonzeros'), found 2");
    expect_coordinate_error("3 x 1\n", ":3: bad size line: 'x' is not a non-negative integer");
    expect_coordinate_error("", ":2: no size line");
    expect_coordinate_error("3 3 4\n1 1 1\n2 2 2\n3 3 3\n",
                            ":3: the size line announces 4 entries but the file has 3");
    expect_coordinate_error("3 3 2\n1 1 1\n2 2 2\n\n3 3 3\n",
                            ":7: more entries than the 2 announced on line 3");
    expect_coordinate_error("3 3 2\n1 1 1\n7 2 2\n", ":5: row index 7 out of range 1..3");
    expect_coordinate_error("3 3 2\n1 0 1\n", ":4: column index 0 out of range 1..3");
    expect_coordinate_error("3 3 2\n1 -1 1\n", ":4: column index '-1' is not a positive integer");
    expect_coordinate_error("3 3 2\n1 1 abc\n", ":4: 'abc' is not a number");
    expect_coordinate_error("3 3 2\n1 1 1.5x\n", ":4: '1.5x' is not a number");
    expect_coordinate_error("3 3 2\n1 1\n", ":4: expected 3 entries ('row col value'), found 2");
    expect_mtx_error("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1.5\n",
                     CLOPS_I32, ":3: '1.5' is not an integer");
    expect_mtx_error("%%MatrixMarket matrix coordinate integer general\n1 1 2\n1 1 200\n1 1 100\n",
                     CLOPS_U8,
                     ":4: value 100 (summed with earlier entries) is out of the range of u8");
    expect_mtx_error("%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n1 2 1\n", CLOPS_F64,
                     ":3: entry (1, 2) is above the diagonal");
    expect_mtx_error("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n",
                     CLOPS_F64, ":3: entry (2, 2) is not below the diagonal");
    expect_mtx_error("%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n", CLOPS_F64,
                     ":2: a symmetric matrix must be square");
    expect_mtx_error("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", CLOPS_F64,
                     ":2: the size line implies 4 entries but the file has 3");
    expect_mtx_error("%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n", CLOPS_F64,
                     ":5: more entries than the 2 that the size implies on line 2");
    expect_mtx_error("%%MatrixMarket matrix array real general\n1 1\n1 2\n", CLOPS_F64,
                     ":3: expected 1 entry ('value'), found 2");
    expect_mtx_error("%%MatrixMarket matrix array real general\n1048576 1048576\n", CLOPS_F64,
                     ":2: 1048576 x 1048576 f64 is more than 2^40 bytes");
}
END_TEST

/* ---- Raw, CSV ------------------------------------------------------------------------------- */

static void raw_holds_the_elements_only(const char *path, const struct fmt_tensor *t,
                                        const char *what)
{
    (void)what;
    size_t size;
    free(slurp(path, &size));
    ck_assert_uint_eq(size, (size_t)(count_of(t->rank, t->shape) * host_dtype_size(t->dtype)));
}

static int read_raw(const char *path, struct fmt_tensor *t, struct fmt_tensor *back, char *err,
                    size_t size)
{
    return fmt_read(path, t->dtype, t->rank, t->shape, back, err, size);
}

START_TEST(test_raw_round_trips_every_dtype_and_shape)
{
    round_trip_every_case(&(struct round_trip){"raw", "t.bin", CLOPS_MAX_RANK, 0, fmt_write,
                                               raw_holds_the_elements_only, read_raw});
}
END_TEST

START_TEST(test_raw_of_the_wrong_size_states_both_sizes)
{
    write_bytes(in_dir("r.bin"), (const char[80]){0}, 80);
    const int64_t shape[2] = {12, 7};
    struct fmt_tensor t;
    char err[512], want[600];
    ck_assert_int_eq(fmt_read_raw(in_dir("r.bin"), CLOPS_F64, 2, shape, &t, err, sizeof err), -1);
    assert_zeroed(&t);
    snprintf(want, sizeof want, "%s: the file has 80 bytes but 12 x 7 f64 needs exactly 672",
             in_dir("r.bin"));
    ck_assert_str_eq(err, want);
    const int64_t bad[1] = {-1};
    assert_failed(fmt_read_raw(in_dir("r.bin"), CLOPS_F64, 1, bad, &t, err, sizeof err), &t, err,
                  in_dir("r.bin"), "negative");
    assert_failed(fmt_read_raw(in_dir("r.bin"), 99, 2, shape, &t, err, sizeof err), &t, err,
                  in_dir("r.bin"), "dtype 99 is not a clops dtype");
}
END_TEST

/* Parses the CSV `path` back into doubles/integers and compares with `t` element by element. */
static void assert_csv_holds(const char *path, const struct fmt_tensor *t, int64_t rows,
                             int64_t cols, const char *what)
{
    char *text = slurp(path, NULL);
    char *line = text;
    for (int64_t i = 0; i < rows; i++) {
        char *end_of_line = strchr(line, '\n');
        ck_assert_msg(end_of_line != NULL, "%s: line %lld missing", what, (long long)i + 1);
        *end_of_line = '\0';
        char *p = line;
        for (int64_t j = 0; j < cols; j++) {
            char *end;
            const int64_t k = i * cols + j;
            if (t->dtype == CLOPS_F32 || t->dtype == CLOPS_F64) {
                double v = strtod(p, &end);
                double want =
                    t->dtype == CLOPS_F32 ? (double)((float *)t->data)[k] : ((double *)t->data)[k];
                if (t->dtype == CLOPS_F32)
                    v = (float)v;
                ck_assert_msg(memcmp(&v, &want, sizeof v) == 0,
                              "%s: (%lld, %lld) reads %.17g, "
                              "wrote %.17g",
                              what, (long long)i, (long long)j, v, want);
            } else {
                long long v = strtoll(p, &end, 10);
                long long want = t->dtype == CLOPS_I32   ? ((int32_t *)t->data)[k]
                                 : t->dtype == CLOPS_U32 ? ((uint32_t *)t->data)[k]
                                 : t->dtype == CLOPS_U8  ? ((uint8_t *)t->data)[k]
                                                         : ((int64_t *)t->data)[k];
                ck_assert_msg(v == want, "%s: (%lld, %lld) reads %lld, wrote %lld", what,
                              (long long)i, (long long)j, v, want);
            }
            ck_assert_msg(end != p && *end == (j + 1 < cols ? ',' : '\0'),
                          "%s: bad separator after (%lld, %lld)", what, (long long)i, (long long)j);
            p = end + 1;
        }
        line = end_of_line + 1;
    }
    ck_assert_msg(*line == '\0', "%s: text after the last row", what);
    free(text);
}

/* Rank 1 is one line; higher ranks have the last extent as columns. */
static void csv_rows_hold_the_values(const char *path, const struct fmt_tensor *t, const char *what)
{
    const int64_t cols = t->shape[t->rank - 1];
    assert_csv_holds(path, t, count_of(t->rank, t->shape) / cols, cols, what);
}

START_TEST(test_csv_rows_read_back_to_the_same_values)
{
    round_trip_every_case(&(struct round_trip){"csv", "t.CSV", CLOPS_MAX_RANK, 1, fmt_write,
                                               csv_rows_hold_the_values, NULL});
    const int32_t m[6] = {1, -2, 3, 4, 5, 2147483647};
    struct fmt_tensor t = {.dtype = CLOPS_I32, .rank = 2, .shape = {2, 3}, .data = (void *)m};
    char err[512];
    ck_assert_int_eq(fmt_write_csv(in_dir("m.csv"), &t, err, sizeof err), 0);
    char *text = slurp(in_dir("m.csv"), NULL);
    ck_assert_str_eq(text, "1,-2,3\n4,5,2147483647\n");
    free(text);
}
END_TEST

/* ---- PNG ------------------------------------------------------------------------------------ */

typedef int (*writer_fn)(const char *, const struct fmt_tensor *, char *, size_t);

/* Reads the PNG with libpng's simplified API, checks its format (no conversion happens when
 * the requested format is the file's own) and returns its pixels. */
static unsigned char *read_png(const char *path, uint32_t format, uint32_t width, uint32_t height)
{
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    ck_assert_msg(png_image_begin_read_from_file(&image, path) != 0, "%s: %s", path, image.message);
    ck_assert_uint_eq(image.format, format);
    ck_assert_uint_eq(image.width, width);
    ck_assert_uint_eq(image.height, height);
    unsigned char *pixels = malloc(PNG_IMAGE_SIZE(image));
    ck_assert_msg(png_image_finish_read(&image, NULL, pixels, 0, NULL) != 0, "%s: %s", path,
                  image.message);
    return pixels;
}

/* A random u8 image of `rank` (2: gray, 3: H x W x channels) written by `write` to `name` reads
 * back through libpng in `format`, byte for byte. */
static void expect_png_round_trip(writer_fn write, const char *name, int32_t rank,
                                  const int64_t *shape, uint32_t format)
{
    char err[512];
    struct fmt_tensor t = random_tensor(CLOPS_U8, rank, shape, 0);
    ck_assert_msg(write(in_dir(name), &t, err, sizeof err) == 0, "%s", err);
    unsigned char *pixels = read_png(in_dir(name), format, (uint32_t)shape[1], (uint32_t)shape[0]);
    ck_assert_mem_eq(pixels, t.data, (size_t)count_of(rank, shape));
    free(pixels);
    fmt_tensor_free(&t);
}

START_TEST(test_png_pixels_read_back_exactly)
{
    const int64_t rgba_shape[3] = {5, 7, 4}, rgb_shape[3] = {4, 9, 3}, gray_shape[2] = {6, 3};
    expect_png_round_trip(fmt_write, "rgba.png", 3, rgba_shape, PNG_FORMAT_RGBA);
    expect_png_round_trip(fmt_write_png, "rgb.png", 3, rgb_shape, PNG_FORMAT_RGB);
    expect_png_round_trip(fmt_write_png, "gray.png", 2, gray_shape, PNG_FORMAT_GRAY);

    /* u32 words: R in the low byte, A in the high byte. */
    const uint32_t words[6] = {0xff0000ffu, 0x80112233u, 0x00000000u,
                               0xffffffffu, 0x01020304u, 0xdeadbeefu};
    struct fmt_tensor packed = {
        .dtype = CLOPS_U32, .rank = 2, .shape = {2, 3}, .data = (void *)words};
    char err[512];
    ck_assert_msg(fmt_write_png(in_dir("words.png"), &packed, err, sizeof err) == 0, "%s", err);
    unsigned char *pixels = read_png(in_dir("words.png"), PNG_FORMAT_RGBA, 3, 2);
    for (int p = 0; p < 6; p++)
        for (int c = 0; c < 4; c++)
            ck_assert_uint_eq(pixels[4 * p + c], (words[p] >> (8 * c)) & 0xff);
    free(pixels);
}
END_TEST

static void expect_write_error(int rc, const char *err, const char *path, const char *expected)
{
    ck_assert_msg(rc == -1, "%s: write succeeded; expected \"%s\"", path, expected);
    ck_assert_msg(strstr(err, path) != NULL, "message \"%s\" does not name %s", err, path);
    ck_assert_msg(strstr(err, expected) != NULL, "message \"%s\" lacks \"%s\"", err, expected);
}

/* Writing t to path with `write` fails as expect_write_error expects. */
static void expect_write_fails(writer_fn write, const char *path, const struct fmt_tensor *t,
                               const char *expected)
{
    char err[512] = "";
    expect_write_error(write(path, t, err, sizeof err), err, path, expected);
}

START_TEST(test_png_rejects_other_shapes_and_dtypes_writing_nothing)
{
    static unsigned char zeros[64];
    const struct fmt_tensor bad[] = {
        {.dtype = CLOPS_U8, .rank = 3, .shape = {2, 2, 2}, .data = zeros},
        {.dtype = CLOPS_F32, .rank = 2, .shape = {2, 2}, .data = zeros},
        {.dtype = CLOPS_U32, .rank = 3, .shape = {2, 2, 4}, .data = zeros},
        {.dtype = CLOPS_U8, .rank = 1, .shape = {4}, .data = zeros},
        {.dtype = CLOPS_U8, .rank = 4, .shape = {1, 2, 2, 4}, .data = zeros},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_write_fails(fmt_write_png, in_dir("x.png"), &bad[i],
                           "as PNG; expected u8 H x W x 4 (RGBA)");
    const struct fmt_tensor empty = {.dtype = CLOPS_U8, .rank = 2, .shape = {0, 3}};
    expect_write_fails(fmt_write_png, in_dir("x.png"), &empty,
                       "height and width must be 1 to 2^31 - 1");
    expect_listing(dir, "");
}
END_TEST

/* ---- Atomic writes -------------------------------------------------------------------------- */

START_TEST(test_failed_write_leaves_the_destination_and_no_temporary_file)
{
    /* Files over 4 KiB fail with EFBIG (not a signal) once the temporary file exists. The
     * limit is lifted again before any assertion: Check reports results through a file. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit normal, limit;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &normal), 0);
    limit = normal;
    limit.rlim_cur = 4096;
    const int64_t big[2] = {300, 300}, image[3] = {100, 100, 4};
    struct fmt_tensor f64 = random_tensor(CLOPS_F64, 2, big, 1);
    struct fmt_tensor rgba = random_tensor(CLOPS_U8, 3, image, 0);
    const struct {
        const char *name;
        writer_fn write;
        const struct fmt_tensor *t;
    } cases[] = {
        {"out.npy", fmt_write_npy, &f64},  {"out.mtx", fmt_write_mtx, &f64},
        {"out.csv", fmt_write_csv, &f64},  {"out.bin", fmt_write_raw, &f64},
        {"out.png", fmt_write_png, &rgba}, {"out.raw", fmt_write, &f64},
    };
    char err[512], names[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_text(in_dir(cases[i].name), "old contents");
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &limit), 0);
        err[0] = '\0';
        const int rc = cases[i].write(in_dir(cases[i].name), cases[i].t, err, sizeof err);
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &normal), 0);
        expect_write_error(rc, err, in_dir(cases[i].name),
                           strcmp(cases[i].name, "out.png") == 0 ? "libpng" : "write error");
        char *text = slurp(in_dir(cases[i].name), NULL);
        ck_assert_str_eq(text, "old contents");
        free(text);
        list_dir(dir, names, sizeof names);
        ck_assert_msg(strstr(names, ".out") == NULL, "temporary file left: %s", names);
        remove(in_dir(cases[i].name));
        expect_listing(dir, "");
    }
    fmt_tensor_free(&f64);
    fmt_tensor_free(&rgba);
}
END_TEST

START_TEST(test_unwritable_destinations_fail_cleanly)
{
    const int64_t shape[1] = {3};
    struct fmt_tensor t = random_tensor(CLOPS_F32, 1, shape, 0);
    /* A parent that is a regular file. */
    write_text(in_dir("file"), "x");
    expect_write_fails(fmt_write_npy, at(1, "file/t.npy"), &t, "Not a directory");
    expect_write_fails(fmt_write_csv, at(1, "file/sub/t.csv"), &t, "cannot create directory");
    /* A destination that is a directory: the rename fails, the directory stays as it was. */
    ck_assert_int_eq(mkdir(in_dir("d.npy"), 0777), 0);
    expect_write_fails(fmt_write_npy, in_dir("d.npy"), &t, "cannot rename");
    expect_listing(dir, "d.npy file");
    expect_listing(in_dir("d.npy"), "");
    expect_write_fails(fmt_write_npy, at(1, "d.npy/"), &t, "names a directory");
    /* A directory without write permission (root writes anyway, so only for others). */
    if (geteuid() != 0) {
        ck_assert_int_eq(mkdir(in_dir("ro"), 0555), 0);
        expect_write_fails(fmt_write_npy, at(1, "ro/t.npy"), &t, "Permission denied");
        expect_listing(in_dir("ro"), "");
        chmod(in_dir("ro"), 0755);
    }
    /* Invalid tensors are refused before any file is made. */
    struct fmt_tensor rank0 = {.dtype = CLOPS_F32, .rank = 0, .data = t.data};
    expect_write_fails(fmt_write_npy, in_dir("z.npy"), &rank0, "rank 0; expected 1 to 4");
    struct fmt_tensor null = {.dtype = CLOPS_F32, .rank = 1, .shape = {3}};
    expect_write_fails(fmt_write_raw, in_dir("z.bin"), &null, "its data is NULL");
    const int64_t cube[3] = {2, 2, 2};
    struct fmt_tensor rank3 = random_tensor(CLOPS_F64, 3, cube, 1);
    expect_write_fails(fmt_write_mtx, in_dir("z.mtx"), &rank3, "the tensor has rank 3");
    expect_write_fails(fmt_write, in_dir("z.dat"), &t, "unknown file format");
    expect_listing(dir, geteuid() != 0 ? "d.npy file ro" : "d.npy file");
    fmt_tensor_free(&rank3);
    fmt_tensor_free(&t);
}
END_TEST

START_TEST(test_write_creates_parents_and_replaces_with_umask_mode)
{
    umask(027);
    const int64_t shape[2] = {2, 2};
    struct fmt_tensor t = random_tensor(CLOPS_I64, 2, shape, 0);
    char err[512];
    const char *path = at(1, "a/b/c/t.npy");
    write_text(in_dir("old.npy"), "old");
    ck_assert_msg(fmt_write(path, &t, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(fmt_write(in_dir("old.npy"), &t, err, sizeof err) == 0, "%s", err);
    expect_reads_back(path, 0, &t, "nested");
    expect_reads_back(in_dir("old.npy"), 0, &t, "replaced");
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0640);
    expect_listing(at(2, "a/b/c"), "t.npy");
    expect_listing(dir, "a old.npy");
    /* A relative path with no directory part. */
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_msg(fmt_write("here.csv", &t, err, sizeof err) == 0, "%s", err);
    expect_listing(".", "a here.csv old.npy");
    fmt_tensor_free(&t);
}
END_TEST

/* ---- Names ---------------------------------------------------------------------------------- */

START_TEST(test_kind_from_extension_ignoring_case)
{
    ck_assert_int_eq(fmt_kind_from_path("x.npy"), FMT_NPY);
    ck_assert_int_eq(fmt_kind_from_path("out/X.NPY"), FMT_NPY);
    ck_assert_int_eq(fmt_kind_from_path("a.b.Mtx"), FMT_MTX);
    ck_assert_int_eq(fmt_kind_from_path("x.bin"), FMT_RAW);
    ck_assert_int_eq(fmt_kind_from_path("x.RAW"), FMT_RAW);
    ck_assert_int_eq(fmt_kind_from_path("x.csv"), FMT_CSV);
    ck_assert_int_eq(fmt_kind_from_path("x.png"), FMT_PNG);
    ck_assert_int_eq(fmt_kind_from_path("x"), FMT_UNKNOWN);
    ck_assert_int_eq(fmt_kind_from_path("dir.npy/x"), FMT_UNKNOWN);
    ck_assert_int_eq(fmt_kind_from_path("x.npyz"), FMT_UNKNOWN);
    ck_assert_str_eq(fmt_kind_name(FMT_MTX), "mtx");
    ck_assert_str_eq(fmt_kind_name(FMT_RAW), "raw");
    ck_assert_str_eq(fmt_kind_name(FMT_UNKNOWN), "unknown");
    expect_read_error("x.csv", CLOPS_F32, "reading csv files is not supported");
    expect_read_error("x.txt", CLOPS_F32, "unknown file format");
}
END_TEST

/* ---- Hostile files and shapes -------------------------------------------------------------- */

/* Opening a FIFO for reading waits for a writer: every reader must refuse one at once, naming
 * what it is. The alarm turns a hang into a failure. */
START_TEST(test_fifo_input_is_refused_without_blocking)
{
    const char *names[] = {"p.npy", "p.mtx", "p.bin"};
    const int64_t shape[1] = {4};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ck_assert_int_eq(mkfifo(in_dir(names[i]), 0600), 0);
        struct fmt_tensor t;
        char err[512] = "";
        alarm(20);
        int rc = fmt_read(in_dir(names[i]), CLOPS_F64, 1, shape, &t, err, sizeof err);
        alarm(0);
        assert_failed(rc, &t, err, in_dir(names[i]), "is a FIFO (named pipe), not a regular file");
    }
}
END_TEST

/* A 0 x 2.2e12 matrix has no entry: writing it must not walk 2.2e12 empty columns. */
START_TEST(test_mtx_of_no_rows_and_huge_columns_is_written_at_once)
{
    struct fmt_tensor t = {.dtype = CLOPS_F64, .rank = 2, .shape = {0, INT64_C(2200000000000)}};
    char err[512] = "";
    alarm(20);
    int rc = fmt_write_mtx(in_dir("wide.mtx"), &t, err, sizeof err);
    alarm(0);
    ck_assert_msg(rc == 0, "%s", err);
    char *text = slurp(in_dir("wide.mtx"), NULL);
    ck_assert_str_eq(text, "%%MatrixMarket matrix array real general\n0 2200000000000\n");
    free(text);
}
END_TEST

/* 60 bytes of coordinate file can declare a 30000 x 30000 dense matrix (7.2 GB): refused by
 * the default limit, or by a caller's, before anything is allocated; the message says which. */
START_TEST(test_reads_over_the_limit_are_refused_before_allocating)
{
    const char *text = "%%MatrixMarket matrix coordinate real general\n30000 30000 1\n1 1 1\n";
    ck_assert_uint_le(strlen(text), 70);
    write_text(in_dir("big.mtx"), text);
    struct fmt_tensor t;
    char err[512] = "";
    int rc = fmt_read_mtx(in_dir("big.mtx"), CLOPS_F64, &t, err, sizeof err);
    assert_failed(rc, &t, err, in_dir("big.mtx"),
                  ":2: 30000 x 30000 f64 would take 7200000000 bytes, more than 4294967296: "
                  "the default limit");
    const struct fmt_read_limit small = {80000, "the declared 100 x 100"};
    rc = fmt_read_limited(in_dir("big.mtx"), CLOPS_F64, 0, NULL, &small, &t, err, sizeof err);
    assert_failed(rc, &t, err, in_dir("big.mtx"), "more than 80000: the declared 100 x 100");
    /* A size line that announces more entries than the file's bytes could hold. */
    write_text(in_dir("many.mtx"), "%%MatrixMarket matrix array real general\n1000 1000\n1\n");
    rc = fmt_read_mtx(in_dir("many.mtx"), CLOPS_F64, &t, err, sizeof err);
    assert_failed(rc, &t, err, in_dir("many.mtx"),
                  ":2: the size line implies 1000000 entries but the whole file has");
    /* .npy and raw files hold their data, but the limit applies to them too. */
    const int64_t shape[2] = {100, 101};
    struct fmt_tensor npy = random_tensor(CLOPS_F64, 2, shape, 1);
    ck_assert_int_eq(fmt_write_npy(in_dir("a.npy"), &npy, err, sizeof err), 0);
    ck_assert_int_eq(fmt_write_raw(in_dir("a.bin"), &npy, err, sizeof err), 0);
    rc = fmt_read_limited(in_dir("a.npy"), 0, 0, NULL, &small, &t, err, sizeof err);
    assert_failed(rc, &t, err, in_dir("a.npy"), "100 x 101 f64 would take 80800 bytes");
    rc = fmt_read_limited(in_dir("a.bin"), CLOPS_F64, 2, shape, &small, &t, err, sizeof err);
    assert_failed(rc, &t, err, in_dir("a.bin"), "100 x 101 f64 would take 80800 bytes");
    const struct fmt_read_limit enough = {80800, "enough"};
    ck_assert_int_eq(fmt_read_limited(in_dir("a.npy"), 0, 0, NULL, &enough, &t, err, sizeof err),
                     0);
    assert_same(&t, &npy, "a.npy");
    fmt_tensor_free(&t);
    fmt_tensor_free(&npy);
}
END_TEST

/* A pid that no process has: a child's, after it has been reaped. */
static pid_t dead_pid(void)
{
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    return child;
}

/* A writer's temporary file as formats.c names it, last written `age_s` seconds ago; its name
 * (without the directory) goes to `out`. */
static void make_temp(char *out, size_t size, const char *name, long pid, const char *suffix,
                      int age_s)
{
    char path[600];
    snprintf(out, size, ".%s.%ld.%s", name, pid, suffix);
    snprintf(path, sizeof path, "%s/%s", dir, out);
    write_text(path, "partial");
    struct timeval times[2];
    gettimeofday(&times[0], NULL);
    times[0].tv_sec -= age_s;
    times[1] = times[0];
    ck_assert_int_eq(utimes(path, times), 0);
}

/* kill -9 between mkstemp and rename leaves ".<name>.<pid>.XXXXXX". The next write of the same
 * output removes those whose writer is gone and that are over a minute old, and nothing else:
 * not a live writer's, not a fresh one's (another machine's writer), not another output's. */
START_TEST(test_write_removes_temporary_files_of_killed_writers)
{
    const long gone = dead_pid();
    char stale[128], kept[4][128];
    make_temp(stale, sizeof stale, "out.npy", gone, "AbC123", 3600);
    make_temp(kept[0], sizeof kept[0], "out.npy", (long)getppid(), "AbC123", 3600); /* alive */
    make_temp(kept[1], sizeof kept[1], "out.npy", gone, "Fresh1", 0);      /* too fresh to judge */
    make_temp(kept[2], sizeof kept[2], "other.npy", gone, "AbC123", 3600); /* another output */
    snprintf(kept[3], sizeof kept[3], ".out.npy.notapid.AbC123");
    write_text(in_dir(kept[3]), "not ours");
    const int64_t shape[1] = {5};
    struct fmt_tensor t = random_tensor(CLOPS_F32, 1, shape, 0);
    char err[512], names[1024];
    ck_assert_int_eq(fmt_write_npy(in_dir("out.npy"), &t, err, sizeof err), 0);
    list_dir(dir, names, sizeof names);
    ck_assert_msg(strstr(names, stale) == NULL, "%s was not removed: %s", stale, names);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(strstr(names, kept[i]) != NULL, "%s was removed: %s", kept[i], names);
    ck_assert_ptr_nonnull(strstr(names, " out.npy"));
    fmt_tensor_free(&t);
}
END_TEST

static const struct cli_test tests[] = {
    CLI_TEST(test_npy_round_trips_every_dtype_and_shape),
    CLI_TEST(test_npy_empty_tensor_round_trips),
    CLI_TEST(test_npy_fortran_order_is_transposed_to_row_major),
    CLI_TEST(test_npy_versions_2_and_3_are_read),
    CLI_TEST(test_npy_header_dict_parsed_in_any_spacing_and_order),
    CLI_TEST(test_npy_malformed_files_are_rejected_with_the_fault_named),
    CLI_TEST(test_messages_quoting_file_bytes_have_no_control_characters),
    CLI_TEST(test_read_npy_checks_the_wanted_dtype),
    CLI_TEST(test_mtx_round_trips_every_dtype_in_ranks_1_and_2),
    CLI_TEST(test_mtx_written_column_major_with_the_right_banner),
    CLI_TEST(test_mtx_coordinate_general_expands_and_sums_duplicates),
    CLI_TEST(test_mtx_coordinate_symmetric_and_skew_are_mirrored),
    CLI_TEST(test_mtx_pattern_reads_as_ones),
    CLI_TEST(test_mtx_array_formats_fill_column_by_column),
    CLI_TEST(test_mtx_malformed_files_name_the_line),
    CLI_TEST(test_raw_round_trips_every_dtype_and_shape),
    CLI_TEST(test_raw_of_the_wrong_size_states_both_sizes),
    CLI_TEST(test_csv_rows_read_back_to_the_same_values),
    CLI_TEST(test_png_pixels_read_back_exactly),
    CLI_TEST(test_png_rejects_other_shapes_and_dtypes_writing_nothing),
    CLI_TEST(test_failed_write_leaves_the_destination_and_no_temporary_file),
    CLI_TEST(test_unwritable_destinations_fail_cleanly),
    CLI_TEST(test_write_creates_parents_and_replaces_with_umask_mode),
    CLI_TEST(test_kind_from_extension_ignoring_case),
    CLI_TEST(test_fifo_input_is_refused_without_blocking),
    CLI_TEST(test_mtx_of_no_rows_and_huge_columns_is_written_at_once),
    CLI_TEST(test_reads_over_the_limit_are_refused_before_allocating),
    CLI_TEST(test_write_removes_temporary_files_of_killed_writers),
};
CLI_SUITE("formats", "formats", make_dir, remove_dir, tests);
