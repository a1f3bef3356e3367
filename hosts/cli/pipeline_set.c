/* pipeline_set.c — `clops run --set key.path=value`: one setting of a parsed pipeline replaced
 * (or added) before it is validated, so the override is checked like the file itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_literals.h"
#include "pipeline_set.h"
#include "util.h"

/* Copies the value of `src` into `dst`, a setting of the same type with no children yet. */
static int copy_value(config_setting_t *dst, const config_setting_t *src)
{
    switch (config_setting_type(src)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: return config_setting_set_int64(dst, config_setting_get_int64(src));
    case CONFIG_TYPE_FLOAT: return config_setting_set_float(dst, config_setting_get_float(src));
    case CONFIG_TYPE_BOOL: return config_setting_set_bool(dst, config_setting_get_bool(src));
    case CONFIG_TYPE_STRING: return config_setting_set_string(dst, config_setting_get_string(src));
    default: break;
    }
    int group = config_setting_is_group(src);
    for (int i = 0; i < config_setting_length(src); i++) {
        const config_setting_t *e = config_setting_get_elem(src, (unsigned)i);
        /* The parser makes small integers INT: stored as INT64 they hold any value set later. */
        int type =
            config_setting_type(e) == CONFIG_TYPE_INT ? CONFIG_TYPE_INT64 : config_setting_type(e);
        config_setting_t *child =
            config_setting_add(dst, group ? config_setting_name(e) : NULL, type);
        if (child == NULL || copy_value(child, e) != CONFIG_TRUE)
            return CONFIG_FALSE;
    }
    return CONFIG_TRUE;
}

/* In a list of groups, the group whose `name` is `name`. */
static config_setting_t *group_named(config_setting_t *list, const char *name)
{
    for (int i = 0; i < config_setting_length(list); i++) {
        config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        const char *n = NULL;
        if (config_setting_is_group(e) && config_setting_lookup_string(e, "name", &n) &&
            strcmp(n, name) == 0)
            return e;
    }
    return NULL;
}

/* "[2]" → 2; -1 when `part` is not an index. */
static int index_of(const char *part)
{
    char *end = NULL;
    if (part[0] != '[' || part[1] < '0' || part[1] > '9')
        return -1;
    long i = strtol(part + 1, &end, 10);
    return end[0] == ']' && end[1] == '\0' && i < 1 << 30 ? (int)i : -1;
}

/* One step of the path from `at`: a member, an element by index, a list's group by name. */
static config_setting_t *walk(config_setting_t *at, const char *part)
{
    int i = index_of(part);
    if (i >= 0)
        return config_setting_is_aggregate(at) ? config_setting_get_elem(at, (unsigned)i) : NULL;
    if (config_setting_is_group(at))
        return config_setting_get_member(at, part);
    return config_setting_is_list(at) ? group_named(at, part) : NULL;
}

/* Sets `last` of `parent` to `value`: a group's member is replaced (or added) whatever its
 * type; an element, which cannot move, only takes a scalar of its own type. */
static int assign(config_setting_t *parent, const char *last, const config_setting_t *value,
                  char *err, size_t size)
{
    int i = index_of(last);
    if (i >= 0) {
        config_setting_t *e = walk(parent, last);
        if (e == NULL || config_setting_is_aggregate(e) ||
            config_setting_type(e) != config_setting_type(value) ||
            copy_value(e, value) != CONFIG_TRUE) {
            snprintf(err, size, "element [%d] is missing or not a scalar of the value's type", i);
            return -1;
        }
        return 0;
    }
    if (!config_setting_is_group(parent)) {
        snprintf(err, size, "'%s' is not in a group { ... }", last);
        return -1;
    }
    if (config_setting_get_member(parent, last) != NULL)
        config_setting_remove(parent, last);
    config_setting_t *s = config_setting_add(parent, last, config_setting_type(value));
    if (s == NULL || copy_value(s, value) != CONFIG_TRUE) {
        snprintf(err, size, "cannot set '%s' (a valid key starts with a letter)", last);
        return -1;
    }
    return 0;
}

const config_setting_t *pipeline_parse_value(config_t *parsed, const char *text, char *err,
                                             size_t size)
{
    /* Parsed by libconfig itself, as it would be in the file, and refused where libconfig would
     * wrap an integer without a word. */
    config_init(parsed);
    struct wide_literal wide;
    if (literal_scan_first(text, &wide)) {
        snprintf(err, size, "%s", wide.message);
        return NULL;
    }
    char *setting = NULL;
    if (asprintf(&setting, "value = %s;", text) < 0)
        setting = NULL;
    int ok = setting != NULL && config_read_string(parsed, setting) == CONFIG_TRUE;
    free(setting);
    if (!ok) {
        snprintf(err, size, "'%s' is not a value (a number, \"a string\", [1, 2] or ( ... ))",
                 text);
        return NULL;
    }
    return config_lookup(parsed, "value");
}

int pipeline_apply_set(config_t *config, const char *assignment, char *err, size_t size)
{
    const char *eq = strchr(assignment, '=');
    if (eq == NULL || eq == assignment) {
        snprintf(err, size, "expected key.path=value, e.g. tensors.A.shape=[64,64]");
        return -1;
    }
    config_t parsed;
    int rc = -1;
    const config_setting_t *value = pipeline_parse_value(&parsed, eq + 1, err, size);
    if (value == NULL)
        goto done;
    char *path = host_xstrdup(assignment);
    path[eq - assignment] = '\0';
    config_setting_t *at = config_root_setting(config);
    snprintf(err, size, "the key path is empty");
    char *save = NULL, *part = strtok_r(path, ".", &save);
    while (part != NULL) {
        char *next = strtok_r(NULL, ".", &save);
        if (next == NULL) {
            rc = assign(at, part, value, err, size);
            break;
        }
        at = walk(at, part);
        if (at == NULL) {
            snprintf(err, size, "no setting '%s' on the path", part);
            break;
        }
        part = next;
    }
    free(path);
done:
    config_destroy(&parsed);
    return rc;
}
