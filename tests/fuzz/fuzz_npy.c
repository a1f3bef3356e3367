/* fuzz_npy.c — libFuzzer harness for the NumPy reader (hosts/cli/formats.c fmt_read_npy): the
 * input is the file. */
#include <stdint.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[512];
    if (path[0] == '\0')
        fuzz_temp_path("input.npy", path, sizeof path);
    fuzz_write_file(path, data, size);
    struct fmt_tensor t;
    char err[512] = "";
    int rc = fmt_read_npy(path, &t, err, sizeof err);
    fuzz_check_read(rc, &t, err);
    fmt_tensor_free(&t);
    return 0;
}
