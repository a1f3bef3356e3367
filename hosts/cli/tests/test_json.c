/* test_json.c — the CLI's JSON writer (json.c) against exact expected text: layouts, every
 * escape, UTF-8 passed through and invalid bytes replaced, integers at their limits, doubles
 * that round-trip in the fewest digits, and each misuse reported without malformed output. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_test.h"
#include "host_os.h"
#include "json.h"

/* A writer whose output is collected in memory. */
struct capture {
    struct json_writer w;
    struct host_memory_stream memory; /* its text, once closed */
};

static void capture_open(struct capture *c, enum json_style style)
{
    ck_assert_int_eq(host_memory_stream_open(&c->memory), 0);
    json_init(&c->w, c->memory.f, style);
}

/* Finishes the document: asserts its status and the exact text written, then frees it. `what`
 * names the document in a failure's message. */
static void capture_expect(struct capture *c, const char *what, int status, const char *expected)
{
    int finished = json_finish(&c->w);
    ck_assert_msg(finished == status, "%s: json_finish gave %d, expected %d", what, finished,
                  status);
    ck_assert_int_eq(host_memory_stream_close(&c->memory), 0);
    ck_assert_msg(strcmp(c->memory.text, expected) == 0, "%s: wrote \"%s\", expected \"%s\"", what,
                  c->memory.text, expected);
    free(c->memory.text);
}

/* One string value written compactly must give exactly `expected` (quotes included). */
static void expect_string(const char *value, const char *expected)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_string(&c.w, value);
    char *line = malloc(strlen(expected) + 2);
    ck_assert_ptr_nonnull(line);
    sprintf(line, "%s\n", expected);
    capture_expect(&c, "json_string", JSON_OK, line);
    free(line);
}

static void expect_double(double value, const char *expected)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_double(&c.w, value);
    char line[64];
    snprintf(line, sizeof line, "%s\n", expected);
    capture_expect(&c, "json_double", JSON_OK, line);
}

/* ---- Documents written by a script of calls ------------------------------------------------ */

/* One call on the writer. */
struct call {
    enum call_kind {
        CALL_NONE, /* ends a script */
        CALL_BEGIN_OBJECT,
        CALL_END_OBJECT,
        CALL_BEGIN_ARRAY,
        CALL_END_ARRAY,
        CALL_KEY,
        CALL_STRING,
        CALL_INT,
        CALL_DOUBLE,
        CALL_BOOL,
        CALL_NULL
    } kind;
    const char *text; /* CALL_KEY, CALL_STRING */
    int64_t integer;  /* CALL_INT, CALL_BOOL */
    double real;      /* CALL_DOUBLE */
};

enum { MAX_CALLS = 24 };

/* A document: the calls that write it, and what json_finish must report and the stream hold. */
struct writer_case {
    const char *property; /* what the case shows; a failure names it */
    enum json_style style;
    struct call calls[MAX_CALLS]; /* in order, up to the first CALL_NONE */
    enum json_status status;
    const char *expected;
};

static void write_call(struct json_writer *w, const struct call *call)
{
    switch (call->kind) {
    case CALL_NONE: break;
    case CALL_BEGIN_OBJECT: json_begin_object(w); break;
    case CALL_END_OBJECT: json_end_object(w); break;
    case CALL_BEGIN_ARRAY: json_begin_array(w); break;
    case CALL_END_ARRAY: json_end_array(w); break;
    case CALL_KEY: json_key(w, call->text); break;
    case CALL_STRING: json_string(w, call->text); break;
    case CALL_INT: json_int(w, call->integer); break;
    case CALL_DOUBLE: json_double(w, call->real); break;
    case CALL_BOOL: json_bool(w, (int)call->integer); break;
    case CALL_NULL: json_null(w); break;
    }
}

/* Writes the case's document on a fresh writer and checks the status and the exact text. */
static void expect_case(const struct writer_case *wc)
{
    struct capture c;
    capture_open(&c, wc->style);
    for (int i = 0; i < MAX_CALLS && wc->calls[i].kind != CALL_NONE; i++)
        write_call(&c.w, &wc->calls[i]);
    capture_expect(&c, wc->property, wc->status, wc->expected);
}

/* The calls as a script spells them, named after the text they write. Not clang-formatted:
 * version 14 lays a braced macro body out as a block. */
/* clang-format off */
#define OBJECT {.kind = CALL_BEGIN_OBJECT}
#define END_OBJECT {.kind = CALL_END_OBJECT}
#define ARRAY {.kind = CALL_BEGIN_ARRAY}
#define END_ARRAY {.kind = CALL_END_ARRAY}
#define KEY(s) {.kind = CALL_KEY, .text = (s)}
#define STRING(s) {.kind = CALL_STRING, .text = (s)}
#define INT(v) {.kind = CALL_INT, .integer = (v)}
#define DOUBLE(v) {.kind = CALL_DOUBLE, .real = (v)}
#define BOOL(v) {.kind = CALL_BOOL, .integer = (v)}
#define NULL_VALUE {.kind = CALL_NULL}
#define NO_CALLS {.kind = CALL_NONE}
/* clang-format on */

/* The same document in both styles: objects, arrays, empty ones, every kind of value. */
#define SAMPLE_DOCUMENT                                                                            \
    OBJECT, KEY("schema"), STRING("x/1"), KEY("list"), ARRAY, INT(1), DOUBLE(2.5), BOOL(1),        \
        BOOL(0), NULL_VALUE, OBJECT, END_OBJECT, ARRAY, END_ARRAY, END_ARRAY, KEY("inner"),        \
        OBJECT, KEY("s"), STRING(NULL), END_OBJECT, END_OBJECT

static const struct writer_case documents[] = {
    {"a compact document has no blanks",
     JSON_COMPACT,
     {SAMPLE_DOCUMENT},
     JSON_OK,
     "{\"schema\":\"x/1\",\"list\":[1,2.5,true,false,null,{},[]],"
     "\"inner\":{\"s\":null}}\n"},
    {"a pretty document indents two spaces a level",
     JSON_PRETTY,
     {SAMPLE_DOCUMENT},
     JSON_OK,
     "{\n"
     "  \"schema\": \"x/1\",\n"
     "  \"list\": [\n"
     "    1,\n"
     "    2.5,\n"
     "    true,\n"
     "    false,\n"
     "    null,\n"
     "    {},\n"
     "    []\n"
     "  ],\n"
     "  \"inner\": {\n"
     "    \"s\": null\n"
     "  }\n"
     "}\n"},
    {"a scalar is a whole document", JSON_PRETTY, {INT(42)}, JSON_OK, "42\n"},
    {"an empty array is a whole document", JSON_PRETTY, {ARRAY, END_ARRAY}, JSON_OK, "[]\n"},
    {"keys are escaped like strings",
     JSON_COMPACT,
     {OBJECT, KEY("a\"b\n"), INT(1), END_OBJECT},
     JSON_OK,
     "{\"a\\\"b\\n\":1}\n"},
    {"integers are exact to the int64 limits",
     JSON_COMPACT,
     {ARRAY, INT(0), INT(-1), INT(INT64_MAX), INT(INT64_MIN), END_ARRAY},
     JSON_OK,
     "[0,-1,9223372036854775807,-9223372036854775808]\n"},
    {"NaN and infinity are null",
     JSON_COMPACT,
     {ARRAY, DOUBLE(NAN), DOUBLE(INFINITY), DOUBLE(-INFINITY), END_ARRAY},
     JSON_OK,
     "[null,null,null]\n"},
};

/* Misuse: reported by json_finish, nothing written after it. */
static const struct writer_case misuses[] = {
    {"a value without a key in an object",
     JSON_COMPACT,
     {OBJECT, INT(1), END_OBJECT},
     JSON_ERR_MISUSE,
     "{"},
    {"a key in an array", JSON_COMPACT, {ARRAY, KEY("a"), INT(1), END_ARRAY}, JSON_ERR_MISUSE, "["},
    {"a key at the top level", JSON_COMPACT, {KEY("a")}, JSON_ERR_MISUSE, ""},
    {"a mismatched end", JSON_COMPACT, {ARRAY, END_OBJECT, END_ARRAY}, JSON_ERR_MISUSE, "["},
    {"an end without a begin", JSON_COMPACT, {END_ARRAY}, JSON_ERR_MISUSE, ""},
    {"a key without a value, before another key",
     JSON_COMPACT,
     {OBJECT, KEY("a"), KEY("b")},
     JSON_ERR_MISUSE,
     "{\"a\":"},
    {"a key without a value, before the end",
     JSON_COMPACT,
     {OBJECT, KEY("a"), END_OBJECT},
     JSON_ERR_MISUSE,
     "{\"a\":"},
    {"a second top-level value", JSON_COMPACT, {INT(1), INT(2)}, JSON_ERR_MISUSE, "1"},
    {"an unfinished document", JSON_COMPACT, {OBJECT}, JSON_ERR_MISUSE, "{"},
    {"an empty document", JSON_COMPACT, {NO_CALLS}, JSON_ERR_MISUSE, ""},
};

#undef OBJECT
#undef END_OBJECT
#undef ARRAY
#undef END_ARRAY
#undef KEY
#undef STRING
#undef INT
#undef DOUBLE
#undef BOOL
#undef NULL_VALUE
#undef NO_CALLS
#undef SAMPLE_DOCUMENT

enum {
    DOCUMENT_COUNT = (int)(sizeof documents / sizeof documents[0]),
    MISUSE_COUNT = (int)(sizeof misuses / sizeof misuses[0])
};

/* Loop tests: _i is the case. */
START_TEST(test_documents_are_written_exactly)
{
    expect_case(&documents[_i]);
}
END_TEST

START_TEST(test_misuse_is_reported_without_malformed_output)
{
    expect_case(&misuses[_i]);
}
END_TEST

START_TEST(test_strings_escape_quotes_backslash_and_controls)
{
    expect_string("", "\"\"");
    expect_string("say \"hi\"", "\"say \\\"hi\\\"\"");
    expect_string("C:\\dir\\", "\"C:\\\\dir\\\\\"");
    expect_string("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"");
    expect_string("\x01\x1f\x0b", "\"\\u0001\\u001f\\u000b\"");
    /* DEL and '/' need no escape in JSON. */
    expect_string("a/b\x7f", "\"a/b\x7f\"");
}
END_TEST

START_TEST(test_valid_utf8_passes_through)
{
    /* é (2 bytes), · and € (3), U+FFFF, 𝄞 (4), U+10FFFF: the largest code point. */
    const char *text =
        "\xC3\xA9 \xC2\xB7 \xE2\x82\xAC \xEF\xBF\xBF \xF0\x9D\x84\x9E \xF4\x8F\xBF\xBF";
    char expected[64];
    snprintf(expected, sizeof expected, "\"%s\"", text);
    expect_string(text, expected);
}
END_TEST

START_TEST(test_invalid_utf8_bytes_become_replacement_characters)
{
#define FFFD "\xEF\xBF\xBD"
    expect_string("a\x80z", "\"a" FFFD "z\"");               /* a stray continuation byte */
    expect_string("\xC0\xAF", "\"" FFFD FFFD "\"");          /* overlong '/' */
    expect_string("\xE0\x80\xAF", "\"" FFFD FFFD FFFD "\""); /* overlong, 3 bytes */
    expect_string("\xED\xA0\x80", "\"" FFFD FFFD FFFD "\""); /* a UTF-16 surrogate */
    expect_string("\xF4\x90\x80\x80", "\"" FFFD FFFD FFFD FFFD "\""); /* past U+10FFFF */
    expect_string("\xF5\xFF", "\"" FFFD FFFD "\"");                   /* never in UTF-8 */
    /* A sequence cut short, as a fixed-size field can cut a name: mid-string, and at the end. */
    expect_string("\xE2\x82z", "\"" FFFD FFFD "z\"");
    expect_string("avx\xE2\x82", "\"avx" FFFD FFFD "\"");
#undef FFFD
}
END_TEST

START_TEST(test_doubles_use_the_shortest_round_trip)
{
    /* The expected texts are Python's repr() of the same doubles. */
    expect_double(0.0, "0.0");
    expect_double(-0.0, "-0.0");
    expect_double(1.0, "1.0");
    expect_double(-2.5, "-2.5");
    expect_double(0.1, "0.1");
    expect_double(0.3, "0.3");
    expect_double(1e-4 * 3, "0.00030000000000000003");
    expect_double(100.0, "100.0");
    expect_double(1.0 / 3.0, "0.3333333333333333");
    expect_double(2.0 / 3.0, "0.6666666666666666");
    expect_double(0.0001, "0.0001");
    expect_double(0.00001, "1e-05");
    expect_double(1.5e-7, "1.5e-07");
    expect_double(1e15, "1000000000000000.0");
    expect_double(9007199254740992.0, "9007199254740992.0");
    expect_double(1e16, "1e+16");
    expect_double(123456789012345678.0, "1.2345678901234568e+17");
    expect_double(1e22, "1e+22");
    expect_double(DBL_MAX, "1.7976931348623157e+308");
    expect_double(5e-324, "5e-324");
}
END_TEST

START_TEST(test_doubles_read_back_exactly)
{
    /* Awkward values: every one must come back bit for bit from its shortest text. */
    double x = 0.7;
    for (int i = 0; i < 2000; i++) {
        x = x * 3.99 * (1.0 - x) + 1e-9;
        double value = ldexp(x, i % 400 - 200) * (i % 2 ? -1 : 1);
        struct capture c;
        capture_open(&c, JSON_COMPACT);
        json_double(&c.w, value);
        ck_assert_int_eq(json_finish(&c.w), JSON_OK);
        ck_assert_int_eq(host_memory_stream_close(&c.memory), 0);
        const char *text = c.memory.text;
        ck_assert_msg(strtod(text, NULL) == value, "%.17g written as %s", value, text);
        ck_assert_msg(strlen(text) <= 25, "%s is longer than 17 digits need", text);
        free(c.memory.text);
    }
}
END_TEST

START_TEST(test_nesting_deeper_than_the_limit_is_misuse)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    for (int i = 0; i < JSON_MAX_DEPTH; i++)
        json_begin_array(&c.w);
    for (int i = 0; i < JSON_MAX_DEPTH; i++)
        json_end_array(&c.w);
    char expected[2 * JSON_MAX_DEPTH + 2];
    memset(expected, '[', JSON_MAX_DEPTH);
    memset(expected + JSON_MAX_DEPTH, ']', JSON_MAX_DEPTH);
    strcpy(expected + 2 * JSON_MAX_DEPTH, "\n");
    capture_expect(&c, "nesting to the limit", JSON_OK, expected);

    capture_open(&c, JSON_COMPACT);
    for (int i = 0; i <= JSON_MAX_DEPTH; i++)
        json_begin_array(&c.w);
    expected[JSON_MAX_DEPTH] = '\0';
    capture_expect(&c, "nesting past the limit", JSON_ERR_MISUSE, expected);
}
END_TEST

START_TEST(test_write_failure_is_an_io_error)
{
    FILE *full = fopen("/dev/full", "w");
    ck_assert_ptr_nonnull(full);
    struct json_writer w;
    json_init(&w, full, JSON_COMPACT);
    json_string(&w, "no room");
    ck_assert_int_eq(json_finish(&w), JSON_ERR_IO);
    fclose(full);
}
END_TEST

static const struct cli_test tests[] = {
    CLI_LOOP(test_documents_are_written_exactly, DOCUMENT_COUNT),
    CLI_LOOP(test_misuse_is_reported_without_malformed_output, MISUSE_COUNT),
    CLI_TEST(test_strings_escape_quotes_backslash_and_controls),
    CLI_TEST(test_valid_utf8_passes_through),
    CLI_TEST(test_invalid_utf8_bytes_become_replacement_characters),
    CLI_TEST(test_doubles_use_the_shortest_round_trip),
    CLI_TEST(test_doubles_read_back_exactly),
    CLI_TEST(test_nesting_deeper_than_the_limit_is_misuse),
    CLI_TEST(test_write_failure_is_an_io_error),
};
CLI_SUITE("json", "writer", NULL, NULL, tests);
