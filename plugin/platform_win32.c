/* platform_win32.c — platform.h on Windows: SRW locks and condition variables, _beginthreadex,
 * QueryPerformanceCounter, CreateFileA with the share modes a reader needs, MoveFileExA for an
 * atomic replace, and %LOCALAPPDATA% for the cache. */
#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <malloc.h>
#include <process.h>
#include <stdlib.h>
#include <string.h>

int os_cond_wait_until(os_cond *c, os_mutex *m, int64_t deadline_ns)
{
    const int64_t left = deadline_ns - os_monotonic_ns();
    if (left <= 0)
        return 1;
    /* Milliseconds, rounded up so that a wait never ends before its deadline; a wait of more
     * than INFINITE - 1 ms is cut, and the caller, which rechecks its deadline, waits again. */
    const int64_t ms = (left + 999999) / 1000000;
    const DWORD wait = ms >= (int64_t)INFINITE ? INFINITE - 1 : (DWORD)ms;
    if (SleepConditionVariableSRW(c, m, wait, 0))
        return 0;
    return GetLastError() == ERROR_TIMEOUT && os_monotonic_ns() >= deadline_ns;
}

static BOOL CALLBACK run_once(PINIT_ONCE once, PVOID fn, PVOID *context)
{
    (void)once;
    (void)context;
    void (**call)(void) = fn;
    (*call)();
    return TRUE;
}

void os_call_once(os_once *once, void (*fn)(void))
{
    InitOnceExecuteOnce(once, run_once, &fn, NULL);
}

struct thread_start {
    void *(*fn)(void *);
    void *arg;
};

static unsigned __stdcall thread_main(void *p)
{
    struct thread_start start = *(struct thread_start *)p;
    free(p);
    start.fn(start.arg);
    return 0;
}

int os_thread_start(os_thread *t, void *(*fn)(void *), void *arg)
{
    /* _beginthreadex, not CreateThread: the C runtime sets up its per-thread state (errno,
     * strtok's) for threads it starts. */
    struct thread_start *start = malloc(sizeof *start);
    if (start == NULL)
        return ENOMEM;
    start->fn = fn;
    start->arg = arg;
    uintptr_t h = _beginthreadex(NULL, 0, thread_main, start, 0, NULL);
    if (h == 0) {
        free(start);
        return errno != 0 ? errno : EAGAIN;
    }
    *t = (HANDLE)h;
    return 0;
}

void os_thread_join(os_thread t)
{
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
}

void os_thread_detach(os_thread t)
{
    CloseHandle(t); /* the thread runs on; its handle, the only thing a join would free, goes */
}

int64_t os_monotonic_ns(void)
{
    LARGE_INTEGER frequency, now;
    QueryPerformanceFrequency(&frequency); /* fixed at boot, and cheap to read */
    QueryPerformanceCounter(&now);
    const int64_t f = frequency.QuadPart;
    return now.QuadPart / f * 1000000000 + now.QuadPart % f * 1000000000 / f;
}

int64_t os_wall_clock_ns(void)
{
    FILETIME ft;
    GetSystemTimePreciseAsFileTime(&ft);
    const int64_t ticks = (int64_t)(((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime);
    const int64_t since_1601_to_1970 = 116444736000000000; /* in 100 ns ticks */
    return (ticks - since_1601_to_1970) * 100;
}

void os_sleep_ns(int64_t ns)
{
    const int64_t end = os_monotonic_ns() + ns;
    for (int64_t left = ns; left > 0; left = end - os_monotonic_ns())
        Sleep((DWORD)((left + 999999) / 1000000));
}

long os_process_id(void)
{
    return (long)GetCurrentProcessId();
}

int os_cpu_count(void)
{
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
}

size_t os_page_size(void)
{
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwPageSize > 0 ? si.dwPageSize : 4096;
}

uint64_t os_physical_bytes(void)
{
    MEMORYSTATUSEX status = {.dwLength = sizeof status};
    return GlobalMemoryStatusEx(&status) ? (uint64_t)status.ullTotalPhys : 0;
}

void *os_aligned_alloc(size_t align, size_t bytes)
{
    return _aligned_malloc(bytes, align);
}

void os_aligned_free(void *p)
{
    _aligned_free(p);
}

/* ---- Files ---- */

static int errno_of(DWORD error)
{
    switch (error) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_DRIVE: return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION: return EACCES;
    case ERROR_ALREADY_EXISTS:
    case ERROR_FILE_EXISTS: return EEXIST;
    case ERROR_FILENAME_EXCED_RANGE: return ENAMETOOLONG;
    case ERROR_DIRECTORY: return ENOTDIR;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY: return ENOMEM;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL: return ENOSPC;
    case ERROR_WRITE_PROTECT: return EROFS;
    case ERROR_CANT_RESOLVE_FILENAME: return ELOOP;
    default: return EIO;
    }
}

static void fill_info(const BY_HANDLE_FILE_INFORMATION *bh, DWORD type, struct os_file_info *info)
{
    const DWORD a = bh->dwFileAttributes;
    info->kind = type == FILE_TYPE_PIPE               ? OS_FILE_FIFO
                 : type == FILE_TYPE_CHAR             ? OS_FILE_CHARACTER_DEVICE
                 : (a & FILE_ATTRIBUTE_REPARSE_POINT) ? OS_FILE_SYMLINK
                 : (a & FILE_ATTRIBUTE_DIRECTORY)     ? OS_FILE_DIRECTORY
                 : type == FILE_TYPE_DISK             ? OS_FILE_REGULAR
                                                      : OS_FILE_OTHER;
    info->size = ((uint64_t)bh->nFileSizeHigh << 32) | bh->nFileSizeLow;
    info->volume = bh->dwVolumeSerialNumber;
    info->index = ((uint64_t)bh->nFileIndexHigh << 32) | bh->nFileIndexLow;
}

/* Opens for reading with the share modes that let another process replace or delete the file
 * meanwhile (as on POSIX); FILE_FLAG_OPEN_REPARSE_POINT opens a link itself, not its target. */
static HANDLE open_handle(const char *path, DWORD access, int no_follow)
{
    DWORD flags = FILE_FLAG_BACKUP_SEMANTICS; /* lets a directory be opened, to be told apart */
    if (no_follow)
        flags |= FILE_FLAG_OPEN_REPARSE_POINT;
    return CreateFileA(path, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                       OPEN_EXISTING, flags, NULL);
}

static int describe(HANDLE h, struct os_file_info *info)
{
    BY_HANDLE_FILE_INFORMATION bh;
    if (!GetFileInformationByHandle(h, &bh))
        return errno_of(GetLastError());
    fill_info(&bh, GetFileType(h), info);
    return 0;
}

FILE *os_open_regular(const char *path, int flags, struct os_file_info *info)
{
    memset(info, 0, sizeof *info);
    HANDLE h = open_handle(path, GENERIC_READ, flags & OS_OPEN_NO_SYMLINK);
    if (h == INVALID_HANDLE_VALUE) {
        errno = errno_of(GetLastError());
        return NULL;
    }
    int error = describe(h, info);
    if (error == 0 && info->kind != OS_FILE_REGULAR)
        error = info->kind == OS_FILE_SYMLINK && (flags & OS_OPEN_NO_SYMLINK) ? ELOOP : EINVAL;
    int fd = error == 0 ? _open_osfhandle((intptr_t)h, _O_RDONLY | _O_BINARY) : -1;
    if (fd < 0) {
        CloseHandle(h);
        errno = error != 0 ? error : EMFILE;
        return NULL;
    }
    FILE *f = _fdopen(fd, "rb");
    if (f == NULL) {
        error = errno;
        _close(fd); /* closes the handle as well */
        errno = error;
    }
    return f;
}

int os_file_info_at(const char *path, struct os_file_info *info)
{
    /* Attributes only: a file another process holds open for writing still answers. */
    HANDLE h = open_handle(path, FILE_READ_ATTRIBUTES, 1);
    if (h == INVALID_HANDLE_VALUE)
        return errno_of(GetLastError());
    int error = describe(h, info);
    CloseHandle(h);
    return error;
}

FILE *os_create_new(const char *path)
{
    HANDLE h = CreateFileA(path, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL,
                           CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        errno = errno_of(GetLastError());
        return NULL;
    }
    int fd = _open_osfhandle((intptr_t)h, _O_WRONLY | _O_BINARY);
    FILE *f = fd >= 0 ? _fdopen(fd, "wb") : NULL;
    if (f == NULL) {
        int error = errno != 0 ? errno : EMFILE;
        if (fd >= 0)
            _close(fd);
        else
            CloseHandle(h);
        DeleteFileA(path);
        errno = error;
    }
    return f;
}

int os_is_directory(const char *path)
{
    DWORD a = GetFileAttributesA(path);
    return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY);
}

int os_dir_access(const char *path, int write)
{
    if (!os_is_directory(path))
        return ENOTDIR;
    if (!write)
        return 0;
    /* Access lists decide, and only trying tells: a file that goes when its handle closes. */
    char probe[MAX_PATH + 32];
    int n = snprintf(probe, sizeof probe, "%s\\.clops-write-probe.%lu", path,
                     (unsigned long)GetCurrentThreadId());
    if (n < 0 || (size_t)n >= sizeof probe)
        return ENAMETOOLONG;
    HANDLE h = CreateFileA(probe, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                           FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return errno_of(GetLastError());
    CloseHandle(h);
    return 0;
}

int os_make_dir(const char *path)
{
    /* The directory inherits its parent's access list: under %LOCALAPPDATA% that is the user's
     * alone, which is what mode 0700 asks for on POSIX. */
    return CreateDirectoryA(path, NULL) ? 0 : errno_of(GetLastError());
}

int os_replace_file(const char *from, const char *to)
{
    /* rename() on Windows refuses an existing target; MoveFileEx with REPLACE_EXISTING replaces
     * it in one step on NTFS (a reader that has the old file open keeps reading the old one, as
     * the cache's share modes allow). */
    if (MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
        return 0;
    return errno_of(GetLastError());
}

int os_is_path_separator(char c)
{
    return c == '/' || c == '\\';
}

int os_path_is_absolute(const char *path)
{
    const int drive = ((path[0] >= 'A' && path[0] <= 'Z') || (path[0] >= 'a' && path[0] <= 'z')) &&
                      path[1] == ':' && os_is_path_separator(path[2]);
    const int unc = os_is_path_separator(path[0]) && os_is_path_separator(path[1]);
    return drive || unc;
}

const char os_cache_dir_variables[] = "LOCALAPPDATA is not set";

int os_default_cache_dir(char *out, size_t size)
{
    const char *local = getenv("LOCALAPPDATA");
    if (local == NULL || !os_path_is_absolute(local))
        return 0;
    int n = snprintf(out, size, "%s\\clops", local);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

int64_t os_free_bytes(const char *dir)
{
    ULARGE_INTEGER available;
    if (!GetDiskFreeSpaceExA(dir, &available, NULL, NULL))
        return -1;
    return available.QuadPart > INT64_MAX ? INT64_MAX : (int64_t)available.QuadPart;
}
