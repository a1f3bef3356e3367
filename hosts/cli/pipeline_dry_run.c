/* pipeline_dry_run.c — clops run --dry-run: every run of the sweep this shard owns loaded and
 * planned, nothing run: the first run's plan and a table of the runs with their output files, or
 * each run's plan in the JSON document. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pipeline_run.h"

/* Calls `each` on every run of a dry run that this shard owns, whether it loads (valid) or not:
 * in `only` (loaded by validate_runs) when the source has one run. */
static void each_dry_run(const struct cli *cli, const struct pl_source *src,
                         struct loaded_run *only, const struct shard *shard,
                         void (*each)(void *ctx, struct loaded_run *lr, int valid), void *ctx)
{
    int64_t count = sweep_run_count(&src->sweep);
    for (int64_t i = 0; i < count; i++) {
        if (!shard_owns(shard, i))
            continue;
        struct loaded_run fresh = {0};
        struct loaded_run *lr = count == 1 ? only : &fresh;
        /* Valid when validate_runs looked, unless an input file has changed since. */
        int valid = load_run(cli, src, i, lr, i > 0) == 0;
        each(ctx, lr, valid);
        free_run(lr);
    }
}

struct json_dry_run {
    const struct pl_source *src;
    const char *output_dir;
    struct run_json *json;
};

static void json_dry_run_one(void *ctx, struct loaded_run *lr, int valid)
{
    const struct json_dry_run *d = ctx;
    struct run_result result = {0};
    if (valid)
        run_result_init(&result, &lr->pl, d->output_dir);
    run_json_run(d->json, &(struct run_json_entry){.src = d->src,
                                                   .run = &lr->run,
                                                   .pl = valid ? &lr->pl : NULL,
                                                   .result = valid ? &result : NULL,
                                                   .status = valid ? "planned" : "invalid",
                                                   .code = valid ? -1 : CLI_CONFIG,
                                                   .ms = NAN,
                                                   .pool = -1});
    if (valid)
        run_result_free(&result);
}

/* --dry-run --json: every run with its plan. */
void json_dry_run(const struct cli *cli, const struct pl_source *src, struct loaded_run *only,
                  const struct run_options *options, struct run_json *json)
{
    struct json_dry_run d = {src, options->output_dir, json};
    each_dry_run(cli, src, only, options->shard, json_dry_run_one, &d);
}

struct print_dry_run {
    const struct pl_source *src;
    const char *output_dir;
    struct table *t;
    int64_t planned;
};

static void print_dry_run_one(void *ctx, struct loaded_run *lr, int valid)
{
    struct print_dry_run *d = ctx;
    if (d->planned++ == 0 && valid)
        print_plan(&lr->pl, d->output_dir);
    run_cells(d->t, d->src, &lr->run);
    char names[2048] = "";
    for (int o = 0; valid && o < lr->pl.output_count; o++)
        host_append(names, sizeof names, ", ", lr->pl.outputs[o].name);
    table_cell(d->t, "%s", names);
}

/* --dry-run: the plan of the first run, then, in a sweep, every run with its output files. */
int print_dry_run(const struct cli *cli, const struct pl_source *src, struct loaded_run *only,
                  const struct run_options *options)
{
    int64_t count = sweep_run_count(&src->sweep);
    static const struct table_column outputs = {"outputs", TABLE_LEFT};
    int column_count = 0;
    struct table_column *columns = run_columns(src, 1, &outputs, &column_count);
    struct table t;
    table_init(&t, columns, column_count);
    struct print_dry_run d = {src, options->output_dir, &t, 0};
    each_dry_run(cli, src, only, options->shard, print_dry_run_one, &d);
    if (src->sweep.axis_count > 0) {
        print_order(src, options->shard, count);
        table_print(&t, stdout, 2);
    }
    if (d.planned == 0)
        printf("Shard %lld/%lld has none of the %lld runs.\n", (long long)options->shard->index,
               (long long)options->shard->count, (long long)count);
    table_free(&t);
    free(columns);
    printf("\nValid; nothing was run (--dry-run).\n");
    return CLI_OK;
}
