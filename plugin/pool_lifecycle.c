/* pool_lifecycle.c — creating a pool (its devices, its program cache, its counters) and
 * releasing it with everything it holds. */
#include <stdlib.h>

#include "pool_internal.h"
#include "registry.h"

int32_t pool_create(const struct pool_config *cfg, struct clops_pool **out)
{
    *out = NULL;
    struct clops_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
    pool->cfg = *cfg;
    if (pthread_mutex_init(&pool->programs_lock, NULL) != 0) {
        free(pool);
        return err_set(CLOPS_ERR_INTERNAL, "pool: pthread_mutex_init failed");
    }
    if (pthread_mutex_init(&pool->host_lock, NULL) != 0) {
        pthread_mutex_destroy(&pool->programs_lock);
        free(pool);
        return err_set(CLOPS_ERR_INTERNAL, "pool: pthread_mutex_init failed");
    }
    if (pthread_mutex_init(&pool->kernels_lock, NULL) != 0) {
        pthread_mutex_destroy(&pool->host_lock);
        pthread_mutex_destroy(&pool->programs_lock);
        free(pool);
        return err_set(CLOPS_ERR_INTERNAL, "pool: pthread_mutex_init failed");
    }
    pool->op_counters = calloc((size_t)registry_count(), sizeof *pool->op_counters);
    int32_t status = pool->op_counters == NULL
                         ? err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "pool: out of host memory")
                         : pool_open_devices(pool);
    if (status != CLOPS_OK) {
        pool_release(pool);
        return status;
    }
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

void pool_release(struct clops_pool *pool)
{
    if (pool == NULL)
        return;
    pool_host_release_all(pool);
    pool_release_programs(pool);
    pool_close_devices(pool);
    free(pool->op_counters);
    pthread_mutex_destroy(&pool->kernels_lock);
    pthread_mutex_destroy(&pool->host_lock);
    pthread_mutex_destroy(&pool->programs_lock);
    free(pool);
}
