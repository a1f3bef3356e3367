/* pool_memory.c — the memory a pool's calls use: device memory accounting (every buffer clops
 * creates is counted against its device's limit, device_memory_percent, over all the pools of
 * the process), and the host blocks its calls' temporaries reuse. */
#include "platform.h"
#include "pool_internal.h"

#include <stdint.h>
#include <stdlib.h>

enum { MEMORY_COUNTS_MAX = 256, MEMORY_KEEPERS_MAX = 32 };

/* What clops holds on each OpenCL device, for the whole process: pools opened on one device
 * share its memory, so they share its count. A device handle lives as long as the process, and
 * so do the entries (never removed, at most one per device on the system). */
struct memory_count {
    cl_device_id device;
    atomic_llong in_use;  /* bytes */
    atomic_llong peak;    /* the most in_use has been */
    atomic_llong buffers; /* cl_mem objects */
    /* The pools that keep staged buffers on the device for later calls (pool_staged_give):
     * they give them back when an allocation of another pool does not fit (others_give_way).
     * Under memory_counts_lock; a pool leaves the list before it is freed. */
    struct clops_pool *keepers[MEMORY_KEEPERS_MAX];
    int32_t keeper_count;
};
static struct memory_count memory_counts[MEMORY_COUNTS_MAX];
static int32_t memory_count_entries;
static os_mutex memory_counts_lock = OS_MUTEX_INIT;

static struct memory_count *memory_count_for(cl_device_id device)
{
    struct memory_count *found = NULL;
    os_mutex_lock(&memory_counts_lock);
    for (int32_t i = 0; i < memory_count_entries && found == NULL; i++)
        if (memory_counts[i].device == device)
            found = &memory_counts[i];
    if (found == NULL && memory_count_entries < MEMORY_COUNTS_MAX) {
        found = &memory_counts[memory_count_entries++];
        found->device = device;
    }
    os_mutex_unlock(&memory_counts_lock);
    return found;
}

/* `pool` among the keepers of dev's device (memory_count); 0 where the list is full: the pool
 * then keeps nothing there. The process-wide lock once a device: a call gives buffers back
 * every time. */
static int keeper_join(struct pool_device *dev, struct clops_pool *pool)
{
    if (atomic_load(&dev->keeper_listed))
        return 1;
    struct memory_count *c = dev->memory;
    int listed = 0;
    os_mutex_lock(&memory_counts_lock);
    for (int32_t i = 0; i < c->keeper_count && !listed; i++)
        listed = c->keepers[i] == pool;
    if (!listed && c->keeper_count < MEMORY_KEEPERS_MAX) {
        c->keepers[c->keeper_count++] = pool;
        listed = 1;
    }
    atomic_store(&dev->keeper_listed, listed);
    os_mutex_unlock(&memory_counts_lock);
    return listed;
}

/* `pool` off every device's list of keepers (before it is freed). */
static void keeper_leave(struct clops_pool *pool)
{
    os_mutex_lock(&memory_counts_lock);
    for (int32_t e = 0; e < memory_count_entries; e++) {
        struct memory_count *c = &memory_counts[e];
        for (int32_t i = 0; i < c->keeper_count; i++)
            if (c->keepers[i] == pool) {
                c->keepers[i] = c->keepers[--c->keeper_count];
                break;
            }
    }
    os_mutex_unlock(&memory_counts_lock);
}

static int staged_release(struct clops_pool *pool, const struct pool_device *dev);

/* Every other pool's staged buffers kept on dev's device given back; returns how many. Under
 * memory_counts_lock, so that none of those pools is freed meanwhile (keeper_leave waits); no
 * pool's host_lock is held where this is called. */
static int others_give_way(struct pool_device *dev)
{
    struct memory_count *c = dev->memory;
    int given = 0;
    os_mutex_lock(&memory_counts_lock);
    for (int32_t i = 0; i < c->keeper_count; i++)
        if (c->keepers[i] != dev->owner)
            given += staged_release(c->keepers[i], dev);
    os_mutex_unlock(&memory_counts_lock);
    return given;
}

/* `percent` of what the device reports, without overflow; no limit when it reports nothing. */
static int64_t memory_limit(int64_t global_mem_bytes, int32_t percent)
{
    if (global_mem_bytes <= 0)
        return INT64_MAX;
    return global_mem_bytes / 100 * percent + global_mem_bytes % 100 * percent / 100;
}

int32_t pool_memory_attach(struct pool_device *dev, int32_t percent)
{
    dev->memory_limit_bytes = memory_limit(dev->info.global_mem_bytes, percent);
    dev->memory = memory_count_for(dev->device);
    if (dev->memory == NULL)
        return err_set(CLOPS_ERR_INTERNAL, "pool: more than %d OpenCL devices",
                       (int)MEMORY_COUNTS_MAX);
    return CLOPS_OK;
}

/* Takes `bytes` of dev's limit, or returns 0 and what is held when they do not fit. A
 * compare-and-swap, so that two threads cannot both see room for the last bytes. */
static int reserve_device_memory(struct pool_device *dev, int64_t bytes, int64_t *held)
{
    long long in_use = atomic_load(&dev->memory->in_use);
    do {
        if (bytes > dev->memory_limit_bytes - in_use) {
            *held = in_use;
            return 0;
        }
    } while (!atomic_compare_exchange_weak(&dev->memory->in_use, &in_use, in_use + bytes));
    *held = in_use + bytes;
    return 1;
}

/* Counts a created cl_mem, and `held`, what was reserved with it, in the peak. */
static void count_device_buffer(struct memory_count *count, int64_t held)
{
    atomic_fetch_add(&count->buffers, 1);
    long long peak = atomic_load(&count->peak);
    while (held > peak && !atomic_compare_exchange_weak(&count->peak, &peak, held))
        ;
}

int32_t pool_alloc_device_memory(struct pool_device *dev, int64_t bytes, const char *op,
                                 const char *what, cl_mem *out)
{
    *out = NULL;
    if (bytes <= 0)
        return err_set(CLOPS_ERR_INTERNAL, "%s: %s: asked for %lld bytes of device memory", op,
                       what, (long long)bytes);
    /* Checked here because lazy drivers (NVIDIA's, PoCL) accept any size now, to fail at first
     * use. */
    if (bytes > dev->max_alloc_bytes)
        return err_set(CLOPS_ERR_OUT_OF_DEVICE_MEMORY,
                       "%s: %s: %lld bytes exceed the largest allocation '%s' allows (%lld bytes)",
                       op, what, (long long)bytes, dev->info.name, (long long)dev->max_alloc_bytes);
    int64_t held = 0;
    /* Staged operands' buffers pools keep for later calls give way to what is asked now: the
     * pool's own, then those of the other pools on the device. */
    int fits = reserve_device_memory(dev, bytes, &held);
    if (!fits && dev->owner != NULL && staged_release(dev->owner, dev) > 0)
        fits = reserve_device_memory(dev, bytes, &held);
    if (!fits && others_give_way(dev) > 0)
        fits = reserve_device_memory(dev, bytes, &held);
    if (!fits)
        return err_set(CLOPS_ERR_OUT_OF_DEVICE_MEMORY,
                       "%s: %s: %lld bytes do not fit in the memory of '%s': %lld bytes in use, "
                       "limit %lld bytes (device_memory_percent of the %lld bytes it reports)",
                       op, what, (long long)bytes, dev->info.name, (long long)held,
                       (long long)dev->memory_limit_bytes, (long long)dev->info.global_mem_bytes);
    cl_int rc;
    *out = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &rc);
    if (rc != CL_SUCCESS) {
        *out = NULL;
        atomic_fetch_sub(&dev->memory->in_use, (long long)bytes);
        return err_cl(rc, "%s: %s: allocating %lld bytes on '%s' failed", op, what,
                      (long long)bytes, dev->info.name);
    }
    count_device_buffer(dev->memory, held);
    atomic_fetch_add(&dev->buffers_created, 1);
    return CLOPS_OK;
}

int64_t pool_device_buffers_created(const struct pool_device *dev)
{
    return atomic_load(&dev->buffers_created);
}

void pool_free_device_memory(struct pool_device *dev, cl_mem mem)
{
    if (mem == NULL)
        return;
    /* The size it was created with, so that callers need not keep it. */
    size_t bytes = 0;
    if (clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS)
        atomic_fetch_sub(&dev->memory->in_use, (long long)bytes);
    atomic_fetch_sub(&dev->memory->buffers, 1);
    clReleaseMemObject(mem);
}

void pool_read_memory_stats(const struct pool_device *dev, struct clops_memory_stats_args *out)
{
    out->allocated_bytes = atomic_load(&dev->memory->in_use);
    out->peak_bytes = atomic_load(&dev->memory->peak);
    out->buffers = atomic_load(&dev->memory->buffers);
    out->limit_bytes = dev->memory_limit_bytes;
}

int32_t pool_scratch_take(struct clops_pool *pool, struct pool_device *dev, int64_t bytes,
                          const char *op, const char *what, cl_mem *out, int64_t zero[2])
{
    zero[0] = zero[1] = 0;
    *out = NULL;
    os_mutex_lock(&pool->host_lock);
    int best = -1;
    for (int i = 0; i < POOL_SCRATCH_CACHE; i++) {
        const struct scratch_slot *s = &pool->scratch[i];
        if (s->mem != NULL && s->dev == dev && s->bytes >= bytes &&
            (best < 0 || s->bytes < pool->scratch[best].bytes))
            best = i;
    }
    if (best >= 0) {
        struct scratch_slot *s = &pool->scratch[best];
        *out = s->mem;
        zero[0] = s->zero_at;
        zero[1] = s->zero_bytes;
        s->mem = NULL;
    }
    os_mutex_unlock(&pool->host_lock);
    return *out != NULL ? CLOPS_OK : pool_alloc_device_memory(dev, bytes, op, what, out);
}

void pool_scratch_give(struct clops_pool *pool, struct pool_device *dev, cl_mem mem,
                       int64_t zero_at, int64_t zero_bytes)
{
    if (mem == NULL)
        return;
    size_t bytes = 0;
    if (clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS &&
        bytes <= POOL_SCRATCH_MAX) {
        os_mutex_lock(&pool->host_lock);
        for (int i = 0; i < POOL_SCRATCH_CACHE && mem != NULL; i++)
            if (pool->scratch[i].mem == NULL) {
                pool->scratch[i] =
                    (struct scratch_slot){dev, mem, (int64_t)bytes, zero_at, zero_bytes};
                mem = NULL;
            }
        os_mutex_unlock(&pool->host_lock);
    }
    pool_free_device_memory(dev, mem);
}

/* Takes the smallest kept buffer of `dev` that holds `bytes` and is at most twice as large
 * (a larger one would hold device memory a later, larger operand could use); NULL if none. */
static cl_mem staged_cached(struct clops_pool *pool, struct pool_device *dev, int64_t bytes)
{
    os_mutex_lock(&pool->host_lock);
    int best = -1;
    for (int i = 0; i < POOL_STAGED_CACHE; i++) {
        const struct staged_slot *s = &pool->staged[i];
        if (s->mem != NULL && s->dev == dev && s->bytes >= bytes && s->bytes / 2 <= bytes &&
            (best < 0 || s->bytes < pool->staged[best].bytes))
            best = i;
    }
    cl_mem mem = NULL;
    if (best >= 0) {
        mem = pool->staged[best].mem;
        pool->staged[best].mem = NULL;
    }
    os_mutex_unlock(&pool->host_lock);
    return mem;
}

/* Releases every kept buffer of pool's on dev's device (whichever of pool's devices opened it;
 * NULL: of every device); returns how many. */
static int staged_release(struct clops_pool *pool, const struct pool_device *dev)
{
    cl_mem drop[POOL_STAGED_CACHE];
    struct pool_device *owner[POOL_STAGED_CACHE];
    int n = 0;
    os_mutex_lock(&pool->host_lock);
    for (int i = 0; i < POOL_STAGED_CACHE; i++) {
        struct staged_slot *s = &pool->staged[i];
        if (s->mem != NULL && (dev == NULL || s->dev->memory == dev->memory)) {
            owner[n] = s->dev;
            drop[n++] = s->mem;
            s->mem = NULL;
        }
    }
    os_mutex_unlock(&pool->host_lock);
    for (int i = 0; i < n; i++)
        pool_free_device_memory(owner[i], drop[i]);
    return n;
}

int32_t pool_staged_take(struct clops_pool *pool, struct pool_device *dev, int64_t bytes,
                         const char *op, const char *what, cl_mem *out)
{
    *out = staged_cached(pool, dev, bytes);
    return *out != NULL ? CLOPS_OK : pool_alloc_device_memory(dev, bytes, op, what, out);
}

void pool_staged_give(struct clops_pool *pool, struct pool_device *dev, cl_mem mem)
{
    if (mem == NULL)
        return;
    size_t bytes = 0;
    /* Listed among the device's keepers first, so that another pool can make it give way. */
    if (keeper_join(dev, pool) &&
        clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS) {
        os_mutex_lock(&pool->host_lock);
        int64_t kept = 0;
        int slot = -1;
        for (int i = 0; i < POOL_STAGED_CACHE; i++) {
            if (pool->staged[i].mem == NULL)
                slot = slot < 0 ? i : slot;
            else if (pool->staged[i].dev == dev)
                kept += pool->staged[i].bytes;
        }
        if (slot >= 0 && kept + (int64_t)bytes <= dev->memory_limit_bytes / 4) {
            pool->staged[slot] = (struct staged_slot){dev, mem, (int64_t)bytes};
            mem = NULL;
        }
        os_mutex_unlock(&pool->host_lock);
    }
    pool_free_device_memory(dev, mem);
}

/* A block's bookkeeping sits in front of the bytes handed out, so that pool_host_give needs only
 * the pointer: which pinned buffer it is mapped from, if any, and for which device. */
struct host_block {
    cl_mem mem;              /* the CL_MEM_ALLOC_HOST_PTR buffer it is mapped from; NULL: malloc */
    struct pool_device *dev; /* the device it is pinned for (and which a malloc'd one served) */
    void *base;              /* what clEnqueueMapBuffer or malloc returned */
    size_t bytes;            /* handed out after the header */
};
/* The header's room: a multiple of the cache line, so that the bytes handed out stay aligned
 * for vector copies as malloc's and the driver's mapped memory are. */
enum { HOST_HEADER = 64 };
_Static_assert(sizeof(struct host_block) <= HOST_HEADER, "host block header too large");

static struct host_block *block_of(void *data)
{
    return (struct host_block *)((char *)data - HOST_HEADER);
}

static void *data_of(struct host_block *b)
{
    return (char *)b + HOST_HEADER;
}

/* Maps all of `mem` and waits for the map, on a queue of its own: on the call's queue the map
 * would wait for all the call queued before it (uploads, kernels) and end the overlap of the
 * host's work with the device's. NULL where the driver refuses. */
static void *map_whole(struct pool_device *dev, cl_mem mem, size_t bytes)
{
    cl_int rc;
    cl_command_queue own = clCreateCommandQueue(dev->context, dev->device, 0, &rc);
    if (rc != CL_SUCCESS)
        return NULL;
    void *base = clEnqueueMapBuffer(own, mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                    NULL, NULL, &rc);
    clReleaseCommandQueue(own);
    return rc == CL_SUCCESS ? base : NULL;
}

/* A pinned block of `bytes` (header included) of dev's context, mapped once and kept mapped
 * until released; NULL where the driver refuses either step, or without a `queue` (the caller
 * falls back to malloc). Not counted against the device's memory: the driver keeps it in host
 * memory, and kernels never read it. */
static struct host_block *pinned_block(struct pool_device *dev, cl_command_queue queue,
                                       size_t bytes)
{
    if (queue == NULL || bytes > (size_t)dev->max_alloc_bytes)
        return NULL;
    cl_int rc;
    cl_mem mem =
        clCreateBuffer(dev->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &rc);
    if (rc != CL_SUCCESS)
        return NULL;
    void *base = map_whole(dev, mem, bytes);
    if (base == NULL) {
        clReleaseMemObject(mem);
        return NULL;
    }
    struct host_block *b = base;
    *b = (struct host_block){mem, dev, base, bytes - HOST_HEADER};
    return b;
}

static struct host_block *malloc_block(struct pool_device *dev, size_t bytes)
{
    struct host_block *b = malloc(bytes);
    if (b != NULL)
        *b = (struct host_block){NULL, dev, b, bytes - HOST_HEADER};
    return b;
}

/* Frees a block: a pinned one is unmapped (through a queue of its device: nothing waits for
 * it) and released, which the driver defers until the unmap is done. */
static void free_block(struct host_block *b)
{
    if (b == NULL)
        return;
    if (b->mem == NULL) {
        free(b->base);
        return;
    }
    cl_mem mem = b->mem;
    clEnqueueUnmapMemObject(b->dev->queues[0], mem, b->base, 0, NULL, NULL);
    clReleaseMemObject(mem);
}

void *pool_host_take(struct clops_pool *pool, struct pool_device *dev, cl_command_queue queue,
                     size_t bytes, size_t *capacity)
{
    /* Small requests share one size, so that a block serves every small output of later calls
     * instead of each size pinning a block of its own. */
    if (bytes < POOL_HOST_MIN_BLOCK)
        bytes = POOL_HOST_MIN_BLOCK;
    os_mutex_lock(&pool->host_lock);
    int best = -1;
    for (int i = 0; i < POOL_HOST_CACHE; i++) {
        const struct host_block *b = pool->host_cache[i];
        if (b != NULL && b->dev == dev && b->bytes >= bytes &&
            (best < 0 || b->bytes < pool->host_cache[best]->bytes))
            best = i;
    }
    struct host_block *found = NULL;
    if (best >= 0) {
        found = pool->host_cache[best];
        pool->host_cache[best] = NULL;
        pool->host_cached_bytes -= found->bytes;
    }
    os_mutex_unlock(&pool->host_lock);
    if (found == NULL && bytes <= SIZE_MAX - HOST_HEADER) {
        found = pinned_block(dev, queue, bytes + HOST_HEADER);
        if (found == NULL)
            found = malloc_block(dev, bytes + HOST_HEADER);
        atomic_fetch_add(&pool->host_blocks_made, 1);
    }
    *capacity = found != NULL ? found->bytes : 0;
    return found != NULL ? data_of(found) : NULL;
}

/* The slot of the cached block to evict for room: the largest other than `keep`, or -1. */
static int largest_slot(const struct clops_pool *pool, const struct host_block *keep)
{
    int slot = -1;
    for (int i = 0; i < POOL_HOST_CACHE; i++) {
        const struct host_block *b = pool->host_cache[i];
        if (b != NULL && b != keep && (slot < 0 || b->bytes > pool->host_cache[slot]->bytes))
            slot = i;
    }
    return slot;
}

/* The most bytes the host block cache keeps: POOL_HOST_CACHE_BYTES, or an eighth of the
 * machine's memory where that is more (told once: it does not change while a process runs). */
size_t pool_host_cache_bound(void)
{
    static _Atomic size_t bound = 0;
    size_t b = atomic_load(&bound);
    if (b == 0) {
        const uint64_t eighth = os_physical_bytes() / 8;
        b = eighth > POOL_HOST_CACHE_BYTES && eighth <= SIZE_MAX ? (size_t)eighth
                                                                 : POOL_HOST_CACHE_BYTES;
        atomic_store(&bound, b);
    }
    return b;
}

void pool_host_give(struct clops_pool *pool, void *data, size_t capacity)
{
    if (data == NULL)
        return;
    struct host_block *given = block_of(data);
    struct host_block *evicted[POOL_HOST_CACHE + 1];
    int count = 0;
    (void)capacity; /* the header knows it */
    os_mutex_lock(&pool->host_lock);
    /* An empty slot, else the smallest block if this one is larger. */
    int slot = 0;
    for (int i = 1; i < POOL_HOST_CACHE && pool->host_cache[slot] != NULL; i++)
        if (pool->host_cache[i] == NULL ||
            pool->host_cache[i]->bytes < pool->host_cache[slot]->bytes)
            slot = i;
    const size_t bound = pool_host_cache_bound();
    if (given->bytes > bound)
        evicted[count++] = given;
    else if (pool->host_cache[slot] == NULL || pool->host_cache[slot]->bytes < given->bytes) {
        if (pool->host_cache[slot] != NULL) {
            evicted[count++] = pool->host_cache[slot];
            pool->host_cached_bytes -= pool->host_cache[slot]->bytes;
        }
        pool->host_cache[slot] = given;
        pool->host_cached_bytes += given->bytes;
        while (pool->host_cached_bytes > bound) {
            const int largest = largest_slot(pool, given);
            if (largest < 0)
                break;
            evicted[count++] = pool->host_cache[largest];
            pool->host_cached_bytes -= pool->host_cache[largest]->bytes;
            pool->host_cache[largest] = NULL;
        }
    } else
        evicted[count++] = given;
    os_mutex_unlock(&pool->host_lock);
    for (int i = 0; i < count; i++)
        free_block(evicted[i]); /* unpinning takes time: not under the lock */
}

/* The copier's helper threads: one per processor beside the caller, 8 threads in all at most
 * (a copy saturates a socket's memory bandwidth with a few cores). */
static int copier_helpers(void)
{
    if (host_copy_helpers > 0)
        return host_copy_helpers;
    const int cpus = os_cpu_count();
    return (cpus < 8 ? cpus : 8) - 1;
}

void pool_host_copy(struct clops_pool *pool, host_copy_part_fn fn, void *ctx, size_t bytes)
{
    if (bytes < host_copy_min_bytes) {
        fn(ctx, 0, 1);
        return;
    }
    for (int i = 0; i < POOL_COPIERS; i++) {
        os_mutex_lock(&pool->host_lock);
        if (i == pool->copiers_tried) { /* the ones before are busy: one more */
            pool->copiers[i] = host_copier_new(copier_helpers());
            pool->copiers_tried++;
        }
        struct host_copier *copier = pool->copiers[i];
        os_mutex_unlock(&pool->host_lock);
        if (host_copier_try_run(copier, fn, ctx, host_copier_parts(copier, bytes)))
            return;
    }
    fn(ctx, 0, 1); /* every copier busy: the caller copies alone */
}

void pool_host_release_all(struct clops_pool *pool)
{
    keeper_leave(pool); /* no other pool may release its kept buffers any more */
    for (int i = 0; i < POOL_COPIERS; i++) {
        host_copier_free(pool->copiers[i]);
        pool->copiers[i] = NULL;
    }
    pool->copiers_tried = 0;
    for (int i = 0; i < POOL_SCRATCH_CACHE; i++) {
        pool_free_device_memory(pool->scratch[i].dev, pool->scratch[i].mem);
        pool->scratch[i].mem = NULL;
    }
    staged_release(pool, NULL);
    for (int i = 0; i < POOL_HOST_CACHE; i++) {
        free_block(pool->host_cache[i]);
        pool->host_cache[i] = NULL;
    }
    pool->host_cached_bytes = 0;
}
