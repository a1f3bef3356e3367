/* concurrent_create_child.c — run by test_threads as a fresh process, so that its threads race
 * the process's first device discovery: argv[1] threads (default 8) wait at a barrier, then each
 * creates a default pool ("create") or, in "mixed", every other thread lists the devices first.
 * Prints one line per thread; exits 0 only when every thread got the same, non-empty answer. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

enum { MAX_THREADS = 64, MAX_LISTED = 16 };

static const struct clops_api *api;
static pthread_barrier_t start;
static int mixed;

struct result {
    int32_t create_status, list_status;
    int32_t pool_devices, listed;
    char first_name[128];
    char message[256];
};

static struct result results[MAX_THREADS];

static void list_devices(struct result *r)
{
    struct clops_device_info infos[MAX_LISTED];
    for (int i = 0; i < MAX_LISTED; i++)
        infos[i].struct_size = sizeof infos[i];
    r->list_status = api->devices_list(infos, MAX_LISTED, &r->listed);
    if (r->list_status != CLOPS_OK)
        snprintf(r->message, sizeof r->message, "devices_list: %s", api->last_error());
    else if (r->listed > 0)
        snprintf(r->first_name, sizeof r->first_name, "%s", infos[0].name);
}

static void create_pool(struct result *r)
{
    struct clops_pool *pool = NULL;
    r->create_status = api->pool_create_default(&pool);
    if (r->create_status != CLOPS_OK)
        snprintf(r->message, sizeof r->message, "pool_create_default: %s", api->last_error());
    r->pool_devices = api->pool_device_count(pool);
    api->pool_release(pool);
}

static void *run(void *arg)
{
    struct result *r = arg;
    int lister = mixed && (r - results) % 2 == 1;
    pthread_barrier_wait(&start);
    if (lister)
        list_devices(r);
    create_pool(r);
    if (!lister)
        list_devices(r);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    mixed = argc > 2 && strcmp(argv[2], "mixed") == 0;
    if (threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "concurrent_create_child: 1 to %d threads\n", MAX_THREADS);
        return 2;
    }
    /* A hang must fail the test, not stall it: SIGALRM ends the process. */
    alarm(240);
    api = tu_api_or_null();
    if (api == NULL) {
        fprintf(stderr, "concurrent_create_child: cannot load $CLOPS_LIBRARY: %s\n", dlerror());
        return 2;
    }
    pthread_t t[MAX_THREADS];
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, run, &results[i]) != 0) {
            fprintf(stderr, "concurrent_create_child: pthread_create failed\n");
            return 2;
        }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    int good = 1;
    for (int i = 0; i < threads; i++) {
        const struct result *r = &results[i];
        int ok = r->create_status == CLOPS_OK && r->list_status == CLOPS_OK &&
                 r->pool_devices >= 1 && r->listed >= 1 && r->listed == results[0].listed &&
                 strcmp(r->first_name, results[0].first_name) == 0;
        good &= ok;
        printf("thread %d: create %s, %d device(s) in the pool; list %s, %d device(s), first "
               "'%s'%s%s\n",
               i, api->status_name(r->create_status), (int)r->pool_devices,
               api->status_name(r->list_status), (int)r->listed, r->first_name,
               r->message[0] != '\0' ? "; " : "", r->message);
    }
    return good ? 0 : 1;
}
