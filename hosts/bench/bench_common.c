/* bench_common.c — what the areas of clops-bench share: the shared options on the command line,
 * loading libclops, the pool and the lines that name them, sorting timings. */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- command line ------------------------------------------------------------------------- */

int bench_usage_error(const char *program, const char *what, const char *arg)
{
    fprintf(stderr, "%s: %s '%s'\nTry '%s --help'.\n", program, what, arg, program);
    return BENCH_EXIT_USAGE;
}

int bench_parse_int(const char *text, int base, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long v = strtoll(text, &end, base);
    if (end == text || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

const char *bench_take_int(const char *arg, int base, int64_t lo, int64_t hi, int64_t *out,
                           const char *error)
{
    return bench_parse_int(arg, base, lo, hi, out) != 0 ? error : NULL;
}

const char *bench_parse_sizes(const char *text, int64_t *sizes, int max, int *count)
{
    char *copy = host_xstrdup(text), *save = NULL;
    int rc = 0;
    *count = 0;
    for (char *item = strtok_r(copy, ",", &save); item != NULL && rc == 0;
         item = strtok_r(NULL, ",", &save)) {
        if (*count == max || bench_parse_int(item, 10, 1, 65536, &sizes[*count]) != 0)
            rc = -1;
        else
            ++*count;
    }
    free(copy);
    return rc == 0 && *count > 0 ? NULL : "--sizes wants N,N,... with 1 <= N <= 65536, not";
}

/* The area's long options followed by the shared ones; free() it. */
static struct option *all_long_options(const struct option *own)
{
    static const struct option shared[] = {
        {"reps", required_argument, NULL, 'r'},
        {"config", required_argument, NULL, 'c'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
    };
    enum { SHARED = (int)(sizeof shared / sizeof shared[0]) };
    int count = 0;
    while (own[count].name != NULL)
        count++;
    struct option *all = host_xcalloc((size_t)(count + SHARED + 1), sizeof *all);
    memcpy(all, own, (size_t)count * sizeof *all);
    memcpy(all + count, shared, sizeof shared);
    return all;
}

/* One shared option, or one of the area's own. Returns -1 to go on, or an exit status. */
static int take_option(const struct bench_command_line *cl, struct bench_options *opt, int c,
                       char **argv)
{
    int64_t reps;
    char what[64];
    switch (c) {
    case 'r':
        if (bench_parse_int(optarg, 10, 1, cl->max_reps, &reps) == 0) {
            opt->reps = (int)reps;
            return -1;
        }
        if (cl->reps_error == NULL)
            snprintf(what, sizeof what, "--reps wants 1 to %d, not", cl->max_reps);
        return bench_usage_error(cl->program, cl->reps_error ? cl->reps_error : what, optarg);
    case 'c': opt->config = optarg; return -1;
    case 'v': opt->verbose = 1; return -1;
    case 'h': fputs(cl->help, stdout); return BENCH_EXIT_OK;
    case ':': return bench_usage_error(cl->program, "option needs a value:", argv[optind - 1]);
    case '?': return bench_usage_error(cl->program, "unknown option", argv[optind - 1]);
    default: {
        const char *error = cl->take(cl->area, c, optarg);
        return error == NULL ? -1 : bench_usage_error(cl->program, error, optarg);
    }
    }
}

/* Returns -1 to go on, or an exit status. */
static int parse_options(int argc, char **argv, const struct bench_command_line *cl,
                         struct bench_options *opt)
{
    struct option *options = all_long_options(cl->options);
    char short_options[64];
    snprintf(short_options, sizeof short_options, ":%sr:c:vh", cl->short_options);
    *opt = (struct bench_options){.reps = cl->default_reps};
    opterr = 0;
    optind = 1;
    int c, code = -1;
    while (code < 0 && (c = getopt_long(argc, argv, short_options, options, NULL)) != -1)
        code = take_option(cl, opt, c, argv);
    free(options);
    if (code < 0 && optind < argc)
        code = bench_usage_error(cl->program, "unexpected argument", argv[optind]);
    return code;
}

int bench_start(int argc, char **argv, const struct bench_command_line *command_line,
                struct bench_session *s)
{
    host_program_name = "clops-bench";
    s->program = command_line->program;
    int code = parse_options(argc, argv, command_line, &s->opt);
    if (code >= 0)
        return code;
    if ((code = bench_load_library(s)) != BENCH_EXIT_OK)
        return code;
    host_library_log_to_stderr(&s->lib, s->opt.verbose);
    return -1;
}

/* ---- library and pool --------------------------------------------------------------------- */

int bench_load_library(struct bench_session *s)
{
    /* libclops is never dlclose()d: OpenCL drivers are not safe to unload. */
    char why[8192];
    if (host_library_load(&s->lib, why, sizeof why) != 0) {
        fprintf(stderr, "%s: cannot load libclops: %s\n", s->program, why);
        return BENCH_EXIT_LOAD;
    }
    return BENCH_EXIT_OK;
}

int32_t bench_pool_create(const struct bench_session *s, struct clops_pool **pool)
{
    const struct clops_api *api = s->lib.api;
    return s->opt.config != NULL ? api->pool_create_from_file(s->opt.config, pool)
                                 : api->pool_create_default(pool);
}

int bench_create_pool(struct bench_session *s)
{
    int32_t status = bench_pool_create(s, &s->pool);
    if (status == CLOPS_OK)
        return BENCH_EXIT_OK;
    bench_report_error(s, "pool");
    return status == CLOPS_ERR_CONFIG || status == CLOPS_ERR_IO || status == CLOPS_ERR_NOT_FOUND
               ? BENCH_EXIT_CONFIG
               : BENCH_EXIT_FAILED;
}

int bench_open_pool(struct bench_session *s)
{
    int code = bench_create_pool(s);
    if (code != BENCH_EXIT_OK)
        return code;
    s->device.struct_size = sizeof s->device;
    if (s->lib.api->pool_device_info(s->pool, 0, &s->device) != CLOPS_OK) {
        bench_report_error(s, "pool_device_info");
        return BENCH_EXIT_FAILED;
    }
    return BENCH_EXIT_OK;
}

void bench_report_error(const struct bench_session *s, const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", s->program, what, s->lib.api->last_error());
}

/* ---- output ------------------------------------------------------------------------------- */

void bench_print_library(const struct bench_session *s, const char *title)
{
    printf("%s, libclops %s from %s\n", title, s->lib.api->version(), s->lib.path);
}

void bench_print_device(const struct clops_device_info *device, const char *pool_from)
{
    char memory[32];
    host_format_bytes(device->global_mem_bytes, memory, sizeof memory);
    printf("device: %s (%s, driver %s, %d CUs, %s)%s%s\n\n", device->name, device->platform,
           device->driver_version, device->compute_units, memory,
           pool_from != NULL ? ", pool from " : "", pool_from != NULL ? pool_from : "");
}

/* ---- timings ------------------------------------------------------------------------------ */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_doubles);
}

double bench_median(double *values, int count)
{
    bench_sort(values, count);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}
