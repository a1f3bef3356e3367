/* output.c — writing a tensor to a file atomically: readers see the old file or the whole new
 * one, never a partial write (a workflow engine may pick the file up at any moment). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline.h"
#include "util.h"

/* mkdir -p of the directories leading to `path`. */
static int make_parents(const char *path)
{
    char *copy = host_xstrdup(path);
    int rc = 0;
    for (char *p = copy + 1; *p != '\0' && rc == 0; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0777) != 0 && errno != EEXIST)
            rc = -1;
        *p = '/';
    }
    free(copy);
    return rc;
}

static int write_all(int fd, const unsigned char *bytes, size_t size)
{
    while (size > 0) {
        ssize_t n = write(fd, bytes, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        bytes += n;
        size -= (size_t)n;
    }
    return 0;
}

/* The files are little-endian whatever the host: on a big-endian host each element's bytes
 * are reversed, a chunk at a time. */
static int write_little_endian(int fd, const void *data, int64_t elements, int64_t element_size)
{
    size_t total = (size_t)elements * (size_t)element_size;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    enum { CHUNK = 1 << 16 };
    unsigned char *buffer = host_xmalloc(CHUNK);
    const unsigned char *src = data;
    size_t step = CHUNK - CHUNK % (size_t)element_size;
    for (size_t done = 0; done < total; done += step) {
        size_t n = total - done < step ? total - done : step;
        for (size_t i = 0; i < n; i++) {
            size_t e = i - i % (size_t)element_size;
            buffer[i] = src[done + e + (size_t)element_size - 1 - i % (size_t)element_size];
        }
        if (write_all(fd, buffer, n) != 0) {
            free(buffer);
            return -1;
        }
    }
    free(buffer);
    return 0;
#else
    return write_all(fd, data, total);
#endif
}

int output_write_atomically(const char *path, const void *data, int64_t elements,
                            int64_t element_size)
{
    if (make_parents(path) != 0)
        return -1;
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0)
        return -1;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    /* mkstemp() creates 0600; the result should get the usual 0666 & ~umask. */
    mode_t mask = umask(0);
    umask(mask);
    int rc = fchmod(fd, 0666 & ~mask);
    if (rc == 0)
        rc = write_little_endian(fd, data, elements, element_size);
    if (rc == 0)
        rc = fsync(fd);
    int saved = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0)
        unlink(tmp);
    free(tmp);
    errno = saved;
    return rc;
}
