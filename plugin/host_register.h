/* host_register.h — host memory a pool's host registered (ABI 1.4's host_register and
 * host_unregister): page-locked for each of the pool's OpenCL contexts, so that an upload from
 * inside it is one DMA from the host's memory instead of a copy into a staging block and a DMA
 * from there (tensor_stage.c). */
#ifndef CLOPS_HOST_REGISTER_H
#define CLOPS_HOST_REGISTER_H

#include "clops.h"

#include <stddef.h>

struct host_registration;

/* The table's host_register and host_unregister, `args` non-NULL and of ABI 1.4's size. */
int32_t host_register(struct clops_host_register_args *args);
int32_t host_unregister(struct clops_host_register_args *args);

/* The registration of `pool` that holds [first, first + bytes) whole, held for the caller
 * (it stays page-locked until host_registration_drop, even when the host unregisters it
 * meanwhile), or NULL. */
struct host_registration *host_registration_find(struct clops_pool *pool, const void *first,
                                                 size_t bytes);
void host_registration_drop(struct host_registration *r);
/* [data, data + bytes) page-locked in every context of `pool`, in no list of the pool: clops's
 * own memory (bridge.c), held until host_registration_drop. */
int32_t host_registration_pin(struct clops_pool *pool, void *data, size_t bytes,
                              struct host_registration **out);

/* pool_free: lets go of the registrations the host left (the calls holding them are over). */
void host_registration_release_all(struct clops_pool *pool);

#endif
