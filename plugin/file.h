/* file.h — opening the files the plugin reads (pool configurations, kernel sources, cache
 * entries) without ever blocking on something that is not a regular file. */
#ifndef CLOPS_FILE_H
#define CLOPS_FILE_H

#include <stdio.h>
#include <sys/stat.h>

enum file_open_flags {
    FILE_NO_SYMLINK = 1, /* refuse a symbolic link at the path itself (ELOOP) */
};

/* Opens `path` for reading and checks, on the opened descriptor, that it is a regular file:
 * opening a FIFO without O_NONBLOCK waits for a writer forever, and a check of the name before
 * the open races with whatever replaces the file. Returns the stream (blocking reads again) and
 * fills *st, or NULL with errno set; a file of another type gives EINVAL, and *st still says
 * what it is (see file_type_name). */
FILE *file_open_regular(const char *path, int flags, struct stat *st);

/* "a FIFO", "a directory", ...: what a file of `mode` is, for messages. */
const char *file_type_name(mode_t mode);

#endif
