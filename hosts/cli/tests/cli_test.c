/* cli_test.c — the main() of the C unit tests of the `clops` command: runs the test program's
 * cli_suite (cli_test.h). */
#include "cli_test.h"

#include <stdlib.h>

int main(void)
{
    Suite *s = suite_create(cli_suite.name);
    TCase *tc = tcase_create(cli_suite.tcase);
    if (cli_suite.setup != NULL || cli_suite.teardown != NULL)
        tcase_add_checked_fixture(tc, cli_suite.setup, cli_suite.teardown);
    for (size_t i = 0; i < cli_suite.count; i++)
        tcase_add_loop_test(tc, *cli_suite.tests[i].test, 0, cli_suite.tests[i].loops);
    suite_add_tcase(s, tc);
    SRunner *runner = srunner_create(s);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
