/* platform.h — the only part of the plugin that knows the operating system: threads, locks,
 * conditions, once, clocks, the process, aligned memory, and the few file operations the cache
 * and the configuration need. platform_posix.c and platform_win32.c implement it; the locks and
 * conditions are thin inline wrappers (pthreads; Win32 SRW locks and condition variables), so the
 * pool's hot paths pay nothing for the layer. Thread-local storage is C11's _Thread_local. */
#ifndef CLOPS_PLATFORM_H
#define CLOPS_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <pthread.h>
#endif

/* ---- Locks and conditions ---- */

#ifdef _WIN32
typedef SRWLOCK os_mutex;
typedef CONDITION_VARIABLE os_cond;
typedef INIT_ONCE os_once;
typedef HANDLE os_thread;
#define OS_MUTEX_INIT SRWLOCK_INIT
#define OS_COND_INIT CONDITION_VARIABLE_INIT
#define OS_ONCE_INIT INIT_ONCE_STATIC_INIT

static inline int os_mutex_init(os_mutex *m)
{
    InitializeSRWLock(m);
    return 0;
}
static inline void os_mutex_destroy(os_mutex *m)
{
    (void)m; /* an SRW lock holds no resources */
}
static inline void os_mutex_lock(os_mutex *m)
{
    AcquireSRWLockExclusive(m);
}
static inline void os_mutex_unlock(os_mutex *m)
{
    ReleaseSRWLockExclusive(m);
}
static inline int os_cond_init(os_cond *c)
{
    InitializeConditionVariable(c);
    return 0;
}
static inline void os_cond_destroy(os_cond *c)
{
    (void)c;
}
static inline void os_cond_wait(os_cond *c, os_mutex *m)
{
    SleepConditionVariableSRW(c, m, INFINITE, 0);
}
static inline void os_cond_signal(os_cond *c)
{
    WakeConditionVariable(c);
}
static inline void os_cond_broadcast(os_cond *c)
{
    WakeAllConditionVariable(c);
}
#else
typedef pthread_mutex_t os_mutex;
typedef pthread_cond_t os_cond;
typedef pthread_once_t os_once;
typedef pthread_t os_thread;
#define OS_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define OS_COND_INIT PTHREAD_COND_INITIALIZER
#define OS_ONCE_INIT PTHREAD_ONCE_INIT

static inline int os_mutex_init(os_mutex *m)
{
    return pthread_mutex_init(m, NULL);
}
static inline void os_mutex_destroy(os_mutex *m)
{
    pthread_mutex_destroy(m);
}
static inline void os_mutex_lock(os_mutex *m)
{
    pthread_mutex_lock(m);
}
static inline void os_mutex_unlock(os_mutex *m)
{
    pthread_mutex_unlock(m);
}
/* Timed waits measure on the monotonic clock (a change of the wall clock neither shortens nor
 * stretches them), so a condition made here is told so; OS_COND_INIT's may only be waited on
 * without a deadline. */
int os_cond_init(os_cond *c);
static inline void os_cond_destroy(os_cond *c)
{
    pthread_cond_destroy(c);
}
static inline void os_cond_wait(os_cond *c, os_mutex *m)
{
    pthread_cond_wait(c, m);
}
static inline void os_cond_signal(os_cond *c)
{
    pthread_cond_signal(c);
}
static inline void os_cond_broadcast(os_cond *c)
{
    pthread_cond_broadcast(c);
}
#endif

/* Waits on `c` (made by os_cond_init) until signalled or os_monotonic_ns() reaches `deadline_ns`;
 * returns 0, or 1 when the deadline passed. Spurious wake-ups return 0, as with any condition. */
int os_cond_wait_until(os_cond *c, os_mutex *m, int64_t deadline_ns);

/* Runs `fn` once per `once`, whatever the number of threads that get here. */
void os_call_once(os_once *once, void (*fn)(void));

/* ---- Threads ---- */

/* Starts `fn(arg)` on a new thread; returns 0, or nonzero when the system refuses one. */
int os_thread_start(os_thread *t, void *(*fn)(void *), void *arg);
void os_thread_join(os_thread t);
/* Lets `t` (which may be the calling thread) end without a join. */
void os_thread_detach(os_thread t);

/* ---- Time and the process ---- */

int64_t os_monotonic_ns(void);
int64_t os_wall_clock_ns(void); /* since 1970, for names that must differ between runs */
void os_sleep_ns(int64_t ns);
/* The process's id: work that a fork's child inherits checks it against the one it was made in
 * (on Windows there is no fork, and the check always passes). */
long os_process_id(void);
int os_cpu_count(void); /* online logical processors, at least 1 */
size_t os_page_size(void);
/* The machine's physical memory in bytes, 0 where it cannot be told. */
uint64_t os_physical_bytes(void);
/* Memory aligned to `align` (a power of two, a multiple of sizeof(void *)); NULL when none is
 * left. Freed by os_aligned_free only. */
void *os_aligned_alloc(size_t align, size_t bytes);
void os_aligned_free(void *p);

/* ---- Files ---- */

enum os_file_kind {
    OS_FILE_MISSING = 0,
    OS_FILE_REGULAR,
    OS_FILE_DIRECTORY,
    OS_FILE_FIFO,
    OS_FILE_CHARACTER_DEVICE,
    OS_FILE_BLOCK_DEVICE,
    OS_FILE_SOCKET,
    OS_FILE_SYMLINK,
    OS_FILE_OTHER,
};

/* What a path names: its kind and size, and an identity (device or volume, and file number)
 * that tells whether two looks saw the same file. */
struct os_file_info {
    enum os_file_kind kind;
    uint64_t size;
    uint64_t volume;
    uint64_t index;
};

enum os_open_flags {
    OS_OPEN_NO_SYMLINK = 1, /* refuse a symbolic link (or reparse point) at the path itself */
};

/* Opens `path` for reading and checks, on the opened file, that it is a regular file: opening a
 * FIFO without O_NONBLOCK waits for a writer forever, and a check of the name before the open
 * races with whatever replaces the file. Returns the stream (blocking reads) and fills *info, or
 * NULL with errno set; a file of another kind gives EINVAL, with info->kind saying which. */
FILE *os_open_regular(const char *path, int flags, struct os_file_info *info);

/* Fills *info for `path` itself (a symbolic link is not followed); returns 0 or an errno value. */
int os_file_info_at(const char *path, struct os_file_info *info);

/* "a FIFO", "a directory", ...: what a file of `kind` is, for messages. */
static inline const char *os_file_kind_name(enum os_file_kind kind)
{
    static const char *const names[] = {
        [OS_FILE_MISSING] = "missing",
        [OS_FILE_REGULAR] = "a regular file",
        [OS_FILE_DIRECTORY] = "a directory",
        [OS_FILE_FIFO] = "a FIFO",
        [OS_FILE_CHARACTER_DEVICE] = "a character device",
        [OS_FILE_BLOCK_DEVICE] = "a block device",
        [OS_FILE_SOCKET] = "a socket",
        [OS_FILE_SYMLINK] = "a symbolic link",
        [OS_FILE_OTHER] = "not a regular file",
    };
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : names[OS_FILE_OTHER];
}

/* Opens a new file `path` for writing (binary), failing with EEXIST when one is there already
 * (O_EXCL, CREATE_NEW). Returns the stream, or NULL with errno set. */
FILE *os_create_new(const char *path);

/* Whether `path` is a directory (a symbolic link to one counts). */
int os_is_directory(const char *path);

/* Whether the user may list and read (write = 0), or also create files in (write = 1), the
 * directory `path`: 0 or an errno value. */
int os_dir_access(const char *path, int write);

/* Makes one directory, private to the user where the system has such modes (0700); returns 0,
 * EEXIST, or another errno value. */
int os_make_dir(const char *path);

/* Renames `from` onto `to`, replacing `to` if it exists, atomically where the filesystem can: a
 * reader sees the old file or the whole new one. Returns 0 or an errno value. */
int os_replace_file(const char *from, const char *to);

/* Whether `c` separates a path's parts ('/', and '\\' on Windows), and whether `path` is
 * absolute (on Windows: a drive letter and a separator, or a UNC path). */
int os_is_path_separator(char c);
int os_path_is_absolute(const char *path);

/* The user's cache directory for clops — "$XDG_CACHE_HOME/clops" (an absolute one, as the XDG
 * spec asks), "$HOME/.cache/clops", or on Windows "%LOCALAPPDATA%\clops" — into out. Returns
 * the length, 0 when the environment names none, or -1 when it does not fit. */
int os_default_cache_dir(char *out, size_t size);
/* The variables os_default_cache_dir reads, for a message when none is set. */
extern const char os_cache_dir_variables[];

/* Bytes an unprivileged writer may still write on the filesystem holding `dir`; -1 when the
 * system does not answer. */
int64_t os_free_bytes(const char *dir);

#endif
