/* formats.c — tensors to and from files: NumPy .npy, Matrix Market .mtx, raw little-endian
 * binary, CSV and PNG. Readers check everything a file claims before trusting it; writers
 * replace the destination atomically. Nothing here prints or exits: errors go to the caller. */
#include "formats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Files are little-endian whatever the host; on a big-endian one each element's bytes are
 * reversed on the way in and out. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
enum { HOST_BIG_ENDIAN = 1 };
#else
enum { HOST_BIG_ENDIAN = 0 };
#endif

/* A NumPy header is rarely over a few hundred bytes; NumPy itself refuses more than 10000 by
 * default. A larger one is a corrupt length, not a header worth reading. */
enum { NPY_HEADER_MAX = 1 << 20 };

static int fail(char *err, size_t errsize, const char *format, ...) HOST_PRINTF(3, 4);

/* Writes the message and returns -1, so that error paths read `return fail(...)`. Messages
 * quote what a file holds (a descr, a token), which may be any bytes: control characters become
 * '?', so that the message stays one line and cannot drive a terminal. */
static int fail(char *err, size_t errsize, const char *format, ...)
{
    if (err != NULL && errsize > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(err, errsize, format, args);
        va_end(args);
        for (unsigned char *c = (unsigned char *)err; *c != '\0'; c++)
            if (*c < 0x20 || *c == 0x7f)
                *c = '?';
    }
    return -1;
}

void fmt_tensor_free(struct fmt_tensor *t)
{
    free(t->data);
    memset(t, 0, sizeof *t);
}

/* ---- Names and sizes ------------------------------------------------------------------------- */

static const struct {
    const char *extension;
    enum fmt_kind kind;
} extensions[] = {
    {"npy", FMT_NPY}, {"mtx", FMT_MTX}, {"bin", FMT_RAW},
    {"raw", FMT_RAW}, {"csv", FMT_CSV}, {"png", FMT_PNG},
};

enum fmt_kind fmt_kind_from_path(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash != NULL ? slash + 1 : path, '.');
    if (dot == NULL)
        return FMT_UNKNOWN;
    for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++)
        if (strcasecmp(dot + 1, extensions[i].extension) == 0)
            return extensions[i].kind;
    return FMT_UNKNOWN;
}

const char *fmt_kind_name(enum fmt_kind kind)
{
    switch (kind) {
    case FMT_NPY: return "npy";
    case FMT_MTX: return "mtx";
    case FMT_RAW: return "raw";
    case FMT_CSV: return "csv";
    case FMT_PNG: return "png";
    default: return "unknown";
    }
}

static int dtype_is_integer(int32_t dtype)
{
    return dtype == CLOPS_I32 || dtype == CLOPS_U32 || dtype == CLOPS_U8 || dtype == CLOPS_I64;
}

/* "12 x 7 f64", for messages. */
static void describe(char *out, size_t size, int32_t dtype, int32_t rank, const int64_t *shape)
{
    out[0] = '\0';
    for (int32_t a = 0; a < rank; a++) {
        char extent[24];
        snprintf(extent, sizeof extent, "%lld", (long long)shape[a]);
        host_append(out, size, " x ", extent);
    }
    host_append(out, size, " ", host_dtype_name(dtype));
}

/* Elements and bytes of a tensor, or -1 with the reason in `why`: an unknown dtype, a rank
 * outside 1 .. CLOPS_MAX_RANK, a negative extent, or more than FMT_MAX_BYTES. */
static int tensor_size(int32_t dtype, int32_t rank, const int64_t *shape, int64_t *elements,
                       int64_t *bytes, char *why, size_t whysize)
{
    const int64_t esize = host_dtype_size(dtype);
    if (esize == 0)
        return fail(why, whysize, "dtype %d is not a clops dtype", (int)dtype);
    if (rank < 1 || rank > CLOPS_MAX_RANK)
        return fail(why, whysize, "rank %d; expected 1 to %d", (int)rank, CLOPS_MAX_RANK);
    int64_t n = 1;
    for (int32_t a = 0; a < rank; a++) {
        if (shape[a] < 0)
            return fail(why, whysize, "extent %lld of dimension %d is negative",
                        (long long)shape[a], (int)a);
        if (shape[a] > 0 && n > FMT_MAX_BYTES / esize / shape[a]) {
            char text[128];
            describe(text, sizeof text, dtype, rank, shape);
            return fail(why, whysize, "%s is more than 2^40 bytes", text);
        }
        n *= shape[a];
    }
    *elements = n;
    *bytes = n * esize;
    return 0;
}

/* Reverses each element's bytes (big-endian hosts only). */
static void swap_elements(unsigned char *p, int64_t elements, int64_t esize)
{
    for (int64_t e = 0; e < elements; e++, p += esize)
        for (int64_t lo = 0, hi = esize - 1; lo < hi; lo++, hi--) {
            unsigned char b = p[lo];
            p[lo] = p[hi];
            p[hi] = b;
        }
}

/* ---- Reading files --------------------------------------------------------------------------- */

/* "a FIFO (named pipe)", "a directory", ...: what a file that is not a regular one is. */
static const char *file_type_name(mode_t mode)
{
    return S_ISFIFO(mode)   ? "a FIFO (named pipe)"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

FILE *fmt_open_input(const char *path, int64_t *size, char *err, size_t errsize)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. The
     * type is checked on the opened descriptor, so nothing can swap the file in between. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fail(err, errsize, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fail(err, errsize, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        fail(err, errsize, "%s: is %s, not a regular file; only regular files are read", path,
             file_type_name(st.st_mode));
        close(fd);
        return NULL;
    }
    int flags = fcntl(fd, F_GETFL);
    FILE *f = flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL) {
        fail(err, errsize, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    *size = (int64_t)st.st_size;
    return f;
}

/* The default limit's reason, for messages. */
static const struct fmt_read_limit default_limit = {
    FMT_READ_MAX_BYTES, "the default limit for a tensor read from a file (4 GiB)"};

/* Refuses, before anything is allocated, a tensor of `bytes` over the read limit; `line` is the
 * line that declares the shape, 0 for none. */
static int check_limit(const struct fmt_read_limit *limit, int64_t bytes, int32_t dtype,
                       int32_t rank, const int64_t *shape, const char *path, int line, char *err,
                       size_t errsize)
{
    if (bytes <= limit->max_bytes)
        return 0;
    char text[128], where[24] = "";
    describe(text, sizeof text, dtype, rank, shape);
    if (line > 0)
        snprintf(where, sizeof where, ":%d", line);
    return fail(err, errsize, "%s%s: %s would take %lld bytes, more than %lld: %s", path, where,
                text, (long long)bytes, (long long)limit->max_bytes, limit->reason);
}

static int read_exact(FILE *f, void *buffer, int64_t bytes, const char *path, char *err,
                      size_t errsize)
{
    if (bytes > 0 && fread(buffer, 1, (size_t)bytes, f) != (size_t)bytes)
        return fail(err, errsize, "%s: read error: %s", path,
                    ferror(f) ? strerror(errno) : "the file shrank while being read");
    return 0;
}

/* Reads `bytes` of little-endian elements from where `f` stands into a new out->data. */
static int read_elements(FILE *f, struct fmt_tensor *out, int64_t elements, int64_t bytes,
                         const char *path, char *err, size_t errsize)
{
    out->data = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (out->data == NULL)
        return fail(err, errsize, "%s: out of memory for %lld bytes", path, (long long)bytes);
    if (read_exact(f, out->data, bytes, path, err, errsize) != 0)
        return -1;
    if (HOST_BIG_ENDIAN)
        swap_elements(out->data, elements, host_dtype_size(out->dtype));
    return 0;
}

/* The whole file as a NUL-terminated string. */
static char *read_text(const char *path, char *err, size_t errsize)
{
    int64_t size = 0;
    FILE *f = fmt_open_input(path, &size, err, errsize);
    if (f == NULL)
        return NULL;
    char *text = size < FMT_MAX_BYTES ? malloc((size_t)size + 1) : NULL;
    if (text == NULL)
        fail(err, errsize, "%s: out of memory for %lld bytes", path, (long long)size);
    else if (read_exact(f, text, size, path, err, errsize) != 0) {
        free(text);
        text = NULL;
    } else if (memchr(text, '\0', (size_t)size) != NULL) {
        fail(err, errsize, "%s: not a text file (it holds a NUL byte)", path);
        free(text);
        text = NULL;
    } else {
        text[size] = '\0';
    }
    fclose(f);
    return text;
}

/* ---- NumPy .npy ------------------------------------------------------------------------------ */

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
    return fail(why, whysize, "bad header: expected %s at byte %d of the dict", expected,
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
            return fail(why, whysize,
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
        return fail(why, whysize,
                    "bad header: 'descr' is not a simple type string such as "
                    "'<f8' (structured dtypes are not supported)");
    for (int i = 0; i < NPY_DESCR_COUNT; i++)
        if (strcmp(descr, npy_descrs[i].descr) == 0) {
            h->dtype = npy_descrs[i].dtype;
            return 0;
        }
    return fail(why, whysize, "unsupported descr '%s'; expected %s", descr, npy_descr_list);
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
            return fail(why, whysize,
                        "bad header: unknown key '%s' (expected descr, "
                        "fortran_order and shape)",
                        key);
        if (seen[k]++)
            return fail(why, whysize, "bad header: key '%s' appears twice", key);
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
            return fail(why, whysize, "bad header: no '%s' key", keys[k]);
    skip_space(&c);
    if (c.p != c.end)
        return fail(why, whysize, "bad header: text after the dict's closing '}'");
    return 0;
}

/* The magic, the version and the header, leaving `f` at the first byte of data; `*offset` is
 * where that is. */
static int read_npy_preamble(FILE *f, int64_t size, struct npy_header *h, int64_t *offset,
                             const char *path, char *err, size_t errsize)
{
    unsigned char lead[12];
    if (size < 10 || read_exact(f, lead, 10, path, err, errsize) != 0 ||
        memcmp(lead, npy_magic, sizeof npy_magic) != 0)
        return fail(err, errsize, "%s: not a NumPy file (no \\x93NUMPY magic at the start)", path);
    const int major = lead[6], minor = lead[7];
    if (major < 1 || major > 3 || minor != 0)
        return fail(err, errsize,
                    "%s: unsupported .npy format version %d.%d; expected 1.0, 2.0 "
                    "or 3.0",
                    path, major, minor);
    uint32_t length = (uint32_t)lead[8] | (uint32_t)lead[9] << 8;
    *offset = 10;
    if (major > 1) {
        if (size < 12 || read_exact(f, lead + 10, 2, path, err, errsize) != 0)
            return fail(err, errsize, "%s: truncated: the file ends inside the header length",
                        path);
        length |= (uint32_t)lead[10] << 16 | (uint32_t)lead[11] << 24;
        *offset = 12;
    }
    if (length > NPY_HEADER_MAX || *offset + (int64_t)length > size)
        return fail(err, errsize,
                    "%s: truncated: the header is %lu bytes long but the file has "
                    "%lld after the preamble",
                    path, (unsigned long)length, (long long)(size - *offset));
    char *text = malloc(length + 1u);
    if (text == NULL)
        return fail(err, errsize, "%s: out of memory", path);
    int rc = read_exact(f, text, length, path, err, errsize);
    char why[256];
    if (rc == 0 && (rc = parse_npy_header(text, length, h, why, sizeof why)) != 0)
        fail(err, errsize, "%s: %s", path, why);
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
        return fail(err, errsize, "%s: out of memory for %lld bytes", path, (long long)bytes);
    fortran_to_c_order(rows, t->data, t->rank, t->shape, elements,
                       (size_t)host_dtype_size(t->dtype));
    free(t->data);
    t->data = rows;
    return 0;
}

static int read_npy(const char *path, const struct fmt_read_limit *limit, struct fmt_tensor *out,
                    char *err, size_t errsize)
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
        (rc = tensor_size(h.dtype, h.rank, h.shape, &elements, &bytes, why, sizeof why)) != 0)
        fail(err, errsize, "%s: %s", path, why);
    if (rc == 0 && size - offset != bytes) {
        describe(why, sizeof why, h.dtype, h.rank, h.shape);
        rc = fail(err, errsize,
                  "%s: %s: the header says %s (%lld bytes of data) but the file has %lld", path,
                  size - offset < bytes ? "truncated" : "bytes after the data", why,
                  (long long)bytes, (long long)(size - offset));
    }
    /* The data is in the file, so `bytes` is at most its size; the limit still applies. */
    if (rc == 0)
        rc = check_limit(limit, bytes, h.dtype, h.rank, h.shape, path, 0, err, errsize);
    if (rc == 0) {
        out->dtype = h.dtype;
        out->rank = h.rank;
        memcpy(out->shape, h.shape, sizeof h.shape);
        rc = read_elements(f, out, elements, bytes, path, err, errsize);
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
    return read_npy(path, &default_limit, out, err, errsize);
}

/* ---- Matrix Market .mtx ---------------------------------------------------------------------- */

/* The format (math.nist.gov/MatrixMarket/formats.html): a banner line
 * "%%MatrixMarket matrix <format> <field> <symmetry>", comment lines starting with '%', a size
 * line ("rows cols" for array, "rows cols nonzeros" for coordinate), then the entries: for
 * array one value per line, column by column; for coordinate "row col [value]" with 1-based
 * indices. Symmetric and skew-symmetric files store one triangle. */
enum mtx_field { FIELD_REAL, FIELD_INTEGER, FIELD_PATTERN };
enum mtx_symmetry { SYM_GENERAL, SYM_SYMMETRIC, SYM_SKEW };

struct mtx_banner {
    int coordinate;
    enum mtx_field field;
    enum mtx_symmetry symmetry;
};

/* Lines of a text held in memory, numbered from 1; '\r' before '\n' is dropped. */
struct lines {
    char *next;
    int number;
};

static char *next_line(struct lines *l)
{
    if (*l->next == '\0')
        return NULL;
    char *line = l->next;
    char *newline = strchr(line, '\n');
    if (newline != NULL) {
        *newline = '\0';
        l->next = newline + 1;
    } else {
        l->next = line + strlen(line);
    }
    size_t n = strlen(line);
    if (n > 0 && line[n - 1] == '\r')
        line[n - 1] = '\0';
    l->number++;
    return line;
}

/* The next line that is neither blank nor a comment. */
static char *next_content_line(struct lines *l)
{
    char *line;
    while ((line = next_line(l)) != NULL) {
        const char *p = line + strspn(line, " \t");
        if (*p != '\0' && *p != '%')
            return line;
    }
    return NULL;
}

enum { FIELDS_MAX = 5 };

/* Splits `line` in place at blanks; returns how many fields there are (only the first
 * FIELDS_MAX are stored). */
static int split_fields(char *line, char **fields)
{
    int n = 0;
    for (char *p = line;;) {
        p += strspn(p, " \t");
        if (*p == '\0')
            return n;
        if (n < FIELDS_MAX)
            fields[n] = p;
        n++;
        p += strcspn(p, " \t");
        if (*p != '\0')
            *p++ = '\0';
    }
}

/* The index of `word` in the NULL-terminated `words`, ignoring case, or -1. */
static int word_index(const char *word, const char *const *words)
{
    for (int i = 0; words[i] != NULL; i++)
        if (strcasecmp(word, words[i]) == 0)
            return i;
    return -1;
}

static const char mtx_banner_form[] = "'%%MatrixMarket matrix array|coordinate "
                                      "real|integer|pattern general|symmetric|skew-symmetric'";

static int parse_banner(char *line, struct mtx_banner *b, const char *path, char *err,
                        size_t errsize)
{
    static const char *const formats[] = {"array", "coordinate", NULL};
    /* "double" is what some writers put for real. */
    static const char *const field_words[] = {"real",    "double",  "integer",
                                              "pattern", "complex", NULL};
    static const enum mtx_field field_of[] = {FIELD_REAL, FIELD_REAL, FIELD_INTEGER, FIELD_PATTERN};
    static const char *const symmetries[] = {"general", "symmetric", "skew-symmetric", "hermitian",
                                             NULL};
    char *w[FIELDS_MAX];
    if (line == NULL || strncasecmp(line, "%%MatrixMarket", 14) != 0 || split_fields(line, w) != 5)
        return fail(err, errsize, "%s:1: bad banner: expected %s", path, mtx_banner_form);
    if (strcasecmp(w[0], "%%MatrixMarket") != 0 || strcasecmp(w[1], "matrix") != 0)
        return fail(err, errsize, "%s:1: bad banner: '%s %s' is not a matrix; expected %s", path,
                    w[0], w[1], mtx_banner_form);
    const int format = word_index(w[2], formats);
    const int field = word_index(w[3], field_words);
    const int symmetry = word_index(w[4], symmetries);
    if (format < 0 || field < 0 || symmetry < 0)
        return fail(err, errsize, "%s:1: bad banner: unknown %s '%s'; expected %s", path,
                    format < 0  ? "format"
                    : field < 0 ? "field"
                                : "symmetry",
                    format < 0  ? w[2]
                    : field < 0 ? w[3]
                                : w[4],
                    mtx_banner_form);
    if (field == 4 || symmetry == 3)
        return fail(err, errsize,
                    "%s:1: %s matrices are not supported (real, integer and pattern "
                    "only)",
                    path, field == 4 ? "complex" : "hermitian");
    b->coordinate = format == 1;
    b->field = field_of[field];
    b->symmetry = (enum mtx_symmetry)symmetry;
    if (!b->coordinate && b->field == FIELD_PATTERN)
        return fail(err, errsize,
                    "%s:1: bad banner: the pattern field needs the coordinate "
                    "format",
                    path);
    return 0;
}

static int mtx_check_dtype(const struct mtx_banner *b, int32_t dtype, const char *path, char *err,
                           size_t errsize)
{
    if (dtype == CLOPS_F32 || dtype == CLOPS_F64)
        return 0;
    if (!dtype_is_integer(dtype))
        return fail(err, errsize,
                    "%s: cannot read Matrix Market into dtype %d; expected f32, f64, "
                    "or an integer dtype for integer and pattern files",
                    path, (int)dtype);
    if (b->field == FIELD_REAL)
        return fail(err, errsize,
                    "%s:1: a real matrix cannot be read as %s; read it as f32 or "
                    "f64",
                    path, host_dtype_name(dtype));
    return 0;
}

/* A whole-token non-negative integer. */
static int parse_count(const char *token, int64_t *value)
{
    char *end;
    errno = 0;
    long long v = strtoll(token, &end, 10);
    if (*end != '\0' || end == token || errno != 0 || v < 0 || token[0] == '-' || token[0] == '+')
        return 0;
    *value = v;
    return 1;
}

/* What the size line says, with the expected number of entry lines. */
struct mtx_size {
    int64_t shape[2];
    int64_t elements, bytes;
    int64_t entries;
    int line;
};

static int parse_size_line(struct lines *l, const struct mtx_banner *b, int32_t dtype,
                           const struct fmt_read_limit *limit, int64_t file_bytes,
                           struct mtx_size *s, const char *path, char *err, size_t errsize)
{
    char *line = next_content_line(l);
    if (line == NULL)
        return fail(err, errsize, "%s:%d: no size line after the banner", path, l->number);
    char *w[FIELDS_MAX];
    const int want = b->coordinate ? 3 : 2;
    const int n = split_fields(line, w);
    s->line = l->number;
    if (n != want)
        return fail(err, errsize, "%s:%d: expected %d entries (%s), found %d", path, l->number,
                    want, b->coordinate ? "'rows cols nonzeros'" : "'rows cols'", n);
    for (int i = 0; i < want; i++)
        if (!parse_count(w[i], i < 2 ? &s->shape[i] : &s->entries))
            return fail(err, errsize, "%s:%d: bad size line: '%s' is not a non-negative integer",
                        path, l->number, w[i]);
    if (b->symmetry != SYM_GENERAL && s->shape[0] != s->shape[1])
        return fail(err, errsize,
                    "%s:%d: a %s matrix must be square; the size line says %lld x "
                    "%lld",
                    path, l->number, b->symmetry == SYM_SKEW ? "skew-symmetric" : "symmetric",
                    (long long)s->shape[0], (long long)s->shape[1]);
    char why[256];
    if (tensor_size(dtype, 2, s->shape, &s->elements, &s->bytes, why, sizeof why) != 0)
        return fail(err, errsize, "%s:%d: %s", path, l->number, why);
    if (!b->coordinate) {
        /* The stored triangle: all of it, or the lower one with or without the diagonal. */
        const int64_t n = s->shape[0];
        s->entries = b->symmetry == SYM_GENERAL     ? s->elements
                     : b->symmetry == SYM_SYMMETRIC ? n * (n + 1) / 2
                                                    : n * (n - 1) / 2;
    }
    /* Each entry takes a line of at least "v\n" (array) or "r c\n" (coordinate): a size line
     * that announces more than the file can hold is refused before the matrix is allocated. */
    const int64_t least = b->coordinate ? 4 : 2;
    if (s->entries > (file_bytes + 1) / least)
        return fail(err, errsize,
                    "%s:%d: the size line %s %lld entries but the whole file has %lld bytes (each "
                    "entry takes at least %lld)",
                    path, l->number, b->coordinate ? "announces" : "implies", (long long)s->entries,
                    (long long)file_bytes, (long long)least);
    /* A coordinate file expands to the dense matrix: a few bytes can declare gigabytes. */
    return check_limit(limit, s->bytes, dtype, 2, s->shape, path, l->number, err, errsize);
}

/* One value of the file: integer fields keep the exact integer. */
struct mtx_value {
    int integer;
    int64_t i;
    double d;
};

static int parse_value(const char *token, enum mtx_field field, struct mtx_value *v)
{
    char *end;
    errno = 0;
    v->integer = field == FIELD_INTEGER;
    if (v->integer) {
        long long i = strtoll(token, &end, 10);
        v->i = i;
        v->d = (double)i;
        return *end == '\0' && end != token && errno == 0;
    }
    /* No range check: strtod reports subnormal results as ERANGE too, and those are values. */
    v->d = strtod(token, &end);
    return *end == '\0' && end != token;
}

/* Adds `v` (negated if `negate`) to element `at`: duplicate coordinates sum, as in scipy's
 * mmread and the reference MMIO code. Returns -1 if an integer result is outside the dtype. */
static int add_value(void *data, int32_t dtype, int64_t at, const struct mtx_value *v, int negate)
{
    /* A slot still +0 takes the value as it is, so that -0 stays -0. */
    const double d = negate ? -v->d : v->d;
    if (dtype == CLOPS_F64) {
        double *p = (double *)data + at;
        *p = *p == 0.0 && !signbit(*p) ? d : *p + d;
        return 0;
    }
    if (dtype == CLOPS_F32) {
        float *p = (float *)data + at;
        *p = (float)(*p == 0.0f && !signbit(*p) ? d : (double)*p + d);
        return 0;
    }
    int64_t add = v->integer ? v->i : (int64_t)v->d, old = 0;
    if (negate && add == INT64_MIN)
        return -1;
    add = negate ? -add : add;
    switch (dtype) {
    case CLOPS_I32: old = ((int32_t *)data)[at]; break;
    case CLOPS_U32: old = ((uint32_t *)data)[at]; break;
    case CLOPS_U8: old = ((uint8_t *)data)[at]; break;
    default: old = ((int64_t *)data)[at]; break;
    }
    if ((add > 0 && old > INT64_MAX - add) || (add < 0 && old < INT64_MIN - add))
        return -1;
    const int64_t sum = old + add;
    switch (dtype) {
    case CLOPS_I32:
        if (sum < INT32_MIN || sum > INT32_MAX)
            return -1;
        ((int32_t *)data)[at] = (int32_t)sum;
        return 0;
    case CLOPS_U32:
        if (sum < 0 || sum > (int64_t)UINT32_MAX)
            return -1;
        ((uint32_t *)data)[at] = (uint32_t)sum;
        return 0;
    case CLOPS_U8:
        if (sum < 0 || sum > UINT8_MAX)
            return -1;
        ((uint8_t *)data)[at] = (uint8_t)sum;
        return 0;
    default: ((int64_t *)data)[at] = sum; return 0;
    }
}

/* Where the k-th entry of an array file goes: walks the stored triangle column by column. */
struct array_walk {
    int64_t row, col;
};

static void array_walk_next(struct array_walk *w, const struct mtx_banner *b, int64_t rows)
{
    if (++w->row < rows)
        return;
    w->col++;
    w->row = b->symmetry == SYM_GENERAL ? 0 : b->symmetry == SYM_SYMMETRIC ? w->col : w->col + 1;
}

static int parse_index(const char *token, int64_t extent, const char *what, int64_t *index,
                       const char *path, int line, char *err, size_t errsize)
{
    int64_t i;
    if (!parse_count(token, &i))
        return fail(err, errsize, "%s:%d: %s index '%s' is not a positive integer", path, line,
                    what, token);
    if (i < 1 || i > extent)
        return fail(err, errsize, "%s:%d: %s index %lld out of range 1..%lld", path, line, what,
                    (long long)i, (long long)extent);
    *index = i - 1;
    return 0;
}

/* One entry line: its position (coordinate) or the walk's (array), its value, stored and
 * mirrored. */
static int mtx_entry(char *line, const struct mtx_banner *b, struct array_walk *walk,
                     struct fmt_tensor *t, const char *path, int number, char *err, size_t errsize)
{
    char *w[FIELDS_MAX];
    const int want = b->coordinate ? (b->field == FIELD_PATTERN ? 2 : 3) : 1;
    const int n = split_fields(line, w);
    if (n != want)
        return fail(err, errsize, "%s:%d: expected %d entr%s (%s), found %d", path, number, want,
                    want == 1 ? "y" : "ies",
                    !b->coordinate              ? "'value'"
                    : b->field == FIELD_PATTERN ? "'row col'"
                                                : "'row col value'",
                    n);
    int64_t row = walk->row, col = walk->col;
    if (b->coordinate &&
        (parse_index(w[0], t->shape[0], "row", &row, path, number, err, errsize) != 0 ||
         parse_index(w[1], t->shape[1], "column", &col, path, number, err, errsize) != 0))
        return -1;
    if (b->coordinate && b->symmetry == SYM_SYMMETRIC && row < col)
        return fail(err, errsize,
                    "%s:%d: entry (%lld, %lld) is above the diagonal; a symmetric "
                    "file stores only the lower triangle",
                    path, number, (long long)row + 1, (long long)col + 1);
    if (b->coordinate && b->symmetry == SYM_SKEW && row <= col)
        return fail(err, errsize,
                    "%s:%d: entry (%lld, %lld) is not below the diagonal; a "
                    "skew-symmetric file stores only the entries below it",
                    path, number, (long long)row + 1, (long long)col + 1);
    struct mtx_value v = {1, 1, 1.0};
    if (b->field != FIELD_PATTERN && !parse_value(w[want - 1], b->field, &v))
        return fail(err, errsize, "%s:%d: '%s' is not %s", path, number, w[want - 1],
                    b->field == FIELD_INTEGER ? "an integer (the field is integer)" : "a number");
    if (add_value(t->data, t->dtype, row * t->shape[1] + col, &v, 0) != 0 ||
        (b->symmetry != SYM_GENERAL && row != col &&
         add_value(t->data, t->dtype, col * t->shape[1] + row, &v, b->symmetry == SYM_SKEW) != 0))
        return fail(err, errsize, "%s:%d: value %s%s is out of the range of %s", path, number,
                    w[want - 1], b->coordinate ? " (summed with earlier entries)" : "",
                    host_dtype_name(t->dtype));
    return 0;
}

static int mtx_entries(struct lines *l, const struct mtx_banner *b, const struct mtx_size *s,
                       struct fmt_tensor *t, const char *path, char *err, size_t errsize)
{
    struct array_walk walk = {0, 0};
    if (!b->coordinate && b->symmetry == SYM_SKEW)
        walk.row = 1;
    int64_t count = 0;
    char *line;
    while ((line = next_content_line(l)) != NULL) {
        if (count == s->entries)
            return fail(err, errsize, "%s:%d: more entries than the %lld %s on line %d", path,
                        l->number, (long long)s->entries,
                        b->coordinate ? "announced" : "that the size implies", s->line);
        if (mtx_entry(line, b, &walk, t, path, l->number, err, errsize) != 0)
            return -1;
        count++;
        if (!b->coordinate)
            array_walk_next(&walk, b, t->shape[0]);
    }
    if (count < s->entries)
        return fail(err, errsize, "%s:%d: the size line %s %lld entries but the file has %lld",
                    path, s->line, b->coordinate ? "announces" : "implies", (long long)s->entries,
                    (long long)count);
    return 0;
}

static int read_mtx(const char *path, int32_t dtype, const struct fmt_read_limit *limit,
                    struct fmt_tensor *out, char *err, size_t errsize)
{
    memset(out, 0, sizeof *out);
    char *text = read_text(path, err, errsize);
    if (text == NULL)
        return -1;
    const int64_t file_bytes = (int64_t)strlen(text);
    struct lines l = {text, 0};
    struct mtx_banner b = {0};
    struct mtx_size s = {0};
    int rc = parse_banner(next_line(&l), &b, path, err, errsize);
    if (rc == 0)
        rc = mtx_check_dtype(&b, dtype, path, err, errsize);
    if (rc == 0)
        rc = parse_size_line(&l, &b, dtype, limit, file_bytes, &s, path, err, errsize);
    if (rc == 0) {
        out->dtype = dtype;
        out->rank = 2;
        out->shape[0] = s.shape[0];
        out->shape[1] = s.shape[1];
        out->data = calloc(s.bytes > 0 ? (size_t)s.bytes : 1, 1);
        if (out->data == NULL)
            rc = fail(err, errsize, "%s: out of memory for %lld bytes", path, (long long)s.bytes);
    }
    if (rc == 0)
        rc = mtx_entries(&l, &b, &s, out, path, err, errsize);
    free(text);
    if (rc != 0)
        fmt_tensor_free(out);
    return rc;
}

int fmt_read_mtx(const char *path, int32_t dtype, struct fmt_tensor *out, char *err, size_t errsize)
{
    return read_mtx(path, dtype, &default_limit, out, err, errsize);
}

/* ---- Raw and dispatch ------------------------------------------------------------------------ */

static int read_raw(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                    const struct fmt_read_limit *limit, struct fmt_tensor *out, char *err,
                    size_t errsize)
{
    memset(out, 0, sizeof *out);
    int64_t elements = 0, bytes = 0, size = 0;
    char why[256];
    if (shape == NULL && rank > 0)
        return fail(err, errsize, "%s: no shape given for a raw file", path);
    if (tensor_size(dtype, rank, shape, &elements, &bytes, why, sizeof why) != 0)
        return fail(err, errsize, "%s: %s", path, why);
    if (check_limit(limit, bytes, dtype, rank, shape, path, 0, err, errsize) != 0)
        return -1;
    FILE *f = fmt_open_input(path, &size, err, errsize);
    if (f == NULL)
        return -1;
    int rc = 0;
    if (size != bytes) {
        describe(why, sizeof why, dtype, rank, shape);
        rc = fail(err, errsize, "%s: the file has %lld bytes but %s needs exactly %lld", path,
                  (long long)size, why, (long long)bytes);
    }
    if (rc == 0) {
        out->dtype = dtype;
        out->rank = rank;
        memcpy(out->shape, shape, (size_t)rank * sizeof *shape);
        rc = read_elements(f, out, elements, bytes, path, err, errsize);
    }
    fclose(f);
    if (rc != 0)
        fmt_tensor_free(out);
    return rc;
}

int fmt_read_raw(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                 struct fmt_tensor *out, char *err, size_t errsize)
{
    return read_raw(path, dtype, rank, shape, &default_limit, out, err, errsize);
}

int fmt_read_limited(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                     const struct fmt_read_limit *limit, struct fmt_tensor *out, char *err,
                     size_t errsize)
{
    const enum fmt_kind kind = fmt_kind_from_path(path);
    memset(out, 0, sizeof *out);
    if (limit == NULL)
        limit = &default_limit;
    switch (kind) {
    case FMT_NPY:
        if (read_npy(path, limit, out, err, errsize) != 0)
            return -1;
        if (dtype != 0 && out->dtype != dtype) {
            fail(err, errsize, "%s: the file holds %s but %s is wanted", path,
                 host_dtype_name(out->dtype), host_dtype_name(dtype));
            fmt_tensor_free(out);
            return -1;
        }
        return 0;
    case FMT_MTX: return read_mtx(path, dtype, limit, out, err, errsize);
    case FMT_RAW: return read_raw(path, dtype, rank, shape, limit, out, err, errsize);
    case FMT_CSV:
    case FMT_PNG:
        return fail(err, errsize,
                    "%s: reading %s files is not supported; use .npy, .mtx, .bin "
                    "or .raw",
                    path, fmt_kind_name(kind));
    default:
        return fail(err, errsize,
                    "%s: unknown file format; expected the extension .npy, .mtx, "
                    ".bin or .raw",
                    path);
    }
}

int fmt_read(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
             struct fmt_tensor *out, char *err, size_t errsize)
{
    return fmt_read_limited(path, dtype, rank, shape, NULL, out, err, errsize);
}

/* ---- Writing atomically ---------------------------------------------------------------------- */

/* mkdir -p of the directories leading to `path`. */
static int make_parents(const char *path, char *err, size_t errsize)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return fail(err, errsize, "%s: out of memory", path);
    int rc = 0;
    for (char *p = copy + 1; *p != '\0' && rc == 0; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0777) != 0 && errno != EEXIST)
            rc = fail(err, errsize, "%s: cannot create directory '%s': %s", path, copy,
                      strerror(errno));
        *p = '/';
    }
    free(copy);
    return rc;
}

/* The directory of `path` ("." for a bare name), malloc'd; NULL when out of memory. */
static char *parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash == NULL ? strdup(".") : strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* A writer's temporary file is "<dir>/.<name>.<pid>.XXXXXX": the pid says whose it is, so that
 * one left by a killed writer (kill -9 between mkstemp and rename) can be told from one that a
 * running writer is filling. */
enum { STALE_TEMP_AGE_S = 60 };

/* The pid in `entry` if it is a temporary file of destination `name` (".<name>.<digits>.XXXXXX"
 * with mkstemp's six letters and digits), else 0. */
static long temp_file_pid(const char *entry, const char *name)
{
    size_t length = strlen(name);
    if (entry[0] != '.' || strncmp(entry + 1, name, length) != 0 || entry[1 + length] != '.')
        return 0;
    const char *digits = entry + 2 + length, *p = digits;
    long pid = 0;
    for (; *p >= '0' && *p <= '9' && p - digits < 10; p++)
        pid = pid * 10 + (*p - '0');
    if (p == digits || *p != '.' || strlen(p + 1) != 6)
        return 0;
    for (const char *c = p + 1; *c != '\0'; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            return 0;
    return pid;
}

/* Removes the temporary files of destination `name` in `dir` that killed writers left: those
 * whose writer's pid is not a live process and that nobody has written for STALE_TEMP_AGE_S
 * seconds. A writer that is still running keeps its file: on this machine its pid is alive; on
 * another one sharing the directory (NFS, a container) it writes its file, which keeps the
 * file young. Best effort: nothing here makes the write fail. */
static void remove_stale_temps(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    const time_t now = time(NULL);
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        long pid = temp_file_pid(e->d_name, name);
        struct stat st;
        /* kill(pid, 0) fails with ESRCH only when no such process exists (EPERM: it does). */
        int writer_gone =
            pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        if (writer_gone && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && now - st.st_mtime >= STALE_TEMP_AGE_S)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

/* The temporary file a writer fills before renaming it over the destination. */
struct atomic_file {
    char *tmp;
    FILE *f;
};

static int atomic_open(const char *path, struct atomic_file *af, char *err, size_t errsize)
{
    af->tmp = NULL;
    af->f = NULL;
    const char *slash = strrchr(path, '/');
    const char *name = slash != NULL ? slash + 1 : path;
    if (*name == '\0')
        return fail(err, errsize, "%s: the path names a directory, not a file", path);
    if (make_parents(path, err, errsize) != 0)
        return -1;
    char *dir = parent_dir(path);
    if (dir != NULL)
        remove_stale_temps(dir, name);
    free(dir);
    if (asprintf(&af->tmp, "%.*s.%s.%ld.XXXXXX", (int)(name - path), path, name, (long)getpid()) <
        0) {
        af->tmp = NULL;
        return fail(err, errsize, "%s: out of memory", path);
    }
    int fd = mkstemp(af->tmp);
    if (fd < 0) {
        fail(err, errsize, "%s: cannot create a temporary file in '%.*s': %s", path,
             slash != NULL ? (int)(slash - path) : 1, slash != NULL ? path : ".", strerror(errno));
        free(af->tmp);
        af->tmp = NULL;
        return -1;
    }
    /* mkstemp() creates 0600; the result should get the usual 0666 & ~umask. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || (af->f = fdopen(fd, "wb")) == NULL) {
        fail(err, errsize, "%s: cannot set up '%s': %s", path, af->tmp, strerror(errno));
        close(fd);
        unlink(af->tmp);
        free(af->tmp);
        af->tmp = NULL;
        return -1;
    }
    return 0;
}

static void atomic_abort(struct atomic_file *af)
{
    if (af->f != NULL)
        fclose(af->f);
    if (af->tmp != NULL)
        unlink(af->tmp);
    free(af->tmp);
    af->f = NULL;
    af->tmp = NULL;
}

/* A crash right after the rename should not leave the directory without the new name. */
static void sync_parent(const char *path)
{
    char *dir = parent_dir(path);
    int fd = dir != NULL ? open(dir, O_RDONLY | O_DIRECTORY) : -1;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

/* Flushes, fsyncs and renames the temporary file over `path`; on failure removes it. */
static int atomic_commit(const char *path, struct atomic_file *af, char *err, size_t errsize)
{
    int rc = 0;
    if (fflush(af->f) != 0 || ferror(af->f))
        rc = fail(err, errsize, "%s: write error: %s", path, strerror(errno));
    else if (fsync(fileno(af->f)) != 0)
        rc = fail(err, errsize, "%s: cannot sync: %s", path, strerror(errno));
    FILE *f = af->f;
    af->f = NULL;
    if (fclose(f) != 0 && rc == 0)
        rc = fail(err, errsize, "%s: write error: %s", path, strerror(errno));
    if (rc == 0 && rename(af->tmp, path) != 0)
        rc = fail(err, errsize, "%s: cannot rename the temporary file over it: %s", path,
                  strerror(errno));
    if (rc == 0) {
        free(af->tmp);
        af->tmp = NULL;
        sync_parent(path);
        return 0;
    }
    atomic_abort(af);
    return -1;
}

/* Writes the file's contents to `f`; returns -1 with `why` filled for failures other than
 * I/O errors (those show in ferror(f)). */
typedef int (*emit_fn)(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                       size_t whysize);

static int check_tensor(const char *path, const struct fmt_tensor *t, int64_t *elements, char *err,
                        size_t errsize)
{
    int64_t bytes = 0;
    char why[256];
    if (t == NULL)
        return fail(err, errsize, "%s: no tensor to write", path);
    if (tensor_size(t->dtype, t->rank, t->shape, elements, &bytes, why, sizeof why) != 0)
        return fail(err, errsize, "%s: cannot write the tensor: %s", path, why);
    if (bytes > 0 && t->data == NULL)
        return fail(err, errsize, "%s: cannot write the tensor: its data is NULL", path);
    return 0;
}

static int write_file(const char *path, const struct fmt_tensor *t, emit_fn emit, char *err,
                      size_t errsize)
{
    int64_t elements = 0;
    struct atomic_file af;
    if (check_tensor(path, t, &elements, err, errsize) != 0 ||
        atomic_open(path, &af, err, errsize) != 0)
        return -1;
    char why[256];
    if (emit(af.f, t, elements, why, sizeof why) != 0) {
        atomic_abort(&af);
        return fail(err, errsize, "%s: %s", path, why);
    }
    return atomic_commit(path, &af, err, errsize);
}

/* Elements as little-endian bytes. */
static int emit_elements(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                         size_t whysize)
{
    const int64_t esize = host_dtype_size(t->dtype);
    if (!HOST_BIG_ENDIAN || esize == 1) {
        if (elements > 0)
            fwrite(t->data, (size_t)esize, (size_t)elements, f);
        return 0;
    }
    enum { CHUNK = 1 << 16 };
    unsigned char *buffer = malloc(CHUNK);
    if (buffer == NULL)
        return fail(why, whysize, "out of memory");
    const int64_t per_chunk = CHUNK / esize;
    for (int64_t done = 0; done < elements; done += per_chunk) {
        const int64_t n = elements - done < per_chunk ? elements - done : per_chunk;
        memcpy(buffer, (const unsigned char *)t->data + done * esize, (size_t)(n * esize));
        swap_elements(buffer, n, esize);
        fwrite(buffer, (size_t)esize, (size_t)n, f);
    }
    free(buffer);
    return 0;
}

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
    return emit_elements(f, t, elements, why, whysize);
}

/* Element `i` as text that reads back to the same value: 9 significant digits identify an
 * f32, 17 an f64. */
static void format_element(char *out, size_t size, const void *data, int32_t dtype, int64_t i)
{
    switch (dtype) {
    case CLOPS_F32: snprintf(out, size, "%.9g", (double)((const float *)data)[i]); break;
    case CLOPS_F64: snprintf(out, size, "%.17g", ((const double *)data)[i]); break;
    case CLOPS_I32: snprintf(out, size, "%" PRId32, ((const int32_t *)data)[i]); break;
    case CLOPS_U32: snprintf(out, size, "%" PRIu32, ((const uint32_t *)data)[i]); break;
    case CLOPS_U8: snprintf(out, size, "%u", (unsigned)((const uint8_t *)data)[i]); break;
    default: snprintf(out, size, "%" PRId64, ((const int64_t *)data)[i]); break;
    }
}

static int emit_mtx(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                    size_t whysize)
{
    (void)elements;
    (void)why;
    (void)whysize;
    const int64_t rows = t->shape[0], cols = t->rank == 2 ? t->shape[1] : 1;
    fprintf(f, "%%%%MatrixMarket matrix array %s general\n%lld %lld\n",
            dtype_is_integer(t->dtype) ? "integer" : "real", (long long)rows, (long long)cols);
    char text[32];
    /* rows > 0 first: a 0 x 2^41 matrix has no entry, and must not take 2^41 steps to say so. */
    for (int64_t j = 0; rows > 0 && j < cols; j++)
        for (int64_t i = 0; i < rows; i++) {
            format_element(text, sizeof text, t->data, t->dtype, i * cols + j);
            fprintf(f, "%s\n", text);
        }
    return 0;
}

static int emit_csv(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                    size_t whysize)
{
    (void)why;
    (void)whysize;
    const int64_t cols = t->shape[t->rank - 1];
    const int64_t rows = cols > 0 ? elements / cols : 0;
    char text[32];
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            format_element(text, sizeof text, t->data, t->dtype, i * cols + j);
            fprintf(f, j > 0 ? ",%s" : "%s", text);
        }
        fputc('\n', f);
    }
    return 0;
}

static int emit_raw(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                    size_t whysize)
{
    return emit_elements(f, t, elements, why, whysize);
}

/* ---- PNG ------------------------------------------------------------------------------------- */

/* How a tensor maps to PNG pixels. */
struct png_layout {
    uint32_t height, width;
    int channels;   /* bytes per pixel in the file */
    int color_type; /* PNG_COLOR_TYPE_* */
    int words;      /* u32 RGBA words, unpacked per row */
};

static int png_layout_of(const struct fmt_tensor *t, struct png_layout *l, char *why,
                         size_t whysize)
{
    char text[128];
    describe(text, sizeof text, t->dtype, t->rank, t->shape);
    memset(l, 0, sizeof *l);
    if (t->dtype == CLOPS_U8 && t->rank == 3 && (t->shape[2] == 3 || t->shape[2] == 4)) {
        l->channels = (int)t->shape[2];
        l->color_type = l->channels == 4 ? PNG_COLOR_TYPE_RGBA : PNG_COLOR_TYPE_RGB;
    } else if (t->dtype == CLOPS_U8 && t->rank == 2) {
        l->channels = 1;
        l->color_type = PNG_COLOR_TYPE_GRAY;
    } else if (t->dtype == CLOPS_U32 && t->rank == 2) {
        l->channels = 4;
        l->color_type = PNG_COLOR_TYPE_RGBA;
        l->words = 1;
    } else {
        return fail(why, whysize,
                    "cannot write %s as PNG; expected u8 H x W x 4 (RGBA), u8 H x "
                    "W x 3 (RGB), u8 H x W (gray) or u32 H x W (RGBA words)",
                    text);
    }
    /* The PNG format's limit on either extent is 2^31 - 1. */
    if (t->shape[0] < 1 || t->shape[1] < 1 || t->shape[0] > INT32_MAX || t->shape[1] > INT32_MAX)
        return fail(why, whysize, "cannot write %s as PNG: height and width must be 1 to 2^31 - 1",
                    text);
    l->height = (uint32_t)t->shape[0];
    l->width = (uint32_t)t->shape[1];
    return 0;
}

struct png_failure {
    char message[200];
};

/* libpng calls this on an error and must not return: the message is kept and control goes
 * back to the setjmp() in emit_png. */
static void png_on_error(png_structp png, png_const_charp message)
{
    struct png_failure *failure = png_get_error_ptr(png);
    snprintf(failure->message, sizeof failure->message, "%s", message);
    png_longjmp(png, 1);
}

/* libpng's warnings would go to stderr; this module never prints. */
static void png_on_warning(png_structp png, png_const_charp message)
{
    (void)png;
    (void)message;
}

/* Row `y` of u32 RGBA words as R, G, B, A bytes: by shifts, so the host's byte order does not
 * matter. */
static void unpack_words(unsigned char *row, const uint32_t *words, uint32_t width)
{
    for (uint32_t x = 0; x < width; x++) {
        const uint32_t w = words[x];
        row[4 * x] = (unsigned char)(w & 0xff);
        row[4 * x + 1] = (unsigned char)(w >> 8 & 0xff);
        row[4 * x + 2] = (unsigned char)(w >> 16 & 0xff);
        row[4 * x + 3] = (unsigned char)(w >> 24);
    }
}

static int emit_png(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                    size_t whysize)
{
    (void)elements;
    struct png_layout layout;
    if (png_layout_of(t, &layout, why, whysize) != 0)
        return -1;
    const size_t row_bytes = (size_t)layout.width * (size_t)layout.channels;
    struct png_failure failure = {"out of memory"};
    unsigned char *row = layout.words ? malloc(row_bytes) : NULL;
    png_structp png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, &failure, png_on_error, png_on_warning);
    png_infop info = png != NULL ? png_create_info_struct(png) : NULL;
    if (png == NULL || info == NULL || (layout.words && row == NULL)) {
        png_destroy_write_struct(&png, &info);
        free(row);
        return fail(why, whysize, "libpng: out of memory");
    }
    /* Everything the error path uses (png, info, row, failure) is set before setjmp() and not
     * changed after it, so none of it needs to be volatile (C11 7.13.2.1). */
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(row);
        return fail(why, whysize, "libpng: %s", failure.message);
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, layout.width, layout.height, 8, layout.color_type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < layout.height; y++) {
        if (layout.words) {
            unpack_words(row, (const uint32_t *)t->data + (size_t)y * layout.width, layout.width);
            png_write_row(png, row);
        } else {
            png_write_row(png, (const unsigned char *)t->data + (size_t)y * row_bytes);
        }
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(row);
    return 0;
}

/* ---- Writers --------------------------------------------------------------------------------- */

int fmt_write_npy(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    return write_file(path, t, emit_npy, err, errsize);
}

int fmt_write_mtx(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    if (t != NULL && t->rank > 2)
        return fail(err, errsize, "%s: a Matrix Market file holds a matrix; the tensor has rank %d",
                    path, (int)t->rank);
    return write_file(path, t, emit_mtx, err, errsize);
}

int fmt_write_csv(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    return write_file(path, t, emit_csv, err, errsize);
}

int fmt_write_raw(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    return write_file(path, t, emit_raw, err, errsize);
}

int fmt_write_png(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    int64_t elements = 0;
    struct png_layout layout;
    char why[256];
    /* Checked before the temporary file is made: a bad shape is the caller's error, not I/O. */
    if (check_tensor(path, t, &elements, err, errsize) != 0)
        return -1;
    if (png_layout_of(t, &layout, why, sizeof why) != 0)
        return fail(err, errsize, "%s: %s", path, why);
    return write_file(path, t, emit_png, err, errsize);
}

int fmt_write(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    switch (fmt_kind_from_path(path)) {
    case FMT_NPY: return fmt_write_npy(path, t, err, errsize);
    case FMT_MTX: return fmt_write_mtx(path, t, err, errsize);
    case FMT_CSV: return fmt_write_csv(path, t, err, errsize);
    case FMT_PNG: return fmt_write_png(path, t, err, errsize);
    case FMT_RAW: return fmt_write_raw(path, t, err, errsize);
    default:
        return fail(err, errsize,
                    "%s: unknown file format; expected the extension .npy, .mtx, "
                    ".csv, .png, .bin or .raw",
                    path);
    }
}
