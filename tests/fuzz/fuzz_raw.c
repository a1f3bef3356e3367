/* fuzz_raw.c — libFuzzer harness for the raw reader (hosts/cli/formats.c fmt_read_raw). The
 * input starts with what a pipeline would give: a byte whose low 3 bits are the dtype (0 and 7
 * are invalid) and next 3 bits the rank - 1 (5 to 8 are invalid ranks), then the extents as
 * little-endian int64 (any value, negative or huge included); the rest is the file. */
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return -1;
    const int32_t dtype = data[0] & 7, rank = (data[0] >> 3 & 7) + 1;
    const int32_t given = rank < CLOPS_MAX_RANK ? rank : CLOPS_MAX_RANK;
    int64_t shape[CLOPS_MAX_RANK] = {0};
    if (size < 1 + (size_t)given * sizeof(int64_t))
        return -1;
    for (int32_t a = 0; a < given; a++) {
        uint64_t extent = 0;
        for (int b = 7; b >= 0; b--)
            extent = extent << 8 | data[1 + a * 8 + b];
        memcpy(&shape[a], &extent, sizeof extent);
    }
    const size_t header = 1 + (size_t)given * sizeof(int64_t);

    static char path[512];
    if (path[0] == '\0')
        fuzz_temp_path("input.raw", path, sizeof path);
    fuzz_write_file(path, data + header, size - header);
    struct fmt_tensor t;
    char err[512] = "";
    int rc = fmt_read_raw(path, dtype, rank, shape, &t, err, sizeof err);
    fuzz_check_read(rc, &t, err);
    if (rc == 0 &&
        (t.dtype != dtype || t.rank != rank || memcmp(t.data, data + header, size - header) != 0))
        __builtin_trap();
    fmt_tensor_free(&t);
    return 0;
}
