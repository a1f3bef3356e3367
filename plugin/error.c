/* error.c — thread-local error messages, status and OpenCL error names, the log callback. */
#include "error.h"

#include "cl_names.h"

#include "platform.h"
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LOG_MESSAGE_MAX = 2048, LOG_HELD_MAX = 64 };

static _Thread_local char last_message[ERR_MESSAGE_MAX];

/* The callback is called without any lock held, so that it may call into clops (even
 * set_log_callback). `log_lock` guards the callback's identity and the count of its calls in
 * progress: set_log_callback moves the calls of the callback it replaces to `log_calls_replaced`
 * and, unless called from a callback, waits for that count to drop to zero. */
static os_mutex log_lock = OS_MUTEX_INIT;
static os_cond log_replaced_returned = OS_COND_INIT;
static clops_log_fn log_fn;
static void *log_user;
static int32_t log_level = CLOPS_LOG_WARNING;
static uint64_t log_generation; /* bumped by every set_log_callback */
static int64_t log_calls_current, log_calls_replaced;
/* log_level, readable without the lock: most messages are filtered out before formatting. */
static atomic_int log_max_level = CLOPS_LOG_WARNING;

/* This thread is running the callback: messages it logs meanwhile are dropped (delivering them
 * would call the callback from itself, without end if each call logs). */
static _Thread_local int in_log_callback;
/* The thread's last message while the callback runs, which may call into clops and so set it:
 * restored for the caller of the call that logged. */
static _Thread_local char saved_message[ERR_MESSAGE_MAX];

/* Messages logged while this thread holds a clops lock (log_defer_begin/end), delivered once it
 * is released: a callback that calls into clops would otherwise wait for that lock forever. */
struct held_message {
    struct held_message *next;
    int32_t level;
    char text[];
};
static _Thread_local struct {
    int depth;
    int count, dropped;
    struct held_message *first, *last;
} held;

void log_set_callback(clops_log_fn fn, void *user, int32_t max_level)
{
    os_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    log_level = max_level;
    atomic_store(&log_max_level, max_level);
    log_generation++;
    log_calls_replaced += log_calls_current;
    log_calls_current = 0;
    /* From inside a callback it does not wait: two callbacks replacing the callback at once
     * would wait for each other. */
    while (!in_log_callback && log_calls_replaced > 0)
        os_cond_wait(&log_replaced_returned, &log_lock);
    os_mutex_unlock(&log_lock);
}

static void log_deliver(int32_t level, const char *text)
{
    os_mutex_lock(&log_lock);
    clops_log_fn fn = level <= log_level ? log_fn : NULL;
    void *user = log_user;
    uint64_t generation = log_generation;
    if (fn != NULL)
        log_calls_current++;
    os_mutex_unlock(&log_lock);
    if (fn == NULL)
        return;
    size_t used = strlen(last_message) + 1;
    memcpy(saved_message, last_message, used);
    in_log_callback = 1;
    fn(level, text, user);
    in_log_callback = 0;
    memcpy(last_message, saved_message, used);
    os_mutex_lock(&log_lock);
    if (generation == log_generation)
        log_calls_current--;
    else if (--log_calls_replaced == 0)
        os_cond_broadcast(&log_replaced_returned);
    os_mutex_unlock(&log_lock);
}

static void log_hold(int32_t level, const char *text)
{
    size_t size = strlen(text) + 1;
    struct held_message *m = held.count < LOG_HELD_MAX ? malloc(sizeof *m + size) : NULL;
    if (m == NULL) {
        held.dropped++;
        return;
    }
    m->next = NULL;
    m->level = level;
    memcpy(m->text, text, size);
    if (held.last != NULL)
        held.last->next = m;
    else
        held.first = m;
    held.last = m;
    held.count++;
}

void log_defer_begin(void)
{
    held.depth++;
}

void log_defer_end(void)
{
    if (--held.depth > 0)
        return;
    struct held_message *m = held.first;
    int dropped = held.dropped;
    held.first = held.last = NULL;
    held.count = held.dropped = 0;
    while (m != NULL) {
        struct held_message *next = m->next;
        log_deliver(m->level, m->text);
        free(m);
        m = next;
    }
    if (dropped > 0) {
        char text[LOG_MESSAGE_MAX];
        snprintf(text, sizeof text,
                 "log: %d message(s) dropped (out of host memory, or more than %d logged under one "
                 "lock)",
                 dropped, (int)LOG_HELD_MAX);
        log_deliver(CLOPS_LOG_WARNING, text);
    }
}

static void log_vmsg(int32_t level, const char *fmt, va_list ap)
{
    if (level > atomic_load(&log_max_level) || in_log_callback)
        return;
    char text[LOG_MESSAGE_MAX];
    vsnprintf(text, sizeof text, fmt, ap);
    if (held.depth > 0)
        log_hold(level, text);
    else
        log_deliver(level, text);
}

void log_msg(int32_t level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, fmt, ap);
    va_end(ap);
}

int32_t err_set(int32_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    log_msg(CLOPS_LOG_DEBUG, "%s: %s", err_status_name(status), last_message);
    return status;
}

int32_t err_cl(cl_int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof last_message)
        snprintf(last_message + n, sizeof last_message - (size_t)n, ": %s (%d)",
                 cl_error_name(code), (int)code);
    int32_t status = CLOPS_ERR_DEVICE;
    if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
        code == CL_INVALID_BUFFER_SIZE)
        status = CLOPS_ERR_OUT_OF_DEVICE_MEMORY;
    else if (code == CL_OUT_OF_HOST_MEMORY)
        status = CLOPS_ERR_OUT_OF_HOST_MEMORY;
    log_msg(CLOPS_LOG_DEBUG, "%s: %s", err_status_name(status), last_message);
    return status;
}

void err_append(const char *text)
{
    size_t used = strlen(last_message);
    if (used + 1 < sizeof last_message)
        snprintf(last_message + used, sizeof last_message - used, "%s", text);
}

void err_prefix(const char *op)
{
    size_t n = strlen(op) + 2, used = strlen(last_message);
    if (n >= sizeof last_message)
        return;
    if (used + n >= sizeof last_message) /* the end of a long build log gives way */
        used = sizeof last_message - n - 1;
    memmove(last_message + n, last_message, used);
    last_message[n + used] = '\0';
    memcpy(last_message, op, n - 2);
    memcpy(last_message + n - 2, ": ", 2);
}

void err_clear(void)
{
    last_message[0] = '\0';
}

const char *err_last(void)
{
    return last_message;
}

void err_restore(const char *message)
{
    if (message != last_message)
        snprintf(last_message, sizeof last_message, "%s", message);
}

const char *err_status_name(int32_t status)
{
    switch (status) {
    case CLOPS_OK: return "CLOPS_OK";
    case CLOPS_ERR_INVALID_ARGUMENT: return "CLOPS_ERR_INVALID_ARGUMENT";
    case CLOPS_ERR_UNSUPPORTED: return "CLOPS_ERR_UNSUPPORTED";
    case CLOPS_ERR_OUT_OF_DEVICE_MEMORY: return "CLOPS_ERR_OUT_OF_DEVICE_MEMORY";
    case CLOPS_ERR_OUT_OF_HOST_MEMORY: return "CLOPS_ERR_OUT_OF_HOST_MEMORY";
    case CLOPS_ERR_DEVICE: return "CLOPS_ERR_DEVICE";
    case CLOPS_ERR_BUILD: return "CLOPS_ERR_BUILD";
    case CLOPS_ERR_CONFIG: return "CLOPS_ERR_CONFIG";
    case CLOPS_ERR_IO: return "CLOPS_ERR_IO";
    case CLOPS_ERR_NOT_FOUND: return "CLOPS_ERR_NOT_FOUND";
    case CLOPS_ERR_ABI_MISMATCH: return "CLOPS_ERR_ABI_MISMATCH";
    case CLOPS_ERR_NO_DEVICE: return "CLOPS_ERR_NO_DEVICE";
    case CLOPS_ERR_INTERNAL: return "CLOPS_ERR_INTERNAL";
    case CLOPS_ERR_CANCELLED: return "CLOPS_ERR_CANCELLED";
    case CLOPS_ERR_TIMEOUT: return "CLOPS_ERR_TIMEOUT";
    default: return "CLOPS_ERR_UNKNOWN_STATUS";
    }
}
