/* pipeline.c — reading and validating a pipeline file. Everything that can be checked without
 * a device is checked here, and every problem is reported (file:line), before anything runs. */
#include "pipeline.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_literals.h"
#include "formats.h"
#include "host_os.h"
#include "names.h"
#include "pipeline_set.h"
#include "util.h"

/* Host tensors larger than this are surely a typo in `shape` (and would overflow sizes). */
#define MAX_TENSOR_BYTES (INT64_C(1) << 40)

/* In a sweep, the run's index and values, once, before its first problem. */
static void head(struct pipeline *pl)
{
    if (pl->headed || pl->run->label[0] == '\0')
        return;
    fprintf(stderr, "clops: %s, run %lld (%s):\n", pl->path, (long long)pl->run->index,
            pl->run->label);
    pl->headed = 1;
}

/* " (where ${n} = 64, ${2*n} = 128)": what the `${...}` on `line` became, so that a problem
 * with a value substituted there names the param it came from. */
static void print_substitutions(const struct pipeline *pl, int line, int with_keys)
{
    const struct pl_template *t = &pl->source->text;
    int printed = 0;
    for (int i = 0; line > 0 && pl->ref_texts != NULL && i < t->ref_count; i++) {
        if (t->refs[i].line != line || pl->ref_texts[i] == NULL)
            continue;
        int repeated = 0;
        for (int j = 0; j < i; j++)
            repeated |= t->refs[j].line == line && strcmp(t->refs[j].expr, t->refs[i].expr) == 0;
        if (repeated)
            continue;
        /* Inside a string the text is what was inserted; show it as the value it was. */
        fprintf(stderr, "%s%s%s${%s} = %s%s%s", printed ? ", " : " (where ",
                with_keys ? t->refs[i].key : "", with_keys ? ": " : "", t->refs[i].expr,
                t->refs[i].in_string ? "\"" : "", pl->ref_texts[i],
                t->refs[i].in_string ? "\"" : "");
        printed = 1;
    }
    if (printed)
        fputc(')', stderr);
}

/* `with_keys`: the message does not name the setting (libconfig's do not), the notes do. */
static void HOST_PRINTF(4, 0)
    report_va(struct pipeline *pl, int line, int with_keys, const char *fmt, va_list ap)
{
    pl->errors++;
    if (pl->silent)
        return;
    head(pl);
    pipeline_print_place(pl->path, line);
    vfprintf(stderr, fmt, ap);
    print_substitutions(pl, line, with_keys);
    fputc('\n', stderr);
}

static void HOST_PRINTF(4, 5)
    report_line(struct pipeline *pl, int line, int with_keys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report_va(pl, line, with_keys, fmt, ap);
    va_end(ap);
}

static void HOST_PRINTF(3, 4)
    report(struct pipeline *pl, const config_setting_t *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report_va(pl, where != NULL ? config_setting_source_line(where) : 0, 0, fmt, ap);
    va_end(ap);
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

/* `shape` into t->rank, t->shape, t->elements; 0 when absent (reported when `required`). */
static int parse_shape(struct pipeline *pl, config_setting_t *group, const char *what,
                       struct pl_tensor *t, int required)
{
    config_setting_t *s = member(pl, group, "shape", required, what);
    if (s == NULL)
        return 0;
    int rank =
        config_setting_is_array(s) || config_setting_is_list(s) ? config_setting_length(s) : -1;
    if (rank < 1 || rank > CLOPS_MAX_RANK) {
        report(pl, s, "%s: 'shape' must be an array of 1 to %d extents, e.g. [300, 200]", what,
               CLOPS_MAX_RANK);
        return 0;
    }
    int64_t limit = MAX_TENSOR_BYTES / (t->dtype ? host_dtype_size(t->dtype) : 1);
    t->rank = rank;
    t->elements = 1;
    for (int i = 0; i < rank; i++) {
        config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        int64_t extent = is_integer(e) ? config_setting_get_int64(e) : -1;
        if (extent < 0) {
            report(pl, s, "%s: shape[%d] must be an integer >= 0", what, i);
            return 0;
        }
        if (extent > 0 && t->elements > limit / extent) {
            report(pl, s, "%s: shape is larger than %lld bytes", what, (long long)MAX_TENSOR_BYTES);
            return 0;
        }
        t->shape[i] = extent;
        t->elements *= extent;
    }
    return 1;
}

/* "300x200" into `out`. */
static void shape_text(const int64_t *shape, int32_t rank, char *out, size_t size)
{
    out[0] = '\0';
    for (int32_t i = 0; i < rank; i++) {
        char extent[24];
        snprintf(extent, sizeof extent, "%lld", (long long)shape[i]);
        host_append(out, size, "x", extent);
    }
}

/* A key that only some generators take: reported when given to another. */
static void reject_unless(struct pipeline *pl, config_setting_t *group, const char *what,
                          const char *key, int allowed, const char *owner)
{
    config_setting_t *s = config_setting_get_member(group, key);
    if (s != NULL && !allowed)
        report(pl, s, "%s: '%s' applies only to %s", what, key, owner);
}

static void parse_generator(struct pipeline *pl, config_setting_t *group, const char *what,
                            struct pl_tensor *t, int index)
{
    static const char *const inits[] = {"zeros", "random", "identity", "hilbert", "linspace", NULL};
    const char *init = get_string(pl, group, "init", 0, what);
    t->init = INIT_ZEROS;
    for (int i = 0; init != NULL && inits[i] != NULL; i++)
        if (strcmp(init, inits[i]) == 0)
            t->init = i;
    if (init != NULL && !in_list(inits, init))
        report(pl, config_setting_get_member(group, "init"),
               "%s: unknown init '%s' (expected zeros, random, identity, hilbert or linspace)",
               what, init);
    if ((t->init == INIT_IDENTITY || t->init == INIT_HILBERT) && t->rank != 2)
        report(pl, group, "%s: init \"%s\" needs a matrix (a shape of 2 extents)", what,
               inits[t->init]);
    if (t->init == INIT_HILBERT && t->dtype != CLOPS_F32 && t->dtype != CLOPS_F64)
        report(pl, group, "%s: init \"hilbert\" needs dtype f32 or f64", what);

    /* Distinct default seeds: two random tensors without seeds are not equal. */
    int64_t seed = index + 1;
    get_integer(pl, group, "seed", 0, what, &seed);
    t->seed = (uint64_t)seed;
    reject_unless(pl, group, what, "seed", t->init == INIT_RANDOM, "init = \"random\"");
    int linspace = t->init == INIT_LINSPACE;
    for (int i = 0; i < 2; i++) {
        const char *key = i == 0 ? "start" : "stop";
        config_setting_t *s = member(pl, group, key, linspace, what);
        reject_unless(pl, group, what, key, linspace, "init = \"linspace\"");
        if (s != NULL && linspace && !number_value(s, i == 0 ? &t->start : &t->stop))
            report(pl, s, "%s: '%s' must be a number", what, key);
    }
}

/* The pipeline's directory joined with `file`, unless `file` is absolute. */
static char *relative_to_pipeline(const struct pipeline *pl, const char *file)
{
    if (host_path_is_absolute(file))
        return host_xstrdup(file);
    char *copy = host_xstrdup(pl->path), *path = NULL;
    if (asprintf(&path, "%s/%s", dirname(copy), file) < 0)
        path = host_xstrdup(file);
    free(copy);
    return path;
}

/* The file's shape and dtype against those the entry gives (when it gives them). */
static void check_file_fits(struct pipeline *pl, config_setting_t *group, const char *what,
                            const struct pl_tensor *t, const struct fmt_tensor *f, int has_shape)
{
    char want[96], got[96];
    shape_text(t->shape, t->rank, want, sizeof want);
    shape_text(f->shape, f->rank, got, sizeof got);
    if (has_shape && strcmp(want, got) != 0)
        report(pl, config_setting_get_member(group, "shape"), "%s: 'shape' is %s but %s holds %s",
               what, want, t->file, got);
    if (t->dtype != CLOPS_DTYPE_INVALID && t->dtype != f->dtype)
        report(pl, config_setting_get_member(group, "dtype"), "%s: 'dtype' is %s but %s holds %s",
               what, host_dtype_name(t->dtype), t->file, host_dtype_name(f->dtype));
}

/* What a file tensor with a declared 'shape' may allocate: a file whose data would not fit that
 * shape is refused before it is read (a few bytes of .mtx can declare gigabytes). 8 bytes an
 * element whatever the dtype, so that a wrong dtype gets its own message. NULL when the shape
 * itself is over FMT_MAX_BYTES (the reader refuses it). */
static const struct fmt_read_limit *
declared_limit(const struct pl_tensor *t, struct fmt_read_limit *limit, char *reason, size_t size)
{
    int64_t bytes = 8;
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->shape[i] > 0 && bytes > FMT_MAX_BYTES / t->shape[i])
            return NULL;
        bytes *= t->shape[i];
    }
    char want[96];
    shape_text(t->shape, t->rank, want, sizeof want);
    snprintf(reason, size, "what its declared 'shape' %s can hold", want);
    limit->max_bytes = bytes;
    limit->reason = reason;
    return limit;
}

/* A tensor read from a file, now: a bad file is a problem of the pipeline, found before
 * anything runs. npy files carry their dtype and shape; mtx files their shape (the dtype is
 * `dtype`, default f64); raw files neither. */
static void read_file_tensor(struct pipeline *pl, config_setting_t *group, const char *what,
                             struct pl_tensor *t, int has_shape)
{
    enum fmt_kind kind = fmt_kind_from_path(t->file);
    config_setting_t *where = config_setting_get_member(group, "file");
    if (kind != FMT_NPY && kind != FMT_MTX && kind != FMT_RAW) {
        report(pl, where, "%s: cannot read '%s': tensors are read from .npy, .mtx, .bin or .raw",
               what, t->file);
        return;
    }
    if (kind == FMT_RAW && (!has_shape || t->dtype == CLOPS_DTYPE_INVALID)) {
        report(pl, group, "%s: a raw file needs 'shape' and 'dtype'", what);
        return;
    }
    int32_t dtype = t->dtype;
    if (kind == FMT_MTX && dtype == CLOPS_DTYPE_INVALID)
        dtype = CLOPS_F64;
    t->file_path = relative_to_pipeline(pl, t->file);
    static const struct fmt_read_limit undeclared = {
        FMT_READ_MAX_BYTES, "the limit for a file tensor without a declared 'shape' (4 GiB); "
                            "declare its 'shape' to read a larger one"};
    char reason[160];
    struct fmt_read_limit limit;
    const struct fmt_read_limit *declared =
        has_shape ? declared_limit(t, &limit, reason, sizeof reason) : NULL;
    if (declared == NULL)
        declared = &undeclared;
    struct fmt_tensor f = {0};
    char err[512];
    if (fmt_read_limited(t->file_path, kind == FMT_NPY ? 0 : dtype, t->rank, t->shape, declared, &f,
                         err, sizeof err) != 0) {
        report(pl, where, "%s: %s", what, err); /* the reader's message names the file */
        return;
    }
    check_file_fits(pl, group, what, t, &f, has_shape);
    t->data = f.data;
    t->dtype = f.dtype;
    t->rank = f.rank;
    t->elements = 1;
    for (int32_t i = 0; i < f.rank; i++) {
        t->shape[i] = f.shape[i];
        t->elements *= f.shape[i];
    }
}

static void parse_tensor(struct pipeline *pl, config_setting_t *group, const char *what, int index)
{
    static const char *const keys[] = {"name",  "dtype", "shape", "init", "seed",
                                       "start", "stop",  "file",  NULL};
    struct pl_tensor *t = &pl->tensors[index];
    check_keys(pl, group, what, keys);
    t->line = config_setting_source_line(group);

    const char *name = get_string(pl, group, "name", 1, what);
    if (name != NULL && name[0] == '\0')
        report(pl, group, "%s: 'name' is empty", what);
    else if (name != NULL && find_tensor(pl, name) >= 0)
        report(pl, group, "%s: a tensor named '%s' is already declared", what, name);
    else
        t->name = name;

    t->file = get_string(pl, group, "file", 0, what);
    const char *dtype = get_string(pl, group, "dtype", t->file == NULL, what);
    t->dtype = host_dtype_from_name(dtype);
    if (dtype != NULL && t->dtype == CLOPS_DTYPE_INVALID)
        report(pl, config_setting_get_member(group, "dtype"),
               "%s: unknown dtype '%s' (expected f32, f64, i32, u32, u8 or i64)", what, dtype);

    int has_shape = parse_shape(pl, group, what, t, t->file == NULL);
    if (t->file == NULL) {
        parse_generator(pl, group, what, t, index);
    } else if (config_setting_get_member(group, "init") != NULL) {
        report(pl, config_setting_get_member(group, "init"),
               "%s: a tensor has either 'file' or 'init', not both", what);
    } else {
        t->init = INIT_FILE;
        for (int i = 0; i < 3; i++)
            reject_unless(pl, group, what, (const char *const[]){"seed", "start", "stop"}[i], 0,
                          "generated tensors (init)");
        if (t->dtype != CLOPS_DTYPE_INVALID || dtype == NULL)
            read_file_tensor(pl, group, what, t, has_shape);
    }
    t->view = pl_tensor_view(t, NULL);
    pl->tensor_count = index + 1; /* declared: visible to later tensors, steps and outputs */
}

/* ---- steps -------------------------------------------------------------------------------- */

static int param_is_tensor(int32_t kind)
{
    return kind == CLOPS_PARAM_TENSOR_IN || kind == CLOPS_PARAM_TENSOR_OUT ||
           kind == CLOPS_PARAM_TENSOR_INOUT;
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
    struct pl_tensor *t = &pl->tensors[v->tensor];
    t->on_device = 1;
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

/* Whether every tensor the step passes was declared in full (a tensor whose dtype or shape was
 * refused has had its own message; the operator's would only repeat it). */
static int tensors_declared(const struct pipeline *pl, const struct pl_step *step)
{
    for (int32_t p = 0; p < step->op->param_count; p++) {
        const struct pl_tensor *t =
            step->values[p].tensor >= 0 ? &pl->tensors[step->values[p].tensor] : NULL;
        if (t != NULL && (t->dtype == CLOPS_DTYPE_INVALID || t->rank == 0))
            return 0;
    }
    return 1;
}

/* The operator's own checks of the step (its shapes and dtypes, its options), asked of the plugin
 * with the tensors described, before any pool exists: this CLI keeps no copy of an operator's
 * rules. The message is the one a run would give, less its leading "op: ". A plugin older than
 * ABI 1.2 cannot be asked; its run refuses the same call. */
static void check_call(struct pipeline *pl, config_setting_t *group, const char *what,
                       const struct pl_step *step)
{
    const struct clops_api *api = pl->api;
    if (!CLOPS_API_HAS(api, check_sized))
        return;
    struct clops_arg *args = host_xcalloc((size_t)step->op->param_count, sizeof *args);
    int32_t count = step_args(pl, step, args);
    int32_t status = api->check_sized(NULL, step->op, args, count, sizeof *args, NULL,
                                      sizeof(struct clops_output_spec), 0, NULL);
    free(args);
    if (status == CLOPS_OK)
        return;
    const char *msg = api->last_error();
    size_t name = strlen(step->op->name);
    if (strncmp(msg, step->op->name, name) == 0 && strncmp(msg + name, ": ", 2) == 0)
        msg += name + 2;
    report(pl, group, "%s (%s): %s", what, step->op->name, msg);
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
    const struct clops_op *op = pl->api->op_find(name);
    step->op = op;
    if (op == NULL) {
        report(pl, config_setting_get_member(group, "op"),
               "%s: unknown operator '%s' (see 'clops ops')", what, name);
        return;
    }
    int errors = pl->errors;
    parse_args(pl, group, what, step);
    /* The plugin is asked only about arguments that are all well-formed. */
    if (pl->errors == errors && tensors_declared(pl, step))
        check_call(pl, group, what, step);
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
    if (check->kind != NULL && op != NULL && !check_kind_applies(check->kind, op->name)) {
        char ops[64] = "";
        for (int i = 0; i < 2 && check->kind->ops[i] != NULL; i++)
            host_append(ops, sizeof ops, " or ", check->kind->ops[i]);
        report(pl, group, "%s: check '%s' verifies '%s' steps; step %lld runs '%s'", what,
               check->kind->name, ops, (long long)step, op->name);
    }
}

static void parse_tolerance(struct pipeline *pl, config_setting_t *group, const char *what,
                            struct pl_check *check)
{
    config_setting_t *tolerance = member(pl, group, "tolerance", 0, what);
    if (check->kind != NULL && check->kind->exact) {
        check->tolerance = 0.0;
        if (tolerance != NULL)
            report(pl, tolerance, "%s: '%s' is exact: it takes no 'tolerance'", what,
                   check->kind->name);
    } else if (tolerance != NULL) {
        if (!number_value(tolerance, &check->tolerance) || !(check->tolerance > 0.0))
            report(pl, tolerance, "%s: 'tolerance' must be a number > 0", what);
    } else if (check->kind != NULL && check->kind->tolerance > 0.0) {
        check->tolerance = check->kind->tolerance;
    } else if (check->step >= 0) {
        check->tolerance = check_default_tolerance(written_dtype(pl, &pl->steps[check->step]));
    }
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
    parse_tolerance(pl, group, what, check);
}

/* Whether the tensor fits the file format: an image for PNG, a matrix or vector for the text
 * formats. Found now rather than after every step has run. */
static const char *format_refuses(enum fmt_kind kind, const struct pl_tensor *t)
{
    switch (kind) {
    case FMT_PNG:
        if (fmt_png_unavailable != NULL)
            return fmt_png_unavailable;
        if (t->elements == 0)
            return "PNG needs at least one pixel";
        if ((t->dtype == CLOPS_U8 &&
             (t->rank == 2 || (t->rank == 3 && (t->shape[2] == 3 || t->shape[2] == 4)))) ||
            (t->dtype == CLOPS_U32 && t->rank == 2))
            return NULL;
        return "PNG takes u8 H x W (gray), H x W x 3 (RGB), H x W x 4 (RGBA) or u32 H x W "
               "(RGBA words)";
    case FMT_MTX: return t->rank <= 2 ? NULL : "Matrix Market takes 1 or 2 axes";
    case FMT_CSV:
    case FMT_NPY:
    case FMT_RAW: return NULL;
    default:
        return "unknown format; the file name must end in .npy, .mtx, .csv, .png, .bin or .raw";
    }
}

/* The format of the name the run writes, not of `file`: a sweep's values can change its
 * extension (".npy" becomes ".npy-name=", which no writer takes), and the writer goes by the
 * name it is given, after every step has run. */
static void check_output_format(struct pipeline *pl, config_setting_t *group, const char *what,
                                struct pl_output *out)
{
    out->format = fmt_kind_from_path(out->name);
    const char *why = out->tensor >= 0 ? format_refuses(out->format, &pl->tensors[out->tensor])
                      : out->format == FMT_UNKNOWN ? format_refuses(FMT_UNKNOWN, NULL)
                                                   : NULL;
    if (why != NULL)
        report(pl, config_setting_get_member(group, "file"), "%s: cannot write '%s': %s", what,
               out->name, why);
}

/* An output's name must be UTF-8: the manifests and JSON documents that record it can carry
 * nothing else, and gather could never find a name they changed. Two outputs must not name one
 * file ("x.npy", "./x.npy", "sub/../x.npy"): the second would replace the first, and a shard's
 * manifest list both. */
static void check_output_name(struct pipeline *pl, config_setting_t *group, const char *what,
                              int index)
{
    const struct pl_output *out = &pl->outputs[index];
    const config_setting_t *file = config_setting_get_member(group, "file");
    long bad = name_utf8_error(out->name);
    if (bad >= 0) {
        char *shown = name_escaped(out->name);
        report(pl, file,
               "%s: '%s' is not UTF-8 (byte %ld is 0x%02x); output names must be UTF-8, as the "
               "JSON documents and shard manifests that record them are",
               what, shown, bad, (unsigned char)out->name[bad]);
        free(shown);
        return;
    }
    /* The first output of the same file only: a third spelling is not also the second's. */
    char *normal = name_normalized(out->name);
    int clash = 0;
    for (int i = 0; i < index && !clash; i++) {
        char *other = pl->outputs[i].name != NULL ? name_normalized(pl->outputs[i].name) : NULL;
        clash = other != NULL && strcmp(other, normal) == 0;
        if (clash)
            report(pl, file,
                   "%s: '%s' is the file outputs[%d] writes ('%s', %s:%d): each output needs a "
                   "file of its own",
                   what, out->name, i, pl->outputs[i].name, pl->path, pl->outputs[i].line);
        free(other);
    }
    free(normal);
    if (pl->source->outputs_under_dir && !name_stays_under(out->name))
        report(pl, file,
               "%s: '%s' is not under the output directory: a shard's outputs must be, since its "
               "manifest lists them relative to it and gather reads only there",
               what, out->name);
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
    if (out->file == NULL)
        return;
    out->name =
        sweep_output_name(&pl->source->sweep, &pl->source->params, pl->run->values, out->file);
    check_output_format(pl, group, what, out);
    check_output_name(pl, group, what, index);
}

/* ---- the file ----------------------------------------------------------------------------- */

/* `pool` is relative to the pipeline's directory, so a pipeline runs from any directory. */
static void parse_pool(struct pipeline *pl)
{
    const char *pool = get_string(pl, config_root_setting(&pl->config), "pool", 0, "pipeline");
    if (pool == NULL)
        return;
    pl->pool_path = relative_to_pipeline(pl, pool);
}

/* A --set that cannot be applied: a usage error, not the file's. */
static void HOST_PRINTF(3, 4)
    set_failed(struct pipeline *pl, const char *assignment, const char *fmt, ...)
{
    pl->bad_set = 1;
    pl->errors++;
    if (pl->silent)
        return;
    head(pl);
    va_list ap;
    va_start(ap, fmt);
    pipeline_print_set_error(assignment, fmt, ap);
    va_end(ap);
}

struct set_context {
    struct pipeline *pl;
    const struct pl_set *set;
};

static void set_problem(void *ctx, const struct pl_ref *ref, const char *problem)
{
    struct set_context *c = ctx;
    set_failed(c->pl, c->set->assignment, "${%s}: %s", ref->shown, problem);
}

/* The --set overrides other than params and the sweep, before anything is parsed: they are as if
 * written in the file, their `${...}` replaced by the run's values. */
static void apply_sets(struct pipeline *pl)
{
    const struct pl_source *src = pl->source;
    for (int i = 0; i < src->set_count; i++) {
        const struct pl_set *set = &src->sets[i];
        struct set_context ctx = {pl, set};
        char **texts = NULL;
        char *value =
            template_expand(&set->value, &src->params, pl->run->values, &texts, set_problem, &ctx);
        template_texts_free(texts, set->value.ref_count);
        char *assignment = NULL, err[256];
        if (value != NULL &&
            asprintf(&assignment, "%.*s=%s", (int)set->key_len, set->assignment, value) < 0)
            assignment = NULL;
        if (assignment != NULL && pipeline_apply_set(&pl->config, assignment, err, sizeof err) != 0)
            set_failed(pl, set->assignment, "%s", err);
        free(assignment);
        free(value);
    }
}

static void expand_problem_reported(void *ctx, const struct pl_ref *ref, const char *problem)
{
    report_line(ctx, ref->line, 0, "%s%s${%s}: %s", ref->key, ref->key[0] != '\0' ? ": " : "",
                ref->shown, problem);
}

static void wide_literal_reported(void *ctx, const struct wide_literal *literal)
{
    report_line(ctx, literal->line, 1, "%s", literal->message);
}

/* The run's text: the source's with every `${...}` replaced, parsed by libconfig; a literal
 * libconfig would wrap is reported instead (a ${...} gives L where a value needs it). */
static int parse_run_text(struct pipeline *pl)
{
    const struct pl_source *src = pl->source;
    char *text = template_expand(&src->text, &src->params, pl->run->values, &pl->ref_texts,
                                 expand_problem_reported, pl);
    if (text == NULL)
        return -1;
    if (literal_scan_all(text, wide_literal_reported, pl) > 0) {
        free(text);
        return -1;
    }
    int read_ok = config_read_string(&pl->config, text) == CONFIG_TRUE;
    free(text);
    if (!read_ok)
        report_line(pl, config_error_line(&pl->config), 1, "%s", config_error_text(&pl->config));
    return read_ok ? 0 : -1;
}

int pipeline_load(struct pipeline *pl, const struct pl_source *src, const struct pl_run *run,
                  const struct clops_api *api, int silent)
{
    static const char *const keys[] = {"params", "sweep",  "pool",    "tensors",
                                       "steps",  "checks", "outputs", NULL};
    memset(pl, 0, sizeof *pl);
    pl->path = src->path;
    pl->source = src;
    pl->run = run;
    pl->silent = silent;
    pl->api = api;
    config_init(&pl->config);
    if (parse_run_text(pl) != 0)
        return pl->errors;
    apply_sets(pl);
    if (pl->bad_set)
        return pl->errors;
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
    for (int i = 0; pl->outputs != NULL && i < pl->output_count; i++)
        free(pl->outputs[i].name);
    template_texts_free(pl->ref_texts, pl->source->text.ref_count);
    for (int i = 0; pl->tensors != NULL && i < pl->tensor_count; i++) {
        free(pl->tensors[i].data);
        free(pl->tensors[i].file_path);
    }
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
