/* pipeline_expand.h — the `${...}` of a pipeline file (pipeline_expand.c). The file's text is
 * scanned once, as libconfig's syntax has it (comments, strings, groups, lists, arrays), for
 * every `${...}` outside comments, with its line and the setting it is in; then each run's
 * text is made by replacing them with values, and only that text is given to libconfig, which
 * has no `${}` of its own. Lines keep their numbers, so libconfig's and the validator's
 * file:line stay right. */
#ifndef CLOPS_CLI_PIPELINE_EXPAND_H
#define CLOPS_CLI_PIPELINE_EXPAND_H

#include <stddef.h>

#include "pipeline_params.h"

/* One `${...}` of the text. */
struct pl_ref {
    size_t start, end; /* the bytes of "${...}" in the text */
    int line;
    int in_string; /* inside "...": replaced by the value's text, not by a literal */
    char *expr;    /* what is between the braces; owned */
    char *shown;   /* expr for messages, a long one cut to its start and "..."; owned */
    char *key;     /* the setting it is in, "tensors[0].shape[1]"; owned */
    int root;      /* the index of the root setting it is in (pl_template.roots), or -1 */
};

/* A setting at the top level of the file, and the bytes it spans. */
struct pl_root {
    char *name; /* owned */
    size_t start, end;
    int line;
};

struct pl_template {
    char *text; /* owned, NUL-terminated */
    size_t size;
    struct pl_ref *refs;
    int ref_count;
    struct pl_root *roots;
    int root_count;
};

/* Scans `text` (taken over: freed with the template). Returns 0, or -1 with the line and the
 * problem (an unterminated string, comment or `${`, an unbalanced bracket) in `line`/`err`. */
int template_scan(struct pl_template *t, char *text, size_t size, int *line, char *err,
                  size_t err_size);
void template_free(struct pl_template *t);

/* The text with everything outside the root settings named in `keep` (NULL-terminated)
 * blanked to spaces, line breaks kept: a file libconfig reads for those settings alone, at
 * their own lines. Allocated. */
char *template_keep_roots(const struct pl_template *t, const char *const *keep);

/* The value of `${expr}`: a param's name alone gives its value whatever its type; anything
 * else is integer arithmetic (+ - * / % parentheses, unary minus, decimal literals, int
 * params), / and % truncating toward zero as in C. Returns 0, or -1 with the problem in
 * `err` (no such param, a param of another type in arithmetic, a malformed expression, a
 * division by zero, a result beyond 64 bits). */
int expr_eval(const char *expr, const struct params *params, const struct param_value *values,
              struct param_value *out, char *err, size_t err_size);

/* Called for each `${...}` that cannot be evaluated. */
typedef void (*expand_problem)(void *ctx, const struct pl_ref *ref, const char *problem);

/* The text with every `${...}` replaced by its value under `values` (one per param), and in
 * `texts` (allocated, one per ref, for messages) what each became. Returns NULL when any
 * could not be evaluated, each reported through `problem` first. */
char *template_expand(const struct pl_template *t, const struct params *params,
                      const struct param_value *values, char ***texts, expand_problem problem,
                      void *ctx);
void template_texts_free(char **texts, int count);

#endif
