/* bench_common.c — what the areas of clops-bench share: the shared options on the command line,
 * loading libclops, the pool and the lines that name them, sorting timings, and the results
 * file of --csv, its chart (--chart, drawn by chart.py) and its peers (--peers, run by peers.py).
 */
#include "bench_common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "table.h"
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

const char *bench_parse_dtypes(const char *text, unsigned *bits)
{
    *bits = 0;
    for (const char *p = text; *p != '\0';) {
        const size_t len = strcspn(p, ",");
        if (len == 3 && strncmp(p, "f32", 3) == 0)
            *bits |= 1u;
        else if (len == 3 && strncmp(p, "f64", 3) == 0)
            *bits |= 2u;
        else
            return "--dtypes wants f32, f64 or f32,f64, not";
        p += len + (p[len] == ',');
    }
    return *bits != 0 ? NULL : "--dtypes wants f32, f64 or f32,f64, not";
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

/* --csv, --chart and --peers have no short spelling: values outside the characters' range. */
enum { OPTION_CSV = 0x100, OPTION_CHART, OPTION_PEERS };

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
        {"peers", no_argument, NULL, OPTION_PEERS},
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
    case OPTION_PEERS: opt->peers = 1; return -1;
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
    return (code = bench_load_library(s, s->opt.verbose)) != BENCH_EXIT_OK ? code : -1;
}

/* ---- library and pool --------------------------------------------------------------------- */

static void progress_open(const char *program);

/* The library's messages, as hosts/common's log_to_stderr prints them, each on a line of its
 * own: a terminal's progress line is ended first. It may run on a thread of the library's:
 * stderr's lock keeps the progress line and the message whole. */
static void log_message(int32_t level, const char *message, void *user)
{
    static const char *const level_names[] = {"error", "warning", "info", "debug"};
    (void)user;
    flockfile(stderr);
    fprintf(bench_stderr(), "%s: %s: %s\n", host_program_name,
            level_names[level >= CLOPS_LOG_ERROR && level < CLOPS_LOG_DEBUG ? level : 3], message);
    funlockfile(stderr);
}

int bench_load_library(struct bench_session *s, int verbose)
{
    /* libclops is never dlclose()d: OpenCL drivers are not safe to unload. */
    char why[8192];
    if (host_library_load(&s->lib, why, sizeof why) != 0) {
        fprintf(stderr, "%s: cannot load libclops: %s\n", s->program, why);
        return BENCH_EXIT_LOAD;
    }
    s->lib.api->set_log_callback(log_message, NULL, verbose ? CLOPS_LOG_DEBUG : CLOPS_LOG_WARNING);
    progress_open(s->program);
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
    fprintf(bench_stderr(), "%s: %s: %s\n", s->program, what, s->lib.api->last_error());
}

/* ---- output ------------------------------------------------------------------------------- */

void bench_print_library(const struct bench_session *s, const char *title)
{
    bench_progress_end();
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

/* ---- progress ------------------------------------------------------------------------------ */

enum { PROGRESS_BAR = 20 };

/* The process's one area's progress (bench_common.h). Where the library's thread may print
 * (log_message), stderr's lock guards it. */
static struct {
    const char *program;
    int planned, done;
    double start_ms; /* when the area loaded libclops */
    int terminal;    /* stderr is a terminal: one line, rewritten in place */
    int shown;       /* a terminal's line is drawn and not ended */
    char what[256];  /* the measurement under way */
} progress;

static void progress_open(const char *program)
{
    progress.program = program;
    progress.start_ms = host_now_ms();
    progress.terminal = isatty(STDERR_FILENO);
}

void bench_progress_plan(int measurements)
{
    progress.planned += measurements;
}

/* "[4/18 0:12]": the measurement's place and the time since the area started. */
static void progress_where(int number, char *out, size_t size)
{
    const int seconds = (int)((host_now_ms() - progress.start_ms) / 1000.0);
    if (progress.planned >= number)
        snprintf(out, size, "[%d/%d %d:%02d]", number, progress.planned, seconds / 60,
                 seconds % 60);
    else
        snprintf(out, size, "[%d %d:%02d]", number, seconds / 60, seconds % 60);
}

/* The terminal's line: "[#####...] [4/18 0:12] <text>", the bar filled for the measurements
 * done, cut to the terminal's width so that it never wraps (a wrapped line cannot be
 * rewritten). */
static void progress_draw(int number, const char *text)
{
    char bar[PROGRESS_BAR + 3] = "", where[64], line[512];
    if (progress.planned > 0) {
        const int done = progress.done < progress.planned ? progress.done : progress.planned;
        const int filled = PROGRESS_BAR * done / progress.planned;
        bar[0] = '[';
        for (int i = 0; i < PROGRESS_BAR; i++)
            bar[1 + i] = i < filled ? '#' : '.';
        bar[PROGRESS_BAR + 1] = ']';
        bar[PROGRESS_BAR + 2] = '\0';
    }
    progress_where(number, where, sizeof where);
    snprintf(line, sizeof line, "%s%s%s %s", bar, bar[0] != '\0' ? " " : "", where, text);
    int width = host_output_width(stderr, 80) - 1;
    width = width < (int)sizeof line - 1 ? width : (int)sizeof line - 1;
    if (width > 0 && (int)strlen(line) > width)
        line[width] = '\0';
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    progress.shown = 1;
}

void bench_progress_start(const char *fmt, ...)
{
    fflush(stdout);
    flockfile(stderr);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(progress.what, sizeof progress.what, fmt, ap);
    va_end(ap);
    if (progress.terminal) {
        char text[sizeof progress.what + 8];
        snprintf(text, sizeof text, "%s ...", progress.what);
        progress_draw(progress.done + 1, text);
    }
    funlockfile(stderr);
}

void bench_progress_done(const char *fmt, ...)
{
    char figures[256], text[sizeof progress.what + sizeof figures + 4], where[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(figures, sizeof figures, fmt, ap);
    va_end(ap);
    flockfile(stderr);
    snprintf(text, sizeof text, "%s: %s", progress.what, figures);
    if (progress.terminal) {
        progress_draw(++progress.done, text);
    } else {
        progress_where(++progress.done, where, sizeof where);
        fprintf(stderr, "%s: %s %s\n", progress.program, where, text);
    }
    funlockfile(stderr);
}

void bench_progress_end(void)
{
    flockfile(stderr);
    if (progress.shown) {
        fputc('\n', stderr);
        progress.shown = 0;
    }
    funlockfile(stderr);
}

FILE *bench_stderr(void)
{
    bench_progress_end();
    return stderr;
}

/* ---- rates in the unit that suits them ------------------------------------------------------ */

/* Each quantity's units, the largest first. */
static const struct {
    enum bench_quantity quantity;
    struct bench_unit unit;
} units[] = {
    {BENCH_FLOPS, {"TFLOP/s", 1e12}}, {BENCH_FLOPS, {"GFLOP/s", 1e9}},
    {BENCH_FLOPS, {"MFLOP/s", 1e6}},  {BENCH_BYTES, {"GB/s", 1e9}},
    {BENCH_BYTES, {"MB/s", 1e6}},
};
enum { UNIT_COUNT = (int)(sizeof units / sizeof units[0]) };

struct bench_unit bench_unit_for(enum bench_quantity quantity, double rate)
{
    struct bench_unit chosen = {0};
    for (int i = 0; i < UNIT_COUNT; i++) {
        if (units[i].quantity != quantity)
            continue;
        chosen = units[i].unit;
        if (rate >= chosen.size)
            break;
    }
    return chosen;
}

void bench_format_rate(double rate, struct bench_unit unit, char *out, size_t size)
{
    const double value = rate / unit.size;
    snprintf(out, size, value >= 1000.0 ? "%.0f" : "%.3g", value);
}

const char *bench_rate_text(enum bench_quantity quantity, double rate, char *out, size_t size)
{
    const struct bench_unit unit = bench_unit_for(quantity, rate);
    char value[32];
    bench_format_rate(rate, unit, value, sizeof value);
    snprintf(out, size, "%s %s", value, unit.name);
    return out;
}

/* A rate cell of a bench_table: where it is, and its rate. */
struct bench_rate_cell {
    int row, column;
    double rate;
};

void bench_table_init(struct bench_table *t, const struct table_column *columns, int column_count,
                      enum bench_quantity quantity)
{
    *t = (struct bench_table){.quantity = quantity};
    table_init(&t->table, columns, column_count);
}

void bench_table_rate(struct bench_table *t, double rate)
{
    if (t->table.row_count == 0 || t->table.filled == t->table.column_count)
        return; /* as table_cell() drops it */
    if (t->rate_count == t->rate_capacity) {
        t->rate_capacity = t->rate_capacity > 0 ? 2 * t->rate_capacity : 16;
        struct bench_rate_cell *rates = host_xcalloc((size_t)t->rate_capacity, sizeof *rates);
        if (t->rate_count > 0)
            memcpy(rates, t->rates, (size_t)t->rate_count * sizeof *rates);
        free(t->rates);
        t->rates = rates;
    }
    t->rates[t->rate_count++] = (struct bench_rate_cell){
        .row = t->table.row_count - 1, .column = t->table.filled, .rate = rate};
    table_cell(&t->table, "-"); /* written when printed */
}

/* `title` with the unit's name in place of its "%s", into `out`. */
static void unit_title(const char *title, const char *unit, char *out, size_t size)
{
    const char *at = strstr(title, "%s");
    if (at == NULL)
        snprintf(out, size, "%s", title);
    else
        snprintf(out, size, "%.*s%s%s", (int)(at - title), title, unit, at + 2);
}

void bench_table_print(struct bench_table *t, FILE *out, int indent)
{
    bench_progress_end();
    double largest = 0.0;
    for (int i = 0; i < t->rate_count; i++)
        largest = t->rates[i].rate > largest ? t->rates[i].rate : largest;
    const struct bench_unit unit = bench_unit_for(t->quantity, largest);
    /* The rate cells (the table owns its cells as malloc'd strings, table.h) ... */
    for (int i = 0; i < t->rate_count; i++) {
        const struct bench_rate_cell *r = &t->rates[i];
        char text[32] = "-";
        if (r->rate > 0.0 && isfinite(r->rate))
            bench_format_rate(r->rate, unit, text, sizeof text);
        char **cell =
            &t->table.cells[(size_t)r->row * (size_t)t->table.column_count + (size_t)r->column];
        free(*cell);
        *cell = host_xstrdup(text);
    }
    /* ... and the titles, which name the unit, in a copy of the columns. */
    const int count = t->table.column_count;
    const struct table_column *columns = t->table.columns;
    struct table_column *named = host_xcalloc((size_t)count, sizeof *named);
    char(*titles)[96] = host_xcalloc((size_t)count, sizeof *titles);
    for (int c = 0; c < count; c++) {
        unit_title(columns[c].title, unit.name, titles[c], sizeof titles[c]);
        named[c] = (struct table_column){titles[c], columns[c].align};
    }
    t->table.columns = named;
    table_print(&t->table, out, indent);
    t->table.columns = columns;
    free(titles);
    free(named);
}

void bench_table_free(struct bench_table *t)
{
    table_free(&t->table);
    free(t->rates);
    *t = (struct bench_table){0};
}

/* ---- results: --csv, --chart and --peers ---------------------------------------------------- */

/* The process's one results file (bench_common.h). */
static struct {
    const char *program, *area;
    const char *chart;   /* --chart's PNG; NULL: none */
    int peers;           /* --peers */
    int reps;            /* the area's --reps, which the peers take too */
    char csv_path[4096]; /* --csv's, or the temporary file's */
    int temporary;       /* csv_path is removed at the end */
    char *script;        /* chart.py, once found; lives as long as the process */
    char date[32];       /* when the area started, UTC */
    FILE *csv;
    int rows;
} results;

/* $CLOPS_PYTHON, else the first python3 on PATH. */
static const char *bench_python(void)
{
    const char *python = getenv("CLOPS_PYTHON");
    return python != NULL && python[0] != '\0' ? python : "python3";
}

/* `path` without its "..", the name messages print; lives as long as the process. */
static char *script_path(const char *path)
{
    char *full = realpath(path, NULL);
    return full != NULL ? full : host_xstrdup(path);
}

/* A script of this directory (chart.py, peers.py), installed or in the source tree: the
 * installed one is in CLOPS_BENCH_SCRIPTS_FROM_BIN relative to this program's directory (bin/
 * -> share/clops/), so that a relocated installation finds its own; a program that is not
 * installed finds the source tree's, in CLOPS_BENCH_SCRIPT_DIR. Returns its path, or NULL with
 * where it looked in `why`. */
static char *find_script(const char *name, char *why, size_t why_size)
{
    char exe[4096];
    ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = NULL;
    if (length > 0) {
        exe[length] = '\0';
        slash = strrchr(exe, '/');
    }
    char path[sizeof exe + 256];
    if (slash != NULL) {
        *slash = '\0';
        snprintf(path, sizeof path, "%s/%s/%s", exe, CLOPS_BENCH_SCRIPTS_FROM_BIN, name);
        if (access(path, R_OK) == 0)
            return script_path(path);
    }
    snprintf(path, sizeof path, "%s/%s", CLOPS_BENCH_SCRIPT_DIR, name);
    if (access(path, R_OK) == 0)
        return script_path(path);
    snprintf(why, why_size, "no %s, neither installed (%s/%s/%s) nor in the source tree (%s/%s)",
             name, slash != NULL ? exe : "?", CLOPS_BENCH_SCRIPTS_FROM_BIN, name,
             CLOPS_BENCH_SCRIPT_DIR, name);
    return NULL;
}

/* Runs `$CLOPS_PYTHON script ARGS...` (`args` ends in NULL; at most 6) and waits for it; with
 * `stderr_path` its standard error goes to that file. Returns its exit status, or -1 with
 * *error set to why it could not be started (an errno value). */
static int run_script(const char *script, const char *const *args, const char *stderr_path,
                      int *error)
{
    extern char **environ;
    const char *python = bench_python();
    char *argv[9] = {(char *)python, (char *)script};
    for (int i = 0; i < 6 && args[i] != NULL; i++)
        argv[2 + i] = (char *)args[i];
    fflush(stdout); /* the tables come before whatever the script prints */
    fflush(stderr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (stderr_path != NULL)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path,
                                         O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawnp(&pid, python, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        *error = rc;
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            *error = errno;
            return -1;
        }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs `python chart.py ARGS...` (at most 3 arguments). Returns its exit status, or -1 after
 * printing why it could not be started. */
static int run_chart_script(const char *arg0, const char *arg1, const char *arg2)
{
    const char *const args[] = {arg0, arg1, arg2, NULL};
    int error = 0, status = run_script(results.script, args, NULL, &error);
    if (status < 0)
        fprintf(stderr,
                "%s: --chart: cannot run '%s': %s (set CLOPS_PYTHON to a python3 with "
                "matplotlib)\n",
                results.program, bench_python(), strerror(error));
    return status;
}

/* Before anything is measured: a run of minutes must not end in "no matplotlib". */
static int check_chart_possible(void)
{
    char why[8192 + 512];
    if ((results.script = find_script("chart.py", why, sizeof why)) == NULL) {
        fprintf(stderr, "%s: --chart: %s\n", results.program, why);
        return BENCH_EXIT_NO_CHART;
    }
    int status = run_chart_script("--check", NULL, NULL);
    if (status == 0)
        return BENCH_EXIT_OK;
    if (status > 0) /* chart.py has said what is missing */
        fprintf(stderr,
                "%s: --chart: %s cannot draw charts with '%s' (exit %d); set CLOPS_PYTHON to a "
                "python3 with matplotlib. Nothing was measured.\n",
                results.program, results.script, bench_python(), status);
    return BENCH_EXIT_NO_CHART;
}

/* A new temporary file $TMPDIR/clops-bench-<what>-XXXXXX<suffix> (TMPDIR, else /tmp), its name
 * in `path`. Returns its descriptor, or -1. */
static int make_temporary(char *path, size_t size, const char *what, const char *suffix)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, size, "%s/clops-bench-%s-XXXXXX%s", dir != NULL && dir[0] != '\0' ? dir : "/tmp",
             what, suffix);
    return mkstemps(path, (int)strlen(suffix));
}

/* --csv's file, or for --chart or --peers alone a temporary one; with the header row. */
static int create_csv(const char *path)
{
    if (path != NULL) {
        snprintf(results.csv_path, sizeof results.csv_path, "%s", path);
        results.csv = fopen(path, "w");
    } else {
        int fd = make_temporary(results.csv_path, sizeof results.csv_path, "results", ".csv");
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
    results.peers = opt->peers;
    results.reps = opt->reps;
    if (opt->csv == NULL && opt->chart == NULL && !opt->peers)
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

/* The columns of BENCH_RESULTS_COLUMNS, in its order. */
enum column {
    COL_AREA,
    COL_OP,
    COL_DTYPE,
    COL_IMPL,
    COL_N,
    COL_N_UNIT,
    COL_TIME_MS,
    COL_RATE,
    COL_UNIT,
    COL_DEVICE,
    COL_DATE,
    COLUMN_COUNT
};

static const char *const column_names[COLUMN_COUNT] = {
    "area", "op", "dtype", "impl", "n", "n_unit", "time_ms", "rate", "unit", "device", "date"};

static void write_row(FILE *f, const char *const *fields)
{
    for (int i = 0; i < COLUMN_COUNT; i++)
        write_field(f, fields[i], i + 1 < COLUMN_COUNT ? ',' : '\n');
    /* A run that dies later keeps the rows measured so far. */
    fflush(f);
    results.rows++;
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
    const char *fields[COLUMN_COUNT] = {[COL_AREA] = results.area,
                                        [COL_OP] = row->op,
                                        [COL_DTYPE] = host_dtype_name(row->dtype),
                                        [COL_IMPL] = row->impl,
                                        [COL_N] = n,
                                        [COL_N_UNIT] = row->n_unit,
                                        [COL_TIME_MS] = ms,
                                        [COL_RATE] = rate,
                                        [COL_UNIT] = row->unit,
                                        [COL_DEVICE] = row->device,
                                        [COL_DATE] = results.date};
    write_row(results.csv, fields);
}

/* ---- --peers: reading results back, and the Peers table ------------------------------------- */

/* Rows read from a results file: every column, "" where the file has none. */
struct result_rows {
    char *(*cells)[COLUMN_COUNT];
    int count;
};

static void free_result_rows(struct result_rows *rows)
{
    for (int r = 0; r < rows->count; r++)
        for (int c = 0; c < COLUMN_COUNT; c++)
            free(rows->cells[r][c]);
    free(rows->cells);
    *rows = (struct result_rows){0};
}

/* The whole of a (small) file, NUL-terminated; NULL when it cannot be read. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t length = 0, capacity = 4096;
    char *text = host_xmalloc(capacity);
    size_t got;
    while ((got = fread(text + length, 1, capacity - length - 1, f)) > 0) {
        length += got;
        if (capacity - length - 1 == 0)
            text = realloc(text, capacity *= 2);
        if (text == NULL)
            abort(); /* as host_xmalloc does: out of memory */
    }
    int failed = ferror(f);
    fclose(f);
    text[length] = '\0';
    if (failed) {
        free(text);
        return NULL;
    }
    return text;
}

/* One field of RFC 4180 text at *p, its quotes undone, as a new string; *p moves to what ends
 * it (a comma, a line break or the end). */
static char *parse_field(const char **p)
{
    const char *s = *p;
    char *out = host_xmalloc(strlen(s) + 1), *o = out;
    if (*s == '"') {
        for (s++; *s != '\0'; s++) {
            if (*s == '"' && s[1] != '"') {
                s++;
                break;
            }
            s += *s == '"'; /* "" is one quote */
            *o++ = *s;
        }
    }
    while (*s != '\0' && *s != ',' && *s != '\n' && *s != '\r')
        *o++ = *s++;
    *o = '\0';
    *p = s;
    char *field = host_xstrdup(out); /* `out` has room for the rest of the file */
    free(out);
    return field;
}

/* The record at *p: up to `max` fields into `fields` (the rest are dropped), *p past its line
 * break. Returns the number of fields kept. */
static int parse_record(const char **p, char **fields, int max)
{
    int count = 0;
    for (;;) {
        char *field = parse_field(p);
        if (count < max)
            fields[count++] = field;
        else
            free(field);
        if (**p != ',')
            break;
        ++*p;
    }
    *p += **p == '\r';
    *p += **p == '\n';
    return count;
}

/* Reads a results file (its columns found by the header's names) into `rows`. Returns 0, or
 * -1 when it cannot be read. */
static int read_results(const char *path, struct result_rows *rows)
{
    enum { MAX_FIELDS = 64 };
    char *text = read_text(path);
    if (text == NULL)
        return -1;
    const char *p = text;
    char *fields[MAX_FIELDS];
    int where[MAX_FIELDS]; /* the column of each of the file's fields, or -1 */
    int count = parse_record(&p, fields, MAX_FIELDS), capacity = 0;
    for (int f = 0; f < count; f++) {
        where[f] = -1;
        for (int c = 0; c < COLUMN_COUNT; c++)
            if (strcmp(fields[f], column_names[c]) == 0)
                where[f] = c;
        free(fields[f]);
    }
    int header = count;
    while (*p != '\0') {
        count = parse_record(&p, fields, MAX_FIELDS);
        if (count > 1 || fields[0][0] != '\0') { /* not an empty line */
            if (rows->count == capacity) {
                capacity = capacity ? 2 * capacity : 16;
                rows->cells = realloc(rows->cells, (size_t)capacity * sizeof *rows->cells);
                if (rows->cells == NULL)
                    abort();
            }
            char **row = rows->cells[rows->count++];
            for (int c = 0; c < COLUMN_COUNT; c++)
                row[c] = NULL;
            for (int f = 0; f < count && f < header; f++)
                if (where[f] >= 0 && row[where[f]] == NULL) {
                    row[where[f]] = fields[f];
                    fields[f] = NULL;
                }
            for (int c = 0; c < COLUMN_COUNT; c++)
                if (row[c] == NULL)
                    row[c] = host_xstrdup("");
        }
        for (int f = 0; f < count; f++)
            free(fields[f]);
    }
    free(text);
    return 0;
}

/* A row's op: a peer's file may leave it out where it is the area's name. */
static const char *op_of(char *const *row)
{
    return row[COL_OP][0] != '\0' ? row[COL_OP] : row[COL_AREA];
}

static int ends_with(const char *text, const char *end)
{
    size_t length = strlen(text), end_length = strlen(end);
    return length >= end_length && strcmp(text + length - end_length, end) == 0;
}

/* Whether `peer` measured what the clops row `ours` did: the same area, dtype, size and unit,
 * and the same op, or for a transpose the device copy of its bytes (the ceiling it is judged
 * against), or for an op with host operands ("gemm host") clops' own call on device operands.
 * Returns 1 with the name the table gives the peer in `name`, or 0. */
static int peer_name(char *const *ours, char *const *peer, char *name, size_t size)
{
    static const char host[] = " host";
    static const int same[] = {COL_AREA, COL_DTYPE, COL_N, COL_UNIT};
    for (int i = 0; i < (int)(sizeof same / sizeof same[0]); i++)
        if (strcmp(ours[same[i]], peer[same[i]]) != 0)
            return 0;
    const char *op = op_of(ours), *peer_op = op_of(peer);
    if (strcmp(peer[COL_IMPL], "clops") == 0) {
        size_t length = strlen(op) - (sizeof host - 1);
        if (!ends_with(op, host) || strlen(peer_op) != length || strncmp(op, peer_op, length) != 0)
            return 0;
        snprintf(name, size, "clops, device operands");
    } else if (strcmp(op, peer_op) == 0) {
        snprintf(name, size, "%s", peer[COL_IMPL]);
    } else if (strcmp(op, "transpose") == 0 && strcmp(peer_op, "device copy") == 0) {
        snprintf(name, size, "%s device copy", peer[COL_IMPL]);
    } else {
        return 0;
    }
    return 1;
}

/* A row's rate; NaN where it is not a positive number. */
static double rate_of(char *const *row)
{
    char *end;
    double rate = strtod(row[COL_RATE], &end);
    return end != row[COL_RATE] && rate > 0.0 && isfinite(rate) ? rate : NAN;
}

/* The unit the Peers table gives rates of a results file's `unit` in. */
struct shown_unit {
    const char *name;
    double scale; /* the file's rate times this is the table's */
};

/* For a unit of units[] (the files' "TFLOP/s", "GB/s"), the one that suits the largest rate in
 * `unit` of `rows`; any other ("iterations/s") as it is. */
static struct shown_unit shown_unit(const struct result_rows *rows, const char *unit)
{
    for (int u = 0; u < UNIT_COUNT; u++) {
        if (strcmp(units[u].unit.name, unit) != 0)
            continue;
        double largest = 0.0;
        for (int r = 0; r < rows->count; r++)
            if (strcmp(rows->cells[r][COL_UNIT], unit) == 0 && rate_of(rows->cells[r]) > largest)
                largest = rate_of(rows->cells[r]);
        const struct bench_unit shown =
            bench_unit_for(units[u].quantity, largest * units[u].unit.size);
        return (struct shown_unit){shown.name, units[u].unit.size / shown.size};
    }
    return (struct shown_unit){unit, 1.0};
}

static void add_peer_row(struct table *t, char *const *ours, const char *name, char *const *peer,
                         struct shown_unit unit)
{
    table_row(t);
    table_cell(t, "%s", op_of(ours));
    table_cell(t, "%s", ours[COL_DTYPE]);
    table_cell(t, "%s", ours[COL_N]);
    table_cell(t, "%s", unit.name);
    table_cell(t, "%.4g", rate_of(ours) * unit.scale);
    table_cell(t, "%s", name != NULL ? name : "-");
    if (peer == NULL) {
        table_cell(t, "-");
        table_cell(t, "-");
        return;
    }
    table_cell(t, "%.4g", rate_of(peer) * unit.scale);
    table_cell(t, "%.3g", rate_of(ours) / rate_of(peer));
}

/* For each clops row, every row that measured the same work: peers.py's, CLBlast's, the seed's,
 * and clops' own on device operands for a row on host operands; a row with none has "-". The
 * rates of each unit of the file are shown in the one that suits the largest (shown_unit). */
static void print_peers_table(const struct result_rows *rows)
{
    static const struct table_column columns[] = {
        {"work", TABLE_LEFT},         {"dtype", TABLE_LEFT},       {"n", TABLE_RIGHT},
        {"unit", TABLE_LEFT},         {"clops", TABLE_RIGHT},      {"peer", TABLE_LEFT},
        {"peer's rate", TABLE_RIGHT}, {"clops/peer", TABLE_RIGHT},
    };
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    for (int r = 0; r < rows->count; r++) {
        char *const *ours = rows->cells[r];
        if (strcmp(ours[COL_IMPL], "clops") != 0)
            continue;
        const struct shown_unit unit = shown_unit(rows, ours[COL_UNIT]);
        int peers = 0;
        for (int p = 0; p < rows->count; p++) {
            char name[256];
            if (p != r && peer_name(ours, rows->cells[p], name, sizeof name)) {
                add_peer_row(&t, ours, name, rows->cells[p], unit);
                peers++;
            }
        }
        if (peers == 0)
            add_peer_row(&t, ours, NULL, NULL, unit);
    }
    printf("\nPeers: clops' rate beside each other implementation's on the same work and size\n"
           "(clops/peer > 1: clops is faster; for a transpose, \"device copy\" copies the same\n"
           "bytes: the ceiling; for host operands, clops' call on device operands):\n\n");
    table_print(&t, stdout, 0);
    table_free(&t);
}

/* The lines peers.py wrote on its standard error, printed on `out`. Returns how many. */
static int print_script_lines(const char *path, FILE *out)
{
    char *text = read_text(path);
    int count = 0;
    for (char *line = text, *next; line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (*line != '\0') {
            fprintf(out, "%s\n", line);
            count++;
        }
    }
    free(text);
    return count;
}

/* Runs peers.py on the results file so far; its rows into `peer_rows`. Prints why there are
 * none where there are none. Returns BENCH_EXIT_OK, or BENCH_EXIT_RESULTS when peers.py failed
 * or its rows cannot be read. */
static int run_peers(struct result_rows *peer_rows)
{
    char why[8192 + 512];
    char *script = find_script("peers.py", why, sizeof why);
    if (script == NULL) {
        printf("\npeers: none measured: %s\n", why);
        return BENCH_EXIT_OK;
    }
    char out_path[4096], err_path[4096], reps[16];
    int out_fd = make_temporary(out_path, sizeof out_path, "peers", ".csv");
    int err_fd = out_fd >= 0 ? make_temporary(err_path, sizeof err_path, "peers", ".txt") : -1;
    if (err_fd < 0) {
        fprintf(stderr, "%s: --peers: cannot create a temporary file: %s\n", results.program,
                strerror(errno));
        if (out_fd >= 0) {
            close(out_fd);
            remove(out_path);
        }
        free(script);
        return BENCH_EXIT_RESULTS;
    }
    close(out_fd);
    close(err_fd);
    snprintf(reps, sizeof reps, "%d", results.reps);
    const char *const args[] = {"--reps", reps, "--", results.csv_path, out_path, NULL};
    printf("\npeers: %s %s (--reps %s) ...\n", bench_python(), script, reps);
    int error = 0, status = run_script(script, args, err_path, &error), code = BENCH_EXIT_OK;
    if (status < 0) {
        printf("peers: none measured: cannot run '%s': %s (set CLOPS_PYTHON to a python3 with "
               "NumPy and SciPy, or PyTorch or CuPy)\n",
               bench_python(), strerror(error));
    } else if (status != 0) {
        print_script_lines(err_path, stderr);
        fprintf(stderr, "%s: --peers: %s failed (exit %d): no peers' rows\n", results.program,
                script, status);
        code = BENCH_EXIT_RESULTS;
    } else {
        /* Why a group of rows has no peer ("numpy is not importable"), when one has none. */
        int said = print_script_lines(err_path, stdout);
        if (read_results(out_path, peer_rows) != 0) {
            fprintf(stderr, "%s: --peers: cannot read %s's rows in %s\n", results.program, script,
                    out_path);
            code = BENCH_EXIT_RESULTS;
        } else if (peer_rows->count == 0 && said == 0) {
            printf("peers: peers.py found no peer for this work on this machine\n");
        }
    }
    remove(out_path);
    remove(err_path);
    free(script);
    return code;
}

/* --peers: the peers' rows into the results file, and the Peers table of every row in it. */
static int add_peers(void)
{
    struct result_rows ours = {0}, peers = {0};
    fflush(results.csv);
    int code = run_peers(&peers);
    for (int r = 0; r < peers.count; r++)
        write_row(results.csv, (const char *const *)peers.cells[r]);
    if (read_results(results.csv_path, &ours) != 0) {
        fprintf(stderr, "%s: --peers: cannot read the results back from %s\n", results.program,
                results.csv_path);
        code = BENCH_EXIT_RESULTS;
    } else {
        print_peers_table(&ours);
    }
    free_result_rows(&ours);
    free_result_rows(&peers);
    return code;
}

/* ---- --chart -------------------------------------------------------------------------------- */

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
    bench_progress_end();
    if (results.csv == NULL)
        return code;
    const int measured = code == BENCH_EXIT_OK || code == BENCH_EXIT_FAILED;
    int status = results.peers && measured ? add_peers() : BENCH_EXIT_OK;
    int failed = ferror(results.csv);
    failed |= fclose(results.csv) != 0;
    results.csv = NULL;
    if (failed) {
        fprintf(stderr, "%s: cannot write the results to %s\n", results.program, results.csv_path);
        status = BENCH_EXIT_RESULTS;
    }
    /* A peers.py that failed leaves clops' rows to draw. */
    if (!failed && results.chart != NULL && measured) {
        int drawn = draw_chart();
        status = status != BENCH_EXIT_OK ? status : drawn;
    }
    if (results.temporary)
        remove(results.csv_path);
    return code != BENCH_EXIT_OK ? code : status;
}
