/* pipeline_run.c — running a validated pipeline: host tensors, the pool, each step through
 * op_find + invoke, the checks, the result tables and the outputs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pipeline.h"
#include "table.h"
#include "util.h"

struct run {
    struct cli *cli;
    struct pipeline *pl;
    struct clops_pool *pool;
    char device[128]; /* the pool's primary device */
    int steps_done;
};

/* ---- tensors ------------------------------------------------------------------------------ */

static void store_one(void *data, int32_t dtype, int64_t index)
{
    switch (dtype) {
    case CLOPS_F32: ((float *)data)[index] = 1.0f; break;
    case CLOPS_F64: ((double *)data)[index] = 1.0; break;
    case CLOPS_I32: ((int32_t *)data)[index] = 1; break;
    case CLOPS_U32: ((uint32_t *)data)[index] = 1; break;
    case CLOPS_U8: ((uint8_t *)data)[index] = 1; break;
    case CLOPS_I64: ((int64_t *)data)[index] = 1; break;
    default: break;
    }
}

/* Row-major (C order), dense: the last axis has stride 1. */
static struct clops_tensor row_major_view(const struct pl_tensor *t)
{
    if (t->rank == 2)
        return clops_matrix(t->data, t->dtype, t->shape[0], t->shape[1],
                            t->shape[1] > 0 ? t->shape[1] : 1, 0);
    struct clops_tensor view = {0};
    view.data = t->data;
    view.dtype = t->dtype;
    view.rank = t->rank;
    int64_t stride = 1;
    for (int32_t axis = t->rank - 1; axis >= 0; axis--) {
        view.shape[axis] = t->shape[axis];
        view.strides[axis] = stride;
        stride *= t->shape[axis] > 1 ? t->shape[axis] : 1;
    }
    return view;
}

static void create_tensor(struct pl_tensor *t)
{
    t->data = host_xcalloc((size_t)t->elements, (size_t)host_dtype_size(t->dtype));
    if (t->init == INIT_RANDOM) {
        struct host_rng rng;
        host_rng_seed(&rng, t->seed);
        host_fill_random(t->data, t->dtype, t->elements, &rng);
    } else if (t->init == INIT_IDENTITY) {
        int64_t diagonal = t->shape[0] < t->shape[1] ? t->shape[0] : t->shape[1];
        for (int64_t i = 0; i < diagonal; i++)
            store_one(t->data, t->dtype, i * t->shape[1] + i);
    }
    t->view = row_major_view(t);
}

static int64_t tensor_bytes(const struct pl_tensor *t)
{
    return t->elements * host_dtype_size(t->dtype);
}

/* ---- steps -------------------------------------------------------------------------------- */

/* Copies of the tensors the step writes: for the checks' reference and to give every repeated
 * run the same input. */
static void snapshot_written(const struct pipeline *pl, struct pl_step *step)
{
    const struct clops_op *op = step->op;
    step->before = host_xcalloc((size_t)op->param_count, sizeof *step->before);
    for (int32_t p = 0; p < op->param_count; p++) {
        int t = step->values[p].tensor;
        if (!param_kind_writes(op->params[p].kind) || t < 0)
            continue;
        step->before[p] = host_xmalloc((size_t)tensor_bytes(&pl->tensors[t]));
        memcpy(step->before[p], pl->tensors[t].data, (size_t)tensor_bytes(&pl->tensors[t]));
    }
}

static void restore_written(const struct pipeline *pl, const struct pl_step *step)
{
    for (int32_t p = 0; p < step->op->param_count; p++)
        if (step->before[p] != NULL) {
            const struct pl_tensor *t = &pl->tensors[step->values[p].tensor];
            memcpy(t->data, step->before[p], (size_t)tensor_bytes(t));
        }
}

/* Only the arguments the file gives are passed, by name: the plugin applies its own defaults
 * and checks everything against the descriptor. */
static int32_t build_args(const struct pipeline *pl, const struct pl_step *step,
                          struct clops_arg *args)
{
    int32_t count = 0;
    for (int32_t p = 0; p < step->op->param_count; p++) {
        const struct pl_value *v = &step->values[p];
        if (!v->given)
            continue;
        struct clops_arg *a = &args[count++];
        memset(a, 0, sizeof *a);
        a->name = step->op->params[p].name;
        a->kind = step->op->params[p].kind;
        a->tensor = v->tensor >= 0 ? &pl->tensors[v->tensor].view : NULL;
        a->i = v->i;
        a->d = v->d;
        a->s = v->s;
    }
    return count;
}

static int32_t run_step(struct run *r, struct pl_step *step)
{
    const struct clops_api *api = r->cli->lib.api;
    struct clops_arg *args = host_xcalloc((size_t)step->op->param_count, sizeof *args);
    int32_t count = build_args(r->pl, step, args);
    snapshot_written(r->pl, step);
    int32_t status = CLOPS_OK;
    step->best_ms = INFINITY;
    for (int32_t run = 0; run < step->repeat && status == CLOPS_OK; run++) {
        if (run > 0)
            restore_written(r->pl, step);
        double start = host_now_ms();
        status = api->invoke(r->pool, step->op, args, count);
        double ms = host_now_ms() - start;
        step->best_ms = ms < step->best_ms ? ms : step->best_ms;
    }
    free(args);
    return status;
}

/* Checks run right after their step, before a later step can change what they look at. */
static void run_checks_of(struct run *r, int32_t step_index)
{
    for (int i = 0; i < r->pl->check_count; i++) {
        struct pl_check *check = &r->pl->checks[i];
        if (check->step != step_index)
            continue;
        check->error = check->kind->measure(r->pl, &r->pl->steps[step_index]);
        check->ran = 1;
    }
}

static int check_passed(const struct pl_check *check)
{
    return check->ran && !isnan(check->error) && check->error <= check->tolerance;
}

/* ---- reports ------------------------------------------------------------------------------ */

/* "a=300x200 b=200x400 c=300x400": the step's tensors by parameter name. */
static void format_shapes(const struct pipeline *pl, const struct pl_step *step, char *out,
                          size_t size)
{
    out[0] = '\0';
    for (int32_t p = 0; p < step->op->param_count; p++) {
        const struct pl_value *v = &step->values[p];
        if (v->tensor < 0)
            continue;
        const struct pl_tensor *t = &pl->tensors[v->tensor];
        char item[160];
        int used = snprintf(item, sizeof item, "%s=", step->op->params[p].name);
        for (int32_t axis = 0; axis < t->rank && used > 0 && (size_t)used < sizeof item; axis++)
            used += snprintf(item + used, sizeof item - (size_t)used, "%s%lld", axis ? "x" : "",
                             (long long)t->shape[axis]);
        host_append(out, size, " ", item);
    }
}

static void print_steps(const struct run *r)
{
    static const struct table_column columns[] = {
        {"step", TABLE_RIGHT},    {"operator", TABLE_LEFT}, {"shapes", TABLE_LEFT},
        {"device", TABLE_LEFT},   {"runs", TABLE_RIGHT},    {"best ms", TABLE_RIGHT},
        {"GFLOP/s", TABLE_RIGHT},
    };
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    for (int i = 0; i < r->steps_done; i++) {
        const struct pl_step *step = &r->pl->steps[i];
        char shapes[512];
        format_shapes(r->pl, step, shapes, sizeof shapes);
        double flops = step_flops(r->pl, step);
        table_row(&t);
        table_cell(&t, "%d", i);
        table_cell(&t, "%s", step->op->name);
        table_cell(&t, "%s", shapes);
        table_cell(&t, "%s", r->device);
        table_cell(&t, "%d", step->repeat);
        table_cell(&t, "%.3f", step->best_ms);
        if (flops > 0.0 && step->best_ms > 0.0)
            table_cell(&t, "%.2f", flops / (step->best_ms * 1e6));
        else
            table_cell(&t, "-");
    }
    table_print(&t, stdout, 0);
    table_free(&t);
}

static void print_checks(const struct pipeline *pl)
{
    static const struct table_column columns[] = {
        {"check", TABLE_RIGHT},         {"kind", TABLE_LEFT},       {"step", TABLE_RIGHT},
        {"max rel error", TABLE_RIGHT}, {"tolerance", TABLE_RIGHT}, {"result", TABLE_LEFT},
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
        if (check->ran)
            table_cell(&t, "%.3e", check->error);
        else
            table_cell(&t, "-");
        table_cell(&t, "%.1e", check->tolerance);
        table_cell(&t, "%s", !check->ran ? "NOT RUN" : check_passed(check) ? "PASS" : "FAIL");
    }
    putchar('\n');
    table_print(&t, stdout, 0);
    table_free(&t);
}

static void print_pool_stats(const struct run *r)
{
    struct clops_stats stats = {.struct_size = sizeof stats};
    if (r->cli->lib.api->pool_stats(r->pool, &stats) != CLOPS_OK)
        return;
    printf("\nPool: %lld programs built, %lld loaded from the cache (%lld rejected), %lld calls, "
           "%lld bytes uploaded, %lld downloaded\n",
           (long long)stats.programs_built, (long long)stats.programs_loaded,
           (long long)stats.cache_rejected, (long long)stats.calls, (long long)stats.bytes_uploaded,
           (long long)stats.bytes_downloaded);
}

/* ---- outputs ------------------------------------------------------------------------------ */

static int write_outputs(const struct pipeline *pl, const char *output_dir)
{
    for (int i = 0; i < pl->output_count; i++) {
        const struct pl_output *out = &pl->outputs[i];
        const struct pl_tensor *t = &pl->tensors[out->tensor];
        char *path = NULL;
        if (out->file[0] == '/' || strcmp(output_dir, ".") == 0)
            path = host_xstrdup(out->file);
        else if (asprintf(&path, "%s/%s", output_dir, out->file) < 0)
            path = host_xstrdup(out->file);
        int rc = output_write_atomically(path, t->data, t->elements, host_dtype_size(t->dtype));
        if (rc != 0)
            fprintf(stderr, "clops: cannot write %s: %s\n", path, strerror(errno));
        else
            printf("Wrote %s (%s, %lld bytes) to %s\n", t->name, host_dtype_name(t->dtype),
                   (long long)tensor_bytes(t), path);
        free(path);
        if (rc != 0)
            return CLI_FAILED;
    }
    return CLI_OK;
}

/* ---- the run ------------------------------------------------------------------------------ */

static int create_pool(struct run *r)
{
    const struct clops_api *api = r->cli->lib.api;
    const char *pool_path = r->pl->pool_path;
    int32_t status = pool_path != NULL ? api->pool_create_from_file(pool_path, &r->pool)
                                       : api->pool_create_default(&r->pool);
    if (status != CLOPS_OK)
        return cli_pool_error(r->cli, status);
    struct clops_device_info info = {.struct_size = sizeof info};
    if (api->pool_device_info(r->pool, 0, &info) != CLOPS_OK)
        return cli_library_error(r->cli, CLI_FAILED);
    snprintf(r->device, sizeof r->device, "%s", info.name);
    return CLI_OK;
}

/* Runs every step (stopping at the first failure) with its checks; returns an exit code. */
static int run_steps(struct run *r)
{
    for (int i = 0; i < r->pl->step_count; i++) {
        if (run_step(r, &r->pl->steps[i]) != CLOPS_OK) {
            print_steps(r);
            fprintf(stderr, "clops: steps[%d] (%s, %s:%d): %s\n", i, r->pl->steps[i].op->name,
                    r->pl->path, r->pl->steps[i].line, r->cli->lib.api->last_error());
            return CLI_FAILED;
        }
        r->steps_done = i + 1;
        run_checks_of(r, i);
    }
    print_steps(r);
    print_checks(r->pl);
    int failed = 0;
    for (int i = 0; i < r->pl->check_count; i++)
        failed += !check_passed(&r->pl->checks[i]);
    if (failed > 0) {
        fprintf(stderr, "clops: %d of %d checks failed; outputs not written\n", failed,
                r->pl->check_count);
        return CLI_FAILED;
    }
    return CLI_OK;
}

int pipeline_run_file(struct cli *cli, const char *path, const char *output_dir)
{
    struct pipeline pl;
    int errors = pipeline_load(&pl, path, cli->lib.api);
    if (errors > 0) {
        fprintf(stderr, "clops: %s: %d error%s; nothing was run\n", path, errors,
                errors == 1 ? "" : "s");
        pipeline_free(&pl);
        return CLI_CONFIG;
    }
    for (int i = 0; i < pl.tensor_count; i++)
        create_tensor(&pl.tensors[i]);

    struct run r = {.cli = cli, .pl = &pl};
    int code = create_pool(&r);
    if (code == CLI_OK) {
        printf("Pipeline %s on %s (pool: %s)\n\n", path, r.device,
               pl.pool_path != NULL ? pl.pool_path : "built-in defaults");
        code = run_steps(&r);
    }
    if (code == CLI_OK && pl.output_count > 0) {
        putchar('\n');
        code = write_outputs(&pl, output_dir);
    }
    if (r.pool != NULL && cli->verbose)
        print_pool_stats(&r);
    cli->lib.api->pool_release(r.pool);
    pipeline_free(&pl);
    return code;
}
