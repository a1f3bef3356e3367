/* pipeline.c — reading and validating a pipeline file. Everything that can be checked without
 * a device is checked here, and every problem is reported (file:line), before anything runs. */
#include "pipeline.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Host tensors larger than this are surely a typo in `shape` (and would overflow sizes). */
#define MAX_TENSOR_BYTES (INT64_C(1) << 40)

static void HOST_PRINTF(3, 4)
    report(struct pipeline *pl, const config_setting_t *where, const char *fmt, ...)
{
    int line = where != NULL ? config_setting_source_line(where) : 0;
    fprintf(stderr, "%s:%d: ", pl->path, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    pl->errors++;
}

static int in_list(const char *const *names, const char *name)
{
    for (int i = 0; names[i] != NULL; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

/* Unknown keys are errors: a misspelt optional key would otherwise be silently ignored. */
static void check_keys(struct pipeline *pl, const config_setting_t *group, const char *what,
                       const char *const *allowed)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        const config_setting_t *member = config_setting_get_elem(group, (unsigned)i);
        if (in_list(allowed, config_setting_name(member)))
            continue;
        char expected[256];
        host_join(expected, sizeof expected, ", ", allowed);
        report(pl, member, "%s: unknown key '%s' (expected one of: %s)", what,
               config_setting_name(member), expected);
    }
}

/* ---- Typed members ------------------------------------------------------------------------ */

/* The member `key` of `group`: NULL when absent (reported when `required`). */
static config_setting_t *member(struct pipeline *pl, config_setting_t *group, const char *key,
                                int required, const char *what)
{
    config_setting_t *s = config_setting_get_member(group, key);
    if (s == NULL && required)
        report(pl, group, "%s: missing '%s'", what, key);
    return s;
}

static const char *get_string(struct pipeline *pl, config_setting_t *group, const char *key,
                              int required, const char *what)
{
    config_setting_t *s = member(pl, group, key, required, what);
    if (s == NULL)
        return NULL;
    if (config_setting_type(s) != CONFIG_TYPE_STRING) {
        report(pl, s, "%s: '%s' must be a string in double quotes", what, key);
        return NULL;
    }
    return config_setting_get_string(s);
}

static int is_integer(const config_setting_t *s)
{
    return config_setting_type(s) == CONFIG_TYPE_INT || config_setting_type(s) == CONFIG_TYPE_INT64;
}

/* Returns 1 with *out set when the member is present and an integer. */
static int get_integer(struct pipeline *pl, config_setting_t *group, const char *key, int required,
                       const char *what, int64_t *out)
{
    config_setting_t *s = member(pl, group, key, required, what);
    if (s == NULL)
        return 0;
    if (!is_integer(s)) {
        report(pl, s, "%s: '%s' must be an integer", what, key);
        return 0;
    }
    *out = config_setting_get_int64(s);
    return 1;
}

/* A number: integers are accepted where a double is expected (alpha = 1). */
static int number_value(const config_setting_t *s, double *out)
{
    if (is_integer(s))
        *out = (double)config_setting_get_int64(s);
    else if (config_setting_type(s) == CONFIG_TYPE_FLOAT)
        *out = config_setting_get_float(s);
    else
        return 0;
    return 1;
}

/* The list `key` of the root (a parenthesised list of groups); NULL when absent. */
static config_setting_t *get_list(struct pipeline *pl, const char *key, int required)
{
    config_setting_t *root = config_root_setting(&pl->config);
    config_setting_t *s = member(pl, root, key, required, "pipeline");
    if (s != NULL && !config_setting_is_list(s)) {
        report(pl, s, "'%s' must be a list: %s = ( { ... }, { ... } );", key, key);
        return NULL;
    }
    return s;
}

/* Element `i` of a list, which must be a group; NULL (reported) otherwise. */
static config_setting_t *list_group(struct pipeline *pl, config_setting_t *list, int i, char *what,
                                    size_t what_size)
{
    config_setting_t *s = config_setting_get_elem(list, (unsigned)i);
    snprintf(what, what_size, "%s[%d]", config_setting_name(list), i);
    if (!config_setting_is_group(s)) {
        report(pl, s, "%s must be a group { key = value; ... }", what);
        return NULL;
    }
    return s;
}

/* Parses element `index` of a list, known to be a group; `what` names it ("steps[2]"). */
typedef void (*item_parser)(struct pipeline *pl, config_setting_t *group, const char *what,
                            int index);

/* The root list `key`: allocates `*items` (one zeroed item per element, `count` of them) and
 * parses each element with `parse`. */
static void parse_list(struct pipeline *pl, const char *key, int required, void **items,
                       size_t item_size, int *count, item_parser parse)
{
    config_setting_t *list = get_list(pl, key, required);
    *count = list != NULL ? config_setting_length(list) : 0;
    *items = host_xcalloc((size_t)*count, item_size);
    for (int i = 0; i < *count; i++) {
        char what[64];
        config_setting_t *group = list_group(pl, list, i, what, sizeof what);
        if (group != NULL)
            parse(pl, group, what, i);
    }
}

static int find_tensor(const struct pipeline *pl, const char *name)
{
    for (int i = 0; name != NULL && i < pl->tensor_count; i++)
        if (pl->tensors[i].name != NULL && strcmp(pl->tensors[i].name, name) == 0)
            return i;
    return -1;
}

/* A tensor reference: the member must name a tensor declared in `tensors`. */
static int get_tensor_ref(struct pipeline *pl, config_setting_t *s, const char *what)
{
    if (config_setting_type(s) != CONFIG_TYPE_STRING) {
        report(pl, s, "%s: must be a tensor's name in double quotes", what);
        return -1;
    }
    int index = find_tensor(pl, config_setting_get_string(s));
    if (index < 0)
        report(pl, s, "%s: no tensor named '%s' in 'tensors'", what, config_setting_get_string(s));
    return index;
}

/* ---- tensors ------------------------------------------------------------------------------ */

static void parse_shape(struct pipeline *pl, config_setting_t *group, const char *what,
                        struct pl_tensor *t)
{
    config_setting_t *s = member(pl, group, "shape", 1, what);
    if (s == NULL)
        return;
    int rank =
        config_setting_is_array(s) || config_setting_is_list(s) ? config_setting_length(s) : -1;
    if (rank < 1 || rank > CLOPS_MAX_RANK) {
        report(pl, s, "%s: 'shape' must be an array of 1 to %d extents, e.g. [300, 200]", what,
               CLOPS_MAX_RANK);
        return;
    }
    int64_t limit = MAX_TENSOR_BYTES / (t->dtype ? host_dtype_size(t->dtype) : 1);
    t->rank = rank;
    t->elements = 1;
    for (int i = 0; i < rank; i++) {
        config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        int64_t extent = is_integer(e) ? config_setting_get_int64(e) : -1;
        if (extent < 0) {
            report(pl, s, "%s: shape[%d] must be an integer >= 0", what, i);
            return;
        }
        if (extent > 0 && t->elements > limit / extent) {
            report(pl, s, "%s: shape is larger than %lld bytes", what, (long long)MAX_TENSOR_BYTES);
            return;
        }
        t->shape[i] = extent;
        t->elements *= extent;
    }
}

static void parse_init(struct pipeline *pl, config_setting_t *group, const char *what,
                       struct pl_tensor *t, int index)
{
    static const char *const inits[] = {"zeros", "random", "identity", NULL};
    const char *init = get_string(pl, group, "init", 0, what);
    t->init = INIT_ZEROS;
    for (int i = 0; init != NULL && inits[i] != NULL; i++)
        if (strcmp(init, inits[i]) == 0)
            t->init = i;
    if (init != NULL && !in_list(inits, init))
        report(pl, config_setting_get_member(group, "init"),
               "%s: unknown init '%s' (expected zeros, random or identity)", what, init);
    if (t->init == INIT_IDENTITY && t->rank != 2)
        report(pl, group, "%s: init \"identity\" needs a matrix (a shape of 2 extents)", what);

    /* Distinct default seeds: two random tensors without seeds are not equal. */
    int64_t seed = index + 1;
    if (get_integer(pl, group, "seed", 0, what, &seed) && t->init != INIT_RANDOM)
        report(pl, config_setting_get_member(group, "seed"),
               "%s: 'seed' applies only to init = \"random\"", what);
    t->seed = (uint64_t)seed;
}

static void parse_tensor(struct pipeline *pl, config_setting_t *group, const char *what, int index)
{
    static const char *const keys[] = {"name", "dtype", "shape", "init", "seed", NULL};
    struct pl_tensor *t = &pl->tensors[index];
    check_keys(pl, group, what, keys);

    const char *name = get_string(pl, group, "name", 1, what);
    if (name != NULL && name[0] == '\0')
        report(pl, group, "%s: 'name' is empty", what);
    else if (name != NULL && find_tensor(pl, name) >= 0)
        report(pl, group, "%s: a tensor named '%s' is already declared", what, name);
    else
        t->name = name;

    const char *dtype = get_string(pl, group, "dtype", 1, what);
    t->dtype = host_dtype_from_name(dtype);
    if (dtype != NULL && t->dtype == CLOPS_DTYPE_INVALID)
        report(pl, config_setting_get_member(group, "dtype"),
               "%s: unknown dtype '%s' (expected f32, f64, i32, u32, u8 or i64)", what, dtype);

    parse_shape(pl, group, what, t);
    parse_init(pl, group, what, t, index);
    pl->tensor_count = index + 1; /* declared: visible to later tensors, steps and outputs */
}

/* ---- steps -------------------------------------------------------------------------------- */

static int param_is_tensor(int32_t kind)
{
    return kind == CLOPS_PARAM_TENSOR_IN || kind == CLOPS_PARAM_TENSOR_OUT ||
           kind == CLOPS_PARAM_TENSOR_INOUT;
}

int param_kind_writes(int32_t kind)
{
    return kind == CLOPS_PARAM_TENSOR_OUT || kind == CLOPS_PARAM_TENSOR_INOUT;
}

static int enum_index(const char *const *values, const char *s)
{
    for (int i = 0; values != NULL && s != NULL && values[i] != NULL; i++)
        if (strcmp(values[i], s) == 0)
            return i;
    return -1;
}

static void parse_tensor_arg(struct pipeline *pl, const struct clops_param *p, config_setting_t *s,
                             const char *what, struct pl_value *v)
{
    v->tensor = get_tensor_ref(pl, s, what);
    if (v->tensor < 0)
        return;
    const struct pl_tensor *t = &pl->tensors[v->tensor];
    if (p->dtypes != 0 && t->dtype != CLOPS_DTYPE_INVALID &&
        !(p->dtypes & CLOPS_DTYPE_BIT(t->dtype))) {
        char accepted[64];
        host_dtype_mask_names(p->dtypes, accepted, sizeof accepted);
        report(pl, s, "%s: tensor '%s' is %s; this parameter takes %s", what, t->name,
               host_dtype_name(t->dtype), accepted);
    }
}

/* The value of `s` for parameter `p`, checked against the parameter's kind. */
static void parse_arg(struct pipeline *pl, const struct clops_param *p, config_setting_t *s,
                      const char *what, struct pl_value *v)
{
    v->given = 1;
    v->has_value = 1;
    int ok = 1;
    switch (p->kind) {
    case CLOPS_PARAM_TENSOR_IN:
    case CLOPS_PARAM_TENSOR_OUT:
    case CLOPS_PARAM_TENSOR_INOUT: parse_tensor_arg(pl, p, s, what, v); return;
    case CLOPS_PARAM_INT64:
        ok = is_integer(s);
        v->i = ok ? config_setting_get_int64(s) : 0;
        break;
    case CLOPS_PARAM_DOUBLE: ok = number_value(s, &v->d); break;
    case CLOPS_PARAM_ENUM:
        v->s = config_setting_get_string(s); /* NULL unless a string */
        v->i = enum_index(p->enum_values, v->s);
        if (v->s != NULL && v->i < 0) {
            char expected[256];
            host_join(expected, sizeof expected, ", ", p->enum_values);
            report(pl, s, "%s: '%s' is not one of: %s", what, v->s, expected);
            return;
        }
        ok = v->s != NULL;
        break;
    case CLOPS_PARAM_STRING:
        v->s = config_setting_get_string(s);
        ok = v->s != NULL;
        break;
    default: report(pl, s, "%s: parameter kind %d is unknown to this clops", what, p->kind); return;
    }
    static const char *const expected[] = {
        [CLOPS_PARAM_INT64] = "an integer",
        [CLOPS_PARAM_DOUBLE] = "a number",
        [CLOPS_PARAM_ENUM] = "a string in double quotes",
        [CLOPS_PARAM_STRING] = "a string in double quotes",
    };
    if (!ok)
        report(pl, s, "%s: must be %s", what, expected[p->kind]);
}

/* The descriptor's textual default, for the host's own use (flop counts, checks); the plugin
 * applies its defaults itself since only given arguments are passed to invoke. */
static void apply_default(const struct clops_param *p, struct pl_value *v)
{
    v->tensor = -1;
    if (p->default_value == NULL)
        return;
    v->has_value = 1;
    switch (p->kind) {
    case CLOPS_PARAM_INT64: v->i = strtoll(p->default_value, NULL, 0); break;
    case CLOPS_PARAM_DOUBLE: v->d = strtod(p->default_value, NULL); break;
    case CLOPS_PARAM_ENUM:
        v->i = enum_index(p->enum_values, p->default_value);
        v->s = p->default_value;
        break;
    case CLOPS_PARAM_STRING: v->s = p->default_value; break;
    default: break;
    }
}

/* A tensor an operator writes must not also be one of its inputs: the reference checks and
 * repeated runs restore it from a copy, which would silently change the input too. */
static void check_aliasing(struct pipeline *pl, const struct pl_step *step, config_setting_t *where,
                           const char *what)
{
    const struct clops_op *op = step->op;
    for (int32_t i = 0; i < op->param_count; i++) {
        if (!param_kind_writes(op->params[i].kind) || step->values[i].tensor < 0)
            continue;
        for (int32_t j = 0; j < op->param_count; j++) {
            if (j != i && param_is_tensor(op->params[j].kind) &&
                step->values[j].tensor == step->values[i].tensor)
                report(pl, where, "%s: tensor '%s' is passed as both '%s' and '%s'", what,
                       pl->tensors[step->values[i].tensor].name, op->params[i].name,
                       op->params[j].name);
        }
    }
}

static void parse_args(struct pipeline *pl, config_setting_t *group, const char *what,
                       struct pl_step *step)
{
    const struct clops_op *op = step->op;
    step->values = host_xcalloc((size_t)op->param_count, sizeof *step->values);
    for (int32_t i = 0; i < op->param_count; i++)
        apply_default(&op->params[i], &step->values[i]);

    config_setting_t *args = member(pl, group, "args", 0, what);
    if (args != NULL && !config_setting_is_group(args)) {
        report(pl, args, "%s: 'args' must be a group: args = { name = value; ... };", what);
        args = NULL;
    }
    for (int i = 0; args != NULL && i < config_setting_length(args); i++) {
        config_setting_t *s = config_setting_get_elem(args, (unsigned)i);
        char arg_what[160];
        snprintf(arg_what, sizeof arg_what, "%s: %s.%s", what, op->name, config_setting_name(s));
        int p = step_param_index(step, config_setting_name(s));
        if (p < 0) {
            report(pl, s, "%s: operator '%s' has no parameter '%s' (see 'clops ops %s')", what,
                   op->name, config_setting_name(s), op->name);
            continue;
        }
        parse_arg(pl, &op->params[p], s, arg_what, &step->values[p]);
    }
    for (int32_t i = 0; i < op->param_count; i++)
        if (!step->values[i].has_value)
            report(pl, group, "%s: %s needs argument '%s'", what, op->name, op->params[i].name);
    check_aliasing(pl, step, group, what);
}

static void parse_step(struct pipeline *pl, config_setting_t *group, const char *what, int index)
{
    struct pl_step *step = &pl->steps[index];
    static const char *const keys[] = {"op", "args", "repeat", NULL};
    check_keys(pl, group, what, keys);
    step->line = config_setting_source_line(group);

    int64_t repeat = 1;
    if (get_integer(pl, group, "repeat", 0, what, &repeat) && (repeat < 1 || repeat > 1000000))
        report(pl, config_setting_get_member(group, "repeat"),
               "%s: 'repeat' must be between 1 and 1000000", what);
    step->repeat = (int32_t)(repeat >= 1 && repeat <= 1000000 ? repeat : 1);

    const char *name = get_string(pl, group, "op", 1, what);
    if (name == NULL)
        return;
    step->op = pl->api->op_find(name);
    if (step->op == NULL) {
        report(pl, config_setting_get_member(group, "op"),
               "%s: unknown operator '%s' (see 'clops ops')", what, name);
        return;
    }
    parse_args(pl, group, what, step);
}

/* ---- checks and outputs ------------------------------------------------------------------- */

/* The dtype of the first tensor the step writes: what its checks compare. */
static int32_t written_dtype(const struct pipeline *pl, const struct pl_step *step)
{
    for (int32_t i = 0; step->op != NULL && i < step->op->param_count; i++)
        if (param_kind_writes(step->op->params[i].kind) && step->values[i].tensor >= 0)
            return pl->tensors[step->values[i].tensor].dtype;
    return CLOPS_F64;
}

static void parse_check_step(struct pipeline *pl, config_setting_t *group, const char *what,
                             struct pl_check *check)
{
    int64_t step = -1;
    if (!get_integer(pl, group, "step", 1, what, &step))
        return;
    if (step < 0 || step >= pl->step_count) {
        report(pl, config_setting_get_member(group, "step"),
               "%s: 'step' is %lld; the steps are numbered 0 to %d", what, (long long)step,
               pl->step_count - 1);
        return;
    }
    check->step = (int32_t)step;
    const struct clops_op *op = pl->steps[step].op;
    if (check->kind != NULL && op != NULL && strcmp(op->name, check->kind->op) != 0)
        report(pl, group, "%s: check '%s' verifies '%s' steps; step %lld runs '%s'", what,
               check->kind->name, check->kind->op, (long long)step, op->name);
}

static void parse_check(struct pipeline *pl, config_setting_t *group, const char *what, int index)
{
    struct pl_check *check = &pl->checks[index];
    static const char *const keys[] = {"kind", "step", "tolerance", NULL};
    check_keys(pl, group, what, keys);
    check->line = config_setting_source_line(group);
    check->step = -1;

    const char *kind = get_string(pl, group, "kind", 1, what);
    check->kind = check_kind_find(kind);
    if (kind != NULL && check->kind == NULL) {
        char kinds[256];
        check_kind_names(kinds, sizeof kinds);
        report(pl, config_setting_get_member(group, "kind"),
               "%s: unknown check kind '%s' (expected one of: %s)", what, kind, kinds);
    }
    parse_check_step(pl, group, what, check);

    config_setting_t *tolerance = member(pl, group, "tolerance", 0, what);
    if (tolerance == NULL)
        check->tolerance = check->step >= 0
                               ? check_default_tolerance(written_dtype(pl, &pl->steps[check->step]))
                               : 0.0;
    else if (!number_value(tolerance, &check->tolerance) || !(check->tolerance > 0.0))
        report(pl, tolerance, "%s: 'tolerance' must be a number > 0", what);
}

static void parse_output(struct pipeline *pl, config_setting_t *group, const char *what, int index)
{
    static const char *const keys[] = {"tensor", "file", NULL};
    struct pl_output *out = &pl->outputs[index];
    check_keys(pl, group, what, keys);
    out->line = config_setting_source_line(group);
    out->tensor = -1;
    config_setting_t *tensor = member(pl, group, "tensor", 1, what);
    if (tensor != NULL)
        out->tensor = get_tensor_ref(pl, tensor, what);
    out->file = get_string(pl, group, "file", 1, what);
    if (out->file != NULL && out->file[0] == '\0') {
        report(pl, group, "%s: 'file' is empty", what);
        out->file = NULL;
    }
    for (int i = 0; out->file != NULL && i < index; i++)
        if (pl->outputs[i].file != NULL && strcmp(pl->outputs[i].file, out->file) == 0)
            report(pl, group, "%s: '%s' is already written by outputs[%d]", what, out->file, i);
}

/* ---- the file ----------------------------------------------------------------------------- */

/* `pool` is relative to the pipeline's directory, so a pipeline runs from any directory. */
static void parse_pool(struct pipeline *pl)
{
    const char *pool = get_string(pl, config_root_setting(&pl->config), "pool", 0, "pipeline");
    if (pool == NULL)
        return;
    if (pool[0] == '/') {
        pl->pool_path = host_xstrdup(pool);
        return;
    }
    char *copy = host_xstrdup(pl->path);
    if (asprintf(&pl->pool_path, "%s/%s", dirname(copy), pool) < 0)
        pl->pool_path = host_xstrdup(pool);
    free(copy);
}

int pipeline_load(struct pipeline *pl, const char *path, const struct clops_api *api)
{
    static const char *const keys[] = {"pool", "tensors", "steps", "checks", "outputs", NULL};
    memset(pl, 0, sizeof *pl);
    pl->path = path;
    pl->api = api;
    config_init(&pl->config);
    if (config_read_file(&pl->config, path) != CONFIG_TRUE) {
        /* libconfig leaves fopen()'s errno in place for I/O errors. */
        if (config_error_type(&pl->config) == CONFIG_ERR_FILE_IO)
            fprintf(stderr, "%s: %s\n", path, strerror(errno));
        else
            fprintf(stderr, "%s:%d: %s\n", path, config_error_line(&pl->config),
                    config_error_text(&pl->config));
        return ++pl->errors;
    }
    config_setting_t *root = config_root_setting(&pl->config);
    check_keys(pl, root, "pipeline", keys);
    parse_pool(pl);
    int declared = 0;
    parse_list(pl, "tensors", 0, (void **)&pl->tensors, sizeof *pl->tensors, &declared,
               parse_tensor);
    pl->tensor_count = declared; /* with those that failed to parse, for pipeline_free() */
    parse_list(pl, "steps", 1, (void **)&pl->steps, sizeof *pl->steps, &pl->step_count, parse_step);
    if (pl->step_count == 0 && config_setting_get_member(root, "steps") != NULL)
        report(pl, config_setting_get_member(root, "steps"),
               "'steps' is empty: a pipeline runs at least one step");
    parse_list(pl, "checks", 0, (void **)&pl->checks, sizeof *pl->checks, &pl->check_count,
               parse_check);
    parse_list(pl, "outputs", 0, (void **)&pl->outputs, sizeof *pl->outputs, &pl->output_count,
               parse_output);
    return pl->errors;
}

void pipeline_free(struct pipeline *pl)
{
    for (int i = 0; pl->tensors != NULL && i < pl->tensor_count; i++)
        free(pl->tensors[i].data);
    for (int i = 0; pl->steps != NULL && i < pl->step_count; i++) {
        struct pl_step *step = &pl->steps[i];
        for (int32_t p = 0; step->before != NULL && p < step->op->param_count; p++)
            free(step->before[p]);
        free(step->before);
        free(step->values);
    }
    free(pl->tensors);
    free(pl->steps);
    free(pl->checks);
    free(pl->outputs);
    free(pl->pool_path);
    config_destroy(&pl->config);
}

/* ---- accessors ---------------------------------------------------------------------------- */

int step_param_index(const struct pl_step *step, const char *name)
{
    for (int32_t i = 0; step->op != NULL && i < step->op->param_count; i++)
        if (strcmp(step->op->params[i].name, name) == 0)
            return i;
    return -1;
}

const struct pl_value *step_value(const struct pl_step *step, const char *name)
{
    int i = step_param_index(step, name);
    return i >= 0 ? &step->values[i] : NULL;
}

const struct pl_tensor *step_tensor(const struct pipeline *pl, const struct pl_step *step,
                                    const char *name)
{
    const struct pl_value *v = step_value(step, name);
    return v != NULL && v->tensor >= 0 ? &pl->tensors[v->tensor] : NULL;
}
