/* pipeline.h — a pipeline file (format: configs/pipelines/demo.cfg) as the CLI holds it once
 * validated: tensors, operator steps with their resolved arguments, checks and outputs. */
#ifndef CLOPS_CLI_PIPELINE_H
#define CLOPS_CLI_PIPELINE_H

#include <libconfig.h>
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
    struct clops_tensor view;    /* as the operators see it: `buffer` when set, else `data` */
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
    const char *file; /* as written in the pipeline */
    int format;       /* enum fmt_kind, from the file's extension */
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
    int errors;  /* validation errors printed */
    int bad_set; /* a --set override could not be applied (a usage error, not the file's) */
};

/* Reads `path`, applies the `set_count` overrides "key.path=value" of `sets` (--set), and
 * validates the result against the operators of `api`, printing each problem as
 * "path:line: message" on stderr. File tensors are read here. Returns the number of problems
 * (0: ready to run). The pipeline must be freed with pipeline_free() either way. */
int pipeline_load(struct pipeline *pl, const char *path, const struct clops_api *api,
                  char *const *sets, int set_count);
void pipeline_free(struct pipeline *pl);

/* Applies one "path=value" override to a parsed configuration: the path names settings by key,
 * by list index ([2]) or, in a list of groups, by the group's `name` (tensors.A.shape); the
 * value is a libconfig value (64, 1.5, "text", [64, 64]). A missing last key is added. Returns
 * 0, or -1 with a message in `err`. (pipeline_set.c) */
int pipeline_apply_set(config_t *config, const char *assignment, char *err, size_t size);

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
    const char *ops[2]; /* the operators whose steps it verifies (NULL: unused slot) */
    /* The tolerance when the file gives none; 0: from the result's dtype
     * (check_default_tolerance). */
    double tolerance;
    int exact; /* the error is a count of differences and must be 0; no tolerance is taken */
    /* The step's error against the reference (NaN when it cannot be computed), with anything
     * worth showing next to it in `detail`; the step's written tensors as they were before it
     * ran are in step->before, every tensor's host copy is current. */
    double (*measure)(const struct pipeline *pl, const struct pl_step *step, char *detail,
                      size_t size);
};

const struct check_kind *check_kind_find(const char *name);
/* Whether `kind` verifies steps of operator `op`. */
int check_kind_applies(const struct check_kind *kind, const char *op);
/* "gemm_reference" etc., for messages. */
void check_kind_names(char *out, size_t size);
/* The tolerance a check uses when the file gives none, from the checked result's dtype. */
double check_default_tolerance(int32_t dtype);

/* Work one run of a step does, for its rate in the summary: `amount` of `unit` per second is
 * printed as amount / seconds / per (e.g. flops as GFLOP/s with per = 1e9). 0 when unknown. */
struct step_work {
    double amount;
    double per;
    const char *unit;
};
struct step_work step_work(const struct pipeline *pl, const struct pl_step *step);

/* Checks the step's tensors' shapes and dtypes against each other as its operator requires
 * (gemm's inner extents under the trans flags, solve's square A, ...). Returns 0, or -1 with
 * a message naming the parameters in `msg`. Operators it does not know pass. */
int step_check_shapes(const struct pipeline *pl, const struct pl_step *step, char *msg,
                      size_t size);

/* ---- Progress on stderr while steps run (pipeline_progress.c) ---- */

/* A live line "step k/n op run r/R [bar] 1.2 s" redrawn about 5 times a second by a timer
 * thread when `tty`; otherwise one plain line per finished step. */
struct progress;
struct progress *progress_start(int tty, int index, int count, const char *op);
/* Run `run` (from 0) of `runs` starts; `best_ms` is the best earlier run (INFINITY if none),
 * which scales the bar. */
void progress_run(struct progress *p, int run, int runs, double best_ms);
/* Stops the line and prints the step's outcome; frees `p` (NULL is a no-op). */
void progress_finish(struct progress *p, double total_ms, int ok);

/* ---- The host's Mandelbrot reference (mandelbrot_ref.c, built without FP contraction) ---- */

struct mandel_view {
    double center_x, center_y, scale;
    uint32_t max_iterations;
    int f64; /* precision: 0 f32, 1 f64 */
};
/* The iteration count of pixel (i, j) of an h x w image, exactly as the operator computes it. */
uint32_t mandel_count(int64_t i, int64_t j, int64_t h, int64_t w, const struct mandel_view *v);
/* The operator's palette colour of count n. */
void mandel_colour(uint32_t n, uint32_t max_iterations, uint8_t rgba[4]);

#endif
