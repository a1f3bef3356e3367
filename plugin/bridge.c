/* bridge.c — host memory page-locked for every context of a pool (bridge.h). */
#include "bridge.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "host_register.h"
#include "pool_internal.h"

struct bridge_block {
    void *data;
    size_t bytes;
    struct host_registration *pin; /* one USE_HOST_PTR buffer per context */
};

static void block_free(struct bridge_block *b)
{
    if (b == NULL)
        return;
    host_registration_drop(b->pin); /* before the memory the buffers stand on */
    free(b->data);
    free(b);
}

/* A new block: page-aligned memory, rounded up to whole pages, page-locked everywhere. */
static int32_t block_make(struct clops_pool *pool, size_t bytes, const char *op,
                          struct bridge_block **out)
{
    const size_t page = 4096;
    if (bytes > SIZE_MAX - page)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: %zu bytes of host memory is too many", op,
                       bytes);
    bytes = (bytes + page - 1) / page * page;
    struct bridge_block *b = calloc(1, sizeof *b);
    void *data = NULL;
    if (b == NULL || posix_memalign(&data, page, bytes) != 0) {
        free(b);
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY,
                       "%s: out of host memory for %zu bytes between devices", op, bytes);
    }
    b->data = data;
    b->bytes = bytes;
    int32_t status = host_registration_pin(pool, data, bytes, &b->pin);
    if (status != CLOPS_OK) {
        err_prefix(op);
        block_free(b);
        return status;
    }
    atomic_fetch_add(&pool->bridges_made, 1);
    *out = b;
    return CLOPS_OK;
}

int32_t bridge_take(struct clops_pool *pool, size_t bytes, const char *op, struct bridge *out)
{
    *out = (struct bridge){0};
    struct bridge_block *found = NULL;
    pthread_mutex_lock(&pool->registered_lock);
    int best = -1;
    for (int i = 0; i < POOL_BRIDGES; i++) {
        const struct bridge_block *b = pool->bridges[i];
        if (b != NULL && b->bytes >= bytes && (best < 0 || b->bytes < pool->bridges[best]->bytes))
            best = i;
    }
    if (best >= 0) {
        found = pool->bridges[best];
        pool->bridges[best] = NULL;
    }
    pthread_mutex_unlock(&pool->registered_lock);
    if (found == NULL) {
        const int32_t status = block_make(pool, bytes, op, &found);
        if (status != CLOPS_OK)
            return status;
    }
    *out = (struct bridge){.data = found->data, .bytes = found->bytes, .block = found};
    return CLOPS_OK;
}

void bridge_give(struct clops_pool *pool, struct bridge *b)
{
    struct bridge_block *give = b->block;
    *b = (struct bridge){0};
    if (give == NULL)
        return;
    /* Kept in a free slot, else in place of the smallest kept one when it is larger. */
    pthread_mutex_lock(&pool->registered_lock);
    int slot = -1;
    for (int i = 0; i < POOL_BRIDGES; i++) {
        if (pool->bridges[i] == NULL) {
            slot = i;
            break;
        }
        if (pool->bridges[i]->bytes < give->bytes &&
            (slot < 0 || pool->bridges[i]->bytes < pool->bridges[slot]->bytes))
            slot = i;
    }
    struct bridge_block *evicted = NULL;
    if (slot >= 0) {
        evicted = pool->bridges[slot];
        pool->bridges[slot] = give;
        give = NULL;
    }
    pthread_mutex_unlock(&pool->registered_lock);
    block_free(evicted);
    block_free(give);
}

void bridge_release_all(struct clops_pool *pool)
{
    for (int i = 0; i < POOL_BRIDGES; i++) {
        block_free(pool->bridges[i]);
        pool->bridges[i] = NULL;
    }
}

int64_t bridge_made(const struct clops_pool *pool)
{
    return atomic_load(&pool->bridges_made);
}
