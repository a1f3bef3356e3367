/* bench_common.h — what the areas of clops-bench share: the exit statuses, the options every
 * area takes (--reps, --config, --verbose, --help, --csv, --chart, --peers), loading libclops,
 * opening the pool and the lines that name them, and the results file, its chart and its
 * peers (timings sort with hosts/common's host_median). */
#ifndef CLOPS_BENCH_COMMON_H
#define CLOPS_BENCH_COMMON_H

#include <getopt.h>
#include <stdint.h>

#include "clops.h"
#include "loader.h"
#include "table.h"
#include "util.h"

/* Every area's exit status (bench.h). */
enum bench_exit {
    BENCH_EXIT_OK = 0,
    BENCH_EXIT_FAILED = 1, /* a call failed or a result was wrong */
    BENCH_EXIT_USAGE = 2,
    BENCH_EXIT_LOAD = 3, /* libclops could not be loaded, or lacks what the area measures */
    BENCH_EXIT_CONFIG = 4,
    BENCH_EXIT_RESULTS = 5, /* --csv, --chart, --peers: a file could not be written, the chart or
                               peers.py failed */
    BENCH_EXIT_NO_CHART = 6 /* --chart: python3, its matplotlib or chart.py is missing */
};

/* The paragraph of --help on --csv, --chart and --peers, after an area's own options. */
#define BENCH_HELP_RESULTS_OPTIONS                                                                 \
    "\nResults, besides the tables:\n"                                                             \
    "  --csv FILE    one row per timed measurement, as CSV (hosts/bench/README.md)\n"              \
    "  --chart PNG   a chart of them, rate against size, drawn by chart.py with matplotlib\n"      \
    "                ($CLOPS_PYTHON, else python3 on PATH; checked before measuring)\n"            \
    "  --peers       then the same work by the vendor libraries of this machine, run by\n"         \
    "                peers.py with $CLOPS_PYTHON (else python3): PyTorch or CuPy (cuBLAS,\n"       \
    "                cuSOLVER, torch's reductions and copies) for rows measured on an NVIDIA\n"    \
    "                GPU, NumPy and SciPy (the system BLAS and LAPACK) for rows measured on a\n"   \
    "                CPU device; and the table \"Peers\": each clops rate beside every peer's\n"   \
    "                on the same work and size (these, CLBlast's and the seed's rows), and\n"      \
    "                clops/peer (> 1: clops is faster). The peers' rows join --csv and\n"          \
    "                --chart. No peer library, or no python3: a line says so, exit 0.\n"

/* The paragraph of --help on the progress lines, after an area's own options. */
#define BENCH_HELP_PROGRESS                                                                        \
    "\nProgress: as each measurement ends, a line on stderr says what was measured and its\n"      \
    "figures (\"clops-bench lu: [4/18 0:12] f32 N=512 lu: 23.4 ms, 3.83 GFLOP/s\": the 4th of\n"   \
    "18, 12 s after the start); on a terminal, one line rewritten in place, with a bar. The\n"     \
    "tables follow on stdout.\n"

/* The exit statuses of --csv, --chart and --peers: the last lines of every area's --help. */
#define BENCH_HELP_EXIT_RESULTS                                                                    \
    "5 --csv or --chart could not write its file or draw the chart, or peers.py failed;\n"         \
    "6 --chart needs python3 with matplotlib ($CLOPS_PYTHON, else python3 on PATH), and it is\n"   \
    "missing.\n"

/* The last paragraph of --help, for the areas whose failures are just those above. */
#define BENCH_HELP_EXIT_STATUS                                                                     \
    "Exit status: 0 ok; 1 a call failed or a result was wrong; 2 usage error; 3 libclops could\n"  \
    "not be loaded; 4 configuration error;\n" BENCH_HELP_EXIT_RESULTS

/* The options the areas take besides their own: -r/--reps R, -c/--config FILE, -v/--verbose,
 * --csv FILE, --chart PNG, --peers (and -h/--help). */
struct bench_options {
    int reps;
    int verbose;
    int peers;          /* --peers: the peers' rows and the Peers table after the area's own */
    const char *config; /* NULL: the pool's built-in defaults */
    const char *csv;    /* NULL: no results file (a temporary one for --chart alone) */
    const char *chart;  /* NULL: no chart */
};

/* How an area reads its command line. */
struct bench_command_line {
    const char *program; /* "clops-bench lu": starts each message, names --help */
    const char *name;    /* "lu": the area column of its results */
    const char *help;    /* what --help prints */
    /* The area's own long options, ending in {0}; one whose value is a character is also
     * spelled short with it (-s for {"sizes", required_argument, NULL, 's'}). */
    const struct option *options;
    int default_reps, max_reps;
    const char *reps_error; /* a bad --reps' usage error; NULL: "--reps wants 1 to <max>, not" */
    /* Takes one of the area's own options into `area` (`arg` is NULL for a flag). Returns
     * NULL, or the text of the usage error, which the value is printed after. */
    const char *(*take)(void *area, int option, const char *arg);
    void *area;
};

/* The library and the pool an area measures with. */
struct bench_session {
    const char *program; /* as in bench_command_line */
    struct bench_options opt;
    struct host_library lib;
    struct clops_pool *pool;         /* NULL until opened */
    struct clops_device_info device; /* the pool's device 0, after bench_open_pool() */
};

/* "<program>: <what> '<arg>'" and a pointer to --help on stderr; returns BENCH_EXIT_USAGE. */
int bench_usage_error(const char *program, const char *what, const char *arg);

/* `text` as an integer of strtoll's `base` (10, or 0 to take 0x... and 0... too) within
 * [lo, hi]. Returns 0, or -1 when it is not one. */
int bench_parse_int(const char *text, int base, int64_t lo, int64_t hi, int64_t *out);

/* An integer option's value for bench_command_line.take: bench_parse_int() into *out, and NULL,
 * or `error` (the usage error's text) when `arg` is not one. */
const char *bench_take_int(const char *arg, int base, int64_t lo, int64_t hi, int64_t *out,
                           const char *error);

/* "N,N,..." with 1 <= N <= 65536, at most `max` of them, into sizes[0 .. *count - 1]. Returns
 * NULL, or the usage error's text for a --sizes option. */
const char *bench_parse_sizes(const char *text, int64_t *sizes, int max, int *count);
/* --dtypes: "f32", "f64" or both, comma-separated, as bits (f32 1, f64 2). Returns NULL, or the
 * usage error's text. */
const char *bench_parse_dtypes(const char *text, unsigned *bits);

/* Reads the command line; with --chart checks that a chart can be drawn (python3, matplotlib and
 * chart.py are there) before anything is measured; with --csv, --chart or --peers creates the
 * results file (--csv's, or a temporary one) with its header row; loads libclops
 * (bench_load_library, verbose with --verbose). Returns -1 to go on, or the exit status
 * (BENCH_EXIT_OK after --help). */
int bench_start(int argc, char **argv, const struct bench_command_line *command_line,
                struct bench_session *s);

/* Loads libclops into s->lib, and sends its warnings and errors (with `verbose` its info and
 * debug messages too) to stderr, each on a line of its own; from now on s->program names the
 * progress lines, whose times start here. Returns BENCH_EXIT_OK, or BENCH_EXIT_LOAD after
 * printing why. */
int bench_load_library(struct bench_session *s, int verbose);

/* A new pool from s->opt.config, or from the built-in defaults: a clops status. */
int32_t bench_pool_create(const struct bench_session *s, struct clops_pool **pool);

/* Creates s->pool. Returns BENCH_EXIT_OK, or after printing why BENCH_EXIT_CONFIG (the
 * configuration could not be read or is wrong) or BENCH_EXIT_FAILED. */
int bench_create_pool(struct bench_session *s);

/* bench_create_pool(), then s->device: the description of the pool's device 0. */
int bench_open_pool(struct bench_session *s);

/* "<program>: <what>: <the library's last error>" on stderr. */
void bench_report_error(const struct bench_session *s, const char *what);

/* "<title>, libclops <version> from <path>": the first line of an area's output. */
void bench_print_library(const struct bench_session *s, const char *title);

/* "device: <name> (<platform>, driver <version>, <n> CUs, <memory>)", then ", pool from
 * <pool_from>" unless that is NULL, then an empty line. */
void bench_print_device(const struct clops_device_info *device, const char *pool_from);

/* ---- progress: each measurement on stderr as it is made -------------------------------------
 *
 * The tables come on stdout once an area has measured them; meanwhile each measurement is
 * reported on stderr as it ends, so that a long run, or its log, shows how far it is:
 *
 *   clops-bench lu: [4/18 0:12] f32 N=512 lu: 23.4 ms, 3.83 GFLOP/s
 *
 * (its place among the measurements the area has planned, and the time since the area
 * started). When stderr is a terminal the same is one line rewritten in place, with a bar,
 * which also shows the measurement under way as it starts; bench_progress_end() ends it. */

/* The area will make `measurements` more measurements (the N of "[k/N]"); fewer where it is
 * negative (measurements left out together, after a failure). */
void bench_progress_plan(int measurements);

/* What is measured next ("f32 N=512 lu"); flushes stdout, so that a file or a pipe holds what
 * the area printed before. */
void bench_progress_start(const char *fmt, ...) HOST_PRINTF(1, 2);

/* The measurement started last is over: its figures ("23.4 ms, 3.83 GFLOP/s", or "FAILED"). */
void bench_progress_done(const char *fmt, ...) HOST_PRINTF(1, 2);

/* Ends the line a terminal shows (a newline), so that what an area prints next, its tables,
 * starts on a line of its own; nothing when stderr is not a terminal. */
void bench_progress_end(void);

/* stderr, once bench_progress_end() has ended a terminal's line: where the areas' messages go,
 * each on a line of its own. */
FILE *bench_stderr(void);

/* ---- rates in the unit that suits them ------------------------------------------------------
 *
 * A CPU device's GEMM runs at some GFLOP/s, where TFLOP/s would print 0.0061: each figure (and
 * each table, from its largest rate) takes the largest unit in which it reads 1 or more. The
 * results file (--csv) keeps TFLOP/s and GB/s, the units chart.py and peers.py read. */

/* What a rate counts per second. */
enum bench_quantity { BENCH_FLOPS = 0, BENCH_BYTES = 1 };

struct bench_unit {
    const char *name; /* "GFLOP/s" */
    double size;      /* in the quantity per second: 1e9 */
};

/* The largest unit of `quantity` in which `rate` (per second) reads 1 or more: TFLOP/s,
 * GFLOP/s, MFLOP/s; GB/s, MB/s. The smallest for a rate below them all, or not a number. */
struct bench_unit bench_unit_for(enum bench_quantity quantity, double rate);

/* `rate` (per second) in `unit`: 3 significant digits, and no exponent from 1000 up ("3457"). */
void bench_format_rate(double rate, struct bench_unit unit, char *out, size_t size);

/* "3.83 GFLOP/s": `rate` (per second) in the unit that suits it, for a progress line. */
const char *bench_rate_text(enum bench_quantity quantity, double rate, char *out, size_t size);

/* A table with rate columns: rates are kept as numbers while it fills and are written when it
 * is printed, all in the unit that suits the largest of them; the title of a rate column says
 * "%s" where that unit's name goes ("clops %s": "clops GFLOP/s"). The other cells are given
 * with table_row() and table_cell() on `table`. */
struct bench_table {
    struct table table;
    enum bench_quantity quantity;
    struct bench_rate_cell *rates; /* the rate cells given so far */
    int rate_count, rate_capacity;
};

void bench_table_init(struct bench_table *t, const struct table_column *columns, int column_count,
                      enum bench_quantity quantity);

/* The next cell of the row `t` is filling: `rate` per second; "-" when it is not > 0. */
void bench_table_rate(struct bench_table *t, double rate);

/* Ends the progress line (bench_progress_end), then prints `t` as table_print() does. */
void bench_table_print(struct bench_table *t, FILE *out, int indent);

void bench_table_free(struct bench_table *t);

/* ---- results: --csv, --chart and --peers ----------------------------------------------------
 *
 * A process measures one area, and its results file is the process's: bench_start() opens it,
 * each area adds one row per timed measurement with bench_record(), and bench_main.c closes it
 * with bench_results_finish() once the area has returned: that runs the peers (peers.py adds
 * their rows, and the Peers table is printed) and draws the chart. The columns are those of
 * BENCH_RESULTS_COLUMNS, described in hosts/bench/README.md; chart.py draws them. */

#define BENCH_RESULTS_COLUMNS "area,op,dtype,impl,n,n_unit,time_ms,rate,unit,device,date"

/* One timed measurement. */
struct bench_row {
    const char *op;     /* what was timed: "gemm", "solve 64 RHS", "reduce sum", ... */
    int32_t dtype;      /* CLOPS_F32, ... */
    const char *impl;   /* "clops", or the peer's name: "clblast", "seed" */
    int64_t n;          /* the size the rate is drawn against */
    const char *n_unit; /* what n counts: "matrix order", "elements", "image edge" */
    double ms;          /* the time of one call (the median of the reps) */
    double rate;        /* in `unit`: "TFLOP/s", "GB/s", "iterations/s" */
    const char *unit;
    const char *device; /* the device's name, as bench_print_device() prints it */
};

/* Adds `row` to the results file; nothing without --csv, --chart or --peers. A row whose time or
 * rate is not a positive number (a failed measurement) is left out. */
void bench_record(const struct bench_row *row);

/* After an area that measured (`code` BENCH_EXIT_OK or BENCH_EXIT_FAILED): with --peers runs
 * `$CLOPS_PYTHON peers.py --reps R CSV PEERS.csv`, adds the peers' rows to the results file and
 * prints the Peers table; closes the results file; with --chart draws it: `$CLOPS_PYTHON
 * chart.py CSV PNG`. Returns the process's exit status: `code`, or BENCH_EXIT_RESULTS when `code`
 * was BENCH_EXIT_OK and the file or the chart could not be written or peers.py failed. */
int bench_results_finish(int code);

#endif
