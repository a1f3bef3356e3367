/* cli.h — what the `clops` command's source files share: exit codes, the loaded library, and
 * the entry of the pipeline runner. */
#ifndef CLOPS_CLI_H
#define CLOPS_CLI_H

#include <stdint.h>

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

struct shard; /* shard.h */

/* How `clops run` runs a pipeline (its options). */
struct run_options {
    const char *output_dir; /* where relative output paths are written */
    char **sets;            /* --set key.path=value overrides, in order */
    int set_count;
    int dry_run;  /* validate and print the plan; run nothing */
    int quiet;    /* no progress lines */
    int progress; /* the live progress line even when stderr is not a terminal */
    int json;     /* one JSON document on stdout instead of the tables (schema clops-run/1) */
    const char *shard_spec;    /* --shard as given: "K/N" or "auto"; NULL: none */
    const struct shard *shard; /* --shard: only its runs, and a manifest; NULL: every run */
    int force;                 /* --force: run a shard whose manifest says it is done */
    int no_prebuild;           /* --no-prebuild: the steps' first calls build their kernels */
};

/* `clops run FILE`: validates the pipeline file, then runs it. Returns an enum cli_exit. */
int pipeline_run_file(struct cli *cli, const char *path, const struct run_options *options);

/* `clops build` (build.c): an operator's kernels built ahead of time on a pool's devices. */
struct build_options {
    const char *config; /* the pool file; NULL: the built-in defaults */
    const char *ops;    /* comma-separated operator names; NULL: every one */
    const char *dtypes; /* comma-separated dtype names; NULL: every one each takes */
};
int build_command(struct cli *cli, const struct build_options *o);

/* `clops gather DIR [--json]` (gather.c): the shard manifests in DIR/.clops checked as one set;
 * CLI_OK only when it is complete. */
int gather_dir(const char *dir, int json);

/* `clops slurm FILE` (slurm.c). */
struct slurm_options {
    const char *file;
    const char *output_dir;
    int64_t tasks; /* 0: one per run of the sweep */
    char **sbatch; /* options for sbatch, one #SBATCH line each */
    int sbatch_count;
    char **sets; /* --set, passed on to clops run */
    int set_count;
    int submit;
};
/* Prints the job array's script, or with `submit` gives it to sbatch and prints the job id. */
int slurm_command(const struct slurm_options *o);

#endif
