/* host_register.c — host memory registered with a pool (host_register.h). A registration is one
 * CL_MEM_USE_HOST_PTR buffer over the host's range in each distinct context of the pool: NVIDIA's
 * OpenCL page-locks the range for it, and a clEnqueueWriteBuffer from a pointer inside it then
 * runs as DMA from the host's memory (54 GB/s on an H200, where the same write from pageable
 * memory runs at 4-7 GB/s). The buffer is never used as a buffer: on NVIDIA it holds a device
 * copy of the range made at its first use, which later host writes do not refresh. */
#include "host_register.h"

#include "error.h"
#include "pool_internal.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

struct host_registration {
    struct host_registration *next; /* in the pool's list, while registered */
    const char *data;
    size_t bytes;
    atomic_int holds; /* the pool's list's (until unregistered) and one per staged upload */
    int32_t mem_count;
    cl_mem mem[]; /* one per distinct context of the pool */
};

static void registration_free(struct host_registration *r)
{
    for (int32_t i = 0; i < r->mem_count; i++)
        clReleaseMemObject(r->mem[i]);
    free(r);
}

void host_registration_drop(struct host_registration *r)
{
    if (r != NULL && atomic_fetch_sub(&r->holds, 1) == 1)
        registration_free(r);
}

/* 1 when device i's context is that of a device before it: registered once per context. */
static int context_seen(const struct clops_pool *pool, int32_t i)
{
    for (int32_t j = 0; j < i; j++)
        if (pool->devices[j].context == pool->devices[i].context)
            return 1;
    return 0;
}

/* The pool's registration overlapping [data, data + bytes), under registered_lock. */
static struct host_registration *overlapping(const struct clops_pool *pool, const char *data,
                                             size_t bytes)
{
    for (struct host_registration *r = pool->registered; r != NULL; r = r->next)
        if (data < r->data + r->bytes && r->data < data + bytes)
            return r;
    return NULL;
}

/* The range page-locked in every context of the pool: its buffers, made outside the lock (each
 * takes milliseconds). */
static int32_t registration_make(struct clops_pool *pool, char *data, size_t bytes,
                                 struct host_registration **out)
{
    struct host_registration *r =
        calloc(1, sizeof *r + (size_t)pool->device_count * sizeof r->mem[0]);
    if (r == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "host_register: out of host memory");
    r->data = data;
    r->bytes = bytes;
    atomic_init(&r->holds, 1);
    for (int32_t i = 0; i < pool->device_count; i++) {
        if (context_seen(pool, i))
            continue;
        cl_int rc = CL_SUCCESS;
        cl_mem m = clCreateBuffer(pool->devices[i].context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                                  bytes, data, &rc);
        if (rc != CL_SUCCESS) {
            registration_free(r);
            return err_cl(
                rc, "host_register: page-locking %llu bytes at %p for device %d (%s) failed",
                (unsigned long long)bytes, (void *)data, (int)i, pool->devices[i].info.name);
        }
        r->mem[r->mem_count++] = m;
    }
    *out = r;
    return CLOPS_OK;
}

/* The checks both entries make: a pool, flags 0, and data non-NULL. Holds the pool. */
static int32_t check_common(const struct clops_host_register_args *a, const char *entry)
{
    if (a->pool == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'pool' is NULL", entry);
    if (a->flags != 0)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'flags' = %d; expected 0", entry,
                       (int)a->flags);
    if (a->data == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'data' is NULL", entry);
    return pool_hold(a->pool, entry);
}

int32_t host_register(struct clops_host_register_args *a)
{
    if (a->bytes <= 0 || (uint64_t)a->bytes > SIZE_MAX)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "host_register: parameter 'bytes' = %lld; expected a positive size",
                       (long long)a->bytes);
    int32_t status = check_common(a, "host_register");
    if (status != CLOPS_OK)
        return status;
    struct clops_pool *pool = a->pool;
    char *data = a->data;
    const size_t bytes = (size_t)a->bytes;
    if ((uintptr_t)data > UINTPTR_MAX - bytes) {
        pool_unhold(pool);
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "host_register: parameter 'bytes' = %lld runs past the end of the address "
                       "space from 'data' = %p",
                       (long long)a->bytes, (void *)data);
    }
    struct host_registration *r = NULL;
    status = registration_make(pool, data, bytes, &r);
    if (status == CLOPS_OK) {
        os_mutex_lock(&pool->registered_lock);
        const struct host_registration *other = overlapping(pool, data, bytes);
        if (other == NULL) {
            r->next = pool->registered;
            pool->registered = r;
        } else {
            status = err_set(CLOPS_ERR_INVALID_ARGUMENT,
                             "host_register: [data, data + bytes) = [%p, +%llu) overlaps the range "
                             "registered at %p (%llu bytes); ranges of one pool may not overlap",
                             (void *)data, (unsigned long long)bytes, (const void *)other->data,
                             (unsigned long long)other->bytes);
        }
        os_mutex_unlock(&pool->registered_lock);
        if (status != CLOPS_OK)
            registration_free(r);
    }
    pool_unhold(pool);
    return status;
}

int32_t host_unregister(struct clops_host_register_args *a)
{
    int32_t status = check_common(a, "host_unregister");
    if (status != CLOPS_OK)
        return status;
    struct clops_pool *pool = a->pool;
    struct host_registration *found = NULL;
    os_mutex_lock(&pool->registered_lock);
    for (struct host_registration **at = &pool->registered; *at != NULL; at = &(*at)->next)
        if ((*at)->data == (const char *)a->data) {
            found = *at;
            *at = found->next;
            break;
        }
    os_mutex_unlock(&pool->registered_lock);
    if (found == NULL)
        status = err_set(CLOPS_ERR_NOT_FOUND,
                         "host_unregister: parameter 'data' = %p is not the start of a range "
                         "registered with this pool",
                         a->data);
    host_registration_drop(found);
    pool_unhold(pool);
    return status;
}

int32_t host_registration_pin(struct clops_pool *pool, void *data, size_t bytes,
                              struct host_registration **out)
{
    return registration_make(pool, data, bytes, out);
}

struct host_registration *host_registration_find(struct clops_pool *pool, const void *first,
                                                 size_t bytes)
{
    const char *p = first;
    struct host_registration *found = NULL;
    os_mutex_lock(&pool->registered_lock);
    for (struct host_registration *r = pool->registered; r != NULL; r = r->next)
        if (p >= r->data && bytes <= r->bytes && (size_t)(p - r->data) <= r->bytes - bytes) {
            atomic_fetch_add(&r->holds, 1);
            found = r;
            break;
        }
    os_mutex_unlock(&pool->registered_lock);
    return found;
}

void host_registration_release_all(struct clops_pool *pool)
{
    while (pool->registered != NULL) {
        struct host_registration *r = pool->registered;
        pool->registered = r->next;
        host_registration_drop(r);
    }
}
