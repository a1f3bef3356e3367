/* pipeline_results.c — a run's results (pipeline_results.h): their lifetime, the times' summary,
 * output paths, and the meaning of LAPACK's info. */
#include "pipeline_results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_os.h"
#include "operators.h"
#include "util.h"

void run_result_init(struct run_result *r, const struct pipeline *pl, const char *output_dir)
{
    memset(r, 0, sizeof *r);
    r->step_count = pl->step_count;
    r->steps = host_xcalloc((size_t)(pl->step_count > 0 ? pl->step_count : 1), sizeof *r->steps);
    for (int i = 0; i < pl->step_count; i++)
        r->steps[i].compile_ms = r->steps[i].best_ms = r->steps[i].median_ms = NAN;
    r->output_count = pl->output_count;
    r->outputs =
        host_xcalloc((size_t)(pl->output_count > 0 ? pl->output_count : 1), sizeof *r->outputs);
    for (int i = 0; i < pl->output_count; i++)
        r->outputs[i].path = output_path(output_dir, pl->outputs[i].name);
}

void run_result_free(struct run_result *r)
{
    for (int i = 0; i < r->step_count; i++)
        free(r->steps[i].call_ms);
    for (int i = 0; i < r->output_count; i++)
        free(r->outputs[i].path);
    free(r->steps);
    free(r->outputs);
    memset(r, 0, sizeof *r);
}

void step_result_summarise(struct step_result *s)
{
    if (s->calls == 0) {
        s->best_ms = s->median_ms = NAN;
        return;
    }
    double *sorted = host_xmalloc((size_t)s->calls * sizeof *sorted);
    memcpy(sorted, s->call_ms, (size_t)s->calls * sizeof *sorted);
    s->median_ms = host_median(sorted, s->calls);
    s->best_ms = sorted[0];
    free(sorted);
}

char *output_path(const char *output_dir, const char *name)
{
    char *path = NULL;
    if (host_path_is_absolute(name) || strcmp(output_dir, ".") == 0)
        path = host_xstrdup(name);
    else if (asprintf(&path, "%s/%s", output_dir, name) < 0)
        path = host_xstrdup(name);
    return path;
}

double step_rate(const struct pipeline *pl, const struct pl_step *step, double best_ms,
                 const char **unit)
{
    struct step_work work = step_work(pl, step);
    *unit = work.unit;
    if (!(work.amount > 0.0) || !(best_ms > 0.0))
        return NAN;
    return work.amount / (best_ms * 1e-3) / work.per;
}

/* LAPACK's getrf and gesv (the lu and solve operators' documentation): info = k > 0 when U(k,k)
 * is exactly zero; getrf still completes the factorization, gesv leaves B as it was. */
void info_meaning(const char *op, int32_t info, char *out, size_t size)
{
    int lu = strcmp(op, "lu") == 0, solve = strcmp(op, "solve") == 0;
    if (!lu && !solve)
        snprintf(out, size, "%s", "");
    else if (info == 0)
        snprintf(out, size, "%s", lu ? "factored" : "solved");
    else if (info > 0)
        snprintf(out, size, "U(%d,%d) is exactly zero (singular%s)", (int)info, (int)info,
                 solve ? "; B left as it was" : "");
    else
        snprintf(out, size, "argument %d had an illegal value", (int)-info);
}

void info_text(const char *op, int32_t info, char *out, size_t size)
{
    char meaning[128];
    info_meaning(op, info, meaning, sizeof meaning);
    if (meaning[0] == '\0')
        snprintf(out, size, "info = %d", (int)info);
    else if (info == 0)
        snprintf(out, size, "info = 0 (%s)", meaning);
    else
        snprintf(out, size, "info = %d: %s", (int)info, meaning);
}

int step_info_param(const struct pl_step *step)
{
    int p = step_param_index(step, "info");
    return p >= 0 && step->op->params[p].kind == CLOPS_PARAM_TENSOR_OUT &&
                   step->values[p].tensor >= 0
               ? p
               : -1;
}
