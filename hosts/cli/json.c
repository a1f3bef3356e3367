/* json.c — the `clops` command's JSON writer (json.h): escaping, numbers, and the nesting
 * checks that turn a caller's misuse into an error instead of malformed output. */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void json_init(struct json_writer *w, FILE *out, enum json_style style)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->style = style;
}

static int fail(struct json_writer *w, int status)
{
    if (w->status == JSON_OK)
        w->status = status;
    return 0;
}

static void newline_and_indent(struct json_writer *w, int depth)
{
    fputc('\n', w->out);
    for (int i = 0; i < depth; i++)
        fputs("  ", w->out);
}

/* Whether a value may come now; if so, writes what goes before it (a comma, a line break). */
static int value_due(struct json_writer *w)
{
    if (w->status != JSON_OK)
        return 0;
    if (w->depth == 0)
        return w->done ? fail(w, JSON_ERR_MISUSE) : 1;
    int top = w->depth - 1;
    if (w->object[top]) {
        if (!w->after_key)
            return fail(w, JSON_ERR_MISUSE);
        w->after_key = 0;
        return 1; /* json_key wrote the separator */
    }
    if (w->count[top] > 0)
        fputc(',', w->out);
    if (w->style == JSON_PRETTY)
        newline_and_indent(w, w->depth);
    w->count[top]++;
    return 1;
}

static void value_written(struct json_writer *w)
{
    if (w->depth == 0)
        w->done = 1;
}

static void begin(struct json_writer *w, int object)
{
    if (!value_due(w))
        return;
    if (w->depth == JSON_MAX_DEPTH) {
        fail(w, JSON_ERR_MISUSE);
        return;
    }
    fputc(object ? '{' : '[', w->out);
    w->object[w->depth] = (unsigned char)object;
    w->count[w->depth] = 0;
    w->depth++;
}

static void end(struct json_writer *w, int object)
{
    if (w->status != JSON_OK)
        return;
    if (w->depth == 0 || w->object[w->depth - 1] != object || w->after_key) {
        fail(w, JSON_ERR_MISUSE);
        return;
    }
    w->depth--;
    if (w->style == JSON_PRETTY && w->count[w->depth] > 0)
        newline_and_indent(w, w->depth);
    fputc(object ? '}' : ']', w->out);
    value_written(w);
}

void json_begin_object(struct json_writer *w)
{
    begin(w, 1);
}

void json_end_object(struct json_writer *w)
{
    end(w, 1);
}

void json_begin_array(struct json_writer *w)
{
    begin(w, 0);
}

void json_end_array(struct json_writer *w)
{
    end(w, 0);
}

/* The length of the valid UTF-8 sequence at `s` (1 to 4), or 0 when the byte at `s` does not
 * start one (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF). */
static int utf8_sequence_length(const unsigned char *s)
{
    unsigned char c = s[0];
    int length;
    unsigned char low = 0x80, high = 0xBF; /* the range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        length = 3;
        if (c == 0xE0)
            low = 0xA0; /* overlong below U+0800 */
        else if (c == 0xED)
            high = 0x9F; /* U+D800..U+DFFF, the surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        length = 4;
        if (c == 0xF0)
            low = 0x90; /* overlong below U+10000 */
        else if (c == 0xF4)
            high = 0x8F; /* past U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0, C1 (always overlong) or F5..FF */
    }
    if (s[1] < low || s[1] > high)
        return 0;
    for (int i = 2; i < length; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return length;
}

static void write_escaped(FILE *out, const char *text)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';) {
        unsigned char c = *p;
        const char *escape = NULL;
        switch (c) {
        case '"': escape = "\\\""; break;
        case '\\': escape = "\\\\"; break;
        case '\b': escape = "\\b"; break;
        case '\f': escape = "\\f"; break;
        case '\n': escape = "\\n"; break;
        case '\r': escape = "\\r"; break;
        case '\t': escape = "\\t"; break;
        default: break;
        }
        if (escape != NULL) {
            fputs(escape, out);
            p++;
        } else if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
            p++;
        } else {
            /* A NUL ends the string, so a sequence cut short by it is found invalid at the NUL
             * without reading past it. */
            int length = utf8_sequence_length(p);
            if (length == 0) {
                fputs(replacement, out);
                p++;
            } else {
                fwrite(p, 1, (size_t)length, out);
                p += length;
            }
        }
    }
    fputc('"', out);
}

void json_key(struct json_writer *w, const char *key)
{
    if (w->status != JSON_OK)
        return;
    if (w->depth == 0 || !w->object[w->depth - 1] || w->after_key || key == NULL) {
        fail(w, JSON_ERR_MISUSE);
        return;
    }
    int top = w->depth - 1;
    if (w->count[top] > 0)
        fputc(',', w->out);
    if (w->style == JSON_PRETTY)
        newline_and_indent(w, w->depth);
    write_escaped(w->out, key);
    fputs(w->style == JSON_PRETTY ? ": " : ":", w->out);
    w->count[top]++;
    w->after_key = 1;
}

void json_string(struct json_writer *w, const char *s)
{
    if (s == NULL) {
        json_null(w);
        return;
    }
    if (!value_due(w))
        return;
    write_escaped(w->out, s);
    value_written(w);
}

void json_int(struct json_writer *w, int64_t value)
{
    if (!value_due(w))
        return;
    fprintf(w->out, "%" PRId64, value);
    value_written(w);
}

/* The shortest decimal that strtod reads back as `value` (1 to 17 significant digits), laid out
 * as Python's repr() lays out floats: positional when the decimal exponent is in -4..15
 * (0.001, 100.0, 2.5), else scientific (1e-05, 1.5e+300); ".0" makes an integral value read as
 * a double. */
static void format_double(double value, char *out, size_t size)
{
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(out, size, "%.*e", digits - 1, value);
        if (strtod(out, NULL) == value)
            break;
    }
    snprintf(out, size, "%.*e", digits - 1, value);
    int exponent = atoi(strchr(out, 'e') + 1);
    if (exponent >= -4 && exponent < 16) {
        int decimals = digits - 1 - exponent;
        snprintf(out, size, "%.*f", decimals > 0 ? decimals : 0, value);
    }
    /* The C locale's decimal point is '.'; clops never calls setlocale, but a host that does
     * must not get "1,5" into JSON. */
    for (char *p = out; *p != '\0'; p++)
        if (*p == ',')
            *p = '.';
    if (strpbrk(out, ".e") == NULL)
        strncat(out, ".0", size - strlen(out) - 1);
}

void json_double(struct json_writer *w, double value)
{
    if (!isfinite(value)) {
        json_null(w);
        return;
    }
    if (!value_due(w))
        return;
    char text[40];
    format_double(value, text, sizeof text);
    fputs(text, w->out);
    value_written(w);
}

void json_bool(struct json_writer *w, int value)
{
    if (!value_due(w))
        return;
    fputs(value ? "true" : "false", w->out);
    value_written(w);
}

void json_null(struct json_writer *w)
{
    if (!value_due(w))
        return;
    fputs("null", w->out);
    value_written(w);
}

void json_member_string(struct json_writer *w, const char *key, const char *value)
{
    json_key(w, key);
    json_string(w, value);
}

void json_member_int(struct json_writer *w, const char *key, int64_t value)
{
    json_key(w, key);
    json_int(w, value);
}

void json_member_double(struct json_writer *w, const char *key, double value)
{
    json_key(w, key);
    json_double(w, value);
}

void json_member_bool(struct json_writer *w, const char *key, int value)
{
    json_key(w, key);
    json_bool(w, value);
}

int json_finish(struct json_writer *w)
{
    if (w->status == JSON_OK && !w->done)
        fail(w, JSON_ERR_MISUSE);
    if (w->status == JSON_OK) {
        fputc('\n', w->out);
        if (fflush(w->out) != 0 || ferror(w->out))
            fail(w, JSON_ERR_IO);
    }
    return w->status;
}
