/* pipeline_sweep.h — a sweep: the runs of one pipeline over every combination of its swept
 * params' values, the Cartesian product (pipeline_sweep.c). Runs are numbered from 0 in one
 * fixed order, the first param of `sweep` varying slowest and the last fastest (as nested
 * loops written in the file's order), so that a run's index alone says what it runs: the unit
 * that a run, a listing or a share of the work across machines picks. */
#ifndef CLOPS_CLI_PIPELINE_SWEEP_H
#define CLOPS_CLI_PIPELINE_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline_params.h"

/* More runs than this is surely a typo in a range (each run is also validated before the
 * first one starts). */
#define SWEEP_MAX_RUNS INT64_C(1000000)

/* One swept param and its values: listed, or a range `from` + k `step`, k = 0 .. count - 1 (a
 * float's rounded to 15 significant digits). */
struct sweep_axis {
    int param; /* its index in the params */
    int line;  /* of its entry in `sweep` */
    int64_t count;
    struct param_value *list; /* `count` listed values (owned), or NULL for a range */
    struct param_value from, step;
};

struct sweep {
    struct sweep_axis *axes; /* in the file's order, then those --set added */
    int axis_count;          /* 0: not a sweep, one run */
};

/* The number of runs: the product of the axes' counts; 1 without axes. */
int64_t sweep_run_count(const struct sweep *s);
/* Value `k` of an axis, into `out` (param_value_free). */
void sweep_axis_value(const struct sweep_axis *a, int64_t k, struct param_value *out);
/* The values of run `run` (0 <= run < sweep_run_count): every param's value, the swept ones
 * replaced by the run's. Allocated: params_values_free(values, p->count). */
struct param_value *sweep_run_values(const struct sweep *s, const struct params *p, int64_t run);
/* A swept value as labels and tables show it: a number as in the file names (0.4, 2), a
 * string quoted. Allocated. */
char *sweep_value_text(const struct param_value *v);
/* "n=64, zoom=3": the swept params and their values in a run (empty without axes). */
void sweep_run_label(const struct sweep *s, const struct params *p,
                     const struct param_value *values, char *out, size_t size);
/* The name an output `file` gets in a run: its stem followed by "-NAME=VALUE" for each swept
 * param, in the sweep's order, before the extension: "out/m.png" becomes
 * "out/m-n=64-zoom=3.png". A string value's characters other than letters, digits, '.', '_',
 * '+' and '-' become '_' (safe in any file system). Without axes, `file` itself. Allocated. */
char *sweep_output_name(const struct sweep *s, const struct params *p,
                        const struct param_value *values, const char *file);
/* A value as a piece of a file name: its text, a string's characters other than letters,
 * digits, '.', '_', '+' and '-' made '_'. */
void sweep_name_piece(const struct param_value *v, char *out, size_t size);
/* Takes the param out of the sweep (--set params.NAME fixes it to one value). */
void sweep_remove_axis(struct sweep *s, int param);
void sweep_free(struct sweep *s);

#endif
