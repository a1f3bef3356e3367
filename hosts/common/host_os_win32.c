/* host_os_win32.c — host_os.h on Windows (MinGW-w64): the CRT's _-prefixed POSIX calls where
 * they do the same, Win32 where they do not (the atomic rename, the console, processes). */
#include "host_os.h"

#include <direct.h>
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <windows.h>

#include "util.h"

const char host_path_separators[] = "/\\";

int host_is_path_separator(char c)
{
    return c == '/' || c == '\\';
}

const char *host_last_path_separator(const char *path)
{
    const char *last = NULL;
    for (const char *p = path; *p != '\0'; p++)
        if (host_is_path_separator(*p))
            last = p;
    return last;
}

int host_path_is_absolute(const char *path)
{
    int drive = ((path[0] >= 'A' && path[0] <= 'Z') || (path[0] >= 'a' && path[0] <= 'z')) &&
                path[1] == ':';
    return drive || host_is_path_separator(path[0]);
}

char *host_absolute_path(const char *path)
{
    return _fullpath(NULL, path, 0);
}

int host_make_dir(const char *path)
{
    return _mkdir(path);
}

/* errno for the thread's last Win32 error, for the messages' strerror(). */
static void set_errno_from_win32(void)
{
    switch (GetLastError()) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND: errno = ENOENT; break;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION: errno = EACCES; break;
    case ERROR_ALREADY_EXISTS:
    case ERROR_FILE_EXISTS: errno = EEXIST; break;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL: errno = ENOSPC; break;
    case ERROR_NOT_SAME_DEVICE: errno = EXDEV; break;
    default: errno = EIO; break;
    }
}

/* What a file that is not a regular one is: Windows has directories, devices (NUL, CON, COM1)
 * and pipes (\\.\pipe\NAME). */
static const char *file_type_name(unsigned short mode)
{
    return (mode & _S_IFMT) == _S_IFDIR   ? "a directory"
           : (mode & _S_IFMT) == _S_IFCHR ? "a character device"
           : (mode & _S_IFMT) == _S_IFIFO ? "a pipe"
                                          : "not a regular file";
}

FILE *host_open_regular(const char *path, int64_t *size, char *err, size_t errsize)
{
    /* Opening a pipe does not wait for a writer here (CreateFile connects or fails); opening a
     * directory fails with EACCES, so it is told by its attributes. */
    int fd = _open(path, _O_RDONLY | _O_BINARY | _O_NOINHERIT);
    struct _stat64 st;
    if (fd < 0) {
        int e = errno;
        if (_stat64(path, &st) == 0 && (st.st_mode & _S_IFMT) == _S_IFDIR)
            snprintf(err, errsize,
                     "%s: is a directory, not a regular file; only regular files "
                     "are read",
                     path);
        else
            snprintf(err, errsize, "%s: cannot open: %s", path, strerror(e));
        return NULL;
    }
    if (_fstat64(fd, &st) != 0) {
        snprintf(err, errsize, "%s: cannot stat: %s", path, strerror(errno));
        _close(fd);
        return NULL;
    }
    if ((st.st_mode & _S_IFMT) != _S_IFREG) {
        snprintf(err, errsize, "%s: is %s, not a regular file; only regular files are read", path,
                 file_type_name(st.st_mode));
        _close(fd);
        return NULL;
    }
    FILE *f = _fdopen(fd, "rb");
    if (f == NULL) {
        snprintf(err, errsize, "%s: cannot open: %s", path, strerror(errno));
        _close(fd);
        return NULL;
    }
    *size = (int64_t)st.st_size;
    return f;
}

FILE *host_create_temp(char *pattern)
{
    /* MinGW's mkstemp opens with _O_CREAT | _O_EXCL | _O_BINARY: a new file, no \n to \r\n. */
    int fd = mkstemp(pattern);
    if (fd < 0)
        return NULL;
    FILE *f = _fdopen(fd, "wb");
    if (f == NULL) {
        int e = errno;
        _close(fd);
        remove(pattern);
        errno = e;
    }
    return f;
}

int host_sync_file(FILE *f)
{
    /* _commit is FlushFileBuffers on the descriptor's handle. */
    return _commit(_fileno(f));
}

int host_replace_file(const char *from, const char *to)
{
    /* WRITE_THROUGH: the call returns once the move is on the disk, as the POSIX side's sync of
     * the directory makes sure of. */
    if (MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
        return 0;
    set_errno_from_win32();
    return -1;
}

void host_sync_dir(const char *dir)
{
    (void)dir;
}

/* dir\name, or NULL when out of memory. */
static char *join(const char *dir, const char *name)
{
    char *path = NULL;
    return asprintf(&path, "%s\\%s", dir, name) < 0 ? NULL : path;
}

/* A FILETIME's 100 ns ticks. */
static ULONGLONG ticks(FILETIME t)
{
    return (ULONGLONG)t.dwHighDateTime << 32 | t.dwLowDateTime;
}

int host_file_older_than(const char *dir, const char *name, double age_s)
{
    char *path = join(dir, name);
    WIN32_FILE_ATTRIBUTE_DATA data;
    FILETIME now;
    GetSystemTimeAsFileTime(&now);
    /* A link (a reparse point) is not followed: it is not a regular file. */
    int old = path != NULL && GetFileAttributesExA(path, GetFileExInfoStandard, &data) &&
              !(data.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT |
                                         FILE_ATTRIBUTE_DEVICE)) &&
              (double)(ticks(now) - ticks(data.ftLastWriteTime)) * 1e-7 >= age_s;
    free(path);
    return old;
}

void host_remove_in_dir(const char *dir, const char *name)
{
    char *path = join(dir, name);
    if (path != NULL)
        DeleteFileA(path); /* a link is removed itself, never its target */
    free(path);
}

int host_memory_stream_open(struct host_memory_stream *m)
{
    m->f = NULL;
    m->text = NULL;
    m->size = 0;
    char dir[MAX_PATH + 1], path[MAX_PATH + 1];
    DWORD length = GetTempPathA(sizeof dir, dir);
    if (length == 0 || length > sizeof dir || GetTempFileNameA(dir, "clo", 0, path) == 0) {
        set_errno_from_win32();
        return -1;
    }
    /* D: deleted when closed (_O_TEMPORARY); T: kept in memory while the cache can (a hint). */
    m->f = fopen(path, "w+bTD");
    if (m->f == NULL) {
        int e = errno;
        remove(path);
        errno = e;
    }
    return m->f != NULL ? 0 : -1;
}

int host_memory_stream_close(struct host_memory_stream *m)
{
    long size = fflush(m->f) == 0 && !ferror(m->f) ? ftell(m->f) : -1;
    char *text = size >= 0 ? malloc((size_t)size + 1) : NULL;
    if (text != NULL) {
        rewind(m->f);
        if (fread(text, 1, (size_t)size, m->f) == (size_t)size) {
            text[size] = '\0';
        } else {
            free(text);
            text = NULL;
        }
    }
    fclose(m->f);
    m->f = NULL;
    m->text = text;
    m->size = text != NULL ? (size_t)size : 0;
    return text != NULL ? 0 : -1;
}

double host_now_ms(void)
{
    static LARGE_INTEGER frequency; /* fixed at boot: reading it twice is harmless */
    LARGE_INTEGER now;
    if (frequency.QuadPart == 0)
        QueryPerformanceFrequency(&frequency);
    QueryPerformanceCounter(&now);
    return (double)now.QuadPart * 1e3 / (double)frequency.QuadPart;
}

long host_process_id(void)
{
    return (long)GetCurrentProcessId();
}

int host_process_gone(long pid)
{
    if (pid <= 0)
        return 0;
    HANDLE process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    if (process == NULL)
        return GetLastError() == ERROR_INVALID_PARAMETER; /* no such process (else: denied) */
    /* A process that has ended but whose handle someone holds still opens. */
    DWORD code = 0;
    int gone = GetExitCodeProcess(process, &code) && code != STILL_ACTIVE;
    CloseHandle(process);
    return gone;
}

/* The console behind `f`, or NULL: _isatty is also true of the NUL device. */
static HANDLE console_of(FILE *f)
{
    int fd = _fileno(f);
    HANDLE h = fd >= 0 ? (HANDLE)_get_osfhandle(fd) : INVALID_HANDLE_VALUE;
    DWORD mode;
    return h != INVALID_HANDLE_VALUE && GetConsoleMode(h, &mode) ? h : NULL;
}

int host_is_terminal(FILE *f)
{
    return console_of(f) != NULL;
}

int host_terminal_columns(FILE *f)
{
    HANDLE console = console_of(f);
    CONSOLE_SCREEN_BUFFER_INFO info;
    if (console == NULL || !GetConsoleScreenBufferInfo(console, &info))
        return 0;
    return info.srWindow.Right - info.srWindow.Left + 1;
}

void host_machine_name(char *out, size_t size)
{
    DWORD length = size > 0xFFFF ? 0xFFFF : (DWORD)size;
    if (size > 0 && !GetComputerNameExA(ComputerNameDnsHostname, out, &length))
        out[0] = '\0';
}

int host_utc_time(time_t t, struct tm *out)
{
    return gmtime_s(out, &t) == 0 ? 0 : -1;
}
