/* pipeline_report.c — what `clops run` prints in tables: the steps run and the checks, the
 * pool's statistics, the plan of --dry-run and the runs of a sweep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "pipeline_run.h"

static void format_dims(const struct pl_tensor *t, char *out, size_t size)
{
    out[0] = '\0';
    for (int32_t axis = 0; axis < t->rank; axis++) {
        char extent[24];
        snprintf(extent, sizeof extent, "%lld", (long long)t->shape[axis]);
        host_append(out, size, "x", extent);
    }
}

/* "a=300x200 b=200x400 c=300x400": the step's tensors by parameter name. LAPACK's info is not
 * among them: its shape, 1, would read as its value (the notes give that). */
static void format_shapes(const struct pipeline *pl, const struct pl_step *step, char *out,
                          size_t size)
{
    out[0] = '\0';
    int info = step_info_param(step);
    for (int32_t p = 0; p < step->op->param_count; p++) {
        const struct pl_value *v = &step->values[p];
        if (v->tensor < 0 || p == info)
            continue;
        char item[160], d[96];
        format_dims(&pl->tensors[v->tensor], d, sizeof d);
        snprintf(item, sizeof item, "%s=%s", step->op->params[p].name, d);
        host_append(out, size, " ", item);
    }
}

/* "a=A b=B alpha=1 trans_a=none": the arguments the file gives. */
static void format_args(const struct pipeline *pl, const struct pl_step *step, char *out,
                        size_t size)
{
    out[0] = '\0';
    for (int32_t p = 0; p < step->op->param_count; p++) {
        const struct pl_value *v = &step->values[p];
        const struct clops_param *param = &step->op->params[p];
        char item[160], number[32];
        if (!v->given)
            continue;
        if (v->tensor >= 0)
            snprintf(item, sizeof item, "%s=%s", param->name, pl->tensors[v->tensor].name);
        else if (param->kind == CLOPS_PARAM_INT64)
            snprintf(item, sizeof item, "%s=%lld", param->name, (long long)v->i);
        else if (param->kind == CLOPS_PARAM_DOUBLE)
            snprintf(item, sizeof item, "%s=%s", param->name,
                     format_shortest(v->d, number, sizeof number));
        else
            snprintf(item, sizeof item, "%s=%s", param->name, v->s != NULL ? v->s : "");
        host_append(out, size, " ", item);
    }
}

/* The steps' table keeps within $COLUMNS, else the terminal's width, else this many columns (as
 * clops ops and devices do). */
enum { STEPS_WIDTH = 100 };

/* A time in ms, "-" when there is none. */
static void time_cell(struct table *t, double ms)
{
    if (isnan(ms))
        table_cell(t, "-");
    else
        table_cell(t, "%.3f", ms);
}

/* The steps run: times without the kernel builds (compile ms: what the step's calls spent
 * building kernels, the first call mostly), the rate of the best call, LAPACK's info. A device
 * column only when the pool has several devices (the heading names the primary one). */
void print_steps(const struct run *r)
{
    static const struct table_column all[] = {
        {"step", TABLE_RIGHT},      {"operator", TABLE_LEFT},    {"shapes", TABLE_WRAP},
        {"runs", TABLE_RIGHT},      {"compile ms", TABLE_RIGHT}, {"best ms", TABLE_RIGHT},
        {"median ms", TABLE_RIGHT}, {"rate", TABLE_RIGHT},       {"device", TABLE_WRAP},
        {"notes", TABLE_WRAP},
    };
    int devices = r->pool->device_count > 1, count = 0;
    struct table_column columns[sizeof all / sizeof all[0]];
    for (size_t c = 0; c < sizeof all / sizeof all[0]; c++)
        if (devices || strcmp(all[c].title, "device") != 0)
            columns[count++] = all[c];
    struct table t;
    table_init(&t, columns, count);
    t.width = host_output_width(stdout, STEPS_WIDTH);
    for (int i = 0; i < r->steps_done; i++) {
        const struct pl_step *step = &r->pl->steps[i];
        const struct step_result *result = &r->result->steps[i];
        char shapes[512], notes[160] = "";
        format_shapes(r->pl, step, shapes, sizeof shapes);
        table_row(&t);
        table_cell(&t, "%d", i);
        table_cell(&t, "%s", step->op->name);
        table_cell(&t, "%s", shapes);
        table_cell(&t, "%d", step->repeat);
        time_cell(&t, result->compile_ms);
        time_cell(&t, result->best_ms);
        time_cell(&t, result->median_ms);
        const char *unit = NULL;
        double rate = step_rate(r->pl, step, result->best_ms, &unit);
        if (isnan(rate))
            table_cell(&t, "-");
        else
            table_cell(&t, "%.3g %s", rate, unit);
        /* Mandelbrot shares its tiles between every device of the pool. */
        if (devices && strcmp(step->op->name, "mandelbrot") == 0)
            table_cell(&t, "%d devices", r->pool->device_count);
        else if (devices)
            table_cell(&t, "%s", r->pool->device);
        if (result->has_info)
            info_text(step->op->name, result->info, notes, sizeof notes);
        table_cell(&t, "%s", notes);
    }
    table_print(&t, stdout, 0);
    table_free(&t);
}

void print_checks(const struct pipeline *pl)
{
    static const struct table_column columns[] = {
        {"check", TABLE_RIGHT}, {"kind", TABLE_LEFT},       {"step", TABLE_RIGHT},
        {"error", TABLE_RIGHT}, {"tolerance", TABLE_RIGHT}, {"result", TABLE_LEFT},
        {"detail", TABLE_LEFT},
    };
    if (pl->check_count == 0)
        return;
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    for (int i = 0; i < pl->check_count; i++) {
        const struct pl_check *check = &pl->checks[i];
        table_row(&t);
        table_cell(&t, "%d", i);
        table_cell(&t, "%s", check->kind->name);
        table_cell(&t, "%d", check->step);
        if (check->ran && check->kind->exact)
            table_cell(&t, "%.0f", check->error);
        else if (check->ran)
            table_cell(&t, "%.3e", check->error);
        else
            table_cell(&t, "-");
        table_cell(&t, check->kind->exact ? "%.0f" : "%.1e", check->tolerance);
        table_cell(&t, "%s", !check->ran ? "NOT RUN" : check_passed(check) ? "PASS" : "FAIL");
        table_cell(&t, "%s", check->detail);
    }
    putchar('\n');
    table_print(&t, stdout, 0);
    table_free(&t);
}

void print_pool_stats(const struct run *r)
{
    struct clops_stats stats = {.struct_size = sizeof stats};
    if (r->cli->lib.api->pool_stats(r->pool->pool, &stats) != CLOPS_OK)
        return;
    fprintf(r->json != NULL ? stderr : stdout,
            "\nPool: %lld programs built, %lld loaded from the cache (%lld rejected), %lld calls, "
            "%lld bytes uploaded, %lld downloaded\n",
            (long long)stats.programs_built, (long long)stats.programs_loaded,
            (long long)stats.cache_rejected, (long long)stats.calls,
            (long long)stats.bytes_uploaded, (long long)stats.bytes_downloaded);
}

/* ---- the plan (--dry-run) ------------------------------------------------------------------ */

static void format_source(const struct pl_tensor *t, char *out, size_t size)
{
    switch (t->init) {
    case INIT_RANDOM: snprintf(out, size, "random (seed %llu)", (unsigned long long)t->seed); break;
    case INIT_IDENTITY: snprintf(out, size, "identity"); break;
    case INIT_HILBERT: snprintf(out, size, "hilbert"); break;
    case INIT_LINSPACE: snprintf(out, size, "linspace %g .. %g", t->start, t->stop); break;
    case INIT_FILE: snprintf(out, size, "file %s", t->file); break;
    default: snprintf(out, size, "zeros"); break;
    }
}

static void print_plan_tensors(const struct pipeline *pl)
{
    static const struct table_column columns[] = {
        {"tensor", TABLE_LEFT}, {"source", TABLE_LEFT}, {"shape", TABLE_LEFT},
        {"dtype", TABLE_LEFT},  {"bytes", TABLE_RIGHT}, {"on device", TABLE_LEFT},
    };
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    for (int i = 0; i < pl->tensor_count; i++) {
        const struct pl_tensor *x = &pl->tensors[i];
        char source[300], d[96];
        format_source(x, source, sizeof source);
        format_dims(x, d, sizeof d);
        table_row(&t);
        table_cell(&t, "%s", x->name);
        table_cell(&t, "%s", source);
        table_cell(&t, "%s", d);
        table_cell(&t, "%s", host_dtype_name(x->dtype));
        table_cell(&t, "%lld", (long long)tensor_bytes(x));
        table_cell(&t, "%s", x->on_device ? "yes" : "no");
    }
    table_print(&t, stdout, 2);
    table_free(&t);
}

void print_plan(const struct pipeline *pl, const char *output_dir)
{
    printf("Plan of %s", pl->path);
    if (pl->run->label[0] != '\0')
        printf(", run %lld (%s)", (long long)pl->run->index, pl->run->label);
    printf(" (pool: %s)\n\nTensors:\n",
           pl->pool_path != NULL ? pl->pool_path : "built-in defaults");
    print_plan_tensors(pl);
    printf("\nSteps:\n");
    for (int i = 0; i < pl->step_count; i++) {
        char args[1024];
        format_args(pl, &pl->steps[i], args, sizeof args);
        printf("  %d  %s  %s%s", i, pl->steps[i].op->name, args,
               pl->steps[i].repeat > 1 ? "  " : "\n");
        if (pl->steps[i].repeat > 1)
            printf("(%d runs)\n", pl->steps[i].repeat);
    }
    if (pl->check_count > 0)
        printf("\nChecks:\n");
    for (int i = 0; i < pl->check_count; i++)
        printf("  %d  %s of step %d, tolerance %g\n", i, pl->checks[i].kind->name,
               pl->checks[i].step, pl->checks[i].tolerance);
    if (pl->output_count > 0)
        printf("\nOutputs (into %s):\n", output_dir);
    for (int i = 0; i < pl->output_count; i++)
        printf("  %s -> %s (%s)\n", pl->tensors[pl->outputs[i].tensor].name, pl->outputs[i].name,
               fmt_kind_name(pl->outputs[i].format));
}

/* ---- the runs of a sweep ------------------------------------------------------------------ */

struct table_column *run_columns(const struct pl_source *src, int extra,
                                 const struct table_column *last, int *count)
{
    *count = 1 + src->sweep.axis_count + extra;
    struct table_column *columns = host_xcalloc((size_t)*count, sizeof *columns);
    columns[0] = (struct table_column){"run", TABLE_RIGHT};
    for (int i = 0; i < src->sweep.axis_count; i++)
        columns[1 + i] =
            (struct table_column){src->params.items[src->sweep.axes[i].param].name, TABLE_LEFT};
    for (int i = 0; i < extra; i++)
        columns[1 + src->sweep.axis_count + i] = last[i];
    return columns;
}

void run_cells(struct table *t, const struct pl_source *src, const struct pl_run *run)
{
    table_row(t);
    table_cell(t, "%lld", (long long)run->index);
    for (int i = 0; i < src->sweep.axis_count; i++) {
        char *text = sweep_value_text(&run->values[src->sweep.axes[i].param]);
        table_cell(t, "%s", text);
        free(text);
    }
}

void print_order(const struct pl_source *src, const struct shard *shard, int64_t count)
{
    if (shard != NULL)
        printf("\nShard %lld/%lld: %lld of the sweep's runs (run i is shard i %% %lld's)",
               (long long)shard->index, (long long)shard->count,
               (long long)shard_run_count(shard, count), (long long)shard->count);
    printf("\nSweep: %lld runs %s %s", (long long)count,
           src->sweep.axis_count > 1 ? "over every combination of" : "over",
           src->params.items[src->sweep.axes[0].param].name);
    for (int i = 1; i < src->sweep.axis_count; i++)
        printf("%s%s", i + 1 == src->sweep.axis_count ? " and " : ", ",
               src->params.items[src->sweep.axes[i].param].name);
    if (src->sweep.axis_count > 1)
        printf(" (the first varies slowest)");
    printf(":\n");
}
