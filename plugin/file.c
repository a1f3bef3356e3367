/* file.c — opening the files the plugin reads, refusing anything but regular files. */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

const char *file_type_name(mode_t mode)
{
    return S_ISREG(mode)    ? "a regular file"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISLNK(mode)  ? "a symbolic link"
                            : "not a regular file";
}

FILE *file_open_regular(const char *path, int flags, struct stat *st)
{
    int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
    if (flags & FILE_NO_SYMLINK)
        oflags |= O_NOFOLLOW;
    st->st_mode = 0;
    int fd = open(path, oflags);
    if (fd < 0)
        return NULL;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        int error = S_ISREG(st->st_mode) ? errno : EINVAL;
        close(fd);
        errno = error;
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
