/* pipeline_run.c — running a pipeline file: each run of its sweep (one run when it has none)
 * validated before the first starts, then run by run: host tensors, the pool, device copies of
 * the tensors steps use, each step through op_find + invoke (timed apart from the kernel builds
 * it causes), the checks, the result tables and the outputs; in a sweep, a table of the runs at
 * the end. With --json the tables give way to one JSON document (run_json.c). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libconfig.h>

#include "cli.h"
#include "formats.h"
#include "manifest.h"
#include "names.h"
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
    char call_error[2048]; /* the library's message on the failed call of a step */
};

/* Prints "clops: <message>" on stderr and keeps the message as what stopped the run (after any
 * kept before it). Returns `code`. */
static int run_error(struct run *r, int code, const char *fmt, ...) HOST_PRINTF(3, 4);
static int run_error(struct run *r, int code, const char *fmt, ...)
{
    char message[sizeof r->result->error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fprintf(stderr, "clops: %s\n", message);
    host_append(r->result->error, sizeof r->result->error, "; ", message);
    return code;
}

/* ---- tensors ------------------------------------------------------------------------------ */

static void store(void *data, int32_t dtype, int64_t index, double value)
{
    switch (dtype) {
    case CLOPS_F32: ((float *)data)[index] = (float)value; break;
    case CLOPS_F64: ((double *)data)[index] = value; break;
    case CLOPS_I32: ((int32_t *)data)[index] = (int32_t)llround(value); break;
    case CLOPS_U32: ((uint32_t *)data)[index] = (uint32_t)llround(value); break;
    case CLOPS_U8: ((uint8_t *)data)[index] = (uint8_t)llround(value); break;
    case CLOPS_I64: ((int64_t *)data)[index] = (int64_t)llround(value); break;
    default: break;
    }
}

/* The generators of the format (demo.cfg's header); file tensors were read while validating. */
static void generate(struct pl_tensor *t)
{
    if (t->init != INIT_FILE)
        t->data = host_xcalloc((size_t)t->elements, (size_t)host_dtype_size(t->dtype));
    int64_t cols = t->rank == 2 ? t->shape[1] : 1;
    if (t->init == INIT_RANDOM) {
        struct host_rng rng;
        host_rng_seed(&rng, t->seed);
        host_fill_random(t->data, t->dtype, t->elements, &rng);
    } else if (t->init == INIT_IDENTITY) {
        int64_t diagonal = t->shape[0] < t->shape[1] ? t->shape[0] : t->shape[1];
        for (int64_t i = 0; i < diagonal; i++)
            store(t->data, t->dtype, i * cols + i, 1.0);
    } else if (t->init == INIT_HILBERT) {
        for (int64_t i = 0; i < t->shape[0]; i++)
            for (int64_t j = 0; j < cols; j++)
                store(t->data, t->dtype, i * cols + j, 1.0 / (double)(i + j + 1));
    } else if (t->init == INIT_LINSPACE) {
        double step = t->elements > 1 ? (t->stop - t->start) / (double)(t->elements - 1) : 0.0;
        for (int64_t k = 0; k < t->elements; k++)
            store(t->data, t->dtype, k,
                  k + 1 == t->elements ? t->stop : t->start + step * (double)k);
    }
    t->view = pl_tensor_view(t, t->data);
}

static int64_t tensor_bytes(const struct pl_tensor *t)
{
    return t->elements * host_dtype_size(t->dtype);
}

static int transfer_error(struct run *r, const char *what, const struct pl_tensor *t)
{
    return run_error(r, CLI_FAILED, "cannot %s tensor '%s': %s", what, t->name,
                     r->cli->lib.api->last_error());
}

/* Tensors the steps use live in device buffers for the whole run: uploaded once here, passed
 * to every step as device tensors, downloaded only for checks, outputs and repeats. Empty ones
 * stay on the host (there is nothing to move). */
static int upload_tensors(struct run *r)
{
    const struct clops_api *api = r->cli->lib.api;
    for (int i = 0; i < r->pl->tensor_count; i++) {
        struct pl_tensor *t = &r->pl->tensors[i];
        if (!t->on_device || t->elements == 0)
            continue;
        if (api->buffer_create(r->pool->pool, tensor_bytes(t), &t->buffer) != CLOPS_OK ||
            api->buffer_upload(t->buffer, 0, t->data, tensor_bytes(t)) != CLOPS_OK)
            return transfer_error(r, "upload", t);
        t->view.data = NULL;
        t->view.buffer = t->buffer;
    }
    return CLI_OK;
}

/* Makes the host copy current. */
static int fetch(struct run *r, struct pl_tensor *t)
{
    if (t->buffer == NULL || !t->host_stale)
        return CLI_OK;
    if (r->cli->lib.api->buffer_download(t->buffer, 0, t->data, tensor_bytes(t)) != CLOPS_OK)
        return transfer_error(r, "download", t);
    t->host_stale = 0;
    return CLI_OK;
}

static void release_buffers(struct run *r)
{
    for (int i = 0; i < r->pl->tensor_count; i++) {
        r->cli->lib.api->buffer_release(r->pl->tensors[i].buffer);
        r->pl->tensors[i].buffer = NULL;
    }
}

/* ---- steps -------------------------------------------------------------------------------- */

static int has_checks(const struct pipeline *pl, int32_t step_index)
{
    for (int i = 0; i < pl->check_count; i++)
        if (pl->checks[i].step == step_index)
            return 1;
    return 0;
}

/* Copies of the tensors the step writes, on the host: for the checks' reference and to give
 * every repeated run the same input. */
static int snapshot_written(struct run *r, struct pl_step *step)
{
    const struct clops_op *op = step->op;
    step->before = host_xcalloc((size_t)op->param_count, sizeof *step->before);
    for (int32_t p = 0; p < op->param_count; p++) {
        int t = step->values[p].tensor;
        if (!param_kind_writes(op->params[p].kind) || t < 0)
            continue;
        struct pl_tensor *tensor = &r->pl->tensors[t];
        if (fetch(r, tensor) != CLI_OK)
            return CLI_FAILED;
        step->before[p] = host_xmalloc((size_t)tensor_bytes(tensor) + 1);
        memcpy(step->before[p], tensor->data, (size_t)tensor_bytes(tensor));
    }
    return CLI_OK;
}

/* Puts the written tensors back as they were before the step (uploads for device tensors). */
static int restore_written(struct run *r, const struct pl_step *step)
{
    for (int32_t p = 0; p < step->op->param_count; p++) {
        if (step->before[p] == NULL)
            continue;
        struct pl_tensor *t = &r->pl->tensors[step->values[p].tensor];
        if (t->buffer != NULL && r->cli->lib.api->buffer_upload(t->buffer, 0, step->before[p],
                                                                tensor_bytes(t)) != CLOPS_OK)
            return transfer_error(r, "restore", t);
        if (t->buffer == NULL)
            memcpy(t->data, step->before[p], (size_t)tensor_bytes(t));
    }
    return CLI_OK;
}

/* After a step, the device holds the newer contents of what it wrote. */
static void mark_written(const struct pipeline *pl, const struct pl_step *step)
{
    for (int32_t p = 0; p < step->op->param_count; p++) {
        int t = step->values[p].tensor;
        if (param_kind_writes(step->op->params[p].kind) && t >= 0 && pl->tensors[t].buffer)
            pl->tensors[t].host_stale = 1;
    }
}

/* The nanoseconds the pool has spent building kernel programs (ABI 1.3's build_ns), or -1 when
 * the library does not report them. */
static int64_t build_ns(const struct run *r)
{
    const struct clops_api *api = r->cli->lib.api;
    struct clops_stats stats = {.struct_size = sizeof stats};
    if (api->abi_minor < 3 || api->pool_stats(r->pool->pool, &stats) != CLOPS_OK)
        return -1;
    return stats.build_ns;
}

/* One call of a step, timed: its wall time less the kernel builds it caused (a first call
 * compiles, or loads from the cache, what later calls reuse), which go to the step's
 * compile_ms. */
static int32_t timed_call(struct run *r, struct pl_step *step, const struct clops_arg *args,
                          int32_t count, struct step_result *result)
{
    int64_t built_before = build_ns(r);
    double start = host_now_ms();
    int32_t status = r->cli->lib.api->invoke(r->pool->pool, step->op, args, count);
    double ms = host_now_ms() - start;
    /* Its message before pool_stats clears it. */
    if (status != CLOPS_OK)
        snprintf(r->call_error, sizeof r->call_error, "%s", r->cli->lib.api->last_error());
    int64_t built_after = build_ns(r);
    if (built_before >= 0 && built_after >= 0) {
        double building = (double)(built_after - built_before) * 1e-6;
        result->compile_ms = (isnan(result->compile_ms) ? 0.0 : result->compile_ms) + building;
        /* build_ns sums the threads that build at once (one per device): never below 0. */
        ms = fmax(ms - building, 0.0);
    }
    if (status == CLOPS_OK) {
        result->call_ms[result->calls++] = ms;
        progress_call_end(r->progress, ms);
    }
    return status;
}

/* LAPACK's info, where the step has it: read back from the device after the step. */
static int read_info(struct run *r, const struct pl_step *step, struct step_result *result)
{
    int p = step_info_param(step);
    if (p < 0)
        return CLI_OK;
    struct pl_tensor *t = &r->pl->tensors[step->values[p].tensor];
    if (t->elements < 1 || fetch(r, t) != CLI_OK)
        return t->elements < 1 ? CLI_OK : CLI_FAILED;
    result->info = ((const int32_t *)t->data)[0];
    result->has_info = 1;
    return CLI_OK;
}

/* The calls of one step; a failed transfer is reported here, a failed call by the caller. */
static int32_t run_step(struct run *r, int index, int *transfer_failed)
{
    struct pl_step *step = &r->pl->steps[index];
    struct step_result *result = &r->result->steps[index];
    *transfer_failed = 0;
    if ((step->repeat > 1 || has_checks(r->pl, index)) && snapshot_written(r, step) != CLI_OK) {
        *transfer_failed = 1;
        result->state = STEP_FAILED;
        return CLOPS_ERR_DEVICE;
    }
    struct clops_arg *args = host_xcalloc((size_t)step->op->param_count, sizeof *args);
    int32_t count = step_args(r->pl, step, args);
    result->call_ms = host_xcalloc((size_t)step->repeat, sizeof *result->call_ms);
    char label[128];
    snprintf(label, sizeof label, "step %d/%d %s", index + 1, r->pl->step_count, step->op->name);
    progress_begin(r->progress, shard_position(r->options->shard, r->pl->run->index), index, label);
    int32_t status = CLOPS_OK;
    double first = host_now_ms();
    for (int32_t call = 0; call < step->repeat && status == CLOPS_OK; call++) {
        if (call > 0 && restore_written(r, step) != CLI_OK) {
            *transfer_failed = 1;
            status = CLOPS_ERR_DEVICE;
            break;
        }
        progress_call_begin(r->progress, call, step->repeat);
        status = timed_call(r, step, args, count, result);
    }
    step_result_summarise(result);
    step->best_ms = result->best_ms;
    mark_written(r->pl, step);
    if (status == CLOPS_OK && read_info(r, step, result) != CLI_OK) {
        *transfer_failed = 1;
        status = CLOPS_ERR_DEVICE;
    }
    result->state = status == CLOPS_OK ? STEP_OK : STEP_FAILED;
    char line[256], building[64] = "";
    if (result->compile_ms > 0.0)
        snprintf(building, sizeof building, " (%.1f ms of it building kernels)",
                 result->compile_ms);
    snprintf(line, sizeof line, "%s ... %s in %.1f ms%s", label,
             status == CLOPS_OK ? "done" : "FAILED", host_now_ms() - first, building);
    progress_end(r->progress, line);
    free(args);
    return status;
}

/* The step's checks, on host copies of its tensors. */
static int measure_checks_of(struct run *r, int32_t step_index)
{
    const struct pl_step *step = &r->pl->steps[step_index];
    for (int32_t p = 0; p < step->op->param_count; p++)
        if (step->values[p].tensor >= 0 && fetch(r, &r->pl->tensors[step->values[p].tensor]))
            return CLI_FAILED;
    for (int i = 0; i < r->pl->check_count; i++) {
        struct pl_check *check = &r->pl->checks[i];
        if (check->step != step_index)
            continue;
        check->error = check->kind->measure(r->pl, step, check->detail, sizeof check->detail);
        check->ran = 1;
    }
    return CLI_OK;
}

/* The progress model's slot of a step's checks: after the steps' own. */
static int checks_slot(const struct pipeline *pl, int step_index)
{
    return pl->step_count + step_index;
}

/* Checks run right after their step, before a later step can change what they look at; they
 * read host copies, so the step's tensors come back from the device first. */
static int run_checks_of(struct run *r, int32_t step_index)
{
    const struct pl_step *step = &r->pl->steps[step_index];
    if (!has_checks(r->pl, step_index))
        return CLI_OK;
    char label[128];
    snprintf(label, sizeof label, "step %d/%d %s, checks", step_index + 1, r->pl->step_count,
             step->op->name);
    progress_begin(r->progress, shard_position(r->options->shard, r->pl->run->index),
                   checks_slot(r->pl, step_index), label);
    double start = host_now_ms();
    int code = measure_checks_of(r, step_index);
    if (code == CLI_OK)
        progress_call_end(r->progress, host_now_ms() - start);
    progress_end(r->progress, NULL);
    return code;
}

static int check_passed(const struct pl_check *check)
{
    return check->ran && !isnan(check->error) && check->error <= check->tolerance;
}

/* ---- reports ------------------------------------------------------------------------------ */

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
static void print_steps(const struct run *r)
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

static void print_checks(const struct pipeline *pl)
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

/* With --verbose: on stdout after the tables, on stderr with --json. */
static void print_pool_stats(const struct run *r)
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

static void print_plan(const struct pipeline *pl, const char *output_dir)
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

/* ---- outputs ------------------------------------------------------------------------------ */

/* Writes the outputs, each file's size and SHA-256 read back from what was written. */
static int write_outputs(struct run *r)
{
    for (int i = 0; i < r->pl->output_count; i++) {
        const struct pl_output *out = &r->pl->outputs[i];
        struct output_result *written = &r->result->outputs[i];
        struct pl_tensor *t = &r->pl->tensors[out->tensor];
        if (fetch(r, t) != CLI_OK)
            return CLI_FAILED;
        struct fmt_tensor f = {.dtype = t->dtype, .rank = t->rank, .data = t->data};
        memcpy(f.shape, t->shape, sizeof f.shape);
        char err[512];
        if (fmt_write(written->path, &f, err, sizeof err) != 0)
            return run_error(r, CLI_FAILED, "%soutputs[%d] (%s:%d): cannot write %s: %s", r->prefix,
                             i, r->pl->path, out->line, written->path, err);
        if (sha256_file(written->path, written->sha256, &written->bytes) != 0)
            return run_error(r, CLI_FAILED, "%soutputs[%d] (%s:%d): cannot read %s back: %s",
                             r->prefix, i, r->pl->path, out->line, written->path, strerror(errno));
        written->written = 1;
        if (r->json == NULL)
            printf("Wrote %s (%s, %lld bytes of data) to %s\n", t->name, host_dtype_name(t->dtype),
                   (long long)tensor_bytes(t), written->path);
    }
    return CLI_OK;
}

/* ---- one run ------------------------------------------------------------------------------ */

static int same_pool_file(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void release_pool(const struct cli *cli, struct run_pool *p)
{
    struct manifest_device *kept = p->shard_device;
    cli->lib.api->pool_release(p->pool);
    free(p->path);
    memset(p, 0, sizeof *p);
    p->shard_device = kept;
}

/* Whether a pool file lists `devices` (then a shard keeps them). A file libconfig cannot read
 * counts as naming them: the pool is then made from it as it is, which reports its errors.
 * Only the list's length is read, which no integer libconfig wraps can change; the plugin
 * refuses such an integer when it makes the pool, from the file or from the text built on it. */
static int pool_file_names_devices(const char *path)
{
    config_t cfg;
    config_init(&cfg);
    int names = 1;
    if (config_read_file(&cfg, path) == CONFIG_TRUE) {
        const config_setting_t *devices = config_lookup(&cfg, "devices");
        names = devices != NULL && config_setting_length(devices) > 0;
    }
    config_destroy(&cfg);
    return names;
}

/* The GPUs the OpenCL ICD loader shows, or 0. */
static int count_gpus(const struct clops_api *api)
{
    enum { MAX_LISTED = 256 };
    struct clops_device_info *infos = host_xcalloc(MAX_LISTED, sizeof *infos);
    int32_t count = 0, gpus = 0;
    for (int i = 0; i < MAX_LISTED; i++)
        infos[i].struct_size = sizeof infos[i];
    if (api->devices_list(infos, MAX_LISTED, &count) == CLOPS_OK)
        for (int32_t i = 0; i < count && i < MAX_LISTED; i++)
            gpus += infos[i].type == CLOPS_DEVICE_GPU;
    free(infos);
    return gpus;
}

/* A shard that knows its rank on the node takes GPU local_rank % GPUs, through a pool
 * configuration made of the pool file (one that names no devices) and a devices line, unless
 * the file names its devices or there is no GPU (shard_device_choice). */
static int32_t create_pool(struct run *r, const char *pool_path, struct clops_pool **out)
{
    const struct clops_api *api = r->cli->lib.api;
    const struct shard *s = r->options->shard;
    struct manifest_device *d = r->pool->shard_device;
    struct shard_device choice = {SHARD_DEVICE_POOL, -1};
    if (s != NULL && s->local_rank >= 0) {
        int names = pool_path != NULL && pool_file_names_devices(pool_path);
        int gpus = names ? -1 : count_gpus(api);
        choice = shard_device_choice(s->local_rank, gpus, names);
        if (d != NULL)
            d->gpu_count = gpus;
    }
    if (d != NULL) {
        d->choice = choice.kind;
        d->gpu_index = choice.gpu_index;
    }
    if (choice.kind != SHARD_DEVICE_GPU)
        return pool_path != NULL ? api->pool_create_from_file(pool_path, out)
                                 : api->pool_create_default(out);
    char *base = NULL;
    if (pool_path != NULL) {
        int64_t size = 0;
        char err[512];
        FILE *f = fmt_open_input(pool_path, &size, err, sizeof err);
        if (f == NULL)
            return api->pool_create_from_file(pool_path, out); /* it reports the problem */
        base = host_xcalloc((size_t)size + 1, 1);
        size_t got = fread(base, 1, (size_t)size, f);
        base[got] = '\0';
        fclose(f);
    }
    char *config = shard_pool_config(base, choice.gpu_index);
    int32_t status = api->pool_create_from_string(config, out);
    free(config);
    free(base);
    return status;
}

/* The pool the run's pipeline names: the one of the run before when it names the same file. */
static int take_pool(struct run *r)
{
    const struct clops_api *api = r->cli->lib.api;
    const char *pool_path = r->pl->pool_path;
    if (r->pool->pool != NULL && same_pool_file(r->pool->path, pool_path))
        return CLI_OK;
    release_pool(r->cli, r->pool);
    int32_t status = create_pool(r, pool_path, &r->pool->pool);
    if (status != CLOPS_OK) {
        /* The message first: every later call of the library clears it. */
        char message[sizeof r->result->error];
        snprintf(message, sizeof message, "%s", api->last_error());
        host_append(r->result->error, sizeof r->result->error, "; ", message);
        int code = cli_pool_error(r->cli, status);
        if (r->json != NULL)
            r->pool->json_index = run_json_pool(r->json, pool_path, NULL, status, message);
        return code;
    }
    if (r->json != NULL)
        r->pool->json_index = run_json_pool(r->json, pool_path, r->pool->pool, CLOPS_OK, NULL);
    r->pool->path = pool_path != NULL ? host_xstrdup(pool_path) : NULL;
    struct clops_device_info info = {.struct_size = sizeof info};
    if (api->pool_device_info(r->pool->pool, 0, &info) != CLOPS_OK)
        return run_error(r, CLI_FAILED, "%s", api->last_error());
    snprintf(r->pool->device, sizeof r->pool->device, "%s", info.name);
    r->pool->device_count = api->pool_device_count(r->pool->pool);
    if (r->pool->shard_device != NULL) {
        snprintf(r->pool->shard_device->name, sizeof r->pool->shard_device->name, "%s", info.name);
        r->pool->shard_device->device_count = r->pool->device_count;
    }
    return CLI_OK;
}

static int step_failed(struct run *r, int i, int transfer_failed)
{
    const struct pl_step *step = &r->pl->steps[i];
    if (r->json == NULL)
        print_steps(r);
    return run_error(r, CLI_FAILED, "%ssteps[%d] (%s, %s:%d) failed%s%s; outputs not written",
                     r->prefix, i, step->op->name, r->pl->path, step->line,
                     transfer_failed ? "" : ": ", transfer_failed ? "" : r->call_error);
}

/* Runs every step (stopping at the first failure) with its checks; returns an exit code. */
static int run_steps(struct run *r)
{
    for (int i = 0; i < r->pl->step_count; i++) {
        int transfer_failed = 0;
        if (run_step(r, i, &transfer_failed) != CLOPS_OK)
            return step_failed(r, i, transfer_failed);
        r->steps_done = i + 1;
        if (run_checks_of(r, i) != CLI_OK)
            return step_failed(r, i, 1);
    }
    if (r->progress != NULL)
        putc('\n', stderr);
    if (r->json == NULL) {
        print_steps(r);
        print_checks(r->pl);
    }
    int failed = 0;
    for (int i = 0; i < r->pl->check_count; i++)
        failed += !check_passed(&r->pl->checks[i]);
    if (failed > 0)
        return run_error(r, CLI_FAILED, "%s%d of %d checks failed; outputs not written", r->prefix,
                         failed, r->pl->check_count);
    return CLI_OK;
}

/* One run's pipeline, run on r->pool. Returns an exit code; *fatal when no later run can do
 * better (the pool cannot be made). */
static int run_one(struct run *r, int *fatal)
{
    struct pipeline *pl = r->pl;
    if (pl->run->label[0] != '\0')
        snprintf(r->prefix, sizeof r->prefix, "run %lld (%s): ", (long long)pl->run->index,
                 pl->run->label);
    for (int i = 0; i < pl->tensor_count; i++)
        generate(&pl->tensors[i]);
    int code = take_pool(r);
    *fatal = code != CLI_OK;
    if (code == CLI_OK) {
        if (r->json == NULL)
            printf("Pipeline %s on %s (pool: %s)\n\n", pl->path, r->pool->device,
                   pl->pool_path != NULL ? pl->pool_path : "built-in defaults");
        fflush(stdout);
        code = upload_tensors(r);
    }
    if (code == CLI_OK)
        code = run_steps(r);
    if (code == CLI_OK && pl->output_count > 0) {
        if (r->json == NULL)
            putchar('\n');
        code = write_outputs(r);
    }
    if (r->pool->pool != NULL && r->cli->verbose)
        print_pool_stats(r);
    release_buffers(r);
    return code;
}

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

/* A run and its pipeline, loaded. */
struct loaded_run {
    struct pl_run run;
    struct pipeline pl; /* refers to `run` */
    int held;           /* loaded, to be freed */
};

/* Loads run `index` into `lr` unless it holds it already; returns the number of problems. */
static int load_run(const struct cli *cli, const struct pl_source *src, int64_t index,
                    struct loaded_run *lr, int silent)
{
    if (lr->held)
        return 0;
    pipeline_source_run(src, index, &lr->run);
    lr->held = 1;
    return pipeline_load(&lr->pl, src, &lr->run, cli->lib.api, silent);
}

static void free_run(struct loaded_run *lr)
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

/* The runs' swept values as table columns: "run", then one per swept param. */
static struct table_column *run_columns(const struct pl_source *src, int extra,
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

static void run_cells(struct table *t, const struct pl_source *src, const struct pl_run *run)
{
    table_row(t);
    table_cell(t, "%lld", (long long)run->index);
    for (int i = 0; i < src->sweep.axis_count; i++) {
        char *text = sweep_value_text(&run->values[src->sweep.axes[i].param]);
        table_cell(t, "%s", text);
        free(text);
    }
}

static void print_order(const struct pl_source *src, const struct shard *shard, int64_t count)
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
static void json_dry_run(const struct cli *cli, const struct pl_source *src,
                         struct loaded_run *only, const struct run_options *options,
                         struct run_json *json)
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
static int print_dry_run(const struct cli *cli, const struct pl_source *src,
                         struct loaded_run *only, const struct run_options *options)
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
    if (json != NULL)
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
 * could do better. The progress (unless --quiet or --json) covers every run's steps. */
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
        options->quiet || json != NULL ? NULL : progress_start(isatty(STDERR_FILENO), model);
    struct run_pool pool = {.shard_device = manifest != NULL ? &manifest->device : NULL};
    int code = CLI_OK, fatal = 0;
    int64_t i = 0;
    for (; i < count && !fatal; i++) {
        if (!shard_owns(options->shard, i))
            continue;
        struct loaded_run fresh = {0};
        struct loaded_run *lr = count == 1 ? only : &fresh;
        double start = host_now_ms();
        outcomes[i].code = run_index(cli, src, i, lr, &pool, progress, options, json, manifest,
                                     &fatal, error, size);
        outcomes[i].ms = host_now_ms() - start;
        free_run(lr);
        code = code == CLI_OK ? outcomes[i].code : code;
    }
    progress_finish(progress);
    json_not_run(src, options->shard, i, json, manifest);
    if (pool.pool != NULL)
        release_pool(cli, &pool);
    if (src->sweep.axis_count > 0)
        code = print_sweep_outcome(src, options->shard, outcomes, json == NULL, error, size);
    free(outcomes);
    return code;
}

/* First problem only: why a shard is run again. */
static void first_problem(void *ctx, const char *message)
{
    char *why = ctx;
    if (why[0] == '\0')
        snprintf(why, 1024, "%s", message);
}

/* Whether the shard's manifest says it succeeded for this very pipeline and set, and every file
 * it lists is intact (size and SHA-256). 1: skip it; 0, with `why` ("" when there is no
 * manifest). */
static int shard_is_done(const struct manifest *m, const char *manifest_path, char *why,
                         int64_t *files)
{
    struct manifest_doc d;
    char err[1024];
    int done = 0;
    why[0] = '\0';
    if (access(manifest_path, F_OK) != 0)
        return 0;
    const struct shard *s = m->shard;
    int64_t runs = sweep_run_count(&m->src->sweep);
    struct manifest_file_counts counts = {0};
    if (manifest_read(manifest_path, &d, err, sizeof err) != 0)
        snprintf(why, 1024, "%s", err);
    else if (strcmp(d.status, "ok") != 0)
        snprintf(why, 1024, "its manifest says it %s", d.status);
    else if (!manifest_same_set(&d, m->pipeline_sha256, NULL, m->options->sets,
                                m->options->set_count, runs, s->count, why, 1024))
        ;
    else if (d.runs->count != shard_run_count(s, runs))
        snprintf(why, 1024, "its manifest lists %d runs, not %lld", d.runs->count,
                 (long long)shard_run_count(s, runs));
    else
        done = manifest_check_files(&d, m->options->output_dir, first_problem, why, &counts) == 0;
    *files = counts.files;
    manifest_doc_free(&d);
    return done;
}

/* A shard whose manifest says it is done is skipped (unless --force); one whose manifest says
 * otherwise runs again, and says why. Returns 1 to skip. */
static int shard_skip(const struct manifest *m, const char *manifest_path)
{
    const struct shard *s = m->shard;
    char why[1024];
    int64_t files = 0, runs = shard_run_count(s, sweep_run_count(&m->src->sweep));
    if (shard_is_done(m, manifest_path, why, &files)) {
        fprintf(m->options->json ? stderr : stdout,
                "Shard %lld/%lld of %s is done (%s: %lld run%s, %lld file%s intact); skipped. "
                "--force runs it again.\n",
                (long long)s->index, (long long)s->count, m->pipeline, manifest_path,
                (long long)runs, runs == 1 ? "" : "s", (long long)files, files == 1 ? "" : "s");
        return 1;
    }
    if (why[0] != '\0') {
        /* `why` quotes the manifest, which may name anything: escaped for the terminal. */
        char *shown = name_escaped(why);
        fprintf(stderr, "clops: shard %lld/%lld runs again: %s\n", (long long)s->index,
                (long long)s->count, shown);
        free(shown);
    }
    return 0;
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
    if (m != NULL) {
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
    if (doc != NULL)
        code = run_json_end(doc, code, error[0] != '\0' ? error : NULL);
    progress_model_free(&model);
    free_run(&only);
    pipeline_source_free(&src);
    return code;
}
