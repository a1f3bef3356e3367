/* cli_test.h — shared by the C unit tests of the `clops` command (cli_test.c): their suite, run
 * from a table of tests, and the rows of their table-driven cases. */
#ifndef CLOPS_CLI_TEST_H
#define CLOPS_CLI_TEST_H

#include <check.h>
#include <stddef.h>

/* A suite of one test case. */
struct cli_suite {
    const char *name, *tcase;
    void (*setup)(void), (*teardown)(void); /* its checked fixture; NULL for none */
};
/* A test of the table: CLI_TEST(test) runs once, CLI_LOOP(test, loops) runs loops times (_i = 0
 * to loops - 1). */
struct cli_test {
    const TTest *test;
    int loops;
};
/* clang-format off */
#define CLI_TEST(fn) {(fn), 1}
#define CLI_LOOP(fn, n) {(fn), (n)}
/* clang-format on */
/* The number of elements of an array. */
#define CLI_COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* Runs the count tests in `suite`; returns main()'s exit status. */
int cli_run_suite(const struct cli_suite *suite, const struct cli_test *tests, size_t count);

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
