/* pool.c — what every part of the pool reads and counts: the operators' settings and the
 * statistics. The pool's devices, memory, programs and launches live in pool_devices.c,
 * pool_memory.c, pool_programs.c and pool_launch.c, its creation and release in
 * pool_lifecycle.c, around the structs of pool_internal.h. */
#include <string.h>

#include "op.h"
#include "pool_internal.h"
#include "registry.h"
#include "split_crew.h"

const struct config_op *pool_op_settings(const struct clops_pool *pool, const char *op_name)
{
    return config_find_op(&pool->cfg, op_name);
}

const char *pool_build_options(const struct clops_pool *pool)
{
    return pool->cfg.build_options;
}

int32_t pool_op_setting(const struct clops_pool *pool, const struct op_impl *impl, int32_t setting,
                        int32_t device_default)
{
    const int32_t index = registry_index(impl->desc);
    const struct op_settings *decl = impl->settings;
    if (index < 0 || decl == NULL || setting < 0 || setting >= decl->count)
        return device_default;
    const struct config_op *op = pool->op_counters[index].settings;
    if (op != NULL && op->origin[setting] != SETTING_DEFAULT)
        return op->values[setting];
    return decl->list[setting].def != SETTING_PER_DEVICE ? decl->list[setting].def : device_default;
}

void pool_op_describe_settings(const struct clops_pool *pool, const char *op_name, char *out,
                               size_t size)
{
    config_op_describe_settings(config_find_op(&pool->cfg, op_name), op_name, out, size);
}

int32_t pool_copy_sized(void *dst, const void *src, size_t full_size)
{
    uint32_t host_size;
    memcpy(&host_size, dst, sizeof host_size);
    if (host_size < 2 * sizeof(uint32_t))
        return err_set(CLOPS_ERR_ABI_MISMATCH,
                       "struct_size = %u is too small (set it to sizeof the struct)",
                       (unsigned)host_size);
    size_t n = host_size < full_size ? host_size : full_size;
    memcpy((char *)dst + sizeof(uint32_t), (const char *)src + sizeof(uint32_t),
           n - sizeof(uint32_t));
    return CLOPS_OK;
}

void pool_record_upload(struct clops_pool *pool, int64_t bytes)
{
    atomic_fetch_add(&pool->bytes_uploaded, (long long)bytes);
}

void pool_record_download(struct clops_pool *pool, int64_t bytes)
{
    atomic_fetch_add(&pool->bytes_downloaded, (long long)bytes);
}

void pool_read_stats(const struct clops_pool *pool, struct clops_stats *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->programs_built = atomic_load(&pool->programs_built);
    out->programs_loaded = atomic_load(&pool->programs_loaded);
    out->build_ns = atomic_load(&pool->build_ns);
    out->cache_rejected = atomic_load(&pool->cache_rejected);
    out->calls = atomic_load(&pool->calls);
    out->bytes_uploaded = atomic_load(&pool->bytes_uploaded);
    out->bytes_downloaded = atomic_load(&pool->bytes_downloaded);
}

void pool_read_op_stats(const struct clops_pool *pool, int32_t index, struct clops_op_stats *out)
{
    const struct pool_op_counters *c = &pool->op_counters[index];
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->name = registry_at(index)->name;
    out->calls = atomic_load(&c->calls);
    out->failures = atomic_load(&c->failures);
    out->device_ns = atomic_load(&c->device_ns);
}

void pool_read_device_stats(const struct pool_device *dev, struct clops_device_stats *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->tasks = atomic_load(&dev->tasks);
    out->busy_ns = atomic_load(&dev->busy_ns);
}

void pool_record_device_work(struct pool_device *dev, int64_t tasks, int64_t busy_ns)
{
    atomic_fetch_add(&dev->tasks, tasks);
    atomic_fetch_add(&dev->busy_ns, busy_ns);
}

struct split_crew *pool_split_crew(struct clops_pool *pool)
{
    os_mutex_lock(&pool->host_lock);
    if (pool->crew == NULL)
        pool->crew = split_crew_new();
    struct split_crew *crew = pool->crew;
    os_mutex_unlock(&pool->host_lock);
    return crew;
}

const struct config_op *pool_op_split(const struct clops_pool *pool, int32_t op_index)
{
    if (op_index < 0 || op_index >= registry_count())
        return NULL;
    const struct config_op *op = pool->op_counters[op_index].settings;
    return op != NULL && op->split_count >= 2 ? op : NULL;
}

double pool_op_rate(const struct clops_pool *pool, int32_t op_index, int32_t device)
{
    if (op_index < 0 || op_index >= registry_count() || device < 0 || device >= CONFIG_MAX_DEVICES)
        return 0;
    return (double)atomic_load(&pool->op_counters[op_index].rate[device]) * 1e3;
}

void pool_op_rate_observe(struct clops_pool *pool, int32_t op_index, int32_t device,
                          double flops_per_s)
{
    if (op_index < 0 || op_index >= registry_count() || device < 0 ||
        device >= CONFIG_MAX_DEVICES || !(flops_per_s > 0))
        return;
    atomic_llong *rate = &pool->op_counters[op_index].rate[device];
    const long long now = (long long)(flops_per_s / 1e3), last = atomic_load(rate);
    atomic_store(rate, last > 0 ? (last + now) / 2 : now);
}

double pool_op_split_floor(const struct clops_pool *pool, int32_t op_index, int on_buffers)
{
    if (op_index < 0 || op_index >= registry_count())
        return 0;
    return (double)atomic_load(&pool->op_counters[op_index].split_floor[on_buffers != 0]);
}

int64_t pool_programs_made(const struct clops_pool *pool)
{
    return atomic_load(&pool->programs_built) + atomic_load(&pool->programs_loaded);
}

int pool_op_split_made_again(struct clops_pool *pool, int32_t op_index, int made, double flops,
                             int64_t start_ns)
{
    if (op_index < 0 || op_index >= registry_count())
        return 0;
    struct pool_op_counters *c = &pool->op_counters[op_index];
    const long long work = made && flops >= 1 && flops < 9e18 ? (long long)flops : 0;
    const long long ended = atomic_exchange(&c->split_made_end_ns, os_monotonic_ns());
    const long long last = atomic_exchange(&c->split_made_flops, work);
    return work > 0 && last == work && ended <= start_ns;
}

int64_t pool_memory_made(struct clops_pool *pool)
{
    int64_t made = atomic_load(&pool->bridges_made) + atomic_load(&pool->host_blocks_made);
    for (int32_t d = 0; d < pool_device_count(pool); d++)
        made += pool_device_buffers_created(pool_device_at(pool, d));
    return made;
}

void pool_op_split_lost(struct clops_pool *pool, int32_t op_index, int on_buffers, double flops)
{
    if (op_index < 0 || op_index >= registry_count() || !(flops > 0))
        return;
    atomic_llong *floor = &pool->op_counters[op_index].split_floor[on_buffers != 0];
    const long long now = flops < 9e18 ? (long long)flops : (long long)9e18;
    long long last = atomic_load(floor);
    while (now > last && !atomic_compare_exchange_weak(floor, &last, now)) {
    }
}

void pool_record_call(struct clops_pool *pool, int32_t i, int32_t status, int64_t device_ns)
{
    atomic_fetch_add(&pool->calls, 1);
    if (i < 0 || i >= registry_count())
        return;
    atomic_fetch_add(&pool->op_counters[i].calls, 1);
    if (status != CLOPS_OK)
        atomic_fetch_add(&pool->op_counters[i].failures, 1);
    atomic_fetch_add(&pool->op_counters[i].device_ns, device_ns);
}
