/* pipeline_run.c — running a pipeline file: each run of its sweep (one run when it has none)
 * validated before the first starts, then run by run (pipeline_run_one.c) on a pool kept while
 * the runs name the same pool file (pipeline_pool.c); in a sweep, a table of the runs at the end;
 * with --shard, the runs of one shard (skipped when done: pipeline_resume.c) and its manifest.
 * --dry-run plans them instead (pipeline_dry_run.c). With --json the tables give way to one JSON
 * document (run_json.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "host_os.h"
#include "interrupt.h"
#include "pipeline_run.h"

/* ---- the runs ----------------------------------------------------------------------------- */

/* "3, 5, 6, ...": the first few of a list of run indices. */
static void append_index(char *out, size_t size, int64_t listed, int64_t index)
{
    char item[32];
    if (listed < 8)
        snprintf(item, sizeof item, "%lld", (long long)index);
    else if (listed == 8)
        snprintf(item, sizeof item, "...");
    else
        return;
    host_append(out, size, ", ", item);
}

/* Loads run `index` into `lr` unless it holds it already; returns the number of problems. */
int load_run(const struct cli *cli, const struct pl_source *src, int64_t index,
             struct loaded_run *lr, int silent)
{
    if (lr->held)
        return 0;
    pipeline_source_run(src, index, &lr->run);
    lr->held = 1;
    return pipeline_load(&lr->pl, src, &lr->run, cli->lib.api, silent);
}

void free_run(struct loaded_run *lr)
{
    if (lr->held) {
        pipeline_free(&lr->pl);
        pl_run_free(&lr->run);
    }
    lr->held = 0;
}

/* A valid run's steps into the progress model: their work and calls, and their checks, whose
 * host references take about the step's work (one call). */
static void model_run(struct progress_model *model, const struct pipeline *pl)
{
    progress_model_add_run(model);
    for (int s = 0; s < pl->step_count; s++) {
        struct step_work work = step_work(pl, &pl->steps[s]);
        progress_model_add(model, s, work.unit, work.amount, pl->steps[s].repeat);
        if (has_checks(pl, s))
            progress_model_add(model, checks_slot(pl, s), work.unit, work.amount, 1);
    }
}

/* Every run is loaded and validated before the first one starts, so that a value that breaks
 * one run (a shape of 0, a division by zero) stops the sweep before it has spent anything. The
 * first invalid run's problems are printed; the others are counted, and the message that ends
 * them goes to `error` too. Each valid run's steps go into `model`. A sweep's runs are loaded
 * again when they run (their input files read twice); a source of one run keeps its pipeline
 * in `only`. */
static int validate_runs(const struct cli *cli, const struct pl_source *src,
                         const struct shard *shard, struct loaded_run *only,
                         struct progress_model *model, char *error, size_t size)
{
    int64_t count = sweep_run_count(&src->sweep), invalid = 0, first = 0;
    int errors = 0, bad_set = 0;
    char indices[128] = "";
    for (int64_t i = 0; i < count && !bad_set; i++) {
        struct loaded_run fresh = {0};
        struct loaded_run *lr = count == 1 ? only : &fresh;
        int e = load_run(cli, src, i, lr, invalid > 0);
        if (e > 0 && invalid == 0) {
            errors = e;
            first = i;
            bad_set = lr->pl.bad_set;
        }
        if (e > 0)
            append_index(indices, sizeof indices, invalid++, i);
        else if (shard_owns(shard, i))
            model_run(model, &lr->pl);
        if (lr != only || e > 0)
            free_run(lr);
    }
    if (invalid == 0)
        return CLI_OK;
    if (bad_set)
        return CLI_USAGE;
    if (src->sweep.axis_count == 0)
        snprintf(error, size, "%s: %d error%s; nothing was run", src->path, errors,
                 errors == 1 ? "" : "s");
    else
        snprintf(error, size,
                 "%s: run %lld has %d error%s; %lld of %lld runs are invalid (%s); nothing was "
                 "run",
                 src->path, (long long)first, errors, errors == 1 ? "" : "s", (long long)invalid,
                 (long long)count, indices);
    fprintf(stderr, "clops: %s\n", error);
    return CLI_CONFIG;
}

/* What became of one run of a sweep. */
struct run_outcome {
    int code;  /* enum cli_exit; -1: not run */
    double ms; /* wall time */
};

/* The table of the runs (unless --json), and the failed ones on stderr, kept in `error` too.
 * Returns the sweep's exit code: the first failed run's. */
static int print_sweep_outcome(const struct pl_source *src, const struct shard *shard,
                               const struct run_outcome *outcomes, int table, char *error,
                               size_t size)
{
    int64_t count = sweep_run_count(&src->sweep), failed = 0, not_run = 0;
    static const struct table_column last[] = {{"result", TABLE_LEFT}, {"ms", TABLE_RIGHT}};
    int column_count = 0;
    struct table_column *columns = run_columns(src, 2, last, &column_count);
    struct table t;
    table_init(&t, columns, column_count);
    char indices[600] = "";
    int code = CLI_OK;
    for (int64_t i = 0; i < count; i++) {
        if (!shard_owns(shard, i))
            continue;
        struct pl_run run;
        pipeline_source_run(src, i, &run);
        run_cells(&t, src, &run);
        const struct run_outcome *o = &outcomes[i];
        table_cell(&t, "%s", o->code < 0 ? "not run" : o->code == CLI_OK ? "ok" : "FAILED");
        table_cell(&t, o->code < 0 ? "-" : "%.1f", o->ms);
        not_run += o->code < 0;
        if (o->code > 0) {
            if (failed < 8) {
                char item[600];
                snprintf(item, sizeof item, "run %lld (%s)", (long long)i, run.label);
                host_append(indices, sizeof indices, ", ", item);
            }
            failed++;
            code = code == CLI_OK ? o->code : code;
        }
        pl_run_free(&run);
    }
    if (table) {
        print_order(src, shard, count);
        table_print(&t, stdout, 2);
    }
    count = shard_run_count(shard, count);
    table_free(&t);
    free(columns);
    char message[1024];
    if (failed > 0) {
        snprintf(message, sizeof message, "%s: %lld of %lld runs failed: %s%s", src->path,
                 (long long)failed, (long long)count, indices, failed > 8 ? ", ..." : "");
        fprintf(stderr, "clops: %s\n", message);
        host_append(error, size, "; ", message);
    }
    if (not_run > 0) {
        snprintf(message, sizeof message, "%s: %lld runs were not run", src->path,
                 (long long)not_run);
        fprintf(stderr, "clops: %s\n", message);
        host_append(error, size, "; ", message);
    }
    return code;
}

/* The runs after a pool that could not be made, as the document lists them. */
static void json_not_run(const struct pl_source *src, const struct shard *shard, int64_t from,
                         struct run_json *json, struct manifest *manifest)
{
    for (int64_t i = from; i < sweep_run_count(&src->sweep); i++) {
        if (!shard_owns(shard, i))
            continue;
        if (manifest != NULL)
            manifest_add_run(manifest, i, "not_run", -1, NULL, NAN, NULL, NULL);
        if (json == NULL)
            continue;
        struct pl_run run;
        pipeline_source_run(src, i, &run);
        run_json_run(
            json,
            &(struct run_json_entry){
                .src = src, .run = &run, .status = "not_run", .code = -1, .ms = NAN, .pool = -1});
        pl_run_free(&run);
    }
}

/* Run `i`: loaded again (validated before with the same values: only an input file changed
 * since fails now), run on `pool`, reported in the document. Returns its exit code; *fatal when
 * no later run can do better. Without a sweep, what stopped the run goes to `error`. */
static int run_index(struct cli *cli, const struct pl_source *src, int64_t i, struct loaded_run *lr,
                     struct run_pool *pool, struct progress *progress,
                     const struct run_options *options, struct run_json *json,
                     struct manifest *manifest, int *fatal, char *error, size_t size)
{
    double start = host_now_ms();
    *fatal = 0;
    if (load_run(cli, src, i, lr, 0) > 0) {
        char message[128];
        snprintf(message, sizeof message, "run %lld: the pipeline is no longer valid; not run",
                 (long long)i);
        fprintf(stderr, "clops: %s\n", message);
        if (src->sweep.axis_count == 0)
            snprintf(error, size, "%s", message);
        if (manifest != NULL)
            manifest_add_run(manifest, i, "invalid", CLI_CONFIG, message, host_now_ms() - start,
                             NULL, NULL);
        if (json != NULL)
            run_json_run(json, &(struct run_json_entry){.src = src,
                                                        .run = &lr->run,
                                                        .status = "invalid",
                                                        .code = CLI_CONFIG,
                                                        .error = message,
                                                        .ms = host_now_ms() - start,
                                                        .pool = -1});
        return CLI_CONFIG;
    }
    if (src->sweep.axis_count > 0 && json == NULL)
        printf("%sRun %lld (%s), %lld of %lld\n\n",
               shard_position(options->shard, i) > 0 ? "\n" : "", (long long)i, lr->run.label,
               (long long)i + 1, (long long)lr->run.count);
    struct run_result result;
    run_result_init(&result, &lr->pl, options->output_dir);
    struct run r = {.cli = cli,
                    .options = options,
                    .pl = &lr->pl,
                    .pool = pool,
                    .result = &result,
                    .progress = progress,
                    .json = json};
    int code = run_one(&r, fatal);
    if (src->sweep.axis_count == 0)
        snprintf(error, size, "%s", result.error);
    if (manifest != NULL)
        manifest_add_run(manifest, i, code == CLI_OK ? "ok" : "failed", code, result.error,
                         host_now_ms() - start, &lr->pl, &result);
    if (json != NULL && !interrupt_stopped(code))
        run_json_run(json, &(struct run_json_entry){.src = src,
                                                    .run = &lr->run,
                                                    .pl = &lr->pl,
                                                    .result = &result,
                                                    .status = code == CLI_OK ? "ok" : "failed",
                                                    .code = code,
                                                    .error = result.error[0] ? result.error : NULL,
                                                    .ms = host_now_ms() - start,
                                                    .pool = pool->json_index,
                                                    .device_count = pool->device_count});
    run_result_free(&result);
    return code;
}

/* Runs every run in order. A run that fails (a step, a check, an output) is reported with its
 * values and the next one runs; a pool that cannot be made stops the sweep, since no later run
 * could do better. The progress (unless --quiet or --json) covers every run's steps. SIGINT or
 * SIGTERM (interrupt.h) cancels the running call and stops the sweep there: nothing more is
 * written, and the exit code says which signal it was. */
static int run_all(struct cli *cli, const struct pl_source *src, struct loaded_run *only,
                   const struct run_options *options, struct progress_model *model,
                   struct run_json *json, struct manifest *manifest, char *error, size_t size)
{
    int64_t count = sweep_run_count(&src->sweep);
    if (shard_run_count(options->shard, count) == 0 && json == NULL)
        printf("Shard %lld/%lld has none of the %lld run%s (run i is shard i %% %lld's); nothing "
               "to run.\n",
               (long long)options->shard->index, (long long)options->shard->count, (long long)count,
               count == 1 ? "" : "s", (long long)options->shard->count);
    struct run_outcome *outcomes = host_xcalloc((size_t)count, sizeof *outcomes);
    for (int64_t i = 0; i < count; i++)
        outcomes[i].code = -1;
    struct progress *progress =
        options->quiet || json != NULL
            ? NULL
            : progress_start(host_is_terminal(stderr) || options->progress, model);
    struct run_pool pool = {.shard_device = manifest != NULL ? &manifest->device : NULL};
    int code = CLI_OK, fatal = 0;
    int64_t i = 0, last = -1;
    interrupt_catch();
    for (; i < count && !fatal && interrupt_signal() == 0; i++) {
        if (!shard_owns(options->shard, i))
            continue;
        struct loaded_run fresh = {0};
        struct loaded_run *lr = count == 1 ? only : &fresh;
        double start = host_now_ms();
        outcomes[i].code = run_index(cli, src, i, lr, &pool, progress, options, json, manifest,
                                     &fatal, error, size);
        outcomes[i].ms = host_now_ms() - start;
        last = i;
        free_run(lr);
        code = code == CLI_OK ? outcomes[i].code : code;
    }
    progress_finish(progress);
    /* A signal that came after the last run ended changes nothing. One that came between two
     * runs stops the sweep there: the runs before it are done, their outputs written. */
    int sig = interrupt_signal();
    int reported = last >= 0 && interrupt_stopped(outcomes[last].code);
    int stopped = sig != 0 && (reported || i < count);
    if (stopped && !reported)
        fprintf(stderr,
                "clops: interrupted (%s) before run %lld; it and the runs after it not run\n",
                interrupt_signal_name(sig), (long long)i);
    if (!stopped)
        json_not_run(src, options->shard, i, json, manifest);
    if (pool.pool != NULL)
        release_pool(cli, &pool);
    interrupt_restore();
    if (stopped)
        code = interrupt_exit_code(sig);
    else if (src->sweep.axis_count > 0)
        code = print_sweep_outcome(src, options->shard, outcomes, json == NULL, error, size);
    free(outcomes);
    return code;
}

int pipeline_run_file(struct cli *cli, const char *path, const struct run_options *options)
{
    struct pl_source src;
    int errors = pipeline_source_load(&src, path, options->sets, options->set_count);
    int code = CLI_OK, source_read = errors == 0;
    char error[2048] = "";
    if (errors > 0 && src.bad_set) {
        code = CLI_USAGE;
    } else if (errors > 0) {
        snprintf(error, sizeof error, "%s: %d error%s; nothing was run", path, errors,
                 errors == 1 ? "" : "s");
        fprintf(stderr, "clops: %s\n", error);
        code = CLI_CONFIG;
    }
    struct loaded_run only = {0};
    struct progress_model model = {0};
    src.outputs_under_dir = options->shard != NULL;
    if (code == CLI_OK)
        code = validate_runs(cli, &src, options->shard, &only, &model, error, sizeof error);
    /* A shard's manifest records what it ran, and that it was invalid (but not a usage error,
     * which is the command line's, nor a file that could not be read). */
    struct manifest manifest = {0}, *m = NULL;
    char *manifest_path = NULL;
    int skipped = 0;
    if (options->shard != NULL && !options->dry_run && source_read && code != CLI_USAGE) {
        manifest_path =
            shard_manifest_path(options->output_dir, options->shard->index, options->shard->count);
        char err[1024];
        if (manifest_begin(&manifest, options->shard, path, &src, options, err, sizeof err)) {
            fprintf(stderr, "clops: %s\n", err);
            code = code == CLI_OK ? CLI_CONFIG : code;
        } else if (code == CLI_OK && !options->force && shard_skip(&manifest, manifest_path)) {
            skipped = 1;
        } else {
            m = &manifest;
        }
    }
    /* A usage error prints no document, as every command's (docs/json.md). */
    struct run_json json;
    struct run_json *doc = options->json && code != CLI_USAGE ? &json : NULL;
    if (doc != NULL)
        run_json_begin(doc, cli, path, options, source_read ? &src : NULL);
    if (skipped)
        ;
    else if (code == CLI_OK && options->dry_run && doc != NULL)
        json_dry_run(cli, &src, &only, options, doc);
    else if (code == CLI_OK && options->dry_run)
        code = print_dry_run(cli, &src, &only, options);
    else if (code == CLI_OK)
        code = run_all(cli, &src, &only, options, &model, doc, m, error, sizeof error);
    /* Interrupted: nothing more is written (interrupt.h), no manifest and no end of the document.
     */
    int interrupted = interrupt_stopped(code);
    if (m != NULL && !interrupted) {
        char err[1024];
        if (manifest_write(m, cli, manifest_path, code, error[0] != '\0' ? error : NULL, err,
                           sizeof err) != 0) {
            fprintf(stderr, "clops: cannot write the shard's manifest: %s\n", err);
            host_append(error, sizeof error, "; ", err);
            code = code == CLI_OK ? CLI_FAILED : code;
        } else if (!options->json) {
            printf("\nShard %lld/%lld: manifest %s\n", (long long)options->shard->index,
                   (long long)options->shard->count, manifest_path);
        }
    }
    manifest_free(&manifest);
    free(manifest_path);
    if (doc != NULL && !interrupted)
        code = run_json_end(doc, code, error[0] != '\0' ? error : NULL);
    progress_model_free(&model);
    free_run(&only);
    pipeline_source_free(&src);
    return code;
}
