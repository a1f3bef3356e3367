/* formats_npy.c — NumPy .npy files: versions 1.0, 2.0 and 3.0 read (the header dict parsed, a
 * Fortran-order array transposed), version 1.0 written as NumPy writes it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "formats_internal.h"
#include "util.h"

/* A NumPy header is rarely over a few hundred bytes; NumPy itself refuses more than 10000 by
 * default. A larger one is a corrupt length, not a header worth reading. */
enum { NPY_HEADER_MAX = 1 << 20 };

/* The format: "\x93NUMPY", major and minor version bytes, the header length (2 bytes in 1.0,
 * 4 in 2.0 and 3.0, little-endian), then the header: a Python dict literal such as
 * "{'descr': '<f8', 'fortran_order': False, 'shape': (12, 7), }" padded with spaces and ending
 * in '\n', then the data. 3.0 only allows UTF-8 in the header, which changes nothing for the
 * ASCII keys and values accepted here. */
static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
    const char *descr;
    int32_t dtype;
} npy_descrs[] = {
    {"<f4", CLOPS_F32}, {"<f8", CLOPS_F64}, {"<i4", CLOPS_I32},
    {"<u4", CLOPS_U32}, {"|u1", CLOPS_U8},  {"<i8", CLOPS_I64},
};
enum { NPY_DESCR_COUNT = (int)(sizeof npy_descrs / sizeof npy_descrs[0]) };
static const char npy_descr_list[] = "'<f4', '<f8', '<i4', '<u4', '|u1' or '<i8'";

struct npy_header {
    int32_t dtype;
    int fortran_order;
    int32_t rank;
    int64_t shape[CLOPS_MAX_RANK];
};

/* A cursor over the header text, for the dict parser. */
struct cursor {
    const char *start, *p, *end;
};

static void skip_space(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int take(struct cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* 1 if the next character after blanks is `ch`, without taking it. */
static int peek(struct cursor *c, char ch)
{
    skip_space(c);
    return c->p < c->end && *c->p == ch;
}

static int take_word(struct cursor *c, const char *word)
{
    skip_space(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, word, n) == 0) {
        c->p += n;
        return 1;
    }
    return 0;
}

/* A quoted Python string without escapes ('...' or "..."), into `out`. */
static int take_string(struct cursor *c, char *out, size_t size)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return 0;
    const char quote = *c->p;
    const char *close = memchr(c->p + 1, quote, (size_t)(c->end - c->p - 1));
    if (close == NULL || (size_t)(close - c->p - 1) >= size ||
        memchr(c->p, '\\', (size_t)(close - c->p)))
        return 0;
    memcpy(out, c->p + 1, (size_t)(close - c->p - 1));
    out[close - c->p - 1] = '\0';
    c->p = close + 1;
    return 1;
}

static int header_error(struct cursor *c, const char *expected, char *why, size_t whysize)
{
    return fmt_fail(why, whysize, "bad header: expected %s at byte %d of the dict", expected,
                    (int)(c->p - c->start));
}

/* A non-negative integer; Python 2's NumPy wrote longs as "12L". */
static int take_extent(struct cursor *c, int64_t *value)
{
    skip_space(c);
    int64_t v = 0;
    const char *first = c->p;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++) {
        if (v > (INT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (*c->p - '0');
    }
    if (c->p == first)
        return 0;
    if (c->p < c->end && *c->p == 'L')
        c->p++;
    *value = v;
    return 1;
}

/* "()", "(5,)", "(5)", "(12, 7)", "(2, 3, 4,)". */
static int parse_shape(struct cursor *c, struct npy_header *h, char *why, size_t whysize)
{
    if (!take(c, '('))
        return header_error(c, "'(' to open the shape", why, whysize);
    int rank = 0;
    while (!take(c, ')')) {
        int64_t extent;
        if (!take_extent(c, &extent))
            return header_error(c, "a non-negative integer extent or ')'", why, whysize);
        if (rank == CLOPS_MAX_RANK)
            return fmt_fail(why, whysize,
                            "shape has more than %d dimensions; clops tensors have at "
                            "most %d",
                            CLOPS_MAX_RANK, CLOPS_MAX_RANK);
        h->shape[rank++] = extent;
        if (!take(c, ',') && !peek(c, ')'))
            return header_error(c, "',' or ')' in the shape", why, whysize);
    }
    /* A 0-d array (a NumPy scalar) is one element. */
    h->rank = rank > 0 ? rank : 1;
    if (rank == 0)
        h->shape[0] = 1;
    return 0;
}

static int parse_descr(struct cursor *c, struct npy_header *h, char *why, size_t whysize)
{
    char descr[32];
    if (!take_string(c, descr, sizeof descr))
        return fmt_fail(why, whysize,
                        "bad header: 'descr' is not a simple type string such as "
                        "'<f8' (structured dtypes are not supported)");
    for (int i = 0; i < NPY_DESCR_COUNT; i++)
        if (strcmp(descr, npy_descrs[i].descr) == 0) {
            h->dtype = npy_descrs[i].dtype;
            return 0;
        }
    return fmt_fail(why, whysize, "unsupported descr '%s'; expected %s", descr, npy_descr_list);
}

/* The header dict: exactly the keys descr, fortran_order and shape, in any order, with any
 * spacing and an optional trailing comma. */
static int parse_npy_header(const char *text, size_t length, struct npy_header *h, char *why,
                            size_t whysize)
{
    static const char *const keys[] = {"descr", "fortran_order", "shape"};
    struct cursor c = {text, text, text + length};
    int seen[3] = {0, 0, 0};
    if (!take(&c, '{'))
        return header_error(&c, "'{'", why, whysize);
    while (!take(&c, '}')) {
        char key[32];
        if (!take_string(&c, key, sizeof key))
            return header_error(&c, "a quoted key or '}'", why, whysize);
        int k = 0;
        while (k < 3 && strcmp(key, keys[k]) != 0)
            k++;
        if (k == 3)
            return fmt_fail(why, whysize,
                            "bad header: unknown key '%s' (expected descr, "
                            "fortran_order and shape)",
                            key);
        if (seen[k]++)
            return fmt_fail(why, whysize, "bad header: key '%s' appears twice", key);
        if (!take(&c, ':'))
            return header_error(&c, "':' after the key", why, whysize);
        if (k == 0 && parse_descr(&c, h, why, whysize) != 0)
            return -1;
        if (k == 1) {
            h->fortran_order = take_word(&c, "True");
            if (!h->fortran_order && !take_word(&c, "False"))
                return header_error(&c, "True or False for 'fortran_order'", why, whysize);
        }
        if (k == 2 && parse_shape(&c, h, why, whysize) != 0)
            return -1;
        if (!take(&c, ',') && !peek(&c, '}'))
            return header_error(&c, "',' or '}'", why, whysize);
    }
    for (int k = 0; k < 3; k++)
        if (!seen[k])
            return fmt_fail(why, whysize, "bad header: no '%s' key", keys[k]);
    skip_space(&c);
    if (c.p != c.end)
        return fmt_fail(why, whysize, "bad header: text after the dict's closing '}'");
    return 0;
}

/* The magic, the version and the header, leaving `f` at the first byte of data; `*offset` is
 * where that is. */
static int read_npy_preamble(FILE *f, int64_t size, struct npy_header *h, int64_t *offset,
                             const char *path, char *err, size_t errsize)
{
    unsigned char lead[12];
    if (size < 10 || fmt_read_exact(f, lead, 10, path, err, errsize) != 0 ||
        memcmp(lead, npy_magic, sizeof npy_magic) != 0)
        return fmt_fail(err, errsize, "%s: not a NumPy file (no \\x93NUMPY magic at the start)",
                        path);
    const int major = lead[6], minor = lead[7];
    if (major < 1 || major > 3 || minor != 0)
        return fmt_fail(err, errsize,
                        "%s: unsupported .npy format version %d.%d; expected 1.0, 2.0 "
                        "or 3.0",
                        path, major, minor);
    uint32_t length = (uint32_t)lead[8] | (uint32_t)lead[9] << 8;
    *offset = 10;
    if (major > 1) {
        if (size < 12 || fmt_read_exact(f, lead + 10, 2, path, err, errsize) != 0)
            return fmt_fail(err, errsize, "%s: truncated: the file ends inside the header length",
                            path);
        length |= (uint32_t)lead[10] << 16 | (uint32_t)lead[11] << 24;
        *offset = 12;
    }
    if (length > NPY_HEADER_MAX || *offset + (int64_t)length > size)
        return fmt_fail(err, errsize,
                        "%s: truncated: the header is %lu bytes long but the file has "
                        "%lld after the preamble",
                        path, (unsigned long)length, (long long)(size - *offset));
    char *text = malloc(length + 1u);
    if (text == NULL)
        return fmt_fail(err, errsize, "%s: out of memory", path);
    int rc = fmt_read_exact(f, text, length, path, err, errsize);
    char why[256];
    if (rc == 0 && (rc = parse_npy_header(text, length, h, why, sizeof why)) != 0)
        fmt_fail(err, errsize, "%s: %s", path, why);
    free(text);
    *offset += length;
    return rc;
}

/* Row-major copy of a column-major (Fortran order) array: walks the destination in order and
 * steps the source by its column-major strides. */
static void fortran_to_c_order(unsigned char *dst, const unsigned char *src, int32_t rank,
                               const int64_t *shape, int64_t elements, size_t esize)
{
    int64_t index[CLOPS_MAX_RANK] = {0}, stride[CLOPS_MAX_RANK];
    int64_t s = 1;
    for (int32_t a = 0; a < rank; a++) {
        stride[a] = s;
        s *= shape[a];
    }
    int64_t from = 0;
    for (int64_t k = 0; k < elements; k++) {
        memcpy(dst + (size_t)k * esize, src + (size_t)from * esize, esize);
        for (int32_t a = rank - 1; a >= 0; a--) {
            from += stride[a];
            if (++index[a] < shape[a])
                break;
            from -= stride[a] * shape[a];
            index[a] = 0;
        }
    }
}

static int npy_to_row_major(struct fmt_tensor *t, int64_t elements, int64_t bytes, const char *path,
                            char *err, size_t errsize)
{
    if (t->rank < 2 || elements == 0)
        return 0;
    unsigned char *rows = malloc((size_t)bytes);
    if (rows == NULL)
        return fmt_fail(err, errsize, "%s: out of memory for %lld bytes", path, (long long)bytes);
    fortran_to_c_order(rows, t->data, t->rank, t->shape, elements,
                       (size_t)host_dtype_size(t->dtype));
    free(t->data);
    t->data = rows;
    return 0;
}

int fmt_read_npy_limited(const char *path, const struct fmt_read_limit *limit,
                         struct fmt_tensor *out, char *err, size_t errsize)
{
    memset(out, 0, sizeof *out);
    int64_t size = 0, offset = 0, elements = 0, bytes = 0;
    FILE *f = fmt_open_input(path, &size, err, errsize);
    if (f == NULL)
        return -1;
    struct npy_header h = {0};
    char why[256];
    int rc = read_npy_preamble(f, size, &h, &offset, path, err, errsize);
    if (rc == 0 &&
        (rc = fmt_tensor_size(h.dtype, h.rank, h.shape, &elements, &bytes, why, sizeof why)) != 0)
        fmt_fail(err, errsize, "%s: %s", path, why);
    if (rc == 0 && size - offset != bytes) {
        fmt_describe(why, sizeof why, h.dtype, h.rank, h.shape);
        rc = fmt_fail(err, errsize,
                      "%s: %s: the header says %s (%lld bytes of data) but the file has %lld", path,
                      size - offset < bytes ? "truncated" : "bytes after the data", why,
                      (long long)bytes, (long long)(size - offset));
    }
    /* The data is in the file, so `bytes` is at most its size; the limit still applies. */
    if (rc == 0)
        rc = fmt_check_limit(limit, bytes, h.dtype, h.rank, h.shape, path, 0, err, errsize);
    if (rc == 0) {
        out->dtype = h.dtype;
        out->rank = h.rank;
        memcpy(out->shape, h.shape, sizeof h.shape);
        rc = fmt_read_elements(f, out, elements, bytes, path, err, errsize);
    }
    if (rc == 0 && h.fortran_order)
        rc = npy_to_row_major(out, elements, bytes, path, err, errsize);
    fclose(f);
    if (rc != 0)
        fmt_tensor_free(out);
    return rc;
}

int fmt_read_npy(const char *path, struct fmt_tensor *out, char *err, size_t errsize)
{
    return fmt_read_npy_limited(path, &fmt_default_limit, out, err, errsize);
}

/* ---- Writing --------------------------------------------------------------------------------- */

static int emit_npy(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                    size_t whysize)
{
    const char *descr = NULL;
    for (int i = 0; i < NPY_DESCR_COUNT; i++)
        if (npy_descrs[i].dtype == t->dtype)
            descr = npy_descrs[i].descr;
    char shape[128] = "";
    for (int32_t a = 0; a < t->rank; a++) {
        char extent[24];
        snprintf(extent, sizeof extent, "%lld", (long long)t->shape[a]);
        host_append(shape, sizeof shape, ", ", extent);
    }
    char dict[256];
    int n =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s%s), }",
                 descr, shape, t->rank == 1 ? "," : "");
    /* NumPy pads the header with spaces so that the data starts at a multiple of 64 bytes. */
    const int total = 10 + n + 1;
    const int header_length = n + (64 - total % 64) % 64 + 1;
    unsigned char preamble[10];
    memcpy(preamble, npy_magic, sizeof npy_magic);
    preamble[6] = 1;
    preamble[7] = 0;
    preamble[8] = (unsigned char)(header_length & 0xff);
    preamble[9] = (unsigned char)(header_length >> 8);
    fwrite(preamble, 1, sizeof preamble, f);
    fprintf(f, "%s%*s\n", dict, header_length - n - 1, "");
    return fmt_emit_elements(f, t, elements, why, whysize);
}

int fmt_write_npy(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    return fmt_write_atomic(path, t, emit_npy, err, errsize);
}
