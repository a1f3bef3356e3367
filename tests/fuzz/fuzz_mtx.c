/* fuzz_mtx.c — libFuzzer harness for the Matrix Market reader (hosts/cli/formats.c
 * fmt_read_mtx). The input's first byte picks the dtype wanted (its low 3 bits: 1..6 the clops
 * dtypes, 0 and 7 invalid); the rest is the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

/* The limit `clops run` gives a tensor without a declared shape is 4 GiB; the harness reads
 * through the same limited reader with a bound under libFuzzer's -malloc_limit_mb, so that an
 * input announcing more than it may allocate must be refused by the reader itself (before the
 * cap, a 60-byte file made it allocate gigabytes). */
static const struct fmt_read_limit limit = {INT64_C(256) << 20, "the harness's 256 MiB bound"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return -1;
    const int32_t dtype = data[0] & 7;
    static char path[512];
    if (path[0] == '\0')
        fuzz_temp_path("input.mtx", path, sizeof path);
    fuzz_write_file(path, data + 1, size - 1);
    struct fmt_tensor t;
    char err[512] = "";
    int rc = fmt_read_limited(path, dtype, 2, NULL, &limit, &t, err, sizeof err);
    fuzz_check_read(rc, &t, err);
    if (rc == 0 && (t.dtype != dtype || t.rank != 2))
        __builtin_trap();
    fmt_tensor_free(&t);
    return 0;
}
