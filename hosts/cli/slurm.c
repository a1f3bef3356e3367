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

/* `text` in double quotes for an #SBATCH line. sbatch reads those lines with its own tokenizer
 * (src/sbatch/opt.c), not a shell: words end at blanks, an unquoted '#' ends the line, quotes
 * are stripped, and a backslash takes the next character as it is, inside quotes too. */
static void put_sbatch_quoted(FILE *out, const char *text)
{
    fputc('"', out);
    for (const char *c = text; *c != '\0'; c++) {
        if (*c == '"' || *c == '\\')
            fputc('\\', out);
        fputc(*c, out);
    }
    fputc('"', out);
}

/* Whether the first `length` bytes of `text` are a word that needs no quotes anywhere: an
 * option's name ("--gres", "-t") or a plain value. */
static int is_plain_word(const char *text, size_t length)
{
    for (size_t i = 0; i < length; i++)
        if (!isalnum((unsigned char)text[i]) && text[i] != '-' && text[i] != '_')
            return 0;
    return length > 0;
}

/* One argument for sbatch as an #SBATCH line: "--name=value" as --name="value", anything else
 * but a plain word quoted whole (sbatch strips the quotes either way). */
static void put_sbatch_option(FILE *out, const char *arg)
{
    size_t name = strcspn(arg, "=");
    fputs("#SBATCH ", out);
    if (arg[name] == '=' && is_plain_word(arg, name)) {
        fwrite(arg, 1, name + 1, out);
        put_sbatch_quoted(out, arg + name + 1);
    } else if (is_plain_word(arg, strlen(arg))) {
        fputs(arg, out);
    } else {
        put_sbatch_quoted(out, arg);
    }
    fputc('\n', out);
}

/* The tasks' logs, DIR/.clops/slurm-JOB_TASK.out, as a Slurm filename pattern (--output): '%'
 * starts a replacement there (%A, %a), so each '%' of `dir` is written "%%". Allocated. */
static char *log_pattern(const char *dir)
{
    static const char logs[] = "/.clops/slurm-%A_%a.out";
    char *out = host_xcalloc(2 * strlen(dir) + sizeof logs, 1), *o = out;
    for (const char *c = dir; *c != '\0'; c++) {
        if (*c == '%')
            *o++ = '%';
        *o++ = *c;
    }
    memcpy(o, logs, sizeof logs);
    return out;
}

/* A value the script holds, refused when it has a control character: each value stays on its
 * line (a comment, an #SBATCH line, the command), and a newline there would start a command
 * that runs on the cluster, a carriage return or an escape would hide text from a reader. 0
 * when the value is clean; else the message names `what` and the character. */
static int refuse_control_characters(const char *what, const char *value)
{
    const char *c = value;
    while (*c != '\0' && (unsigned char)*c >= 0x20 && *c != 0x7f)
        c++;
    if (*c == '\0')
        return 0;
    char character[32] = "a newline";
    if (*c == '\r')
        snprintf(character, sizeof character, "a carriage return");
    else if (*c != '\n')
        snprintf(character, sizeof character, "control character 0x%02x", (unsigned char)*c);
    fprintf(stderr,
            "clops: slurm: %s: value '%.*s...' has %s at byte %d; expected no control "
            "characters: the job script holds each value on one line, where a newline would "
            "start a command\n",
            what, (int)(c - value), value, character, (int)(c - value));
    return 1;
}

/* Every value of the command line that the script would hold; 0 when all are clean. */
static int refuse_hostile_options(const struct slurm_options *o)
{
    int bad = refuse_control_characters("FILE", o->file) +
              refuse_control_characters("--output-dir", o->output_dir);
    for (int i = 0; i < o->set_count; i++)
        bad += refuse_control_characters("--set", o->sets[i]);
    for (int i = 0; i < o->sbatch_count; i++) {
        /* "--partition=x" is named --partition, with x its value. */
        const char *arg = o->sbatch[i];
        size_t name = strcspn(arg, "=");
        char what[64] = "sbatch option";
        if (arg[0] == '-' && arg[name] == '=' && name < sizeof what) {
            memcpy(what, arg, name);
            what[name] = '\0';
            arg += name + 1;
        }
        bad += refuse_control_characters(what, arg);
    }
    return bad;
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
    /* Paths and values are quoted everywhere: for the shell in the comments (which a reader
     * copies) and the command, for sbatch in the #SBATCH lines. */
    fprintf(out, "#!/bin/bash\n");
    fprintf(out,
            "# A Slurm job array made by `clops slurm`: array task K runs shard K of %lld of\n# ",
            (long long)o->tasks);
    put_quoted(out, file);
    fprintf(out, " (%lld runs; run i is shard i %% %lld's), writing into\n# ", (long long)runs,
            (long long)o->tasks);
    put_quoted(out, dir);
    fprintf(out, "\n# with a manifest per shard in its .clops/. Then: clops gather ");
    put_quoted(out, dir);
    fprintf(out, "\n#SBATCH --job-name=%s\n", name);
    fprintf(out, "#SBATCH --array=0-%lld\n", (long long)o->tasks - 1);
    char *logs = log_pattern(dir);
    fprintf(out, "#SBATCH --output=");
    put_sbatch_quoted(out, logs);
    fputc('\n', out);
    free(logs);
    for (int i = 0; i < o->sbatch_count; i++)
        put_sbatch_option(out, o->sbatch[i]);
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
    if (refuse_hostile_options(o) != 0)
        return CLI_USAGE;
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
    } else if (refuse_control_characters("the path of clops", clops) +
                   refuse_control_characters("FILE's absolute path", file) +
                   refuse_control_characters("--output-dir's absolute path", dir) !=
               0) {
        code = CLI_USAGE; /* a directory or link on the way added one */
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
