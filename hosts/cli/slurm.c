/* slurm.c — `clops slurm FILE.cfg`: the batch script of a Slurm job array whose task K runs
 * `clops run --shard auto`, shard K of N of the pipeline's sweep (shard.h), printed, or given
 * to sbatch. Every path in it is absolute, so that it runs from any directory of any node that
 * sees the same files. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "formats.h"
#include "pipeline_source.h"
#include "util.h"

/* `text` in single quotes for the shell ('\'' for a quote inside). */
static void put_quoted(FILE *out, const char *text)
{
    fputc('\'', out);
    for (const char *c = text; *c != '\0'; c++)
        if (*c == '\'')
            fputs("'\\''", out);
        else
            fputc(*c, out);
    fputc('\'', out);
}

/* mkdir -p. 0, or -1 with errno. */
static int make_dirs(const char *path)
{
    char *copy = host_xstrdup(path);
    for (char *c = copy + 1; *c != '\0'; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(copy, 0777) != 0 && errno != EEXIST) {
            free(copy);
            return -1;
        }
        *c = '/';
    }
    int rc = mkdir(copy, 0777) != 0 && errno != EEXIST ? -1 : 0;
    free(copy);
    return rc;
}

/* The job's name: the pipeline file's name without its directory and extension. */
static void job_name(const char *file, char *out, size_t size)
{
    const char *base = strrchr(file, '/');
    base = base != NULL ? base + 1 : file;
    snprintf(out, size, "clops-%s", base);
    char *dot = strrchr(out, '.');
    if (dot != NULL && strcmp(dot, ".cfg") == 0)
        *dot = '\0';
    /* It names the job and the script's file: nothing the shell or sbatch would read. */
    for (char *c = out; *c != '\0'; c++)
        if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-')
            *c = '_';
}

static void write_script(FILE *out, const struct slurm_options *o, const char *clops,
                         const char *file, const char *dir, int64_t runs)
{
    char name[256];
    job_name(file, name, sizeof name);
    fprintf(out, "#!/bin/bash\n");
    fprintf(out,
            "# A Slurm job array made by `clops slurm`: array task K runs shard K of %lld of\n",
            (long long)o->tasks);
    fprintf(out, "# %s (%lld runs; run i is shard i %% %lld's), writing into\n# %s\n", file,
            (long long)runs, (long long)o->tasks, dir);
    fprintf(out, "# with a manifest per shard in its .clops/. Then: clops gather %s\n", dir);
    fprintf(out, "#SBATCH --job-name=%s\n", name);
    fprintf(out, "#SBATCH --array=0-%lld\n", (long long)o->tasks - 1);
    fprintf(out, "#SBATCH --output=%s/.clops/slurm-%%A_%%a.out\n", dir);
    for (int i = 0; i < o->sbatch_count; i++)
        fprintf(out, "#SBATCH %s\n", o->sbatch[i]);
    fprintf(out, "exec ");
    put_quoted(out, clops);
    fprintf(out, " run --shard auto --quiet --output-dir ");
    put_quoted(out, dir);
    for (int i = 0; i < o->set_count; i++) {
        fprintf(out, " --set ");
        put_quoted(out, o->sets[i]);
    }
    fputc(' ', out);
    put_quoted(out, file);
    fputc('\n', out);
}

/* sbatch on the script; prints the job id. */
static int submit(const char *script, int64_t tasks)
{
    char *command = NULL;
    size_t length = 0;
    FILE *text = open_memstream(&command, &length);
    if (text == NULL)
        return CLI_FAILED;
    fputs("sbatch --parsable ", text);
    put_quoted(text, script);
    fclose(text);
    FILE *p = popen(command, "r");
    free(command);
    if (p == NULL) {
        fprintf(stderr, "clops: slurm: cannot run sbatch: %s\n", strerror(errno));
        return CLI_FAILED;
    }
    char line[256] = "";
    if (fgets(line, sizeof line, p) == NULL)
        line[0] = '\0';
    int status = pclose(p);
    line[strcspn(line, ";\n")] = '\0'; /* --parsable: "JOBID" or "JOBID;CLUSTER" */
    if (status != 0 || line[0] == '\0') {
        fprintf(stderr, "clops: slurm: sbatch %s failed (its message is above)\n", script);
        return CLI_FAILED;
    }
    fprintf(stderr, "Submitted array job %s: %lld tasks (%s)\n", line, (long long)tasks, script);
    printf("%s\n", line);
    return CLI_OK;
}

int slurm_command(const struct slurm_options *o)
{
    struct pl_source src;
    int errors = pipeline_source_load(&src, o->file, o->sets, o->set_count);
    int64_t runs = errors == 0 ? sweep_run_count(&src.sweep) : 0;
    int bad_set = src.bad_set;
    pipeline_source_free(&src);
    if (errors > 0) {
        fprintf(stderr, "clops: slurm: %s: %d error%s\n", o->file, errors, errors == 1 ? "" : "s");
        return bad_set ? CLI_USAGE : CLI_CONFIG;
    }
    struct slurm_options opts = *o;
    if (opts.tasks == 0)
        opts.tasks = runs;
    if (opts.tasks > runs)
        fprintf(stderr,
                "clops: slurm: %lld tasks for %lld runs: tasks %lld .. %lld will have "
                "nothing to run\n",
                (long long)opts.tasks, (long long)runs, (long long)runs, (long long)opts.tasks - 1);
    char *logs = host_xcalloc(strlen(o->output_dir) + 8, 1);
    sprintf(logs, "%s/.clops", o->output_dir);
    /* The tasks' logs go there, and Slurm does not make a missing directory. */
    if (make_dirs(logs) != 0) {
        fprintf(stderr, "clops: slurm: cannot make %s: %s\n", logs, strerror(errno));
        free(logs);
        return CLI_FAILED;
    }
    free(logs);
    char *clops = realpath("/proc/self/exe", NULL), *file = realpath(o->file, NULL),
         *dir = realpath(o->output_dir, NULL);
    int code = CLI_OK;
    if (clops == NULL || file == NULL || dir == NULL) {
        fprintf(stderr, "clops: slurm: cannot make the paths absolute: %s\n", strerror(errno));
        code = CLI_FAILED;
    } else if (!o->submit) {
        write_script(stdout, &opts, clops, file, dir, runs);
    } else {
        char *script = NULL;
        char name[256];
        job_name(file, name, sizeof name);
        if (asprintf(&script, "%s/.clops/%s.sbatch", dir, name) < 0)
            script = NULL;
        char *text = NULL;
        size_t length = 0;
        FILE *f = open_memstream(&text, &length);
        char err[1024];
        if (f != NULL) {
            write_script(f, &opts, clops, file, dir, runs);
            fclose(f);
        }
        if (script == NULL || f == NULL || fmt_write_bytes(script, text, length, err, sizeof err)) {
            fprintf(stderr, "clops: slurm: cannot write the script: %s\n",
                    script == NULL || f == NULL ? "out of memory" : err);
            code = CLI_FAILED;
        } else {
            code = submit(script, opts.tasks);
        }
        free(text);
        free(script);
    }
    free(clops);
    free(file);
    free(dir);
    return code;
}
