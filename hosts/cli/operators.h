/* operators.h — what the CLI knows about particular operators beyond their descriptors
 * (operators.c): how to verify a step's result on the host and the work a step does. */
#ifndef CLOPS_CLI_OPERATORS_H
#define CLOPS_CLI_OPERATORS_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline_model.h"

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

#endif
