/* fuzz_pipeline.c — libFuzzer harness for the pipeline parser and validator (hosts/cli
 * pipeline.c, pipeline_set.c, operators.c): pipeline_load() of any text against the plugin's
 * operator descriptors and checks (check_sized, with described tensors and no pool), without a
 * device and without running a step. Leading lines "//set key.path=value" (comments to
 * libconfig) are also applied as --set overrides. File tensors resolve against a private
 * directory holding small files under the names the example pipelines use (data/laplace100.mtx,
 * ...). Validation messages go to stderr: run with -close_fd_mask=2 to keep them out of the log.
 * The stack is small (fuzz_small_stack), so that `${...}` nested without a limit overflows it
 * within libFuzzer's default input length. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "entry.h"
#include "fuzz_util.h"
#include "pipeline.h"
#include "pipeline_source.h"
#include "pipeline_sweep.h"

enum { MAX_SETS = 4, PATH_SIZE = 512 };

static const char set_prefix[] = "//set ";

static char pipeline_path[PATH_SIZE];

static void write_data_file(const char *name, const void *bytes, size_t size)
{
    char path[PATH_SIZE];
    fuzz_temp_path(name, path, sizeof path);
    fuzz_write_file(path, bytes, size);
}

/* A 1.0 .npy of `count` f64 values 1, 2, ... with the header `dict`; `count` may differ from
 * what the header says (a truncated file). */
static void write_npy(const char *name, const char *dict, int count)
{
    unsigned char file[256] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    size_t header = strlen(dict);
    file[8] = (unsigned char)header;
    memcpy(file + 10, dict, header);
    size_t size = 10 + header;
    for (int i = 0; i < count; i++, size += sizeof(double))
        memcpy(file + size, &(double){i + 1}, sizeof(double));
    write_data_file(name, file, size);
}

static void make_data_files(void)
{
    char dir[PATH_SIZE];
    fuzz_temp_path("data", dir, sizeof dir);
    if (mkdir(dir, 0700) != 0)
        abort();
    static const char laplace[] = "%%MatrixMarket matrix coordinate real symmetric\n"
                                  "3 3 5\n1 1 4\n2 1 -1\n2 2 4\n3 2 -1\n3 3 4\n";
    static const char rhs[] = "%%MatrixMarket matrix array real general\n3 1\n2\n4\n10\n";
    static const char bad_counts[] = "%%MatrixMarket matrix coordinate real general\n"
                                     "3 3 3\n1 1 1\n2 2 2\n";
    static const char raw[24] = {1, 2, 3, 4, 5, 6};
    write_data_file("data/laplace100.mtx", laplace, sizeof laplace - 1);
    write_data_file("data/laplace100_b.mtx", rhs, sizeof rhs - 1);
    write_data_file("data/bad_counts.mtx", bad_counts, sizeof bad_counts - 1);
    write_data_file("data/b.raw", raw, sizeof raw);
    write_npy("data/a.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n", 6);
    write_npy("data/truncated.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (12, 7), }\n",
              10);
    fuzz_temp_path("pipeline.cfg", pipeline_path, sizeof pipeline_path);
}

/* The "//set " lines at the start of `text`, cut out of it in place (the file keeps them as
 * comments, as a blank line, so line numbers are unchanged). */
static int take_sets(char *text, char **sets)
{
    int count = 0;
    for (char *line = text; count < MAX_SETS && strncmp(line, set_prefix, strlen(set_prefix)) == 0;
         count++) {
        char *end = strchr(line, '\n');
        size_t length = end != NULL ? (size_t)(end - line) : strlen(line);
        sets[count] = strndup(line + strlen(set_prefix), length - strlen(set_prefix));
        if (end == NULL)
            return count + 1;
        line = end + 1;
    }
    return count;
}

/* Runs of a sweep loaded per input: enough to reach every run-dependent path, few enough to stay
 * fast. */
enum { MAX_RUNS = 3 };

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_small_stack();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fuzz_has_include(data, size) || memchr(data, '\0', size) != NULL)
        return -1;
    if (pipeline_path[0] == '\0')
        make_data_files();
    fuzz_write_file(pipeline_path, data, size);
    char *text = strndup((const char *)data, size);
    char *sets[MAX_SETS];
    int set_count = take_sets(text, sets);

    /* The source (params, ${...}, sweep, --set), then the pipeline of each of its first runs. */
    struct pl_source src;
    if (pipeline_source_load(&src, pipeline_path, sets, set_count) == 0) {
        const int64_t runs = sweep_run_count(&src.sweep);
        for (int64_t r = 0; r < runs && r < MAX_RUNS; r++) {
            struct pl_run run;
            pipeline_source_run(&src, r, &run);
            struct pipeline pl;
            if (pipeline_load(&pl, &src, &run, entry_table(CLOPS_ABI_MAJOR), 1) == 0)
                for (int i = 0; i < pl.step_count; i++)
                    (void)step_work(&pl, &pl.steps[i]); /* the summary's rates, from the shapes */
            pipeline_free(&pl);
            pl_run_free(&run);
        }
    }
    pipeline_source_free(&src);

    for (int i = 0; i < set_count; i++)
        free(sets[i]);
    free(text);
    return 0;
}
