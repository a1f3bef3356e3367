/* pool_internal.h — the pool's own header, for pool.c, pool_devices.c, pool_memory.c,
 * pool_programs.c and pool_launch.c only: what they share besides pool.h. The rest of the
 * library uses pool.h. */
#ifndef CLOPS_POOL_INTERNAL_H
#define CLOPS_POOL_INTERNAL_H

#include "pool.h"

/* pool_devices.c: discovers the system's devices, opens those the configuration chooses as
 * pool->devices. On failure pool->device_count counts those to close with pool_close_devices,
 * which also frees the array. */
int32_t pool_open_devices(struct clops_pool *pool);
void pool_close_devices(struct clops_pool *pool);

/* pool_memory.c: sets dev's memory limit to `percent` of what it reports and attaches it to the
 * process-wide count of bytes held on its cl_device_id. */
int32_t pool_memory_attach(struct pool_device *dev, int32_t percent);

/* pool_programs.c: releases every program the pool built. */
void pool_release_programs(struct clops_pool *pool);

#endif
