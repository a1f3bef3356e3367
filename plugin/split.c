/* split.c — the work splitter (split.h): unit lists, workers on threads of their own, chunks
 * taken from both ends of a list without locks, stealing, and the statistics. */
#include "platform.h"
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "split.h"
#include "split_crew.h"

/* What became of a unit a worker took: its own (TAKEN), rendered again by a GPU-side worker
 * (STOLEN), or delivered by whoever finished it first (DONE). */
enum { UNIT_TAKEN = 0, UNIT_STOLEN = 1, UNIT_DONE = 2 };

/* Unit numbers that workers take from both ends: GPU-side workers take chunks from the front,
 * CPU-side workers from the back, so that whatever a CPU still works on at the end lies past
 * `back`, where the GPU side can find it. */
struct unit_list {
    int32_t *ids;
    int32_t len;
    atomic_llong ends; /* front << 32 | back: [front, back) are still to be taken */
};

struct split_call {
    struct clops_pool *pool;
    const struct split_job *job;
    struct unit_list list[2];
    int32_t list_count;  /* 1 (dynamic) or 2 */
    atomic_uchar *state; /* per unit: UNIT_TAKEN, UNIT_STOLEN or UNIT_DONE */
    int32_t worker_count;
    int32_t side_workers[2];         /* workers by side */
    int32_t stealing;                /* dynamic, with workers on both sides */
    double rate[CONFIG_MAX_DEVICES]; /* each device's rate for the job, read once for the run */
    double side_rate[2];         /* the sum of each side's workers' device rates; 0: one unknown */
    atomic_int side_done[2];     /* units delivered by each side so far */
    atomic_int stolen, given_up; /* units, for the log */
    atomic_int failed;
    atomic_int stopped;     /* job->stop_requested said so */
    os_mutex progress_lock; /* job->progress one call at a time, and `delivered` */
    int64_t delivered;      /* units delivered so far, under progress_lock */
};

/* One host thread: takes chunks from its list, has the job render and deliver them. */
struct worker {
    struct split_worker info; /* what the job's callbacks see */
    struct split_call *call;
    void *state; /* the job's, job->worker_size bytes */
    int32_t list;
    double share;     /* without stealing: its device's part of its side's rate (0: unknown) */
    int32_t steals;   /* GPU side, with stealing: re-renders CPU units at the end */
    int32_t in_bands; /* CPU side, with stealing: its units may be stolen */
    int32_t set_up;   /* setup was called */
    int32_t chunk_ids[SPLIT_CHUNK_MAX];
    int64_t units, busy_ns;
    int32_t status;
    char message[1024];
};

static int32_t clamp32(int64_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : x > hi ? hi : (int32_t)x;
}

int64_t split_clock_ns(void)
{
    return os_monotonic_ns();
}

/* ---- Sides and the lists --------------------------------------------------------------------- */

int split_devices_as_gpus = 0;
int64_t split_gpu_alone_ns = SPLIT_GPU_ALONE_NS;

static int is_gpu(const struct clops_pool *pool, int32_t d)
{
    return split_devices_as_gpus ||
           pool_device_info(pool_device_at(pool, d))->type == CLOPS_DEVICE_GPU;
}

static int device_side(const struct clops_pool *pool, int32_t d)
{
    const int32_t count = pool_device_count(pool);
    int has_gpu = 0;
    for (int32_t i = 0; i < count; i++)
        has_gpu |= is_gpu(pool, i);
    if (!has_gpu)
        return d == 0 && count > 1 ? SPLIT_SIDE_GPU : SPLIT_SIDE_CPU;
    return is_gpu(pool, d) ? SPLIT_SIDE_GPU : SPLIT_SIDE_CPU;
}

/* Whether GPU d sits the run out beside the pool's first GPU (split.h, Sitting out): it is not
 * the first, and all the GPUs together would finish the run's units within SPLIT_GPU_ALONE_NS
 * at their rates, where every GPU's rate is known. */
static int gpu_sits_out(const struct clops_pool *pool, const struct split_job *job, int32_t d)
{
    if (job->rate_index < 0 || !is_gpu(pool, d))
        return 0;
    double sum = 0;
    int32_t first = -1;
    for (int32_t i = 0; i < pool_device_count(pool); i++) {
        if (!is_gpu(pool, i))
            continue;
        const double rate = pool_op_rate(pool, job->rate_index, i);
        if (!(rate > 0))
            return 0;
        sum += rate;
        first = first < 0 ? i : first;
    }
    const double items = (double)job->unit_count * (double)job->unit_items;
    return d != first && items / sum * 1e9 < (double)split_gpu_alone_ns;
}

/* Whether device d sits the run out (split.h, Sitting out): a GPU but the first on a short run
 * (gpu_sits_out); a CPU-side device of a dynamic run with GPU-side devices, one unit on it
 * slower than half of every unit on the GPU side, 2 R_gpu > U R_d, where every rate is known. */
static int sits_out(const struct clops_pool *pool, const struct split_job *job, int32_t d)
{
    if (gpu_sits_out(pool, job, d))
        return 1;
    if (!job->dynamic || job->rate_index < 0 || device_side(pool, d) != SPLIT_SIDE_CPU)
        return 0;
    double gpu_rate = 0;
    for (int32_t i = 0; i < pool_device_count(pool); i++) {
        if (device_side(pool, i) != SPLIT_SIDE_GPU)
            continue;
        const double rate = pool_op_rate(pool, job->rate_index, i);
        if (!(rate > 0))
            return 0;
        gpu_rate += rate;
    }
    const double own = pool_op_rate(pool, job->rate_index, d);
    return gpu_rate > 0 && own > 0 && 2 * gpu_rate > (double)job->unit_count * own;
}

/* Which sides have devices that take part in a run of `job`. */
static void sides_present(const struct clops_pool *pool, const struct split_job *job,
                          int present[2])
{
    present[0] = present[1] = 0;
    for (int32_t d = 0; d < pool_device_count(pool); d++)
        if (!sits_out(pool, job, d))
            present[device_side(pool, d)] = 1;
}

/* Device d's rate for the job: `units` in busy_ns (none delivered: at most one). */
static void observe_rate(struct clops_pool *pool, const struct split_job *job, int32_t d,
                         int64_t units, int64_t busy_ns)
{
    if (job->rate_index >= 0 && busy_ns > 0)
        pool_op_rate_observe(pool, job->rate_index, d,
                             (double)(units > 0 ? units : 1) * (double)job->unit_items /
                                 ((double)busy_ns * 1e-9));
}

void split_record_work(struct clops_pool *pool, const struct split_job *job,
                       struct pool_device *dev, int64_t units, int64_t busy_ns)
{
    if (units + busy_ns <= 0)
        return;
    pool_record_device_work(dev, units, busy_ns);
    observe_rate(pool, job, pool_device_index(dev), units, busy_ns);
}

static long long pack_ends(int32_t front, int32_t back)
{
    return (long long)((uint64_t)(uint32_t)front << 32 | (uint32_t)back);
}

static int32_t lists_build(struct split_call *c)
{
    const struct split_job *job = c->job;
    int present[2];
    sides_present(c->pool, job, present);
    c->list_count = job->dynamic ? 1 : 2;
    for (int32_t s = 0; s < c->list_count; s++) {
        c->list[s].ids = malloc((size_t)job->unit_count * sizeof(int32_t));
        if (c->list[s].ids == NULL)
            return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", job->name);
    }
    for (int32_t u = 0; u < job->unit_count; u++) {
        int side = 0;
        if (!job->dynamic) {
            int gpu = floor((u + 1) * job->gpu_share) > floor(u * job->gpu_share);
            side = present[SPLIT_SIDE_GPU] && (gpu || !present[SPLIT_SIDE_CPU]) ? SPLIT_SIDE_GPU
                                                                                : SPLIT_SIDE_CPU;
        }
        c->list[side].ids[c->list[side].len++] = u;
    }
    for (int32_t s = 0; s < 2; s++)
        atomic_init(&c->list[s].ends, pack_ends(0, c->list[s].len));
    return CLOPS_OK;
}

struct pool_device *split_only_device(struct clops_pool *pool, const struct split_job *job)
{
    int present[2];
    sides_present(pool, job, present);
    /* lists_build's fixed share gives the GPU side floor(U f) units when both sides have
     * devices (the unit u where floor((u+1) f) > floor(u f), the same products). */
    int64_t side_units[2] = {job->unit_count, job->unit_count};
    if (!job->dynamic && present[SPLIT_SIDE_GPU] && present[SPLIT_SIDE_CPU]) {
        side_units[SPLIT_SIDE_GPU] = (int64_t)floor(job->unit_count * job->gpu_share);
        side_units[SPLIT_SIDE_CPU] = job->unit_count - side_units[SPLIT_SIDE_GPU];
    }
    struct pool_device *only = NULL;
    for (int32_t d = 0; d < pool_device_count(pool); d++) {
        if (side_units[device_side(pool, d)] == 0 || sits_out(pool, job, d))
            continue;
        if (only != NULL)
            return NULL;
        only = pool_device_at(pool, d);
    }
    return only;
}

/* ---- Workers --------------------------------------------------------------------------------- */

/* How many of the `left` units still in the list the worker takes, before max_chunk (split.h,
 * Chunks). Without stealing, one launch per device where max_chunk allows (Mandelbrot on an
 * H100, 4096^2 f32: 1.38 ms in one launch, 2.02 ms in two on two queues). With stealing, a GPU
 * 150 times faster than the CPU takes half the work, then nearly all the rest in its second
 * launch, where halving chunks took six (Mandelbrot deep zoom, H100 + PoCL). */
static int32_t chunk_share(const struct worker *w, int32_t left)
{
    const struct split_call *c = w->call;
    const int32_t side = w->info.side, workers = c->side_workers[side];
    if (!c->stealing) {
        /* share <= 1: at most what is left; a tapering job's, half of it (split_job.taper),
         * no less than an eighth of the first chunk (max_chunk, 0 before the first). */
        const int32_t halves = c->job->taper ? 2 : 1;
        const int32_t n = w->share > 0 ? (int32_t)ceil((double)left * w->share / halves)
                                       : (left + workers * halves - 1) / (workers * halves);
        const int32_t least = c->job->taper ? (w->info.max_chunk + 7) / 8 : 1;
        return n > least ? n : least < left ? least : left;
    }
    const int64_t own = atomic_load(&c->side_done[side]);
    if (own == 0)
        return (left + 2 * workers - 1) / (2 * workers);
    const int64_t other = atomic_load(&c->side_done[1 - side]) + c->side_workers[1 - side];
    return (int32_t)ceil((double)left * (double)own / (double)(own + other) / workers);
}

/* The splitter's part of a worker, then the job's setup; before any thread starts. */
static int32_t worker_setup(struct split_call *c, struct worker *w, struct pool_device *dev,
                            int32_t list, int32_t side, void *state)
{
    const struct split_job *job = c->job;
    *w = (struct worker){.call = c, .state = state, .list = list};
    w->info = (struct split_worker){.pool = c->pool, .dev = dev, .side = side};
    w->info.queue = pool_acquire_queue(dev);
    w->steals = c->stealing && side == SPLIT_SIDE_GPU;
    w->in_bands = c->stealing && side == SPLIT_SIDE_CPU;
    if (!c->stealing && c->side_rate[side] > 0)
        w->share = c->rate[pool_device_index(dev)] / c->side_rate[side];
    w->info.contested = w->steals || w->in_bands;
    int64_t items =
        job->launch_items[pool_device_info(dev)->type != CLOPS_DEVICE_GPU ? SPLIT_LAUNCH_CPU
                          : c->stealing                                   ? SPLIT_LAUNCH_GPU_SHARED
                                                                          : SPLIT_LAUNCH_GPU_ALONE];
    int64_t chunk = items / job->unit_items;
    if (!c->stealing) { /* no larger than take_chunk's first: per-chunk buffers have this size */
        const int32_t first = chunk_share(w, c->list[list].len);
        chunk = chunk < first ? chunk : first;
    }
    w->info.max_chunk = clamp32(chunk, 1, SPLIT_CHUNK_MAX);
    w->set_up = 1;
    return job->setup(job->op, &w->info, state);
}

/* Takes the next chunk of the worker's list into chunk_ids, from the front (GPU side) or the
 * back (CPU side), of chunk_share units; returns its length, 0 when the list is done. */
static int32_t take_chunk(struct worker *w)
{
    struct unit_list *l = &w->call->list[w->list];
    const int front_side = w->info.side == SPLIT_SIDE_GPU;
    long long ends = atomic_load(&l->ends), next;
    int32_t n, first;
    do {
        const int32_t front = (int32_t)(ends >> 32), back = (int32_t)(uint32_t)ends;
        if (front >= back)
            return 0;
        n = clamp32(chunk_share(w, back - front), 1, w->info.max_chunk);
        first = front_side ? front : back - n;
        next = front_side ? pack_ends(front + n, back) : pack_ends(front, back - n);
    } while (!atomic_compare_exchange_weak(&l->ends, &ends, next));
    memcpy(w->chunk_ids, l->ids + first, (size_t)n * sizeof(int32_t));
    return n;
}

/* Once the list is empty: up to max_chunk units that CPU-side workers took (those past the
 * list's final `back`) and have not finished, marked stolen. */
static int32_t steal_chunk(struct worker *w)
{
    struct split_call *c = w->call;
    const struct unit_list *l = &c->list[w->list];
    int32_t n = 0;
    for (int32_t i = (int32_t)(uint32_t)atomic_load(&l->ends); i < l->len && n < w->info.max_chunk;
         i++) {
        unsigned char taken = UNIT_TAKEN;
        if (atomic_compare_exchange_strong(&c->state[l->ids[i]], &taken, UNIT_STOLEN))
            w->chunk_ids[n++] = l->ids[i];
    }
    atomic_fetch_add(&c->stolen, n);
    return n;
}

int split_chunk_given_up(const struct split_chunk *chunk)
{
    for (int32_t k = 0; k < chunk->count; k++)
        if (atomic_load(&chunk->call->state[chunk->units[k]]) != UNIT_DONE)
            return 0;
    atomic_fetch_add(&chunk->call->given_up, chunk->count);
    return 1;
}

/* Renders a chunk, claims the units no one delivered yet and delivers them; *delivered counts
 * them. A chunk given up has every unit delivered already, so it claims none. */
static int32_t run_chunk(struct worker *w, int32_t n, int stolen, int32_t *delivered)
{
    const struct split_job *job = w->call->job;
    const struct split_chunk chunk = {.units = w->chunk_ids,
                                      .count = n,
                                      .contested = stolen || w->in_bands,
                                      .may_give_up = w->in_bands && !stolen,
                                      .call = w->call};
    *delivered = 0;
    int32_t status = job->render(w->state, &chunk);
    if (status != CLOPS_OK)
        return status;
    int claimed[SPLIT_CHUNK_MAX];
    for (int32_t k = 0; k < n; k++) {
        claimed[k] = atomic_exchange(&w->call->state[w->chunk_ids[k]], UNIT_DONE) != UNIT_DONE;
        *delivered += claimed[k];
    }
    return *delivered > 0 ? job->deliver(w->state, &chunk, claimed) : CLOPS_OK;
}

/* Whether the run stops before the next chunk: the job asked to (split.h, Stopping). */
static int run_stopped(struct split_call *c)
{
    if (atomic_load(&c->stopped))
        return 1;
    if (c->job->stop_requested == NULL || !c->job->stop_requested(c->job->op))
        return 0;
    atomic_store(&c->stopped, 1);
    return 1;
}

/* `units` more were delivered: the job hears of the total, one call at a time, so that the
 * counts it sees only grow. */
static void report_delivered(struct split_call *c, int32_t units)
{
    if (c->job->progress == NULL || units == 0)
        return;
    os_mutex_lock(&c->progress_lock);
    c->delivered += units;
    c->job->progress(c->job->op, c->delivered, c->job->unit_count);
    os_mutex_unlock(&c->progress_lock);
}

/* A worker's thread: chunks until its list is done (and nothing is left to steal), another
 * worker failed or the job stopped the run. The error message is thread-local, so a failure's
 * text is copied for the calling thread to report. */
static void worker_main(struct worker *w)
{
    while (!atomic_load(&w->call->failed) && !run_stopped(w->call)) {
        int stolen = 0;
        int32_t n = take_chunk(w), delivered = 0;
        if (n == 0 && w->steals) {
            n = steal_chunk(w);
            stolen = 1;
        }
        if (n == 0)
            break;
        int64_t start = split_clock_ns();
        int32_t status = run_chunk(w, n, stolen, &delivered);
        w->busy_ns += split_clock_ns() - start;
        w->units += delivered;
        atomic_fetch_add(&w->call->side_done[w->info.side], delivered);
        report_delivered(w->call, delivered);
        if (status != CLOPS_OK) {
            w->status = status;
            snprintf(w->message, sizeof w->message, "%s", err_last());
            atomic_store(&w->call->failed, 1);
            break;
        }
    }
    if (w->call->job->drain == NULL)
        return;
    const int64_t start = split_clock_ns();
    const int32_t status = w->call->job->drain(w->state);
    if (w->busy_ns > 0) /* a worker that took no chunk stays without a busy time (a rate) */
        w->busy_ns += split_clock_ns() - start;
    if (status != CLOPS_OK && w->status == CLOPS_OK) {
        w->status = status;
        snprintf(w->message, sizeof w->message, "%s", err_last());
        atomic_store(&w->call->failed, 1);
    }
}

/* ---- The whole run --------------------------------------------------------------------------- */

/* The devices whose list has units, and on which sides; the job checks each. */
static int32_t plan_devices(struct split_call *c, int *taking_part, int has_side[2])
{
    const struct split_job *job = c->job;
    for (int32_t d = 0; d < pool_device_count(c->pool); d++) {
        const int32_t side = device_side(c->pool, d);
        taking_part[d] = c->list[job->dynamic ? 0 : side].len > 0 && !sits_out(c->pool, job, d);
        if (!taking_part[d])
            continue;
        if (job->check_device != NULL) {
            int32_t status = job->check_device(job->op, pool_device_at(c->pool, d));
            if (status != CLOPS_OK)
                return status;
        }
        has_side[side] = 1;
    }
    return CLOPS_OK;
}

/* One worker per device that takes part; with stealing (dynamic lists, devices on both sides)
 * one per queue, so that a GPU's next chunk can run while the last one is delivered. Otherwise
 * a device renders its share in as few launches as it can, and a second queue only slowed them
 * (Mandelbrot on an H100, deep zoom 2048^2 f64: one launch 8.4 ms with one queue in the pool's
 * device, 23 ms with two, the second idle). */
static int32_t plan_workers(struct split_call *c, struct pool_device **devs, int32_t *sides)
{
    struct clops_pool *pool = c->pool;
    int has_side[2] = {0, 0}, taking_part[CONFIG_MAX_DEVICES] = {0};
    int32_t status = plan_devices(c, taking_part, has_side);
    if (status != CLOPS_OK)
        return status;
    c->stealing = c->job->dynamic && has_side[SPLIT_SIDE_GPU] && has_side[SPLIT_SIDE_CPU];
    int known[2] = {1, 1};
    for (int32_t d = 0; d < pool_device_count(pool); d++) {
        c->rate[d] = c->job->rate_index >= 0 ? pool_op_rate(pool, c->job->rate_index, d) : 0;
        if (!taking_part[d])
            continue;
        c->side_rate[device_side(pool, d)] += c->rate[d];
        known[device_side(pool, d)] &= c->rate[d] > 0;
    }
    for (int32_t side = 0; side < 2; side++)
        c->side_rate[side] = known[side] ? c->side_rate[side] : 0;
    for (int32_t d = 0; d < pool_device_count(pool); d++) {
        struct pool_device *dev = pool_device_at(pool, d);
        const int32_t queues = c->stealing ? pool_queue_count(dev) : 1;
        const int32_t side = device_side(pool, d);
        for (int32_t q = 0; taking_part[d] && q < queues && c->worker_count < SPLIT_WORKERS_MAX;
             q++) {
            devs[c->worker_count] = dev;
            sides[c->worker_count++] = side;
            c->side_workers[side]++;
        }
    }
    return CLOPS_OK;
}

static void worker_task(void *arg)
{
    worker_main(arg);
}

/* Runs worker 0 on the calling thread and the others on the pool's crew (split_crew.h: threads
 * kept across calls), returning once all are done: the first failure, with its message. */
static int32_t run_workers(struct clops_pool *pool, struct worker *workers, int32_t count)
{
    void *args[SPLIT_WORKERS_MAX];
    for (int32_t i = 0; i < count; i++)
        args[i] = &workers[i];
    split_crew_run(pool_split_crew(pool), worker_task, args, count);
    int32_t status = CLOPS_OK;
    for (int32_t i = 0; i < count && status == CLOPS_OK; i++)
        if (workers[i].status != CLOPS_OK)
            status = err_set(workers[i].status, "%s", workers[i].message);
    return status;
}

/* Workers' statistics into the pool and `r`, and the job's teardown. */
static void finish_workers(struct split_call *c, struct worker *workers, struct split_result *r)
{
    int64_t longest[CONFIG_MAX_DEVICES] = {0}; /* by device: its workers' longest busy time */
    for (int32_t i = 0; workers != NULL && i < c->worker_count; i++) {
        struct worker *w = &workers[i];
        if (!w->set_up)
            continue;
        const int32_t d = pool_device_index(w->info.dev);
        r->units[d] += w->units;
        r->busy_ns[d] += w->busy_ns;
        longest[d] = w->busy_ns > longest[d] ? w->busy_ns : longest[d];
        r->delivered += w->units;
        c->job->teardown(w->state);
    }
    for (int32_t d = 0; d < pool_device_count(c->pool); d++) {
        if (r->units[d] + r->busy_ns[d] <= 0)
            continue;
        pool_record_device_work(pool_device_at(c->pool, d), r->units[d], r->busy_ns[d]);
        observe_rate(c->pool, c->job, d, r->units[d], longest[d]);
    }
    r->workers = c->worker_count;
    r->stolen = atomic_load(&c->stolen);
    r->given_up = atomic_load(&c->given_up);
    r->stopped = atomic_load(&c->stopped) && r->delivered < c->job->unit_count;
}

int32_t split_run(struct clops_pool *pool, const struct split_job *job, struct split_result *result)
{
    struct split_result r;
    memset(&r, 0, sizeof r);
    if (job->unit_count == 0) {
        if (result != NULL)
            *result = r;
        return CLOPS_OK;
    }
    struct split_call call = {.pool = pool, .job = job};
    atomic_init(&call.failed, 0);
    atomic_init(&call.stolen, 0);
    atomic_init(&call.given_up, 0);
    atomic_init(&call.side_done[0], 0);
    atomic_init(&call.side_done[1], 0);
    atomic_init(&call.stopped, 0);
    os_mutex_init(&call.progress_lock);
    struct pool_device *devs[SPLIT_WORKERS_MAX];
    int32_t sides[SPLIT_WORKERS_MAX];
    unsigned char *states = NULL;
    struct worker *workers = calloc(SPLIT_WORKERS_MAX, sizeof *workers);
    call.state = calloc((size_t)job->unit_count, sizeof *call.state); /* all UNIT_TAKEN (0) */
    int32_t status =
        workers == NULL || call.state == NULL
            ? err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", job->name)
            : lists_build(&call);
    if (status == CLOPS_OK)
        status = plan_workers(&call, devs, sides);
    if (status == CLOPS_OK && job->worker_size > 0) {
        states = calloc((size_t)call.worker_count, job->worker_size);
        if (states == NULL)
            status = err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", job->name);
    }
    for (int32_t i = 0; status == CLOPS_OK && i < call.worker_count; i++)
        status = worker_setup(&call, &workers[i], devs[i], job->dynamic ? 0 : sides[i], sides[i],
                              states != NULL ? states + (size_t)i * job->worker_size : NULL);
    if (status == CLOPS_OK)
        status = run_workers(pool, workers, call.worker_count);
    finish_workers(&call, workers, &r);
    if (call.stealing)
        log_msg(CLOPS_LOG_DEBUG, "%s: %d %s, %d workers, %d %s stolen, %d given up", job->name,
                (int)job->unit_count, job->unit_name, (int)r.workers, (int)r.stolen, job->unit_name,
                (int)r.given_up);
    free(call.list[0].ids);
    free(call.list[1].ids);
    free(call.state);
    free(states);
    free(workers);
    os_mutex_destroy(&call.progress_lock);
    if (result != NULL)
        *result = r;
    return status;
}
