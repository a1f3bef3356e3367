/* pipeline_run.h — what the files that run a pipeline share (internal to `clops run`): the
 * state of one run and of the pool kept between runs, and the functions that cross files:
 * pipeline_run.c runs the sweep, pipeline_run_one.c runs one run (tensors, steps, checks,
 * outputs), pipeline_pool.c makes its pool, pipeline_report.c prints its tables and plans,
 * pipeline_dry_run.c plans the runs of --dry-run, pipeline_resume.c skips a shard that is done. */
#ifndef CLOPS_CLI_PIPELINE_RUN_H
#define CLOPS_CLI_PIPELINE_RUN_H

#include <stdint.h>

#include "cli.h"
#include "manifest.h"
#include "pipeline.h"
#include "pipeline_progress.h"
#include "pipeline_results.h"
#include "run_json.h"
#include "table.h"
#include "util.h"

/* The pool of a run, kept for the next run while the runs of a sweep name the same pool file
 * (the kernels it built stay built). */
struct run_pool {
    struct clops_pool *pool;
    char *path;       /* the pool file it was made from; NULL: the built-in defaults */
    char device[128]; /* its primary device */
    int32_t device_count;
    int json_index;                       /* among the JSON document's pools */
    struct manifest_device *shard_device; /* with --shard: the device chosen, for the manifest */
    /* What building the steps' kernels ahead of them did when the pool was made (prebuilt 0:
     * nothing, --no-prebuild or an older libclops) */
    int prebuilt;
    int64_t programs_built, programs_loaded;
    double prebuild_ms;
};

struct run {
    struct cli *cli;
    const struct run_options *options;
    struct pipeline *pl;
    struct run_pool *pool;
    struct run_result *result;
    struct progress *progress; /* NULL: none shown */
    struct run_json *json;     /* NULL: text output */
    char prefix[600];          /* "run 2 (n=64): " in a sweep, for its messages; else empty */
    int steps_done;
    char call_error[2048];       /* the library's message on the failed call of a step */
    struct clops_stream *stream; /* the steps' calls go there; NULL: through invoke */
};

/* ---- the runs of a sweep (pipeline_run.c) ------------------------------------------------- */

/* A run and its pipeline, loaded. */
struct loaded_run {
    struct pl_run run;
    struct pipeline pl; /* refers to `run` */
    int held;           /* loaded, to be freed */
};

/* Loads run `index` into `lr` unless it holds it already; returns the number of problems. */
int load_run(const struct cli *cli, const struct pl_source *src, int64_t index,
             struct loaded_run *lr, int silent);
void free_run(struct loaded_run *lr);

/* ---- one run (pipeline_run_one.c) ------------------------------------------------------------ */

/* One run's pipeline, run on r->pool. Returns an exit code; *fatal when no later run can do
 * better (the pool cannot be made). */
int run_one(struct run *r, int *fatal);
/* Prints "clops: <message>" on stderr and keeps the message as what stopped the run (after any
 * kept before it). Returns `code`. */
int run_error(struct run *r, int code, const char *fmt, ...) HOST_PRINTF(3, 4);
int64_t tensor_bytes(const struct pl_tensor *t);
/* Whether step `step_index` has checks, and the progress model's slot of them. */
int has_checks(const struct pipeline *pl, int32_t step_index);
int checks_slot(const struct pipeline *pl, int step_index);
int check_passed(const struct pl_check *check);

/* ---- a step's call (pipeline_call.c) --------------------------------------------------------- */

/* The run's stream on the pool's primary device, where the library has streams (ABI 1.4);
 * closed (waiting for its calls) at the run's end. */
int run_stream_open(struct run *r);
void run_stream_close(struct run *r);
/* One call of `op`, fed to r->progress as it goes: its status, and its message in
 * r->call_error when it failed (as invoke and last_error would give them). */
int32_t run_call(struct run *r, const struct clops_op *op, const struct clops_arg *args,
                 int32_t count);

/* ---- the pool (pipeline_pool.c) ------------------------------------------------------------ */

/* The pool the run's pipeline names: the one of the run before when it names the same file. */
int take_pool(struct run *r);
void release_pool(const struct cli *cli, struct run_pool *p);

/* ---- tables and plans (pipeline_report.c) --------------------------------------------------- */

/* The steps run, and the checks, as tables on stdout. */
void print_steps(const struct run *r);
void print_checks(const struct pipeline *pl);
/* With --verbose: on stdout after the tables, on stderr with --json. */
void print_pool_stats(const struct run *r);
/* --dry-run: the tensors, steps, checks and outputs of `pl`. */
void print_plan(const struct pipeline *pl, const char *output_dir);
/* The runs' swept values as table columns: "run", then one per swept param, then `extra` of
 * `last`; the caller frees them. */
struct table_column *run_columns(const struct pl_source *src, int extra,
                                 const struct table_column *last, int *count);
/* A row of the run's index and swept values. */
void run_cells(struct table *t, const struct pl_source *src, const struct pl_run *run);
/* "Sweep: 6 runs over every combination of n and m (the first varies slowest):". */
void print_order(const struct pl_source *src, const struct shard *shard, int64_t count);

/* ---- --dry-run (pipeline_dry_run.c) --------------------------------------------------------- */

/* --dry-run --json: every run with its plan. `only` holds the pipeline of a source of one run. */
void json_dry_run(const struct cli *cli, const struct pl_source *src, struct loaded_run *only,
                  const struct run_options *options, struct run_json *json);
/* --dry-run: the plan of the first run, then, in a sweep, every run with its output files. */
int print_dry_run(const struct cli *cli, const struct pl_source *src, struct loaded_run *only,
                  const struct run_options *options);

/* ---- a shard run again (pipeline_resume.c) -------------------------------------------------- */

/* A shard whose manifest says it is done is skipped (unless --force); one whose manifest says
 * otherwise runs again, and says why. Returns 1 to skip. */
int shard_skip(const struct manifest *m, const char *manifest_path);

#endif