/* cli_test.h — shared by the C unit tests of the `clops` command (cli_test.c): their suite, run
 * from a table of tests by the one main() of cli_test.c, and the rows of their table-driven
 * cases. */
#ifndef CLOPS_CLI_TEST_H
#define CLOPS_CLI_TEST_H

#include <check.h>
#include <stddef.h>

/* A test of the table: CLI_TEST(test) runs once, CLI_LOOP(test, loops) runs loops times (_i = 0
 * to loops - 1). */
struct cli_test {
    const TTest *const *test; /* the address of Check's test: a constant, for a static table */
    int loops;
};
/* A suite of one test case. */
struct cli_suite {
    const char *name, *tcase;
    void (*setup)(void), (*teardown)(void); /* its checked fixture; NULL for none */
    const struct cli_test *tests;
    size_t count;
};
/* clang-format off */
#define CLI_TEST(fn) {&(fn), 1}
#define CLI_LOOP(fn, n) {&(fn), (n)}
/* clang-format on */
/* The number of elements of an array. */
#define CLI_COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* The suite of a test program, which each defines with CLI_SUITE; cli_test.c's main() runs it. */
extern const struct cli_suite cli_suite;
/* Defines cli_suite: one test case called tcase, with the fixture setup and teardown (NULL, NULL
 * for none), of the tests in the array `tests`. */
/* clang-format off */
#define CLI_SUITE(name, tcase, setup, teardown, tests) \
    const struct cli_suite cli_suite = {(name), (tcase), (setup), (teardown), (tests), \
                                        CLI_COUNT(tests)}
/* clang-format on */

/* A row of a table-driven test: a text in, the text it must give. */
struct cli_text_case {
    const char *text, *want;
};
/* A number in, the text it must give. */
struct cli_number_case {
    double number;
    const char *want;
};

#endif
