/* pipeline_expand.c — finding the `${...}` of a pipeline file, evaluating them, and making the
 * text libconfig reads (pipeline_expand.h). The scanner knows as much of libconfig's syntax as
 * it takes to tell a `${` in a comment from one in a value, and to name the setting it is in. */
#include "pipeline_expand.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Deeper nesting than any pipeline needs; libconfig itself has no limit. */
enum { MAX_DEPTH = 64 };

/* An open group, list or array while scanning. */
struct frame {
    char kind;       /* 0 for the file itself, else '{', '(' or '[' */
    int line;        /* where it opened */
    const char *key; /* root and groups: the name of the setting being read, in the text */
    size_t key_len;
    int index; /* lists and arrays: the element being read */
};

struct scanner {
    struct pl_template *t;
    const char *text;
    size_t size, p;
    int line;
    struct frame frames[MAX_DEPTH];
    int depth; /* frames[depth] is the innermost */
    int *err_line;
    char *err;
    size_t err_size;
};

static int HOST_PRINTF(3, 4) fail(struct scanner *s, int line, const char *fmt, ...)
{
    *s->err_line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, s->err_size, fmt, ap);
    va_end(ap);
    return -1;
}

static int is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '*';
}

static int is_name_char(char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* The end of the comment that starts at `p`: `p` itself when none starts there, SIZE_MAX when
 * it is not closed. The line breaks inside it are added to *lines. */
static size_t comment_end(const char *text, size_t size, size_t p, int *lines)
{
    /* The text ends in a NUL: text[p + 1] is there. */
    if (text[p] == '#' || (text[p] == '/' && text[p + 1] == '/')) {
        while (p < size && text[p] != '\n')
            p++;
        return p;
    }
    if (text[p] != '/' || text[p + 1] != '*')
        return p;
    for (p += 2; p + 1 < size; p++) {
        if (text[p] == '*' && text[p + 1] == '/')
            return p + 2;
        *lines += text[p] == '\n';
    }
    return SIZE_MAX;
}

/* Skips a comment at s->p, if one starts there: 1 skipped, 0 none, -1 unterminated. */
static int skip_comment(struct scanner *s)
{
    int line = s->line;
    size_t end = comment_end(s->text, s->size, s->p, &s->line);
    if (end == SIZE_MAX)
        return fail(s, line, "the comment '/*' is not closed");
    int skipped = end != s->p;
    s->p = end;
    return skipped;
}

/* Whether the next thing after `p`, past blanks and comments, is '=' or ':' (a name is then a
 * setting's name, not a value such as true). */
static int name_follows(const struct scanner *s, size_t p)
{
    int lines = 0;
    while (p < s->size) {
        size_t end = comment_end(s->text, s->size, p, &lines);
        if (end == SIZE_MAX)
            return 0;
        if (end != p) {
            p = end;
            continue;
        }
        if (strchr(" \t\r\n\f", s->text[p]) == NULL)
            return s->text[p] == '=' || s->text[p] == ':';
        p++;
    }
    return 0;
}

/* "tensors[0].shape[1]": the setting being read. */
static char *key_path(const struct scanner *s)
{
    size_t cap = 16;
    for (int i = 0; i <= s->depth; i++)
        cap += s->frames[i].key_len + 16;
    char *path = host_xmalloc(cap), *o = path;
    *o = '\0';
    for (int i = 0; i <= s->depth; i++) {
        const struct frame *f = &s->frames[i];
        if (f->kind == '(' || f->kind == '[')
            o += sprintf(o, "[%d]", f->index);
        else if (f->key != NULL)
            o += sprintf(o, "%s%.*s", o == path ? "" : ".", (int)f->key_len, f->key);
    }
    return path;
}

/* realloc that exits as host_xmalloc does: the CLI has nothing sensible to do without memory. */
static void *xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size);
    if (q == NULL) {
        fprintf(stderr, "%s: out of memory\n", host_program_name);
        exit(1);
    }
    return q;
}

static void add_root(struct scanner *s, size_t start, size_t len)
{
    struct pl_template *t = s->t;
    if (t->root_count > 0)
        t->roots[t->root_count - 1].end = start;
    t->roots = xrealloc(t->roots, (size_t)(t->root_count + 1) * sizeof *t->roots);
    struct pl_root *r = &t->roots[t->root_count++];
    r->name = host_xmalloc(len + 1);
    memcpy(r->name, s->text + start, len);
    r->name[len] = '\0';
    r->start = start;
    r->end = s->size;
    r->line = s->line;
}

/* `expr` as messages show it: a hostile 60 KB expression is not echoed whole. Allocated. */
static char *expr_shown(const char *expr)
{
    enum { SHOWN = 40 };
    if (strlen(expr) <= SHOWN)
        return host_xstrdup(expr);
    char *shown = host_xmalloc(SHOWN + 4);
    snprintf(shown, SHOWN + 4, "%.*s...", SHOWN, expr);
    return shown;
}

/* A `${...}` at s->p: recorded, and the scanner moved past its '}'. */
static int add_ref(struct scanner *s, int in_string)
{
    size_t start = s->p, end = start + 2;
    while (end < s->size && s->text[end] != '}' && s->text[end] != '\n' && s->text[end] != '"')
        end++;
    if (end >= s->size || s->text[end] != '}')
        return fail(s, s->line, "'${' without its '}' on the same line");
    struct pl_template *t = s->t;
    t->refs = xrealloc(t->refs, (size_t)(t->ref_count + 1) * sizeof *t->refs);
    struct pl_ref *r = &t->refs[t->ref_count++];
    r->start = start;
    r->end = end + 1;
    r->line = s->line;
    r->in_string = in_string;
    r->expr = host_xmalloc(end - start - 1);
    memcpy(r->expr, s->text + start + 2, end - start - 2);
    r->expr[end - start - 2] = '\0';
    r->shown = expr_shown(r->expr);
    r->key = key_path(s);
    r->root = t->root_count - 1;
    s->p = end + 1;
    return 0;
}

/* A string at s->p (its opening quote); `${...}` inside it are recorded. */
static int scan_string(struct scanner *s)
{
    int line = s->line;
    for (s->p++; s->p < s->size; s->p++) {
        char c = s->text[s->p];
        if (c == '"')
            return 0;
        if (c == '\n')
            s->line++;
        if (c == '\\' && s->p + 1 < s->size && s->text[s->p + 1] != '\n')
            s->p++;
        if (c == '$' && s->p + 1 < s->size && s->text[s->p + 1] == '{') {
            if (add_ref(s, 1) != 0)
                return -1;
            s->p--; /* the loop steps past the '}' */
        }
    }
    return fail(s, line, "the string '\"' is not closed");
}

/* A name at s->p: the name of a setting when '=' or ':' follows it. */
static void scan_name(struct scanner *s)
{
    size_t start = s->p;
    while (s->p < s->size && is_name_char(s->text[s->p]))
        s->p++;
    struct frame *f = &s->frames[s->depth];
    if ((f->kind == 0 || f->kind == '{') && name_follows(s, s->p)) {
        f->key = s->text + start;
        f->key_len = s->p - start;
        if (s->depth == 0)
            add_root(s, start, s->p - start);
    }
}

static int open_frame(struct scanner *s, char kind)
{
    if (s->depth + 1 >= MAX_DEPTH)
        return fail(s, s->line, "more than %d levels of '{', '(' and '['", MAX_DEPTH - 1);
    struct frame *f = &s->frames[++s->depth];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->line = s->line;
    return 0;
}

static int close_frame(struct scanner *s, char c)
{
    char open = c == '}' ? '{' : c == ')' ? '(' : '[';
    struct frame *f = &s->frames[s->depth];
    if (s->depth == 0)
        return fail(s, s->line, "'%c' closes nothing", c);
    if (f->kind != open)
        return fail(s, s->line, "'%c' closes the '%c' of line %d", c, f->kind, f->line);
    s->depth--;
    return 0;
}

static int scan(struct scanner *s)
{
    while (s->p < s->size) {
        char c = s->text[s->p];
        int skipped = skip_comment(s);
        if (skipped < 0)
            return -1;
        if (skipped > 0)
            continue;
        struct frame *f = &s->frames[s->depth];
        int rc = 0;
        if (c == '"')
            rc = scan_string(s);
        else if (c == '$' && s->p + 1 < s->size && s->text[s->p + 1] == '{') {
            if (add_ref(s, 0) != 0)
                return -1;
            continue;
        } else if (is_name_start(c)) {
            scan_name(s);
            continue;
        } else if (c == '{' || c == '(' || c == '[')
            rc = open_frame(s, c);
        else if (c == '}' || c == ')' || c == ']')
            rc = close_frame(s, c);
        else if (c == ',' && (f->kind == '(' || f->kind == '['))
            f->index++;
        else if (c == '\n')
            s->line++;
        if (rc != 0)
            return -1;
        s->p++;
    }
    if (s->depth > 0)
        return fail(s, s->frames[s->depth].line, "the '%c' is not closed",
                    s->frames[s->depth].kind);
    return 0;
}

int template_scan(struct pl_template *t, char *text, size_t size, int *line, char *err,
                  size_t err_size)
{
    memset(t, 0, sizeof *t);
    t->text = text;
    t->size = size;
    struct scanner s = {.t = t, .text = text, .size = size, .line = 1};
    s.err_line = line;
    s.err = err;
    s.err_size = err_size;
    if (memchr(text, '\0', size) != NULL)
        return fail(&s, 1, "the file holds a NUL byte: not a text file");
    return scan(&s);
}

void template_free(struct pl_template *t)
{
    for (int i = 0; i < t->ref_count; i++) {
        free(t->refs[i].expr);
        free(t->refs[i].shown);
        free(t->refs[i].key);
    }
    for (int i = 0; i < t->root_count; i++)
        free(t->roots[i].name);
    free(t->refs);
    free(t->roots);
    free(t->text);
    memset(t, 0, sizeof *t);
}

static int listed(const char *const *names, const char *name)
{
    for (int i = 0; names[i] != NULL; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static void blank(char *text, size_t start, size_t end)
{
    for (size_t i = start; i < end; i++)
        if (text[i] != '\n')
            text[i] = ' ';
}

char *template_keep_roots(const struct pl_template *t, const char *const *keep)
{
    char *text = host_xmalloc(t->size + 1);
    memcpy(text, t->text, t->size + 1);
    blank(text, 0, t->root_count > 0 ? t->roots[0].start : t->size);
    for (int i = 0; i < t->root_count; i++)
        if (!listed(keep, t->roots[i].name))
            blank(text, t->roots[i].start, t->roots[i].end);
    return text;
}

/* ---- expressions -------------------------------------------------------------------------- */

/* Deeper than any expression a pipeline needs, and shallow enough that a hostile `${((((...` or
 * `${- - - ...` is refused long before the recursive descent below overflows the stack. */
enum { MAX_EXPR_DEPTH = 64 };

struct expr {
    const char *p;
    const struct params *params;
    const struct param_value *values;
    char *err;
    size_t err_size;
    int failed;
    int depth; /* the '(' and unary '-' being parsed */
};

static int64_t HOST_PRINTF(2, 3) expr_fail(struct expr *e, const char *fmt, ...)
{
    if (!e->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->err, e->err_size, fmt, ap);
        va_end(ap);
    }
    e->failed = 1;
    return 0;
}

static void skip_blanks(struct expr *e)
{
    while (*e->p == ' ' || *e->p == '\t')
        e->p++;
}

static int is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* The param called by the `len` characters at `name`; reported when there is none. */
static const struct param_value *lookup(struct expr *e, const char *name, size_t len)
{
    for (int i = 0; i < e->params->count; i++)
        if (strlen(e->params->items[i].name) == len &&
            strncmp(e->params->items[i].name, name, len) == 0)
            return &e->values[i];
    char names[512];
    params_names(e->params, names, sizeof names);
    expr_fail(e, "no param named '%.*s' (params: %s)", (int)len, name, names);
    return NULL;
}

static void what_is_here(const struct expr *e, char *out, size_t size)
{
    if (*e->p == '\0')
        snprintf(out, size, "the end");
    else
        snprintf(out, size, "'%s'", e->p);
}

static int64_t parse_sum(struct expr *e);

/* `parse` one level deeper: every recursion of the parser goes through here. */
static int64_t parse_nested(struct expr *e, int64_t (*parse)(struct expr *))
{
    if (e->depth >= MAX_EXPR_DEPTH)
        return expr_fail(e, "nested deeper than %d levels of '(' and unary '-'", MAX_EXPR_DEPTH);
    e->depth++;
    int64_t v = parse(e);
    e->depth--;
    return v;
}

static int64_t parse_literal(struct expr *e)
{
    int64_t v = 0;
    for (; *e->p >= '0' && *e->p <= '9'; e->p++) {
        int digit = *e->p - '0';
        if (v > (INT64_MAX - digit) / 10)
            return expr_fail(e, "the number is larger than 64 bits can hold");
        v = v * 10 + digit;
    }
    return v;
}

static int64_t parse_primary(struct expr *e)
{
    skip_blanks(e);
    if (*e->p >= '0' && *e->p <= '9')
        return parse_literal(e);
    if (*e->p == '(') {
        e->p++;
        int64_t v = parse_nested(e, parse_sum);
        skip_blanks(e);
        if (e->failed)
            return 0;
        if (*e->p != ')')
            return expr_fail(e, "malformed: ')' missing before the end");
        e->p++;
        return v;
    }
    if (is_ident_start(*e->p)) {
        const char *name = e->p;
        while (is_ident_char(*e->p))
            e->p++;
        const struct param_value *v = lookup(e, name, (size_t)(e->p - name));
        if (v == NULL)
            return 0;
        if (v->type != PARAM_INT)
            return expr_fail(e, "'%.*s' is %s; arithmetic takes ints", (int)(e->p - name), name,
                             param_type_name(v->type));
        return v->i;
    }
    char here[64];
    what_is_here(e, here, sizeof here);
    return expr_fail(e, "malformed: expected a number, a param or '(' at %s", here);
}

static int64_t parse_unary(struct expr *e)
{
    skip_blanks(e);
    if (*e->p != '-')
        return parse_primary(e);
    e->p++;
    int64_t v = parse_nested(e, parse_unary);
    if (v == INT64_MIN)
        return expr_fail(e, "integer overflow: -(%lld) is beyond 64 bits", (long long)v);
    return -v;
}

static int64_t apply(struct expr *e, char op, int64_t a, int64_t b)
{
    int overflow = 0;
    switch (op) {
    case '+': overflow = (b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b); break;
    case '-': overflow = (b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b); break;
    case '*':
        if (a > 0)
            overflow = b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a;
        else if (a < 0)
            overflow = b > 0 ? a < INT64_MIN / b : b != 0 && b < INT64_MAX / a;
        break;
    default:
        if (b == 0)
            return expr_fail(e, "%s by zero", op == '/' ? "division" : "remainder");
        overflow = a == INT64_MIN && b == -1;
        break;
    }
    if (overflow)
        return expr_fail(e, "integer overflow: %lld %c %lld is beyond 64 bits", (long long)a, op,
                         (long long)b);
    switch (op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    case '/': return a / b;
    default: return a % b;
    }
}

static int64_t parse_product(struct expr *e)
{
    int64_t v = parse_unary(e);
    for (skip_blanks(e); !e->failed && *e->p != '\0' && strchr("*/%", *e->p) != NULL;
         skip_blanks(e)) {
        char op = *e->p++;
        int64_t rhs = parse_unary(e);
        v = e->failed ? 0 : apply(e, op, v, rhs);
    }
    return v;
}

static int64_t parse_sum(struct expr *e)
{
    int64_t v = parse_product(e);
    for (skip_blanks(e); !e->failed && (*e->p == '+' || *e->p == '-'); skip_blanks(e)) {
        char op = *e->p++;
        int64_t rhs = parse_product(e);
        v = e->failed ? 0 : apply(e, op, v, rhs);
    }
    return v;
}

/* Whether `expr` is one name and nothing else (blanks around it aside); its bounds if so. */
static int single_name(const char *expr, const char **name, size_t *len)
{
    while (*expr == ' ' || *expr == '\t')
        expr++;
    const char *end = expr;
    while (is_ident_char(*end))
        end++;
    *name = expr;
    *len = (size_t)(end - expr);
    while (*end == ' ' || *end == '\t')
        end++;
    return *len > 0 && is_ident_start(*expr) && *end == '\0';
}

int expr_eval(const char *expr, const struct params *params, const struct param_value *values,
              struct param_value *out, char *err, size_t err_size)
{
    struct expr e = {expr, params, values, err, err_size, 0, 0};
    memset(out, 0, sizeof *out);
    const char *name;
    size_t len;
    if (single_name(expr, &name, &len)) {
        const struct param_value *v = lookup(&e, name, len);
        if (v != NULL)
            param_value_copy(out, v);
        return v != NULL ? 0 : -1;
    }
    skip_blanks(&e);
    if (*e.p == '\0') {
        snprintf(err, err_size, "empty: write a param's name or integer arithmetic");
        return -1;
    }
    out->type = PARAM_INT;
    out->i = parse_sum(&e);
    skip_blanks(&e);
    if (!e.failed && *e.p != '\0') {
        char here[64];
        what_is_here(&e, here, sizeof here);
        expr_fail(&e, "malformed: unexpected %s", here);
    }
    return e.failed ? -1 : 0;
}

/* ---- expansion ---------------------------------------------------------------------------- */

char *template_expand(const struct pl_template *t, const struct params *params,
                      const struct param_value *values, char ***texts, expand_problem problem,
                      void *ctx)
{
    *texts = host_xcalloc((size_t)t->ref_count + 1, sizeof **texts);
    size_t cap = t->size + 1, len = 0, from = 0;
    for (int i = 0; i < t->ref_count; i++) {
        struct param_value v;
        char err[512];
        if (expr_eval(t->refs[i].expr, params, values, &v, err, sizeof err) != 0) {
            problem(ctx, &t->refs[i], err);
            continue;
        }
        (*texts)[i] = param_value_text(&v, !t->refs[i].in_string);
        cap += strlen((*texts)[i]);
        param_value_free(&v);
    }
    for (int i = 0; i < t->ref_count; i++)
        if ((*texts)[i] == NULL)
            return NULL;
    char *out = host_xmalloc(cap);
    for (int i = 0; i < t->ref_count; i++) {
        const struct pl_ref *r = &t->refs[i];
        memcpy(out + len, t->text + from, r->start - from);
        len += r->start - from;
        size_t n = strlen((*texts)[i]);
        memcpy(out + len, (*texts)[i], n);
        len += n;
        from = r->end;
    }
    memcpy(out + len, t->text + from, t->size - from);
    out[len + t->size - from] = '\0';
    return out;
}

void template_texts_free(char **texts, int count)
{
    for (int i = 0; texts != NULL && i < count; i++)
        free(texts[i]);
    free(texts);
}
