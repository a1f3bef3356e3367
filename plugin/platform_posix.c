/* platform_posix.c — platform.h on Linux and other POSIX systems: pthreads, clock_gettime,
 * open(2) with O_NOFOLLOW/O_NONBLOCK, rename(2), statvfs. */
#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

int os_cond_init(os_cond *c)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc != 0)
        return rc;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

int os_cond_wait_until(os_cond *c, os_mutex *m, int64_t deadline_ns)
{
    const struct timespec deadline = {.tv_sec = (time_t)(deadline_ns / 1000000000),
                                      .tv_nsec = (long)(deadline_ns % 1000000000)};
    return pthread_cond_timedwait(c, m, &deadline) == ETIMEDOUT;
}

void os_call_once(os_once *once, void (*fn)(void))
{
    pthread_once(once, fn);
}

int os_thread_start(os_thread *t, void *(*fn)(void *), void *arg)
{
    return pthread_create(t, NULL, fn, arg);
}

void os_thread_join(os_thread t)
{
    pthread_join(t, NULL);
}

void os_thread_detach(os_thread t)
{
    pthread_detach(t);
}

static int64_t clock_ns(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t os_monotonic_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

int64_t os_wall_clock_ns(void)
{
    return clock_ns(CLOCK_REALTIME);
}

void os_sleep_ns(int64_t ns)
{
    struct timespec t = {.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        continue;
}

long os_process_id(void)
{
    return (long)getpid();
}

int os_cpu_count(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > 4096 ? 4096 : (int)cpus;
}

size_t os_page_size(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

uint64_t os_physical_bytes(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES);
    return pages > 0 ? (uint64_t)pages * os_page_size() : 0;
}

void *os_aligned_alloc(size_t align, size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, align, bytes) == 0 ? p : NULL;
}

void os_aligned_free(void *p)
{
    free(p);
}

/* ---- Files ---- */

static void fill_info(const struct stat *st, struct os_file_info *info)
{
    const mode_t mode = st->st_mode;
    info->kind = S_ISREG(mode)    ? OS_FILE_REGULAR
                 : S_ISDIR(mode)  ? OS_FILE_DIRECTORY
                 : S_ISFIFO(mode) ? OS_FILE_FIFO
                 : S_ISCHR(mode)  ? OS_FILE_CHARACTER_DEVICE
                 : S_ISBLK(mode)  ? OS_FILE_BLOCK_DEVICE
                 : S_ISSOCK(mode) ? OS_FILE_SOCKET
                 : S_ISLNK(mode)  ? OS_FILE_SYMLINK
                                  : OS_FILE_OTHER;
    info->size = st->st_size > 0 ? (uint64_t)st->st_size : 0;
    info->volume = (uint64_t)st->st_dev;
    info->index = (uint64_t)st->st_ino;
}

FILE *os_open_regular(const char *path, int flags, struct os_file_info *info)
{
    int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
    if (flags & OS_OPEN_NO_SYMLINK)
        oflags |= O_NOFOLLOW;
    memset(info, 0, sizeof *info);
    int fd = open(path, oflags);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int error = errno;
        close(fd);
        errno = error;
        return NULL;
    }
    fill_info(&st, info);
    if (info->kind != OS_FILE_REGULAR) {
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    /* Blocking reads again, as any regular file gives. */
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL) {
        int error = errno;
        close(fd);
        errno = error;
    }
    return f;
}

int os_file_info_at(const char *path, struct os_file_info *info)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno;
    fill_info(&st, info);
    return 0;
}

FILE *os_create_new(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "wb");
    if (f == NULL) {
        int error = errno;
        close(fd);
        unlink(path);
        errno = error;
    }
    return f;
}

int os_is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int os_dir_access(const char *path, int write)
{
    return access(path, (write ? W_OK : R_OK) | X_OK) == 0 ? 0 : errno;
}

int os_make_dir(const char *path)
{
    return mkdir(path, 0700) == 0 ? 0 : errno;
}

int os_replace_file(const char *from, const char *to)
{
    return rename(from, to) == 0 ? 0 : errno;
}

int os_is_path_separator(char c)
{
    return c == '/';
}

int os_path_is_absolute(const char *path)
{
    return path[0] == '/';
}

const char os_cache_dir_variables[] = "neither XDG_CACHE_HOME nor HOME is set";

int os_default_cache_dir(char *out, size_t size)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg != NULL && os_path_is_absolute(xdg))
        n = snprintf(out, size, "%s/clops", xdg);
    else if (home != NULL && home[0] != '\0')
        n = snprintf(out, size, "%s/.cache/clops", home);
    else
        return 0;
    return n < 0 || (size_t)n >= size ? -1 : n;
}

int64_t os_free_bytes(const char *dir)
{
    struct statvfs st;
    if (statvfs(dir, &st) != 0)
        return -1;
    return (int64_t)st.f_bavail * (int64_t)st.f_frsize;
}
