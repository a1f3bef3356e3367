/* pipeline_source.h — a pipeline file before its `${...}` are replaced: its text, its params
 * and its sweep, and the --set overrides sorted by what they change (pipeline_source.c). One
 * source gives one pipeline per run of its sweep (pipeline_load in pipeline.h). */
#ifndef CLOPS_CLI_PIPELINE_SOURCE_H
#define CLOPS_CLI_PIPELINE_SOURCE_H

#include <stdarg.h>

#include "pipeline_expand.h"
#include "pipeline_params.h"
#include "pipeline_sweep.h"
#include "util.h"

/* A --set of a setting other than a param: applied to each run's pipeline, its value's
 * `${...}` replaced by that run's values first. */
struct pl_set {
    const char *assignment; /* as given: "tensors.A.shape=[${n},3]" */
    size_t key_len;         /* the bytes of the key before '=' */
    struct pl_template value;
};

struct pl_source {
    const char *path;
    struct pl_template text;
    struct params params; /* declared, with their --set values */
    struct sweep sweep;   /* less the params --set fixed */
    struct pl_set *sets;
    int set_count;
    int errors;  /* problems of the file, printed as path:line */
    int bad_set; /* a --set could not be applied: a usage error, not the file's */
    /* Set by the caller before the runs load: outputs must stay under the output directory (a
     * shard's, which its manifest lists relative to that directory, the only one gather reads). */
    int outputs_under_dir;
};

/* One run of a source: where it is in the sweep and every param's value in it. */
struct pl_run {
    int64_t index, count;       /* run `index` of `count`, from 0 */
    struct param_value *values; /* one per param, in their order; owned */
    int value_count;
    char label[512]; /* "n=64, zoom=3"; empty when the source is not a sweep */
};

/* Reads the file at `path`, finds its `${...}`, reads its `params` and `sweep`, and applies the
 * --set overrides of params (params.NAME=VALUE, checked against the declared type; a swept
 * param set this way is swept no more) and of the sweep (sweep.NAME=VALUE; the sweep keeps the
 * file's order, a param the file does not sweep going after); the others are kept for
 * pipeline_load. Problems are printed on stderr. Returns the number of problems; the
 * source must be freed with pipeline_source_free() either way. */
int pipeline_source_load(struct pl_source *src, const char *path, char *const *sets, int set_count);
void pipeline_source_free(struct pl_source *src);

/* Run `index` of the source's sweep (0 <= index < sweep_run_count(&src->sweep)). */
void pipeline_source_run(const struct pl_source *src, int64_t index, struct pl_run *run);
void pl_run_free(struct pl_run *run);

/* The start of a problem's line on stderr: "path:line: ", or "path: " for a setting that has
 * no line (one from --set). */
void pipeline_print_place(const char *path, int line);
/* "clops: --set ASSIGNMENT: message" and a newline on stderr: an override that cannot be
 * applied, a usage error rather than the file's. */
void HOST_PRINTF(2, 0)
    pipeline_print_set_error(const char *assignment, const char *fmt, va_list ap);

#endif
