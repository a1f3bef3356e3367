/* error.h — the thread-local last-error message, status names, OpenCL error names and the
 * host log callback. Every failing path in the plugin goes through err_set()/err_cl(). */
#ifndef CLOPS_ERROR_H
#define CLOPS_ERROR_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdint.h>

#include "clops.h"

#if defined(__MINGW32__)
/* MinGW's C99 printf (__USE_MINGW_ANSI_STDIO, set by the build), which knows %zu and %lld. */
#define CLOPS_PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__)
#define CLOPS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLOPS_PRINTF(f, a)
#endif

/* The longest message kept, its NUL included: build logs can be long; the message keeps the
 * first part, which holds the first errors. */
enum { ERR_MESSAGE_MAX = 16384 };

/* Sets this thread's message (printf-style), logs it at CLOPS_LOG_DEBUG, returns `status`. */
int32_t err_set(int32_t status, const char *fmt, ...) CLOPS_PRINTF(2, 3);
/* For a failed OpenCL call: maps `code` to a status (allocation failures to
 * CLOPS_ERR_OUT_OF_DEVICE_MEMORY, the rest to CLOPS_ERR_DEVICE) and appends the error's name,
 * e.g. "gemm: clEnqueueNDRangeKernel failed: CL_OUT_OF_RESOURCES (-5)". */
int32_t err_cl(cl_int code, const char *fmt, ...) CLOPS_PRINTF(2, 3);
/* Appends text to this thread's message (used for build logs). */
void err_append(const char *text);
/* Puts "<op>: " in front of this thread's message: an operator naming itself before what a
 * building block it called reported ("lu: gemm: clSetKernelArg(3) failed: ..."). */
void err_prefix(const char *op);
void err_clear(void);
const char *err_last(void);
/* Sets this thread's message to `message` (at most ERR_MESSAGE_MAX bytes are kept) without
 * logging it: a call's error, logged when it was set, read back by the thread that called. */
void err_restore(const char *message);

const char *err_status_name(int32_t status);

/* The host's callback, with the semantics stated next to set_log_callback in clops.h. */
void log_set_callback(clops_log_fn fn, void *user, int32_t max_level);
void log_msg(int32_t level, const char *fmt, ...) CLOPS_PRINTF(2, 3);
/* Around a section that holds a clops lock: what the thread logs inside is delivered at the
 * (outermost) end, after the lock is released, because the callback may call into clops and want
 * that lock. Nests. */
void log_defer_begin(void);
void log_defer_end(void);

#endif
