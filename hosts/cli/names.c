/* names.c — file names from pipelines and manifests (names.h): UTF-8 validity, lexical
 * normalisation, containment under a directory, escaping for a terminal. */
#include "names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_os.h"
#include "util.h"

/* The length of the well-formed UTF-8 sequence at `s` (RFC 3629, table 3-7 of the Unicode
 * standard), its code point in *code; 0 when `s` does not begin one. */
static int utf8_sequence(const unsigned char *s, unsigned *code)
{
    int length = s[0] < 0x80                    ? 1
                 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2
                 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
                 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4
                                                : 0;
    if (length == 0)
        return 0;
    *code = length == 1 ? s[0] : s[0] & (0x7F >> length);
    for (int i = 1; i < length; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        *code = *code << 6 | (s[i] & 0x3F);
    }
    static const unsigned smallest[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (*code < smallest[length] || *code > 0x10FFFF || (*code >= 0xD800 && *code < 0xE000))
        return 0;
    return length;
}

long name_utf8_error(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned code;
    for (long at = 0; p[at] != '\0';) {
        int n = utf8_sequence(p + at, &code);
        if (n == 0)
            return at;
        at += n;
    }
    return -1;
}

/* One component of a path: `length` bytes at `at`. */
struct component {
    const char *at;
    size_t length;
};

static int is_dot_dot(struct component c)
{
    return c.length == 2 && c.at[0] == '.' && c.at[1] == '.';
}

char *name_normalized(const char *path)
{
    size_t size = strlen(path);
    int absolute = host_path_is_absolute(path);
    struct component *kept = host_xcalloc(size / 2 + 1, sizeof *kept);
    size_t count = 0;
    for (const char *p = path; *p != '\0';) {
        struct component c = {p, strcspn(p, host_path_separators)};
        p += c.length + host_is_path_separator(p[c.length]);
        if (c.length == 0 || (c.length == 1 && c.at[0] == '.'))
            continue;
        if (is_dot_dot(c) && count > 0 && !is_dot_dot(kept[count - 1]))
            count--;
        else if (!(is_dot_dot(c) && absolute)) /* the root's parent is the root */
            kept[count++] = c;
    }
    char *out = host_xmalloc(size + 2), *end = out;
    if (absolute)
        *end++ = '/';
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            *end++ = '/';
        memcpy(end, kept[i].at, kept[i].length);
        end += kept[i].length;
    }
    if (end == out)
        *end++ = '.';
    *end = '\0';
    free(kept);
    return out;
}

int name_stays_under(const char *name)
{
    if (host_path_is_absolute(name))
        return 0;
    char *normal = name_normalized(name);
    int under =
        strcmp(normal, ".") != 0 && strcmp(normal, "..") != 0 && strncmp(normal, "../", 3) != 0;
    free(normal);
    return under;
}

char *name_escaped(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    /* At worst every byte becomes \xHH: four times the length. */
    char *out = host_xmalloc(4 * strlen(s) + 1), *end = out;
    while (*p != '\0') {
        unsigned code = 0;
        int n = utf8_sequence(p, &code);
        int control = n == 0 || code < 0x20 || (code >= 0x7F && code < 0xA0);
        if (*p == '\\') {
            end += sprintf(end, "\\\\");
            p++;
        } else if (control) {
            /* A C1 control in UTF-8 is escaped byte by byte, as a stray byte is. */
            for (int i = 0; i < (n > 0 ? n : 1); i++)
                end += sprintf(end, "\\x%02x", *p++);
        } else {
            memcpy(end, p, (size_t)n);
            end += n;
            p += n;
        }
    }
    *end = '\0';
    return out;
}
