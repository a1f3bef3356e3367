/* bench_common.c — what the areas of clops-bench share: the shared options on the command line,
 * loading libclops, the pool and the lines that name them, sorting timings, and the results
 * file of --csv and its chart (--chart, drawn by chart.py). */
#include "bench_common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static int results_open(const char *program, const char *area, const struct bench_options *opt);

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

/* --csv and --chart have no short spelling: values outside the characters' range. */
enum { OPTION_CSV = 0x100, OPTION_CHART };

static int count_options(const struct option *options)
{
    int count = 0;
    while (options[count].name != NULL)
        count++;
    return count;
}

/* The area's long options followed by the shared ones; free() it. */
static struct option *all_long_options(const struct option *own)
{
    static const struct option shared[] = {
        {"reps", required_argument, NULL, 'r'},
        {"config", required_argument, NULL, 'c'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"csv", required_argument, NULL, OPTION_CSV},
        {"chart", required_argument, NULL, OPTION_CHART},
    };
    enum { SHARED = (int)(sizeof shared / sizeof shared[0]) };
    int count = count_options(own);
    struct option *all = host_xcalloc((size_t)(count + SHARED + 1), sizeof *all);
    memcpy(all, own, (size_t)count * sizeof *all);
    memcpy(all + count, shared, sizeof shared);
    return all;
}

/* getopt's short options: ':' (a missing value is told apart from an unknown option), the
 * area's own, spelled from its long options whose value is a character ({"sizes",
 * required_argument, NULL, 's'} is "s:"), then the shared ones; free() it. */
static char *all_short_options(const struct option *own)
{
    static const char shared[] = "r:c:vh";
    int count = count_options(own);
    char *all = host_xcalloc((size_t)(1 + 3 * count) + sizeof shared, 1), *end = all;
    *end++ = ':';
    for (int i = 0; i < count; i++) {
        if (own[i].val <= 0 || own[i].val > UCHAR_MAX)
            continue;
        *end++ = (char)own[i].val;
        if (own[i].has_arg != no_argument)
            *end++ = ':';
        if (own[i].has_arg == optional_argument)
            *end++ = ':';
    }
    memcpy(end, shared, sizeof shared);
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
    case OPTION_CSV: opt->csv = optarg; return -1;
    case OPTION_CHART: opt->chart = optarg; return -1;
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
    char *short_options = all_short_options(cl->options);
    *opt = (struct bench_options){.reps = cl->default_reps};
    opterr = 0;
    optind = 1;
    int c, code = -1;
    while (code < 0 && (c = getopt_long(argc, argv, short_options, options, NULL)) != -1)
        code = take_option(cl, opt, c, argv);
    free(short_options);
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
    if ((code = results_open(command_line->program, command_line->name, &s->opt)) != BENCH_EXIT_OK)
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

/* ---- results: --csv and --chart ------------------------------------------------------------ */

/* The process's one results file (bench_common.h). */
static struct {
    const char *program, *area;
    const char *chart;   /* --chart's PNG; NULL: none */
    char csv_path[4096]; /* --csv's, or the temporary file's */
    int temporary;       /* csv_path is removed at the end */
    char *script;        /* chart.py, once found; lives as long as the process */
    char date[32];       /* when the area started, UTC */
    FILE *csv;
    int rows;
} results;

/* $CLOPS_PYTHON, else the first python3 on PATH. */
static const char *chart_python(void)
{
    const char *python = getenv("CLOPS_PYTHON");
    return python != NULL && python[0] != '\0' ? python : "python3";
}

/* `path` without its "..", the name messages print, as results.script. */
static void set_chart_script(const char *path)
{
    results.script = realpath(path, NULL);
    if (results.script == NULL)
        results.script = host_xstrdup(path);
}

/* chart.py, installed or in the source tree, into results.script: the installed one is where
 * CLOPS_BENCH_CHART_FROM_BIN says relative to this program's directory (bin/ -> share/clops/),
 * so that a relocated installation finds its own; a program that is not installed finds the
 * source tree's, CLOPS_BENCH_CHART_SCRIPT. Returns 0, or -1 after printing where it looked. */
static int find_chart_script(void)
{
    char exe[4096];
    ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = NULL;
    if (length > 0) {
        exe[length] = '\0';
        slash = strrchr(exe, '/');
    }
    if (slash != NULL) {
        *slash = '\0';
        char installed[sizeof exe + sizeof CLOPS_BENCH_CHART_FROM_BIN];
        snprintf(installed, sizeof installed, "%s/%s", exe, CLOPS_BENCH_CHART_FROM_BIN);
        if (access(installed, R_OK) == 0) {
            set_chart_script(installed);
            return 0;
        }
    }
    if (access(CLOPS_BENCH_CHART_SCRIPT, R_OK) == 0) {
        set_chart_script(CLOPS_BENCH_CHART_SCRIPT);
        return 0;
    }
    fprintf(stderr,
            "%s: --chart: no chart.py, neither installed (%s/%s) nor in the source tree (%s)\n",
            results.program, slash != NULL ? exe : "?", CLOPS_BENCH_CHART_FROM_BIN,
            CLOPS_BENCH_CHART_SCRIPT);
    return -1;
}

/* Runs `python chart.py ARGS...` (at most 3 arguments) and waits for it. Returns its exit
 * status, or -1 after printing why it could not be started. */
static int run_chart_script(const char *arg0, const char *arg1, const char *arg2)
{
    extern char **environ;
    const char *python = chart_python();
    char *argv[] = {(char *)python, results.script, (char *)arg0, (char *)arg1, (char *)arg2, NULL};
    pid_t pid;
    fflush(stdout); /* the tables come before whatever the script prints */
    int rc = posix_spawnp(&pid, python, NULL, NULL, argv, environ);
    if (rc != 0) {
        fprintf(stderr,
                "%s: --chart: cannot run '%s': %s (set CLOPS_PYTHON to a python3 with "
                "matplotlib)\n",
                results.program, python, strerror(rc));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "%s: --chart: waitpid: %s\n", results.program, strerror(errno));
            return -1;
        }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Before anything is measured: a run of minutes must not end in "no matplotlib". */
static int check_chart_possible(void)
{
    if (find_chart_script() != 0)
        return BENCH_EXIT_NO_CHART;
    int status = run_chart_script("--check", NULL, NULL);
    if (status == 0)
        return BENCH_EXIT_OK;
    if (status > 0) /* chart.py has said what is missing */
        fprintf(stderr,
                "%s: --chart: %s cannot draw charts with '%s' (exit %d); set CLOPS_PYTHON to a "
                "python3 with matplotlib. Nothing was measured.\n",
                results.program, results.script, chart_python(), status);
    return BENCH_EXIT_NO_CHART;
}

/* --csv's file, or for --chart alone a temporary one; with the header row. */
static int create_csv(const char *path)
{
    if (path != NULL) {
        snprintf(results.csv_path, sizeof results.csv_path, "%s", path);
        results.csv = fopen(path, "w");
    } else {
        const char *dir = getenv("TMPDIR");
        snprintf(results.csv_path, sizeof results.csv_path, "%s/clops-bench-XXXXXX.csv",
                 dir != NULL && dir[0] != '\0' ? dir : "/tmp");
        int fd = mkstemps(results.csv_path, 4);
        results.temporary = fd >= 0;
        results.csv = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (fd >= 0 && results.csv == NULL)
            close(fd);
    }
    if (results.csv == NULL || fputs(BENCH_RESULTS_COLUMNS "\n", results.csv) == EOF) {
        fprintf(stderr, "%s: cannot write the results to %s: %s\n", results.program,
                results.csv_path, strerror(errno));
        if (results.csv != NULL)
            fclose(results.csv);
        results.csv = NULL;
        if (results.temporary)
            remove(results.csv_path);
        return BENCH_EXIT_RESULTS;
    }
    return BENCH_EXIT_OK;
}

static int results_open(const char *program, const char *area, const struct bench_options *opt)
{
    results.program = program;
    results.area = area;
    results.chart = opt->chart;
    if (opt->csv == NULL && opt->chart == NULL)
        return BENCH_EXIT_OK;
    time_t now = time(NULL);
    strftime(results.date, sizeof results.date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    int code = opt->chart != NULL ? check_chart_possible() : BENCH_EXIT_OK;
    return code == BENCH_EXIT_OK ? create_csv(opt->csv) : code;
}

/* One field, quoted as RFC 4180 says when it holds a comma, a quote or a line break (a device
 * name may), then `end`. */
static void write_field(FILE *f, const char *text, char end)
{
    if (strpbrk(text, ",\"\r\n") == NULL) {
        fputs(text, f);
    } else {
        fputc('"', f);
        for (const char *c = text; *c != '\0'; c++) {
            if (*c == '"')
                fputc('"', f);
            fputc(*c, f);
        }
        fputc('"', f);
    }
    fputc(end, f);
}

void bench_record(const struct bench_row *row)
{
    if (results.csv == NULL || !(row->ms > 0.0 && isfinite(row->ms)) ||
        !(row->rate > 0.0 && isfinite(row->rate)))
        return;
    char n[24], ms[32], rate[32];
    snprintf(n, sizeof n, "%lld", (long long)row->n);
    snprintf(ms, sizeof ms, "%.6g", row->ms);
    snprintf(rate, sizeof rate, "%.6g", row->rate);
    /* In the order of BENCH_RESULTS_COLUMNS. */
    const char *fields[] = {results.area, row->op,     host_dtype_name(row->dtype),
                            row->impl,    n,           row->n_unit,
                            ms,           rate,        row->unit,
                            row->device,  results.date};
    enum { FIELDS = (int)(sizeof fields / sizeof fields[0]) };
    for (int i = 0; i < FIELDS; i++)
        write_field(results.csv, fields[i], i + 1 < FIELDS ? ',' : '\n');
    /* A run that dies later keeps the rows measured so far. */
    fflush(results.csv);
    results.rows++;
}

static int draw_chart(void)
{
    if (results.rows == 0) {
        fprintf(stderr, "%s: --chart: no measurement succeeded, so there is nothing to draw\n",
                results.program);
        return BENCH_EXIT_RESULTS;
    }
    /* "--": a PNG named "-x.png" is not an option. */
    int status = run_chart_script("--", results.csv_path, results.chart);
    if (status != 0) {
        if (status > 0)
            fprintf(stderr, "%s: --chart: %s failed (exit %d): no chart in %s\n", results.program,
                    results.script, status, results.chart);
        return BENCH_EXIT_RESULTS;
    }
    printf("\nchart: %s (%d results, drawn by %s)\n", results.chart, results.rows, results.script);
    return BENCH_EXIT_OK;
}

int bench_results_finish(int code)
{
    if (results.csv == NULL)
        return code;
    int failed = ferror(results.csv);
    failed |= fclose(results.csv) != 0;
    results.csv = NULL;
    int status = BENCH_EXIT_OK;
    if (failed) {
        fprintf(stderr, "%s: cannot write the results to %s\n", results.program, results.csv_path);
        status = BENCH_EXIT_RESULTS;
    }
    if (status == BENCH_EXIT_OK && results.chart != NULL &&
        (code == BENCH_EXIT_OK || code == BENCH_EXIT_FAILED))
        status = draw_chart();
    if (results.temporary)
        remove(results.csv_path);
    return code != BENCH_EXIT_OK ? code : status;
}
