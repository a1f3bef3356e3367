/* fault_inject.h — test-only fault injection for the static core (clops_core): the test that
 * links it wraps every OpenCL function and every allocation the core calls (-Wl,--wrap, see
 * tests/CMakeLists.txt), and this switch makes the Nth of them, counted from fault_arm(), fail.
 * Nothing of it reaches libclops.so. Linking it also makes uploads on CPU devices go through
 * the pinned staging blocks that GPUs use (tensor_stage_on_cpu), so that the sweep covers them. */
#ifndef CLOPS_FAULT_INJECT_H
#define CLOPS_FAULT_INJECT_H

#include <stdint.h>

enum fault_kind {
    FAULT_OPENCL = 0, /* cl* calls: return an error code (and NULL with *errcode_ret set) */
    /* malloc, calloc, realloc, strdup: NULL; posix_memalign: ENOMEM; pthread_create: EAGAIN */
    FAULT_ALLOC = 1
};

/* Starts counting calls of `kind` (from every thread) and makes the nth fail; n = 0 only counts.
 * A failed release (clRelease*) still releases: only its return value is an error. */
void fault_arm(enum fault_kind kind, int64_t n);
/* Stops counting and failing; the counts stay readable until the next fault_arm(). */
void fault_disarm(void);
/* Stops counting and failing for a while (what a case does around its own set-up, a stream
 * made for a submitted call), and goes on as before. */
void fault_pause(void);
void fault_resume(void);
/* While on, clWaitForEvents returns CL_SUCCESS at once without waiting, as PoCL 3.1's basic
 * driver does when the queue waits for a user event not yet set. */
void fault_waits_return_at_once(int on);
/* While ms > 0, every clRelease* call sleeps that long before it releases: a window a test
 * holds open for what must not happen meanwhile. */
void fault_slow_releases(int ms);
/* Calls of `kind` counted since the last fault_arm() (the failed one included). */
int64_t fault_count(enum fault_kind kind);
/* The wrapped function that was made to fail since the last fault_arm(), or NULL. */
const char *fault_failed_function(void);
/* The OpenCL error name the failed function returned ("CL_OUT_OF_RESOURCES"), or NULL for an
 * allocation. */
const char *fault_failed_error_name(void);

#endif
