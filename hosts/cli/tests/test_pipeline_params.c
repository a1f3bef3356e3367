/* test_pipeline_params.c — the pipeline file's params on their own (no device, no file):
 * `${...}` arithmetic against C's rules and its errors, the text a value becomes, the scan that
 * finds each `${...}` with its line and setting, the expanded text, and a sweep's run order,
 * values and output names. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_test.h"
#include "pipeline_expand.h"
#include "pipeline_params.h"
#include "pipeline_sweep.h"
#include "util.h"

/* n = 6, m = -7, tol = 1e-3, s = "a b", b = true. */
static struct params params;
static struct param_value *values;

static void add_param(const char *name, struct param_value v)
{
    struct param *p = &params.items[params.count++];
    p->name = host_xstrdup(name);
    p->line = params.count;
    p->value = v;
}

static void make_params(void)
{
    params.items = host_xcalloc(8, sizeof *params.items);
    params.count = 0;
    add_param("n", (struct param_value){.type = PARAM_INT, .i = 6});
    add_param("m", (struct param_value){.type = PARAM_INT, .i = -7});
    add_param("tol", (struct param_value){.type = PARAM_FLOAT, .d = 1e-3});
    add_param("s", (struct param_value){.type = PARAM_STRING, .s = host_xstrdup("a b")});
    add_param("b", (struct param_value){.type = PARAM_BOOL, .i = 1});
    values = params_values(&params);
}

static void free_params(void)
{
    params_values_free(values, params.count);
    params_free(&params);
}

static int64_t eval_int(const char *expr)
{
    struct param_value v;
    char err[256];
    ck_assert_msg(expr_eval(expr, &params, values, &v, err, sizeof err) == 0, "${%s}: %s", expr,
                  err);
    ck_assert_msg(v.type == PARAM_INT, "${%s} is %s", expr, param_type_name(v.type));
    return v.i;
}

START_TEST(test_arithmetic_follows_c_precedence_and_truncation)
{
    static const struct {
        const char *expr;
        int64_t want;
    } cases[] = {
        {"2*n+1", 13},
        {"n/2+1", 4},
        {"1 + 2 * 3 - 4 / 2", 5},
        {"(1 + 2) * 3", 9},
        {"-7/2", -3}, /* toward zero, not -4 */
        {"-7%2", -1}, /* the dividend's sign */
        {"7%-2", 1},
        {"m/2", -3},
        {"m*m", 49},
        {"-(n-10)*2", 8},
        {"n - -3", 9},
        {"--n", 6},
        {"((n))", 6},
        {"n*(2*n + 1) - 3 - 1", 74},
        {"9223372036854775807", INT64_MAX},
        {"-9223372036854775807-1", INT64_MIN},
        {"-4611686018427387904*2", INT64_MIN},
        {"0 * 9223372036854775807", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t got = eval_int(cases[i].expr);
        ck_assert_msg(got == cases[i].want, "${%s} = %lld, expected %lld", cases[i].expr,
                      (long long)got, (long long)cases[i].want);
    }
}
END_TEST

START_TEST(test_arithmetic_errors_name_the_problem)
{
    static const struct cli_text_case cases[] = {
        {"", "empty"},
        {"   ", "empty"},
        {"k", "no param named 'k' (params: n, m, tol, s, b)"},
        {"2*k", "no param named 'k'"},
        {"2*", "malformed: expected a number, a param or '(' at the end"},
        {"n +* 2", "malformed: expected a number, a param or '(' at '* 2'"},
        {"(n", "malformed: ')' missing"},
        {"n)", "malformed: unexpected ')'"},
        {"n 2", "malformed: unexpected '2'"},
        {"n/0", "division by zero"},
        {"n%(n-6)", "remainder by zero"},
        {"9223372036854775807+1", "integer overflow"},
        {"-9223372036854775807-2", "integer overflow"},
        {"(-9223372036854775807-1)/-1", "integer overflow"},
        {"(-9223372036854775807-1)%-1", "integer overflow"},
        {"-(-9223372036854775807-1)", "integer overflow"},
        {"4611686018427387904*2", "integer overflow"},
        {"-4611686018427387905*2", "integer overflow"},
        {"3037000500*3037000500", "integer overflow"},
        {"99999999999999999999", "larger than 64 bits"},
        {"tol+1", "'tol' is a float; arithmetic takes ints"},
        {"s*2", "'s' is a string"},
        {"-b", "'b' is a bool"},
        {"1.5", "malformed: unexpected '.5'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct param_value v;
        char err[256] = "";
        int rc = expr_eval(cases[i].text, &params, values, &v, err, sizeof err);
        ck_assert_msg(rc == -1, "${%s} was accepted", cases[i].text);
        ck_assert_msg(strstr(err, cases[i].want) != NULL, "${%s}: '%s' lacks '%s'", cases[i].text,
                      err, cases[i].want);
    }
}
END_TEST

START_TEST(test_a_name_alone_keeps_its_type)
{
    struct param_value v;
    char err[256];
    ck_assert_int_eq(expr_eval(" tol ", &params, values, &v, err, sizeof err), 0);
    ck_assert_int_eq(v.type, PARAM_FLOAT);
    ck_assert(v.d == 1e-3);
    ck_assert_int_eq(expr_eval("s", &params, values, &v, err, sizeof err), 0);
    ck_assert_int_eq(v.type, PARAM_STRING);
    ck_assert_str_eq(v.s, "a b");
    param_value_free(&v);
    ck_assert_int_eq(expr_eval("b", &params, values, &v, err, sizeof err), 0);
    ck_assert_int_eq(v.type, PARAM_BOOL);
    ck_assert_int_eq(v.i, 1);
}
END_TEST

/* `open`, n, then `close`, each `depth` times: "((n))", "--n". Allocated. */
static char *nested(const char *open, const char *close, int depth)
{
    size_t open_len = strlen(open), close_len = strlen(close);
    char *expr = host_xmalloc((open_len + close_len) * (size_t)depth + 2), *o = expr;
    for (int i = 0; i < depth; i++, o += open_len)
        memcpy(o, open, open_len);
    *o++ = 'n';
    for (int i = 0; i < depth; i++, o += close_len)
        memcpy(o, close, close_len);
    *o = '\0';
    return expr;
}

/* The parser recurses once a '(' or unary '-': 64 levels evaluate, deeper is refused with a
 * message, however deep (30,000 levels overflowed the stack before the limit). */
START_TEST(test_nesting_is_limited_to_64_levels)
{
    static const struct {
        const char *open, *close;
    } kinds[] = {{"(", ")"}, {"-", ""}, {"- ", ""}, {"-(", ")"}, {"(-", ")"}};
    static const int deep[] = {65, 1000, 30000, 300000};
    for (size_t k = 0; k < CLI_COUNT(kinds); k++) {
        int levels = strlen(kinds[k].open) == 2 ? 32 : 64; /* "-(" is two levels */
        char *expr = nested(kinds[k].open, kinds[k].close, levels);
        ck_assert_msg(eval_int(expr) == 6, "${%.20s...} != 6", expr);
        free(expr);
        for (size_t d = 0; d < CLI_COUNT(deep); d++) {
            expr = nested(kinds[k].open, kinds[k].close, deep[d]);
            struct param_value v;
            char err[256] = "";
            ck_assert_int_eq(expr_eval(expr, &params, values, &v, err, sizeof err), -1);
            ck_assert_str_eq(err, "nested deeper than 64 levels of '(' and unary '-'");
            free(expr);
        }
    }
    ck_assert(eval_int("((((((((((n+1)*2)-3)*(n-(-(-1))))))))))") == 55); /* 10 deep */
}
END_TEST

/* A message shows a long expression's start, not all of a hostile 60 KB one. */
START_TEST(test_messages_cut_a_long_expression)
{
    char *deep = nested("(", ")", 30000);
    size_t size = strlen(deep) + 32;
    char *text = host_xmalloc(size);
    snprintf(text, size, "a = ${%s};\nb = ${n};\n", deep);
    struct pl_template t;
    int line = 0;
    char err[256];
    ck_assert_int_eq(template_scan(&t, text, strlen(text), &line, err, sizeof err), 0);
    ck_assert_str_eq(t.refs[0].expr, deep);
    ck_assert_str_eq(t.refs[0].shown, "((((((((((((((((((((((((((((((((((((((((...");
    ck_assert_str_eq(t.refs[1].shown, "n");
    template_free(&t);
    free(deep);
}
END_TEST

static void assert_text(struct param_value v, const char *literal, const char *in_string)
{
    char *a = param_value_text(&v, 1), *b = param_value_text(&v, 0);
    ck_assert_str_eq(a, literal);
    ck_assert_str_eq(b, in_string);
    free(a);
    free(b);
}

START_TEST(test_values_become_libconfig_literals_or_string_text)
{
    assert_text((struct param_value){.type = PARAM_INT, .i = 256}, "256", "256");
    assert_text((struct param_value){.type = PARAM_INT, .i = -2147483647}, "-2147483647",
                "-2147483647");
    /* libconfig wraps an integer beyond 32 bits unless it carries L. */
    assert_text((struct param_value){.type = PARAM_INT, .i = 5000000000}, "5000000000L",
                "5000000000");
    assert_text((struct param_value){.type = PARAM_FLOAT, .d = 2.0}, "2.0", "2");
    assert_text((struct param_value){.type = PARAM_FLOAT, .d = 0.1}, "0.1", "0.1");
    assert_text((struct param_value){.type = PARAM_FLOAT, .d = 1e-30}, "1e-30", "1e-30");
    assert_text((struct param_value){.type = PARAM_BOOL, .i = 0}, "false", "false");
    char s[] = "a\"b\\c\nd";
    assert_text((struct param_value){.type = PARAM_STRING, .s = s}, "\"a\\\"b\\\\c\\x0ad\"",
                "a\\\"b\\\\c\\x0ad");
}
END_TEST

static const char scanned[] = "# a ${comment} is left alone\n"                       /* 1 */
                              "params = { n = 4; };  // ${nor} this\n"               /* 2 */
                              "tensors = ( { name = \"A\";\n"                        /* 3 */
                              "  shape = [${n}, /* ${x} */ ${2*n}]; },\n"            /* 4 */
                              "  { name = \"B\"; file = \"d/${s}-${n}.npy\"; } );\n" /* 5 */
                              "steps = ( { args = { alpha = ${tol}; }; } )\n"        /* 6 */
                              "outputs = ()\n";                                      /* 7 */

START_TEST(test_scan_finds_each_reference_with_its_line_and_setting)
{
    struct pl_template t;
    int line = 0;
    char err[256];
    ck_assert_int_eq(
        template_scan(&t, host_xstrdup(scanned), strlen(scanned), &line, err, sizeof err), 0);
    static const struct {
        const char *expr, *key;
        int line, in_string;
    } want[] = {
        {"n", "tensors[0].shape[0]", 4, 0},   {"2*n", "tensors[0].shape[1]", 4, 0},
        {"s", "tensors[1].file", 5, 1},       {"n", "tensors[1].file", 5, 1},
        {"tol", "steps[0].args.alpha", 6, 0},
    };
    ck_assert_int_eq(t.ref_count, 5);
    for (int i = 0; i < t.ref_count; i++) {
        ck_assert_str_eq(t.refs[i].expr, want[i].expr);
        ck_assert_str_eq(t.refs[i].key, want[i].key);
        ck_assert_int_eq(t.refs[i].line, want[i].line);
        ck_assert_int_eq(t.refs[i].in_string, want[i].in_string);
    }
    static const char *const roots[] = {"params", "tensors", "steps", "outputs"};
    ck_assert_int_eq(t.root_count, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_str_eq(t.roots[i].name, roots[i]);
    ck_assert_int_eq(t.roots[2].line, 6);

    /* Only params kept: every other setting is blanks, every line break still there. */
    char *kept = template_keep_roots(&t, (const char *const[]){"params", NULL});
    ck_assert_uint_eq(strlen(kept), strlen(scanned));
    ck_assert_ptr_nonnull(strstr(kept, "params = { n = 4; };"));
    ck_assert_ptr_null(strstr(kept, "tensors"));
    ck_assert_ptr_null(strstr(kept, "comment"));
    int breaks = 0;
    for (const char *c = kept; *c != '\0'; c++)
        breaks += *c == '\n';
    ck_assert_int_eq(breaks, 7);
    free(kept);
    template_free(&t);
}
END_TEST

START_TEST(test_scan_reports_what_libconfig_would_not_read)
{
    static const struct {
        const char *text, *want;
        int line;
    } cases[] = {
        {"a = [1, 2;\nb = 3;\n", "the '[' is not closed", 1},
        {"a = 1;\nb = ${n;\n", "'${' without its '}' on the same line", 2},
        {"a = \"${n\";\n", "'${' without its '}'", 1},
        {"a = 1;\n/* open\n", "the comment '/*' is not closed", 2},
        {"a = 1;\nb = \"abc;\n", "the string '\"' is not closed", 2},
        {"a = 1; }\n", "'}' closes nothing", 1},
        {"a = (1,\n 2];\n", "']' closes the '(' of line 1", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pl_template t;
        int line = 0;
        char err[256] = "";
        const char *text = cases[i].text;
        ck_assert_int_eq(
            template_scan(&t, host_xstrdup(text), strlen(text), &line, err, sizeof err), -1);
        ck_assert_msg(strstr(err, cases[i].want) != NULL, "'%s': '%s' lacks '%s'", text, err,
                      cases[i].want);
        ck_assert_int_eq(line, cases[i].line);
        template_free(&t);
    }
}
END_TEST

static char **problems;
static int problem_count;

static void collect(void *ctx, const struct pl_ref *ref, const char *problem)
{
    (void)ctx;
    char *text = NULL;
    ck_assert_int_ge(asprintf(&text, "%d %s ${%s}: %s", ref->line, ref->key, ref->expr, problem),
                     0);
    problems[problem_count++] = text;
}

START_TEST(test_expansion_replaces_values_and_reports_every_problem)
{
    static const char text[] = "a = [${n}, ${n/4}];\nb = \"x-${s}-${tol}\";\nc = ${b}; d = ${s};\n";
    struct pl_template t;
    int line = 0;
    char err[256], **texts = NULL;
    ck_assert_int_eq(template_scan(&t, host_xstrdup(text), strlen(text), &line, err, sizeof err),
                     0);
    char *out = template_expand(&t, &params, values, &texts, collect, NULL);
    ck_assert_str_eq(out, "a = [6, 1];\nb = \"x-a b-0.001\";\nc = true; d = \"a b\";\n");
    ck_assert_str_eq(texts[3], "0.001");
    free(out);
    template_texts_free(texts, t.ref_count);
    template_free(&t);

    static const char bad[] = "a = ${n/0};\nb = ${n};\nc = \"${q}\";\n";
    problems = host_xcalloc(4, sizeof *problems);
    problem_count = 0;
    ck_assert_int_eq(template_scan(&t, host_xstrdup(bad), strlen(bad), &line, err, sizeof err), 0);
    ck_assert_ptr_null(template_expand(&t, &params, values, &texts, collect, NULL));
    ck_assert_int_eq(problem_count, 2);
    ck_assert_str_eq(problems[0], "1 a ${n/0}: division by zero");
    ck_assert_str_eq(problems[1], "3 c ${q}: no param named 'q' (params: n, m, tol, s, b)");
    ck_assert_str_eq(texts[1], "6"); /* what could be evaluated, for the messages */
    template_texts_free(texts, t.ref_count);
    template_texts_free(problems, problem_count);
    template_free(&t);
}
END_TEST

/* n over [4, 7] listed, then m over 0, 2, 4 as a range: six runs, m varying fastest. */
static struct sweep make_sweep(void)
{
    struct sweep s = {host_xcalloc(2, sizeof *s.axes), 2};
    s.axes[0].param = 0;
    s.axes[0].count = 2;
    s.axes[0].list = host_xcalloc(2, sizeof *s.axes[0].list);
    s.axes[0].list[0] = (struct param_value){.type = PARAM_INT, .i = 4};
    s.axes[0].list[1] = (struct param_value){.type = PARAM_INT, .i = 7};
    s.axes[1].param = 1;
    s.axes[1].count = 3;
    s.axes[1].from = (struct param_value){.type = PARAM_INT, .i = 0};
    s.axes[1].step = (struct param_value){.type = PARAM_INT, .i = 2};
    return s;
}

START_TEST(test_sweep_runs_every_combination_the_first_param_slowest)
{
    struct sweep s = make_sweep();
    ck_assert_int_eq(sweep_run_count(&s), 6);
    static const int64_t want[6][2] = {{4, 0}, {4, 2}, {4, 4}, {7, 0}, {7, 2}, {7, 4}};
    for (int64_t run = 0; run < 6; run++) {
        struct param_value *v = sweep_run_values(&s, &params, run);
        ck_assert_int_eq(v[0].i, want[run][0]);
        ck_assert_int_eq(v[1].i, want[run][1]);
        ck_assert(v[2].d == 1e-3); /* not swept: its own value */
        char label[128];
        sweep_run_label(&s, &params, v, label, sizeof label);
        char expected[128];
        snprintf(expected, sizeof expected, "n=%lld, m=%lld", (long long)want[run][0],
                 (long long)want[run][1]);
        ck_assert_str_eq(label, expected);
        params_values_free(v, params.count);
    }
    sweep_remove_axis(&s, 0);
    ck_assert_int_eq(sweep_run_count(&s), 3);
    ck_assert_int_eq(s.axes[0].param, 1);
    sweep_free(&s);
}
END_TEST

START_TEST(test_float_ranges_do_not_build_up_rounding)
{
    struct sweep_axis a = {.param = 2, .count = 11};
    a.from = (struct param_value){.type = PARAM_FLOAT, .d = 0.0};
    a.step = (struct param_value){.type = PARAM_FLOAT, .d = 0.1};
    struct param_value v;
    sweep_axis_value(&a, 3, &v);
    ck_assert(v.d == 0.3); /* 3 * 0.1 is 0.30000000000000004 */
    sweep_axis_value(&a, 10, &v);
    ck_assert(v.d == 1.0);
}
END_TEST

START_TEST(test_output_names_carry_the_swept_values_safely)
{
    struct sweep s = make_sweep();
    struct param_value *v = sweep_run_values(&s, &params, 5);
    static const struct cli_text_case cases[] = {
        {"out/mandelbrot.png", "out/mandelbrot-n=7-m=4.png"},
        {"c.npy", "c-n=7-m=4.npy"},
        {"noext", "noext-n=7-m=4"},
        {"dir.d/file", "dir.d/file-n=7-m=4"},
        {"out/.hidden", "out/.hidden-n=7-m=4"},
        {"/abs/a.b.csv", "/abs/a.b-n=7-m=4.csv"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *name = sweep_output_name(&s, &params, v, cases[i].text);
        ck_assert_str_eq(name, cases[i].want);
        free(name);
    }
    params_values_free(v, params.count);
    sweep_free(&s);

    /* A string's other characters become '_'; floats and negative ints keep their text. */
    struct sweep strings = {host_xcalloc(3, sizeof *strings.axes), 3};
    strings.axes[0] = (struct sweep_axis){.param = 3, .count = 1};
    strings.axes[0].list = host_xcalloc(1, sizeof *strings.axes[0].list);
    strings.axes[0].list[0] =
        (struct param_value){.type = PARAM_STRING, .s = host_xstrdup("a b/c:\"d")};
    strings.axes[1] = (struct sweep_axis){.param = 2, .count = 1};
    strings.axes[1].from = (struct param_value){.type = PARAM_FLOAT, .d = 6.25e-6};
    strings.axes[2] = (struct sweep_axis){.param = 1, .count = 1};
    strings.axes[2].from = (struct param_value){.type = PARAM_INT, .i = -3};
    v = sweep_run_values(&strings, &params, 0);
    char *name = sweep_output_name(&strings, &params, v, "z/v.png");
    ck_assert_str_eq(name, "z/v-s=a_b_c__d-tol=6.25e-06-m=-3.png");
    free(name);
    params_values_free(v, params.count);
    sweep_free(&strings);
}
END_TEST

static const struct cli_test tests[] = {
    CLI_TEST(test_arithmetic_follows_c_precedence_and_truncation),
    CLI_TEST(test_arithmetic_errors_name_the_problem),
    CLI_TEST(test_a_name_alone_keeps_its_type),
    CLI_TEST(test_nesting_is_limited_to_64_levels),
    CLI_TEST(test_messages_cut_a_long_expression),
    CLI_TEST(test_values_become_libconfig_literals_or_string_text),
    CLI_TEST(test_scan_finds_each_reference_with_its_line_and_setting),
    CLI_TEST(test_scan_reports_what_libconfig_would_not_read),
    CLI_TEST(test_expansion_replaces_values_and_reports_every_problem),
    CLI_TEST(test_sweep_runs_every_combination_the_first_param_slowest),
    CLI_TEST(test_float_ranges_do_not_build_up_rounding),
    CLI_TEST(test_output_names_carry_the_swept_values_safely),
};
CLI_SUITE("pipeline_params", "params", make_params, free_params, tests);
