/* pipeline_progress.c — what `clops run` shows while a step runs. Steps run synchronously
 * through invoke(), and the API reports no progress within a call (Mandelbrot's per-device tile
 * counts are recorded when the call ends), so on a terminal a timer thread redraws the elapsed
 * time: a bar against the best earlier run of the step when it is repeated, else a spinner. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pipeline_progress.h"
#include "util.h"

enum { REDRAW_MS = 200, BAR_WIDTH = 20 };

struct progress {
    int tty;
    int index, count;
    const char *op;
    double start_ms;
    pthread_mutex_t lock; /* guards the members below and the terminal line */
    pthread_cond_t wake;
    int stop;
    int run, runs;
    double run_start_ms, best_ms;
    int ticks;
    pthread_t thread;
    int threaded;
};

static void draw(struct progress *p)
{
    double now = host_now_ms(), elapsed = now - p->run_start_ms;
    char bar[BAR_WIDTH + 3];
    if (isfinite(p->best_ms) && p->best_ms > 0.0) {
        int filled = (int)(BAR_WIDTH * fmin(elapsed / p->best_ms, 1.0));
        bar[0] = '[';
        for (int i = 0; i < BAR_WIDTH; i++)
            bar[1 + i] = i < filled ? '#' : '.';
        bar[BAR_WIDTH + 1] = ']';
        bar[BAR_WIDTH + 2] = '\0';
    } else {
        bar[0] = "|/-\\"[p->ticks % 4];
        bar[1] = '\0';
    }
    fprintf(stderr, "\r\033[Kstep %d/%d %s  run %d/%d %s %.1f s", p->index + 1, p->count, p->op,
            p->run + 1, p->runs, bar, (now - p->start_ms) / 1000.0);
    fflush(stderr);
    p->ticks++;
}

static void *redraw_loop(void *arg)
{
    struct progress *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        draw(p);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += REDRAW_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&p->wake, &p->lock, &until);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

struct progress *progress_start(int tty, int index, int count, const char *op)
{
    struct progress *p = host_xcalloc(1, sizeof *p);
    p->tty = tty;
    p->index = index;
    p->count = count;
    p->op = op;
    p->start_ms = p->run_start_ms = host_now_ms();
    p->best_ms = INFINITY;
    p->runs = 1;
    if (tty && pthread_mutex_init(&p->lock, NULL) == 0) {
        if (pthread_cond_init(&p->wake, NULL) != 0)
            pthread_mutex_destroy(&p->lock);
        else if (pthread_create(&p->thread, NULL, redraw_loop, p) == 0)
            p->threaded = 1;
        else {
            pthread_cond_destroy(&p->wake);
            pthread_mutex_destroy(&p->lock);
        }
    }
    return p;
}

void progress_run(struct progress *p, int run, int runs, double best_ms)
{
    if (p == NULL)
        return;
    if (p->threaded)
        pthread_mutex_lock(&p->lock);
    p->run = run;
    p->runs = runs;
    p->best_ms = best_ms;
    p->run_start_ms = host_now_ms();
    if (p->threaded)
        pthread_mutex_unlock(&p->lock);
}

void progress_finish(struct progress *p, double total_ms, int ok)
{
    if (p == NULL)
        return;
    if (p->threaded) {
        pthread_mutex_lock(&p->lock);
        p->stop = 1;
        pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
    }
    fprintf(stderr, "%sstep %d/%d %s ... %s in %.1f ms\n", p->tty ? "\r\033[K" : "", p->index + 1,
            p->count, p->op, ok ? "done" : "FAILED", total_ms);
    free(p);
}
