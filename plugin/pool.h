/* pool.h — the device pool: opened devices with their contexts and queues, built programs,
 * statistics. Operators ask the pool for a device, a queue and a program; they never touch
 * the OpenCL context setup themselves. Every function here is thread-safe. */
#ifndef CLOPS_POOL_H
#define CLOPS_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "host_copy.h"

/* Opaque: defined in pool_internal.h, for the pool's own files. */
struct clops_pool;  /* the pool behind a clops_pool handle */
struct pool_device; /* one opened device: its context, queues and accounting */

/* ---- Devices: what operators may know of the devices and their queues ---------------------- */

/* The pool's devices, 1 or more; device 0 is the primary (where buffer_create allocates). */
int32_t pool_device_count(const struct clops_pool *pool);
/* Device `index`, 0 <= index < pool_device_count. Owned by the pool, for its lifetime. */
struct pool_device *pool_device_at(const struct clops_pool *pool, int32_t index);
/* The device an operator runs on (`op_index` its descriptor's index in the registry): the
 * configured one, else the primary. */
struct pool_device *pool_device_for_op(struct clops_pool *pool, int32_t op_index);
/* What the device is (name, type, memory sizes, compute units, fp64...); owned by the pool. */
const struct clops_device_info *pool_device_info(const struct pool_device *dev);
/* Its index in the pool. */
int32_t pool_device_index(const struct pool_device *dev);
/* CL_DEVICE_MAX_WORK_GROUP_SIZE, read when the device was opened. */
size_t pool_device_max_work_group(const struct pool_device *dev);
/* A rough upper estimate of dev's arithmetic rate in flops per second (f64 = 1: double
 * precision) from its compute units and clock: what sizes work meant to last some time on it
 * (a paced GEMM's blocks), never a measurement. */
double pool_device_peak_flops(const struct pool_device *dev, int f64);
/* The compute capability of an NVIDIA device, major * 10 + minor (90 for an H100), read when the
 * device was opened through cl_nv_device_attribute_query; 0 for other devices, and for NVIDIA
 * drivers without that extension. Operators choose kernels that use inline PTX by it. */
int32_t pool_device_nv_compute_capability(const struct pool_device *dev);
/* CL_KERNEL_WORK_GROUP_SIZE of `kernel` on `dev`: at most the device's limit, fewer where the
 * compiled kernel needs more registers. `op` names the operator in the message. */
int32_t pool_kernel_max_work_group(const struct pool_device *dev, cl_kernel kernel, const char *op,
                                   size_t *out);
/* The context `dev` was opened on: the pool's own, or the host's (pool_create_from_cl). */
cl_context pool_device_context(const struct pool_device *dev);
/* Its OpenCL device. */
cl_device_id pool_device_id(const struct pool_device *dev);
/* How many queues `dev` has (the configured devices[].queues). */
int32_t pool_queue_count(const struct pool_device *dev);
/* A queue of `dev`, handed out round-robin so that host threads spread over the queues. */
cl_command_queue pool_acquire_queue(struct pool_device *dev);
/* A new in-order queue of `dev`, with the pool's queue properties (profiling), for one call to
 * run two streams of work at once (LU's look-ahead); the caller releases it. */
int32_t pool_open_queue(const struct clops_pool *pool, struct pool_device *dev, const char *op,
                        cl_command_queue *out);

/* ---- Settings ---------------------------------------------------------------------------- */

/* Operator `op_name`'s configured settings (operators.<name>), or NULL when it has none. */
const struct config_op *pool_op_settings(const struct clops_pool *pool, const char *op_name);
/* The build options configured for every operator (build_options). */
const char *pool_build_options(const struct clops_pool *pool);

/* A kernel object `kernel_name` of the program built from kernels/<source_name>.cl on `dev`
 * with `options` (after the pool's and the operator's configured build options), the caller's
 * alone until it gives it back with pool_release_kernel: a kernel per call, since
 * clSetKernelArg on a shared one would race between host threads. One a call gave back is
 * handed out again (its arguments are whatever that call set: every call sets all of them);
 * else a new one. The program is built once per pool, through the binary cache, and owned by
 * the pool; a cached binary that lacks the kernel is dropped and the program rebuilt from
 * source once. On a build failure the message carries the log. */
int32_t pool_create_kernel(struct clops_pool *pool, struct pool_device *dev, const char *op_name,
                           const char *source_name, const char *options, const char *kernel_name,
                           cl_kernel *out);
/* Gives back a kernel of pool_create_kernel (NULL is a no-op) once its launches are enqueued
 * (OpenCL takes a launch's arguments when it is enqueued): the pool keeps up to
 * POOL_IDLE_KERNELS for later calls, which spares a call creating and releasing kernel objects
 * (microseconds each, a share of a small call's time on a GPU), and releases the rest. */
void pool_release_kernel(struct clops_pool *pool, cl_kernel kernel);
/* Kernel objects pool_create_kernel created for `pool` (those handed out again not counted):
 * for tests that later calls reuse them. */
int64_t pool_kernels_created(const struct clops_pool *pool);

/* Whether a row of an operator's tuning table applies to `dev`: `vendor` a case-insensitive
 * substring of the device's vendor ("" = any), `type` an enum clops_device_type (0 = any). */
int pool_device_matches(const struct pool_device *dev, const char *vendor, int32_t type);

/* Setting number `setting` of the operator `impl` (the index in the list it declares, config.h):
 * the configured value, checked against its declared range when the pool was created, else its
 * declared default, else, for a default per device, `device_default` (the operator's tuning
 * table's). Keyed by the operator's registry index and the setting's position: no names are
 * compared on a call. */
struct op_impl;
int32_t pool_op_setting(const struct clops_pool *pool, const struct op_impl *impl, int32_t setting,
                        int32_t device_default);
/* The configured settings of `op_name` and where each was set ("operators.gemm.tile_m = 100,
 * operators.gemm.build_options -DWPT_M=8"), for a message refusing their combination. */
void pool_op_describe_settings(const struct clops_pool *pool, const char *op_name, char *out,
                               size_t size);

/* ---- A call's device work: enqueued without a wait, waited for once at its end ---- */

enum { POOL_WORK_EVENTS = 8, POOL_WORK_SCRATCH = 4, POOL_KERNEL_NAME_MAX = 48 };
/* (the first capacities of a call's lists of launches and scratch; they grow from there) */

/* A launch kept for its device time: its event, and its kernel's name for kernel_times. */
struct pool_launch_event {
    cl_event event;
    char kernel[POOL_KERNEL_NAME_MAX];
};

/* Device scratch a call gives back to the pool once its work has completed. */
struct pool_work_scratch {
    struct pool_device *dev;
    cl_mem mem;
    int64_t zero_at, zero_bytes; /* the bytes it holds zeros once the work completed */
};

/* The device work a call has enqueued on its in-order queue and not yet waited for: the events
 * of its launches while profiling (their times can be read only once they completed), and the
 * device scratch that goes back to the pool once nothing queued uses it. All zeros: empty. Owned
 * by the call; pool_work_finish waits for it and empties it, on every path. */
struct pool_work {
    int32_t events, scratches;
    int32_t event_capacity, scratch_capacity; /* of the arrays, grown as launches come */
    struct pool_launch_event *event;          /* heap, freed by pool_work_finish */
    struct pool_work_scratch *scratch;        /* heap, freed by pool_work_finish */
    int64_t device_ns; /* of launches waited for at once, the event list being full */
    cl_event done;     /* the end marker (pool_work_end), or NULL */
    /* A chain closed into the work (pool_chain_close): its start and end markers, when
     * profiling, and its traced launches (kernel_times), read after the call's wait. */
    cl_event chain_start, chain_end;
    struct pool_launch_event *chain_launches;
    int32_t chain_count;
};

/* Enqueues `kernel` on `queue` without waiting: the call's finish waits once for all its work.
 * When profiling, the launch's event is kept in `work` for its device time (and its kernel's
 * name, for kernel_times); only where no host memory is left to grow the list is this launch
 * waited for at once instead.
 * `what` names the operator in messages. */
int32_t pool_launch_kernel(struct clops_pool *pool, struct pool_work *work, cl_command_queue queue,
                           cl_kernel kernel, cl_uint dims, const size_t *global,
                           const size_t *local, const char *what);
/* pool_scratch_give, once the work queued on `queue` before now has completed: at the call's
 * finish, or released there instead when the call failed (what its kernels left is unknown).
 * Only where no host memory is left to grow the list does it wait for `queue` now. NULL is a
 * no-op. */
void pool_work_give_scratch(struct clops_pool *pool, struct pool_work *work, cl_command_queue queue,
                            struct pool_device *dev, cl_mem mem, int64_t zero_at,
                            int64_t zero_bytes);
/* Enqueues the call's end marker on its in-order `queue` after everything it enqueued: what
 * pool_work_finish waits for, and what completes when the call's device work has (a wait for
 * it does not wait for the work other calls queued after it). Without one (it failed to be
 * enqueued) the finish waits for the whole queue. */
int32_t pool_work_end(struct pool_work *work, cl_command_queue queue, const char *what);
/* clWaitForEvents of one event, believed only once the event is complete or failed: PoCL 3.1's
 * basic driver returns from it at once, the event still queued, when its queue waits for a user
 * event not yet set (a call then committed outputs never computed, with C[0] = 7.0e-45, and gave
 * back buffers its work still used). While the event is not done its state is polled, its queue
 * flushed, the pauses between looks growing from 20 us to 1 ms. CL_SUCCESS, the wait's error,
 * or the event's failed (negative) status. Every host wait of the plugin on an event is this. */
cl_int pool_wait_event(cl_event event);
/* Whether `event`'s command is over, without waiting: complete, or failed; a state that cannot
 * be read counts as over too (the wait that follows reports the failure). NULL is over. */
int pool_event_over(cl_event event);
/* Before a synchronous call's wait on a CPU device: the call's end looked for by spinning on a
 * marker's state for up to POOL_POLL_NS, where the wait (clFinish) would sleep and be woken by
 * the driver's thread (PoCL on 2 idle cores: 30-40 us of a small call's 60). It backs off where
 * it does not pay: a look that runs out (work longer than that, or cores too busy for the
 * driver's threads to run beside the spinning one) makes the device sit the next
 * POOL_POLL_REST calls out. Nothing on other devices, and nothing a failure could change: the
 * wait that follows is the call's, as before. */
enum { POOL_POLL_NS = 100000, POOL_POLL_REST = 64 };
void pool_work_poll(struct pool_device *dev, cl_command_queue queue);
/* The looks pool_work_poll made on `dev` that found the end, and those that ran out. */
void pool_device_poll_counts(const struct pool_device *dev, int64_t *ends, int64_t *timeouts);
/* The call's one wait: for everything enqueued on its in-order `queue`, on every path, so that
 * no command still reads or writes the host blocks and buffers the call gives back after it.
 * `status` is the call's so far. On success, adds the launches' device time to *device_ns and
 * logs them by kernel when kernel_times is on ("<what>: kernel <name>: <n> launches, <ms>
 * ms"; by device, with each one's busy time and span, for a call across devices); returns
 * `status`, or, where the work failed (a kernel, or a transfer enqueued without a
 * wait), "<what>: waiting for the device failed: CL_...". Leaves `work` empty. */
int32_t pool_work_finish(struct clops_pool *pool, struct pool_work *work, cl_command_queue queue,
                         int32_t status, int64_t *device_ns, const char *what);

/* One kernel argument: its size and where its value is. */
struct kernel_arg {
    size_t size;
    const void *value;
};
/* A kernel argument from an lvalue of the kernel parameter's type (a cl_mem, a cl_long, ...). */
#define KARG(x)                                                                                    \
    {                                                                                              \
        sizeof(x), &(x)                                                                            \
    }
/* A __local kernel argument of `bytes` bytes. */
#define KARG_LOCAL(bytes)                                                                          \
    {                                                                                              \
        (bytes), NULL                                                                              \
    }

/* Sets args[0 .. count) as the kernel's arguments `first` onward; `op` names the operator in
 * messages ("gemm: clSetKernelArg(3) failed: ..."). */
int32_t pool_set_kernel_args(cl_kernel kernel, cl_uint first, const struct kernel_arg *args,
                             cl_uint count, const char *op);

/* Enqueues `kernel` without waiting, for operators that chain many kernels on one in-order
 * queue (LU: thousands per call, where a wait after each would cost more than the kernels).
 * The chain's device time comes from pool_chain_begin/end. */
int32_t pool_enqueue_kernel(cl_command_queue queue, cl_kernel kernel, cl_uint dims,
                            const size_t *global, const size_t *local, const char *what);
/* Marks the start of a chain on `queue`; *start is NULL when profiling is off. `what` names the
 * operator in messages. */
int32_t pool_chain_begin(struct clops_pool *pool, cl_command_queue queue, cl_event *start,
                         const char *what);
/* Drops what this thread traced of a chain that was never ended (an operator that failed
 * between pool_chain_begin and pool_chain_end): the lifecycle calls it after every enqueue, so
 * that nothing traced outlives its call, nor a stream's thread. */
void pool_chain_drop(void);
/* Ends a chain without waiting: its end marker, `start` (may be NULL) and the launches this
 * thread traced go into `work`, whose finish (pool_work_finish, after the call's one wait)
 * adds the chain's device time and logs its kernels' times. `queue` must be the queue the
 * call's wait covers. */
int32_t pool_chain_close(struct clops_pool *pool, struct pool_work *work, cl_command_queue queue,
                         cl_event start, const char *what);
/* Waits for everything enqueued on `queue`, adds the chain's device time (from the start
 * marker to the end) to *device_ns when profiling, and releases `start` (may be NULL). */
int32_t pool_chain_end(struct clops_pool *pool, cl_command_queue queue, cl_event start,
                       int64_t *device_ns, const char *what);

/* Device memory. Every buffer clops creates goes through these two, so that the bytes it holds
 * on a device never pass the device's limit: device_memory_percent of CL_DEVICE_GLOBAL_MEM_SIZE
 * (drivers that allocate lazily, PoCL among them, accept any total at creation and abort the
 * process at first use). A refusal is CLOPS_ERR_OUT_OF_DEVICE_MEMORY with a message naming the
 * device, the bytes asked, the bytes in use and the limit: "<op>: <what>: ...". The reservation
 * is atomic: threads allocating at once cannot pass the limit together. */
int32_t pool_alloc_device_memory(struct pool_device *dev, int64_t bytes, const char *op,
                                 const char *what, cl_mem *out);
/* Buffers pool_alloc_device_memory created on `dev` since its pool opened it, released or not:
 * for tests that later calls reuse the buffers the pool keeps. */
int64_t pool_device_buffers_created(const struct pool_device *dev);
/* Releases `mem` (NULL is a no-op) and gives its bytes back to `dev`'s count. */
void pool_free_device_memory(struct pool_device *dev, cl_mem mem);
/* Device scratch for one call: at least `bytes` on `dev`, the caller's until it gives it back
 * with pool_scratch_give, or releases it with pool_free_device_memory (after a failure, when
 * what the device left in it is unknown). One given back earlier is handed out again where one
 * fits, sparing a small call an allocation, a release and the clearing of what its kernels
 * expect zeroed (on a GPU, microseconds each beside a reduction's tens); else a new one
 * (pool_alloc_device_memory, whose messages name `op` and `what`). zero[0], zero[1]: a range
 * of bytes known to hold zeros (what its last user said giving it back); zero[1] = 0 if none.
 * Buffers kept by the pool stay counted against their device's limit until it is released. */
int32_t pool_scratch_take(struct clops_pool *pool, struct pool_device *dev, int64_t bytes,
                          const char *op, const char *what, cl_mem *out, int64_t zero[2]);
/* Gives back a buffer of pool_scratch_take once nothing queued uses it any more, with the
 * range of bytes it leaves holding zeros (zero_bytes = 0: none). The pool keeps up to
 * POOL_SCRATCH_CACHE buffers of up to POOL_SCRATCH_MAX bytes, and releases the rest. */
void pool_scratch_give(struct clops_pool *pool, struct pool_device *dev, cl_mem mem,
                       int64_t zero_at, int64_t zero_bytes);

/* A device buffer of at least `bytes` for a staged host operand (tensor_stage), or any buffer a
 * call uses whose contents it does not keep (a split Mandelbrot's tile buffers): one a call
 * gave back (pool_staged_give) where one fits without wasting more than its size, else a new
 * one (pool_alloc_device_memory, whose messages name `op` and `what`). Any allocation on a
 * device whose limit is reached first releases the buffers its pool keeps there, then those
 * the process's other pools keep there. */
int32_t pool_staged_take(struct clops_pool *pool, struct pool_device *dev, int64_t bytes,
                         const char *op, const char *what, cl_mem *out);
/* Gives back a buffer of pool_staged_take once nothing queued uses it any more: kept for later
 * calls (POOL_STAGED_CACHE, up to a quarter of the device's limit), else released. */
void pool_staged_give(struct clops_pool *pool, struct pool_device *dev, cl_mem mem);

/* Host memory for a call's temporaries (outputs downloaded before their commit, packed
 * outputs, the staging blocks of uploads), at least `bytes`, its size in *capacity; NULL when
 * there is none. Pinned memory of `dev` where its driver gives it (a CL_MEM_ALLOC_HOST_PTR
 * buffer, mapped once through a queue of its own, which waits for nothing the call queued;
 * `queue` NULL: none), else malloc's: a driver copies between pinned memory and the device by DMA
 * at the bus's speed, and from pageable memory through its own staging at a fraction of it
 * (NVIDIA's: ~5 GB/s on an H100 against 25-50). Blocks come back with pool_host_give and serve
 * later calls on `dev`: pinning costs more than the copy it speeds up, and even malloc'd memory the
 * process has touched already spares the kernel faulting in and zeroing every page again (a 2048 x
 * 2048 Mandelbrot into fresh host memory took 35 ms on an H100 instead of 9). The pool keeps at
 * most POOL_HOST_CACHE blocks and POOL_HOST_CACHE_BYTES bytes (or an eighth of the machine's
 * memory where that is more), the largest ones that fit, until it is released. */
void *pool_host_take(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                     size_t bytes, size_t *capacity);
/* Gives back a block of pool_host_take (NULL is a no-op); `capacity` is what it said. */
void pool_host_give(struct clops_pool *pool, void *data, size_t capacity);
/* Runs a host copy of `bytes` cut into parts, fn(ctx, part, parts) for each, on the pool's
 * copier (host_copy.h): threads of the pool beside the caller, up to one per processor and at
 * most 8 in all, where the copy is large enough to gain from them. Cannot fail: without
 * threads the caller copies alone. */
void pool_host_copy(struct clops_pool *pool, host_copy_part_fn fn, void *ctx, size_t bytes);

/* ---- Statistics ------------------------------------------------------------------------ */

/* Counts bytes copied between host and device memory (clops_stats.bytes_uploaded and
 * bytes_downloaded). */
void pool_record_upload(struct clops_pool *pool, int64_t bytes);
void pool_record_download(struct clops_pool *pool, int64_t bytes);
/* The statistics behind the table's pool_stats, pool_op_stats (`index` a registry index) and
 * pool_device_stats, whole structs (struct_size = sizeof). */
void pool_read_stats(const struct clops_pool *pool, struct clops_stats *out);
void pool_read_op_stats(const struct clops_pool *pool, int32_t index, struct clops_op_stats *out);
void pool_read_device_stats(const struct pool_device *dev, struct clops_device_stats *out);

/* The table's memory_stats: what clops holds on dev's cl_device_id over the process (bytes
 * now, their peak, cl_mem objects) and dev's limit, into the output members of `out`. */
void pool_read_memory_stats(const struct pool_device *dev, struct clops_memory_stats_args *out);

/* Records work a device did for an operator that splits work between devices. */
void pool_record_device_work(struct pool_device *dev, int64_t tasks, int64_t busy_ns);

/* Records one call of the operator at `op_index` (the registry's) in the statistics. */
void pool_record_call(struct clops_pool *pool, int32_t op_index, int32_t status, int64_t device_ns);
/* The pool's crew of threads for split workers (split_crew.h), made at the first call; NULL
 * without host memory (the workers then run on the calling thread). */
struct split_crew *pool_split_crew(struct clops_pool *pool);
/* The configured split of the operator at `op_index` (operators.<op>.devices, .split), or NULL
 * when it is not split over two devices or more. */
const struct config_op *pool_op_split(const struct clops_pool *pool, int32_t op_index);
/* The operator's measured rate on pool device `device` in flops per second (0: not measured
 * yet), and a new measurement of it (the mean with the last, so that one slow call moves it
 * only half-way). */
double pool_op_rate(const struct clops_pool *pool, int32_t op_index, int32_t device);
void pool_op_rate_observe(struct clops_pool *pool, int32_t op_index, int32_t device,
                          double flops_per_s);
/* The most work, in flops, of the operator's split calls that ran slower than their fastest
 * device alone would have at its measured rate (0: none did), and a new such call's work: the
 * floor only rises (call_split.c runs calls under it whole). One floor for calls on host
 * operands (`on_buffers` 0), one for calls on device buffers (1): their parts cross apart. */
double pool_op_split_floor(const struct clops_pool *pool, int32_t op_index, int on_buffers);
void pool_op_split_lost(struct clops_pool *pool, int32_t op_index, int on_buffers, double flops);
/* Programs the pool built or loaded from the cache so far: a call that made one is not judged
 * by its time. */
int64_t pool_programs_made(const struct clops_pool *pool);
/* Memory the pool made so far for its calls (device buffers on any of its devices, host blocks,
 * bridges): a split call that made some is not judged by its time either, as the next call of
 * its shape takes them from the pool's caches (the first 16384^2 f32 split on host operands of
 * two H200s took 1053 ms, pinning its blocks, where the next ones take about 170). */
int64_t pool_memory_made(struct clops_pool *pool);
/* Notes whether a split call of `flops` of work, begun at start_ns (os_monotonic_ns), made
 * memory; returns 1 when it did and so did the operator's split call before it, of the same
 * work, which ended before it began: its shape makes memory in every call (more than the pool
 * keeps), so that making it is part of its usual time. Not a call that ran beside that one:
 * the first calls of a shape on two threads at once both make memory. */
int pool_op_split_made_again(struct clops_pool *pool, int32_t op_index, int made, double flops,
                             int64_t start_ns);

/* ---- Lifetime ----------------------------------------------------------------------------- */

/* A pool starts with one hold, the host's: pool_release drops it. Every entry point that uses a
 * pool holds it from its start to its end (calls, buffer transfers, stats), and every buffer for
 * its life, so that a host thread releasing the pool during another thread's call frees it when
 * that call ends, never under it. */
int32_t pool_create(const struct pool_config *cfg, struct clops_pool **out);
/* The table's pool_create_from_cl (pool_from_cl.c), `args` non-NULL and of ABI 1.4's size at
 * least: checks every argument, then a pool on the host's context, devices and queues, which it
 * retains, and releases at its end. */
int32_t pool_create_from_cl(struct clops_pool_from_cl_args *args);
/* Marks the pool released and drops the host's hold (a second release does nothing). */
void pool_release(struct clops_pool *pool);
/* Takes a hold on the pool for `what` (the entry point, named in the message). Refuses, with
 * CLOPS_ERR_INVALID_ARGUMENT and no hold taken, a pool already released: a host error that is
 * caught only while another call or a buffer still holds the pool (otherwise it is freed). */
int32_t pool_hold(const struct clops_pool *pool, const char *what);
/* Drops a hold of pool_hold; the last one of a released pool frees it. */
void pool_unhold(const struct clops_pool *pool);
/* Every OpenCL device on the system (for devices_list). */
int32_t pool_list_devices(struct clops_device_info *out, int32_t capacity, int32_t *count);
/* Copies a struct that starts with struct_size into a host struct of possibly older size:
 * only the members that fit the host's struct_size are written. */
int32_t pool_copy_sized(void *dst, const void *src, size_t full_size);

#endif
