/* clops.c — the `clops` command: lists OpenCL devices and operators, runs pipeline files.
 * It reaches libclops only through dlopen() and the table of abi/clops.h. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_json.h"
#include "pipeline_sweep.h"
#include "shard.h"
#include "table.h"
#include "util.h"

#ifndef CLOPS_VERSION_STRING
#define CLOPS_VERSION_STRING "unknown"
#endif

static const char global_help[] =
    "Usage: clops [--verbose] COMMAND [ARGS...]\n"
    "       clops --help | --version\n"
    "\n"
    "Embeddable OpenCL compute operators: inspect devices and operators, run pipelines.\n"
    "\n"
    "Commands:\n"
    "  devices [--config FILE] [--json]\n"
    "                            OpenCL devices, and those a pool opens\n"
    "  ops [NAME] [--json]       the operators, or one operator's parameters\n"
    "  build [--ops LIST]        build kernels ahead of time into the cache\n"
    "  run FILE.cfg              validate a pipeline file, then run it (or one shard of\n"
    "                            its sweep: --shard K/N, --shard auto)\n"
    "  gather DIR [--json]       check the shards' manifests in DIR as one complete set\n"
    "  slurm FILE.cfg --tasks N  a Slurm job array script running the shards; --submit\n"
    "Run 'clops COMMAND --help' for a command's options.\n"
    "\n"
    "Options:\n"
    "  -v, --verbose   also print the library's info and debug messages\n"
    "  -h, --help      print this help\n"
    "  -V, --version   print the versions of clops and of the libclops it loads\n"
    "\n"
    "Environment:\n"
    "  CLOPS_LIBRARY   the libclops to load; default: the one beside clops (the\n"
    "                  build tree's, or the installed one), then libclops.so.1\n"
    "                  (clops.dll) from the system's search\n"
    "  XDG_CACHE_HOME  compiled kernels are cached in $XDG_CACHE_HOME/clops\n"
    "                  (default ~/.cache/clops) unless the pool configuration says otherwise\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  an operator, a pipeline step or a check failed; gather: the set is incomplete\n"
    "  2  usage error\n"
    "  3  libclops could not be loaded, or its ABI does not fit this clops\n"
    "  4  error in a pool configuration or pipeline file\n";

static const char devices_help[] =
    "Usage: clops devices [--config FILE] [--json]\n"
    "\n"
    "Lists every OpenCL device the ICD loader sees, then creates a pool (the built-in\n"
    "defaults: first GPU, else a CPU device; or FILE, a pool configuration such as\n"
    "configs/clops.cfg) and shows which devices it opened. Tables fit the terminal's width\n"
    "($COLUMNS, else 100 columns when stdout is not a terminal).\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE  create the pool from FILE instead of the defaults\n"
    "  -j, --json         print JSON instead (schema clops-devices/1, docs/json.md)\n"
    "  -v, --verbose      also print the library's info and debug messages\n"
    "  -h, --help         print this help\n";

static const char ops_help[] =
    "Usage: clops ops [NAME] [--json]\n"
    "\n"
    "Without NAME: one line per operator (name, version, summary).\n"
    "With NAME: the operator's summary, documentation and parameters (kind, accepted\n"
    "dtypes, enum values, default; parameters without a default are required).\n"
    "Text fits the terminal's width ($COLUMNS, else 100 columns when stdout is not a\n"
    "terminal).\n"
    "\n"
    "Options:\n"
    "  -j, --json     print JSON instead: every operator, or NAME, with their full\n"
    "                 documentation and parameters (schema clops-ops/1, docs/json.md)\n"
    "  -v, --verbose  also print the library's info and debug messages\n"
    "  -h, --help     print this help\n";

static const char run_help[] =
    "Usage: clops run [--output-dir DIR] [--set KEY=VALUE]... [--dry-run] [--quiet]\n"
    "                 [--progress] [--json] [--shard K/N|auto [--force]] FILE.cfg\n"
    "\n"
    "Runs a pipeline: creates or reads its tensors, calls its steps' operators on device\n"
    "copies of them, verifies its checks and writes its outputs (.npy, .mtx, .csv, .png,\n"
    ".bin). The whole file is validated before anything runs. The format is described at\n"
    "the top of configs/pipelines/demo.cfg. Relative paths: `pool` and input files are\n"
    "relative to FILE's directory, output files to DIR (default: the current directory).\n"
    "Outputs are written only when every step and check succeeded. A `sweep` runs FILE\n"
    "once per combination of its params' values, each output named by them\n"
    "(out/m.png -> out/m-n=64.png); a failed run is named and the next one runs.\n"
    "The steps' table gives each step's time apart from the kernel builds (compile ms)\n"
    "that its first call causes, and LAPACK's info with its meaning.\n"
    "\n"
    "Options:\n"
    "  -o, --output-dir DIR   where relative output files go\n"
    "  -s, --set KEY=VALUE    override a setting of FILE before it is validated; KEY is a\n"
    "                         path of keys, [index]es and tensor names, VALUE a libconfig\n"
    "                         value: --set params.n=64 (a declared param, of its type)\n"
    "                         --set 'sweep.n=[64, 128]' --set steps.[2].args.scale=0.5\n"
    "                         --set 'outputs.[0].file=\"a.npy\"'\n"
    "  -n, --dry-run          validate and print the plan (tensors, steps, checks,\n"
    "                         outputs) and a sweep's runs; run nothing\n"
    "  -q, --quiet            no progress on stderr (on a terminal: one bar over every\n"
    "                         run and step, moving within a call as the library reports\n"
    "                         it, with the time left once a call is measured)\n"
    "  -P, --progress         draw that bar even when stderr is not a terminal (a log);\n"
    "                         --quiet and --json still turn it off\n"
    "  -j, --json             print one JSON document instead of the plan or the tables:\n"
    "                         runs, steps' times and rates, checks, outputs' SHA-256\n"
    "                         (schema clops-run/1, docs/json.md); no progress\n"
    "  -S, --shard K/N        run shard K of N (from 0: 0/N .. N-1/N) of the sweep: runs\n"
    "                         K, K+N, K+2N, ...; write DIR/.clops/shard-K-of-N.json, the\n"
    "                         manifest (schema clops-shard/1) that 'clops gather' reads.\n"
    "                         A shard whose manifest says it succeeded, its files intact\n"
    "                         (SHA-256), is skipped\n"
    "  -S, --shard auto       K and N from a Slurm array task (SLURM_ARRAY_TASK_ID and\n"
    "                         SLURM_ARRAY_TASK_COUNT, or _MIN and _MAX) or an MPI launcher\n"
    "                         (OMPI_COMM_WORLD_RANK and _SIZE, PMI_RANK and PMI_SIZE); the\n"
    "                         shard takes GPU local rank % GPUs (SLURM_LOCALID,\n"
    "                         OMPI_COMM_WORLD_LOCAL_RANK) unless the pool file names devices\n"
    "  -f, --force            run the shard even when its manifest says it is done\n"
    "  -B, --no-prebuild      leave building kernels to the steps' first calls; by\n"
    "                         default the kernels of the steps' operators and dtypes are\n"
    "                         built (or loaded from the cache) before the first step, as\n"
    "                         'clops build' does, and the time is printed apart\n"
    "  -v, --verbose          also print the library's info and debug messages\n"
    "  -h, --help             print this help\n";

static const char build_help[] =
    "Usage: clops build [--config FILE] [--ops LIST] [--dtypes LIST]\n"
    "\n"
    "Builds the operators' kernels ahead of time on every device of a pool (the built-in\n"
    "defaults, or FILE) into the on-disk cache, so that the first calls of later processes\n"
    "load them instead of compiling them (on PoCL, seconds a program). Each operator runs\n"
    "once per dtype on each device on small operands of its own (the ABI's pool_prebuild).\n"
    "Prints the programs compiled and loaded and the time, per operator and dtype.\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE  create the pool from FILE instead of the defaults\n"
    "  -O, --ops LIST     operators, comma-separated (default: every one; clops ops)\n"
    "  -d, --dtypes LIST  dtypes, comma-separated: f32, f64, i32, u32, u8 (default:\n"
    "                     every dtype each operator takes; Mandelbrot's are its\n"
    "                     precisions f32 and f64)\n"
    "  -v, --verbose      also print the library's info and debug messages\n"
    "  -h, --help         print this help\n";

static const char gather_help[] =
    "Usage: clops gather DIR [--json]\n"
    "\n"
    "Reads every shard manifest in DIR/.clops (shard-K-of-N.json, written by 'clops run\n"
    "--shard K/N --output-dir DIR') and checks that they make one complete set: all N\n"
    "shards present, of the same pipeline text, --set overrides and N; every run of the\n"
    "sweep in its shard and succeeded; every file a manifest lists present with its size\n"
    "and SHA-256. Prints a table of the shards and the totals (runs, files, failures, run\n"
    "time). A missing, failed or changed shard is named on stderr. Exit status 0 only when\n"
    "the set is complete, else 1: re-run the shards (a done one skips itself) and gather\n"
    "again.\n"
    "\n"
    "Options:\n"
    "  -j, --json     print JSON instead (schema clops-gather/1, docs/json.md)\n"
    "  -v, --verbose  accepted, as by every command\n"
    "  -h, --help     print this help\n";

static const char slurm_help[] =
    "Usage: clops slurm FILE.cfg [--tasks N] [--output-dir DIR] [--set KEY=VALUE]...\n"
    "                   [SBATCH-OPTION]... [--submit]\n"
    "\n"
    "Prints a Slurm batch script for a job array of N tasks (#SBATCH --array=0-(N-1)),\n"
    "task K running 'clops run --shard auto --output-dir DIR FILE.cfg', shard K of N of\n"
    "FILE's sweep, with absolute paths to this clops, FILE and DIR; each task's log goes\n"
    "to DIR/.clops/slurm-JOB_TASK.out (DIR/.clops is made now). Any other option, such as\n"
    "--partition=gpu or --gres=gpu:1, becomes an #SBATCH line as given (its value after\n"
    "'='); so does every argument after '--'. Then run 'clops gather DIR'.\n"
    "\n"
    "Options:\n"
    "  --tasks N          the array's tasks (default: one per run of the sweep)\n"
    "  --output-dir DIR   where the tasks write (default: the current directory)\n"
    "  --set KEY=VALUE    passed on to clops run\n"
    "  --submit           write the script to DIR/.clops/clops-NAME.sbatch, give it to\n"
    "                     sbatch and print the job id\n"
    "  -v, --verbose      accepted, as by every command\n"
    "  -h, --help         print this help\n"
    "These have no short forms: -t, -o, -s are sbatch's (--time, --output, --oversubscribe).\n";

static int cli_load(struct cli *cli)
{
    char why[8192];
    if (host_library_load(&cli->lib, why, sizeof why) != 0) {
        fprintf(stderr, "clops: cannot load libclops: %s\n", why);
        return CLI_LOAD;
    }
    host_library_log_to_stderr(&cli->lib, cli->verbose);
    return CLI_OK;
}

static int usage_error(const char *command, const char *fmt, const char *arg)
{
    fprintf(stderr, "clops: %s%s", command ? command : "", command ? ": " : "");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'clops %s%s--help'.\n", command ? command : "", command ? " " : "");
    return CLI_USAGE;
}

/* ---- Option parsing shared by the commands ------------------------------------------------ */

enum { OPTIONS_MAX = 12 };

/* One command's options. getopt_long() does the parsing; --help and --verbose are every
 * command's, the others (`own`, up to OPTIONS_MAX, each with a one-letter `val`) go to `take`
 * with their argument (NULL for a flag). */
struct command_options {
    const char *command;
    const char *help;
    const struct option *own; /* {0}-terminated; NULL when the command has none */
    void (*take)(void *ctx, int c, char *arg);
    void *ctx;
};

/* Parses argv (argv[0] = the command's name). Returns -1 to go on, or an exit code when the
 * command is done (help printed, usage error); *first is the index of the first operand. */
static int parse_options(struct cli *cli, const struct command_options *spec, int argc, char **argv,
                         int *first)
{
    struct option options[OPTIONS_MAX + 3] = {
        {"help", no_argument, NULL, 'h'},
        {"verbose", no_argument, NULL, 'v'},
    };
    char shortopts[4 + 2 * OPTIONS_MAX] = ":hv"; /* options may follow operands: run x.cfg -v */
    for (int i = 0; spec->own != NULL && spec->own[i].name != NULL && i < OPTIONS_MAX; i++) {
        options[2 + i] = spec->own[i];
        size_t n = strlen(shortopts);
        shortopts[n] = (char)spec->own[i].val;
        if (spec->own[i].has_arg == required_argument)
            shortopts[n + 1] = ':';
    }
    optind = 0; /* GNU getopt: 0 fully reinitialises for a new argument vector */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shortopts, options, NULL)) != -1) {
        if (c == 'h') {
            fputs(spec->help, stdout);
            return CLI_OK;
        } else if (c == 'v') {
            cli->verbose = 1;
        } else if (c != ':' && c != '?' && strchr(shortopts + 3, c) != NULL) {
            spec->take(spec->ctx, c, optarg);
        } else if (c == ':') {
            return usage_error(spec->command, "option '%s' needs a value", argv[optind - 1]);
        } else {
            return usage_error(spec->command, "unknown option '%s'", argv[optind - 1]);
        }
    }
    *first = optind;
    return -1;
}

/* ---- Output shared by the commands -------------------------------------------------------- */

/* Text is laid out for this many columns when stdout is not a terminal and COLUMNS is unset. */
enum { DEFAULT_TEXT_WIDTH = 100 };

static int text_width(void)
{
    return host_output_width(stdout, DEFAULT_TEXT_WIDTH);
}

/* ---- clops devices -------------------------------------------------------------------------- */

static const char *device_type_name(int32_t type)
{
    switch (type) {
    case CLOPS_DEVICE_GPU: return "GPU";
    case CLOPS_DEVICE_CPU: return "CPU";
    default: return "other";
    }
}

/* All devices the ICD loader sees; *count receives how many. The caller frees. */
static struct clops_device_info *list_devices(const struct clops_api *api, int32_t *count)
{
    int32_t capacity = 16;
    for (;;) {
        struct clops_device_info *infos = host_xcalloc((size_t)capacity, sizeof *infos);
        for (int32_t i = 0; i < capacity; i++)
            infos[i].struct_size = sizeof infos[i];
        if (api->devices_list(infos, capacity, count) != CLOPS_OK) {
            free(infos);
            return NULL;
        }
        if (*count <= capacity)
            return infos;
        free(infos);
        capacity = *count;
    }
}

static int same_device(const struct clops_device_info *a, const struct clops_device_info *b)
{
    return a->platform_index == b->platform_index && a->device_index == b->device_index &&
           strcmp(a->name, b->name) == 0;
}

/* Which of the pool's devices `info` is: its index there, or -1. */
static int pool_index_of(const struct clops_device_info *info,
                         const struct clops_device_info *pool_devices, int32_t pool_count)
{
    for (int32_t i = 0; i < pool_count; i++)
        if (same_device(info, &pool_devices[i]))
            return i;
    return -1;
}

/* How many of the `length` bytes at `text` to keep so that it does not end in a UTF-8
 * character cut short. */
static size_t whole_characters(const char *text, size_t length)
{
    size_t lead = length;
    while (lead > 0 && ((unsigned char)text[lead - 1] & 0xC0) == 0x80)
        lead--;
    if (lead == 0)
        return length;
    unsigned char c = (unsigned char)text[lead - 1];
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length - (lead - 1) < need ? lead - 1 : length;
}

/* table_cell() of a string of struct clops_device_info, a `size`-byte field. The library cuts a
 * longer string to fit (PoCL's CL_DEVICE_VERSION runs past 63 bytes), mid-word or even
 * mid-character: a string that fills its field is shown up to its last blank or hyphen (a word
 * with neither, whole), then "…". */
static void device_cell(struct table *t, const char *field, size_t size)
{
    size_t length = strnlen(field, size);
    if (length + 1 < size) {
        table_cell(t, "%s", field);
        return;
    }
    size_t keep = length;
    while (keep > 0 && field[keep - 1] != ' ' && field[keep - 1] != '-')
        keep--;
    if (keep == 0)
        keep = whole_characters(field, length);
    table_cell(t, "%.*s…", (int)keep, field);
}

static void print_device_table(const struct clops_device_info *infos, int32_t count,
                               const struct clops_device_info *pool_devices, int32_t pool_count)
{
    static const struct table_column columns[] = {
        {"#", TABLE_LEFT},    {"platform", TABLE_WRAP}, {"type", TABLE_LEFT},
        {"name", TABLE_WRAP}, {"vendor", TABLE_WRAP},   {"driver", TABLE_WRAP},
        {"CUs", TABLE_RIGHT}, {"memory", TABLE_RIGHT},  {"fp64", TABLE_LEFT},
        {"pool", TABLE_LEFT},
    };
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    t.width = text_width();
    for (int32_t i = 0; i < count; i++) {
        const struct clops_device_info *d = &infos[i];
        char memory[32];
        host_format_bytes(d->global_mem_bytes, memory, sizeof memory);
        int in_pool = pool_index_of(d, pool_devices, pool_count);
        table_row(&t);
        table_cell(&t, "%d.%d", d->platform_index, d->device_index);
        device_cell(&t, d->platform, sizeof d->platform);
        table_cell(&t, "%s", device_type_name(d->type));
        device_cell(&t, d->name, sizeof d->name);
        device_cell(&t, d->vendor, sizeof d->vendor);
        device_cell(&t, d->driver_version, sizeof d->driver_version);
        table_cell(&t, "%d", d->compute_units);
        table_cell(&t, "%s", memory);
        table_cell(&t, "%s", d->fp64 ? "yes" : "no");
        if (in_pool == 0)
            table_cell(&t, "* device 0 (primary)");
        else if (in_pool > 0)
            table_cell(&t, "* device %d", in_pool);
        else
            table_cell(&t, "-");
    }
    table_print(&t, stdout, 0);
    table_free(&t);
}

static void print_pool_table(const struct clops_device_info *pool_devices, int32_t pool_count,
                             const char *source)
{
    static const struct table_column columns[] = {
        {"device", TABLE_RIGHT}, {"name", TABLE_WRAP},    {"platform", TABLE_WRAP},
        {"OpenCL", TABLE_WRAP},  {"queues", TABLE_RIGHT},
    };
    char title[4200];
    snprintf(title, sizeof title, "Pool from %s: %d device%s", source, pool_count,
             pool_count == 1 ? "" : "s");
    putchar('\n');
    host_print_wrapped(stdout, title, 0, 2, text_width());
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    t.width = text_width();
    for (int32_t i = 0; i < pool_count; i++) {
        table_row(&t);
        table_cell(&t, "%d", i);
        const struct clops_device_info *d = &pool_devices[i];
        device_cell(&t, d->name, sizeof d->name);
        device_cell(&t, d->platform, sizeof d->platform);
        device_cell(&t, d->opencl_version, sizeof d->opencl_version);
        table_cell(&t, "%d", d->queues);
    }
    table_print(&t, stdout, 0);
    table_free(&t);
}

/* Why a pool could not be made: the library's status and message. */
struct pool_failure {
    int32_t status;
    char message[2048];
};

/* The pool's devices; NULL on failure, with the exit code in *code and the reason in *why
 * (already printed to stderr). The caller frees. */
static struct clops_device_info *pool_devices(struct cli *cli, const char *config, int32_t *count,
                                              int *code, struct pool_failure *why)
{
    const struct clops_api *api = cli->lib.api;
    struct clops_pool *pool = NULL;
    int32_t status = config != NULL ? api->pool_create_from_file(config, &pool)
                                    : api->pool_create_default(&pool);
    if (status != CLOPS_OK) {
        why->status = status;
        snprintf(why->message, sizeof why->message, "%s", api->last_error());
        *code = cli_pool_error(cli, status);
        return NULL;
    }
    *count = api->pool_device_count(pool);
    struct clops_device_info *infos =
        host_xcalloc((size_t)(*count > 0 ? *count : 1), sizeof *infos);
    for (int32_t i = 0; i < *count; i++) {
        infos[i].struct_size = sizeof infos[i];
        status = api->pool_device_info(pool, i, &infos[i]);
        if (status != CLOPS_OK) {
            why->status = status;
            snprintf(why->message, sizeof why->message, "%s", api->last_error());
            *code = cli_library_error(cli, CLI_FAILED);
            free(infos);
            api->pool_release(pool);
            return NULL;
        }
    }
    api->pool_release(pool);
    return infos;
}

/* `clops devices --json` (docs/schema/clops-devices.schema.json). */
static void print_devices_json(struct json_writer *w, const struct cli *cli,
                               const struct clops_device_info *infos, int32_t count,
                               const char *config, const struct clops_device_info *in_pool,
                               int32_t pool_count, const struct pool_failure *why)
{
    json_begin_object(w);
    cli_json_header(w, cli, "clops-devices/1");
    json_key(w, "devices");
    json_begin_array(w);
    for (int32_t i = 0; i < count; i++) {
        json_begin_object(w);
        cli_json_device_members(w, &infos[i]);
        int index = pool_index_of(&infos[i], in_pool, in_pool != NULL ? pool_count : 0);
        json_key(w, "pool_device");
        if (index >= 0)
            json_int(w, index);
        else
            json_null(w);
        json_end_object(w);
    }
    json_end_array(w);
    json_key(w, "pool");
    json_begin_object(w);
    json_member_string(w, "config", config); /* null: the built-in defaults */
    json_key(w, "devices");
    if (in_pool != NULL) {
        json_begin_array(w);
        for (int32_t i = 0; i < pool_count; i++) {
            json_begin_object(w);
            json_member_int(w, "index", i);
            cli_json_device_members(w, &in_pool[i]);
            json_member_int(w, "queues", in_pool[i].queues);
            json_end_object(w);
        }
        json_end_array(w);
    } else {
        json_null(w);
    }
    cli_json_member_error(w, in_pool == NULL ? cli->lib.api->status_name(why->status) : NULL,
                          why->message);
    json_end_object(w);
    json_end_object(w);
}

struct devices_options {
    const char *config;
    int json;
};

static void take_devices_option(void *ctx, int c, char *arg)
{
    struct devices_options *o = ctx;
    if (c == 'c')
        o->config = arg;
    else if (c == 'j')
        o->json = 1;
}

static int cmd_devices(struct cli *cli, int argc, char **argv)
{
    struct devices_options options = {0};
    static const struct option own[] = {
        {"config", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {0},
    };
    struct command_options spec = {"devices", devices_help, own, take_devices_option, &options};
    int first, code = parse_options(cli, &spec, argc, argv, &first);
    if (code >= 0)
        return code;
    if (first < argc)
        return usage_error("devices", "unexpected argument '%s'", argv[first]);
    if ((code = cli_load(cli)) != CLI_OK)
        return code;

    int32_t count = 0;
    struct clops_device_info *infos = list_devices(cli->lib.api, &count);
    if (infos == NULL)
        return cli_library_error(cli, CLI_FAILED);
    if (count == 0 && !options.json)
        host_print_wrapped(stdout,
                           "No OpenCL devices found (is an ICD such as pocl-opencl-icd installed?)",
                           0, 0, text_width());

    int32_t pool_count = 0;
    struct pool_failure why = {0};
    struct clops_device_info *in_pool = pool_devices(cli, options.config, &pool_count, &code, &why);
    if (in_pool != NULL)
        code = CLI_OK;
    if (options.json) {
        struct json_writer w;
        json_init(&w, stdout, JSON_PRETTY);
        print_devices_json(&w, cli, infos, count, options.config, in_pool, pool_count, &why);
        code = cli_json_end(&w, code);
    } else {
        print_device_table(infos, count, in_pool, in_pool != NULL ? pool_count : 0);
        if (in_pool != NULL)
            print_pool_table(in_pool, pool_count,
                             options.config != NULL ? options.config : "the built-in defaults");
    }
    free(in_pool);
    free(infos);
    return code;
}

/* ---- clops ops ------------------------------------------------------------------------------ */

static const struct {
    int32_t kind;
    const char *id;   /* in JSON */
    const char *text; /* in the table */
} param_kinds[] = {
    {CLOPS_PARAM_TENSOR_IN, "tensor_in", "tensor in"},
    {CLOPS_PARAM_TENSOR_OUT, "tensor_out", "tensor out"},
    {CLOPS_PARAM_TENSOR_INOUT, "tensor_inout", "tensor inout"},
    {CLOPS_PARAM_INT64, "int64", "int64"},
    {CLOPS_PARAM_DOUBLE, "double", "double"},
    {CLOPS_PARAM_ENUM, "enum", "enum"},
    {CLOPS_PARAM_STRING, "string", "string"},
};

/* The kind's name for JSON (json = 1) or the table; "unknown" for one this clops predates. */
static const char *param_kind_name(int32_t kind, int json)
{
    for (size_t i = 0; i < sizeof param_kinds / sizeof param_kinds[0]; i++)
        if (param_kinds[i].kind == kind)
            return json ? param_kinds[i].id : param_kinds[i].text;
    return "unknown";
}

static void print_op_list(const struct clops_api *api)
{
    static const struct table_column columns[] = {
        {"name", TABLE_LEFT}, {"version", TABLE_RIGHT}, {"summary", TABLE_WRAP}};
    struct table t;
    table_init(&t, columns, 3);
    t.width = text_width();
    for (int32_t i = 0; i < api->op_count(); i++) {
        const struct clops_op *op = api->op_at(i);
        if (op == NULL)
            continue;
        table_row(&t);
        table_cell(&t, "%s", op->name);
        table_cell(&t, "%d", op->version);
        table_cell(&t, "%s", op->summary);
    }
    table_print(&t, stdout, 0);
    table_free(&t);
}

static void print_op_details(const struct clops_op *op)
{
    static const struct table_column columns[] = {
        {"name", TABLE_LEFT},   {"kind", TABLE_LEFT},    {"dtypes", TABLE_LEFT},
        {"values", TABLE_LEFT}, {"default", TABLE_LEFT}, {"doc", TABLE_WRAP},
    };
    int width = text_width();
    char *title = NULL;
    if (asprintf(&title, "%s (version %d): %s", op->name, op->version, op->summary) < 0)
        title = NULL;
    host_print_wrapped(stdout, title != NULL ? title : op->name, 0, 2, width);
    free(title);
    putchar('\n');
    host_print_wrapped(stdout, op->doc != NULL ? op->doc : "", 0, 0, width);
    printf("\nParameters, in call order:\n");
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    t.width = width;
    for (int32_t i = 0; i < op->param_count; i++) {
        const struct clops_param *p = clops_op_param(op, i);
        char dtypes[64], values[256];
        host_dtype_mask_names(p->dtypes, dtypes, sizeof dtypes);
        host_join(values, sizeof values, "|", p->enum_values);
        table_row(&t);
        table_cell(&t, "%s", p->name);
        table_cell(&t, "%s", param_kind_name(p->kind, 0));
        table_cell(&t, "%s", dtypes[0] ? dtypes : "-");
        table_cell(&t, "%s", values[0] ? values : "-");
        table_cell(&t, "%s", p->default_value != NULL ? p->default_value : "(required)");
        table_cell(&t, "%s", p->doc != NULL ? p->doc : "");
    }
    table_print(&t, stdout, 2);
    table_free(&t);
}

static void json_param(struct json_writer *w, const struct clops_param *p)
{
    json_begin_object(w);
    json_member_string(w, "name", p->name);
    json_member_string(w, "kind", param_kind_name(p->kind, 1));
    json_key(w, "dtypes");
    json_begin_array(w);
    for (int32_t dtype = 1; dtype < 32; dtype++)
        if ((p->dtypes & CLOPS_DTYPE_BIT(dtype)) && strcmp(host_dtype_name(dtype), "?") != 0)
            json_string(w, host_dtype_name(dtype));
    json_end_array(w);
    json_key(w, "enum_values");
    json_begin_array(w);
    for (int i = 0; p->enum_values != NULL && p->enum_values[i] != NULL; i++)
        json_string(w, p->enum_values[i]);
    json_end_array(w);
    json_member_string(w, "default", p->default_value); /* null: required */
    json_key(w, "required");
    json_bool(w, p->default_value == NULL);
    json_member_string(w, "doc", p->doc != NULL ? p->doc : "");
    json_end_object(w);
}

static void json_op(struct json_writer *w, const struct clops_op *op)
{
    json_begin_object(w);
    json_member_string(w, "name", op->name);
    json_member_int(w, "version", op->version);
    json_member_string(w, "summary", op->summary);
    json_member_string(w, "doc", op->doc != NULL ? op->doc : "");
    json_key(w, "params");
    json_begin_array(w);
    for (int32_t i = 0; i < op->param_count; i++)
        json_param(w, clops_op_param(op, i));
    json_end_array(w);
    json_end_object(w);
}

/* `clops ops [NAME] --json` (docs/schema/clops-ops.schema.json): every operator, or `only`. */
static int print_ops_json(const struct cli *cli, const struct clops_op *only)
{
    const struct clops_api *api = cli->lib.api;
    struct json_writer w;
    json_init(&w, stdout, JSON_PRETTY);
    json_begin_object(&w);
    cli_json_header(&w, cli, "clops-ops/1");
    json_key(&w, "operators");
    json_begin_array(&w);
    for (int32_t i = 0; i < (only != NULL ? 1 : api->op_count()); i++) {
        const struct clops_op *op = only != NULL ? only : api->op_at(i);
        if (op != NULL)
            json_op(&w, op);
    }
    json_end_array(&w);
    json_end_object(&w);
    return cli_json_end(&w, CLI_OK);
}

static void take_json_option(void *ctx, int c, char *arg)
{
    (void)arg;
    if (c == 'j')
        *(int *)ctx = 1;
}

/* parse_options for a command whose one option of its own is --json (sets *json). */
static int parse_json_options(struct cli *cli, const char *command, const char *help, int argc,
                              char **argv, int *first, int *json)
{
    static const struct option own[] = {{"json", no_argument, NULL, 'j'}, {0}};
    struct command_options spec = {command, help, own, take_json_option, json};
    return parse_options(cli, &spec, argc, argv, first);
}

static int cmd_ops(struct cli *cli, int argc, char **argv)
{
    int json = 0, first;
    int code = parse_json_options(cli, "ops", ops_help, argc, argv, &first, &json);
    if (code >= 0)
        return code;
    if (argc - first > 1)
        return usage_error("ops", "unexpected argument '%s'", argv[first + 1]);
    if ((code = cli_load(cli)) != CLI_OK)
        return code;
    const struct clops_op *op = NULL;
    if (first < argc) {
        op = cli->lib.api->op_find(argv[first]);
        if (op == NULL) {
            fprintf(stderr, "clops: %s\nRun 'clops ops' for the list.\n",
                    cli->lib.api->last_error());
            return CLI_USAGE;
        }
    }
    if (json)
        return print_ops_json(cli, op);
    if (op == NULL)
        print_op_list(cli->lib.api);
    else
        print_op_details(op);
    return CLI_OK;
}

/* ---- clops run ------------------------------------------------------------------------------ */

static const char *environment(const char *name)
{
    return getenv(name);
}

static int run_command(struct cli *cli, int argc, char **argv, int first,
                       struct run_options *options)
{
    if (first == argc)
        return usage_error("run", "%s", "missing pipeline FILE");
    if (argc - first > 1)
        return usage_error("run", "unexpected argument '%s'", argv[first + 1]);
    struct shard shard;
    if (options->shard_spec != NULL) {
        char err[1024];
        if (shard_parse(options->shard_spec, environment, &shard, err, sizeof err) != 0)
            return usage_error("run", "%s", err);
        options->shard = &shard;
    } else if (options->force) {
        return usage_error("run", "%s", "--force goes with --shard");
    }
    int code = cli_load(cli);
    return code != CLI_OK ? code : pipeline_run_file(cli, argv[first], options);
}

static void take_run_option(void *ctx, int c, char *arg)
{
    struct run_options *o = ctx;
    switch (c) {
    case 'o': o->output_dir = arg; break;
    case 's': o->sets[o->set_count++] = arg; break;
    case 'n': o->dry_run = 1; break;
    case 'q': o->quiet = 1; break;
    case 'P': o->progress = 1; break;
    case 'j': o->json = 1; break;
    case 'S': o->shard_spec = arg; break;
    case 'f': o->force = 1; break;
    case 'B': o->no_prebuild = 1; break;
    default: break;
    }
}

static int cmd_run(struct cli *cli, int argc, char **argv)
{
    static const struct option own[] = {
        {"output-dir", required_argument, NULL, 'o'}, {"set", required_argument, NULL, 's'},
        {"dry-run", no_argument, NULL, 'n'},          {"quiet", no_argument, NULL, 'q'},
        {"progress", no_argument, NULL, 'P'},         {"json", no_argument, NULL, 'j'},
        {"shard", required_argument, NULL, 'S'},      {"force", no_argument, NULL, 'f'},
        {"no-prebuild", no_argument, NULL, 'B'},      {0},
    };
    /* Every --set fits: there are fewer of them than arguments. */
    struct run_options options = {.output_dir = ".",
                                  .sets = host_xcalloc((size_t)argc, sizeof(char *))};
    struct command_options spec = {"run", run_help, own, take_run_option, &options};
    int first, code = parse_options(cli, &spec, argc, argv, &first);
    if (code < 0)
        code = run_command(cli, argc, argv, first, &options);
    free(options.sets);
    return code;
}

/* ---- clops gather --------------------------------------------------------------------------- */

static int cmd_gather(struct cli *cli, int argc, char **argv)
{
    int json = 0, first;
    int code = parse_json_options(cli, "gather", gather_help, argc, argv, &first, &json);
    if (code >= 0)
        return code;
    if (first == argc)
        return usage_error("gather", "%s", "missing DIR");
    if (argc - first > 1)
        return usage_error("gather", "unexpected argument '%s'", argv[first + 1]);
    return gather_dir(argv[first], json);
}

/* ---- clops slurm ---------------------------------------------------------------------------- */

/* An option of clops slurm's own and its value ("--tasks 4", "--tasks=4"): 1 when argv[*i] is
 * `long_name`, with *value set (NULL when it is missing). They have no short forms: sbatch's
 * -t, -o and -s, passed through, mean other things. */
static int own_option(char **argv, int argc, int *i, const char *long_name, const char **value)
{
    const char *a = argv[*i];
    size_t n = strlen(long_name);
    if (strncmp(a, long_name, n) == 0 && a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (strcmp(a, long_name) == 0) {
        *value = *i + 1 < argc ? argv[++*i] : NULL;
        return 1;
    }
    return 0;
}

static int cmd_slurm(struct cli *cli, int argc, char **argv)
{
    (void)cli;
    struct slurm_options o = {.output_dir = ".",
                              .sbatch = host_xcalloc((size_t)argc, sizeof(char *)),
                              .sets = host_xcalloc((size_t)argc, sizeof(char *))};
    int code = -1, rest = 0;
    for (int i = 1; i < argc && code < 0; i++) {
        const char *a = argv[i], *value = NULL;
        if (rest) {
            o.sbatch[o.sbatch_count++] = argv[i];
        } else if (strcmp(a, "--") == 0) {
            rest = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(slurm_help, stdout);
            code = CLI_OK;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            cli->verbose = 1;
        } else if (strcmp(a, "--submit") == 0) {
            o.submit = 1;
        } else if (own_option(argv, argc, &i, "--tasks", &value)) {
            char *end = NULL;
            long long tasks = value != NULL ? strtoll(value, &end, 10) : 0;
            if (value == NULL || *end != '\0' || tasks < 1 || tasks > SWEEP_MAX_RUNS)
                code = usage_error("slurm", "--tasks needs a number of tasks from 1, not '%s'",
                                   value != NULL ? value : "");
            o.tasks = tasks;
        } else if (own_option(argv, argc, &i, "--output-dir", &value)) {
            if (value == NULL)
                code = usage_error("slurm", "%s", "--output-dir needs a value");
            o.output_dir = value;
        } else if (own_option(argv, argc, &i, "--set", &value)) {
            if (value == NULL)
                code = usage_error("slurm", "%s", "--set needs a value");
            o.sets[o.set_count++] = (char *)value;
        } else if (a[0] == '-') {
            o.sbatch[o.sbatch_count++] = argv[i];
        } else if (o.file == NULL) {
            o.file = a;
        } else {
            code = usage_error("slurm", "unexpected argument '%s'", a);
        }
    }
    if (code < 0 && o.file == NULL)
        code = usage_error("slurm", "%s", "missing pipeline FILE");
    if (code < 0)
        code = slurm_command(&o);
    free(o.sbatch);
    free(o.sets);
    return code;
}

/* ---- clops build ---------------------------------------------------------------------------- */

static void take_build_option(void *ctx, int c, char *arg)
{
    struct build_options *o = ctx;
    if (c == 'c')
        o->config = arg;
    else if (c == 'O')
        o->ops = arg;
    else if (c == 'd')
        o->dtypes = arg;
}

static int cmd_build(struct cli *cli, int argc, char **argv)
{
    struct build_options options = {0};
    static const struct option own[] = {
        {"config", required_argument, NULL, 'c'},
        {"ops", required_argument, NULL, 'O'},
        {"dtypes", required_argument, NULL, 'd'},
        {0},
    };
    struct command_options spec = {"build", build_help, own, take_build_option, &options};
    int first, code = parse_options(cli, &spec, argc, argv, &first);
    if (code >= 0)
        return code;
    if (first < argc)
        return usage_error("build", "unexpected argument '%s'", argv[first]);
    if ((code = cli_load(cli)) != CLI_OK)
        return code;
    return build_command(cli, &options);
}

/* ---- main ----------------------------------------------------------------------------------- */

static int print_version(struct cli *cli)
{
    printf("clops %s\n", CLOPS_VERSION_STRING);
    int code = cli_load(cli);
    if (code != CLI_OK)
        return code;
    const struct clops_api *api = cli->lib.api;
    printf("libclops %s (ABI %u.%u, table of %u bytes) from %s\n", api->version(),
           (unsigned)api->abi_major, (unsigned)api->abi_minor, (unsigned)api->struct_size,
           cli->lib.path);
    return CLI_OK;
}

static const struct {
    const char *name;
    int (*run)(struct cli *cli, int argc, char **argv);
} commands[] = {
    {"devices", cmd_devices}, {"ops", cmd_ops},     {"run", cmd_run},
    {"gather", cmd_gather},   {"slurm", cmd_slurm}, {"build", cmd_build},
};

int main(int argc, char **argv)
{
    /* The library is never dlclose()d: OpenCL drivers keep process-lifetime state that is not
     * safe to unload, and leak reports need the driver's frames still mapped. */
    struct cli cli = {0};
    host_program_name = "clops";
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"verbose", no_argument, NULL, 'v'},
        {"version", no_argument, NULL, 'V'},
        {0},
    };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+hvV", options, NULL)) != -1) {
        if (c == 'h') {
            fputs(global_help, stdout);
            return CLI_OK;
        } else if (c == 'v') {
            cli.verbose = 1;
        } else if (c == 'V') {
            return print_version(&cli);
        } else {
            return usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind == argc) {
        fputs(global_help, stderr);
        return CLI_USAGE;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[optind], commands[i].name) == 0)
            return commands[i].run(&cli, argc - optind, argv + optind);
    return usage_error(NULL, "unknown command '%s'", argv[optind]);
}
