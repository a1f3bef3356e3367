/* test_config_literals.c — the scan for integer literals that libconfig 1.5 would wrap
 * (plugin/config_literals.c): the limits of 32 and 64 bits, the L suffix, hex, and that
 * strings, comments, names and floats are not taken for literals. */
#include <check.h>
#include <libconfig.h>
#include <stdio.h>
#include <string.h>

#include "config_literals.h"
#include "testutil.h"

/* Appends "line: message\n" to the string `ctx`. */
static void append_refused(void *ctx, const struct wide_literal *literal)
{
    char *all = ctx;
    size_t used = strlen(all);
    snprintf(all + used, 4096 - used, "%d: %s\n", literal->line, literal->message);
}

/* Every literal the scan refuses in `text`, one "line: message" a line (their count is
 * literal_scan_all's, the first is literal_scan_first's). */
static const char *refused(const char *text)
{
    static char all[4096];
    all[0] = '\0';
    int count = literal_scan_all(text, append_refused, all);
    int lines = 0;
    for (const char *nl = strchr(all, '\n'); nl != NULL; nl = strchr(nl + 1, '\n'))
        lines++;
    ck_assert_int_eq(count, lines);
    struct wide_literal first;
    ck_assert_int_eq(literal_scan_first(text, &first), count > 0);
    if (count > 0) {
        char line[sizeof first.message + 16];
        snprintf(line, sizeof line, "%d: %s\n", first.line, first.message);
        ck_assert_int_eq(strncmp(all, line, strlen(line)), 0);
    }
    return all;
}

/* libconfig's own reading of `a = <literal>;`, as "type value": what the scan protects. */
static void expect_libconfig_reads(const char *literal, int type, long long value)
{
    char text[128];
    snprintf(text, sizeof text, "a = %s;", literal);
    config_t cf;
    config_init(&cf);
    ck_assert_int_eq(config_read_string(&cf, text), CONFIG_TRUE);
    const config_setting_t *a = config_lookup(&cf, "a");
    ck_assert_int_eq(config_setting_type(a), type);
    ck_assert_int_eq(config_setting_get_int64(a), value);
    config_destroy(&cf);
}

START_TEST(test_int32_limits_are_accepted_and_one_beyond_refused)
{
    ck_assert_str_eq(refused("a = 2147483647;\nb = -2147483648;\nc = +2147483647;"), "");
    ck_assert_str_eq(refused("a = 2147483648;\nb = -2147483649;\n"),
                     "1: 2147483648 does not fit in 32 bits; write 2147483648L\n"
                     "2: -2147483649 does not fit in 32 bits; write -2147483649L\n");
    ck_assert_str_eq(refused("a = [4294967299, 2];"),
                     "1: 4294967299 does not fit in 32 bits; write 4294967299L\n");
    /* Leading zeros are decimal in libconfig, and change nothing. */
    ck_assert_str_eq(refused("a = 0002147483647;"), "");
}
END_TEST

START_TEST(test_the_wraps_refused_are_libconfigs)
{
    /* Were libconfig to read these at full width one day, this test says the scan is no longer
     * needed. */
    expect_libconfig_reads("4294967299", CONFIG_TYPE_INT, 3);
    expect_libconfig_reads("-2147483649", CONFIG_TYPE_INT, 2147483647);
#ifdef _WIN32
    /* long has 32 bits on Windows: libconfig's strtoul of a hex literal saturates there. */
    expect_libconfig_reads("0x100000001", CONFIG_TYPE_INT, -1);
#else
    expect_libconfig_reads("0x100000001", CONFIG_TYPE_INT, 1);
#endif
    expect_libconfig_reads("4294967299L", CONFIG_TYPE_INT64, 4294967299LL);
    ck_assert_str_ne(refused("a = 4294967299;"), "");
    ck_assert_str_ne(refused("a = -2147483649;"), "");
    ck_assert_str_ne(refused("a = 0x100000001;"), "");
    ck_assert_str_eq(refused("a = 4294967299L;"), "");
}
END_TEST

START_TEST(test_l_suffix_reads_64_bits)
{
    ck_assert_str_eq(refused("a = 9223372036854775807L;\nb = -9223372036854775808LL;\n"
                             "c = 0x7FFFFFFFFFFFFFFFL;"),
                     "");
    ck_assert_str_eq(refused("a = 9223372036854775807;"),
                     "1: 9223372036854775807 does not fit in 32 bits; write "
                     "9223372036854775807L\n");
    /* Beyond 64 bits libconfig saturates or wraps even with the suffix: no L helps. */
    ck_assert_str_eq(refused("a = 9223372036854775808L;\nb = 99999999999999999999;\n"
                             "c = 0xFFFFFFFFFFFFFFFFL;\nd = 0x1FFFFFFFFFFFFFFFFL;"),
                     "1: 9223372036854775808L does not fit in 64 bits\n"
                     "2: 99999999999999999999 does not fit in 64 bits\n"
                     "3: 0xFFFFFFFFFFFFFFFFL does not fit in 64 bits\n"
                     "4: 0x1FFFFFFFFFFFFFFFFL does not fit in 64 bits\n");
}
END_TEST

START_TEST(test_hex_is_refused_beyond_int32_max)
{
    ck_assert_str_eq(refused("a = 0x7FFFFFFF;\nb = 0X7fffffff;\nc = 0x100000001L;"), "");
    /* 0xFFFFFFFF reads as -1. */
    ck_assert_str_eq(refused("a = 0x80000000;\nb = 0xFFFFFFFF;\nc = 0x100000001;"),
                     "1: 0x80000000 does not fit in 32 bits; write 0x80000000L\n"
                     "2: 0xFFFFFFFF does not fit in 32 bits; write 0xFFFFFFFFL\n"
                     "3: 0x100000001 does not fit in 32 bits; write 0x100000001L\n");
}
END_TEST

START_TEST(test_floats_are_not_integers)
{
    ck_assert_str_eq(refused("a = 1e10;\nb = 4294967299.0;\nc = 4294967299.;\nd = .4294967299;\n"
                             "e = -4294967299E+3;\nf = 4294967299e-2;"),
                     "");
}
END_TEST

START_TEST(test_strings_comments_names_and_includes_are_skipped)
{
    const char *text = "s = \"4294967299 \\\" 4294967299\";\n" /* an escaped quote inside */
                       "# 4294967299\n"
                       "// 4294967299\n"
                       "/* 4294967299\n"
                       "   4294967299 */\n"
                       "x4294967299 = 1;\n"
                       "y-4294967299 = 2;\n"
                       "@include \"4294967299.cfg\"\n"
                       "t = \"one\n4294967299\";\n";
    ck_assert_str_eq(refused(text), "");
}
END_TEST

START_TEST(test_line_numbers_count_lines_in_strings_and_comments)
{
    const char *text = "a = 1; /* one\n"
                       "two */ b = 4294967296;\n"
                       "s = \"three\n"
                       "four\"; c = [1,\n"
                       "\n"
                       "  -4294967296, 0x100000000];\n"
                       "# 8\n"
                       "d = 4294967296; // 4294967296\n";
    ck_assert_str_eq(refused(text), "2: 4294967296 does not fit in 32 bits; write 4294967296L\n"
                                    "6: -4294967296 does not fit in 32 bits; write -4294967296L\n"
                                    "6: 0x100000000 does not fit in 32 bits; write 0x100000000L\n"
                                    "8: 4294967296 does not fit in 32 bits; write 4294967296L\n");
}
END_TEST

START_TEST(test_open_strings_and_comments_end_the_scan)
{
    /* libconfig reports them; the scan stops without reading past the text. */
    ck_assert_str_eq(refused("a = \"4294967299"), "");
    ck_assert_str_eq(refused("a = 1; /* 4294967299"), "");
    ck_assert_str_eq(refused("a = \"\\"), "");
    ck_assert_str_eq(refused(""), "");
    /* A literal, an exponent or a sign at the very end of the text (found by fuzz_config). */
    ck_assert_str_eq(refused("a = 4294967299"),
                     "1: 4294967299 does not fit in 32 bits; write 4294967299L\n");
    ck_assert_str_eq(refused("a = 4294967299e"),
                     "1: 4294967299 does not fit in 32 bits; write 4294967299L\n");
    ck_assert_str_eq(refused("a = 1e+"), "");
    ck_assert_str_eq(refused("a = -"), "");
}
END_TEST

START_TEST(test_long_literals_are_cut_in_the_message)
{
    char text[256] = "a = ";
    memset(text + 4, '9', 200);
    text[204] = '\0';
    ck_assert_str_eq(refused(text), "1: 9999999999999999999999999999999999999999999999999999999"
                                    "999999999... does not fit in 64 bits\n");
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_TEST(test_int32_limits_are_accepted_and_one_beyond_refused),
        TU_TEST(test_the_wraps_refused_are_libconfigs),
        TU_TEST(test_l_suffix_reads_64_bits),
        TU_TEST(test_hex_is_refused_beyond_int32_max),
        TU_TEST(test_floats_are_not_integers),
        TU_TEST(test_strings_comments_names_and_includes_are_skipped),
        TU_TEST(test_line_numbers_count_lines_in_strings_and_comments),
        TU_TEST(test_open_strings_and_comments_end_the_scan),
        TU_TEST(test_long_literals_are_cut_in_the_message),
    };
    return tu_run_tests("config_literals", 0, 1, tests, TU_COUNT(tests));
}
