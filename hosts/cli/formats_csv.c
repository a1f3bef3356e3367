/* formats_csv.c — CSV files, written only: one row per line, values that read back exactly. */
#include <stdint.h>
#include <stdio.h>

#include "formats.h"
#include "formats_internal.h"

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
            fmt_format_element(text, sizeof text, t->data, t->dtype, i * cols + j);
            fprintf(f, j > 0 ? ",%s" : "%s", text);
        }
        fputc('\n', f);
    }
    return 0;
}

int fmt_write_csv(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    return fmt_write_atomic(path, t, emit_csv, err, errsize);
}
