/* cli.h — what the `clops` command's source files share: exit codes, the loaded library, and
 * the entry of the pipeline runner. */
#ifndef CLOPS_CLI_H
#define CLOPS_CLI_H

#include "loader.h"

/* The exit codes are part of the command's interface (documented in --help and
 * hosts/cli/README.md). */
enum cli_exit {
    CLI_OK = 0,
    CLI_FAILED = 1, /* an operator or pipeline step failed, or a check failed */
    CLI_USAGE = 2,  /* bad command line */
    CLI_LOAD = 3,   /* libclops could not be loaded, or its ABI does not fit */
    CLI_CONFIG = 4  /* a pool configuration or pipeline file is wrong */
};

struct cli {
    struct host_library lib;
    int verbose;
};

/* Prints "clops: <the library's last error>" and returns `code`. */
int cli_library_error(const struct cli *cli, int code);
/* The exit code for a failed pool creation: configuration problems are CLI_CONFIG. */
int cli_pool_error(const struct cli *cli, int32_t status);

/* How `clops run` runs a pipeline (its options). */
struct run_options {
    const char *output_dir; /* where relative output paths are written */
    char **sets;            /* --set key.path=value overrides, in order */
    int set_count;
    int dry_run; /* validate and print the plan; run nothing */
    int quiet;   /* no progress lines */
    int json;    /* one JSON document on stdout instead of the tables (schema clops-run/1) */
};

/* `clops run FILE`: validates the pipeline file, then runs it. Returns an enum cli_exit. */
int pipeline_run_file(struct cli *cli, const char *path, const struct run_options *options);

#endif
