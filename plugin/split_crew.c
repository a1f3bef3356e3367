/* split_crew.c — the pool's threads for split workers (split_crew.h). */
#include "split_crew.h"

#include "platform.h"
#include <stdlib.h>

/* The most threads a crew starts: what one run of the splitter can use beside its caller. */
enum { CREW_THREADS_MAX = 127 };

/* One worker handed to the crew: queued, taken by a thread (or the caller), done. */
enum { TASK_QUEUED, TASK_TAKEN, TASK_DONE };
struct task {
    void (*fn)(void *);
    void *arg;
    int state;
    struct task *next; /* in the crew's queue while queued */
};

struct split_crew {
    os_mutex lock;
    os_cond work; /* a task was queued, or the crew stops */
    os_cond done; /* a task is done */
    struct task *head, *tail;
    int stop;
    long owner;            /* the process whose threads these are */
    int32_t threads, idle; /* idle: threads not running a task */
    os_thread thread[CREW_THREADS_MAX];
};

/* Takes the queue's first task; under the lock. */
static struct task *pop(struct split_crew *c)
{
    struct task *t = c->head;
    if (t != NULL) {
        c->head = t->next;
        if (c->head == NULL)
            c->tail = NULL;
        t->state = TASK_TAKEN;
    }
    return t;
}

static void *crew_thread(void *arg)
{
    struct split_crew *c = arg;
    os_mutex_lock(&c->lock);
    while (!c->stop) {
        struct task *t = pop(c);
        if (t == NULL) {
            os_cond_wait(&c->work, &c->lock);
            continue;
        }
        c->idle--;
        os_mutex_unlock(&c->lock);
        t->fn(t->arg);
        os_mutex_lock(&c->lock);
        t->state = TASK_DONE;
        c->idle++;
        os_cond_broadcast(&c->done);
    }
    os_mutex_unlock(&c->lock);
    return NULL;
}

struct split_crew *split_crew_new(void)
{
    struct split_crew *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    if (os_mutex_init(&c->lock) != 0) {
        free(c);
        return NULL;
    }
    if (os_cond_init(&c->work) != 0) {
        os_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    if (os_cond_init(&c->done) != 0) {
        os_cond_destroy(&c->work);
        os_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    c->owner = os_process_id();
    return c;
}

void split_crew_free(struct split_crew *c)
{
    if (c == NULL)
        return;
    /* In a fork()ed child the threads do not exist, and the lock may be held by the parent's. */
    if (c->owner != os_process_id()) {
        free(c);
        return;
    }
    os_mutex_lock(&c->lock);
    c->stop = 1;
    os_cond_broadcast(&c->work);
    os_mutex_unlock(&c->lock);
    for (int32_t i = 0; i < c->threads; i++)
        os_thread_join(c->thread[i]);
    os_cond_destroy(&c->done);
    os_cond_destroy(&c->work);
    os_mutex_destroy(&c->lock);
    free(c);
}

/* Queues `t`, starting a thread when fewer are idle than tasks wait; under the lock. A thread
 * counts as idle from its start, not from when it first runs: one the system had not run yet
 * when the run before ended (its caller ran its task) was not counted, and the next run
 * started another beside it (test_split_crew saw 7 threads for 5 workers under load). */
static void queue_task(struct split_crew *c, struct task *t, int32_t waiting)
{
    t->state = TASK_QUEUED;
    t->next = NULL;
    if (c->tail != NULL)
        c->tail->next = t;
    else
        c->head = t;
    c->tail = t;
    if (c->idle < waiting && c->threads < CREW_THREADS_MAX &&
        os_thread_start(&c->thread[c->threads], crew_thread, c) == 0) {
        c->threads++;
        c->idle++;
    }
    os_cond_signal(&c->work);
}

/* Takes `t` out of the queue if no thread took it yet; under the lock. 1 when it did. */
static int unqueue(struct split_crew *c, struct task *t)
{
    if (t->state != TASK_QUEUED)
        return 0;
    struct task **at = &c->head, *prev = NULL;
    while (*at != t) {
        prev = *at;
        at = &(*at)->next;
    }
    *at = t->next;
    if (c->tail == t)
        c->tail = prev;
    t->state = TASK_TAKEN;
    return 1;
}

void split_crew_run(struct split_crew *c, void (*fn)(void *), void *const *args, int32_t count)
{
    if (count <= 0)
        return;
    struct task *tasks = count > 1 ? calloc((size_t)count, sizeof *tasks) : NULL;
    if (c == NULL || tasks == NULL || c->owner != os_process_id()) {
        for (int32_t i = 0; i < count; i++)
            fn(args[i]);
        free(tasks);
        return;
    }
    os_mutex_lock(&c->lock);
    for (int32_t i = 1; i < count; i++) {
        tasks[i].fn = fn;
        tasks[i].arg = args[i];
        queue_task(c, &tasks[i], i);
    }
    os_mutex_unlock(&c->lock);
    fn(args[0]);
    os_mutex_lock(&c->lock);
    for (int32_t i = 1; i < count; i++) {
        if (unqueue(c, &tasks[i])) {
            os_mutex_unlock(&c->lock);
            fn(args[i]);
            os_mutex_lock(&c->lock);
            tasks[i].state = TASK_DONE;
        }
        while (tasks[i].state != TASK_DONE)
            os_cond_wait(&c->done, &c->lock);
    }
    os_mutex_unlock(&c->lock);
    free(tasks);
}

int32_t split_crew_threads(const struct split_crew *c)
{
    if (c == NULL)
        return 0;
    os_mutex_lock((os_mutex *)&c->lock);
    const int32_t n = c->threads;
    os_mutex_unlock((os_mutex *)&c->lock);
    return n;
}
