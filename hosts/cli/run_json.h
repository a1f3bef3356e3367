/* run_json.h — `clops run --json`: one JSON document of schema clops-run/1 (docs/json.md,
 * docs/schema/clops-run.schema.json) on stdout, written as the runs go (run_json.c): the
 * pipeline and the library, every run with its values, its plan (tensors, steps and their
 * arguments, checks, outputs) and what running it gave (each step's times with kernel builds
 * apart, rate and LAPACK info; the checks' results; the files written with their SHA-256), the
 * pools' devices, and the outcome with its exit code and message. */
#ifndef CLOPS_CLI_RUN_JSON_H
#define CLOPS_CLI_RUN_JSON_H

#include "cli.h"
#include "json.h"
#include "pipeline.h"
#include "pipeline_results.h"

struct run_json_pool; /* a pool the runs made, kept until the end (run_json.c) */

struct run_json {
    struct json_writer w;
    const struct cli *cli;
    struct run_json_pool *pools;
    int pool_count;
};

/* One run as the document reports it. */
struct run_json_entry {
    const struct pl_source *src;
    const struct pl_run *run;
    const struct pipeline *pl;       /* NULL: its pipeline was not loaded */
    const struct run_result *result; /* with `pl`: what ran (nothing, in a plan) */
    const char *status;              /* "planned", "ok", "failed", "invalid", "not_run" */
    int code;                        /* its exit code; -1: none (planned, not run) */
    const char *error;               /* what stopped it; NULL: nothing */
    double ms;                       /* its wall time; NAN: not run */
    int pool;                        /* its pool's index (run_json_pool); -1: none */
    int32_t device_count;            /* the pool's devices */
};

/* Starts the document: the header, the file and options, the sweep of `src` (NULL when the file
 * could not be read), and opens the list of runs. */
void run_json_begin(struct run_json *j, const struct cli *cli, const char *path,
                    const struct run_options *options, const struct pl_source *src);
/* A pool made from `config` (NULL: the built-in defaults): `pool`'s devices, or, when it is NULL,
 * the library's `status` and `message`. Returns its index among the document's pools. */
int run_json_pool(struct run_json *j, const char *config, struct clops_pool *pool, int32_t status,
                  const char *message);
void run_json_run(struct run_json *j, const struct run_json_entry *e);
/* A param's value, of its type (the runs' `values`; also the shard manifests'). */
void run_json_value(struct json_writer *w, const struct param_value *v);
/* Ends the document with the pools and the outcome: `code` (enum cli_exit) and `error` (NULL:
 * none). Returns `code`, or CLI_FAILED when the document could not be written whole. */
int run_json_end(struct run_json *j, int code, const char *error);

#endif
