/* pipeline.h — loading and validating a pipeline file (pipeline.c). It brings what a loaded
 * pipeline is made of and checked with: the model (pipeline_model.h), the operators' checks and
 * work (operators.h) and the Mandelbrot reference (mandel.h), so that a program that loads
 * pipelines needs this header alone. */
#ifndef CLOPS_CLI_PIPELINE_H
#define CLOPS_CLI_PIPELINE_H

#include "mandel.h"
#include "operators.h"
#include "pipeline_model.h"

/* Reads `path`, applies the `set_count` overrides "key.path=value" of `sets` (--set), and
 * validates the result against the operators of `api`, printing each problem as
 * "path:line: message" on stderr. File tensors are read here. Returns the number of problems
 * (0: ready to run). The pipeline must be freed with pipeline_free() either way. */
int pipeline_load(struct pipeline *pl, const char *path, const struct clops_api *api,
                  char *const *sets, int set_count);
void pipeline_free(struct pipeline *pl);

#endif
