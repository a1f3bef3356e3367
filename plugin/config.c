/* config.c — reads a pool configuration (libconfig syntax, format in configs/clops.cfg) into
 * struct pool_config, checking every key, type and range so that no mistake is silently ignored. */
#include "config.h"

#include <errno.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_literals.h"
#include "error.h"
#include "op.h"
#include "platform.h"
#include "registry.h"

#define MEMBER_SIZE(type, member) sizeof(((type *)0)->member)

/* Room for a key path such as "operators.gemm.build_options" in messages. */
enum { KEY_PATH_MAX = 256, WHAT_MAX = 1024, QUOTED_VALUE_MAX = 80 };

static const char source_string[] = "<string>";

/* One parse: the name messages start with, and the configuration being filled. */
struct parser {
    const char *source;
    struct pool_config *cfg;
};

struct field;
/* Reads setting `s` (found under key path `path`) into the struct at `base`. */
typedef int32_t (*field_parse_fn)(const struct parser *p, const struct field *f,
                                  const config_setting_t *s, const char *path, void *base);

/* One key a group accepts: how it is read, and where in the destination struct it goes. */
struct field {
    const char *key;
    field_parse_fn parse;
    size_t offset;    /* of the destination member */
    size_t size;      /* strings: the capacity of the buffer, terminator included */
    int32_t min, max; /* integers: the accepted range */
};

/* ---- Messages -------------------------------------------------------------------------------- */

/* Every configuration error reads "file:line: key.path: what", so an editor can jump to it. */
static int32_t fail(const struct parser *p, const config_setting_t *s, const char *path,
                    const char *fmt, ...) CLOPS_PRINTF(4, 5);

static int32_t fail(const struct parser *p, const config_setting_t *s, const char *path,
                    const char *fmt, ...)
{
    char what[WHAT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* Settings from an @include'd file carry that file's name; the main source carries none. */
    const char *file = config_setting_source_file(s);
    return err_set(CLOPS_ERR_CONFIG, "%s:%u: %s%s%s", file != NULL ? file : p->source,
                   (unsigned)config_setting_source_line(s), path, path[0] != '\0' ? ": " : "",
                   what);
}

static const char *type_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP: return "a group { ... }";
    case CONFIG_TYPE_INT: return "integer";
    case CONFIG_TYPE_INT64: return "integer";
    case CONFIG_TYPE_FLOAT: return "float";
    case CONFIG_TYPE_STRING: return "string";
    case CONFIG_TYPE_BOOL: return "boolean";
    case CONFIG_TYPE_ARRAY: return "an array [ ... ]";
    case CONFIG_TYPE_LIST: return "a list ( ... )";
    default: return "nothing";
    }
}

/* "integer 17", "string \"gpuu\"", "a list ( ... )": what the user wrote, for "got ...". Long
 * strings are cut, since the message has a fixed size and the line number locates them. */
static void describe_value(const config_setting_t *s, char *out, size_t size)
{
    int type = config_setting_type(s);
    const char *name = type_name(type);
    switch (type) {
    case CONFIG_TYPE_INT: snprintf(out, size, "%s %d", name, config_setting_get_int(s)); break;
    case CONFIG_TYPE_INT64:
        snprintf(out, size, "%s %lld", name, config_setting_get_int64(s));
        break;
    case CONFIG_TYPE_FLOAT: snprintf(out, size, "%s %g", name, config_setting_get_float(s)); break;
    case CONFIG_TYPE_BOOL:
        snprintf(out, size, "%s %s", name, config_setting_get_bool(s) ? "true" : "false");
        break;
    case CONFIG_TYPE_STRING: {
        const char *text = config_setting_get_string(s);
        int cut = strlen(text) > QUOTED_VALUE_MAX;
        snprintf(out, size, "%s \"%.*s%s\"", name, QUOTED_VALUE_MAX, text, cut ? "..." : "");
        break;
    }
    default: snprintf(out, size, "%s", name); break;
    }
}

static int32_t fail_type(const struct parser *p, const config_setting_t *s, const char *path,
                         const char *expected)
{
    char got[QUOTED_VALUE_MAX + 32];
    describe_value(s, got, sizeof got);
    return fail(p, s, path, "expected %s, got %s", expected, got);
}

/* "a", "a.b" or "a[3]": the key path of a child setting, for messages. */
static void child_path(char *out, const char *path, const char *key)
{
    /* Key paths are bounded by the nesting of the format, far below KEY_PATH_MAX; a cut one
     * would only shorten a message. */
    int n = snprintf(out, KEY_PATH_MAX, "%s%s%s", path, path[0] != '\0' ? "." : "", key);
    if (n >= KEY_PATH_MAX)
        out[KEY_PATH_MAX - 1] = '\0';
}

/* ---- Scalars --------------------------------------------------------------------------------- */

static int32_t parse_bool(const struct parser *p, const struct field *f, const config_setting_t *s,
                          const char *path, void *base)
{
    if (config_setting_type(s) != CONFIG_TYPE_BOOL)
        return fail_type(p, s, path, "true or false");
    *(int32_t *)((char *)base + f->offset) = config_setting_get_bool(s) ? 1 : 0;
    return CLOPS_OK;
}

static int32_t parse_int(const struct parser *p, const struct field *f, const config_setting_t *s,
                         const char *path, void *base)
{
    char expected[64];
    snprintf(expected, sizeof expected, "an integer in %d..%d", (int)f->min, (int)f->max);
    long long value;
    if (config_setting_type(s) == CONFIG_TYPE_INT)
        value = config_setting_get_int(s);
    else if (config_setting_type(s) == CONFIG_TYPE_INT64)
        value = config_setting_get_int64(s);
    else
        return fail_type(p, s, path, expected);
    if (value < f->min || value > f->max)
        return fail(p, s, path, "expected %s, got %lld", expected, value);
    *(int32_t *)((char *)base + f->offset) = (int32_t)value;
    return CLOPS_OK;
}

static int32_t parse_string(const struct parser *p, const struct field *f,
                            const config_setting_t *s, const char *path, void *base)
{
    if (config_setting_type(s) != CONFIG_TYPE_STRING)
        return fail_type(p, s, path, "a string");
    const char *text = config_setting_get_string(s);
    size_t length = strlen(text);
    if (length >= f->size)
        return fail(p, s, path, "string too long: %zu characters, at most %zu", length,
                    f->size - 1);
    memcpy((char *)base + f->offset, text, length + 1);
    return CLOPS_OK;
}

static int32_t parse_device_type(const struct parser *p, const struct field *f,
                                 const config_setting_t *s, const char *path, void *base)
{
    static const struct {
        const char *word;
        int32_t type;
    } types[] = {{"gpu", CLOPS_DEVICE_GPU}, {"cpu", CLOPS_DEVICE_CPU}, {"any", 0}};
    if (config_setting_type(s) != CONFIG_TYPE_STRING)
        return fail_type(p, s, path, "a string, one of gpu, cpu, any");
    const char *word = config_setting_get_string(s);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(word, types[i].word) == 0) {
            *(int32_t *)((char *)base + f->offset) = types[i].type;
            return CLOPS_OK;
        }
    return fail(p, s, path, "expected one of gpu, cpu, any, got \"%.*s\"", QUOTED_VALUE_MAX, word);
}

/* ---- Groups ---------------------------------------------------------------------------------- */

static const struct field *find_field(const struct field *fields, size_t count, const char *key)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(fields[i].key, key) == 0)
            return &fields[i];
    return NULL;
}

static int32_t fail_unknown_key(const struct parser *p, const config_setting_t *member,
                                const char *path, const struct field *fields, size_t count)
{
    char expected[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < count && used < sizeof expected; i++)
        used += (size_t)snprintf(expected + used, sizeof expected - used, "%s%s", i > 0 ? ", " : "",
                                 fields[i].key);
    return fail(p, member, path, "unknown key '%s' (expected one of %s)",
                config_setting_name(member), expected);
}

/* Reads those of `fields` that `group` has into `base`, in table order, whatever the order in the
 * file, so later fields may depend on earlier. */
static int32_t read_fields(const struct parser *p, const config_setting_t *group, const char *path,
                           const struct field *fields, size_t count, void *base)
{
    for (size_t i = 0; i < count; i++) {
        const config_setting_t *member = config_setting_get_member(group, fields[i].key);
        if (member == NULL)
            continue;
        char member_path[KEY_PATH_MAX];
        child_path(member_path, path, fields[i].key);
        int32_t status = fields[i].parse(p, &fields[i], member, member_path, base);
        if (status != CLOPS_OK)
            return status;
    }
    return CLOPS_OK;
}

/* Reads the members of `group` into `base`: every member must be one of `fields`. */
static int32_t parse_group(const struct parser *p, const config_setting_t *group, const char *path,
                           const struct field *fields, size_t count, void *base)
{
    if (config_setting_type(group) != CONFIG_TYPE_GROUP)
        return fail_type(p, group, path, "a group { ... }");
    int n = config_setting_length(group);
    for (int i = 0; i < n; i++) {
        const config_setting_t *member = config_setting_get_elem(group, (unsigned)i);
        if (find_field(fields, count, config_setting_name(member)) == NULL)
            return fail_unknown_key(p, member, path, fields, count);
    }
    return read_fields(p, group, path, fields, count, base);
}

/* ---- devices --------------------------------------------------------------------------------- */

static const struct field device_fields[] = {
    {"type", parse_device_type, offsetof(struct config_device, type), 0, 0, 0},
    {"vendor", parse_string, offsetof(struct config_device, vendor),
     MEMBER_SIZE(struct config_device, vendor), 0, 0},
    {"platform", parse_int, offsetof(struct config_device, platform_index), 0, 0, INT32_MAX},
    {"index", parse_int, offsetof(struct config_device, index), 0, 0, INT32_MAX},
    {"queues", parse_int, offsetof(struct config_device, queues), 0, 1, 16},
    {"required", parse_bool, offsetof(struct config_device, required), 0, 0, 0},
};

static void device_defaults(struct config_device *dev)
{
    memset(dev, 0, sizeof *dev);
    dev->type = 0;
    dev->platform_index = -1;
    dev->index = 0;
    dev->queues = 2;
    dev->required = 1;
}

/* One entry of `devices` or `operators`: member i of n of the list or group at `path`, itself at
 * `entry_path`. */
typedef int32_t (*entry_parse_fn)(const struct parser *p, const config_setting_t *entry,
                                  const char *path, const char *entry_path, int i, int n);

/* `devices` and `operators`: a list or a group (`type`; `expected` says what, when it is not)
 * whose entries `parse_entry` reads in order, each at its own key path (path[i] in a list,
 * path.name in a group), up to the first that fails; the field's member (an int32_t) counts
 * those read. */
static int32_t parse_entries(const struct parser *p, const struct field *f,
                             const config_setting_t *s, const char *path, void *base, int type,
                             const char *expected, entry_parse_fn parse_entry)
{
    int32_t *count = (int32_t *)((char *)base + f->offset);
    if (config_setting_type(s) != type)
        return fail_type(p, s, path, expected);
    int n = config_setting_length(s);
    int32_t status = CLOPS_OK;
    for (int i = 0; i < n && status == CLOPS_OK; i++) {
        const config_setting_t *entry = config_setting_get_elem(s, (unsigned)i);
        char entry_path[KEY_PATH_MAX];
        if (type == CONFIG_TYPE_LIST)
            snprintf(entry_path, sizeof entry_path, "%s[%d]", path, i);
        else
            child_path(entry_path, path, config_setting_name(entry));
        status = parse_entry(p, entry, path, entry_path, i, n);
        if (status == CLOPS_OK)
            *count = i + 1;
    }
    return status;
}

static int32_t parse_device_entry(const struct parser *p, const config_setting_t *entry,
                                  const char *path, const char *entry_path, int i, int n)
{
    (void)path;
    if (i >= CONFIG_MAX_DEVICES)
        return fail(p, entry, entry_path, "too many devices: %d listed, at most %d", n,
                    (int)CONFIG_MAX_DEVICES);
    return parse_group(p, entry, entry_path, device_fields,
                       sizeof device_fields / sizeof device_fields[0], &p->cfg->devices[i]);
}

static int32_t parse_devices(const struct parser *p, const struct field *f,
                             const config_setting_t *s, const char *path, void *base)
{
    /* Kept for pool_create_from_cl, which refuses the section even empty. */
    p->cfg->devices_line = (int32_t)config_setting_source_line(s);
    return parse_entries(p, f, s, path, base, CONFIG_TYPE_LIST, "a list ( { type = ...; }, ... )",
                         parse_device_entry);
}

/* ---- operators ------------------------------------------------------------------------------- */

/* An operator's device indexes the pool's devices, which are at most those listed (or the one
 * default device when none is listed). `devices` is read before `operators`, whatever the order
 * in the file. */
static int32_t parse_op_device(const struct parser *p, const struct field *f,
                               const config_setting_t *s, const char *path, void *base)
{
    struct field bounded = *f;
    bounded.max = p->cfg->device_count > 0 ? p->cfg->device_count - 1 : 0;
    int32_t status = parse_int(p, &bounded, s, path, base);
    if (status != CLOPS_OK)
        err_append(p->cfg->device_count > 0
                       ? " (an index into the devices list)"
                       : " (without a devices list the pool has one device, 0)");
    return status;
}

/* operators.<op>.devices = [0, 1, ...]: distinct indexes into the pool's devices. */
static int32_t parse_op_devices(const struct parser *p, const struct field *f,
                                const config_setting_t *s, const char *path, void *base)
{
    (void)f;
    struct config_op *op = base;
    const int type = config_setting_type(s);
    if (type != CONFIG_TYPE_ARRAY && type != CONFIG_TYPE_LIST)
        return fail_type(p, s, path, "an array of device indexes [ 0, 1, ... ]");
    const int n = config_setting_length(s);
    const int32_t devices = p->cfg->device_count > 0 ? p->cfg->device_count : 1;
    if (n < 1 || n > CONFIG_MAX_DEVICES)
        return fail(p, s, path, "expected 1 to %d device indexes, got %d", (int)CONFIG_MAX_DEVICES,
                    n);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char at[KEY_PATH_MAX];
        snprintf(at, sizeof at, "%s[%d]", path, i);
        if (config_setting_type(e) != CONFIG_TYPE_INT)
            return fail_type(p, e, at, "a device index (integer)");
        const int v = config_setting_get_int(e);
        if (v < 0 || v >= devices)
            return fail(p, e, at, "device %d: the pool has %d device(s), 0 .. %d%s", v,
                        (int)devices, (int)devices - 1,
                        p->cfg->device_count > 0 ? " (indexes into the devices list)"
                                                 : " (without a devices list there is one)");
        for (int j = 0; j < i; j++)
            if (op->split_devices[j] == v)
                return fail(p, e, at, "device %d is listed twice", v);
        op->split_devices[i] = v;
    }
    op->split_count = n;
    return CLOPS_OK;
}

/* operators.<op>.split = [f0, f1, ...]: each device's share of a call, >= 0, summing to 1;
 * read after `devices`, whose length it must have. */
static int32_t parse_op_split(const struct parser *p, const struct field *f,
                              const config_setting_t *s, const char *path, void *base)
{
    (void)f;
    struct config_op *op = base;
    const int type = config_setting_type(s);
    if (type != CONFIG_TYPE_ARRAY && type != CONFIG_TYPE_LIST)
        return fail_type(p, s, path, "an array of shares [ 0.5, 0.5 ] (one per device)");
    const int n = config_setting_length(s);
    if (n != op->split_count)
        return fail(p, s, path, "%d share(s) for %d device(s) in operators.%s.devices", n,
                    (int)op->split_count, op->name);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char at[KEY_PATH_MAX];
        snprintf(at, sizeof at, "%s[%d]", path, i);
        const int et = config_setting_type(e);
        if (et != CONFIG_TYPE_FLOAT && et != CONFIG_TYPE_INT)
            return fail_type(p, e, at, "a share between 0 and 1");
        const double v =
            et == CONFIG_TYPE_FLOAT ? config_setting_get_float(e) : config_setting_get_int(e);
        if (!(v >= 0 && v <= 1))
            return fail(p, e, at, "share %g: expected 0 to 1", v);
        op->split_share[i] = v;
        sum += v;
    }
    if (sum < 0.999 || sum > 1.001)
        return fail(p, s, path, "the shares sum to %g; expected 1", sum);
    op->share_count = n;
    return CLOPS_OK;
}

/* operators.<op>.split_min_ms: a number of milliseconds, 0 or more. */
static int32_t parse_op_split_min(const struct parser *p, const struct field *f,
                                  const config_setting_t *s, const char *path, void *base)
{
    (void)f;
    const int type = config_setting_type(s);
    if (type != CONFIG_TYPE_FLOAT && type != CONFIG_TYPE_INT)
        return fail_type(p, s, path, "a number of milliseconds, 0 or more");
    const double v =
        type == CONFIG_TYPE_FLOAT ? config_setting_get_float(s) : (double)config_setting_get_int(s);
    if (!(v >= 0 && v <= 1e9))
        return fail(p, s, path, "%g ms: expected 0 or more", v);
    ((struct config_op *)base)->split_min_ms = v;
    return CLOPS_OK;
}

/* operators.<op>.split_slabs: an integer, 0 to CONFIG_SPLIT_SLABS_MAX. */
static int32_t parse_op_split_slabs(const struct parser *p, const struct field *f,
                                    const config_setting_t *s, const char *path, void *base)
{
    (void)f;
    if (config_setting_type(s) != CONFIG_TYPE_INT)
        return fail_type(p, s, path, "an integer number of slabs, 0 to 8");
    const int v = config_setting_get_int(s);
    if (v < 0 || v > CONFIG_SPLIT_SLABS_MAX)
        return fail(p, s, path, "%d slabs: expected 0 to %d", v, (int)CONFIG_SPLIT_SLABS_MAX);
    ((struct config_op *)base)->split_slabs = v;
    return CLOPS_OK;
}

static const struct field op_fields[] = {
    {"device", parse_op_device, offsetof(struct config_op, device), 0, 0, 0},
    {"devices", parse_op_devices, 0, 0, 0, 0},
    {"split", parse_op_split, 0, 0, 0, 0},
    {"split_min_ms", parse_op_split_min, 0, 0, 0, 0},
    {"split_slabs", parse_op_split_slabs, 0, 0, 0, 0},
    {"build_options", parse_string, offsetof(struct config_op, build_options),
     MEMBER_SIZE(struct config_op, build_options), 0, 0},
};

static void op_defaults(struct config_op *op)
{
    memset(op, 0, sizeof *op);
    op->device = -1;
    op->split_min_ms = CONFIG_SPLIT_MIN_MS;
    op->split_slabs = CONFIG_SPLIT_SLABS;
}

/* ---- Operator settings ----------------------------------------------------------------------- */

static const char whitespace[] = " \t\n\r\f\v";

struct op_settings config_op_declared_settings(const char *op_name)
{
    const struct op_impl *impl = registry_impl(registry_index_by_name(op_name));
    struct op_settings none = {NULL, 0};
    return impl != NULL && impl->settings != NULL ? *impl->settings : none;
}

static int32_t find_setting(const struct op_settings *decl, const char *name)
{
    for (int32_t i = 0; i < decl->count; i++)
        if (strcmp(decl->list[i].name, name) == 0)
            return i;
    return -1;
}

/* The field through which declared setting `i` is read into a struct config_op. */
static struct field setting_field(const struct op_setting *d, int32_t i)
{
    struct field f = {.key = d->name,
                      .parse = d->type == SETTING_BOOL ? parse_bool : parse_int,
                      .offset = offsetof(struct config_op, values) + (size_t)i * sizeof(int32_t),
                      .min = d->min,
                      .max = d->max};
    return f;
}

static int32_t fail_unknown_op_key(const struct parser *p, const config_setting_t *member,
                                   const char *path, const char *op_name,
                                   const struct op_settings *decl)
{
    char names[512] = "";
    size_t used = 0;
    for (int32_t i = 0; i < decl->count && used < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i > 0 ? ", " : "",
                                 decl->list[i].name);
    if (decl->count == 0)
        return fail(p, member, path,
                    "unknown key '%s' (expected one of device, devices, split, split_min_ms, "
                    "split_slabs, build_options); %s has no "
                    "settings",
                    config_setting_name(member), op_name);
    return fail(p, member, path,
                "unknown key '%s' (expected one of device, devices, split, split_min_ms, "
                "split_slabs, build_options) or a "
                "setting of %s (%s)",
                config_setting_name(member), op_name, names);
}

/* The declared setting whose old spelling "-D<define>=" starts `token`, or -1. */
static int32_t old_spelling_of(const struct op_settings *decl, const char *token)
{
    for (int32_t i = 0; i < decl->count; i++) {
        const char *define = decl->list[i].define;
        size_t length = define != NULL ? strlen(define) : 0;
        if (length > 0 && strncmp(token, "-D", 2) == 0 && strncmp(token + 2, define, length) == 0 &&
            token[2 + length] == '=')
            return i;
    }
    return -1;
}

/* Reads one old spelling, `token` (up to `end`), of declared setting `i` into `op`. */
static int32_t read_old_spelling(const struct parser *p, const config_setting_t *options,
                                 const char *path, const struct op_setting *d, int32_t i,
                                 const char *token, const char *end, struct config_op *op)
{
    const int length = (int)(end - token);
    if (op->origin[i] != SETTING_DEFAULT)
        return fail(p, options, path, "%.*s: operators.%s.%s is set already (%s)", length, token,
                    op->name, d->name,
                    op->origin[i] == SETTING_KEY ? "by its key" : "earlier in build_options");
    const char *value = token + 3 + strlen(d->define);
    char *stop = NULL;
    errno = 0;
    long long v = strtoll(value, &stop, 10);
    const int32_t min = d->type == SETTING_BOOL ? 0 : d->min;
    const int32_t max = d->type == SETTING_BOOL ? 1 : d->max;
    if (value == end || stop != end || errno != 0 || v < min || v > max)
        return fail(p, options, path,
                    "%.*s: expected %s %d..%d (the old spelling of operators.%s.%s)", length, token,
                    d->type == SETTING_BOOL ? "0 or 1, an integer in" : "an integer in", (int)min,
                    (int)max, op->name, d->name);
    op->values[i] = (int32_t)v;
    op->origin[i] = SETTING_BUILD_OPTIONS;
    return CLOPS_OK;
}

/* Takes the old spellings of the operator's settings ("-DTILE_M=64") out of its build_options
 * and reads them as the settings' keys would be: they were tunings the operator read back from
 * the options, which no kernel reads from there, and they no longer reach the compiler or the
 * program cache's key. What else the options hold stays as written. */
static int32_t take_old_spellings(const struct parser *p, const config_setting_t *options,
                                  const char *path, const struct op_settings *decl,
                                  struct config_op *op)
{
    int taken = 0;
    char *at = op->build_options + strspn(op->build_options, whitespace);
    while (*at != '\0') {
        char *end = at + strcspn(at, whitespace);
        int32_t i = old_spelling_of(decl, at);
        if (i < 0) {
            at = end + strspn(end, whitespace);
            continue;
        }
        int32_t status = read_old_spelling(p, options, path, &decl->list[i], i, at, end, op);
        if (status != CLOPS_OK)
            return status;
        char *next = end + strspn(end, whitespace);
        memmove(at, next, strlen(next) + 1);
        taken = 1;
    }
    size_t length = strlen(op->build_options);
    while (taken && length > 0 && strchr(whitespace, op->build_options[length - 1]) != NULL)
        op->build_options[--length] = '\0';
    return CLOPS_OK;
}

/* Whether the operator's calls can go across devices (op_impl's cut or across_devices). */
static int op_splits(int32_t index)
{
    const struct op_impl *impl = registry_impl(index);
    return impl != NULL && (impl->cut != NULL || impl->across_devices);
}

/* Whether the operator's parts can be computed in slabs of their reduction (op_impl's pieces). */
static int op_slabs(int32_t index)
{
    const struct op_impl *impl = registry_impl(index);
    return impl != NULL && impl->cut != NULL && impl->pieces != NULL;
}

/* operators.<name>.devices, split and split_min_ms only for an operator that splits its calls
 * across devices, and split_slabs only for one whose parts' pieces compute slabs of their
 * reduction: elsewhere they would be silently ignored. */
static int32_t check_splits(const struct parser *p, const config_setting_t *group, const char *path,
                            const char *op_name)
{
    static const char *const keys[] = {"devices", "split", "split_min_ms", "split_slabs"};
    const int32_t index = registry_index_by_name(op_name);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const int slabs = k == 3;
        int (*const can)(int32_t) = slabs ? op_slabs : op_splits;
        const config_setting_t *member = config_setting_get_member(group, keys[k]);
        if (member == NULL || can(index))
            continue;
        char names[256] = "";
        size_t used = 0;
        for (int32_t i = 0; i < registry_count() && used < sizeof names; i++)
            if (can(i))
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                         used > 0 ? ", " : "", registry_at(i)->name);
        char member_path[KEY_PATH_MAX];
        child_path(member_path, path, keys[k]);
        return fail(p, member, member_path,
                    slabs ? "%s does not compute a split call's pieces in slabs (operators that "
                            "do: %s)"
                          : "%s does not split its calls across devices (operators that do: %s)",
                    op_name, names);
    }
    return CLOPS_OK;
}

/* Reads operators.<name> = { ... } into `op`: the core's keys (device, build_options), then the
 * settings the operator declares, then the old spellings of those in build_options. */
static int32_t parse_operator(const struct parser *p, const config_setting_t *group,
                              const char *path, struct config_op *op)
{
    if (config_setting_type(group) != CONFIG_TYPE_GROUP)
        return fail_type(p, group, path, "a group { ... }");
    const struct op_settings decl = config_op_declared_settings(op->name);
    if (decl.count > CONFIG_MAX_SETTINGS)
        return err_set(CLOPS_ERR_INTERNAL, "%s declares %d settings, at most %d", op->name,
                       (int)decl.count, (int)CONFIG_MAX_SETTINGS);
    int n = config_setting_length(group);
    for (int i = 0; i < n; i++) {
        const config_setting_t *member = config_setting_get_elem(group, (unsigned)i);
        const char *key = config_setting_name(member);
        if (find_field(op_fields, sizeof op_fields / sizeof op_fields[0], key) == NULL &&
            find_setting(&decl, key) < 0)
            return fail_unknown_op_key(p, member, path, op->name, &decl);
    }
    int32_t status = check_splits(p, group, path, op->name);
    if (status == CLOPS_OK)
        status = read_fields(p, group, path, op_fields, sizeof op_fields / sizeof op_fields[0], op);
    for (int32_t i = 0; status == CLOPS_OK && i < decl.count; i++) {
        const config_setting_t *member = config_setting_get_member(group, decl.list[i].name);
        if (member == NULL)
            continue;
        char member_path[KEY_PATH_MAX];
        child_path(member_path, path, decl.list[i].name);
        struct field f = setting_field(&decl.list[i], i);
        status = f.parse(p, &f, member, member_path, op);
        op->origin[i] = SETTING_KEY;
    }
    const config_setting_t *options = config_setting_get_member(group, "build_options");
    if (status == CLOPS_OK && options != NULL) {
        char options_path[KEY_PATH_MAX];
        child_path(options_path, path, "build_options");
        status = take_old_spellings(p, options, options_path, &decl, op);
    }
    return status;
}

int32_t config_op_setting(const struct config_op *op, const char *op_name, const char *setting,
                          int32_t device_default)
{
    const struct op_settings decl = config_op_declared_settings(op_name);
    int32_t i = find_setting(&decl, setting);
    if (i < 0)
        return device_default;
    if (op != NULL && op->origin[i] != SETTING_DEFAULT)
        return op->values[i];
    return decl.list[i].def != SETTING_PER_DEVICE ? decl.list[i].def : device_default;
}

void config_op_describe_settings(const struct config_op *op, const char *op_name, char *out,
                                 size_t size)
{
    const struct op_settings decl = config_op_declared_settings(op_name);
    size_t used = 0;
    out[0] = '\0';
    for (int32_t i = 0; op != NULL && i < decl.count && used < size; i++) {
        const struct op_setting *d = &decl.list[i];
        const char *sep = used > 0 ? ", " : "";
        if (op->origin[i] == SETTING_KEY && d->type == SETTING_BOOL)
            used += (size_t)snprintf(out + used, size - used, "%soperators.%s.%s = %s", sep,
                                     op_name, d->name, op->values[i] ? "true" : "false");
        else if (op->origin[i] == SETTING_KEY)
            used += (size_t)snprintf(out + used, size - used, "%soperators.%s.%s = %d", sep,
                                     op_name, d->name, (int)op->values[i]);
        else if (op->origin[i] == SETTING_BUILD_OPTIONS)
            used +=
                (size_t)snprintf(out + used, size - used, "%soperators.%s.build_options -D%s=%d",
                                 sep, op_name, d->define, (int)op->values[i]);
    }
    if (out[0] == '\0')
        snprintf(out, size, "the defaults");
}

static int32_t fail_unknown_operator(const struct parser *p, const config_setting_t *s,
                                     const char *path)
{
    char registered[512] = "";
    size_t used = 0;
    for (int32_t i = 0; i < registry_count() && used < sizeof registered; i++)
        used += (size_t)snprintf(registered + used, sizeof registered - used, "%s%s",
                                 i > 0 ? ", " : "", registry_at(i)->name);
    return fail(p, s, path, "unknown operator '%s' (registered: %s)", config_setting_name(s),
                registered);
}

static int32_t parse_operator_entry(const struct parser *p, const config_setting_t *entry,
                                    const char *path, const char *entry_path, int i, int n)
{
    const char *name = config_setting_name(entry);
    if (registry_find(name) == NULL)
        return fail_unknown_operator(p, entry, path);
    if (i >= CONFIG_MAX_OPS)
        return fail(p, entry, entry_path, "too many operators: %d configured, at most %d", n,
                    (int)CONFIG_MAX_OPS);
    struct config_op *op = &p->cfg->ops[i];
    op_defaults(op);
    if (strlen(name) >= sizeof op->name)
        return fail(p, entry, entry_path, "operator name longer than %zu characters",
                    sizeof op->name - 1);
    strcpy(op->name, name);
    return parse_operator(p, entry, entry_path, op);
}

static int32_t parse_operators(const struct parser *p, const struct field *f,
                               const config_setting_t *s, const char *path, void *base)
{
    return parse_entries(p, f, s, path, base, CONFIG_TYPE_GROUP,
                         "a group { <operator> = { ... }; ... }", parse_operator_entry);
}

/* ---- cache and the top level ----------------------------------------------------------------- */

static const struct field cache_fields[] = {
    {"enabled", parse_bool, offsetof(struct pool_config, cache_enabled), 0, 0, 0},
    {"dir", parse_string, offsetof(struct pool_config, cache_dir),
     MEMBER_SIZE(struct pool_config, cache_dir), 0, 0},
};

static int32_t parse_cache(const struct parser *p, const struct field *f, const config_setting_t *s,
                           const char *path, void *base)
{
    (void)f;
    return parse_group(p, s, path, cache_fields, sizeof cache_fields / sizeof cache_fields[0],
                       base);
}

/* `devices` comes before `operators`: an operator's device index is checked against it. */
static const struct field top_fields[] = {
    {"devices", parse_devices, offsetof(struct pool_config, device_count), 0, 0, 0},
    {"cpu_fallback", parse_bool, offsetof(struct pool_config, cpu_fallback), 0, 0, 0},
    {"profiling", parse_bool, offsetof(struct pool_config, profiling), 0, 0, 0},
    {"kernel_times", parse_bool, offsetof(struct pool_config, kernel_times), 0, 0, 0},
    {"device_memory_percent", parse_int, offsetof(struct pool_config, device_memory_percent), 0, 1,
     100},
    {"build_options", parse_string, offsetof(struct pool_config, build_options),
     MEMBER_SIZE(struct pool_config, build_options), 0, 0},
    {"cache", parse_cache, 0, 0, 0, 0},
    {"kernel_dir", parse_string, offsetof(struct pool_config, kernel_dir),
     MEMBER_SIZE(struct pool_config, kernel_dir), 0, 0},
    {"operators", parse_operators, offsetof(struct pool_config, op_count), 0, 0, 0},
};

void config_defaults(struct pool_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int32_t i = 0; i < CONFIG_MAX_DEVICES; i++)
        device_defaults(&cfg->devices[i]);
    for (int32_t i = 0; i < CONFIG_MAX_OPS; i++)
        op_defaults(&cfg->ops[i]);
    cfg->device_count = 0;
    cfg->cpu_fallback = 1;
    /* Off unless asked: an event on a profiling queue adds about 8 us to every call on NVIDIA's
     * driver (18 against 10 us for a kernel's launch and wait on an H200), as much as a
     * reduction of 16 MB takes; device time is a diagnostic, not every call's business. */
    cfg->profiling = 0;
    cfg->device_memory_percent = CONFIG_DEVICE_MEMORY_PERCENT;
    cfg->cache_enabled = 1;
    cfg->op_count = 0;
}

/* Turns a read (`read_ok` from config_read*) into `cfg`. On failure `cfg` is left at the
 * defaults, so a caller that ignores the status still gets a consistent configuration. */
static int32_t parse_config(config_t *cf, int read_ok, const char *source, struct pool_config *cfg)
{
    int32_t status;
    if (!read_ok) {
        const char *file = config_error_file(cf);
        status = err_set(CLOPS_ERR_CONFIG, "%s:%d: %s", file != NULL ? file : source,
                         config_error_line(cf), config_error_text(cf));
    } else {
        struct parser p = {source, cfg};
        status = parse_group(&p, config_root_setting(cf), "", top_fields,
                             sizeof top_fields / sizeof top_fields[0], cfg);
        /* Kernel times are read from the profiling events: asking for them asks for those. */
        if (cfg->kernel_times)
            cfg->profiling = 1;
    }
    if (status != CLOPS_OK) {
        config_defaults(cfg);
        snprintf(cfg->source, sizeof cfg->source, "%s", source);
    }
    return status;
}

/* libconfig 1.5 wraps an integer literal too wide for it without an error (4294967299 reads as
 * 3): such a literal is refused at its line before libconfig reads the text. */
static int32_t check_literals(const char *text, const char *source)
{
    struct wide_literal wide;
    if (literal_scan_first(text, &wide))
        return err_set(CLOPS_ERR_CONFIG, "%s:%d: %s", source, wide.line, wide.message);
    return CLOPS_OK;
}

int32_t config_parse_string(const char *text, struct pool_config *cfg)
{
    config_defaults(cfg);
    snprintf(cfg->source, sizeof cfg->source, "%s", source_string);
    if (text == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "config_parse_string: parameter 'text' is NULL");
    int32_t status = check_literals(text, source_string);
    if (status != CLOPS_OK)
        return status;
    config_t cf;
    config_init(&cf);
    int read_ok = config_read_string(&cf, text) == CONFIG_TRUE;
    status = parse_config(&cf, read_ok, source_string, cfg);
    config_destroy(&cf);
    return status;
}

/* Opened here rather than by config_read_file(), which reports only "file I/O error": the
 * message must say which file and why. */
static int32_t open_config_file(const char *path, FILE **out)
{
    struct os_file_info info;
    FILE *f = os_open_regular(path, 0, &info);
    if (f == NULL && errno == EINVAL && info.kind == OS_FILE_DIRECTORY)
        errno = EISDIR;
    if (f == NULL && errno == EINVAL)
        return err_set(CLOPS_ERR_IO,
                       "%s: cannot read the configuration file: it is %s, not a regular file", path,
                       os_file_kind_name(info.kind));
    if (f == NULL)
        return err_set(CLOPS_ERR_IO, "%s: cannot open the configuration file: %s", path,
                       strerror(errno));
    *out = f;
    return CLOPS_OK;
}

static int32_t read_failed(const char *path)
{
    return err_set(CLOPS_ERR_IO, "%s: error reading the configuration file", path);
}

/* The whole of `f` as a string (allocated), or NULL when memory runs out; ferror(f) says
 * whether the read failed. */
static char *read_all(FILE *f)
{
    size_t size = 0, capacity = 4096;
    char *text = malloc(capacity);
    while (text != NULL) {
        size += fread(text + size, 1, capacity - 1 - size, f);
        if (size < capacity - 1)
            break;
        char *larger = realloc(text, capacity *= 2);
        if (larger == NULL)
            free(text);
        text = larger;
    }
    if (text != NULL)
        text[size] = '\0';
    return text;
}

/* check_literals() on the file's text, and `f` back at its start for libconfig, which reads
 * the stream itself: a NUL byte is a syntax error there, where a string would end at it. */
static int32_t check_file_literals(FILE *f, const char *path)
{
    char *text = read_all(f);
    if (text == NULL)
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: no memory to read the configuration file",
                       path);
    int32_t status = ferror(f) ? read_failed(path) : check_literals(text, path);
    free(text);
    rewind(f);
    return status;
}

int32_t config_parse_file(const char *path, struct pool_config *cfg)
{
    config_defaults(cfg);
    if (path == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "config_parse_file: parameter 'path' is NULL");
    snprintf(cfg->source, sizeof cfg->source, "%s", path);
    FILE *f = NULL;
    int32_t status = open_config_file(path, &f);
    if (status != CLOPS_OK)
        return status;
    status = check_file_literals(f, path);
    if (status != CLOPS_OK) {
        fclose(f);
        return status;
    }
    config_t cf;
    config_init(&cf);
    int read_ok = config_read(&cf, f) == CONFIG_TRUE;
    int failed = ferror(f);
    fclose(f);
    if (failed)
        status = read_failed(path);
    else
        status = parse_config(&cf, read_ok, path, cfg);
    config_destroy(&cf);
    return status;
}

const struct config_op *config_find_op(const struct pool_config *cfg, const char *name)
{
    for (int32_t i = 0; name != NULL && i < cfg->op_count; i++)
        if (strcmp(cfg->ops[i].name, name) == 0)
            return &cfg->ops[i];
    return NULL;
}
