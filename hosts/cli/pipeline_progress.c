/* pipeline_progress.c — what `clops run` shows while it runs. The model counts calls: what each
 * is expected to take comes from the calls measured before it (the same step in earlier runs,
 * scaled by its work; the work's rate; any call), the host's checks after a step counting as
 * one call; within a call, the fraction the library reports (LU's panels, a large GEMM's
 * blocks, Mandelbrot's tiles) moves the bar. On a terminal a timer thread redraws one bar over
 * the whole work with the time the rest should take. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipeline_progress.h"
#include "util.h"

/* ---- the model ------------------------------------------------------------------------------ */

void progress_model_add_run(struct progress_model *m)
{
    m->run_first = realloc(m->run_first, (size_t)(m->run_count + 2) * sizeof *m->run_first);
    if (m->run_first == NULL) {
        fprintf(stderr, "%s: out of memory\n", host_program_name);
        exit(1);
    }
    m->run_first[m->run_count] = m->count;
    m->run_first[++m->run_count] = m->count;
}

void progress_model_add(struct progress_model *m, int slot, const char *unit, double work,
                        int calls)
{
    if (m->count == m->capacity) {
        int64_t capacity = m->capacity > 0 ? 2 * m->capacity : 16;
        struct progress_item *items = host_xcalloc((size_t)capacity, sizeof *items);
        if (m->count > 0)
            memcpy(items, m->items, (size_t)m->count * sizeof *items);
        free(m->items);
        m->items = items;
        m->capacity = capacity;
    }
    if (slot >= m->slots) {
        int64_t *last = host_xmalloc((size_t)(slot + 1) * sizeof *last);
        for (int i = 0; i <= slot; i++)
            last[i] = i < m->slots ? m->last_of_slot[i] : -1;
        free(m->last_of_slot);
        m->last_of_slot = last;
        m->slots = slot + 1;
    }
    m->items[m->count++] =
        (struct progress_item){.slot = slot, .unit = unit, .work = work, .calls = calls};
    if (m->run_count > 0)
        m->run_first[m->run_count] = m->count;
}

void progress_model_free(struct progress_model *m)
{
    free(m->items);
    free(m->run_first);
    free(m->last_of_slot);
    memset(m, 0, sizeof *m);
}

int64_t progress_model_item(const struct progress_model *m, int64_t run, int slot)
{
    for (int64_t j = m->run_first[run]; j < m->run_first[run + 1]; j++)
        if (m->items[j].slot == slot)
            return j;
    return -1;
}

static struct unit_rate *rate_of(struct progress_model *m, const char *unit)
{
    for (int i = 0; i < m->rate_count; i++)
        if (strcmp(m->rates[i].unit, unit) == 0)
            return &m->rates[i];
    if (m->rate_count == (int)(sizeof m->rates / sizeof m->rates[0]))
        return NULL;
    m->rates[m->rate_count] = (struct unit_rate){.unit = unit};
    return &m->rates[m->rate_count++];
}

void progress_model_call_done(struct progress_model *m, int64_t item, double ms)
{
    struct progress_item *it = &m->items[item];
    it->calls_done++;
    it->done_ms += ms;
    m->done_ms += ms;
    m->calls_done++;
    m->last_of_slot[it->slot] = item;
    struct unit_rate *rate = it->unit != NULL && it->work > 0.0 ? rate_of(m, it->unit) : NULL;
    if (rate != NULL) {
        rate->ms += ms;
        rate->work += it->work;
    }
}

static int same_unit(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* The expected time of one call of item `j`, once some call has been measured. */
static double call_estimate(const struct progress_model *m, int64_t j)
{
    const struct progress_item *it = &m->items[j];
    if (it->calls_done > 0)
        return it->done_ms / it->calls_done;
    int64_t k = m->last_of_slot[it->slot];
    if (k >= 0) {
        const struct progress_item *before = &m->items[k];
        double per_call = before->done_ms / before->calls_done;
        if (it->work > 0.0 && before->work > 0.0 && same_unit(it->unit, before->unit))
            return per_call * it->work / before->work;
        return per_call;
    }
    for (int i = 0; it->work > 0.0 && i < m->rate_count; i++)
        if (same_unit(it->unit, m->rates[i].unit) && m->rates[i].work > 0.0)
            return it->work * m->rates[i].ms / m->rates[i].work;
    return m->done_ms / (double)m->calls_done;
}

/* What the running call of `item` has left, expected to take `per_call` in all: the rest of
 * that, or, with the fraction the library reports, that fraction of the expected time; of a
 * call with no measured call of its own step yet, the call's own pace so far. */
static double running_call_left(const struct progress_item *it, double per_call, double running_ms,
                                double call_fraction)
{
    if (call_fraction <= 0.0 || call_fraction > 1.0)
        return fmax(per_call - running_ms, 0.0);
    if (it->calls_done > 0)
        return per_call * (1.0 - call_fraction);
    return running_ms * (1.0 - call_fraction) / call_fraction;
}

struct progress_estimate progress_model_estimate(const struct progress_model *m, int64_t item,
                                                 double running_ms, double call_fraction)
{
    struct progress_estimate e = {.fraction = 1.0, .eta_ms = 0.0};
    if (m->calls_done == 0) {
        /* Nothing measured: every call weighs the same, and the rest is not known. */
        int64_t total = 0, done = 0;
        for (int64_t j = 0; j < m->count; j++) {
            total += m->items[j].calls;
            done += j < item ? m->items[j].calls : j == item ? m->items[j].calls_done : 0;
        }
        double within = item < m->count ? fmin(fmax(call_fraction, 0.0), 1.0) : 0.0;
        e.fraction = total > 0 ? ((double)done + within) / (double)total : 1.0;
        e.eta_ms = -1.0;
        return e;
    }
    double remaining = 0.0;
    for (int64_t j = item; j < m->count; j++) {
        int left = m->items[j].calls - m->items[j].calls_done;
        if (left <= 0)
            continue;
        double per_call = call_estimate(m, j);
        if (j == item)
            remaining += running_call_left(&m->items[j], per_call, running_ms, call_fraction) +
                         (left - 1) * per_call;
        else
            remaining += left * per_call;
    }
    double done = m->done_ms + (item < m->count ? running_ms : 0.0);
    e.fraction = done + remaining > 0.0 ? done / (done + remaining) : 1.0;
    e.eta_ms = remaining;
    return e;
}

void progress_format_duration(double ms, char *out, int size)
{
    double s = ms / 1000.0;
    if (ms < 1000.0)
        snprintf(out, (size_t)size, "%.0f ms", ms);
    else if (s < 60.0)
        snprintf(out, (size_t)size, "%.1f s", s);
    else if (s < 3600.0)
        snprintf(out, (size_t)size, "%d min %02d s", (int)(s / 60.0), (int)fmod(s, 60.0));
    else
        snprintf(out, (size_t)size, "%d h %02d min", (int)(s / 3600.0), (int)fmod(s / 60.0, 60.0));
}

/* ---- the display ---------------------------------------------------------------------------- */

enum { REDRAW_MS = 200, BAR_WIDTH = 24 };

struct progress {
    int live; /* the line is drawn (a terminal, or --progress) */
    struct progress_model *model;
    double start_ms;
    pthread_mutex_t lock; /* guards the members below, the model and the terminal line */
    pthread_cond_t wake;
    int stop;
    int active;        /* an item is running: the line is drawn */
    int64_t run, item; /* item -1: not in the model (nothing drawn) */
    char label[160];
    int call, calls;
    double call_start_ms;
    double call_fraction; /* of the running call, as the library reports it; < 0: not known */
    pthread_t thread;
    int threaded;
};

static void draw(struct progress *p)
{
    double now = host_now_ms();
    struct progress_estimate e =
        progress_model_estimate(p->model, p->item, now - p->call_start_ms, p->call_fraction);
    int filled = (int)(BAR_WIDTH * fmin(fmax(e.fraction, 0.0), 1.0));
    char bar[BAR_WIDTH + 1], where[64] = "", calls[48] = "", elapsed[32], eta[48] = "";
    for (int i = 0; i < BAR_WIDTH; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    if (p->model->run_count > 1)
        snprintf(where, sizeof where, "run %lld/%lld  ", (long long)p->run + 1,
                 (long long)p->model->run_count);
    if (p->calls > 1)
        snprintf(calls, sizeof calls, "  call %d/%d", p->call + 1, p->calls);
    progress_format_duration(now - p->start_ms, elapsed, sizeof elapsed);
    if (e.eta_ms >= 0.0) {
        char left[32];
        progress_format_duration(e.eta_ms, left, sizeof left);
        snprintf(eta, sizeof eta, "  ETA %s", left);
    }
    fprintf(stderr, "\r\033[K%s%s%s  [%s] %3d%%  %s%s", where, p->label, calls, bar,
            (int)(100.0 * e.fraction), elapsed, eta);
    fflush(stderr);
}

static void *redraw_loop(void *arg)
{
    struct progress *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        if (p->active && p->item >= 0)
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

struct progress *progress_start(int live, struct progress_model *model)
{
    struct progress *p = host_xcalloc(1, sizeof *p);
    p->live = live;
    p->model = model;
    p->start_ms = p->call_start_ms = host_now_ms();
    p->call_fraction = -1.0;
    p->calls = 1;
    if (live && pthread_mutex_init(&p->lock, NULL) == 0) {
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

static void lock(struct progress *p)
{
    if (p->threaded)
        pthread_mutex_lock(&p->lock);
}

static void unlock(struct progress *p)
{
    if (p->threaded)
        pthread_mutex_unlock(&p->lock);
}

void progress_begin(struct progress *p, int64_t run, int slot, const char *label)
{
    if (p == NULL)
        return;
    lock(p);
    p->run = run;
    p->item = progress_model_item(p->model, run, slot);
    snprintf(p->label, sizeof p->label, "%s", label);
    p->call = 0;
    p->calls = 1;
    p->call_start_ms = host_now_ms();
    p->call_fraction = -1.0;
    p->active = 1;
    unlock(p);
}

void progress_call_begin(struct progress *p, int call, int calls)
{
    if (p == NULL)
        return;
    lock(p);
    p->call = call;
    p->calls = calls;
    p->call_start_ms = host_now_ms();
    p->call_fraction = -1.0;
    unlock(p);
}

void progress_call_fraction(struct progress *p, double fraction)
{
    if (p == NULL)
        return;
    lock(p);
    p->call_fraction = fraction;
    unlock(p);
}

void progress_call_end(struct progress *p, double ms)
{
    if (p == NULL)
        return;
    lock(p);
    if (p->item >= 0)
        progress_model_call_done(p->model, p->item, ms);
    p->call_start_ms = host_now_ms();
    p->call_fraction = -1.0;
    unlock(p);
}

void progress_end(struct progress *p, const char *line)
{
    if (p == NULL)
        return;
    lock(p);
    p->active = 0;
    if (p->live)
        fputs("\r\033[K", stderr);
    if (line != NULL)
        fprintf(stderr, "%s\n", line);
    fflush(stderr);
    unlock(p);
}

void progress_finish(struct progress *p)
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
    free(p);
}
