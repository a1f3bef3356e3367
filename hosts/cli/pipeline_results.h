/* pipeline_results.h — what running one run of a pipeline measured and found, beyond the model:
 * each step's calls timed apart from the kernel builds they caused, LAPACK's info and what it
 * means, each output file's path, size and SHA-256, the message of a failure
 * (pipeline_results.c). The text tables (pipeline_run.c) and the JSON document (run_json.c)
 * report them. */
#ifndef CLOPS_CLI_PIPELINE_RESULTS_H
#define CLOPS_CLI_PIPELINE_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline_model.h"
#include "sha256.h"

enum step_state { STEP_NOT_RUN = 0, STEP_OK = 1, STEP_FAILED = 2 };

struct step_result {
    int state;       /* enum step_state */
    double *call_ms; /* each successful call's wall time less the kernel builds during it */
    int calls;
    /* Building kernel programs (compiling, or loading from the cache) during the step's calls,
     * from the pool's build_ns; NAN when the library does not report it (ABI < 1.3). */
    double compile_ms;
    double best_ms, median_ms; /* of call_ms; NAN without calls */
    int has_info;              /* the operator's LAPACK-style `info` was read after the step */
    int32_t info;
};

struct output_result {
    char *path; /* where the file goes: its name under --output-dir (absolute: as it is) */
    int written;
    int64_t bytes; /* the file's size, once written */
    char sha256[SHA256_HEX_SIZE];
};

struct run_result {
    struct step_result *steps; /* one per step of the pipeline */
    int step_count;
    struct output_result *outputs; /* one per output */
    int output_count;
    char error[2048]; /* what stopped the run, as printed after "clops: "; empty when nothing */
};

/* Nothing run yet; outputs' paths under `output_dir`. */
void run_result_init(struct run_result *r, const struct pipeline *pl, const char *output_dir);
void run_result_free(struct run_result *r);
/* Sets best_ms and median_ms from the calls' times. */
void step_result_summarise(struct step_result *s);
/* Relative names are relative to --output-dir; absolute ones are kept. Allocated. */
char *output_path(const char *output_dir, const char *name);

/* The rate of a step's call of `best_ms`: its work (step_work) per second in the work's unit,
 * which goes to *unit (GFLOP/s, GB/s, Mpixel/s); NAN when the work is unknown or the time is
 * not above 0. */
double step_rate(const struct pipeline *pl, const struct pl_step *step, double best_ms,
                 const char **unit);

/* What LAPACK's `info` of operator `op` says: "factored", "U(3,3) is exactly zero (singular)";
 * empty for an operator this CLI knows nothing more about. */
void info_meaning(const char *op, int32_t info, char *out, size_t size);
/* "info = 0 (factored)", "info = 3: U(3,3) is exactly zero (singular)", "info = 2". */
void info_text(const char *op, int32_t info, char *out, size_t size);
/* The parameter of a step whose tensor receives LAPACK's info (an output named "info"), or
 * -1. */
int step_info_param(const struct pl_step *step);

#endif
