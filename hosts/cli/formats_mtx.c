/* formats_mtx.c — Matrix Market .mtx files: array and coordinate files read into a dense matrix
 * (symmetric triangles mirrored, duplicates summed, every count and index checked against the
 * size line), dense array files written. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats.h"
#include "formats_internal.h"
#include "util.h"

static int dtype_is_integer(int32_t dtype)
{
    return dtype == CLOPS_I32 || dtype == CLOPS_U32 || dtype == CLOPS_U8 || dtype == CLOPS_I64;
}

/* The whole file as a NUL-terminated string. */
static char *read_text(const char *path, char *err, size_t errsize)
{
    int64_t size = 0;
    FILE *f = fmt_open_input(path, &size, err, errsize);
    if (f == NULL)
        return NULL;
    char *text = size < FMT_MAX_BYTES ? malloc((size_t)size + 1) : NULL;
    if (text == NULL)
        fmt_fail(err, errsize, "%s: out of memory for %lld bytes", path, (long long)size);
    else if (fmt_read_exact(f, text, size, path, err, errsize) != 0) {
        free(text);
        text = NULL;
    } else if (memchr(text, '\0', (size_t)size) != NULL) {
        fmt_fail(err, errsize, "%s: not a text file (it holds a NUL byte)", path);
        free(text);
        text = NULL;
    } else {
        text[size] = '\0';
    }
    fclose(f);
    return text;
}

/* The format (math.nist.gov/MatrixMarket/formats.html): a banner line
 * "%%MatrixMarket matrix <format> <field> <symmetry>", comment lines starting with '%', a size
 * line ("rows cols" for array, "rows cols nonzeros" for coordinate), then the entries: for
 * array one value per line, column by column; for coordinate "row col [value]" with 1-based
 * indices. Symmetric and skew-symmetric files store one triangle. */
enum mtx_field { FIELD_REAL, FIELD_INTEGER, FIELD_PATTERN };
enum mtx_symmetry { SYM_GENERAL, SYM_SYMMETRIC, SYM_SKEW };

struct mtx_banner {
    int coordinate;
    enum mtx_field field;
    enum mtx_symmetry symmetry;
};

/* Lines of a text held in memory, numbered from 1; '\r' before '\n' is dropped. */
struct lines {
    char *next;
    int number;
};

static char *next_line(struct lines *l)
{
    if (*l->next == '\0')
        return NULL;
    char *line = l->next;
    char *newline = strchr(line, '\n');
    if (newline != NULL) {
        *newline = '\0';
        l->next = newline + 1;
    } else {
        l->next = line + strlen(line);
    }
    size_t n = strlen(line);
    if (n > 0 && line[n - 1] == '\r')
        line[n - 1] = '\0';
    l->number++;
    return line;
}

/* The next line that is neither blank nor a comment. */
static char *next_content_line(struct lines *l)
{
    char *line;
    while ((line = next_line(l)) != NULL) {
        const char *p = line + strspn(line, " \t");
        if (*p != '\0' && *p != '%')
            return line;
    }
    return NULL;
}

enum { FIELDS_MAX = 5 };

/* Splits `line` in place at blanks; returns how many fields there are (only the first
 * FIELDS_MAX are stored). */
static int split_fields(char *line, char **fields)
{
    int n = 0;
    for (char *p = line;;) {
        p += strspn(p, " \t");
        if (*p == '\0')
            return n;
        if (n < FIELDS_MAX)
            fields[n] = p;
        n++;
        p += strcspn(p, " \t");
        if (*p != '\0')
            *p++ = '\0';
    }
}

/* The index of `word` in the NULL-terminated `words`, ignoring case, or -1. */
static int word_index(const char *word, const char *const *words)
{
    for (int i = 0; words[i] != NULL; i++)
        if (strcasecmp(word, words[i]) == 0)
            return i;
    return -1;
}

static const char mtx_banner_form[] = "'%%MatrixMarket matrix array|coordinate "
                                      "real|integer|pattern general|symmetric|skew-symmetric'";

static int parse_banner(char *line, struct mtx_banner *b, const char *path, char *err,
                        size_t errsize)
{
    static const char *const formats[] = {"array", "coordinate", NULL};
    /* "double" is what some writers put for real. */
    static const char *const field_words[] = {"real",    "double",  "integer",
                                              "pattern", "complex", NULL};
    static const enum mtx_field field_of[] = {FIELD_REAL, FIELD_REAL, FIELD_INTEGER, FIELD_PATTERN};
    static const char *const symmetries[] = {"general", "symmetric", "skew-symmetric", "hermitian",
                                             NULL};
    char *w[FIELDS_MAX];
    if (line == NULL || strncasecmp(line, "%%MatrixMarket", 14) != 0 || split_fields(line, w) != 5)
        return fmt_fail(err, errsize, "%s:1: bad banner: expected %s", path, mtx_banner_form);
    if (strcasecmp(w[0], "%%MatrixMarket") != 0 || strcasecmp(w[1], "matrix") != 0)
        return fmt_fail(err, errsize, "%s:1: bad banner: '%s %s' is not a matrix; expected %s",
                        path, w[0], w[1], mtx_banner_form);
    const int format = word_index(w[2], formats);
    const int field = word_index(w[3], field_words);
    const int symmetry = word_index(w[4], symmetries);
    if (format < 0 || field < 0 || symmetry < 0)
        return fmt_fail(err, errsize, "%s:1: bad banner: unknown %s '%s'; expected %s", path,
                        format < 0  ? "format"
                        : field < 0 ? "field"
                                    : "symmetry",
                        format < 0  ? w[2]
                        : field < 0 ? w[3]
                                    : w[4],
                        mtx_banner_form);
    if (field == 4 || symmetry == 3)
        return fmt_fail(err, errsize,
                        "%s:1: %s matrices are not supported (real, integer and pattern "
                        "only)",
                        path, field == 4 ? "complex" : "hermitian");
    b->coordinate = format == 1;
    b->field = field_of[field];
    b->symmetry = (enum mtx_symmetry)symmetry;
    if (!b->coordinate && b->field == FIELD_PATTERN)
        return fmt_fail(err, errsize,
                        "%s:1: bad banner: the pattern field needs the coordinate "
                        "format",
                        path);
    return 0;
}

static int mtx_check_dtype(const struct mtx_banner *b, int32_t dtype, const char *path, char *err,
                           size_t errsize)
{
    if (dtype == CLOPS_F32 || dtype == CLOPS_F64)
        return 0;
    if (!dtype_is_integer(dtype))
        return fmt_fail(err, errsize,
                        "%s: cannot read Matrix Market into dtype %d; expected f32, f64, "
                        "or an integer dtype for integer and pattern files",
                        path, (int)dtype);
    if (b->field == FIELD_REAL)
        return fmt_fail(err, errsize,
                        "%s:1: a real matrix cannot be read as %s; read it as f32 or "
                        "f64",
                        path, host_dtype_name(dtype));
    return 0;
}

/* A whole-token non-negative integer. */
static int parse_count(const char *token, int64_t *value)
{
    char *end;
    errno = 0;
    long long v = strtoll(token, &end, 10);
    if (*end != '\0' || end == token || errno != 0 || v < 0 || token[0] == '-' || token[0] == '+')
        return 0;
    *value = v;
    return 1;
}

/* What the size line says, with the expected number of entry lines. */
struct mtx_size {
    int64_t shape[2];
    int64_t elements, bytes;
    int64_t entries;
    int line;
};

static int parse_size_line(struct lines *l, const struct mtx_banner *b, int32_t dtype,
                           const struct fmt_read_limit *limit, int64_t file_bytes,
                           struct mtx_size *s, const char *path, char *err, size_t errsize)
{
    char *line = next_content_line(l);
    if (line == NULL)
        return fmt_fail(err, errsize, "%s:%d: no size line after the banner", path, l->number);
    char *w[FIELDS_MAX];
    const int want = b->coordinate ? 3 : 2;
    const int n = split_fields(line, w);
    s->line = l->number;
    if (n != want)
        return fmt_fail(err, errsize, "%s:%d: expected %d entries (%s), found %d", path, l->number,
                        want, b->coordinate ? "'rows cols nonzeros'" : "'rows cols'", n);
    for (int i = 0; i < want; i++)
        if (!parse_count(w[i], i < 2 ? &s->shape[i] : &s->entries))
            return fmt_fail(err, errsize,
                            "%s:%d: bad size line: '%s' is not a non-negative integer", path,
                            l->number, w[i]);
    if (b->symmetry != SYM_GENERAL && s->shape[0] != s->shape[1])
        return fmt_fail(err, errsize,
                        "%s:%d: a %s matrix must be square; the size line says %lld x "
                        "%lld",
                        path, l->number, b->symmetry == SYM_SKEW ? "skew-symmetric" : "symmetric",
                        (long long)s->shape[0], (long long)s->shape[1]);
    char why[256];
    if (fmt_tensor_size(dtype, 2, s->shape, &s->elements, &s->bytes, why, sizeof why) != 0)
        return fmt_fail(err, errsize, "%s:%d: %s", path, l->number, why);
    if (!b->coordinate) {
        /* The stored triangle: all of it, or the lower one with or without the diagonal. */
        const int64_t n = s->shape[0];
        s->entries = b->symmetry == SYM_GENERAL     ? s->elements
                     : b->symmetry == SYM_SYMMETRIC ? n * (n + 1) / 2
                                                    : n * (n - 1) / 2;
    }
    /* Each entry takes a line of at least "v\n" (array) or "r c\n" (coordinate): a size line
     * that announces more than the file can hold is refused before the matrix is allocated. */
    const int64_t least = b->coordinate ? 4 : 2;
    if (s->entries > (file_bytes + 1) / least)
        return fmt_fail(err, errsize,
                        "%s:%d: the size line %s %lld entries but the whole file has %lld bytes "
                        "(each entry takes at least %lld)",
                        path, l->number, b->coordinate ? "announces" : "implies",
                        (long long)s->entries, (long long)file_bytes, (long long)least);
    /* A coordinate file expands to the dense matrix: a few bytes can declare gigabytes. */
    return fmt_check_limit(limit, s->bytes, dtype, 2, s->shape, path, l->number, err, errsize);
}

/* One value of the file: integer fields keep the exact integer. */
struct mtx_value {
    int integer;
    int64_t i;
    double d;
};

static int parse_value(const char *token, enum mtx_field field, struct mtx_value *v)
{
    char *end;
    errno = 0;
    v->integer = field == FIELD_INTEGER;
    if (v->integer) {
        long long i = strtoll(token, &end, 10);
        v->i = i;
        v->d = (double)i;
        return *end == '\0' && end != token && errno == 0;
    }
    /* No range check: strtod reports subnormal results as ERANGE too, and those are values. */
    v->d = strtod(token, &end);
    return *end == '\0' && end != token;
}

/* Adds `v` (negated if `negate`) to element `at`: duplicate coordinates sum, as in scipy's
 * mmread and the reference MMIO code. Returns -1 if an integer result is outside the dtype. */
static int add_value(void *data, int32_t dtype, int64_t at, const struct mtx_value *v, int negate)
{
    /* A slot still +0 takes the value as it is, so that -0 stays -0. */
    const double d = negate ? -v->d : v->d;
    if (dtype == CLOPS_F64) {
        double *p = (double *)data + at;
        *p = *p == 0.0 && !signbit(*p) ? d : *p + d;
        return 0;
    }
    if (dtype == CLOPS_F32) {
        float *p = (float *)data + at;
        *p = (float)(*p == 0.0f && !signbit(*p) ? d : (double)*p + d);
        return 0;
    }
    int64_t add = v->integer ? v->i : (int64_t)v->d, old = 0;
    if (negate && add == INT64_MIN)
        return -1;
    add = negate ? -add : add;
    switch (dtype) {
    case CLOPS_I32: old = ((int32_t *)data)[at]; break;
    case CLOPS_U32: old = ((uint32_t *)data)[at]; break;
    case CLOPS_U8: old = ((uint8_t *)data)[at]; break;
    default: old = ((int64_t *)data)[at]; break;
    }
    if ((add > 0 && old > INT64_MAX - add) || (add < 0 && old < INT64_MIN - add))
        return -1;
    const int64_t sum = old + add;
    switch (dtype) {
    case CLOPS_I32:
        if (sum < INT32_MIN || sum > INT32_MAX)
            return -1;
        ((int32_t *)data)[at] = (int32_t)sum;
        return 0;
    case CLOPS_U32:
        if (sum < 0 || sum > (int64_t)UINT32_MAX)
            return -1;
        ((uint32_t *)data)[at] = (uint32_t)sum;
        return 0;
    case CLOPS_U8:
        if (sum < 0 || sum > UINT8_MAX)
            return -1;
        ((uint8_t *)data)[at] = (uint8_t)sum;
        return 0;
    default: ((int64_t *)data)[at] = sum; return 0;
    }
}

/* Where the k-th entry of an array file goes: walks the stored triangle column by column. */
struct array_walk {
    int64_t row, col;
};

static void array_walk_next(struct array_walk *w, const struct mtx_banner *b, int64_t rows)
{
    if (++w->row < rows)
        return;
    w->col++;
    w->row = b->symmetry == SYM_GENERAL ? 0 : b->symmetry == SYM_SYMMETRIC ? w->col : w->col + 1;
}

static int parse_index(const char *token, int64_t extent, const char *what, int64_t *index,
                       const char *path, int line, char *err, size_t errsize)
{
    int64_t i;
    if (!parse_count(token, &i))
        return fmt_fail(err, errsize, "%s:%d: %s index '%s' is not a positive integer", path, line,
                        what, token);
    if (i < 1 || i > extent)
        return fmt_fail(err, errsize, "%s:%d: %s index %lld out of range 1..%lld", path, line, what,
                        (long long)i, (long long)extent);
    *index = i - 1;
    return 0;
}

/* One entry line: its position (coordinate) or the walk's (array), its value, stored and
 * mirrored. */
static int mtx_entry(char *line, const struct mtx_banner *b, struct array_walk *walk,
                     struct fmt_tensor *t, const char *path, int number, char *err, size_t errsize)
{
    char *w[FIELDS_MAX];
    const int want = b->coordinate ? (b->field == FIELD_PATTERN ? 2 : 3) : 1;
    const int n = split_fields(line, w);
    if (n != want)
        return fmt_fail(err, errsize, "%s:%d: expected %d entr%s (%s), found %d", path, number,
                        want, want == 1 ? "y" : "ies",
                        !b->coordinate              ? "'value'"
                        : b->field == FIELD_PATTERN ? "'row col'"
                                                    : "'row col value'",
                        n);
    int64_t row = walk->row, col = walk->col;
    if (b->coordinate &&
        (parse_index(w[0], t->shape[0], "row", &row, path, number, err, errsize) != 0 ||
         parse_index(w[1], t->shape[1], "column", &col, path, number, err, errsize) != 0))
        return -1;
    if (b->coordinate && b->symmetry == SYM_SYMMETRIC && row < col)
        return fmt_fail(err, errsize,
                        "%s:%d: entry (%lld, %lld) is above the diagonal; a symmetric "
                        "file stores only the lower triangle",
                        path, number, (long long)row + 1, (long long)col + 1);
    if (b->coordinate && b->symmetry == SYM_SKEW && row <= col)
        return fmt_fail(err, errsize,
                        "%s:%d: entry (%lld, %lld) is not below the diagonal; a "
                        "skew-symmetric file stores only the entries below it",
                        path, number, (long long)row + 1, (long long)col + 1);
    struct mtx_value v = {1, 1, 1.0};
    if (b->field != FIELD_PATTERN && !parse_value(w[want - 1], b->field, &v))
        return fmt_fail(err, errsize, "%s:%d: '%s' is not %s", path, number, w[want - 1],
                        b->field == FIELD_INTEGER ? "an integer (the field is integer)"
                                                  : "a number");
    if (add_value(t->data, t->dtype, row * t->shape[1] + col, &v, 0) != 0 ||
        (b->symmetry != SYM_GENERAL && row != col &&
         add_value(t->data, t->dtype, col * t->shape[1] + row, &v, b->symmetry == SYM_SKEW) != 0))
        return fmt_fail(err, errsize, "%s:%d: value %s%s is out of the range of %s", path, number,
                        w[want - 1], b->coordinate ? " (summed with earlier entries)" : "",
                        host_dtype_name(t->dtype));
    return 0;
}

static int mtx_entries(struct lines *l, const struct mtx_banner *b, const struct mtx_size *s,
                       struct fmt_tensor *t, const char *path, char *err, size_t errsize)
{
    struct array_walk walk = {0, 0};
    if (!b->coordinate && b->symmetry == SYM_SKEW)
        walk.row = 1;
    int64_t count = 0;
    char *line;
    while ((line = next_content_line(l)) != NULL) {
        if (count == s->entries)
            return fmt_fail(err, errsize, "%s:%d: more entries than the %lld %s on line %d", path,
                            l->number, (long long)s->entries,
                            b->coordinate ? "announced" : "that the size implies", s->line);
        if (mtx_entry(line, b, &walk, t, path, l->number, err, errsize) != 0)
            return -1;
        count++;
        if (!b->coordinate)
            array_walk_next(&walk, b, t->shape[0]);
    }
    if (count < s->entries)
        return fmt_fail(err, errsize, "%s:%d: the size line %s %lld entries but the file has %lld",
                        path, s->line, b->coordinate ? "announces" : "implies",
                        (long long)s->entries, (long long)count);
    return 0;
}

int fmt_read_mtx_limited(const char *path, int32_t dtype, const struct fmt_read_limit *limit,
                         struct fmt_tensor *out, char *err, size_t errsize)
{
    memset(out, 0, sizeof *out);
    char *text = read_text(path, err, errsize);
    if (text == NULL)
        return -1;
    const int64_t file_bytes = (int64_t)strlen(text);
    struct lines l = {text, 0};
    struct mtx_banner b = {0};
    struct mtx_size s = {0};
    int rc = parse_banner(next_line(&l), &b, path, err, errsize);
    if (rc == 0)
        rc = mtx_check_dtype(&b, dtype, path, err, errsize);
    if (rc == 0)
        rc = parse_size_line(&l, &b, dtype, limit, file_bytes, &s, path, err, errsize);
    if (rc == 0) {
        out->dtype = dtype;
        out->rank = 2;
        out->shape[0] = s.shape[0];
        out->shape[1] = s.shape[1];
        out->data = calloc(s.bytes > 0 ? (size_t)s.bytes : 1, 1);
        if (out->data == NULL)
            rc = fmt_fail(err, errsize, "%s: out of memory for %lld bytes", path,
                          (long long)s.bytes);
    }
    if (rc == 0)
        rc = mtx_entries(&l, &b, &s, out, path, err, errsize);
    free(text);
    if (rc != 0)
        fmt_tensor_free(out);
    return rc;
}

int fmt_read_mtx(const char *path, int32_t dtype, struct fmt_tensor *out, char *err, size_t errsize)
{
    return fmt_read_mtx_limited(path, dtype, &fmt_default_limit, out, err, errsize);
}

/* ---- Writing --------------------------------------------------------------------------------- */

static int emit_mtx(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                    size_t whysize)
{
    (void)elements;
    (void)why;
    (void)whysize;
    const int64_t rows = t->shape[0], cols = t->rank == 2 ? t->shape[1] : 1;
    fprintf(f, "%%%%MatrixMarket matrix array %s general\n%lld %lld\n",
            dtype_is_integer(t->dtype) ? "integer" : "real", (long long)rows, (long long)cols);
    char text[32];
    /* rows > 0 first: a 0 x 2^41 matrix has no entry, and must not take 2^41 steps to say so. */
    for (int64_t j = 0; rows > 0 && j < cols; j++)
        for (int64_t i = 0; i < rows; i++) {
            fmt_format_element(text, sizeof text, t->data, t->dtype, i * cols + j);
            fprintf(f, "%s\n", text);
        }
    return 0;
}

int fmt_write_mtx(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    if (t != NULL && t->rank > 2)
        return fmt_fail(err, errsize,
                        "%s: a Matrix Market file holds a matrix; the tensor has rank %d", path,
                        (int)t->rank);
    return fmt_write_atomic(path, t, emit_mtx, err, errsize);
}
