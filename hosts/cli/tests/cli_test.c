/* cli_test.c — the suite runner of the C unit tests of the `clops` command (cli_test.h). */
#include "cli_test.h"

#include <stdlib.h>

int cli_run_suite(const struct cli_suite *suite, const struct cli_test *tests, size_t count)
{
    Suite *s = suite_create(suite->name);
    TCase *tc = tcase_create(suite->tcase);
    if (suite->setup != NULL || suite->teardown != NULL)
        tcase_add_checked_fixture(tc, suite->setup, suite->teardown);
    for (size_t i = 0; i < count; i++)
        tcase_add_loop_test(tc, tests[i].test, 0, tests[i].loops);
    suite_add_tcase(s, tc);
    SRunner *runner = srunner_create(s);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
