/* host_copy.c — a copier: a few threads that take the parts of one large host copy at a time
 * beside the thread that asked for it (host_copy.h). */
#include "host_copy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

enum { MAX_HELPERS = 15 };

struct host_copier {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a copy was posted, or stop */
    pthread_cond_t done; /* the posted copy's last part finished */
    pthread_t thread[MAX_HELPERS];
    int helpers;     /* threads started */
    pid_t owner;     /* the process they run in: a fork()ed child has none of them */
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
        pthread_mutex_unlock(&c->lock);
        fn(ctx, part, parts);
        pthread_mutex_lock(&c->lock);
        if (++c->finished == c->parts)
            pthread_cond_signal(&c->done);
    }
}

static void *helper(void *arg)
{
    struct host_copier *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stop) {
        take_parts(c);
        if (!c->stop)
            pthread_cond_wait(&c->wake, &c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

struct host_copier *host_copier_new(int helpers)
{
    struct host_copier *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return NULL;
    }
    if (pthread_cond_init(&c->wake, NULL) != 0 || pthread_cond_init(&c->done, NULL) != 0) {
        /* pthread_cond_destroy of one not initialised would be undefined: both or neither. */
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    c->owner = getpid();
    if (helpers > MAX_HELPERS)
        helpers = MAX_HELPERS;
    /* A thread that does not start only makes copies slower: the copier keeps those that did. */
    while (c->helpers < helpers && pthread_create(&c->thread[c->helpers], NULL, helper, c) == 0)
        c->helpers++;
    return c;
}

void host_copier_free(struct host_copier *c)
{
    /* In a fork()ed child the helpers do not exist: joining them would wait forever, and their
     * lock and conditions may be held by the parent's threads. Left as the fork made them. */
    if (c == NULL || c->owner != getpid())
        return;
    pthread_mutex_lock(&c->lock);
    c->stop = 1;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < c->helpers; i++)
        pthread_join(c->thread[i], NULL);
    pthread_cond_destroy(&c->done);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
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
    if (c == NULL || parts <= 1 || c->owner != getpid() ||
        !atomic_compare_exchange_strong(&c->busy, &idle, 1))
        return 0;
    pthread_mutex_lock(&c->lock);
    c->fn = fn;
    c->ctx = ctx;
    c->parts = parts;
    c->next = 0;
    c->finished = 0;
    pthread_cond_broadcast(&c->wake);
    take_parts(c);
    while (c->finished < c->parts)
        pthread_cond_wait(&c->done, &c->lock);
    c->fn = NULL;
    pthread_mutex_unlock(&c->lock);
    atomic_store(&c->busy, 0);
    return 1;
}
