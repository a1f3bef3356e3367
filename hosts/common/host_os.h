/* host_os.h — what the host programs need of the operating system beyond C11, behind one small
 * interface with one file per OS (host_os_posix.c, host_os_win32.c), as plugin/platform.h is for
 * the plugin: paths and their separators, directories, the atomic replacement of a file and its
 * sync, processes, the terminal, the machine's name and the time of day in UTC. */
#ifndef CLOPS_HOST_OS_H
#define CLOPS_HOST_OS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* The characters that separate a path's components: "/" on POSIX, "/\\" on Windows (which
 * takes either). */
extern const char host_path_separators[];
/* Whether `c` is one of host_path_separators. */
int host_is_path_separator(char c);
/* The last separator in `path`, or NULL. */
const char *host_last_path_separator(const char *path);
/* Whether `path` is absolute: "/x"; on Windows also "\\x", "C:\\x", "C:/x" and "C:x" (a drive's
 * path is never joined to a directory). */
int host_path_is_absolute(const char *path);
/* `path` made absolute, malloc'd (realpath: links resolved and the file must exist; _fullpath on
 * Windows); NULL with errno set. */
char *host_absolute_path(const char *path);

/* Makes the directory `path` (0777 & ~umask on POSIX). 0, or -1 with errno (EEXIST when
 * something of that name exists). */
int host_make_dir(const char *path);
/* Opens `path` for reading if it is a regular file, without blocking on a FIFO (the type is
 * checked on the opened descriptor); *size is its size. NULL with err filled ("x.npy: is a FIFO
 * (named pipe), not a regular file; only regular files are read"), otherwise. */
FILE *host_open_regular(const char *path, int64_t *size, char *err, size_t errsize);
/* Creates a new file from `pattern`, whose last six characters are XXXXXX (replaced), for
 * writing in binary mode, readable by others as a file made by fopen would be. NULL with errno
 * set. */
FILE *host_create_temp(char *pattern);
/* Flushes `f`'s data to the disk (fsync; FlushFileBuffers). 0, or -1 with errno. */
int host_sync_file(FILE *f);
/* Renames `from` over `to` in one step: a reader sees the old file or the new one (rename; on
 * Windows MoveFileEx with MOVEFILE_REPLACE_EXISTING, where rename refuses an existing target).
 * 0, or -1 with errno. */
int host_replace_file(const char *from, const char *to);
/* Makes a rename in directory `dir` durable (fsync of the directory); nothing on Windows, whose
 * file systems journal the rename itself. Best effort. */
void host_sync_dir(const char *dir);
/* Whether regular file `name` in directory `dir` was last written `age_s` seconds ago or
 * longer, not following a link. */
int host_file_older_than(const char *dir, const char *name, double age_s);
/* Removes file `name` in directory `dir`, not following a link. Best effort. */
void host_remove_in_dir(const char *dir, const char *name);

/* A stream whose text is kept in memory, for a document written in pieces and then used whole:
 * open_memstream on POSIX; on Windows, which has none, a temporary file deleted when closed. */
struct host_memory_stream {
    FILE *f;    /* written to between open and close */
    char *text; /* after close: what was written, NUL-terminated, malloc'd (the caller frees) */
    size_t size;
};
/* Opens m->f. 0, or -1 with errno. */
int host_memory_stream_open(struct host_memory_stream *m);
/* Closes m->f; m->text and m->size then hold what was written. 0, or -1 (m->text NULL) when a
 * write or the close failed. */
int host_memory_stream_close(struct host_memory_stream *m);

/* This process's id. */
long host_process_id(void);
/* Whether no process of id `pid` runs on this machine (1), or one does or cannot be told (0). */
int host_process_gone(long pid);

/* Whether `f` is a terminal (or a Windows console). */
int host_is_terminal(FILE *f);
/* The width of the terminal `f` is, in columns; 0 when it is none. */
int host_terminal_columns(FILE *f);

/* This machine's name into `out` ("" when it cannot be told). */
void host_machine_name(char *out, size_t size);
/* `t` in UTC, into *out; 0, or -1. */
int host_utc_time(time_t t, struct tm *out);

#endif
