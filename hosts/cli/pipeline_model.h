/* pipeline_model.h — a pipeline as the CLI holds it once validated (file format:
 * configs/pipelines/demo.cfg): tensors, operator steps with their resolved arguments, checks and
 * outputs; and the lookups on a step (pipeline_model.c). The parser (pipeline.c), the operators'
 * knowledge (operators.c) and the runner (pipeline_run.c) all work on it; none of them owns it. */
#ifndef CLOPS_CLI_PIPELINE_MODEL_H
#define CLOPS_CLI_PIPELINE_MODEL_H

#include <libconfig.h>
#include <stddef.h>
#include <stdint.h>

#include "clops.h"

/* Where a tensor's first contents come from: a generator, or a file (read while validating). */
enum tensor_init {
    INIT_ZEROS = 0,
    INIT_RANDOM = 1,
    INIT_IDENTITY = 2,
    INIT_HILBERT = 3,
    INIT_LINSPACE = 4,
    INIT_FILE = 5
};

struct pl_tensor {
    const char *name; /* points into the parsed file */
    int32_t dtype;
    int32_t rank;
    int64_t shape[CLOPS_MAX_RANK];
    int64_t elements;
    int32_t init; /* enum tensor_init */
    uint64_t seed;
    double start, stop; /* linspace */
    const char *file;   /* as written in the pipeline, for INIT_FILE */
    char *file_path;    /* `file` resolved against the pipeline's directory; owned */
    int line;
    int on_device;               /* a step uses it: it lives in `buffer` during the run */
    void *data;                  /* row-major host memory, owned by the pipeline */
    struct clops_buffer *buffer; /* the device copy during a run, or NULL */
    int host_stale;              /* the device copy is newer than `data` */
    /* As the operators see it: once validated, a description (no data, no buffer: what
     * check_sized takes); during a run `buffer` when set, else `data`. */
    struct clops_tensor view;
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
    double error;     /* after running; NaN when it could not be computed */
    char detail[128]; /* what the check adds to its error (a checksum, a count) */
    int ran;
};

struct pl_output {
    int tensor;
    const char *file; /* as written in the pipeline (its `${...}` replaced) */
    char *name;       /* what is written, relative to --output-dir: `file`, with the run's
                         swept values in a sweep (sweep_output_name); owned */
    int format;       /* enum fmt_kind, from the file's extension */
    int line;
};

struct pl_source;
struct pl_run;

struct pipeline {
    const char *path;
    const struct pl_source *source; /* what it was made from, and for which run */
    const struct pl_run *run;
    char **ref_texts; /* what each `${...}` of the source became in this run (messages) */
    int silent;       /* count problems without printing them */
    int headed;       /* the run's heading was printed before its first problem */
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
    int errors;  /* validation errors printed */
    int bad_set; /* a --set override could not be applied (a usage error, not the file's) */
};

/* The index of the parameter called `name` in the step's operator, or -1. */
int step_param_index(const struct pl_step *step, const char *name);
/* The value of parameter `name`, or NULL when the operator has no such parameter. */
const struct pl_value *step_value(const struct pl_step *step, const char *name);
/* The tensor passed as parameter `name`, or NULL. */
const struct pl_tensor *step_tensor(const struct pipeline *pl, const struct pl_step *step,
                                    const char *name);
/* 1 when parameter kind `kind` is a tensor the operator writes. */
int param_kind_writes(int32_t kind);

/* The tensor as a dense row-major (C order) view over `data`; NULL data: a description. */
struct clops_tensor pl_tensor_view(const struct pl_tensor *t, void *data);
/* The step's arguments as invoke and check_sized take them, into `args` (op->param_count
 * elements); returns their count. Only the arguments the file gives are passed, by name: the
 * plugin applies its own defaults and checks everything against the descriptor. Tensors are
 * passed as their `view`. */
int32_t step_args(const struct pipeline *pl, const struct pl_step *step, struct clops_arg *args);

#endif
