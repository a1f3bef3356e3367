/* pipeline_params.c — param values and their text: what a `${...}` of the pipeline file is
 * replaced by before libconfig parses the file (pipeline_params.h). */
#include "pipeline_params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *param_type_name(int type)
{
    static const char *const names[] = {"an int", "a float", "a string", "a bool"};
    return type >= 0 && type <= PARAM_BOOL ? names[type] : "?";
}

int param_value_from_setting(const config_setting_t *s, struct param_value *v)
{
    memset(v, 0, sizeof *v);
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        v->type = PARAM_INT;
        v->i = config_setting_get_int64(s);
        return 0;
    case CONFIG_TYPE_FLOAT:
        v->type = PARAM_FLOAT;
        v->d = config_setting_get_float(s);
        return 0;
    case CONFIG_TYPE_STRING:
        v->type = PARAM_STRING;
        v->s = host_xstrdup(config_setting_get_string(s));
        return 0;
    case CONFIG_TYPE_BOOL:
        v->type = PARAM_BOOL;
        v->i = config_setting_get_bool(s) != 0;
        return 0;
    default: return -1;
    }
}

int param_value_convert(struct param_value *v, int type)
{
    if (v->type == type)
        return 0;
    if (v->type != PARAM_INT || type != PARAM_FLOAT)
        return -1;
    v->type = PARAM_FLOAT;
    v->d = (double)v->i;
    return 0;
}

void param_value_copy(struct param_value *dst, const struct param_value *src)
{
    *dst = *src;
    dst->s = src->s != NULL ? host_xstrdup(src->s) : NULL;
}

void param_value_free(struct param_value *v)
{
    free(v->s);
    v->s = NULL;
}

int param_value_equal(const struct param_value *a, const struct param_value *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case PARAM_FLOAT: return a->d == b->d;
    case PARAM_STRING: return strcmp(a->s, b->s) == 0;
    default: return a->i == b->i;
    }
}

const char *format_shortest(double x, char *out, size_t size)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(out, size, "%.*g", digits, x);
        if (strtod(out, NULL) == x)
            break;
    }
    return out;
}

/* `s` as the inside of a libconfig string: quotes and backslashes escaped, control characters
 * (a line break among them) as \xNN. */
static char *escaped(const char *s, int quoted)
{
    size_t n = strlen(s);
    char *out = host_xmalloc(4 * n + 3), *o = out;
    if (quoted)
        *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\') {
            *o++ = '\\';
            *o++ = (char)*p;
        } else if (*p < 0x20 || *p == 0x7f) {
            o += sprintf(o, "\\x%02x", *p);
        } else {
            *o++ = (char)*p;
        }
    }
    if (quoted)
        *o++ = '"';
    *o = '\0';
    return out;
}

char *param_value_text(const struct param_value *v, int literal)
{
    char text[64];
    switch (v->type) {
    case PARAM_INT:
        /* libconfig reads an integer beyond 32 bits without its L suffix as a wrapped int. */
        snprintf(text, sizeof text, "%lld%s", (long long)v->i,
                 literal && (v->i > INT32_MAX || v->i < -INT32_MAX) ? "L" : "");
        break;
    case PARAM_FLOAT:
        format_shortest(v->d, text, sizeof text);
        /* "2" would read back as an int; floats keep their type. */
        if (literal && isfinite(v->d) && strpbrk(text, ".e") == NULL)
            strcat(text, ".0");
        break;
    case PARAM_STRING: return escaped(v->s, literal);
    default: snprintf(text, sizeof text, "%s", v->i ? "true" : "false"); break;
    }
    return host_xstrdup(text);
}

int params_find(const struct params *p, const char *name)
{
    for (int i = 0; i < p->count; i++)
        if (strcmp(p->items[i].name, name) == 0)
            return i;
    return -1;
}

void params_names(const struct params *p, char *out, size_t size)
{
    out[0] = '\0';
    for (int i = 0; i < p->count; i++)
        host_append(out, size, ", ", p->items[i].name);
    if (p->count == 0)
        snprintf(out, size, "none are declared");
}

struct param_value *params_values(const struct params *p)
{
    struct param_value *values = host_xcalloc((size_t)p->count + 1, sizeof *values);
    for (int i = 0; i < p->count; i++)
        param_value_copy(&values[i], &p->items[i].value);
    return values;
}

void params_values_free(struct param_value *values, int count)
{
    for (int i = 0; values != NULL && i < count; i++)
        param_value_free(&values[i]);
    free(values);
}

void params_free(struct params *p)
{
    for (int i = 0; i < p->count; i++) {
        free(p->items[i].name);
        param_value_free(&p->items[i].value);
    }
    free(p->items);
    p->items = NULL;
    p->count = 0;
}
