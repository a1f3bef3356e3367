/* json_read.c — the JSON reader (json_read.h): recursive descent over the text, strings decoded
 * to UTF-8 (\uXXXX escapes and surrogate pairs included), numbers kept as doubles and, when
 * written as integers, exactly. */
#include "json_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_os.h"
#include "util.h"

enum { JSON_READ_MAX_DEPTH = 64 };

struct parser {
    const char *at, *end, *start;
    char *err;
    size_t errsize;
    int failed;
};

static int fail(struct parser *p, const char *fmt, ...)
{
    if (p->failed)
        return -1;
    p->failed = 1;
    int line = 1;
    for (const char *c = p->start; c < p->at && c < p->end; c++)
        line += *c == '\n';
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errsize, "line %d: %s", line, what);
    return -1;
}

/* The byte at p->at as a message shows it: printable ASCII quoted, anything else (a newline, an
 * escape sequence from a forged file, bytes past ASCII) as \xHH, so that a message stays one
 * line and cannot reach the terminal as a control sequence; "the end of the text" past it. */
static const char *shown_byte(unsigned char c, char out[8])
{
    if (c >= 0x20 && c < 0x7f)
        snprintf(out, 8, "'%c'", (char)c);
    else
        snprintf(out, 8, "\\x%02X", (unsigned)c);
    return out;
}

static int unexpected(struct parser *p)
{
    char shown[8];
    if (p->at >= p->end)
        return fail(p, "unexpected end of the text");
    return fail(p, "unexpected %s", shown_byte((unsigned char)*p->at, shown));
}

static void skip_blanks(struct parser *p)
{
    while (p->at < p->end && (*p->at == ' ' || *p->at == '\t' || *p->at == '\n' || *p->at == '\r'))
        p->at++;
}

static int literal(struct parser *p, const char *word)
{
    /* At the first byte that differs, which may be the end of the text. */
    for (; *word != '\0'; word++, p->at++)
        if (p->at >= p->end || *p->at != *word)
            return unexpected(p);
    return 0;
}

static int hex4(struct parser *p, unsigned *out)
{
    if (p->end - p->at < 4)
        return fail(p, "\\u needs 4 hexadecimal digits");
    *out = 0;
    for (int i = 0; i < 4; i++) {
        char c = *p->at++;
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16u)
            return fail(p, "\\u needs 4 hexadecimal digits");
        *out = *out * 16 + d;
    }
    return 0;
}

static size_t put_utf8(char *out, unsigned code)
{
    if (code < 0x80) {
        out[0] = (char)code;
        return 1;
    }
    if (code < 0x800) {
        out[0] = (char)(0xC0 | (code >> 6));
        out[1] = (char)(0x80 | (code & 0x3F));
        return 2;
    }
    if (code < 0x10000) {
        out[0] = (char)(0xE0 | (code >> 12));
        out[1] = (char)(0x80 | ((code >> 6) & 0x3F));
        out[2] = (char)(0x80 | (code & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (code >> 18));
    out[1] = (char)(0x80 | ((code >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((code >> 6) & 0x3F));
    out[3] = (char)(0x80 | (code & 0x3F));
    return 4;
}

/* An escape's code point: a surrogate pair is one; a lone surrogate becomes U+FFFD. */
static int unicode_escape(struct parser *p, unsigned *code)
{
    if (hex4(p, code) != 0)
        return -1;
    if (*code >= 0xD800 && *code < 0xDC00 && p->end - p->at >= 6 && p->at[0] == '\\' &&
        p->at[1] == 'u') {
        const char *back = p->at;
        unsigned low;
        p->at += 2;
        if (hex4(p, &low) != 0)
            return -1;
        if (low >= 0xDC00 && low < 0xE000) {
            *code = 0x10000 + ((*code - 0xD800) << 10) + (low - 0xDC00);
            return 0;
        }
        p->at = back;
    }
    if (*code >= 0xD800 && *code < 0xE000)
        *code = 0xFFFD;
    return 0;
}

/* The string at p->at (after its opening quote), decoded; NULL on failure. */
static char *string(struct parser *p)
{
    /* Decoded text is never longer than the escaped text. */
    const char *close = p->at;
    while (close < p->end && *close != '"')
        close += *close == '\\' && close + 1 < p->end ? 2 : 1;
    if (close >= p->end) {
        fail(p, "unterminated string");
        return NULL;
    }
    char *out = malloc((size_t)(close - p->at) + 1), *o = out;
    if (out == NULL) {
        fail(p, "out of memory");
        return NULL;
    }
    while (*p->at != '"') {
        unsigned char c = (unsigned char)*p->at++;
        if (c < 0x20) {
            p->at--;
            fail(p, "a control character in a string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            *o++ = (char)c;
            continue;
        }
        char e = *p->at++, shown[8];
        unsigned code = 0;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u':
            if (unicode_escape(p, &code) != 0) {
                free(out);
                return NULL;
            }
            o += put_utf8(o, code);
            break;
        default:
            p->at--;
            fail(p, "unknown escape: a backslash before %s", shown_byte((unsigned char)e, shown));
            free(out);
            return NULL;
        }
    }
    p->at++;
    *o = '\0';
    return out;
}

static int number(struct parser *p, struct json_value *v)
{
    const char *begin = p->at;
    if (p->at < p->end && *p->at == '-')
        p->at++;
    if (p->at >= p->end || *p->at < '0' || *p->at > '9')
        return fail(p, "a number needs digits");
    if (*p->at == '0' && p->at + 1 < p->end && p->at[1] >= '0' && p->at[1] <= '9')
        return fail(p, "a number cannot start with 0");
    int integral = 1;
    while (p->at < p->end &&
           ((*p->at >= '0' && *p->at <= '9') || (*p->at != '\0' && strchr(".eE+-", *p->at)))) {
        integral &= (*p->at >= '0' && *p->at <= '9') || (*p->at == '-' && p->at == begin);
        p->at++;
    }
    char text[64];
    size_t n = (size_t)(p->at - begin);
    if (n >= sizeof text)
        return fail(p, "a number of more than 63 characters");
    memcpy(text, begin, n);
    text[n] = '\0';
    char *stop;
    v->type = JSON_NUMBER;
    v->number = strtod(text, &stop);
    if (*stop != '\0')
        return fail(p, "malformed number '%s'", text);
    if (integral) {
        errno = 0;
        v->integer = strtoll(text, &stop, 10);
        v->is_integer = errno == 0 && *stop == '\0';
    }
    return 0;
}

static int value(struct parser *p, struct json_value *v, int depth);

static int grow(struct parser *p, struct json_value *v, int with_keys)
{
    if ((v->count & (v->count - 1)) == 0) { /* full at 0, 1, 2, 4, ...: double the room */
        size_t room = v->count == 0 ? 1 : (size_t)v->count * 2;
        struct json_value *items = realloc(v->items, room * sizeof *items);
        if (items == NULL)
            return fail(p, "out of memory");
        v->items = items;
        if (with_keys) {
            char **keys = realloc(v->keys, room * sizeof *keys);
            if (keys == NULL)
                return fail(p, "out of memory");
            v->keys = keys;
        }
    }
    memset(&v->items[v->count], 0, sizeof v->items[0]);
    if (with_keys)
        v->keys[v->count] = NULL;
    v->count++;
    return 0;
}

/* An array's or an object's elements, after its opening bracket. */
static int container(struct parser *p, struct json_value *v, int object, int depth)
{
    char close = object ? '}' : ']';
    v->type = object ? JSON_OBJECT : JSON_ARRAY;
    skip_blanks(p);
    if (p->at < p->end && *p->at == close) {
        p->at++;
        return 0;
    }
    for (;;) {
        if (grow(p, v, object) != 0)
            return -1;
        skip_blanks(p);
        if (object) {
            if (p->at >= p->end || *p->at != '"')
                return fail(p, "expected a member's name in quotes");
            p->at++;
            if ((v->keys[v->count - 1] = string(p)) == NULL)
                return -1;
            skip_blanks(p);
            if (p->at >= p->end || *p->at != ':')
                return fail(p, "expected ':' after a member's name");
            p->at++;
        }
        if (value(p, &v->items[v->count - 1], depth + 1) != 0)
            return -1;
        skip_blanks(p);
        if (p->at < p->end && *p->at == ',') {
            p->at++;
            continue;
        }
        if (p->at < p->end && *p->at == close) {
            p->at++;
            return 0;
        }
        return fail(p, "expected ',' or '%c'", close);
    }
}

static int value(struct parser *p, struct json_value *v, int depth)
{
    if (depth > JSON_READ_MAX_DEPTH)
        return fail(p, "nested more than %d levels", JSON_READ_MAX_DEPTH);
    skip_blanks(p);
    if (p->at >= p->end)
        return fail(p, "unexpected end of the text");
    switch (*p->at) {
    case '{': p->at++; return container(p, v, 1, depth);
    case '[': p->at++; return container(p, v, 0, depth);
    case '"':
        p->at++;
        v->type = JSON_STRING;
        return (v->string = string(p)) != NULL ? 0 : -1;
    case 't':
        v->type = JSON_BOOL;
        v->boolean = 1;
        return literal(p, "true");
    case 'f': v->type = JSON_BOOL; return literal(p, "false");
    case 'n': v->type = JSON_NULL; return literal(p, "null");
    default:
        if (*p->at != '-' && (*p->at < '0' || *p->at > '9'))
            return unexpected(p);
        return number(p, v);
    }
}

int json_parse(const char *text, size_t size, struct json_value *out, char *err, size_t errsize)
{
    memset(out, 0, sizeof *out);
    struct parser p = {
        .at = text, .end = text + size, .start = text, .err = err, .errsize = errsize};
    if (value(&p, out, 0) != 0)
        return -1;
    skip_blanks(&p);
    if (p.at != p.end)
        return fail(&p, "text after the value");
    return 0;
}

/* The whole file into memory, refused before allocating when it is over `limit`; it is read
 * to one byte past its size, so a file that grows while read is refused too. */
static char *read_bounded(FILE *f, const char *path, int64_t bytes, int64_t limit, size_t *size,
                          char *err, size_t errsize)
{
    if (bytes > limit) {
        snprintf(err, errsize, "%s: %lld bytes, larger than a document read back can be (%lld)",
                 path, (long long)bytes, (long long)limit);
        return NULL;
    }
    char *text = host_xmalloc((size_t)bytes + 1);
    *size = fread(text, 1, (size_t)bytes + 1, f);
    if (ferror(f) || *size > (size_t)bytes) {
        snprintf(err, errsize, "%s: %s", path,
                 ferror(f) ? "read error" : "it grew while it was read");
        free(text);
        return NULL;
    }
    return text;
}

int json_parse_file(const char *path, struct json_value *out, char *err, size_t errsize)
{
    memset(out, 0, sizeof *out);
    int64_t bytes = 0;
    size_t size = 0;
    FILE *f = host_open_regular(path, &bytes, err, errsize);
    if (f == NULL)
        return -1;
    char *text = read_bounded(f, path, bytes, JSON_READ_MAX_BYTES, &size, err, errsize);
    fclose(f);
    if (text == NULL)
        return -1;
    char why[300];
    int rc = json_parse(text, size, out, why, sizeof why);
    if (rc != 0)
        snprintf(err, errsize, "%s: %s", path, why);
    free(text);
    return rc;
}

void json_value_free(struct json_value *v)
{
    for (int i = 0; i < v->count; i++) {
        json_value_free(&v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    memset(v, 0, sizeof *v);
}

const struct json_value *json_member(const struct json_value *object, const char *key)
{
    if (object == NULL || object->type != JSON_OBJECT)
        return NULL;
    for (int i = 0; i < object->count; i++)
        if (object->keys[i] != NULL && strcmp(object->keys[i], key) == 0)
            return &object->items[i];
    return NULL;
}

const char *json_member_text(const struct json_value *object, const char *key)
{
    const struct json_value *v = json_member(object, key);
    return v != NULL && v->type == JSON_STRING ? v->string : NULL;
}

int json_member_integer(const struct json_value *object, const char *key, int64_t *out)
{
    const struct json_value *v = json_member(object, key);
    if (v == NULL || v->type != JSON_NUMBER || !v->is_integer)
        return -1;
    *out = v->integer;
    return 0;
}
