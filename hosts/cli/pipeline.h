/* pipeline.h — loading and validating a pipeline file (pipeline.c). It brings what a loaded
 * pipeline is made of and checked with: the model (pipeline_model.h), the operators' checks and
 * work (operators.h) and the Mandelbrot reference (mandel.h), so that a program that loads
 * pipelines needs this header alone. */
#ifndef CLOPS_CLI_PIPELINE_H
#define CLOPS_CLI_PIPELINE_H

#include "mandel.h"
#include "operators.h"
#include "pipeline_model.h"
#include "pipeline_source.h"

/* The pipeline of one run of `src`: its text with every `${...}` replaced by the run's values,
 * parsed, the other --set overrides applied, and validated against the operators of `api`,
 * each problem printed as "path:line: message" on stderr (in a sweep after a line naming the
 * run; none printed when `silent`). File tensors are read here. Returns the number of problems
 * (0: ready to run). The pipeline must be freed with pipeline_free() either way; it refers to
 * `src` and `run`, which must outlive it. */
int pipeline_load(struct pipeline *pl, const struct pl_source *src, const struct pl_run *run,
                  const struct clops_api *api, int silent);
void pipeline_free(struct pipeline *pl);

#endif
