/* fuzz_mtx.c — libFuzzer harness for the Matrix Market reader (hosts/cli/formats.c
 * fmt_read_mtx). The input's first byte picks the dtype wanted (its low 3 bits: 1..6 the clops
 * dtypes, 0 and 7 invalid); the rest is the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

/* Known defect (issue 10, being fixed separately): the reader allocates the dense matrix the
 * size line announces, up to 2^40 bytes, before reading any entry, so a 60-byte file can ask
 * for gigabytes. Until the reader caps it, inputs announcing more than this are skipped so
 * that libFuzzer's -malloc_limit_mb does not stop on it; the bound is well above what the
 * seeds and a fast run use. */
#define KNOWN_DEFECT_DENSE_BYTES (INT64_C(256) << 20)

/* The size line as the reader finds it: the first line after the banner that is neither blank
 * (a '\r' before the '\n' dropped) nor a '%' comment; its first two fields as integers (0 when
 * they are not). */
static double announced_elements(const char *text)
{
    const char *line = strchr(text, '\n');
    while (line != NULL) {
        line++;
        const char *p = line + strspn(line, " \t");
        const int blank =
            *p == '\0' || *p == '\n' || (*p == '\r' && (p[1] == '\n' || p[1] == '\0'));
        if (!blank && *p != '%') {
            char *end;
            double rows = (double)strtoll(p, &end, 10);
            end += strspn(end, " \t");
            double cols = (double)strtoll(end, NULL, 10);
            return rows > 0 && cols > 0 ? rows * cols : 0;
        }
        line = strchr(line, '\n');
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return -1;
    const int32_t dtype = data[0] & 7;
    char *text = strndup((const char *)data + 1, size - 1);
    double elements = announced_elements(text);
    free(text);
    if (elements * 8 > (double)KNOWN_DEFECT_DENSE_BYTES)
        return -1;

    static char path[512];
    if (path[0] == '\0')
        fuzz_temp_path("input.mtx", path, sizeof path);
    fuzz_write_file(path, data + 1, size - 1);
    struct fmt_tensor t;
    char err[512] = "";
    int rc = fmt_read_mtx(path, dtype, &t, err, sizeof err);
    fuzz_check_read(rc, &t, err);
    if (rc == 0 && (t.dtype != dtype || t.rank != 2))
        __builtin_trap();
    fmt_tensor_free(&t);
    return 0;
}
