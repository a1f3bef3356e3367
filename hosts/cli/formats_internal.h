/* formats_internal.h — what the files of the formats module (formats.c, formats_<format>.c,
 * formats_dispatch.c, formats_atomic.c) share and nothing outside them uses: messages, sizes,
 * reading a file's elements within a limit, elements as bytes and text, each format's reader
 * under a limit, and the atomic writer. */
#ifndef CLOPS_CLI_FORMATS_INTERNAL_H
#define CLOPS_CLI_FORMATS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "formats.h"
#include "util.h"

/* ---- Messages and sizes (formats.c) -----------------------------------------------------------
 */

/* Writes the message into err and returns -1, control characters made '?'. */
int fmt_fail(char *err, size_t errsize, const char *format, ...) HOST_PRINTF(3, 4);
/* "12 x 7 f64", for messages. */
void fmt_describe(char *out, size_t size, int32_t dtype, int32_t rank, const int64_t *shape);
/* Elements and bytes of a tensor, or -1 with the reason in `why`. */
int fmt_tensor_size(int32_t dtype, int32_t rank, const int64_t *shape, int64_t *elements,
                    int64_t *bytes, char *why, size_t whysize);

/* ---- Reading (formats.c) ----------------------------------------------------------------------
 */

/* FMT_READ_MAX_BYTES, with its reason for messages. */
extern const struct fmt_read_limit fmt_default_limit;
/* -1 with err filled if `bytes` is over the limit; `line` declares the shape (0: none). */
int fmt_check_limit(const struct fmt_read_limit *limit, int64_t bytes, int32_t dtype, int32_t rank,
                    const int64_t *shape, const char *path, int line, char *err, size_t errsize);
int fmt_read_exact(FILE *f, void *buffer, int64_t bytes, const char *path, char *err,
                   size_t errsize);
/* Reads `bytes` of little-endian elements from where `f` stands into a new out->data. */
int fmt_read_elements(FILE *f, struct fmt_tensor *out, int64_t elements, int64_t bytes,
                      const char *path, char *err, size_t errsize);

/* Each format's reader under `limit` (not NULL), for fmt_read_limited (formats_dispatch.c). */
int fmt_read_npy_limited(const char *path, const struct fmt_read_limit *limit,
                         struct fmt_tensor *out, char *err, size_t errsize);
int fmt_read_mtx_limited(const char *path, int32_t dtype, const struct fmt_read_limit *limit,
                         struct fmt_tensor *out, char *err, size_t errsize);
int fmt_read_raw_limited(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                         const struct fmt_read_limit *limit, struct fmt_tensor *out, char *err,
                         size_t errsize);

/* ---- Writing (formats.c, formats_atomic.c) ----------------------------------------------------
 */

/* Elements as little-endian bytes. */
int fmt_emit_elements(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                      size_t whysize);
/* Element `i` as text that reads back to the same value. */
void fmt_format_element(char *out, size_t size, const void *data, int32_t dtype, int64_t i);

/* Writes the file's contents to `f`; returns -1 with `why` filled for failures other than
 * I/O errors (those show in ferror(f)). */
typedef int (*fmt_emit_fn)(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                           size_t whysize);
/* -1 with err filled unless `t` can be written: a valid dtype, rank and shape, and data. */
int fmt_check_tensor(const char *path, const struct fmt_tensor *t, int64_t *elements, char *err,
                     size_t errsize);
/* Checks `t`, then writes `path` atomically with `emit` (see formats.h: Writers). */
int fmt_write_atomic(const char *path, const struct fmt_tensor *t, fmt_emit_fn emit, char *err,
                     size_t errsize);

#endif
