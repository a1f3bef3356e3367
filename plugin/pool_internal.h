/* pool_internal.h — the pool's structs and what its files share besides pool.h: for pool.c,
 * pool_devices.c, pool_memory.c, pool_programs.c, pool_launch.c and pool_lifecycle.c only (and,
 * test-only, tests/test_cache.c, which runs kernels on the pool's context and reads its program
 * counters). The rest of the library uses pool.h's functions. */
#ifndef CLOPS_POOL_INTERNAL_H
#define CLOPS_POOL_INTERNAL_H

#include "platform.h"
#include <stdatomic.h>

#include "cache.h"
#include "pool.h"

struct pool_program; /* a built program, keyed by source name + options */
struct memory_count; /* pool_memory.c: what clops holds on one cl_device_id, process-wide */

struct pool_device {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue *queues;
    int32_t queue_count;
    atomic_uint next_queue;
    struct clops_device_info info; /* struct_size = sizeof */
    int64_t max_alloc_bytes;       /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
    size_t max_work_group;         /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    int32_t nv_compute_capability; /* NVIDIA's major * 10 + minor; 0: not NVIDIA, or unknown */
    int32_t clock_mhz;             /* CL_DEVICE_MAX_CLOCK_FREQUENCY; 0: not reported */
    int32_t index;                 /* in the pool */
    struct clops_pool *owner;      /* the pool it is a device of (its staged-buffer cache) */
    atomic_llong tasks, busy_ns;   /* clops_device_stats */
    atomic_llong buffers_created;  /* pool_device_buffers_created */
    /* Device memory accounting (pool_alloc_device_memory): the bytes clops may hold on this
     * device, and what it holds (bytes, their peak, cl_mem objects), counted over every pool of
     * the process that opened the same cl_device_id (shared, never freed). */
    int64_t memory_limit_bytes;
    struct memory_count *memory;
    atomic_int keeper_listed; /* its pool is among the keepers of its memory count (keeper_join) */
    /* pool_work_poll on a CPU device: whether looking for a synchronous call's end pays (>= 0:
     * it polls; < 0: it sits out that many calls), and how its looks ended. */
    atomic_int poll_score;
    atomic_llong polled_ends, poll_timeouts;
};

struct pool_op_counters {
    const struct config_op *settings; /* operators.<name>, resolved at creation; NULL if none */
    atomic_llong calls;
    atomic_llong failures;
    atomic_llong device_ns;
    /* A split call's rate on each device of the pool, in flops per millisecond (its part's
     * work over its time), 0 until one ran there: what shares the next split (call_split.c). */
    atomic_llong rate[CONFIG_MAX_DEVICES];
    /* The most work (flops) of a split call, shared by the measured rates, that took longer
     * than its fastest device would have alone: calls of no more work run whole (0: none); one
     * for calls on host operands [0], one for calls on device buffers [1]. */
    atomic_llong split_floor[2];
    /* The work (flops) of the operator's last split call, where it made memory; 0 where it
     * made none (pool_op_split_made_again); and when it ended (os_monotonic_ns). */
    atomic_llong split_made_flops, split_made_end_ns;
};

/* How many host blocks a pool keeps for later calls (pool_host_give): room for the staging
 * blocks of uploads (tensor_stage.c) and the download temporaries of a few threads' calls at
 * once, beyond which blocks would be pinned and released on every call. A GEMM split over two
 * GPUs in pieces on host operands (call_split.c) holds three per piece, 16 pieces a device: with
 * room for 32, two H200s multiplied at N = 16384 at 9 TFLOP/s instead of 41. Requests under
 * POOL_HOST_MIN_BLOCK bytes get that many, so that one block serves all small ones. */
enum { POOL_COPIERS = 4 };
enum { POOL_HOST_CACHE = 128, POOL_HOST_MIN_BLOCK = 64 << 10 };
/* The most bytes the cache keeps, or an eighth of the machine's memory where that is more
 * (pool_host_cache_bound): a stream's calls in flight hold several blocks each
 * (two staging blocks per upload, a temporary per output), and two streams of large calls need
 * them all back on the next calls, or each call pins and unpins them again (milliseconds for
 * tens of MiB on NVIDIA's driver; a 16384^2 GEMM's 1-2 GiB output took 0.5-1 s on an H200, four
 * times its product); beyond the bound the largest blocks are given back to the system. */
#define POOL_HOST_CACHE_BYTES ((size_t)1 << 30)
/* That bound (pool_memory.c). */
size_t pool_host_cache_bound(void);
struct host_block; /* pool_memory.c: a block and where its memory comes from */

/* How many bridges (bridge.h) a pool keeps for later calls: two per device of a pool of two
 * working on one call (double buffering), and a call of another thread. */
enum { POOL_BRIDGES = 8 };
struct bridge_block;

/* Device scratch calls gave back (pool_scratch_give): a few small buffers per pool. */
enum { POOL_SCRATCH_CACHE = 8, POOL_SCRATCH_MAX = 16 << 20 };
struct scratch_slot {
    struct pool_device *dev;
    cl_mem mem; /* NULL: a free slot */
    int64_t bytes, zero_at, zero_bytes;
};

/* Device buffers of staged host operands calls gave back (pool_staged_give): on NVIDIA's OpenCL,
 * clReleaseMemObject of a device buffer waits until the whole device is idle (8.9 ms while a
 * 9 ms kernel ran on another queue, on an H200), so a call that released its operands' buffers
 * stalled every other stream's calls behind it. Kept up to POOL_STAGED_CACHE buffers and a
 * quarter of the device's memory limit (an eighth did not hold a 32768^2 f64 GEMM's moved
 * operands on an H200: 17.2 GB of 15.7, one of them made again in every call); counted against
 * that limit while kept, and let go for any allocation that would not fit otherwise. */
enum { POOL_STAGED_CACHE = 96 }; /* a split GEMM's pieces hold two each (POOL_HOST_CACHE) */
struct staged_slot {
    struct pool_device *dev;
    cl_mem mem; /* NULL: a free slot */
    int64_t bytes;
};

/* Kernels calls gave back (pool_release_kernel), by program and name: enough for the kernels of
 * every operator on a device and a few threads' calls at once. */
enum { POOL_IDLE_KERNELS = 64, POOL_KERNEL_NAME = 48 };
struct idle_kernel {
    cl_program program;
    char name[POOL_KERNEL_NAME];
    cl_kernel kernel; /* NULL: a free slot */
};

struct clops_pool {
    /* What keeps the pool alive (pool_hold): the host's reference until pool_release, one per
     * entry point running on it and one per buffer of it; the last to go frees it. */
    atomic_int holds;
    atomic_int released; /* pool_release was called */
    struct pool_config cfg;
    struct program_cache cache;
    struct pool_device *devices;
    int32_t device_count;
    os_mutex programs_lock;
    struct pool_program *programs;
    os_mutex kernels_lock; /* guards idle_kernels (not held while building) */
    struct idle_kernel idle_kernels[POOL_IDLE_KERNELS];
    atomic_llong programs_built, programs_loaded, cache_rejected;
    atomic_llong kernels_created; /* pool_kernels_created */
    atomic_llong build_ns;        /* time in timed_build (pool_programs.c) */
    atomic_llong calls, bytes_uploaded, bytes_downloaded;
    struct pool_op_counters *op_counters;           /* registry_count() entries */
    os_mutex host_lock;                             /* guards host_cache and copiers */
    struct host_block *host_cache[POOL_HOST_CACHE]; /* pool_host_take's blocks of past calls */
    size_t host_cached_bytes; /* their bytes, at most pool_host_cache_bound() */
    /* pool_host_copy's, each made when a large copy finds the ones before busy: the threads
     * of two streams (starters packing uploads, completers unpacking downloads) copy at once. */
    struct host_copier *copiers[POOL_COPIERS];
    struct scratch_slot scratch[POOL_SCRATCH_CACHE]; /* guarded by host_lock */
    struct staged_slot staged[POOL_STAGED_CACHE];    /* guarded by host_lock */
    int copiers_tried; /* copiers made (or that could not be), guarded by host_lock */
    /* The splitter's threads (split_crew.h), made at the first split call; guarded by host_lock
     * until then. */
    struct split_crew *crew;
    os_mutex registered_lock;                   /* guards `registered` and `bridges` */
    struct host_registration *registered;       /* host_register's ranges (host_register.c) */
    struct bridge_block *bridges[POOL_BRIDGES]; /* bridges calls gave back (bridge.h) */
    atomic_llong bridges_made;
    atomic_llong host_blocks_made; /* pinned or malloc'd by pool_host_take (pool_memory_made) */
};

/* pool_devices.c: discovers the system's devices, opens those the configuration chooses as
 * pool->devices. On failure pool->device_count counts those to close with pool_close_devices,
 * which also frees the array. */
int32_t pool_open_devices(struct clops_pool *pool);
void pool_close_devices(struct clops_pool *pool);
/* pool_devices.c: opens `device` of the host's `context` as `dev` (device number
 * pool->device_count), on the host's in-order `queue` or, NULL, on two queues of clops' own;
 * retains the context and the queue (pool_close_devices releases them). Arguments checked. */
int32_t pool_open_host_device(struct clops_pool *pool, cl_context context, cl_device_id device,
                              cl_command_queue queue, struct pool_device *dev);
/* pool_lifecycle.c: a pool of `cfg` on the devices `open` opens (pool_open_devices, or one
 * opening the host's): pool_create's steps around it. */
int32_t pool_create_with(const struct pool_config *cfg,
                         int32_t (*open)(struct clops_pool *pool, const void *ctx), const void *ctx,
                         struct clops_pool **out);

/* pool_memory.c: sets dev's memory limit to `percent` of what it reports and attaches it to the
 * process-wide count of bytes held on its cl_device_id. */
int32_t pool_memory_attach(struct pool_device *dev, int32_t percent);
/* pool_memory.c: frees the host blocks the pool kept (pool_host_give): before the devices
 * close, since pinned ones are unmapped through a queue of theirs; stops its copier, and
 * releases the device scratch and staged buffers it kept (pool_scratch_give,
 * pool_staged_give), first leaving the devices' lists of pools that keep buffers. */
void pool_host_release_all(struct clops_pool *pool);

/* pool_programs.c: releases every program the pool built, and the kernels kept of them. */
void pool_release_programs(struct clops_pool *pool);

#endif
