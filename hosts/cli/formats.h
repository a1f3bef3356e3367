/* formats.h — reading and writing tensors in file formats: NumPy .npy, Matrix Market .mtx,
 * raw binary, CSV, PNG. Host memory, row-major (C order), little-endian. */
#ifndef CLOPS_CLI_FORMATS_H
#define CLOPS_CLI_FORMATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* CLOPS_F32, CLOPS_F64, CLOPS_I32, CLOPS_U32, CLOPS_U8, CLOPS_I64, CLOPS_MAX_RANK */
#include "clops.h"

struct fmt_tensor {
    int32_t dtype; /* a CLOPS_* dtype */
    int32_t rank;  /* 1..CLOPS_MAX_RANK */
    int64_t shape[CLOPS_MAX_RANK];
    void *data; /* malloc'd, row-major, elements * size of dtype; owned by caller */
};

/* Bytes, elements and dtype sizes are capped so that no product overflows: a tensor read or
 * written here holds at most 2^40 bytes. */
#define FMT_MAX_BYTES (INT64_C(1) << 40)

/* What a reader may allocate for a tensor's data; checked against the shape a file declares
 * before anything is allocated. A .npy or raw file holds its data, so it cannot make a reader
 * allocate more than its own size; a Matrix Market coordinate file is expanded to the dense
 * matrix, so 60 bytes can declare gigabytes. The readers without a limit argument use
 * FMT_READ_MAX_BYTES. `reason` ends the message when a file is refused, e.g. "the pipeline
 * declares 100 x 100 f64 (80000 bytes)". */
#define FMT_READ_MAX_BYTES (INT64_C(1) << 32)
struct fmt_read_limit {
    int64_t max_bytes;
    const char *reason;
};

enum fmt_kind { FMT_UNKNOWN = 0, FMT_NPY, FMT_MTX, FMT_RAW, FMT_CSV, FMT_PNG };
/* From the file name's extension (.npy .mtx .bin/.raw .csv .png, case-insensitive). */
enum fmt_kind fmt_kind_from_path(const char *path);
/* "npy", "mtx", "raw", "csv", "png", or "unknown". */
const char *fmt_kind_name(enum fmt_kind kind);

/* Frees t->data and zeroes *t. */
void fmt_tensor_free(struct fmt_tensor *t);

/* Readers. Anything but a regular file (a FIFO, a device, a directory) is refused without
 * blocking. On failure return -1, free anything allocated, leave *out zeroed, and write a
 * one-line message into err (size errsize) naming the file and what is wrong, e.g.
 * "a.npy: truncated: the header says 12 x 7 f64 (672 bytes of data) but the file has 80",
 * "b.mtx:3: expected 3 entries ('rows cols nonzeros'), found 2". No printing, no exit. */

/* NumPy format versions 1.0, 2.0 and 3.0; descr '<f4' '<f8' '<i4' '<u4' '|u1' '<i8' only.
 * fortran_order True is transposed into row-major; shape () reads as rank 1 of 1 element. */
int fmt_read_npy(const char *path, struct fmt_tensor *out, char *err, size_t errsize);
/* Matrix Market: "array" (dense, column-major in the file) and "coordinate" (sparse: expanded
 * to a dense matrix), fields real/integer/pattern (pattern -> 1.0), symmetry general/symmetric/
 * skew-symmetric (mirror entries). `dtype` is the dtype wanted (CLOPS_F32 or CLOPS_F64; also
 * CLOPS_I32/I64 for integer field). Report line numbers on errors: bad banner, bad size line,
 * entry count mismatch (fewer or more entries than announced), index out of range, non-number.
 * Also: CLOPS_U8 and CLOPS_U32 for the integer and pattern fields (each value range-checked);
 * symmetric files must list only the lower triangle (diagonal included), skew-symmetric ones
 * only what is below the diagonal, as the format says; duplicate coordinates are summed. */
int fmt_read_mtx(const char *path, int32_t dtype, struct fmt_tensor *out, char *err,
                 size_t errsize);
/* Raw little-endian elements, row-major: the file size must equal the product of shape times
 * the dtype size exactly (else a clear error stating both sizes). */
int fmt_read_raw(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                 struct fmt_tensor *out, char *err, size_t errsize);
/* Dispatch on fmt_kind_from_path (npy, mtx, raw). For FMT_MTX/FMT_RAW `dtype` (and for raw
 * rank/shape) come from the caller; for .npy, dtype 0 means "as in the file", otherwise the
 * file's dtype must match (error names both). CSV and PNG cannot be read: an error says so. */
int fmt_read(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
             struct fmt_tensor *out, char *err, size_t errsize);
/* fmt_read with `limit` (NULL: FMT_READ_MAX_BYTES) instead of the default. */
int fmt_read_limited(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                     const struct fmt_read_limit *limit, struct fmt_tensor *out, char *err,
                     size_t errsize);
/* Opens `path` for reading if it is a regular file, without blocking on a FIFO (the type is
 * checked on the opened descriptor); *size is its size. NULL with err filled ("x.npy: is a FIFO
 * (named pipe), not a regular file; ..."), otherwise. */
FILE *fmt_open_input(const char *path, int64_t *size, char *err, size_t errsize);

/* Writers: every writer writes to a temporary file in the destination's directory
 * ("<dir>/.<name>.<pid>.XXXXXX" via mkstemp), fsyncs, and renames it over the destination; on
 * any failure the temporary file is removed and the destination is untouched (a reader never
 * sees a partial file). A writer killed before the rename leaves its temporary file; the next
 * write of the same destination removes those whose pid is no live process and that have not
 * been written for 60 seconds. Missing parent directories are created. Return 0, or -1 with err
 * filled. The file gets mode 0666 & ~umask, as one made by open() would. */

/* Version 1.0, header padded with spaces to a multiple of 64 bytes and ending in '\n', as
 * NumPy writes it. */
int fmt_write_npy(const char *path, const struct fmt_tensor *t, char *err, size_t errsize);
/* Dense "array real" (or "array integer" for integer dtypes), column-major as the format
 * requires, %.17g for f64 / %.9g for f32 so values round-trip exactly. Rank 1 -> N x 1.
 * Ranks 3 and 4 are an error. */
int fmt_write_mtx(const char *path, const struct fmt_tensor *t, char *err, size_t errsize);
/* One row per line (rank 2: rows x cols; rank 1: one line), comma-separated, round-trip digits.
 * Ranks 3 and 4: the leading extents are flattened into rows, the last extent is the columns. */
int fmt_write_csv(const char *path, const struct fmt_tensor *t, char *err, size_t errsize);
int fmt_write_raw(const char *path, const struct fmt_tensor *t, char *err, size_t errsize);
/* PNG through libpng, 8 bits per channel, not interlaced. Accepts
 *   u8  [H, W, 4]: RGBA, channel fastest (the mandelbrot operator's `image` output);
 *   u8  [H, W, 3]: RGB;
 *   u8  [H, W]:    gray;
 *   u32 [H, W]:    RGBA words, R in bits 0-7, G 8-15, B 16-23, A 24-31: the bytes of the u8
 *                  [H, W, 4] image read as little-endian words, whatever the host's byte order.
 * Note that the mandelbrot operator's u32 `iterations` output holds iteration counts, not
 * colours: written this way its alpha is 0 (transparent) for counts below 2^24. Write its
 * `image` output for a picture. Row 0 is the top of the picture. Any other shape or dtype, or
 * an extent of 0 or over 2^31 - 1, is an error. */
int fmt_write_png(const char *path, const struct fmt_tensor *t, char *err, size_t errsize);
/* Why this build cannot write PNG (one built without libpng: formats_png_none.c), or NULL. */
extern const char *const fmt_png_unavailable;
/* Any other file (a shard's manifest), written the same way: `size` bytes of `data`. */
int fmt_write_bytes(const char *path, const void *data, size_t size, char *err, size_t errsize);
/* Dispatch on the extension: npy, mtx, csv, png, raw/bin. */
int fmt_write(const char *path, const struct fmt_tensor *t, char *err, size_t errsize);

#endif
