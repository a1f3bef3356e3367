/* formats_dispatch.c — fmt_read, fmt_read_limited and fmt_write: the reader or writer of the
 * format that a file's extension names. */
#include <stdint.h>
#include <string.h>

#include "formats.h"
#include "formats_internal.h"
#include "util.h"

int fmt_read_limited(const char *path, int32_t dtype, int32_t rank, const int64_t *shape,
                     const struct fmt_read_limit *limit, struct fmt_tensor *out, char *err,
                     size_t errsize)
{
    const enum fmt_kind kind = fmt_kind_from_path(path);
    memset(out, 0, sizeof *out);
    if (limit == NULL)
        limit = &fmt_default_limit;
    switch (kind) {
    case FMT_NPY:
        if (fmt_read_npy_limited(path, limit, out, err, errsize) != 0)
            return -1;
        if (dtype != 0 && out->dtype != dtype) {
            fmt_fail(err, errsize, "%s: the file holds %s but %s is wanted", path,
                     host_dtype_name(out->dtype), host_dtype_name(dtype));
            fmt_tensor_free(out);
            return -1;
        }
        return 0;
    case FMT_MTX: return fmt_read_mtx_limited(path, dtype, limit, out, err, errsize);
    case FMT_RAW: return fmt_read_raw_limited(path, dtype, rank, shape, limit, out, err, errsize);
    case FMT_CSV:
    case FMT_PNG:
        return fmt_fail(err, errsize,
                        "%s: reading %s files is not supported; use .npy, .mtx, .bin "
                        "or .raw",
                        path, fmt_kind_name(kind));
    default:
        return fmt_fail(err, errsize,
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

int fmt_write(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    switch (fmt_kind_from_path(path)) {
    case FMT_NPY: return fmt_write_npy(path, t, err, errsize);
    case FMT_MTX: return fmt_write_mtx(path, t, err, errsize);
    case FMT_CSV: return fmt_write_csv(path, t, err, errsize);
    case FMT_PNG: return fmt_write_png(path, t, err, errsize);
    case FMT_RAW: return fmt_write_raw(path, t, err, errsize);
    default:
        return fmt_fail(err, errsize,
                        "%s: unknown file format; expected the extension .npy, .mtx, "
                        ".csv, .png, .bin or .raw",
                        path);
    }
}
