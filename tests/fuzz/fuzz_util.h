/* fuzz_util.h — what the libFuzzer harnesses share: a private temporary directory for the
 * readers that take a path, and the checks every reader's result must pass. */
#ifndef CLOPS_FUZZ_UTIL_H
#define CLOPS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "formats.h"

/* "<dir>/<name>" in this process's temporary directory (on /dev/shm when it can be written,
 * else $TMPDIR or /tmp), made on first use and removed with its contents at exit. Harnesses
 * write nowhere else. */
void fuzz_temp_path(const char *name, char *out, size_t size);

/* Replaces the file at `path` by `size` bytes of `data`; aborts when it cannot (a broken
 * harness must not look like a clean run). */
void fuzz_write_file(const char *path, const void *data, size_t size);

/* Whether the text holds a libconfig @include directive: libconfig would read the named file
 * (any file, /dev/zero or a FIFO included), so such inputs are skipped. */
int fuzz_has_include(const uint8_t *data, size_t size);

/* Caps this process's stack at FUZZ_STACK_BYTES instead of the usual 8 MB, for the harnesses of
 * recursive parsers: unbounded recursion then overflows at a depth that inputs of libFuzzer's
 * default 4 KB length reach (1,000 levels of `${((...))}` under ASan, where 8 MB took 30,000, a
 * 60 KB file). Call it from LLVMFuzzerInitialize; aborts when it cannot. */
enum { FUZZ_STACK_BYTES = 512 * 1024 };
void fuzz_small_stack(void);

/* A reader's outcome against its contract (formats.h): on success a shape that fits in
 * FMT_MAX_BYTES with every byte of data readable (ASan checks the allocation is that large);
 * on failure a zeroed tensor and a one-line message without control characters. Aborts on a
 * violation. */
void fuzz_check_read(int rc, const struct fmt_tensor *t, const char *err);

#endif
