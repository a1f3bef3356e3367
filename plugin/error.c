/* error.c — thread-local error messages, status and OpenCL error names, the log callback. */
#include "error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Build logs can be long; the message keeps the first part, which holds the first errors. */
enum { ERR_MESSAGE_MAX = 16384 };

static _Thread_local char last_message[ERR_MESSAGE_MAX];

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static clops_log_fn log_fn;
static void *log_user;
static atomic_int log_max_level = CLOPS_LOG_WARNING;

void log_set_callback(clops_log_fn fn, void *user, int32_t max_level)
{
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    atomic_store(&log_max_level, max_level);
    pthread_mutex_unlock(&log_lock);
}

static void log_vmsg(int32_t level, const char *fmt, va_list ap)
{
    if (level > atomic_load(&log_max_level))
        return;
    char text[2048];
    vsnprintf(text, sizeof text, fmt, ap);
    /* The lock keeps a callback from being swapped out while it runs. */
    pthread_mutex_lock(&log_lock);
    if (log_fn != NULL)
        log_fn(level, text, log_user);
    pthread_mutex_unlock(&log_lock);
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
        snprintf(last_message + n, sizeof last_message - (size_t)n, ": %s (%d)", err_cl_name(code),
                 (int)code);
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

void err_clear(void) { last_message[0] = '\0'; }

const char *err_last(void) { return last_message; }

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
    default: return "CLOPS_ERR_UNKNOWN_STATUS";
    }
}

#define CL_NAME(code)                                                                              \
    case code: return #code
const char *err_cl_name(cl_int code)
{
    switch (code) {
        CL_NAME(CL_SUCCESS);
        CL_NAME(CL_DEVICE_NOT_FOUND);
        CL_NAME(CL_DEVICE_NOT_AVAILABLE);
        CL_NAME(CL_COMPILER_NOT_AVAILABLE);
        CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE);
        CL_NAME(CL_OUT_OF_RESOURCES);
        CL_NAME(CL_OUT_OF_HOST_MEMORY);
        CL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE);
        CL_NAME(CL_MEM_COPY_OVERLAP);
        CL_NAME(CL_IMAGE_FORMAT_MISMATCH);
        CL_NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED);
        CL_NAME(CL_BUILD_PROGRAM_FAILURE);
        CL_NAME(CL_MAP_FAILURE);
        CL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET);
        CL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
        CL_NAME(CL_COMPILE_PROGRAM_FAILURE);
        CL_NAME(CL_LINKER_NOT_AVAILABLE);
        CL_NAME(CL_LINK_PROGRAM_FAILURE);
        CL_NAME(CL_DEVICE_PARTITION_FAILED);
        CL_NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
        CL_NAME(CL_INVALID_VALUE);
        CL_NAME(CL_INVALID_DEVICE_TYPE);
        CL_NAME(CL_INVALID_PLATFORM);
        CL_NAME(CL_INVALID_DEVICE);
        CL_NAME(CL_INVALID_CONTEXT);
        CL_NAME(CL_INVALID_QUEUE_PROPERTIES);
        CL_NAME(CL_INVALID_COMMAND_QUEUE);
        CL_NAME(CL_INVALID_HOST_PTR);
        CL_NAME(CL_INVALID_MEM_OBJECT);
        CL_NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
        CL_NAME(CL_INVALID_IMAGE_SIZE);
        CL_NAME(CL_INVALID_SAMPLER);
        CL_NAME(CL_INVALID_BINARY);
        CL_NAME(CL_INVALID_BUILD_OPTIONS);
        CL_NAME(CL_INVALID_PROGRAM);
        CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE);
        CL_NAME(CL_INVALID_KERNEL_NAME);
        CL_NAME(CL_INVALID_KERNEL_DEFINITION);
        CL_NAME(CL_INVALID_KERNEL);
        CL_NAME(CL_INVALID_ARG_INDEX);
        CL_NAME(CL_INVALID_ARG_VALUE);
        CL_NAME(CL_INVALID_ARG_SIZE);
        CL_NAME(CL_INVALID_KERNEL_ARGS);
        CL_NAME(CL_INVALID_WORK_DIMENSION);
        CL_NAME(CL_INVALID_WORK_GROUP_SIZE);
        CL_NAME(CL_INVALID_WORK_ITEM_SIZE);
        CL_NAME(CL_INVALID_GLOBAL_OFFSET);
        CL_NAME(CL_INVALID_EVENT_WAIT_LIST);
        CL_NAME(CL_INVALID_EVENT);
        CL_NAME(CL_INVALID_OPERATION);
        CL_NAME(CL_INVALID_GL_OBJECT);
        CL_NAME(CL_INVALID_BUFFER_SIZE);
        CL_NAME(CL_INVALID_MIP_LEVEL);
        CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE);
        CL_NAME(CL_INVALID_PROPERTY);
        CL_NAME(CL_INVALID_IMAGE_DESCRIPTOR);
        CL_NAME(CL_INVALID_COMPILER_OPTIONS);
        CL_NAME(CL_INVALID_LINKER_OPTIONS);
        CL_NAME(CL_INVALID_DEVICE_PARTITION_COUNT);
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL_UNKNOWN_ERROR";
    }
}
