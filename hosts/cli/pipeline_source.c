/* pipeline_source.c — reading a pipeline file's text, its `params` and `sweep`, and the --set
 * overrides of them (pipeline_source.h). libconfig reads `params` and `sweep` from a copy of
 * the text in which every other setting is blanked out: the `${...}` elsewhere are no syntax
 * of its own, and the two sections keep their line numbers. */
#include "pipeline_source.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_literals.h"
#include "formats.h"
#include "pipeline_set.h"
#include "util.h"

/* A pipeline is a short text; anything this large is the wrong file. */
#define MAX_PIPELINE_BYTES (INT64_C(16) << 20)

void pipeline_print_place(const char *path, int line)
{
    if (line > 0)
        fprintf(stderr, "%s:%d: ", path, line);
    else
        fprintf(stderr, "%s: ", path);
}

void pipeline_print_set_error(const char *assignment, const char *fmt, va_list ap)
{
    /* A hostile 100 KB --set is not echoed whole: its start names it well enough. */
    enum { SHOWN = 80 };
    fprintf(stderr, "clops: --set %.*s%s: ", SHOWN, assignment,
            strlen(assignment) > SHOWN ? "..." : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

/* "path:line: key: message" (a setting from --set has no line). */
static void HOST_PRINTF(4, 5)
    report(struct pl_source *src, int line, const char *key, const char *fmt, ...)
{
    pipeline_print_place(src->path, line);
    if (key != NULL)
        fprintf(stderr, "%s: ", key);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    src->errors++;
}

static void HOST_PRINTF(3, 4)
    set_error(struct pl_source *src, const char *assignment, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pipeline_print_set_error(assignment, fmt, ap);
    va_end(ap);
    src->bad_set = 1;
    src->errors++;
}

/* The whole file; opened by fmt_open_input, which refuses what would block (a FIFO). */
static char *read_text(struct pl_source *src, size_t *size)
{
    char err[512];
    int64_t bytes = 0;
    FILE *f = fmt_open_input(src->path, &bytes, err, sizeof err);
    if (f == NULL) {
        fprintf(stderr, "%s\n", err);
        src->errors++;
        return NULL;
    }
    if (bytes > MAX_PIPELINE_BYTES) {
        fclose(f);
        report(src, 0, NULL, "%lld bytes: larger than a pipeline file can be (%lld)",
               (long long)bytes, (long long)MAX_PIPELINE_BYTES);
        return NULL;
    }
    char *text = host_xmalloc((size_t)bytes + 1);
    *size = fread(text, 1, (size_t)bytes, f);
    int failed = ferror(f);
    fclose(f);
    text[*size] = '\0';
    if (failed) {
        free(text);
        report(src, 0, NULL, "read error");
        return NULL;
    }
    return text;
}

/* ---- params ------------------------------------------------------------------------------- */

/* Names that arithmetic can use: libconfig's also allow '-' and '*'. */
static int is_param_name(const char *name)
{
    if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
          name[0] == '_'))
        return 0;
    for (const char *c = name; *c != '\0'; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_'))
            return 0;
    return 1;
}

/* The file's top-level group `name`; NULL when there is none, or when it is something else
 * (reported, with `example` of what it must be). */
static config_setting_t *top_group(struct pl_source *src, config_t *config, const char *name,
                                   const char *example)
{
    config_setting_t *group = config_setting_get_member(config_root_setting(config), name);
    if (group == NULL || config_setting_is_group(group))
        return group;
    report(src, config_setting_source_line(group), name, "must be a group: %s", example);
    return NULL;
}

static void read_params(struct pl_source *src, config_t *config)
{
    config_setting_t *group =
        top_group(src, config, "params", "params = { n = 256; tol = 1e-10; };");
    if (group == NULL)
        return;
    int count = config_setting_length(group);
    src->params.items = host_xcalloc((size_t)count + 1, sizeof *src->params.items);
    for (int i = 0; i < count; i++) {
        config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        char key[160];
        snprintf(key, sizeof key, "params.%s", config_setting_name(s));
        struct param_value v;
        if (!is_param_name(config_setting_name(s))) {
            report(src, config_setting_source_line(s), key,
                   "a param's name is letters, digits and '_', not starting with a digit");
        } else if (param_value_from_setting(s, &v) != 0) {
            report(src, config_setting_source_line(s), key,
                   "must be an int, a float, a string in double quotes, or true or false");
        } else {
            struct param *p = &src->params.items[src->params.count++];
            p->name = host_xstrdup(config_setting_name(s));
            p->line = config_setting_source_line(s);
            p->value = v;
        }
    }
}

/* "'n' is declared an int (demo.cfg:40)": how messages name a param. */
static void param_described(const struct pl_source *src, int param, char *out, size_t size)
{
    const struct param *p = &src->params.items[param];
    snprintf(out, size, "'%s' is declared %s (%s:%d)", p->name, param_type_name(p->value.type),
             src->path, p->line);
}

/* "1.5 is a float, but 'n' is declared an int (demo.cfg:40)". */
static void type_mismatch(const struct pl_source *src, int param, const struct param_value *v,
                          char *out, size_t size)
{
    char declared[256];
    param_described(src, param, declared, sizeof declared);
    char *text = param_value_text(v, 1);
    snprintf(out, size, "%s is %s, but %s", text, param_type_name(v->type), declared);
    free(text);
}

/* ---- sweep -------------------------------------------------------------------------------- */

/* A value for the swept param, converted to its declared type: 0, or -1 (reported). */
static int sweep_value(struct pl_source *src, const config_setting_t *s, int param, const char *key,
                       struct param_value *v)
{
    char why[512];
    if (param_value_from_setting(s, v) != 0) {
        param_described(src, param, why, sizeof why);
        report(src, config_setting_source_line(s), key, "must be one value: %s", why);
        return -1;
    }
    if (param_value_convert(v, src->params.items[param].value.type) != 0) {
        type_mismatch(src, param, v, why, sizeof why);
        report(src, config_setting_source_line(s), key, "%s", why);
        param_value_free(v);
        return -1;
    }
    return 0;
}

static void read_list(struct pl_source *src, const config_setting_t *list, const char *key,
                      struct sweep_axis *axis)
{
    axis->count = config_setting_length(list);
    if (axis->count == 0) {
        report(src, axis->line, key, "no values: a sweep runs each listed value");
        return;
    }
    axis->list = host_xcalloc((size_t)axis->count, sizeof *axis->list);
    for (int64_t k = 0; k < axis->count; k++) {
        char element[200];
        snprintf(element, sizeof element, "%s[%lld]", key, (long long)k);
        struct param_value *v = &axis->list[k];
        if (sweep_value(src, config_setting_get_elem(list, (unsigned)k), axis->param, element, v) !=
            0) {
            v->type = -1; /* like no other value; holds no string */
            continue;
        }
        /* Two values with the same name piece would write each other's files. */
        char piece[256], earlier[256];
        sweep_name_piece(v, piece, sizeof piece);
        for (int64_t j = 0; j < k; j++) {
            if (axis->list[j].type != v->type)
                continue;
            sweep_name_piece(&axis->list[j], earlier, sizeof earlier);
            if (strcmp(piece, earlier) == 0) {
                report(src, axis->line, element,
                       "gives the same file names as %s[%lld] ('%s'): each value is run once", key,
                       (long long)j, piece);
                break;
            }
        }
    }
}

/* The number of values of an int range, or -1 when it has none or too many (reported). */
static int64_t int_range_count(struct pl_source *src, const char *key, int line, int64_t from,
                               int64_t to, int64_t step)
{
    if ((to > from && step < 0) || (to < from && step > 0)) {
        report(src, line, key, "from %lld to %lld by %lld gives no values", (long long)from,
               (long long)to, (long long)step);
        return -1;
    }
    uint64_t span = to >= from ? (uint64_t)to - (uint64_t)from : (uint64_t)from - (uint64_t)to;
    uint64_t stride = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
    uint64_t count = span / stride + 1;
    if (count > (uint64_t)SWEEP_MAX_RUNS) {
        report(src, line, key, "%llu values: more than a sweep runs (%lld)",
               (unsigned long long)count, (long long)SWEEP_MAX_RUNS);
        return -1;
    }
    return (int64_t)count;
}

static int64_t float_range_count(struct pl_source *src, const char *key, int line, double from,
                                 double to, double step)
{
    double steps = (to - from) / step;
    if (!isfinite(steps) || steps < 0.0) {
        report(src, line, key, "from %g to %g by %g gives no values", from, to, step);
        return -1;
    }
    if (steps >= (double)SWEEP_MAX_RUNS) {
        report(src, line, key, "%.0f values: more than a sweep runs (%lld)", steps + 1.0,
               (long long)SWEEP_MAX_RUNS);
        return -1;
    }
    /* `to` is in the range when a step reaches it within rounding. */
    return (int64_t)floor(steps + 1e-9) + 1;
}

static void read_range(struct pl_source *src, const config_setting_t *group, const char *key,
                       struct sweep_axis *axis)
{
    static const char *const names[] = {"from", "to", "step"};
    int type = src->params.items[axis->param].value.type;
    for (int i = 0; i < config_setting_length(group); i++) {
        const char *name = config_setting_name(config_setting_get_elem(group, (unsigned)i));
        if (strcmp(name, "from") != 0 && strcmp(name, "to") != 0 && strcmp(name, "step") != 0)
            report(src, axis->line, key, "unknown key '%s' (a range has from, to and step)", name);
    }
    if (type != PARAM_INT && type != PARAM_FLOAT) {
        char declared[256];
        param_described(src, axis->param, declared, sizeof declared);
        report(src, axis->line, key, "a range takes an int or a float param, but %s", declared);
        return;
    }
    struct param_value bounds[3];
    int errors = src->errors;
    for (int i = 0; i < 3; i++) {
        const config_setting_t *s = config_setting_get_member(group, names[i]);
        char member[200];
        snprintf(member, sizeof member, "%s.%s", key, names[i]);
        bounds[i] = (struct param_value){.type = type, .i = 1, .d = 1.0}; /* step's default */
        if (s == NULL && i < 2)
            report(src, axis->line, key, "missing '%s': { from = 1; to = 8; step = 1; }", names[i]);
        else if (s != NULL)
            sweep_value(src, s, axis->param, member, &bounds[i]);
    }
    if (src->errors > errors)
        return;
    if ((type == PARAM_INT && bounds[2].i == 0) || (type == PARAM_FLOAT && bounds[2].d == 0.0)) {
        report(src, axis->line, key, "'step' is 0");
        return;
    }
    axis->count =
        type == PARAM_INT
            ? int_range_count(src, key, axis->line, bounds[0].i, bounds[1].i, bounds[2].i)
            : float_range_count(src, key, axis->line, bounds[0].d, bounds[1].d, bounds[2].d);
    axis->from = bounds[0];
    axis->step = bounds[2];
}

/* The names of the file's own `sweep` entries in its order, taken before any --set: libconfig
 * adds a replaced member at the end of its group, and the sweep's order must not follow it.
 * NULL-terminated; free_names. */
static char **file_sweep_names(config_t *config)
{
    const config_setting_t *group = config_setting_get_member(config_root_setting(config), "sweep");
    int count = group != NULL && config_setting_is_group(group) ? config_setting_length(group) : 0;
    char **names = host_xcalloc((size_t)count + 1, sizeof *names);
    for (int i = 0; i < count; i++)
        names[i] = host_xstrdup(config_setting_name(config_setting_get_elem(group, (unsigned)i)));
    return names;
}

static int names_have(char *const *names, const char *name)
{
    for (int i = 0; names[i] != NULL; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static void free_names(char **names)
{
    for (int i = 0; names[i] != NULL; i++)
        free(names[i]);
    free(names);
}

/* The order `group`'s entries are read in (their indices into `order`): the file's own entries
 * in the file's order, then those --set added, as it added them. A run's index, its label and
 * its outputs' names follow this order: an override of a swept param's values leaves them all
 * where they were (`c-n=32-dt=f32.npy`, not `c-dt=f32-n=32.npy`). */
static void sweep_entry_order(config_setting_t *group, char *const *file_names, int *order)
{
    int n = 0;
    for (int f = 0; file_names[f] != NULL; f++) {
        const config_setting_t *s = config_setting_get_member(group, file_names[f]);
        if (s != NULL)
            order[n++] = config_setting_index(s);
    }
    for (int i = 0; i < config_setting_length(group); i++)
        if (!names_have(file_names,
                        config_setting_name(config_setting_get_elem(group, (unsigned)i))))
            order[n++] = i;
}

static void read_sweep(struct pl_source *src, config_t *config, char *const *file_names)
{
    config_setting_t *group = top_group(
        src, config, "sweep", "sweep = { n = [64, 128]; zoom = { from = 1; to = 8; }; };");
    if (group == NULL)
        return;
    int count = config_setting_length(group);
    int *order = host_xcalloc((size_t)count + 1, sizeof *order);
    sweep_entry_order(group, file_names, order);
    struct sweep *sweep = &src->sweep;
    sweep->axes = host_xcalloc((size_t)count + 1, sizeof *sweep->axes);
    int64_t runs = 1;
    for (int i = 0; i < count; i++) {
        config_setting_t *s = config_setting_get_elem(group, (unsigned)order[i]);
        char key[160], names[512];
        snprintf(key, sizeof key, "sweep.%s", config_setting_name(s));
        int param = params_find(&src->params, config_setting_name(s));
        if (param < 0) {
            params_names(&src->params, names, sizeof names);
            report(src, config_setting_source_line(s), key,
                   "no param '%s' in 'params' (params: %s): a swept param is declared there, "
                   "with its type",
                   config_setting_name(s), names);
            continue;
        }
        struct sweep_axis *axis = &sweep->axes[sweep->axis_count++];
        axis->param = param;
        axis->line = config_setting_source_line(s);
        int errors = src->errors;
        if (config_setting_is_array(s) || config_setting_is_list(s))
            read_list(src, s, key, axis);
        else if (config_setting_is_group(s))
            read_range(src, s, key, axis);
        else
            report(src, axis->line, key,
                   "must be a list of values, [64, 128, 256], or a range, "
                   "{ from = 1; to = 8; step = 1; }");
        if (src->errors > errors || axis->count < 1)
            axis->count = 1; /* keeps the product meaningful; the errors stop the run */
        runs = runs > SWEEP_MAX_RUNS / axis->count ? SWEEP_MAX_RUNS + 1 : runs * axis->count;
    }
    if (runs > SWEEP_MAX_RUNS)
        report(src, config_setting_source_line(group), "sweep",
               "more than %lld runs in all: a sweep is validated run by run before it starts",
               (long long)SWEEP_MAX_RUNS);
    free(order);
}

/* ---- --set -------------------------------------------------------------------------------- */

static int key_is(const char *assignment, size_t key_len, const char *section)
{
    size_t n = strlen(section);
    return key_len >= n && strncmp(assignment, section, n) == 0 &&
           (key_len == n || assignment[n] == '.');
}

/* --set sweep...: applied to the sections' configuration before the sweep is read. */
static void apply_sweep_set(struct pl_source *src, config_t *config, const char *assignment)
{
    config_setting_t *root = config_root_setting(config);
    if (config_setting_get_member(root, "sweep") == NULL)
        config_setting_add(root, "sweep", CONFIG_TYPE_GROUP);
    char err[512];
    if (pipeline_apply_set(config, assignment, err, sizeof err) != 0)
        set_error(src, assignment, "%s", err);
}

/* --set params.NAME=VALUE: the value must be of the declared type. */
static void apply_param_set(struct pl_source *src, const char *assignment, size_t key_len)
{
    char names[512];
    params_names(&src->params, names, sizeof names);
    if (key_len <= strlen("params.")) {
        set_error(src, assignment, "set one param: params.NAME=VALUE (params: %s)", names);
        return;
    }
    const char *name = assignment + strlen("params.");
    size_t name_len = key_len - strlen("params.");
    int param = -1;
    for (int i = 0; i < src->params.count; i++)
        if (strlen(src->params.items[i].name) == name_len &&
            strncmp(src->params.items[i].name, name, name_len) == 0)
            param = i;
    if (param < 0) {
        set_error(src, assignment, "no param '%.*s' in %s (params: %s)", (int)name_len, name,
                  src->path, names);
        return;
    }
    char err[512], declared[256];
    param_described(src, param, declared, sizeof declared);
    config_t parsed;
    const config_setting_t *s =
        pipeline_parse_value(&parsed, assignment + key_len + 1, err, sizeof err);
    struct param_value v;
    if (s == NULL) {
        set_error(src, assignment, "%s", err);
    } else if (param_value_from_setting(s, &v) != 0) {
        set_error(src, assignment, "one value, not a list or a group: %s", declared);
    } else if (param_value_convert(&v, src->params.items[param].value.type) != 0) {
        type_mismatch(src, param, &v, err, sizeof err);
        set_error(src, assignment, "%s", err);
        param_value_free(&v);
    } else if (v.type == PARAM_FLOAT && !isfinite(v.d)) {
        set_error(src, assignment, "%s is not a finite number", assignment + key_len + 1);
    } else {
        param_value_free(&src->params.items[param].value);
        src->params.items[param].value = v;
        sweep_remove_axis(&src->sweep, param);
    }
    config_destroy(&parsed);
}

/* Every other --set: kept, with its value's `${...}` found, for each run's pipeline. */
static void keep_set(struct pl_source *src, const char *assignment, size_t key_len)
{
    struct pl_set *set = &src->sets[src->set_count];
    set->assignment = assignment;
    set->key_len = key_len;
    const char *value = assignment + key_len + 1;
    char err[256];
    int line = 0;
    if (template_scan(&set->value, host_xstrdup(value), strlen(value), &line, err, sizeof err) !=
        0) {
        set_error(src, assignment, "%s", err);
        template_free(&set->value);
        return;
    }
    src->set_count++;
}

/* Sorts the overrides: sweep ones now (before the sweep is read), params after, the others
 * for pipeline_load. */
static void sort_sets(struct pl_source *src, config_t *config, char *const *sets, int set_count,
                      int pass)
{
    for (int i = 0; i < set_count; i++) {
        const char *eq = strchr(sets[i], '=');
        size_t key_len = eq != NULL ? (size_t)(eq - sets[i]) : 0;
        if (eq == NULL || key_len == 0) {
            if (pass == 0)
                set_error(src, sets[i], "expected key.path=value, e.g. params.n=64");
        } else if (key_is(sets[i], key_len, "sweep")) {
            if (pass == 0)
                apply_sweep_set(src, config, sets[i]);
        } else if (key_is(sets[i], key_len, "params")) {
            if (pass == 1)
                apply_param_set(src, sets[i], key_len);
        } else if (pass == 1) {
            keep_set(src, sets[i], key_len);
        }
    }
}

/* ---- the file ----------------------------------------------------------------------------- */

/* `params` and `sweep` are read before any value is known: they hold literals only. */
static int refs_in_sections(struct pl_source *src)
{
    int found = 0;
    for (int i = 0; i < src->text.ref_count; i++) {
        const struct pl_ref *r = &src->text.refs[i];
        const char *root = r->root >= 0 ? src->text.roots[r->root].name : "";
        if (strcmp(root, "params") == 0 || strcmp(root, "sweep") == 0) {
            report(src, r->line, r->key, "${%s}: params and sweep take literal values", r->shown);
            found = 1;
        }
    }
    return found;
}

static void wide_literal_reported(void *ctx, const struct wide_literal *literal)
{
    report(ctx, literal->line, NULL, "%s", literal->message);
}

static void read_sections(struct pl_source *src, char *const *sets, int set_count)
{
    static const char *const sections[] = {"params", "sweep", NULL};
    char *text = template_keep_roots(&src->text, sections);
    config_t config;
    config_init(&config);
    /* A literal libconfig would wrap is reported, not read as another value. */
    int readable = literal_scan_all(text, wide_literal_reported, src) == 0;
    if (readable && config_read_string(&config, text) != CONFIG_TRUE) {
        report(src, config_error_line(&config), NULL, "%s", config_error_text(&config));
    } else if (readable) {
        read_params(src, &config);
        char **file_names = file_sweep_names(&config);
        sort_sets(src, &config, sets, set_count, 0);
        if (!src->bad_set)
            read_sweep(src, &config, file_names);
        free_names(file_names);
        if (!src->bad_set)
            sort_sets(src, &config, sets, set_count, 1);
    }
    config_destroy(&config);
    free(text);
}

int pipeline_source_load(struct pl_source *src, const char *path, char *const *sets, int set_count)
{
    memset(src, 0, sizeof *src);
    src->path = path;
    src->sets = host_xcalloc((size_t)set_count + 1, sizeof *src->sets);
    size_t size = 0;
    char *text = read_text(src, &size);
    if (text == NULL)
        return src->errors;
    int line = 0;
    char err[256];
    if (template_scan(&src->text, text, size, &line, err, sizeof err) != 0) {
        report(src, line, NULL, "%s", err);
        return src->errors;
    }
    if (!refs_in_sections(src))
        read_sections(src, sets, set_count);
    return src->errors;
}

void pipeline_source_free(struct pl_source *src)
{
    for (int i = 0; i < src->set_count; i++)
        template_free(&src->sets[i].value);
    free(src->sets);
    template_free(&src->text);
    params_free(&src->params);
    sweep_free(&src->sweep);
}

void pipeline_source_run(const struct pl_source *src, int64_t index, struct pl_run *run)
{
    run->index = index;
    run->count = sweep_run_count(&src->sweep);
    run->values = sweep_run_values(&src->sweep, &src->params, index);
    run->value_count = src->params.count;
    sweep_run_label(&src->sweep, &src->params, run->values, run->label, sizeof run->label);
}

void pl_run_free(struct pl_run *run)
{
    params_values_free(run->values, run->value_count);
    run->values = NULL;
}
