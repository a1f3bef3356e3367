/* host_copy.c — a copier: a few threads that take the parts of one large host copy at a time
 * beside the thread that asked for it (host_copy.h). */
#include "host_copy.h"

#include "platform.h"
#include <stdatomic.h>
#include <stdlib.h>

enum { MAX_HELPERS = 15 };

struct host_copier {
    os_mutex lock;
    os_cond wake; /* a copy was posted, or stop */
    os_cond done; /* the posted copy's last part finished */
    os_thread thread[MAX_HELPERS];
    int helpers;     /* threads started */
    long owner;      /* the process they run in: a fork()ed child has none of them */
    atomic_int busy; /* a caller holds the copier (host_copier_run) */
    /* The posted copy, under `lock`: fn NULL when none. */
    host_copy_part_fn fn;
    void *ctx;
    int parts, next, finished;
    int stop;
};

size_t host_copy_min_bytes = HOST_COPY_MIN_BYTES;
int host_copy_helpers = 0;

void host_copy_share(size_t count, int part, int parts, size_t *begin, size_t *end)
{
    /* count * parts fits: counts are bytes or rows of host memory, parts at most 16. */
    *begin = count * (size_t)part / (size_t)parts;
    *end = count * (size_t)(part + 1) / (size_t)parts;
}

/* Runs parts of the posted copy until none is left to take; called and returns with `lock`
 * held. */
static void take_parts(struct host_copier *c)
{
    while (c->fn != NULL && c->next < c->parts) {
        const int part = c->next++;
        host_copy_part_fn fn = c->fn;
        void *ctx = c->ctx;
        const int parts = c->parts;
        os_mutex_unlock(&c->lock);
        fn(ctx, part, parts);
        os_mutex_lock(&c->lock);
        if (++c->finished == c->parts)
            os_cond_signal(&c->done);
    }
}

static void *helper(void *arg)
{
    struct host_copier *c = arg;
    os_mutex_lock(&c->lock);
    while (!c->stop) {
        take_parts(c);
        if (!c->stop)
            os_cond_wait(&c->wake, &c->lock);
    }
    os_mutex_unlock(&c->lock);
    return NULL;
}

struct host_copier *host_copier_new(int helpers)
{
    struct host_copier *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    if (os_mutex_init(&c->lock) != 0) {
        free(c);
        return NULL;
    }
    if (os_cond_init(&c->wake) != 0 || os_cond_init(&c->done) != 0) {
        /* os_cond_destroy of one not initialised would be undefined: both or neither. */
        os_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    c->owner = os_process_id();
    if (helpers > MAX_HELPERS)
        helpers = MAX_HELPERS;
    /* A thread that does not start only makes copies slower: the copier keeps those that did. */
    while (c->helpers < helpers && os_thread_start(&c->thread[c->helpers], helper, c) == 0)
        c->helpers++;
    return c;
}

void host_copier_free(struct host_copier *c)
{
    /* In a fork()ed child the helpers do not exist: joining them would wait forever, and their
     * lock and conditions may be held by the parent's threads. Left as the fork made them. */
    if (c == NULL || c->owner != os_process_id())
        return;
    os_mutex_lock(&c->lock);
    c->stop = 1;
    os_cond_broadcast(&c->wake);
    os_mutex_unlock(&c->lock);
    for (int i = 0; i < c->helpers; i++)
        os_thread_join(c->thread[i]);
    os_cond_destroy(&c->done);
    os_cond_destroy(&c->wake);
    os_mutex_destroy(&c->lock);
    free(c);
}

int host_copier_parts(const struct host_copier *c, size_t bytes)
{
    if (c == NULL || c->helpers == 0 || bytes < host_copy_min_bytes)
        return 1;
    const size_t most = bytes / (host_copy_min_bytes / 2 > 0 ? host_copy_min_bytes / 2 : 1);
    return most < (size_t)c->helpers + 1 ? (int)most : c->helpers + 1;
}

void host_copier_run(struct host_copier *c, host_copy_part_fn fn, void *ctx, int parts)
{
    if (!host_copier_try_run(c, fn, ctx, parts))
        for (int p = 0; p < parts; p++)
            fn(ctx, p, parts);
}

int host_copier_try_run(struct host_copier *c, host_copy_part_fn fn, void *ctx, int parts)
{
    int idle = 0;
    if (c == NULL || parts <= 1 || c->owner != os_process_id() ||
        !atomic_compare_exchange_strong(&c->busy, &idle, 1))
        return 0;
    os_mutex_lock(&c->lock);
    c->fn = fn;
    c->ctx = ctx;
    c->parts = parts;
    c->next = 0;
    c->finished = 0;
    os_cond_broadcast(&c->wake);
    take_parts(c);
    while (c->finished < c->parts)
        os_cond_wait(&c->done, &c->lock);
    c->fn = NULL;
    os_mutex_unlock(&c->lock);
    atomic_store(&c->busy, 0);
    return 1;
}
