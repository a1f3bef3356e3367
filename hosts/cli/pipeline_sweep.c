/* pipeline_sweep.c — the runs of a sweep: how many, run i's values, its label and the names of
 * its outputs (pipeline_sweep.h). Reading `sweep` from the file is pipeline_source.c's job. */
#include "pipeline_sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_os.h"
#include "util.h"

int64_t sweep_run_count(const struct sweep *s)
{
    int64_t count = 1;
    for (int i = 0; i < s->axis_count; i++)
        count *= s->axes[i].count; /* the reader keeps the product within SWEEP_MAX_RUNS */
    return count;
}

void sweep_axis_value(const struct sweep_axis *a, int64_t k, struct param_value *out)
{
    if (a->list != NULL) {
        param_value_copy(out, &a->list[k]);
        return;
    }
    /* From `from` each time, not by adding `step` up: no rounding builds up along a range. */
    *out = a->from;
    if (a->from.type == PARAM_FLOAT) {
        /* 15 digits: 0.1 + 2 * 0.1 is 0.3 here, not 0.30000000000000004. */
        char text[40];
        snprintf(text, sizeof text, "%.15g", a->from.d + (double)k * a->step.d);
        out->d = strtod(text, NULL);
    } else
        out->i = a->from.i + k * a->step.i;
}

struct param_value *sweep_run_values(const struct sweep *s, const struct params *p, int64_t run)
{
    struct param_value *values = params_values(p);
    for (int i = s->axis_count - 1; i >= 0; i--) {
        const struct sweep_axis *a = &s->axes[i];
        param_value_free(&values[a->param]);
        sweep_axis_value(a, run % a->count, &values[a->param]);
        run /= a->count;
    }
    return values;
}

char *sweep_value_text(const struct param_value *v)
{
    /* A string quoted: it may hold ", ". */
    return param_value_text(v, v->type == PARAM_STRING);
}

void sweep_run_label(const struct sweep *s, const struct params *p,
                     const struct param_value *values, char *out, size_t size)
{
    out[0] = '\0';
    for (int i = 0; i < s->axis_count; i++) {
        int param = s->axes[i].param;
        char *text = sweep_value_text(&values[param]);
        char item[256];
        snprintf(item, sizeof item, "%s=%s", p->items[param].name, text);
        host_append(out, size, ", ", item);
        free(text);
    }
}

void sweep_name_piece(const struct param_value *v, char *out, size_t size)
{
    if (v->type == PARAM_STRING)
        snprintf(out, size, "%s", v->s);
    else {
        char *text = param_value_text(v, 0);
        snprintf(out, size, "%s", text);
        free(text);
    }
    for (char *c = out; *c != '\0'; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr("._+-", *c) != NULL))
            *c = '_';
}

char *sweep_output_name(const struct sweep *s, const struct params *p,
                        const struct param_value *values, const char *file)
{
    size_t cap = strlen(file) + 1;
    char *suffix = host_xstrdup("");
    for (int i = 0; i < s->axis_count; i++) {
        int param = s->axes[i].param;
        char piece[256];
        sweep_name_piece(&values[param], piece, sizeof piece);
        size_t n = strlen(suffix) + strlen(p->items[param].name) + strlen(piece) + 3;
        char *longer = host_xmalloc(n);
        snprintf(longer, n, "%s-%s=%s", suffix, p->items[param].name, piece);
        free(suffix);
        suffix = longer;
    }
    cap += strlen(suffix);
    /* The extension is the last '.' of the last path component, unless the name starts with it
     * (".hidden" has none). */
    const char *slash = host_last_path_separator(file);
    const char *base = slash != NULL ? slash + 1 : file;
    const char *dot = strrchr(base, '.');
    size_t stem = dot != NULL && dot != base ? (size_t)(dot - file) : strlen(file);
    char *name = host_xmalloc(cap);
    snprintf(name, cap, "%.*s%s%s", (int)stem, file, suffix, file + stem);
    free(suffix);
    return name;
}

static void axis_free(struct sweep_axis *a)
{
    for (int64_t k = 0; a->list != NULL && k < a->count; k++)
        param_value_free(&a->list[k]);
    free(a->list);
    param_value_free(&a->from);
    param_value_free(&a->step);
}

void sweep_remove_axis(struct sweep *s, int param)
{
    for (int i = 0; i < s->axis_count; i++) {
        if (s->axes[i].param != param)
            continue;
        axis_free(&s->axes[i]);
        memmove(&s->axes[i], &s->axes[i + 1], (size_t)(s->axis_count - i - 1) * sizeof *s->axes);
        s->axis_count--;
        return;
    }
}

void sweep_free(struct sweep *s)
{
    for (int i = 0; i < s->axis_count; i++)
        axis_free(&s->axes[i]);
    free(s->axes);
    s->axes = NULL;
    s->axis_count = 0;
}
