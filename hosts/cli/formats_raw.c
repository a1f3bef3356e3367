/* formats_raw.c — raw binary files: little-endian elements, row-major, whose shape and dtype the
 * caller knows; the file size must match them exactly. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "formats.h"
#include "formats_internal.h"

int fmt_read_raw_limited(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                         const struct fmt_read_limit *limit, struct fmt_tensor *out, char *err,
                         size_t errsize)
{
    memset(out, 0, sizeof *out);
    int64_t elements = 0, bytes = 0, size = 0;
    char why[256];
    if (shape == NULL && rank > 0)
        return fmt_fail(err, errsize, "%s: no shape given for a raw file", path);
    if (fmt_tensor_size(dtype, rank, shape, &elements, &bytes, why, sizeof why) != 0)
        return fmt_fail(err, errsize, "%s: %s", path, why);
    if (fmt_check_limit(limit, bytes, dtype, rank, shape, path, 0, err, errsize) != 0)
        return -1;
    FILE *f = fmt_open_input(path, &size, err, errsize);
    if (f == NULL)
        return -1;
    int rc = 0;
    if (size != bytes) {
        fmt_describe(why, sizeof why, dtype, rank, shape);
        rc = fmt_fail(err, errsize, "%s: the file has %lld bytes but %s needs exactly %lld", path,
                      (long long)size, why, (long long)bytes);
    }
    if (rc == 0) {
        out->dtype = dtype;
        out->rank = rank;
        memcpy(out->shape, shape, (size_t)rank * sizeof *shape);
        rc = fmt_read_elements(f, out, elements, bytes, path, err, errsize);
    }
    fclose(f);
    if (rc != 0)
        fmt_tensor_free(out);
    return rc;
}

int fmt_read_raw(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                 struct fmt_tensor *out, char *err, size_t errsize)
{
    return fmt_read_raw_limited(path, dtype, rank, shape, &fmt_default_limit, out, err, errsize);
}

static int emit_raw(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                    size_t whysize)
{
    return fmt_emit_elements(f, t, elements, why, whysize);
}

int fmt_write_raw(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    return fmt_write_atomic(path, t, emit_raw, err, errsize);
}
