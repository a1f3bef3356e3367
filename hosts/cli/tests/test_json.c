/* test_json.c — the CLI's JSON writer (json.c) against exact expected text: layouts, every
 * escape, UTF-8 passed through and invalid bytes replaced, integers at their limits, doubles
 * that round-trip in the fewest digits, and each misuse reported without malformed output. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* A writer whose output is collected in memory. */
struct capture {
    struct json_writer w;
    FILE *stream;
    char *text;
    size_t size;
};

static void capture_open(struct capture *c, enum json_style style)
{
    c->text = NULL;
    c->size = 0;
    c->stream = open_memstream(&c->text, &c->size);
    ck_assert_ptr_nonnull(c->stream);
    json_init(&c->w, c->stream, style);
}

/* Finishes the document: asserts its status and the exact text written, then frees it. */
static void capture_expect(struct capture *c, int status, const char *expected)
{
    ck_assert_int_eq(json_finish(&c->w), status);
    ck_assert_int_eq(fclose(c->stream), 0);
    ck_assert_str_eq(c->text, expected);
    free(c->text);
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
    capture_expect(&c, JSON_OK, line);
    free(line);
}

static void expect_double(double value, const char *expected)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_double(&c.w, value);
    char line[64];
    snprintf(line, sizeof line, "%s\n", expected);
    capture_expect(&c, JSON_OK, line);
}

/* The same document in both styles: objects, arrays, empty ones, every kind of value. */
static void write_sample(struct json_writer *w)
{
    json_begin_object(w);
    json_key(w, "schema");
    json_string(w, "x/1");
    json_key(w, "list");
    json_begin_array(w);
    json_int(w, 1);
    json_double(w, 2.5);
    json_bool(w, 1);
    json_bool(w, 0);
    json_null(w);
    json_begin_object(w);
    json_end_object(w);
    json_begin_array(w);
    json_end_array(w);
    json_end_array(w);
    json_key(w, "inner");
    json_begin_object(w);
    json_key(w, "s");
    json_string(w, NULL);
    json_end_object(w);
    json_end_object(w);
}

START_TEST(test_compact_document_has_no_blanks)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    write_sample(&c.w);
    capture_expect(&c, JSON_OK,
                   "{\"schema\":\"x/1\",\"list\":[1,2.5,true,false,null,{},[]],"
                   "\"inner\":{\"s\":null}}\n");
}
END_TEST

START_TEST(test_pretty_document_indents_two_spaces_a_level)
{
    struct capture c;
    capture_open(&c, JSON_PRETTY);
    write_sample(&c.w);
    capture_expect(&c, JSON_OK,
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
                   "}\n");
}
END_TEST

START_TEST(test_scalar_top_level_values)
{
    struct capture c;
    capture_open(&c, JSON_PRETTY);
    json_int(&c.w, 42);
    capture_expect(&c, JSON_OK, "42\n");
    capture_open(&c, JSON_PRETTY);
    json_begin_array(&c.w);
    json_end_array(&c.w);
    capture_expect(&c, JSON_OK, "[]\n");
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

START_TEST(test_keys_are_escaped_like_strings)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_begin_object(&c.w);
    json_key(&c.w, "a\"b\n");
    json_int(&c.w, 1);
    json_end_object(&c.w);
    capture_expect(&c, JSON_OK, "{\"a\\\"b\\n\":1}\n");
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

START_TEST(test_integers_are_exact_to_the_int64_limits)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_begin_array(&c.w);
    json_int(&c.w, 0);
    json_int(&c.w, -1);
    json_int(&c.w, INT64_MAX);
    json_int(&c.w, INT64_MIN);
    json_end_array(&c.w);
    capture_expect(&c, JSON_OK, "[0,-1,9223372036854775807,-9223372036854775808]\n");
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
        fclose(c.stream);
        ck_assert_msg(strtod(c.text, NULL) == value, "%.17g written as %s", value, c.text);
        ck_assert_msg(strlen(c.text) <= 25, "%s is longer than 17 digits need", c.text);
        free(c.text);
    }
}
END_TEST

START_TEST(test_nan_and_infinity_are_null)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_begin_array(&c.w);
    json_double(&c.w, NAN);
    json_double(&c.w, INFINITY);
    json_double(&c.w, -INFINITY);
    json_end_array(&c.w);
    capture_expect(&c, JSON_OK, "[null,null,null]\n");
}
END_TEST

/* ---- Misuse: reported by json_finish, nothing written after it ----------------------------- */

START_TEST(test_value_without_key_in_object_is_misuse)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_begin_object(&c.w);
    json_int(&c.w, 1);
    json_end_object(&c.w);
    capture_expect(&c, JSON_ERR_MISUSE, "{");
}
END_TEST

START_TEST(test_key_in_array_is_misuse)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_begin_array(&c.w);
    json_key(&c.w, "a");
    json_int(&c.w, 1);
    json_end_array(&c.w);
    capture_expect(&c, JSON_ERR_MISUSE, "[");
}
END_TEST

START_TEST(test_key_at_top_level_is_misuse)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_key(&c.w, "a");
    capture_expect(&c, JSON_ERR_MISUSE, "");
}
END_TEST

START_TEST(test_mismatched_end_is_misuse)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_begin_array(&c.w);
    json_end_object(&c.w);
    json_end_array(&c.w);
    capture_expect(&c, JSON_ERR_MISUSE, "[");
}
END_TEST

START_TEST(test_end_without_begin_is_misuse)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_end_array(&c.w);
    capture_expect(&c, JSON_ERR_MISUSE, "");
}
END_TEST

START_TEST(test_key_without_value_is_misuse)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_begin_object(&c.w);
    json_key(&c.w, "a");
    json_key(&c.w, "b");
    capture_expect(&c, JSON_ERR_MISUSE, "{\"a\":");
    capture_open(&c, JSON_COMPACT);
    json_begin_object(&c.w);
    json_key(&c.w, "a");
    json_end_object(&c.w);
    capture_expect(&c, JSON_ERR_MISUSE, "{\"a\":");
}
END_TEST

START_TEST(test_second_top_level_value_is_misuse)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_int(&c.w, 1);
    json_int(&c.w, 2);
    capture_expect(&c, JSON_ERR_MISUSE, "1");
}
END_TEST

START_TEST(test_unfinished_document_is_misuse)
{
    struct capture c;
    capture_open(&c, JSON_COMPACT);
    json_begin_object(&c.w);
    capture_expect(&c, JSON_ERR_MISUSE, "{");
    capture_open(&c, JSON_COMPACT);
    capture_expect(&c, JSON_ERR_MISUSE, "");
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
    capture_expect(&c, JSON_OK, expected);

    capture_open(&c, JSON_COMPACT);
    for (int i = 0; i <= JSON_MAX_DEPTH; i++)
        json_begin_array(&c.w);
    expected[JSON_MAX_DEPTH] = '\0';
    capture_expect(&c, JSON_ERR_MISUSE, expected);
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

int main(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("writer");
    tcase_add_test(tc, test_compact_document_has_no_blanks);
    tcase_add_test(tc, test_pretty_document_indents_two_spaces_a_level);
    tcase_add_test(tc, test_scalar_top_level_values);
    tcase_add_test(tc, test_strings_escape_quotes_backslash_and_controls);
    tcase_add_test(tc, test_keys_are_escaped_like_strings);
    tcase_add_test(tc, test_valid_utf8_passes_through);
    tcase_add_test(tc, test_invalid_utf8_bytes_become_replacement_characters);
    tcase_add_test(tc, test_integers_are_exact_to_the_int64_limits);
    tcase_add_test(tc, test_doubles_use_the_shortest_round_trip);
    tcase_add_test(tc, test_doubles_read_back_exactly);
    tcase_add_test(tc, test_nan_and_infinity_are_null);
    tcase_add_test(tc, test_value_without_key_in_object_is_misuse);
    tcase_add_test(tc, test_key_in_array_is_misuse);
    tcase_add_test(tc, test_key_at_top_level_is_misuse);
    tcase_add_test(tc, test_mismatched_end_is_misuse);
    tcase_add_test(tc, test_end_without_begin_is_misuse);
    tcase_add_test(tc, test_key_without_value_is_misuse);
    tcase_add_test(tc, test_second_top_level_value_is_misuse);
    tcase_add_test(tc, test_unfinished_document_is_misuse);
    tcase_add_test(tc, test_nesting_deeper_than_the_limit_is_misuse);
    tcase_add_test(tc, test_write_failure_is_an_io_error);
    suite_add_tcase(s, tc);
    SRunner *runner = srunner_create(s);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
