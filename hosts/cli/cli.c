/* cli.c — what the `clops` command's files share in code (cli.h): the library's errors printed
 * and turned into exit codes, for the commands (clops.c) and the pipeline runner
 * (pipeline_run.c) alike. */
#include "cli.h"

#include <stdio.h>

int cli_library_error(const struct cli *cli, int code)
{
    fprintf(stderr, "clops: %s\n", cli->lib.api->last_error());
    return code;
}

int cli_pool_error(const struct cli *cli, int32_t status)
{
    int config =
        status == CLOPS_ERR_CONFIG || status == CLOPS_ERR_IO || status == CLOPS_ERR_NOT_FOUND;
    return cli_library_error(cli, config ? CLI_CONFIG : CLI_FAILED);
}
