/* fuzz_util.c — the harnesses' temporary directory and reader checks (fuzz_util.h). */
#include "fuzz_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util.h"

/* libconfig 1.5 leaks what its scanner allocated for a string token when the parser stops at
 * a syntax error after it (`a = "x" "y" 5;`, `a "": b`): libconfig's own allocations, which
 * clops never sees. Only the scanner's functions are named; settings are made by the parser,
 * so a configuration clops fails to destroy is still reported, as is every other leak. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:strbuf_append\nleak:libconfig_yylex\n";
}

static char temp_dir[256];

static void remove_temp_dir(void)
{
    host_remove_tree(temp_dir);
}

static void make_temp_dir(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(temp_dir, sizeof temp_dir, "%s/clops-fuzz-XXXXXX", base != NULL ? base : "/tmp");
    if (mkdtemp(temp_dir) == NULL) {
        perror(temp_dir);
        abort();
    }
    atexit(remove_temp_dir);
}

void fuzz_temp_path(const char *name, char *out, size_t size)
{
    if (temp_dir[0] == '\0')
        make_temp_dir();
    if ((size_t)snprintf(out, size, "%s/%s", temp_dir, name) >= size)
        abort();
}

void fuzz_write_file(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size) || close(fd) != 0) {
        perror(path);
        abort();
    }
}

void fuzz_small_stack(void)
{
    /* The main thread's stack grows on demand up to the limit in force at each fault, so a limit
     * lowered now applies to the rest of the run. */
    struct rlimit limit;
    if (getrlimit(RLIMIT_STACK, &limit) != 0)
        abort();
    if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > FUZZ_STACK_BYTES) {
        limit.rlim_cur = FUZZ_STACK_BYTES;
        if (setrlimit(RLIMIT_STACK, &limit) != 0) {
            perror("setrlimit(RLIMIT_STACK)");
            abort();
        }
    }
}

int fuzz_has_include(const uint8_t *data, size_t size)
{
    static const char word[] = "include";
    const size_t n = sizeof word - 1;
    for (size_t i = 0; i + n < size; i++)
        if (data[i] == '@' && strncasecmp((const char *)data + i + 1, word, n) == 0)
            return 1;
    return 0;
}

static int is_zeroed(const struct fmt_tensor *t)
{
    static const struct fmt_tensor zero;
    return memcmp(t, &zero, sizeof zero) == 0;
}

void fuzz_check_read(int rc, const struct fmt_tensor *t, const char *err)
{
    if (rc != 0) {
        if (rc != -1 || !is_zeroed(t) || err[0] == '\0')
            abort();
        for (const unsigned char *c = (const unsigned char *)err; *c != '\0'; c++)
            if (*c < 0x20 || *c == 0x7f)
                abort();
        return;
    }
    const int64_t esize = host_dtype_size(t->dtype);
    if (esize == 0 || t->rank < 1 || t->rank > CLOPS_MAX_RANK || t->data == NULL)
        abort();
    int64_t elements = 1;
    for (int32_t a = 0; a < t->rank; a++) {
        if (t->shape[a] < 0 || (t->shape[a] > 0 && elements > FMT_MAX_BYTES / esize / t->shape[a]))
            abort();
        elements *= t->shape[a];
    }
    /* Read every byte, so that a buffer smaller than the shape says is an ASan report. */
    const unsigned char *bytes = t->data;
    unsigned char sum = 0;
    for (int64_t i = 0; i < elements * esize; i++)
        sum ^= bytes[i];
    volatile unsigned char sink = sum;
    (void)sink;
}
