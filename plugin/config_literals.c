/* config_literals.c — finds the integer literals of libconfig text that do not fit the width
 * libconfig reads them at (config_literals.h), following libconfig's own tokens so that a
 * number in a string, a comment or a setting's name is not taken for one. */
#include "config_literals.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Longer literals are cut in messages: beyond 20 digits nothing fits anyway. */
enum { SHOWN_MAX = 64 };

/* A scan of one text. */
struct literal_scan {
    const char *at; /* where the scan goes on */
    int line;       /* the line `at` is on */
};

/* One integer literal: its bytes, the L suffix apart, and its magnitude. */
struct int_literal {
    const char *start;
    int length;      /* sign and digits, without the suffix */
    int long_suffix; /* L or LL: libconfig reads it at 64 bits */
    int negative;
    int too_big; /* beyond 64 bits of magnitude */
    uint64_t magnitude;
};

static int is_digit(char c)
{
    return isdigit((unsigned char)c) != 0;
}

/* libconfig's names: [A-Za-z*][-A-Za-z0-9_*]*. */
static int is_name_start(char c)
{
    return isalpha((unsigned char)c) || c == '*';
}

static int is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '*' || c == '-' || c == '_';
}

/* Past the end of the line (the newline is left to the main loop, which counts it). */
static const char *line_end(const char *p)
{
    const char *nl = strchr(p, '\n');
    return nl != NULL ? nl : p + strlen(p);
}

/* Past `close` from `p`, counting the lines crossed; NULL when the text ends first. `escapes`:
 * a backslash takes the next character along (strings). */
static const char *skip_until(struct literal_scan *scan, const char *p, const char *close,
                              int escapes)
{
    size_t close_len = strlen(close);
    for (; *p != '\0'; p++) {
        if (strncmp(p, close, close_len) == 0)
            return p + close_len;
        if (escapes && *p == '\\' && p[1] != '\0')
            p++;
        if (*p == '\n')
            scan->line++;
    }
    return NULL;
}

/* Whether a number starts at `p`: a digit, a sign before a digit or a '.', or ".5". */
static int number_starts(const char *p)
{
    if (*p == '+' || *p == '-')
        p++;
    return is_digit(*p) || (*p == '.' && is_digit(p[1]));
}

/* Adds `digits` (in `base`) to the literal's magnitude; returns where they end. */
static const char *read_digits(const char *p, int base, struct int_literal *lit)
{
    for (;; p++) {
        int digit;
        if (is_digit(*p))
            digit = *p - '0';
        else if (base == 16 && isxdigit((unsigned char)*p))
            digit = tolower((unsigned char)*p) - 'a' + 10;
        else
            return p;
        if (lit->magnitude > (UINT64_MAX - (uint64_t)digit) / (uint64_t)base)
            lit->too_big = 1;
        lit->magnitude = lit->magnitude * (uint64_t)base + (uint64_t)digit;
    }
}

/* Past an exponent ("e10", "E-3") at `p`, or NULL when there is none. */
static const char *skip_exponent(const char *p)
{
    if (*p != 'e' && *p != 'E')
        return NULL;
    p++;
    if (*p == '+' || *p == '-')
        p++;
    if (!is_digit(*p))
        return NULL;
    while (is_digit(*p))
        p++;
    return p;
}

/* Whether the digits before `p` are a float's, as libconfig's scanner has them: "1.", "1.5",
 * "1e10". */
static int starts_float(const char *p)
{
    return *p == '.' || skip_exponent(p) != NULL;
}

/* Past a float's fraction and exponent. */
static const char *skip_float(const char *p)
{
    if (*p == '.')
        for (p++; is_digit(*p); p++)
            continue;
    const char *end = skip_exponent(p);
    return end != NULL ? end : p;
}

/* Reads the number at `p`. Returns where it ends; *is_int says whether it is an integer (into
 * *lit) rather than a float. */
static const char *read_number(const char *p, struct int_literal *lit, int *is_int)
{
    memset(lit, 0, sizeof *lit);
    lit->start = p;
    lit->negative = *p == '-';
    if (*p == '+' || *p == '-')
        p++;
    int hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2]);
    p = read_digits(hex ? p + 2 : p, hex ? 16 : 10, lit);
    *is_int = hex || !starts_float(p);
    if (!*is_int)
        return skip_float(p);
    lit->length = (int)(p - lit->start);
    for (; *p == 'L' && lit->long_suffix < 2; p++)
        lit->long_suffix++;
    return p;
}

/* Whether the literal fits in `bits` (32 or 64) as a signed integer. */
static int fits(const struct int_literal *lit, int bits)
{
    uint64_t max = bits == 32 ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX;
    return !lit->too_big && lit->magnitude <= max + (lit->negative ? 1u : 0u);
}

static void describe(const struct int_literal *lit, char *out, size_t size)
{
    int shown = lit->length < SHOWN_MAX ? lit->length : SHOWN_MAX;
    const char *cut = lit->length > SHOWN_MAX ? "..." : "";
    const char *suffix = lit->long_suffix == 2 ? "LL" : lit->long_suffix == 1 ? "L" : "";
    if (lit->long_suffix == 0 && fits(lit, 64))
        snprintf(out, size, "%.*s does not fit in 32 bits; write %.*sL", shown, lit->start, shown,
                 lit->start);
    else
        snprintf(out, size, "%.*s%s%s does not fit in 64 bits", shown, lit->start, cut, suffix);
}

/* Past the token at `p` that is not a number: a comment, a string, an @include line, a name, or
 * one character. NULL at a string or comment left open. */
static const char *skip_token(struct literal_scan *scan, const char *p)
{
    if (*p == '#' || (p[0] == '/' && p[1] == '/') || *p == '@')
        return line_end(p);
    if (p[0] == '/' && p[1] == '*')
        return skip_until(scan, p + 2, "*/", 0);
    if (*p == '"')
        return skip_until(scan, p + 1, "\"", 1);
    if (is_name_start(*p)) {
        while (is_name_char(*p))
            p++;
        return p;
    }
    if (*p == '\n')
        scan->line++;
    return p + 1;
}

/* Moves to the next literal that does not fit: 1 with it in *out, or 0 at the end. */
static int scan_next(struct literal_scan *scan, struct wide_literal *out)
{
    const char *p = scan->at;
    while (p != NULL && *p != '\0') {
        if (!number_starts(p)) {
            p = skip_token(scan, p);
            continue;
        }
        struct int_literal lit;
        int is_int = 0;
        p = read_number(p, &lit, &is_int);
        if (is_int && !fits(&lit, lit.long_suffix ? 64 : 32)) {
            scan->at = p;
            out->line = scan->line;
            describe(&lit, out->message, sizeof out->message);
            return 1;
        }
    }
    scan->at = p != NULL ? p : "";
    return 0;
}

int literal_scan_first(const char *text, struct wide_literal *out)
{
    struct literal_scan scan = {text, 1};
    return scan_next(&scan, out);
}

int literal_scan_all(const char *text, wide_literal_found found, void *ctx)
{
    struct literal_scan scan = {text, 1};
    struct wide_literal wide;
    int count = 0;
    for (; scan_next(&scan, &wide); count++)
        found(ctx, &wide);
    return count;
}
