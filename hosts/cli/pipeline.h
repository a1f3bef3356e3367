/* pipeline.h — a pipeline file (format: configs/pipelines/demo.cfg) as the CLI holds it once
 * validated: tensors, operator steps with their resolved arguments, checks and outputs. */
#ifndef CLOPS_CLI_PIPELINE_H
#define CLOPS_CLI_PIPELINE_H

#include <libconfig.h>
#include <stdint.h>

#include "clops.h"

enum tensor_init { INIT_ZEROS = 0, INIT_RANDOM = 1, INIT_IDENTITY = 2 };

struct pl_tensor {
    const char *name; /* points into the parsed file */
    int32_t dtype;
    int32_t rank;
    int64_t shape[CLOPS_MAX_RANK];
    int64_t elements;
    int32_t init; /* enum tensor_init */
    uint64_t seed;
    void *data;               /* row-major host memory, owned by the pipeline */
    struct clops_tensor view; /* `data` as the operators see it */
};

/* One parameter of a step's operator: as the file gives it, else the descriptor's default. */
struct pl_value {
    int given;     /* the file sets it (only these are passed to invoke) */
    int has_value; /* given, or it has a default */
    int tensor;    /* tensor kinds: index into the pipeline's tensors, or -1 */
    int64_t i;     /* INT64; for ENUM the index into the parameter's enum_values */
    double d;      /* DOUBLE */
    const char *s; /* ENUM (the allowed string) and STRING */
};

struct pl_step {
    const struct clops_op *op;
    struct pl_value *values; /* one per op->params entry, in that order */
    int32_t repeat;          /* runs; the best time is reported */
    int line;
    void **before;  /* per parameter: a copy of a written tensor taken before the step */
    double best_ms; /* after running */
};

struct check_kind;

struct pl_check {
    const struct check_kind *kind;
    int32_t step;
    double tolerance;
    int line;
    double error; /* after running; NaN when it could not be computed */
    int ran;
};

struct pl_output {
    int tensor;
    const char *file; /* as written in the pipeline */
    int line;
};

struct pipeline {
    const char *path;
    const struct clops_api *api;
    config_t config; /* kept alive: names and strings above point into it */
    char *pool_path; /* resolved against the file's directory; NULL for the default pool */
    struct pl_tensor *tensors;
    int tensor_count;
    struct pl_step *steps;
    int step_count;
    struct pl_check *checks;
    int check_count;
    struct pl_output *outputs;
    int output_count;
    int errors; /* validation errors printed */
};

/* Reads and validates `path` against the operators of `api`, printing each problem as
 * "path:line: message" on stderr. Returns the number of problems (0: ready to run). The
 * pipeline must be freed with pipeline_free() either way. */
int pipeline_load(struct pipeline *pl, const char *path, const struct clops_api *api);
void pipeline_free(struct pipeline *pl);

/* The index of the parameter called `name` in the step's operator, or -1. */
int step_param_index(const struct pl_step *step, const char *name);
/* The value of parameter `name`, or NULL when the operator has no such parameter. */
const struct pl_value *step_value(const struct pl_step *step, const char *name);
/* The tensor passed as parameter `name`, or NULL. */
const struct pl_tensor *step_tensor(const struct pipeline *pl, const struct pl_step *step,
                                    const char *name);
/* 1 when parameter kind `kind` is a tensor the operator writes. */
int param_kind_writes(int32_t kind);

/* ---- What the CLI knows about particular operators (operators.c) ---- */

/* A way to verify a step's result on the host. */
struct check_kind {
    const char *name;
    const char *op; /* the operator whose steps it verifies */
    /* The step's error against the reference (NaN when it cannot be computed); the step's
     * written tensors as they were before it ran are in step->before. */
    double (*measure)(const struct pipeline *pl, const struct pl_step *step);
};

const struct check_kind *check_kind_find(const char *name);
/* "gemm_reference" etc., for messages. */
void check_kind_names(char *out, size_t size);
/* The tolerance a check uses when the file gives none, from the checked result's dtype. */
double check_default_tolerance(int32_t dtype);
/* Floating-point operations one run of the step performs, or 0 when unknown. */
double step_flops(const struct pipeline *pl, const struct pl_step *step);

/* ---- Files (output.c) ---- */

/* Writes `elements` of `element_size` bytes, little-endian, to `path` through a temporary file
 * in the same directory renamed over it; creates missing parent directories. Returns 0, or -1
 * with errno set. */
int output_write_atomically(const char *path, const void *data, int64_t elements,
                            int64_t element_size);

#endif
