/* run_json.c — the document of `clops run --json` (run_json.h; schema clops-run/1). */
#include "run_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_json.h"
#include "formats.h"
#include "util.h"

struct run_json_pool {
    char *config; /* NULL: the built-in defaults */
    struct clops_device_info *devices;
    int32_t device_count; /* -1: no pool could be made */
    char *status, *message;
};

void run_json_begin(struct run_json *j, const struct cli *cli, const char *path,
                    const struct run_options *options, const struct pl_source *src)
{
    memset(j, 0, sizeof *j);
    j->cli = cli;
    struct json_writer *w = &j->w;
    json_init(w, stdout, JSON_PRETTY);
    json_begin_object(w);
    cli_json_header(w, cli, "clops-run/1");
    json_member_string(w, "pipeline", path);
    json_member_string(w, "output_dir", options->output_dir);
    json_key(w, "sets");
    json_begin_array(w);
    for (int i = 0; i < options->set_count; i++)
        json_string(w, options->sets[i]);
    json_end_array(w);
    json_member_bool(w, "dry_run", options->dry_run);
    cli_json_member_sweep(w, src);
    json_key(w, "runs");
    json_begin_array(w);
}

int run_json_pool(struct run_json *j, const char *config, struct clops_pool *pool, int32_t status,
                  const char *message)
{
    const struct clops_api *api = j->cli->lib.api;
    struct run_json_pool *grown = host_xcalloc((size_t)j->pool_count + 1, sizeof *grown);
    if (j->pool_count > 0)
        memcpy(grown, j->pools, (size_t)j->pool_count * sizeof *grown);
    free(j->pools);
    j->pools = grown;
    struct run_json_pool *p = &j->pools[j->pool_count];
    p->config = config != NULL ? host_xstrdup(config) : NULL;
    p->device_count = -1;
    if (pool != NULL) {
        int32_t count = api->pool_device_count(pool);
        p->devices = host_xcalloc((size_t)(count > 0 ? count : 1), sizeof *p->devices);
        for (int32_t i = 0; i < count; i++) {
            p->devices[i].struct_size = sizeof p->devices[i];
            if (api->pool_device_info(pool, i, &p->devices[i]) != CLOPS_OK)
                break;
            p->device_count = i + 1;
        }
        if (p->device_count < 0)
            p->device_count = 0;
    } else {
        p->status = host_xstrdup(api->status_name(status));
        p->message = host_xstrdup(message);
    }
    return j->pool_count++;
}

/* ---- a run ---------------------------------------------------------------------------------- */

void run_json_value(struct json_writer *w, const struct param_value *v)
{
    switch (v->type) {
    case PARAM_INT: json_int(w, v->i); break;
    case PARAM_FLOAT: json_double(w, v->d); break;
    case PARAM_BOOL: json_bool(w, (int)v->i); break;
    default: json_string(w, v->s); break;
    }
}

static void shape(struct json_writer *w, const struct pl_tensor *t)
{
    json_begin_array(w);
    for (int32_t axis = 0; axis < t->rank; axis++)
        json_int(w, t->shape[axis]);
    json_end_array(w);
}

static const char *init_name(int init)
{
    switch (init) {
    case INIT_RANDOM: return "random";
    case INIT_IDENTITY: return "identity";
    case INIT_HILBERT: return "hilbert";
    case INIT_LINSPACE: return "linspace";
    case INIT_FILE: return "file";
    default: return "zeros";
    }
}

/* An array of `count` objects: `members` writes the members of object i. */
static void object_array(struct json_writer *w, int count, const void *ctx,
                         void (*members)(struct json_writer *w, const void *ctx, int i))
{
    json_begin_array(w);
    for (int i = 0; i < count; i++) {
        json_begin_object(w);
        members(w, ctx, i);
        json_end_object(w);
    }
    json_end_array(w);
}

static void tensor_members(struct json_writer *w, const void *ctx, int i)
{
    const struct pipeline *pl = ctx;
    const struct pl_tensor *t = &pl->tensors[i];
    json_member_string(w, "name", t->name);
    json_member_string(w, "dtype", host_dtype_name(t->dtype));
    json_key(w, "shape");
    shape(w, t);
    json_member_int(w, "bytes", t->elements * host_dtype_size(t->dtype));
    json_member_string(w, "init", init_name(t->init));
    json_key(w, "seed");
    if (t->init == INIT_RANDOM)
        json_int(w, (int64_t)t->seed);
    else
        json_null(w);
    json_member_double(w, "start", t->init == INIT_LINSPACE ? t->start : NAN);
    json_member_double(w, "stop", t->init == INIT_LINSPACE ? t->stop : NAN);
    json_member_string(w, "file", t->init == INIT_FILE ? t->file_path : NULL);
    json_member_bool(w, "on_device", t->on_device);
}

/* The arguments the file gives: tensors by name, the others as their values. */
static void step_arguments(struct json_writer *w, const struct pipeline *pl,
                           const struct pl_step *step)
{
    json_begin_object(w);
    for (int32_t p = 0; p < step->op->param_count; p++) {
        const struct pl_value *v = &step->values[p];
        const struct clops_param *param = &step->op->params[p];
        if (!v->given)
            continue;
        json_key(w, param->name);
        if (v->tensor >= 0)
            json_string(w, pl->tensors[v->tensor].name);
        else if (param->kind == CLOPS_PARAM_INT64)
            json_int(w, v->i);
        else if (param->kind == CLOPS_PARAM_DOUBLE)
            json_double(w, v->d);
        else
            json_string(w, v->s);
    }
    json_end_object(w);
}

static void step_shapes(struct json_writer *w, const struct pipeline *pl,
                        const struct pl_step *step)
{
    json_begin_object(w);
    for (int32_t p = 0; p < step->op->param_count; p++) {
        if (step->values[p].tensor < 0)
            continue;
        json_key(w, step->op->params[p].name);
        shape(w, &pl->tensors[step->values[p].tensor]);
    }
    json_end_object(w);
}

static void step_measures(struct json_writer *w, const struct pipeline *pl,
                          const struct pl_step *step, const struct step_result *s)
{
    json_member_double(w, "compile_ms", s->compile_ms);
    json_member_double(w, "best_ms", s->best_ms);
    json_member_double(w, "median_ms", s->median_ms);
    json_key(w, "times_ms");
    json_begin_array(w);
    for (int c = 0; c < s->calls; c++)
        json_double(w, s->call_ms[c]);
    json_end_array(w);
    const char *unit = NULL;
    double rate = step_rate(pl, step, s->best_ms, &unit);
    json_key(w, "rate");
    if (isfinite(rate)) {
        json_begin_object(w);
        json_member_double(w, "value", rate);
        json_member_string(w, "unit", unit);
        json_end_object(w);
    } else {
        json_null(w);
    }
    json_key(w, "info");
    if (s->has_info) {
        char meaning[128];
        info_meaning(step->op->name, s->info, meaning, sizeof meaning);
        json_begin_object(w);
        json_member_int(w, "value", s->info);
        json_member_string(w, "meaning", meaning[0] != '\0' ? meaning : NULL);
        json_end_object(w);
    } else {
        json_null(w);
    }
}

static void step_members(struct json_writer *w, const void *ctx, int i)
{
    const struct run_json_entry *e = ctx;
    static const char *const states[] = {"not_run", "ok", "failed"};
    const struct pipeline *pl = e->pl;
    const struct pl_step *step = &pl->steps[i];
    const struct step_result *s = &e->result->steps[i];
    json_member_int(w, "index", i);
    json_member_string(w, "operator", step->op->name);
    json_member_int(w, "line", step->line);
    json_member_int(w, "repeat", step->repeat);
    json_key(w, "args");
    step_arguments(w, pl, step);
    json_key(w, "shapes");
    step_shapes(w, pl, step);
    json_member_string(w, "status", states[s->state]);
    /* Mandelbrot shares its tiles between every device of the pool; the others run on the
     * primary device. */
    json_key(w, "devices");
    if (s->state == STEP_NOT_RUN) {
        json_null(w);
    } else {
        int32_t used = strcmp(step->op->name, "mandelbrot") == 0 ? e->device_count : 1;
        json_begin_array(w);
        for (int32_t d = 0; d < used; d++)
            json_int(w, d);
        json_end_array(w);
    }
    step_measures(w, pl, step, s);
}

static void check_members(struct json_writer *w, const void *ctx, int i)
{
    const struct pipeline *pl = ctx;
    const struct pl_check *c = &pl->checks[i];
    json_member_int(w, "index", i);
    json_member_string(w, "kind", c->kind->name);
    json_member_int(w, "step", c->step);
    json_member_int(w, "line", c->line);
    json_member_double(w, "tolerance", c->tolerance);
    json_member_bool(w, "exact", c->kind->exact);
    json_member_bool(w, "ran", c->ran);
    json_member_double(w, "error", c->ran ? c->error : NAN);
    json_key(w, "pass");
    if (c->ran)
        json_bool(w, !isnan(c->error) && c->error <= c->tolerance);
    else
        json_null(w);
    json_member_string(w, "detail", c->ran ? c->detail : NULL);
}

static void output_members(struct json_writer *w, const void *ctx, int i)
{
    const struct run_json_entry *e = ctx;
    const struct pipeline *pl = e->pl;
    const struct run_result *r = e->result;
    const struct pl_output *o = &pl->outputs[i];
    const struct output_result *written = &r->outputs[i];
    json_member_string(w, "tensor", pl->tensors[o->tensor].name);
    json_member_string(w, "file", o->name);
    json_member_string(w, "path", written->path);
    json_member_string(w, "format", fmt_kind_name(o->format));
    json_member_int(w, "line", o->line);
    json_member_bool(w, "written", written->written);
    json_key(w, "bytes");
    if (written->written)
        json_int(w, written->bytes);
    else
        json_null(w);
    json_member_string(w, "sha256", written->written ? written->sha256 : NULL);
}

void run_json_run(struct run_json *j, const struct run_json_entry *e)
{
    struct json_writer *w = &j->w;
    const struct pl_source *src = e->src;
    json_begin_object(w);
    json_member_int(w, "index", e->run->index);
    json_member_string(w, "label", e->run->label);
    json_key(w, "values");
    json_begin_object(w);
    for (int i = 0; i < src->params.count && i < e->run->value_count; i++) {
        json_key(w, src->params.items[i].name);
        run_json_value(w, &e->run->values[i]);
    }
    json_end_object(w);
    json_member_string(w, "status", e->status);
    json_key(w, "exit_code");
    if (e->code >= 0)
        json_int(w, e->code);
    else
        json_null(w);
    json_member_string(w, "error", e->error);
    json_member_double(w, "time_ms", e->ms);
    json_key(w, "pool");
    if (e->pool >= 0)
        json_int(w, e->pool);
    else
        json_null(w);
    if (e->pl != NULL) {
        json_key(w, "tensors");
        object_array(w, e->pl->tensor_count, e->pl, tensor_members);
        json_key(w, "steps");
        object_array(w, e->pl->step_count, e, step_members);
        json_key(w, "checks");
        object_array(w, e->pl->check_count, e->pl, check_members);
        json_key(w, "outputs");
        object_array(w, e->pl->output_count, e, output_members);
    } else {
        static const char *const parts[] = {"tensors", "steps", "checks", "outputs"};
        for (int i = 0; i < 4; i++) {
            json_key(w, parts[i]);
            json_null(w);
        }
    }
    json_end_object(w);
}

/* ---- the end -------------------------------------------------------------------------------- */

static void pool_device_members(struct json_writer *w, const void *ctx, int d)
{
    const struct run_json_pool *p = ctx;
    json_member_int(w, "index", d);
    cli_json_device_members(w, &p->devices[d]);
    json_member_int(w, "queues", p->devices[d].queues);
}

static void pool_members(struct json_writer *w, const void *ctx, int i)
{
    const struct run_json *j = ctx;
    const struct run_json_pool *p = &j->pools[i];
    json_member_string(w, "config", p->config);
    json_key(w, "devices");
    if (p->device_count >= 0)
        object_array(w, p->device_count, p, pool_device_members);
    else
        json_null(w);
    cli_json_member_error(w, p->device_count < 0 ? p->status : NULL, p->message);
}

static const char *outcome(int code)
{
    switch (code) {
    case CLI_OK: return "ok";
    case CLI_CONFIG: return "invalid";
    default: return "failed";
    }
}

int run_json_end(struct run_json *j, int code, const char *error)
{
    struct json_writer *w = &j->w;
    json_end_array(w); /* the runs */
    json_key(w, "pools");
    object_array(w, j->pool_count, j, pool_members);
    json_member_string(w, "status", outcome(code));
    json_member_int(w, "exit_code", code);
    json_member_string(w, "error", error);
    json_end_object(w);
    for (int i = 0; i < j->pool_count; i++) {
        free(j->pools[i].config);
        free(j->pools[i].devices);
        free(j->pools[i].status);
        free(j->pools[i].message);
    }
    free(j->pools);
    j->pools = NULL;
    j->pool_count = 0;
    return cli_json_end(w, code);
}
