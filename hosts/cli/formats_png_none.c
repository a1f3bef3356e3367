/* formats_png_none.c — PNG in a build without libpng (a Windows build whose deps prefix has
 * none): a pipeline with a .png output is refused while it is validated, naming why, and
 * fmt_write_png writes nothing. */
#include "formats.h"
#include "formats_internal.h"

const char *const fmt_png_unavailable =
    "this clops was built without libpng (a Windows build takes it from the .ci/windows-deps "
    "prefix's lib/pkgconfig/libpng.pc); write .npy, .csv, .mtx or .raw instead";

int fmt_write_png(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    (void)t;
    return fmt_fail(err, errsize, "%s: cannot write PNG: %s", path, fmt_png_unavailable);
}
