/* host_os_posix.c — host_os.h on POSIX systems (Linux): the calls the hosts made directly
 * before they were built for Windows too. */
#include "host_os.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

const char host_path_separators[] = "/";

int host_is_path_separator(char c)
{
    return c == '/';
}

const char *host_last_path_separator(const char *path)
{
    return strrchr(path, '/');
}

int host_path_is_absolute(const char *path)
{
    return path[0] == '/';
}

char *host_absolute_path(const char *path)
{
    return realpath(path, NULL);
}

int host_make_dir(const char *path)
{
    return mkdir(path, 0777);
}

/* "a FIFO (named pipe)", "a directory", ...: what a file that is not a regular one is. */
static const char *file_type_name(mode_t mode)
{
    return S_ISFIFO(mode)   ? "a FIFO (named pipe)"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

FILE *host_open_regular(const char *path, int64_t *size, char *err, size_t errsize)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. The
     * type is checked on the opened descriptor, so nothing can swap the file in between. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errsize, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errsize, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errsize, "%s: is %s, not a regular file; only regular files are read", path,
                 file_type_name(st.st_mode));
        close(fd);
        return NULL;
    }
    int flags = fcntl(fd, F_GETFL);
    FILE *f = flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL) {
        snprintf(err, errsize, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    *size = (int64_t)st.st_size;
    return f;
}

FILE *host_create_temp(char *pattern)
{
    int fd = mkstemp(pattern);
    if (fd < 0)
        return NULL;
    /* mkstemp() creates 0600; the result should get the usual 0666 & ~umask. */
    mode_t mask = umask(0);
    umask(mask);
    FILE *f = fchmod(fd, 0666 & ~mask) == 0 ? fdopen(fd, "wb") : NULL;
    if (f == NULL) {
        int e = errno;
        close(fd);
        unlink(pattern);
        errno = e;
    }
    return f;
}

int host_sync_file(FILE *f)
{
    return fsync(fileno(f));
}

int host_replace_file(const char *from, const char *to)
{
    return rename(from, to);
}

void host_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* dir/name, or NULL when out of memory. */
static char *join(const char *dir, const char *name)
{
    char *path = NULL;
    return asprintf(&path, "%s/%s", dir, name) < 0 ? NULL : path;
}

int host_file_older_than(const char *dir, const char *name, double age_s)
{
    char *path = join(dir, name);
    struct stat st;
    int old = path != NULL && lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
              difftime(time(NULL), st.st_mtime) >= age_s;
    free(path);
    return old;
}

void host_remove_in_dir(const char *dir, const char *name)
{
    char *path = join(dir, name);
    if (path != NULL)
        unlink(path);
    free(path);
}

int host_memory_stream_open(struct host_memory_stream *m)
{
    m->text = NULL;
    m->size = 0;
    m->f = open_memstream(&m->text, &m->size);
    return m->f != NULL ? 0 : -1;
}

int host_memory_stream_close(struct host_memory_stream *m)
{
    int failed = ferror(m->f);
    if (fclose(m->f) != 0 || failed) {
        free(m->text);
        m->text = NULL;
        m->size = 0;
    }
    m->f = NULL;
    return m->text != NULL ? 0 : -1;
}

double host_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

long host_process_id(void)
{
    return (long)getpid();
}

int host_process_gone(long pid)
{
    /* kill(pid, 0) fails with ESRCH only when no such process exists (EPERM: it does). */
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int host_is_terminal(FILE *f)
{
    int fd = fileno(f);
    return fd >= 0 && isatty(fd);
}

int host_terminal_columns(FILE *f)
{
    struct winsize size;
    return host_is_terminal(f) && ioctl(fileno(f), TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
}

void host_machine_name(char *out, size_t size)
{
    if (size == 0)
        return;
    if (gethostname(out, size - 1) != 0)
        out[0] = '\0';
    out[size - 1] = '\0';
}

int host_utc_time(time_t t, struct tm *out)
{
    return gmtime_r(&t, out) != NULL ? 0 : -1;
}
