/* formats.c — tensors to and from files, what every format shares: the formats by name and
 * extension, messages, sizes, opening an input within its limits, elements as bytes and as text.
 * Each format is a file of its own (formats_<format>.c), chosen by extension in
 * formats_dispatch.c; writers go through formats_atomic.c. Nothing here prints or exits: errors
 * go to the caller. */
#include "formats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats_internal.h"
#include "host_os.h"
#include "util.h"

/* Files are little-endian whatever the host; on a big-endian one each element's bytes are
 * reversed on the way in and out. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
enum { HOST_BIG_ENDIAN = 1 };
#else
enum { HOST_BIG_ENDIAN = 0 };
#endif

/* Writes the message and returns -1, so that error paths read `return fmt_fail(...)`. Messages
 * quote what a file holds (a descr, a token), which may be any bytes: control characters become
 * '?', so that the message stays one line and cannot drive a terminal. */
int fmt_fail(char *err, size_t errsize, const char *format, ...)
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
    const char *slash = host_last_path_separator(path);
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

/* "12 x 7 f64", for messages. */
void fmt_describe(char *out, size_t size, int32_t dtype, int32_t rank, const int64_t *shape)
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
int fmt_tensor_size(int32_t dtype, int32_t rank, const int64_t *shape, int64_t *elements,
                    int64_t *bytes, char *why, size_t whysize)
{
    const int64_t esize = host_dtype_size(dtype);
    if (esize == 0)
        return fmt_fail(why, whysize, "dtype %d is not a clops dtype", (int)dtype);
    if (rank < 1 || rank > CLOPS_MAX_RANK)
        return fmt_fail(why, whysize, "rank %d; expected 1 to %d", (int)rank, CLOPS_MAX_RANK);
    int64_t n = 1;
    for (int32_t a = 0; a < rank; a++) {
        if (shape[a] < 0)
            return fmt_fail(why, whysize, "extent %lld of dimension %d is negative",
                            (long long)shape[a], (int)a);
        if (shape[a] > 0 && n > FMT_MAX_BYTES / esize / shape[a]) {
            char text[128];
            fmt_describe(text, sizeof text, dtype, rank, shape);
            return fmt_fail(why, whysize, "%s is more than 2^40 bytes", text);
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

FILE *fmt_open_input(const char *path, int64_t *size, char *err, size_t errsize)
{
    char why[1024];
    FILE *f = host_open_regular(path, size, why, sizeof why);
    if (f == NULL)
        fmt_fail(err, errsize, "%s", why);
    return f;
}

/* The default limit's reason, for messages. */
const struct fmt_read_limit fmt_default_limit = {
    FMT_READ_MAX_BYTES, "the default limit for a tensor read from a file (4 GiB)"};

/* Refuses, before anything is allocated, a tensor of `bytes` over the read limit; `line` is the
 * line that declares the shape, 0 for none. */
int fmt_check_limit(const struct fmt_read_limit *limit, int64_t bytes, int32_t dtype, int32_t rank,
                    const int64_t *shape, const char *path, int line, char *err, size_t errsize)
{
    if (bytes <= limit->max_bytes)
        return 0;
    char text[128], where[24] = "";
    fmt_describe(text, sizeof text, dtype, rank, shape);
    if (line > 0)
        snprintf(where, sizeof where, ":%d", line);
    return fmt_fail(err, errsize, "%s%s: %s would take %lld bytes, more than %lld: %s", path, where,
                    text, (long long)bytes, (long long)limit->max_bytes, limit->reason);
}

int fmt_read_exact(FILE *f, void *buffer, int64_t bytes, const char *path, char *err,
                   size_t errsize)
{
    if (bytes > 0 && fread(buffer, 1, (size_t)bytes, f) != (size_t)bytes)
        return fmt_fail(err, errsize, "%s: read error: %s", path,
                        ferror(f) ? strerror(errno) : "the file shrank while being read");
    return 0;
}

/* Reads `bytes` of little-endian elements from where `f` stands into a new out->data. */
int fmt_read_elements(FILE *f, struct fmt_tensor *out, int64_t elements, int64_t bytes,
                      const char *path, char *err, size_t errsize)
{
    out->data = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (out->data == NULL)
        return fmt_fail(err, errsize, "%s: out of memory for %lld bytes", path, (long long)bytes);
    if (fmt_read_exact(f, out->data, bytes, path, err, errsize) != 0)
        return -1;
    if (HOST_BIG_ENDIAN)
        swap_elements(out->data, elements, host_dtype_size(out->dtype));
    return 0;
}

/* ---- Writing elements ------------------------------------------------------------------------ */

/* Elements as little-endian bytes. */
int fmt_emit_elements(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
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
        return fmt_fail(why, whysize, "out of memory");
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

/* Element `i` as text that reads back to the same value: 9 significant digits identify an
 * f32, 17 an f64. */
void fmt_format_element(char *out, size_t size, const void *data, int32_t dtype, int64_t i)
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
