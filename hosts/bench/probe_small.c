/* probe_small.c — clops-probe-small: where the time of a small call goes on a device's driver,
 * as clops runs one with host operands (uploads, a kernel, a download, a wait). A measuring tool
 * for the per-call overhead (issue 25, item 8), not part of the library; plain OpenCL, no clops.
 *
 * The first device of the chosen type gets a context, an in-order queue and a kernel that adds
 * its two inputs (n doubles each: --bytes of them, default 8 KiB, a 32 x 32 f64 matrix). Each
 * pattern below runs --reps times (default 2000, after 200 warm-ups); printed: the median and
 * the 90th percentile of its whole time, and the median of the time its enqueues took before
 * the wait, in microseconds:
 *   kernel+wait     the kernel, clWaitForEvents on its event
 *   kernel+finish   the kernel, clFinish
 *   kernel+poll     the kernel, its status polled (clFlush, then clGetEventInfo in a loop)
 *   kernel+marker   the kernel and a marker, clWaitForEvents on the marker (clops' end marker)
 *   w2 k r          two writes from pinned memory, the kernel, a read into pinned memory, a
 *                   marker waited for (clops' gemm on host operands: two uploads, one download)
 *   w1 k r          the two inputs packed in one pinned block and written at once
 *   w2 k r pageable as w2 k r from and into malloc'd memory (the driver stages it)
 *   w2 k r poll     as w2 k r, the marker's status polled
 *   w1 k rb         one write, the kernel, a blocking read (the read is the wait)
 * The results are checked (the sum of the inputs, element by element). Exit status: 0, 1 when
 * a result is wrong or an OpenCL call failed, 2 usage. */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { WARM = 200, MAX_REPS = 100000 };

static const char *source = "kernel void add(global const double *a, global const double *b,\n"
                            "                global double *c, uint n, uint b_at) {\n"
                            "    uint i = (uint)get_global_id(0);\n"
                            "    if (i < n) c[i] = a[i] + b[b_at + i];\n"
                            "}\n";

static cl_context context;
static cl_command_queue queue;
static cl_kernel kernel;
static cl_mem in_a, in_ab, out_c, pin_in, pin_out;
static double *host_in, *host_out, *page_in, *page_out;
static size_t n = 1024;
static int reps = 2000, failures;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void check(cl_int rc, const char *what)
{
    if (rc != CL_SUCCESS) {
        fprintf(stderr, "clops-probe-small: %s failed: %d\n", what, (int)rc);
        exit(1);
    }
}

/* The kernel on a and b (b at element b_at of its buffer) into out_c. */
static cl_event launch(cl_mem a, cl_mem b, cl_uint b_at)
{
    cl_uint count = (cl_uint)n;
    check(clSetKernelArg(kernel, 0, sizeof a, &a), "clSetKernelArg");
    check(clSetKernelArg(kernel, 1, sizeof b, &b), "clSetKernelArg");
    check(clSetKernelArg(kernel, 2, sizeof out_c, &out_c), "clSetKernelArg");
    check(clSetKernelArg(kernel, 3, sizeof count, &count), "clSetKernelArg");
    check(clSetKernelArg(kernel, 4, sizeof b_at, &b_at), "clSetKernelArg");
    size_t global = (n + 63) / 64 * 64, local = 64;
    cl_event e;
    check(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local, 0, NULL, &e),
          "clEnqueueNDRangeKernel");
    return e;
}

static void poll(cl_event e)
{
    check(clFlush(queue), "clFlush");
    cl_int status;
    do
        check(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL),
              "clGetEventInfo");
    while (status > CL_COMPLETE);
    if (status < 0)
        check(status, "the event");
}

static void wait_release(cl_event e)
{
    check(clWaitForEvents(1, &e), "clWaitForEvents");
    clReleaseEvent(e);
}

enum pattern {
    K_WAIT,
    K_FINISH,
    K_POLL,
    K_MARKER,
    W2,
    W1,
    W2_PAGEABLE,
    W2_POLL,
    W1_BLOCKING,
    PATTERNS
};
static const char *names[PATTERNS] = {"kernel+wait",     "kernel+finish", "kernel+poll",
                                      "kernel+marker",   "w2 k r",        "w1 k r",
                                      "w2 k r pageable", "w2 k r poll",   "w1 k rb"};

/* One run of pattern p; *enqueued: the time until its last enqueue returned. Whether the
 * result reached host memory is checked by the caller for the patterns that read it. */
static void run(enum pattern p, double *enqueued)
{
    const size_t bytes = n * sizeof(double);
    const double start = now_us();
    cl_event e;
    double *in = p == W2_PAGEABLE ? page_in : host_in;
    double *out = p == W2_PAGEABLE ? page_out : host_out;
    switch (p) {
    case K_WAIT:
    case K_FINISH:
    case K_POLL:
    case K_MARKER:
        e = launch(in_a, in_ab, 0);
        *enqueued = now_us() - start;
        if (p == K_WAIT)
            wait_release(e);
        else if (p == K_FINISH) {
            check(clFinish(queue), "clFinish");
            clReleaseEvent(e);
        } else if (p == K_POLL) {
            poll(e);
            clReleaseEvent(e);
        } else {
            clReleaseEvent(e);
            check(clEnqueueMarkerWithWaitList(queue, 0, NULL, &e), "clEnqueueMarkerWithWaitList");
            *enqueued = now_us() - start;
            wait_release(e);
        }
        return;
    case W1:
    case W1_BLOCKING:
        check(clEnqueueWriteBuffer(queue, in_ab, CL_FALSE, 0, 2 * bytes, in, 0, NULL, NULL),
              "clEnqueueWriteBuffer");
        clReleaseEvent(launch(in_ab, in_ab, (cl_uint)n));
        break;
    default:
        check(clEnqueueWriteBuffer(queue, in_a, CL_FALSE, 0, bytes, in, 0, NULL, NULL),
              "clEnqueueWriteBuffer");
        check(clEnqueueWriteBuffer(queue, in_ab, CL_FALSE, 0, bytes, in + n, 0, NULL, NULL),
              "clEnqueueWriteBuffer");
        clReleaseEvent(launch(in_a, in_ab, 0));
    }
    const cl_bool blocking = p == W1_BLOCKING;
    check(clEnqueueReadBuffer(queue, out_c, blocking, 0, bytes, out, 0, NULL, NULL),
          "clEnqueueReadBuffer");
    if (blocking) {
        *enqueued = now_us() - start;
        return;
    }
    check(clEnqueueMarkerWithWaitList(queue, 0, NULL, &e), "clEnqueueMarkerWithWaitList");
    *enqueued = now_us() - start;
    if (p == W2_POLL) {
        poll(e);
        clReleaseEvent(e);
    } else
        wait_release(e);
}

static void measure(enum pattern p)
{
    static double whole[MAX_REPS], enq[MAX_REPS];
    const int reads = p >= W2;
    for (int r = 0; r < WARM + reps; r++) {
        double *in = p == W2_PAGEABLE ? page_in : host_in;
        double *out = p == W2_PAGEABLE ? page_out : host_out;
        for (size_t i = 0; i < 2 * n; i++)
            in[i] = (double)((r + (int)i) % 1000);
        const double start = now_us();
        double e = 0;
        run(p, &e);
        const double t = now_us() - start;
        if (r >= WARM) {
            whole[r - WARM] = t;
            enq[r - WARM] = e;
        }
        if (reads)
            for (size_t i = 0; i < n; i++)
                if (out[i] != in[i] + in[n + i]) {
                    fprintf(stderr, "clops-probe-small: %s: c[%zu] = %g, expected %g\n", names[p],
                            i, out[i], in[i] + in[n + i]);
                    failures++;
                    break;
                }
    }
    qsort(whole, (size_t)reps, sizeof *whole, cmp_double);
    qsort(enq, (size_t)reps, sizeof *enq, cmp_double);
    printf("%-18s %9.1f %9.1f %9.1f\n", names[p], whole[reps / 2], whole[reps * 9 / 10],
           enq[reps / 2]);
}

int main(int argc, char **argv)
{
    cl_device_type type = CL_DEVICE_TYPE_GPU;
    size_t bytes = 8192;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cpu"))
            type = CL_DEVICE_TYPE_CPU;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            bytes = (size_t)atol(argv[++i]);
        else {
            fprintf(stderr, "usage: clops-probe-small [--cpu] [--reps N] [--bytes B]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || bytes < sizeof(double)) {
        fprintf(stderr, "clops-probe-small: --reps 1..%d, --bytes >= 8\n", MAX_REPS);
        return 2;
    }
    n = bytes / sizeof(double);
    cl_platform_id platforms[8];
    cl_uint np = 0;
    check(clGetPlatformIDs(8, platforms, &np), "clGetPlatformIDs");
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < np && dev == NULL; i++)
        if (clGetDeviceIDs(platforms[i], type, 1, &dev, NULL) != CL_SUCCESS)
            dev = NULL;
    if (dev == NULL) {
        fprintf(stderr, "clops-probe-small: no %s device\n",
                type == CL_DEVICE_TYPE_GPU ? "GPU" : "CPU");
        return 1;
    }
    char name[256];
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    cl_int rc;
    context = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    check(rc, "clCreateContext");
    queue = clCreateCommandQueue(context, dev, 0, &rc);
    check(rc, "clCreateCommandQueue");
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &rc);
    check(rc, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &dev, "", NULL, NULL), "clBuildProgram");
    kernel = clCreateKernel(program, "add", &rc);
    check(rc, "clCreateKernel");
    clReleaseProgram(program);
    in_a = clCreateBuffer(context, CL_MEM_READ_WRITE, n * sizeof(double), NULL, &rc);
    check(rc, "clCreateBuffer");
    in_ab = clCreateBuffer(context, CL_MEM_READ_WRITE, 2 * n * sizeof(double), NULL, &rc);
    check(rc, "clCreateBuffer");
    out_c = clCreateBuffer(context, CL_MEM_READ_WRITE, n * sizeof(double), NULL, &rc);
    check(rc, "clCreateBuffer");
    pin_in = clCreateBuffer(context, CL_MEM_ALLOC_HOST_PTR, 2 * n * sizeof(double), NULL, &rc);
    check(rc, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
    pin_out = clCreateBuffer(context, CL_MEM_ALLOC_HOST_PTR, n * sizeof(double), NULL, &rc);
    check(rc, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
    host_in = clEnqueueMapBuffer(queue, pin_in, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                 2 * n * sizeof(double), 0, NULL, NULL, &rc);
    check(rc, "clEnqueueMapBuffer");
    host_out = clEnqueueMapBuffer(queue, pin_out, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                  n * sizeof(double), 0, NULL, NULL, &rc);
    check(rc, "clEnqueueMapBuffer");
    page_in = malloc(2 * n * sizeof(double));
    page_out = malloc(n * sizeof(double));
    if (page_in == NULL || page_out == NULL)
        return 1;
    printf("clops-probe-small: %s, %zu bytes an operand, median of %d\n", name, n * sizeof(double),
           reps);
    printf("%-18s %9s %9s %9s\n", "pattern", "us", "p90", "enqueued");
    for (int p = 0; p < PATTERNS; p++)
        measure((enum pattern)p);
    free(page_in);
    free(page_out);
    return failures ? 1 : 0;
}
