/* bench_common.h — what the areas of clops-bench share: the exit statuses, the options every
 * area takes (--reps, --config, --verbose, --help), loading libclops, opening the pool and the
 * lines that name them, and sorting timings. */
#ifndef CLOPS_BENCH_COMMON_H
#define CLOPS_BENCH_COMMON_H

#include <getopt.h>
#include <stdint.h>

#include "clops.h"
#include "loader.h"

/* Every area's exit status (bench.h). */
enum bench_exit {
    BENCH_EXIT_OK = 0,
    BENCH_EXIT_FAILED = 1, /* a call failed or a result was wrong */
    BENCH_EXIT_USAGE = 2,
    BENCH_EXIT_LOAD = 3, /* libclops could not be loaded, or lacks what the area measures */
    BENCH_EXIT_CONFIG = 4
};

/* The last paragraph of --help, for the areas whose failures are just those above. */
#define BENCH_HELP_EXIT_STATUS                                                                     \
    "Exit status: 0 ok; 1 a call failed or a result was wrong; 2 usage error; 3 libclops could\n"  \
    "not be loaded; 4 configuration error.\n"

/* The options the areas take besides their own: -r/--reps R, -c/--config FILE, -v/--verbose
 * (and -h/--help). */
struct bench_options {
    int reps;
    int verbose;
    const char *config; /* NULL: the pool's built-in defaults */
};

/* How an area reads its command line. */
struct bench_command_line {
    const char *program;          /* "clops-bench lu": starts each message, names --help */
    const char *help;             /* what --help prints */
    const struct option *options; /* the area's own long options, ending in {0} */
    const char *short_options;    /* the area's own short options, in getopt's spelling */
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

/* Reads the command line, loads libclops (bench_load_library) and sends its warnings and
 * errors, and with --verbose its info and debug messages, to stderr. Returns -1 to go on, or
 * the exit status (BENCH_EXIT_OK after --help). */
int bench_start(int argc, char **argv, const struct bench_command_line *command_line,
                struct bench_session *s);

/* Loads libclops into s->lib. Returns BENCH_EXIT_OK, or BENCH_EXIT_LOAD after printing why. */
int bench_load_library(struct bench_session *s);

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

/* Sorts `count` timings in ascending order. */
void bench_sort(double *values, int count);

/* The median of `count` timings (the mean of the middle two for an even count); sorts them. */
double bench_median(double *values, int count);

#endif
