/* probe_devices.c — clops-probe-devices: do a machine's OpenCL devices run side by side when
 * one host thread drives each, as clops' splitter and split calls drive them? A measuring tool
 * for what limits a call across devices (issue 24), not part of the library; plain OpenCL, no
 * clops.
 *
 * Every device of the chosen type gets a context, an in-order queue and a kernel of its own, as
 * a clops pool opens them. The kernel: each work-item steps an integer generator `steps` times
 * (checked on the host to the bit). Measured, each the median of R rounds:
 *   1. each device alone: one launch of about --ms milliseconds, waited for;
 *   2. all devices at once, the same launch on each: (a) one thread enqueues every launch, then
 *      waits for each; one thread per device that enqueues and then waits (b) with
 *      clWaitForEvents, (c) with clFinish, (d) with a blocking 4-byte read, (e) by polling the
 *      event's status; (f) as (b), in --chunks launches of 1/chunks the work, each waited for
 *      (a splitter worker's chunks). Ideal: the slowest device's time alone;
 *   3. pinned host memory (CL_MEM_ALLOC_HOST_PTR, mapped) to and from each device's buffer,
 *      alone and all devices at once (one thread each), and one device reading while the next
 *      writes: GB/s;
 *   4. on device 0, a block of columns of a row-major matrix (rows of 64 KiB, the block 1/2,
 *      1/11 or 1/64 of a row wide) to and from packed pinned memory: as a rectangle
 *      (clEnqueue{Read,Write}BufferRect, as clops' bridges move GEMM operands), and packed on
 *      the device first (clEnqueueCopyBufferRect into a packed buffer, then one contiguous
 *      transfer): GB/s of the block's bytes.
 * Exit status: 0, or 1 when a kernel's result is wrong or an OpenCL call failed, 2 usage. */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_DEVICES = 16, MAX_REPS = 32, ITEMS = 1 << 20, CHECKED = 4096 };
enum { WAIT_EVENTS, WAIT_FINISH, WAIT_READ, WAIT_POLL, WAIT_KINDS };

static const char *source = "kernel void spin(global uint *out, uint steps) {\n"
                            "    uint x = (uint)get_global_id(0);\n"
                            "    for (uint s = 0; s < steps; s++) x = x * 1664525u + 1013904223u;\n"
                            "    out[get_global_id(0)] = x;\n"
                            "}\n";

struct device {
    cl_device_id id;
    char name[256];
    cl_context context;
    cl_command_queue queue;
    cl_kernel kernel;
    cl_mem out, big;
    cl_mem pinned; /* CL_MEM_ALLOC_HOST_PTR, mapped at host */
    void *host;
};

static struct device devs[MAX_DEVICES];
static int dev_count, reps = 5, chunks = 16, failures;
static size_t transfer_bytes = (size_t)256 << 20;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void check(cl_int rc, const char *what)
{
    if (rc != CL_SUCCESS) {
        fprintf(stderr, "clops-probe-devices: %s failed: %d\n", what, (int)rc);
        exit(1);
    }
}

static int open_device(struct device *d)
{
    cl_int rc;
    clGetDeviceInfo(d->id, CL_DEVICE_NAME, sizeof d->name, d->name, NULL);
    d->context = clCreateContext(NULL, 1, &d->id, NULL, NULL, &rc);
    check(rc, "clCreateContext");
    d->queue = clCreateCommandQueue(d->context, d->id, 0, &rc);
    check(rc, "clCreateCommandQueue");
    cl_program program = clCreateProgramWithSource(d->context, 1, &source, NULL, &rc);
    check(rc, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &d->id, "", NULL, NULL), "clBuildProgram");
    d->kernel = clCreateKernel(program, "spin", &rc);
    check(rc, "clCreateKernel");
    clReleaseProgram(program);
    d->out = clCreateBuffer(d->context, CL_MEM_READ_WRITE, ITEMS * sizeof(cl_uint), NULL, &rc);
    check(rc, "clCreateBuffer");
    d->big = clCreateBuffer(d->context, CL_MEM_READ_WRITE, transfer_bytes, NULL, &rc);
    check(rc, "clCreateBuffer");
    d->pinned = clCreateBuffer(d->context, CL_MEM_ALLOC_HOST_PTR, transfer_bytes, NULL, &rc);
    check(rc, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
    d->host = clEnqueueMapBuffer(d->queue, d->pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                 transfer_bytes, 0, NULL, NULL, &rc);
    check(rc, "clEnqueueMapBuffer");
    memset(d->host, 1, transfer_bytes);
    return 0;
}

static cl_event launch(struct device *d, cl_uint steps, size_t items)
{
    cl_event e;
    check(clSetKernelArg(d->kernel, 0, sizeof d->out, &d->out), "clSetKernelArg");
    check(clSetKernelArg(d->kernel, 1, sizeof steps, &steps), "clSetKernelArg");
    check(clEnqueueNDRangeKernel(d->queue, d->kernel, 1, NULL, &items, NULL, 0, NULL, &e),
          "clEnqueueNDRangeKernel");
    return e;
}

static void wait_for(struct device *d, cl_event e, int how)
{
    cl_uint word;
    cl_int state = CL_QUEUED;
    switch (how) {
    case WAIT_EVENTS: check(clWaitForEvents(1, &e), "clWaitForEvents"); break;
    case WAIT_FINISH: check(clFinish(d->queue), "clFinish"); break;
    case WAIT_READ:
        check(clEnqueueReadBuffer(d->queue, d->out, CL_TRUE, 0, sizeof word, &word, 0, NULL, NULL),
              "clEnqueueReadBuffer");
        break;
    default:
        check(clFlush(d->queue), "clFlush");
        while (state != CL_COMPLETE) {
            check(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, NULL),
                  "clGetEventInfo");
            if (state < 0)
                check(state, "the kernel");
            sched_yield();
        }
    }
    clReleaseEvent(e);
}

/* The kernel's first CHECKED results against the host's. */
static void verify(struct device *d, cl_uint steps)
{
    cl_uint *got = malloc(CHECKED * sizeof *got);
    check(clEnqueueReadBuffer(d->queue, d->out, CL_TRUE, 0, CHECKED * sizeof *got, got, 0, NULL,
                              NULL),
          "clEnqueueReadBuffer");
    for (cl_uint i = 0; i < CHECKED; i++) {
        cl_uint x = i;
        for (cl_uint s = 0; s < steps; s++)
            x = x * 1664525u + 1013904223u;
        if (got[i] != x) {
            fprintf(stderr, "clops-probe-devices: %s: item %u is %u, expected %u\n", d->name, i,
                    got[i], x);
            failures++;
            break;
        }
    }
    free(got);
}

struct job {
    struct device *d;
    int how, pieces;
    cl_uint steps;
    pthread_barrier_t *start;
};

static void *drive(void *arg)
{
    struct job *j = arg;
    pthread_barrier_wait(j->start);
    for (int p = 0; p < j->pieces; p++)
        wait_for(j->d, launch(j->d, j->steps, ITEMS / (size_t)j->pieces), j->how);
    return NULL;
}

/* All devices at once, one thread each, waiting `how`, the work in `pieces` launches: ms. */
static double threaded(cl_uint steps, int how, int pieces)
{
    pthread_t threads[MAX_DEVICES];
    struct job jobs[MAX_DEVICES];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)dev_count + 1);
    for (int i = 0; i < dev_count; i++) {
        jobs[i] = (struct job){&devs[i], how, pieces, steps, &start};
        pthread_create(&threads[i], NULL, drive, &jobs[i]);
    }
    pthread_barrier_wait(&start);
    double t0 = now_ms();
    for (int i = 0; i < dev_count; i++)
        pthread_join(threads[i], NULL);
    double ms = now_ms() - t0;
    pthread_barrier_destroy(&start);
    return ms;
}

static double one_thread_all(cl_uint steps)
{
    cl_event e[MAX_DEVICES];
    double t0 = now_ms();
    for (int i = 0; i < dev_count; i++) {
        e[i] = launch(&devs[i], steps, ITEMS);
        check(clFlush(devs[i].queue), "clFlush");
    }
    for (int i = 0; i < dev_count; i++)
        wait_for(&devs[i], e[i], WAIT_EVENTS);
    return now_ms() - t0;
}

struct copy_job {
    struct device *d;
    int to_device;
    pthread_barrier_t *start;
};

static void copy_once(struct device *d, int to_device)
{
    cl_int rc = to_device ? clEnqueueWriteBuffer(d->queue, d->big, CL_TRUE, 0, transfer_bytes,
                                                 d->host, 0, NULL, NULL)
                          : clEnqueueReadBuffer(d->queue, d->big, CL_TRUE, 0, transfer_bytes,
                                                d->host, 0, NULL, NULL);
    check(rc, to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer");
}

static void *copy_thread(void *arg)
{
    struct copy_job *j = arg;
    pthread_barrier_wait(j->start);
    copy_once(j->d, j->to_device);
    return NULL;
}

/* Copies on the devices `which` (a bit each) at once, direction by `to_device` bits: GB/s of
 * all the bytes moved. */
static double copies(unsigned which, unsigned to_device)
{
    double v[MAX_REPS];
    int n = 0;
    for (int i = 0; i < dev_count; i++)
        n += (which >> i) & 1;
    for (int r = 0; r < reps; r++) {
        pthread_t threads[MAX_DEVICES];
        struct copy_job jobs[MAX_DEVICES];
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)n + 1);
        int t = 0;
        for (int i = 0; i < dev_count; i++)
            if ((which >> i) & 1) {
                jobs[t] = (struct copy_job){&devs[i], (int)((to_device >> i) & 1), &start};
                pthread_create(&threads[t], NULL, copy_thread, &jobs[t]);
                t++;
            }
        pthread_barrier_wait(&start);
        double t0 = now_ms();
        for (int i = 0; i < t; i++)
            pthread_join(threads[i], NULL);
        v[r] = (double)n * (double)transfer_bytes / ((now_ms() - t0) * 1e6);
        pthread_barrier_destroy(&start);
    }
    return median(v, reps);
}

/* Section 4: the block `width` bytes wide of every 64 KiB row of device 0's `big`, to the host
 * (`to_device` 0) or from it, as a rectangle or packed on the device (`packed`, through `tmp`):
 * GB/s of the block's bytes, median of the rounds. */
static double rect_copies(size_t width, int to_device, int packed, cl_mem tmp)
{
    struct device *d = &devs[0];
    const size_t pitch = 64 << 10, rows = transfer_bytes / pitch, zero[3] = {0, 0, 0};
    const size_t region[3] = {width, rows, 1};
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        cl_int rc;
        if (!packed)
            rc = to_device ? clEnqueueWriteBufferRect(d->queue, d->big, CL_TRUE, zero, zero, region,
                                                      pitch, 0, width, 0, d->host, 0, NULL, NULL)
                           : clEnqueueReadBufferRect(d->queue, d->big, CL_TRUE, zero, zero, region,
                                                     pitch, 0, width, 0, d->host, 0, NULL, NULL);
        else if (to_device) {
            rc = clEnqueueWriteBuffer(d->queue, tmp, CL_FALSE, 0, width * rows, d->host, 0, NULL,
                                      NULL);
            if (rc == CL_SUCCESS)
                rc = clEnqueueCopyBufferRect(d->queue, tmp, d->big, zero, zero, region, width, 0,
                                             pitch, 0, 0, NULL, NULL);
            if (rc == CL_SUCCESS)
                rc = clFinish(d->queue);
        } else {
            rc = clEnqueueCopyBufferRect(d->queue, d->big, tmp, zero, zero, region, pitch, 0, width,
                                         0, 0, NULL, NULL);
            if (rc == CL_SUCCESS)
                rc = clEnqueueReadBuffer(d->queue, tmp, CL_TRUE, 0, width * rows, d->host, 0, NULL,
                                         NULL);
        }
        check(rc, "a rectangle's copy");
        v[r] = (double)(width * rows) / ((now_ms() - t0) * 1e6);
    }
    return median(v, reps);
}

int main(int argc, char **argv)
{
    cl_device_type type = CL_DEVICE_TYPE_GPU;
    double target_ms = 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cpu") == 0)
            type = CL_DEVICE_TYPE_CPU;
        else if (strcmp(argv[i], "--all") == 0)
            type = CL_DEVICE_TYPE_ALL;
        else if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc)
            target_ms = atof(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
            transfer_bytes = (size_t)atol(argv[++i]) << 20;
        else {
            fprintf(stderr, "usage: clops-probe-devices [--cpu | --all] [--ms MS] [--reps R] "
                            "[--mib MIB]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || target_ms <= 0 || transfer_bytes == 0) {
        fprintf(stderr, "clops-probe-devices: --reps 1..%d, --ms and --mib above 0\n", MAX_REPS);
        return 2;
    }
    cl_platform_id platforms[8];
    cl_uint pcount = 0;
    check(clGetPlatformIDs(8, platforms, &pcount), "clGetPlatformIDs");
    for (cl_uint p = 0; p < pcount && p < 8; p++) {
        cl_device_id ids[MAX_DEVICES];
        cl_uint n = 0;
        if (clGetDeviceIDs(platforms[p], type, MAX_DEVICES, ids, &n) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < n && dev_count < MAX_DEVICES; d++)
            devs[dev_count++].id = ids[d];
    }
    if (dev_count == 0) {
        fprintf(stderr, "clops-probe-devices: no device of that type\n");
        return 1;
    }
    for (int i = 0; i < dev_count; i++)
        open_device(&devs[i]);

    /* Calibrate on device 0: steps for target_ms. */
    cl_uint steps = 256;
    for (;;) {
        double t0 = now_ms();
        wait_for(&devs[0], launch(&devs[0], steps, ITEMS), WAIT_EVENTS);
        double ms = now_ms() - t0;
        if (ms >= target_ms / 2 || steps >= (1u << 30)) {
            double scaled = (double)steps * target_ms / (ms > 0.01 ? ms : 0.01);
            steps = scaled > 4e9 ? 4000000000u : (cl_uint)scaled;
            break;
        }
        steps *= 4;
    }
    for (int i = 0; i < dev_count; i++) {
        wait_for(&devs[i], launch(&devs[i], steps, ITEMS), WAIT_EVENTS);
        verify(&devs[i], steps);
    }
    printf("%d device(s), a context and a queue each; kernel: %d items x %u steps; median of %d\n",
           dev_count, ITEMS, (unsigned)steps, reps);
    double worst_alone = 0;
    for (int i = 0; i < dev_count; i++) {
        double v[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            double t0 = now_ms();
            wait_for(&devs[i], launch(&devs[i], steps, ITEMS), WAIT_EVENTS);
            v[r] = now_ms() - t0;
        }
        double ms = median(v, reps);
        worst_alone = ms > worst_alone ? ms : worst_alone;
        printf("alone    device %d (%s): %8.2f ms\n", i, devs[i].name, ms);
    }
    static const char *const names[] = {"one thread: enqueue all, then wait each",
                                        "a thread each: clWaitForEvents",
                                        "a thread each: clFinish",
                                        "a thread each: blocking 4-byte read",
                                        "a thread each: poll the event",
                                        "a thread each: chunks, clWaitForEvents each"};
    for (int mode = 0; mode < 6; mode++) {
        double v[MAX_REPS];
        for (int r = 0; r < reps; r++)
            v[r] = mode == 0   ? one_thread_all(steps)
                   : mode == 5 ? threaded(steps, WAIT_EVENTS, chunks)
                               : threaded(steps, mode - 1, 1);
        double ms = median(v, reps);
        printf("together %-44s %8.2f ms  (%.2f x the slowest alone)\n", names[mode], ms,
               ms / worst_alone);
    }
    for (int i = 0; i < dev_count; i++)
        verify(&devs[i], steps);
    printf("\npinned host memory <-> device, %zu MiB a copy, GB/s (all bytes moved):\n",
           transfer_bytes >> 20);
    for (int i = 0; i < dev_count; i++)
        printf("device %d alone: to device %6.1f  from device %6.1f\n", i, copies(1u << i, 1u << i),
               copies(1u << i, 0));
    if (dev_count > 1) {
        const unsigned all = (1u << dev_count) - 1;
        printf("all at once:    to devices %6.1f  from devices %6.1f\n", copies(all, all),
               copies(all, 0));
        printf("device 0 from, device 1 to, at once: %6.1f\n", copies(3, 2));
    }
    if (transfer_bytes >= (size_t)1 << 20) {
        cl_int rc;
        cl_mem tmp =
            clCreateBuffer(devs[0].context, CL_MEM_READ_WRITE, transfer_bytes / 2, NULL, &rc);
        check(rc, "clCreateBuffer");
        printf("\ndevice 0: a block of columns of %zu rows of 64 KiB <-> packed pinned memory, "
               "GB/s of the block:\n",
               transfer_bytes / (64 << 10));
        static const size_t widths[] = {32 << 10, 5940, 1 << 10};
        for (int w = 0; w < 3; w++)
            printf("%6zu bytes a row: rectangle from %6.1f to %6.1f   packed on the device "
                   "from %6.1f to %6.1f\n",
                   widths[w], rect_copies(widths[w], 0, 0, tmp), rect_copies(widths[w], 1, 0, tmp),
                   rect_copies(widths[w], 0, 1, tmp), rect_copies(widths[w], 1, 1, tmp));
        clReleaseMemObject(tmp);
    }
    return failures > 0;
}
