/* fault_inject.c — see fault_inject.h. Each __wrap_X below replaces X for the core's calls
 * (tests/CMakeLists.txt passes -Wl,--wrap=X for every __wrap_ defined here, and the test
 * fault_inject_wraps_every_call checks that this covers every OpenCL function and allocation
 * libclops_core.a calls). A wrapper counts the call while armed and fails the nth; otherwise it
 * calls the real function (__real_X). */
#include "fault_inject.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "tensor.h"

/* The sweep runs on PoCL, where uploads would skip the pinned staging blocks that every GPU
 * uses (tensor.h): it stages there too, so that every call of that path is swept as well. */
__attribute__((constructor)) static void stage_as_on_a_gpu(void)
{
    tensor_stage_on_cpu = 1;
}

static atomic_int armed_kind = -1; /* enum fault_kind, or -1 when disarmed */
static atomic_llong fail_at;
static atomic_llong counts[2];
static _Atomic(const char *) failed_function;
static _Atomic(const char *) failed_error;

void fault_arm(enum fault_kind kind, int64_t n)
{
    atomic_store(&armed_kind, -1);
    atomic_store(&counts[FAULT_OPENCL], 0);
    atomic_store(&counts[FAULT_ALLOC], 0);
    atomic_store(&failed_function, NULL);
    atomic_store(&failed_error, NULL);
    atomic_store(&fail_at, n);
    atomic_store(&armed_kind, (int)kind);
}

void fault_disarm(void)
{
    atomic_store(&armed_kind, -1);
}

static atomic_int paused_kind = -1;

void fault_pause(void)
{
    atomic_store(&paused_kind, atomic_exchange(&armed_kind, -1));
}

void fault_resume(void)
{
    atomic_store(&armed_kind, atomic_exchange(&paused_kind, -1));
}

int64_t fault_count(enum fault_kind kind)
{
    return atomic_load(&counts[kind]);
}

const char *fault_failed_function(void)
{
    return atomic_load(&failed_function);
}

const char *fault_failed_error_name(void)
{
    return atomic_load(&failed_error);
}

/* Counts a call of `kind` to `function`; 1 when it is the one to fail. */
static int should_fail(enum fault_kind kind, const char *function, const char *error)
{
    if (atomic_load(&armed_kind) != (int)kind)
        return 0;
    long long n = atomic_fetch_add(&counts[kind], 1) + 1;
    if (n != atomic_load(&fail_at))
        return 0;
    atomic_store(&failed_function, function);
    atomic_store(&failed_error, error);
    return 1;
}

/* The error an OpenCL call is made to return: what a driver out of resources answers. */
#define CL_FAIL(function) should_fail(FAULT_OPENCL, #function, "CL_OUT_OF_RESOURCES")
/* Buffers fail the way an allocation on a full device does. */
#define CL_FAIL_ALLOC(function)                                                                    \
    should_fail(FAULT_OPENCL, #function, "CL_MEM_OBJECT_ALLOCATION_FAILURE")

/* The real function of a wrapper: -Wl,--wrap=X sends the core's calls of X to __wrap_X, and
 * __wrap_X's calls of __real_X to X. */
#define REAL(function) extern __typeof__(function) __real_##function
/* What the wrapper of an OpenCL function that returns a status returns: the error when this call
 * is made to fail, else the real function's status. */
#define STATUS_OR_REAL(function, ...)                                                              \
    (CL_FAIL(function) ? CL_OUT_OF_RESOURCES : __real_##function(__VA_ARGS__))

/* For the functions that create an object: NULL, with the code in *errcode_ret. */
static void *failed_create(cl_int *errcode_ret, cl_int code)
{
    if (errcode_ret != NULL)
        *errcode_ret = code;
    return NULL;
}

/* What the wrapper of an OpenCL function that creates an object returns: NULL with the error in
 * *errcode_ret when this call is made to fail, else the real function's object. */
#define OBJECT_OR_REAL(function, errcode_ret, ...)                                                 \
    (CL_FAIL(function) ? failed_create(errcode_ret, CL_OUT_OF_RESOURCES)                           \
                       : __real_##function(__VA_ARGS__))

/* What the wrapper of a release returns: one that is made to fail still releases (first), and
 * only its status is the error. */
static cl_int release_status(cl_int released, const char *function)
{
    return should_fail(FAULT_OPENCL, function, "CL_OUT_OF_RESOURCES") ? CL_OUT_OF_RESOURCES
                                                                      : released;
}
static atomic_int slow_release_ms;

void fault_slow_releases(int ms)
{
    atomic_store(&slow_release_ms, ms);
}

static void release_pause(void)
{
    const int ms = atomic_load(&slow_release_ms);
    if (ms > 0) {
        struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
}
#define RELEASED(function, object)                                                                 \
    (release_pause(), release_status(__real_##function(object), #function))

/* ---- Allocation ------------------------------------------------------------------------------ */

REAL(malloc);
REAL(calloc);
REAL(realloc);
REAL(strdup);
REAL(posix_memalign);
REAL(pthread_create);

void *__wrap_malloc(size_t size)
{
    return should_fail(FAULT_ALLOC, "malloc", NULL) ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t count, size_t size)
{
    return should_fail(FAULT_ALLOC, "calloc", NULL) ? NULL : __real_calloc(count, size);
}

void *__wrap_realloc(void *p, size_t size)
{
    return should_fail(FAULT_ALLOC, "realloc", NULL) ? NULL : __real_realloc(p, size);
}

char *__wrap_strdup(const char *s)
{
    return should_fail(FAULT_ALLOC, "strdup", NULL) ? NULL : __real_strdup(s);
}

/* Page-aligned blocks (bridge.c's host memory between devices): ENOMEM, as glibc answers. */
int __wrap_posix_memalign(void **out, size_t alignment, size_t size)
{
    return should_fail(FAULT_ALLOC, "posix_memalign", NULL)
               ? ENOMEM
               : __real_posix_memalign(out, alignment, size);
}

/* A thread is an allocation too (its stack): pthread_create fails with EAGAIN when the process
 * is out of memory or threads. */
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                          void *arg)
{
    if (should_fail(FAULT_ALLOC, "pthread_create", NULL))
        return EAGAIN;
    return __real_pthread_create(thread, attr, start, arg);
}

/* ---- Platforms, devices, contexts, queues ---------------------------------------------------- */

REAL(clGetPlatformIDs);
REAL(clGetPlatformInfo);
REAL(clGetDeviceIDs);
REAL(clGetDeviceInfo);
REAL(clCreateContext);
REAL(clReleaseContext);
REAL(clRetainContext);
REAL(clGetContextInfo);
REAL(clRetainCommandQueue);
REAL(clGetCommandQueueInfo);
REAL(clCreateCommandQueue);
REAL(clReleaseCommandQueue);
REAL(clFinish);
REAL(clFlush);

cl_int __wrap_clGetPlatformIDs(cl_uint n, cl_platform_id *platforms, cl_uint *count)
{
    return STATUS_OR_REAL(clGetPlatformIDs, n, platforms, count);
}

cl_int __wrap_clGetPlatformInfo(cl_platform_id p, cl_platform_info what, size_t size, void *value,
                                size_t *size_ret)
{
    return STATUS_OR_REAL(clGetPlatformInfo, p, what, size, value, size_ret);
}

cl_int __wrap_clGetDeviceIDs(cl_platform_id p, cl_device_type type, cl_uint n,
                             cl_device_id *devices, cl_uint *count)
{
    return STATUS_OR_REAL(clGetDeviceIDs, p, type, n, devices, count);
}

cl_int __wrap_clGetDeviceInfo(cl_device_id d, cl_device_info what, size_t size, void *value,
                              size_t *size_ret)
{
    return STATUS_OR_REAL(clGetDeviceInfo, d, what, size, value, size_ret);
}

cl_context
__wrap_clCreateContext(const cl_context_properties *props, cl_uint n, const cl_device_id *devices,
                       void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                       void *user, cl_int *errcode_ret)
{
    return OBJECT_OR_REAL(clCreateContext, errcode_ret, props, n, devices, notify, user,
                          errcode_ret);
}

cl_int __wrap_clReleaseContext(cl_context c)
{
    return RELEASED(clReleaseContext, c);
}

cl_int __wrap_clRetainContext(cl_context c)
{
    return STATUS_OR_REAL(clRetainContext, c);
}

cl_int __wrap_clGetContextInfo(cl_context c, cl_context_info what, size_t size, void *value,
                               size_t *size_ret)
{
    return STATUS_OR_REAL(clGetContextInfo, c, what, size, value, size_ret);
}

cl_int __wrap_clRetainCommandQueue(cl_command_queue q)
{
    return STATUS_OR_REAL(clRetainCommandQueue, q);
}

cl_int __wrap_clGetCommandQueueInfo(cl_command_queue q, cl_command_queue_info what, size_t size,
                                    void *value, size_t *size_ret)
{
    return STATUS_OR_REAL(clGetCommandQueueInfo, q, what, size, value, size_ret);
}

cl_command_queue __wrap_clCreateCommandQueue(cl_context c, cl_device_id d,
                                             cl_command_queue_properties props, cl_int *errcode_ret)
{
    return OBJECT_OR_REAL(clCreateCommandQueue, errcode_ret, c, d, props, errcode_ret);
}

cl_int __wrap_clReleaseCommandQueue(cl_command_queue q)
{
    return RELEASED(clReleaseCommandQueue, q);
}

cl_int __wrap_clFinish(cl_command_queue q)
{
    return STATUS_OR_REAL(clFinish, q);
}

cl_int __wrap_clFlush(cl_command_queue q)
{
    return STATUS_OR_REAL(clFlush, q);
}

/* ---- Memory objects and transfers ------------------------------------------------------------ */

REAL(clCreateBuffer);
REAL(clCreateSubBuffer);
REAL(clReleaseMemObject);
REAL(clRetainMemObject);
REAL(clGetMemObjectInfo);
REAL(clEnqueueReadBuffer);
REAL(clEnqueueWriteBuffer);
REAL(clEnqueueReadBufferRect);
REAL(clEnqueueWriteBufferRect);
REAL(clEnqueueCopyBuffer);
REAL(clEnqueueCopyBufferRect);
REAL(clEnqueueFillBuffer);
REAL(clEnqueueMapBuffer);
REAL(clEnqueueUnmapMemObject);

cl_mem __wrap_clCreateBuffer(cl_context c, cl_mem_flags flags, size_t size, void *host,
                             cl_int *errcode_ret)
{
    if (CL_FAIL_ALLOC(clCreateBuffer))
        return failed_create(errcode_ret, CL_MEM_OBJECT_ALLOCATION_FAILURE);
    return __real_clCreateBuffer(c, flags, size, host, errcode_ret);
}

cl_mem __wrap_clCreateSubBuffer(cl_mem m, cl_mem_flags flags, cl_buffer_create_type type,
                                const void *info, cl_int *errcode_ret)
{
    if (CL_FAIL_ALLOC(clCreateSubBuffer))
        return failed_create(errcode_ret, CL_MEM_OBJECT_ALLOCATION_FAILURE);
    return __real_clCreateSubBuffer(m, flags, type, info, errcode_ret);
}

cl_int __wrap_clReleaseMemObject(cl_mem m)
{
    return RELEASED(clReleaseMemObject, m);
}

cl_int __wrap_clRetainMemObject(cl_mem m)
{
    return STATUS_OR_REAL(clRetainMemObject, m);
}

cl_int __wrap_clGetMemObjectInfo(cl_mem m, cl_mem_info what, size_t size, void *value,
                                 size_t *size_ret)
{
    return STATUS_OR_REAL(clGetMemObjectInfo, m, what, size, value, size_ret);
}

cl_int __wrap_clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool blocking, size_t offset,
                                  size_t size, void *dst, cl_uint nwait, const cl_event *wait,
                                  cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueReadBuffer, q, m, blocking, offset, size, dst, nwait, wait,
                          event);
}

cl_int __wrap_clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool blocking, size_t offset,
                                   size_t size, const void *src, cl_uint nwait,
                                   const cl_event *wait, cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueWriteBuffer, q, m, blocking, offset, size, src, nwait, wait,
                          event);
}

cl_int __wrap_clEnqueueReadBufferRect(cl_command_queue q, cl_mem m, cl_bool blocking,
                                      const size_t *buffer_origin, const size_t *host_origin,
                                      const size_t *region, size_t buffer_row_pitch,
                                      size_t buffer_slice_pitch, size_t host_row_pitch,
                                      size_t host_slice_pitch, void *dst, cl_uint nwait,
                                      const cl_event *wait, cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueReadBufferRect, q, m, blocking, buffer_origin, host_origin,
                          region, buffer_row_pitch, buffer_slice_pitch, host_row_pitch,
                          host_slice_pitch, dst, nwait, wait, event);
}

cl_int __wrap_clEnqueueWriteBufferRect(cl_command_queue q, cl_mem m, cl_bool blocking,
                                       const size_t *buffer_origin, const size_t *host_origin,
                                       const size_t *region, size_t buffer_row_pitch,
                                       size_t buffer_slice_pitch, size_t host_row_pitch,
                                       size_t host_slice_pitch, const void *src, cl_uint nwait,
                                       const cl_event *wait, cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueWriteBufferRect, q, m, blocking, buffer_origin, host_origin,
                          region, buffer_row_pitch, buffer_slice_pitch, host_row_pitch,
                          host_slice_pitch, src, nwait, wait, event);
}

cl_int __wrap_clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset,
                                  size_t dst_offset, size_t size, cl_uint nwait,
                                  const cl_event *wait, cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueCopyBuffer, q, src, dst, src_offset, dst_offset, size, nwait,
                          wait, event);
}

cl_int __wrap_clEnqueueCopyBufferRect(cl_command_queue q, cl_mem src, cl_mem dst,
                                      const size_t *src_origin, const size_t *dst_origin,
                                      const size_t *region, size_t src_row_pitch,
                                      size_t src_slice_pitch, size_t dst_row_pitch,
                                      size_t dst_slice_pitch, cl_uint nwait, const cl_event *wait,
                                      cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueCopyBufferRect, q, src, dst, src_origin, dst_origin, region,
                          src_row_pitch, src_slice_pitch, dst_row_pitch, dst_slice_pitch, nwait,
                          wait, event);
}

cl_int __wrap_clEnqueueFillBuffer(cl_command_queue q, cl_mem m, const void *pattern,
                                  size_t pattern_size, size_t offset, size_t size, cl_uint nwait,
                                  const cl_event *wait, cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueFillBuffer, q, m, pattern, pattern_size, offset, size, nwait,
                          wait, event);
}

void *__wrap_clEnqueueMapBuffer(cl_command_queue q, cl_mem m, cl_bool blocking, cl_map_flags flags,
                                size_t offset, size_t size, cl_uint nwait, const cl_event *wait,
                                cl_event *event, cl_int *errcode_ret)
{
    return OBJECT_OR_REAL(clEnqueueMapBuffer, errcode_ret, q, m, blocking, flags, offset, size,
                          nwait, wait, event, errcode_ret);
}

cl_int __wrap_clEnqueueUnmapMemObject(cl_command_queue q, cl_mem m, void *mapped, cl_uint nwait,
                                      const cl_event *wait, cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueUnmapMemObject, q, m, mapped, nwait, wait, event);
}

/* ---- Programs and kernels -------------------------------------------------------------------- */

REAL(clCreateProgramWithSource);
REAL(clCreateProgramWithBinary);
REAL(clBuildProgram);
REAL(clGetProgramInfo);
REAL(clGetProgramBuildInfo);
REAL(clReleaseProgram);
REAL(clRetainProgram);
REAL(clCreateKernel);
REAL(clReleaseKernel);
REAL(clRetainKernel);
REAL(clSetKernelArg);
REAL(clGetKernelInfo);
REAL(clGetKernelWorkGroupInfo);

cl_program __wrap_clCreateProgramWithSource(cl_context c, cl_uint n, const char **strings,
                                            const size_t *lengths, cl_int *errcode_ret)
{
    return OBJECT_OR_REAL(clCreateProgramWithSource, errcode_ret, c, n, strings, lengths,
                          errcode_ret);
}

cl_program __wrap_clCreateProgramWithBinary(cl_context c, cl_uint n, const cl_device_id *devices,
                                            const size_t *lengths, const unsigned char **binaries,
                                            cl_int *binary_status, cl_int *errcode_ret)
{
    return OBJECT_OR_REAL(clCreateProgramWithBinary, errcode_ret, c, n, devices, lengths, binaries,
                          binary_status, errcode_ret);
}

cl_int __wrap_clBuildProgram(cl_program p, cl_uint n, const cl_device_id *devices,
                             const char *options, void(CL_CALLBACK *notify)(cl_program, void *),
                             void *user)
{
    return STATUS_OR_REAL(clBuildProgram, p, n, devices, options, notify, user);
}

cl_int __wrap_clGetProgramInfo(cl_program p, cl_program_info what, size_t size, void *value,
                               size_t *size_ret)
{
    return STATUS_OR_REAL(clGetProgramInfo, p, what, size, value, size_ret);
}

cl_int __wrap_clGetProgramBuildInfo(cl_program p, cl_device_id d, cl_program_build_info what,
                                    size_t size, void *value, size_t *size_ret)
{
    return STATUS_OR_REAL(clGetProgramBuildInfo, p, d, what, size, value, size_ret);
}

cl_int __wrap_clReleaseProgram(cl_program p)
{
    return RELEASED(clReleaseProgram, p);
}

cl_int __wrap_clRetainProgram(cl_program p)
{
    return STATUS_OR_REAL(clRetainProgram, p);
}

cl_kernel __wrap_clCreateKernel(cl_program p, const char *name, cl_int *errcode_ret)
{
    return OBJECT_OR_REAL(clCreateKernel, errcode_ret, p, name, errcode_ret);
}

cl_int __wrap_clReleaseKernel(cl_kernel k)
{
    return RELEASED(clReleaseKernel, k);
}

cl_int __wrap_clRetainKernel(cl_kernel k)
{
    return STATUS_OR_REAL(clRetainKernel, k);
}

cl_int __wrap_clSetKernelArg(cl_kernel k, cl_uint index, size_t size, const void *value)
{
    return STATUS_OR_REAL(clSetKernelArg, k, index, size, value);
}

cl_int __wrap_clGetKernelInfo(cl_kernel k, cl_kernel_info what, size_t size, void *value,
                              size_t *size_ret)
{
    return STATUS_OR_REAL(clGetKernelInfo, k, what, size, value, size_ret);
}

cl_int __wrap_clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id d, cl_kernel_work_group_info what,
                                       size_t size, void *value, size_t *size_ret)
{
    return STATUS_OR_REAL(clGetKernelWorkGroupInfo, k, d, what, size, value, size_ret);
}

/* ---- Launches and events --------------------------------------------------------------------- */

REAL(clEnqueueNDRangeKernel);
REAL(clEnqueueMarkerWithWaitList);
REAL(clEnqueueBarrierWithWaitList);
REAL(clWaitForEvents);
REAL(clGetEventProfilingInfo);
REAL(clGetEventInfo);
REAL(clReleaseEvent);
REAL(clRetainEvent);
REAL(clCreateUserEvent);
REAL(clSetUserEventStatus);

cl_int __wrap_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims,
                                     const size_t *offset, const size_t *global,
                                     const size_t *local, cl_uint nwait, const cl_event *wait,
                                     cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueNDRangeKernel, q, k, dims, offset, global, local, nwait, wait,
                          event);
}

cl_int __wrap_clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nwait, const cl_event *wait,
                                          cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueMarkerWithWaitList, q, nwait, wait, event);
}

cl_int __wrap_clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint nwait, const cl_event *wait,
                                           cl_event *event)
{
    return STATUS_OR_REAL(clEnqueueBarrierWithWaitList, q, nwait, wait, event);
}

static atomic_int waits_at_once;

void fault_waits_return_at_once(int on)
{
    atomic_store(&waits_at_once, on);
}

cl_int __wrap_clWaitForEvents(cl_uint n, const cl_event *events)
{
    if (atomic_load(&waits_at_once))
        return CL_SUCCESS;
    return STATUS_OR_REAL(clWaitForEvents, n, events);
}

cl_int __wrap_clGetEventProfilingInfo(cl_event e, cl_profiling_info what, size_t size, void *value,
                                      size_t *size_ret)
{
    return STATUS_OR_REAL(clGetEventProfilingInfo, e, what, size, value, size_ret);
}

cl_int __wrap_clGetEventInfo(cl_event e, cl_event_info what, size_t size, void *value,
                             size_t *size_ret)
{
    return STATUS_OR_REAL(clGetEventInfo, e, what, size, value, size_ret);
}

cl_int __wrap_clReleaseEvent(cl_event e)
{
    return RELEASED(clReleaseEvent, e);
}

cl_int __wrap_clRetainEvent(cl_event e)
{
    return STATUS_OR_REAL(clRetainEvent, e);
}

cl_event __wrap_clCreateUserEvent(cl_context c, cl_int *errcode_ret)
{
    return OBJECT_OR_REAL(clCreateUserEvent, errcode_ret, c, errcode_ret);
}

cl_int __wrap_clSetUserEventStatus(cl_event e, cl_int status)
{
    return STATUS_OR_REAL(clSetUserEventStatus, e, status);
}
