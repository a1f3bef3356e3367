/* pool_lifecycle.c — creating a pool (its devices, its program cache, its counters) and
 * releasing it with everything it holds. */
#include <stdlib.h>

#include "bridge.h"
#include "host_register.h"
#include "pool_internal.h"
#include "registry.h"
#include "split_crew.h"

static int32_t open_configured_devices(struct clops_pool *pool, const void *ctx)
{
    (void)ctx;
    return pool_open_devices(pool);
}

int32_t pool_create(const struct pool_config *cfg, struct clops_pool **out)
{
    return pool_create_with(cfg, open_configured_devices, NULL, out);
}

int32_t pool_create_with(const struct pool_config *cfg,
                         int32_t (*open)(struct clops_pool *pool, const void *ctx), const void *ctx,
                         struct clops_pool **out)
{
    *out = NULL;
    struct clops_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
    atomic_init(&pool->holds, 1); /* the host's, until pool_release */
    atomic_init(&pool->released, 0);
    pool->cfg = *cfg;
    if (os_mutex_init(&pool->programs_lock) != 0) {
        free(pool);
        return err_set(CLOPS_ERR_INTERNAL, "pool: cannot make a lock (mutex init failed)");
    }
    if (os_mutex_init(&pool->host_lock) != 0) {
        os_mutex_destroy(&pool->programs_lock);
        free(pool);
        return err_set(CLOPS_ERR_INTERNAL, "pool: cannot make a lock (mutex init failed)");
    }
    if (os_mutex_init(&pool->registered_lock) != 0) {
        os_mutex_destroy(&pool->host_lock);
        os_mutex_destroy(&pool->programs_lock);
        free(pool);
        return err_set(CLOPS_ERR_INTERNAL, "pool: cannot make a lock (mutex init failed)");
    }
    if (os_mutex_init(&pool->kernels_lock) != 0) {
        os_mutex_destroy(&pool->registered_lock);
        os_mutex_destroy(&pool->host_lock);
        os_mutex_destroy(&pool->programs_lock);
        free(pool);
        return err_set(CLOPS_ERR_INTERNAL, "pool: cannot make a lock (mutex init failed)");
    }
    pool->op_counters = calloc((size_t)registry_count(), sizeof *pool->op_counters);
    int32_t status = pool->op_counters == NULL
                         ? err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory")
                         : open(pool, ctx);
    if (status != CLOPS_OK) {
        pool_release(pool);
        return status;
    }
    for (int32_t i = 0; i < pool->device_count; i++)
        pool->devices[i].owner = pool;
    /* Calls find their operator's settings by the descriptor's index from here on. */
    for (int32_t i = 0; i < registry_count(); i++)
        pool->op_counters[i].settings = config_find_op(&pool->cfg, registry_at(i)->name);
    cache_init(&pool->cache, cfg->cache_enabled, cfg->cache_dir);
    for (int32_t i = 0; i < pool->device_count; i++)
        log_msg(CLOPS_LOG_INFO, "pool: device %d: %s (%s)", (int)i, pool->devices[i].info.name,
                pool->devices[i].info.platform);
    *out = pool;
    return CLOPS_OK;
}

/* Frees the pool and everything it holds: once the host released it and the last call or
 * buffer holding it let go. */
static void pool_free(struct clops_pool *pool)
{
    split_crew_free(pool->crew); /* no split runs: the pool is no longer held */
    pool->crew = NULL;
    pool_host_release_all(pool);
    host_registration_release_all(pool);
    bridge_release_all(pool);
    pool_release_programs(pool);
    pool_close_devices(pool);
    free(pool->op_counters);
    os_mutex_destroy(&pool->kernels_lock);
    os_mutex_destroy(&pool->registered_lock);
    os_mutex_destroy(&pool->host_lock);
    os_mutex_destroy(&pool->programs_lock);
    free(pool);
    log_msg(CLOPS_LOG_DEBUG, "pool: released and no longer held: freed");
}

void pool_release(struct clops_pool *pool)
{
    if (pool != NULL && atomic_exchange(&pool->released, 1) == 0)
        pool_unhold(pool);
}

int32_t pool_hold(const struct clops_pool *pool, const char *what)
{
    /* The holds are the pool's bookkeeping, not its state: const pools are held too. */
    struct clops_pool *p = (struct clops_pool *)pool;
    atomic_fetch_add(&p->holds, 1);
    if (!atomic_load(&p->released))
        return CLOPS_OK;
    pool_unhold(p);
    return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                   "%s: parameter 'pool' was released (pool_release) before this call", what);
}

void pool_unhold(const struct clops_pool *pool)
{
    struct clops_pool *p = (struct clops_pool *)pool;
    if (atomic_fetch_sub(&p->holds, 1) == 1)
        pool_free(p);
}
