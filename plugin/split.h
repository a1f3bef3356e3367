/* split.h — the work splitter: one operator call's work, cut into numbered units, shared by every
 * device of the pool. The splitter starts a host thread per worker (a device, or with stealing
 * each queue of a device), hands out chunks of units, and gathers the statistics; the operator
 * says only how a chunk of units is rendered on a worker's device and delivered into its
 * outputs. It knows nothing of what a unit is.
 *
 * Sides. Every device works for one of two sides: the GPU side (the pool's GPU devices) or the
 * CPU side (the others). A pool with no GPU but several devices lets its primary device stand in
 * for the GPU side, so that a split can be tried on a machine with CPU devices only.
 *
 * Lists. dynamic: one list of every unit in order; GPU-side workers take chunks from its front,
 * CPU-side workers from its back. Fixed share f (0 .. 1): unit u goes to the GPU side's list
 * when floor((u+1) f) > floor(u f) (floor(U f) units spread evenly over the numbers), the other
 * units to the CPU side's; each side shares its own list, without taking over. A side without
 * devices gives its units to the other. Only devices whose list has units take part.
 *
 * Chunks. A worker's chunks hold at most max_chunk units: launch_items of its kind (a GPU with
 * a CPU side to share with, a GPU alone, a CPU) divided by unit_items, 1 .. SPLIT_CHUNK_MAX.
 * Without stealing (one side, or a fixed share) a worker takes its device's part of what is left
 * of its side's list: its rate over the sum of the rates of its side's devices that take part,
 * or 1/workers while one of them has none yet, and its max_chunk is no larger than that first
 * share (one launch per device where the chunk limit allows). By rate, a device whose tiles
 * cross to another's memory (two H200s, the whole set at 16384^2 into GPU 0's buffer: GPU 1 at
 * 62 tiles/ms, GPU 0 at 308) no longer takes half of what is left and ends last by a chunk. A
 * tapering job (split_job.taper) takes half of that at a time, down to an eighth of the first
 * chunk, so that each worker's last chunks are small: Mandelbrot's landing of a chunk's host
 * tiles then hides behind the next chunk's render (two H200s, deep zoom 4096^2 into host
 * memory: device 0 took 128 tiles then 5, and landed the 128 after its render; 7.1 ms, 5.9-6.3
 * tapering). With stealing (dynamic, devices on both sides) a side takes its share by the
 * speeds seen so far: both sides started together, so the units each has delivered are its
 * speed; the other side is counted one unit ahead per worker (the units it is on), so that a
 * side that delivered nothing yet still gets a part; before its own first delivery a side takes
 * 1/(2 workers) of what is left (guided), so that one device's first chunk cannot leave the
 * others waiting.
 *
 * Stealing. With dynamic lists and devices on both sides, a GPU-side worker that finds the list
 * empty takes again the units CPU-side workers hold and have not finished (stolen), up to
 * max_chunk at a time: a GPU can be so much faster that waiting for the CPU's last chunk costs
 * more than the CPU saved. Every chunk that two workers may both render is `contested`: the
 * render callback must write it into memory of the worker's own, never into the outputs. After
 * render, the worker claims each unit that nobody has delivered yet, and deliver writes the
 * claimed units into the outputs (both renders are the same bits, so who delivers a unit does
 * not matter). A CPU-side worker's own chunks may be given up: render works in steps (bands)
 * and calls split_chunk_given_up between them, stopping once another worker delivered every
 * unit of the chunk; so a slow CPU holds the call up by at most one step.
 *
 * Sitting out. Every GPU but the pool's first sits out a run that all its GPUs together would
 * finish within SPLIT_GPU_ALONE_NS at the rates their earlier runs of the job saw: taking part
 * costs a second GPU more than such a run gains (two H200s, the whole set at 4096^2: 1.15 ms on
 * both, 0.83 on GPU 0 alone; the deep zoom at 2048^2: 3.3 against 3.1). The first GPU (in a pool of
 * GPUs the primary device, where a call's device outputs live) stays: its rate goes on changing
 * with the views it renders while the others' stay as they were, and "the faster one stays" flipped
 * between them (rates are per work-item, and a 2048^2 f64 deep zoom's pixel costs some 14 times a
 * 4096^2 whole set's). A larger run (more units) brings them back. In a dynamic run with devices on
 * both sides, a CPU-side device sits out when, at the rates the pool's earlier runs of the job saw
 * (rate_index: work-items per second, by device), one unit on it would take longer than half the
 * time the GPU side needs for every unit: its first chunk could only be stolen and hold the call up
 * by a step (a PoCL CPU beside an H200 on a 2048^2 f64 deep zoom: 240 times slower, the split
 * took 6.2 ms against 3.1 for the GPU alone, hosts/bench/RESULTS.md). A device without a rate yet
 * takes part, so that the first run measures it; a larger call (more units) brings it back.
 *
 * Results. Per worker, the units it delivered and its busy time (render and delivery, abandoned
 * work included) go to pool_record_device_work, and each device's rate (units delivered by its
 * workers over their longest busy time; a device that delivered none counts one unit in that
 * time, an upper bound) to the job's rates; a call's delivered units sum to unit_count.
 *
 * Stopping. A job may be stopped between chunks (job->stop_requested: a cancelled call) and
 * hear of the units delivered (job->progress): each worker asks before it takes a chunk, so a
 * run stops within one chunk per worker; units no worker took are not rendered.
 *
 * Threads. Worker 0 runs on the calling thread, the others on the pool's crew (split_crew.h):
 * threads made at the first split call and kept until the pool is released, so that no call
 * starts a thread; a worker no crew thread takes in time runs on the calling thread after its
 * own.
 * setup, check_device and teardown run on the calling thread, before and after the workers run;
 * render and deliver on the worker's thread. After a failure (a callback's, or a thread that
 * would not start) the other workers stop after their chunk, and split_run returns the first
 * worker's failure with its message.
 *
 * A GEMM split across devices does not use the splitter: call_split.c cuts it into one part
 * per device by the devices' measured rates (op_impl's cut, gemm_cut.c), each part a whole call
 * on its device (or pieces of calls, where its operands move from another device), since a
 * GEMM's units cost the same and need no stealing.
 *
 * An LU across devices does not use it either (ops/getrf_multi.c): its block columns are dealt
 * to the devices in turn for the whole call, so that interchanges stay on each device and only
 * the panels cross, and one thread orders every device's queue panel by panel. */
#ifndef CLOPS_SPLIT_H
#define CLOPS_SPLIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

/* The two sides of a split, and the kinds of device that size chunks. */
enum { SPLIT_SIDE_GPU = 0, SPLIT_SIDE_CPU = 1 };
enum { SPLIT_LAUNCH_GPU_SHARED = 0, SPLIT_LAUNCH_GPU_ALONE, SPLIT_LAUNCH_CPU, SPLIT_LAUNCH_KINDS };
/* The most units in a chunk, and workers in a run. */
enum { SPLIT_CHUNK_MAX = 256, SPLIT_WORKERS_MAX = CONFIG_MAX_DEVICES * 16 };
/* Below this many nanoseconds for every GPU together, a GPU slower than another sits out
 * (Sitting out, above). Set from two H200s (hosts/bench/RESULTS.md, 2026-11-29): at their
 * measured rates the whole set at 4096^2 (0.7 ms) and the deep zoom at 2048^2 (2.9 ms) ran
 * slower on both than on one and now sit out; the whole set at 16384^2 (11 ms) splits. */
enum { SPLIT_GPU_ALONE_NS = 4000000 };
/* SPLIT_GPU_ALONE_NS, a variable so that tests can set 0: then no GPU sits out. */
extern int64_t split_gpu_alone_ns;
/* Nonzero: every device counts as a GPU (tests: the GPUs' rules on PoCL's CPU devices). */
extern int split_devices_as_gpus;
/* mandelbrot.c's: 2 makes a CPU device's worker place its chunks on the primary device from two
 * sets, as a GPU's does (tests); 0 (default): GPUs only. */
extern int mandel_place_sets;
/* mandelbrot.c's: the chunks its workers rendered ahead, their downloads beside the next chunk's
 * render (tests). */
extern atomic_llong mandel_ahead_chunks;

struct split_call; /* the splitter's state for one run */

/* A worker as the callbacks see it. */
struct split_worker {
    struct clops_pool *pool;
    struct pool_device *dev; /* the device it runs on */
    cl_command_queue queue;  /* its queue on dev */
    int32_t side;            /* SPLIT_SIDE_GPU or SPLIT_SIDE_CPU */
    int32_t max_chunk;       /* the most units in one of its chunks: per-chunk buffers' size */
    int32_t contested;       /* whether any of its chunks may be contested */
};

/* A chunk of units for render and deliver. */
struct split_chunk {
    const int32_t *units; /* the unit numbers, count of them, not necessarily consecutive */
    int32_t count;
    int32_t contested;   /* another worker may render these units too: see Stealing above */
    int32_t may_give_up; /* render in steps and call split_chunk_given_up between them */
    struct split_call *call;
};

struct split_job {
    const char *name;      /* the operator, for messages: "<name>: cannot start a worker thread" */
    const char *unit_name; /* what units are, plural, for the log ("tiles") */
    int32_t unit_count;
    int32_t dynamic;    /* 1: dynamic lists; 0: a fixed share */
    double gpu_share;   /* fixed share: the GPU side's share of the units, 0 .. 1 */
    int64_t unit_items; /* work-items a unit takes, >= 1 */
    /* The registry index under which the devices' rates for the job are kept (pool_op_rate, in
     * work-items per second), or -1: none kept, no device sits out. */
    int32_t rate_index;
    int64_t launch_items[SPLIT_LAUNCH_KINDS]; /* work-items a launch should have, by kind */
    /* Nonzero: without stealing, a worker takes half its share of what is left at a time (not
     * all of it), down to an eighth of its first chunk, so that its last chunks are small: what
     * its thread does after each chunk (Mandelbrot's landing of host tiles) then hides behind
     * the next one's render rather than following the last. */
    int32_t taper;
    void *op;           /* the operator's call, given to check_device and setup */
    size_t worker_size; /* bytes of each worker's state (zeroed) given to the callbacks */
    /* Every device that takes part, before any setup; may be NULL. */
    int32_t (*check_device)(void *op, const struct pool_device *dev);
    /* Makes what the worker needs (kernels, buffers) in `state`. */
    int32_t (*setup)(void *op, const struct split_worker *w, void *state);
    /* Renders the chunk's units on the worker's device. */
    int32_t (*render)(void *state, const struct split_chunk *chunk);
    /* Writes the units with claimed[k] != 0 (at least one) of a rendered chunk into the outputs;
     * a chunk that is not contested has every unit claimed. */
    int32_t (*deliver)(void *state, const struct split_chunk *chunk, const int *claimed);
    /* Releases what setup made; called for every worker whose setup was called, failed or not. */
    void (*teardown)(void *state);
    /* Optional (NULL: never): asked by each worker before it takes a chunk, on its thread;
     * nonzero stops the run there: chunks already taken are rendered and delivered, no other
     * is taken, and split_run returns CLOPS_OK with result->stopped set (the operator says why
     * it stopped). A cancellation's check (op.h). */
    int (*stop_requested)(void *op);
    /* Optional: the units delivered so far, of unit_count, after each delivery, on the
     * delivering worker's thread; one call at a time, with counts that only grow. */
    void (*progress)(void *op, int64_t delivered, int64_t total);
    /* Optional: called by each worker once it takes no more chunks, on every path (after a
     * failure too), on its thread: waits for what its deliveries left in flight (a delivery may
     * return before its writes are done, so that the next chunk renders meanwhile); a failure
     * is the worker's, as a delivery's would be. */
    int32_t (*drain)(void *state);
};

/* What a run did: units delivered and busy time by pool device index. */
struct split_result {
    int64_t units[CONFIG_MAX_DEVICES], busy_ns[CONFIG_MAX_DEVICES];
    int32_t workers, stolen, given_up;
    int32_t stopped;   /* job->stop_requested stopped the run before every unit was delivered */
    int64_t delivered; /* units delivered, all devices together */
};

/* Runs `job` on every device of `pool` that takes part; `result` may be NULL. A job with no
 * units does nothing. */
int32_t split_run(struct clops_pool *pool, const struct split_job *job,
                  struct split_result *result);

/* The one device of `pool` that would take part in a run of `job` (only its unit_count, dynamic,
 * gpu_share, unit_items and rate_index are read), or NULL when several would: an operator can then
 * run the units on that device itself, on its call's queue, without the splitter's threads. */
struct pool_device *split_only_device(struct clops_pool *pool, const struct split_job *job);

/* The splitter's clock (CLOCK_MONOTONIC, ns), for the busy time of a device that an operator
 * ran alone (split_only_device), recorded with split_record_work as a run's would be. */
int64_t split_clock_ns(void);

/* Records `units` of `job` (its unit_items and rate_index are read) that `dev` delivered in
 * busy_ns: the device's statistics (pool_record_device_work) and its rate for the job. */
void split_record_work(struct clops_pool *pool, const struct split_job *job,
                       struct pool_device *dev, int64_t units, int64_t busy_ns);

/* For a render with chunk->may_give_up, between its steps: whether other workers delivered every
 * unit of the chunk, so that it should stop (its work is dropped, counted as given up). Stolen is
 * not enough: a GPU side slower than the CPU must not make the CPU drop a unit it would finish
 * first. */
int split_chunk_given_up(const struct split_chunk *chunk);

#endif
