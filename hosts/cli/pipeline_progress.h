/* pipeline_progress.h — how far `clops run` is through all its runs, and the progress shown on
 * stderr while it runs (pipeline_progress.c). */
#ifndef CLOPS_CLI_PIPELINE_PROGRESS_H
#define CLOPS_CLI_PIPELINE_PROGRESS_H

#include <stdint.h>

/* ---- The model: every call of every step of every run, in the order they run ---------------- */

/* One step of one run, or the host's checks after one (counted as one call). */
struct progress_item {
    int slot;         /* which it is in its run: the step's index, or its checks' (the caller's
                         numbering); a slot's items in earlier runs predict its time */
    const char *unit; /* its work's unit (step_work: "GFLOP/s", ...; static), NULL when unknown */
    double work;      /* what one call does, in `unit`; 0 when unknown */
    int calls;        /* its repeat count */
    int calls_done;   /* calls measured */
    double done_ms;   /* their time, compilation excluded */
};

/* A call's expected time is, in this order of preference: the mean of the item's own calls
 * done; the last run's time of the same slot, scaled by the work (a sweep over sizes); the
 * rate measured for the work's unit on other steps; the mean of every call measured. Before
 * the first measurement nothing is known, and the fraction counts calls. */
struct progress_model {
    struct progress_item *items;
    int64_t count, capacity;
    int64_t *run_first; /* run r's items are run_first[r] .. run_first[r + 1] - 1 */
    int64_t run_count;
    /* What the calls measured so far give, kept as they come (progress_model_call_done). */
    double done_ms;        /* every measured call's time */
    int64_t calls_done;    /* how many */
    int64_t *last_of_slot; /* per slot: the last item of that slot with a measured call */
    int slots;
    struct unit_rate {
        const char *unit;
        double ms, work; /* measured time and work of the unit's calls */
    } rates[8];
    int rate_count;
};

/* The next run starts; its items follow with progress_model_add, in the order they run. */
void progress_model_add_run(struct progress_model *m);
void progress_model_add(struct progress_model *m, int slot, const char *unit, double work,
                        int calls);
void progress_model_free(struct progress_model *m);
/* The item of slot `slot` in run `run`, or -1. */
int64_t progress_model_item(const struct progress_model *m, int64_t run, int slot);
/* A call of `item` took `ms`, compilation excluded. */
void progress_model_call_done(struct progress_model *m, int64_t item, double ms);

struct progress_estimate {
    double fraction; /* of the whole work done, 0 to 1 */
    double eta_ms;   /* the time the rest should take; < 0: not known yet */
};
/* Where the runs are when every item before `item` is over (measured, or skipped when a run
 * stopped early), `item` has had its calls_done calls and one more has run for `running_ms`,
 * `call_fraction` of it done as the library reports it (event_query's progress; < 0: not
 * known); `item` = m->count: all done. */
struct progress_estimate progress_model_estimate(const struct progress_model *m, int64_t item,
                                                 double running_ms, double call_fraction);

/* ---- The display ------------------------------------------------------------------------------
 */

/* When `live` (stderr is a terminal, or --progress), a line redrawn about 5 times a second by a
 * timer thread while an item runs: "run 2/3  step 1/4 gemm  call 2/3  [######......] 41%  3.2 s
 * ETA 4.6 s", with one bar over the whole work of `model` (which the display reads and updates;
 * it must outlive it), moving within a call as the library reports the call's progress. Lines
 * that stay (a step's outcome) are printed over it, live or not. */
struct progress;
struct progress *progress_start(int live, struct progress_model *model);
/* Item `slot` of run `run` starts; `label` says what runs ("step 1/4 gemm"; copied). */
void progress_begin(struct progress *p, int64_t run, int slot, const char *label);
/* Call `call` (from 0) of the item's `calls` starts. */
void progress_call_begin(struct progress *p, int call, int calls);
/* The running call is `fraction` (0 to 1) done, as the library reports it. */
void progress_call_fraction(struct progress *p, double fraction);
/* That call succeeded in `ms`, compilation excluded. */
void progress_call_end(struct progress *p, double ms);
/* The item is over: the live line goes, and `line` (NULL: none) is printed to stay. */
void progress_end(struct progress *p, const char *line);
/* Stops the display and frees `p` (NULL is a no-op). */
void progress_finish(struct progress *p);

/* "850 ms", "12.3 s", "4 min 05 s", "2 h 03 min". */
void progress_format_duration(double ms, char *out, int size);

#endif
