/* gather.c — `clops gather DIR`: reads every shard manifest in DIR/.clops (manifest.h), checks
 * that they make one complete set (every shard of one pipeline present, succeeded, each file
 * it lists intact) and prints the combined summary, or with --json a clops-gather/1 document.
 * It reads files only: no service, no library, nothing but the output directory. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "manifest.h"
#include "names.h"
#include "table.h"
#include "util.h"

/* What gather found of one shard K of the set. */
struct gathered {
    struct manifest_doc doc;
    int present; /* a manifest of shard K of N */
    int readable;
    const char *state; /* "ok", "missing", "unreadable", "mismatch", "failed", "invalid",
                          "incomplete", "corrupt" */
    int64_t runs, failed_runs;
    struct manifest_file_counts files;
    char **problems;
    int problem_count;
};

struct gather {
    const char *dir;
    int json;
    int64_t count; /* N of the set */
    struct gathered *shards;
    char **problems; /* of the set as a whole (other manifests, runs in no shard) */
    int problem_count;
};

static void add_problem(char ***list, int *count, const char *message)
{
    char **grown = host_xcalloc((size_t)*count + 1, sizeof *grown);
    if (*count > 0)
        memcpy(grown, *list, (size_t)*count * sizeof *grown);
    free(*list);
    *list = grown;
    (*list)[(*count)++] = host_xstrdup(message);
}

static void shard_problem(struct gathered *g, const char *fmt, ...) HOST_PRINTF(2, 3);
static void shard_problem(struct gathered *g, const char *fmt, ...)
{
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    add_problem(&g->problems, &g->problem_count, message);
}

static void file_problem(void *ctx, const char *message)
{
    shard_problem(ctx, "%s", message);
}

/* The manifests' names in DIR/.clops, sorted (shard-0-of-4.json before shard-1-of-4.json). */
static int by_shard(const void *a, const void *b)
{
    int64_t ka, na, kb, nb;
    shard_manifest_name(*(char *const *)a, &ka, &na);
    shard_manifest_name(*(char *const *)b, &kb, &nb);
    return na != nb ? (na < nb ? -1 : 1) : ka != kb ? (ka < kb ? -1 : 1) : 0;
}

static char **list_manifests(const char *folder, int *count)
{
    DIR *d = opendir(folder);
    *count = 0;
    if (d == NULL)
        return NULL;
    char **names = NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t k, n;
        if (shard_manifest_name(e->d_name, &k, &n) == 0)
            add_problem(&names, count, e->d_name);
    }
    closedir(d);
    if (*count > 1)
        qsort(names, (size_t)*count, sizeof *names, by_shard);
    return names;
}

/* A manifest's runs: each of the shard's (i % N == K, once each), succeeded. */
static void judge_runs(struct gathered *g, int64_t k, int64_t n)
{
    const struct json_value *runs = g->doc.runs;
    int64_t expected = shard_run_count(&(struct shard){.index = k, .count = n}, g->doc.run_count);
    g->runs = runs->count;
    for (int r = 0; r < runs->count; r++) {
        const struct json_value *run = &runs->items[r];
        int64_t index = -1;
        const char *status = json_member_text(run, "status");
        const char *label = json_member_text(run, "label");
        const char *error = json_member_text(run, "error");
        if (json_member_integer(run, "index", &index) != 0 || index % n != k || index < 0 ||
            index >= g->doc.run_count || (index - k) / n != r) {
            shard_problem(g,
                          "its manifest lists run %lld out of place (shard %lld/%lld runs %lld, "
                          "%lld + %lld, ...)",
                          (long long)index, (long long)k, (long long)n, (long long)k, (long long)k,
                          (long long)n);
            g->failed_runs++;
        } else if (status == NULL || strcmp(status, "ok") != 0) {
            shard_problem(g, "run %lld%s%s%s %s%s%s", (long long)index,
                          label != NULL && label[0] ? " (" : "", label != NULL ? label : "",
                          label != NULL && label[0] ? ")" : "",
                          status != NULL ? status : "has no status", error != NULL ? ": " : "",
                          error != NULL ? error : "");
            g->failed_runs++;
        }
    }
    if (runs->count != expected) {
        shard_problem(g, "its manifest lists %d runs; shard %lld/%lld has %lld", runs->count,
                      (long long)k, (long long)n, (long long)expected);
        g->failed_runs += runs->count < expected ? expected - runs->count : 0;
    }
}

/* Reads shard K's manifest and judges it against the set's first (`ref`, NULL for itself). */
static void judge_shard(struct gather *G, int64_t k, const struct manifest_doc *ref)
{
    struct gathered *g = &G->shards[k];
    char *path = shard_manifest_path(G->dir, k, G->count), err[2048], why[512];
    g->present = access(path, F_OK) == 0;
    if (!g->present) {
        g->state = "missing";
        shard_problem(g, "missing: no manifest %s (the shard did not run, or did not end)", path);
    } else if (manifest_read(path, &g->doc, err, sizeof err) != 0) {
        g->state = "unreadable";
        shard_problem(g, "%s", err);
    } else if (ref != NULL && !manifest_same_set(&g->doc, ref->pipeline_sha256, ref->sets, NULL, 0,
                                                 ref->run_count, ref->count, why, sizeof why)) {
        g->readable = 1;
        g->state = "mismatch";
        shard_problem(g, "not of the same set as %s: %s", ref->file, why);
    } else if (g->doc.index != k) {
        g->readable = 1;
        g->state = "mismatch";
        shard_problem(g, "%s says it is shard %lld", path, (long long)g->doc.index);
    } else {
        g->readable = 1;
        judge_runs(g, k, G->count);
        int bad = manifest_check_files(&g->doc, G->dir, file_problem, g, &g->files);
        if (strcmp(g->doc.status, "ok") != 0 && g->failed_runs == 0) {
            const char *error = json_member_text(&g->doc.root, "error");
            shard_problem(g, "its manifest says %s%s%s", g->doc.status, error ? ": " : "",
                          error ? error : "");
        }
        g->state = strcmp(g->doc.status, "invalid") == 0                    ? "invalid"
                   : strcmp(g->doc.status, "ok") != 0 || g->failed_runs > 0 ? "failed"
                   : bad > 0                                                ? "corrupt"
                                                                            : "ok";
    }
    free(path);
}

/* A manifest's text in a cell, escaped (it could drive the terminal); "-" for none. */
static void cell_escaped(struct table *t, const char *text)
{
    char *shown = name_escaped(text != NULL ? text : "-");
    table_cell(t, "%s", shown);
    free(shown);
}

static void print_table(const struct gather *G)
{
    static const struct table_column columns[] = {
        {"shard", TABLE_RIGHT}, {"host", TABLE_LEFT},   {"device", TABLE_WRAP},
        {"runs", TABLE_RIGHT},  {"files", TABLE_RIGHT}, {"time s", TABLE_RIGHT},
        {"status", TABLE_LEFT},
    };
    struct table t;
    table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
    t.width = host_output_width(stdout, 100);
    for (int64_t k = 0; k < G->count; k++) {
        const struct gathered *g = &G->shards[k];
        table_row(&t);
        table_cell(&t, "%lld/%lld", (long long)k, (long long)G->count);
        cell_escaped(&t, g->readable ? g->doc.host : NULL);
        cell_escaped(&t, g->readable ? g->doc.device : NULL);
        table_cell(&t, g->readable ? "%lld" : "-", (long long)g->runs);
        table_cell(&t, g->readable ? "%lld" : "-", (long long)g->files.files);
        if (g->readable && !isnan(g->doc.time_ms))
            table_cell(&t, "%.1f", g->doc.time_ms / 1000.0);
        else
            table_cell(&t, "-");
        table_cell(&t, "%s", g->state);
    }
    table_print(&t, stdout, 0);
    table_free(&t);
}

struct totals {
    int64_t shards_ok, runs, files, bytes, intact, intact_bytes, failures;
    double ms, longest_ms;
};

static struct totals sum(const struct gather *G)
{
    struct totals t = {0};
    for (int64_t k = 0; k < G->count; k++) {
        const struct gathered *g = &G->shards[k];
        t.shards_ok += strcmp(g->state, "ok") == 0;
        t.runs += g->runs;
        t.files += g->files.files;
        t.bytes += g->files.bytes;
        t.intact += g->files.intact;
        t.intact_bytes += g->files.intact_bytes;
        t.failures += g->failed_runs;
        if (g->readable && !isnan(g->doc.time_ms)) {
            t.ms += g->doc.time_ms;
            t.longest_ms = fmax(t.longest_ms, g->doc.time_ms);
        }
    }
    return t;
}

static void json_problems(struct json_writer *w, char **list, int count)
{
    json_key(w, "problems");
    json_begin_array(w);
    for (int i = 0; i < count; i++)
        json_string(w, list[i]);
    json_end_array(w);
}

static int print_json(const struct gather *G, const struct manifest_doc *ref, int complete)
{
    struct totals t = sum(G);
    struct json_writer w;
    json_init(&w, stdout, JSON_PRETTY);
    json_begin_object(&w);
    json_member_string(&w, "schema", "clops-gather/1");
    json_member_string(&w, "dir", G->dir);
    json_member_string(&w, "pipeline", ref != NULL ? ref->pipeline : NULL);
    json_member_string(&w, "pipeline_sha256", ref != NULL ? ref->pipeline_sha256 : NULL);
    json_member_int(&w, "shard_count", G->count);
    json_member_int(&w, "run_count", ref != NULL ? ref->run_count : 0);
    json_key(&w, "shards");
    json_begin_array(&w);
    for (int64_t k = 0; k < G->count; k++) {
        const struct gathered *g = &G->shards[k];
        char *path = shard_manifest_path(G->dir, k, G->count);
        json_begin_object(&w);
        json_member_int(&w, "index", k);
        json_member_string(&w, "manifest", g->present ? path : NULL);
        json_member_string(&w, "status", g->state);
        json_member_string(&w, "host", g->readable ? g->doc.host : NULL);
        json_member_string(&w, "device", g->readable ? g->doc.device : NULL);
        json_member_int(&w, "runs", g->runs);
        json_member_int(&w, "failed_runs", g->failed_runs);
        json_member_int(&w, "files", g->files.files);
        json_member_int(&w, "bytes", g->files.bytes);
        json_member_double(&w, "time_ms", g->readable ? g->doc.time_ms : NAN);
        json_problems(&w, g->problems, g->problem_count);
        json_end_object(&w);
        free(path);
    }
    json_end_array(&w);
    json_member_int(&w, "runs", t.runs);
    json_member_int(&w, "files", t.files);
    json_member_int(&w, "bytes", t.bytes);
    json_member_int(&w, "failures", t.failures);
    json_member_double(&w, "time_ms", t.ms);
    json_member_double(&w, "longest_shard_ms", t.longest_ms);
    json_problems(&w, G->problems, G->problem_count);
    json_member_bool(&w, "complete", complete);
    json_member_int(&w, "exit_code", complete ? CLI_OK : CLI_FAILED);
    json_end_object(&w);
    if (json_finish(&w) != JSON_OK) {
        fprintf(stderr, "clops: cannot write the output\n");
        return CLI_FAILED;
    }
    return complete ? CLI_OK : CLI_FAILED;
}

/* One problem on stderr, escaped: it quotes manifests, whose names and texts may hold
 * anything, a terminal's escape sequences included. */
static void print_problem(const char *shard, const char *message)
{
    char *shown = name_escaped(message);
    fprintf(stderr, "clops: gather: %s%s\n", shard, shown);
    free(shown);
}

/* Every problem on stderr, each shard's named. */
static void print_problems(const struct gather *G)
{
    for (int i = 0; i < G->problem_count; i++)
        print_problem("", G->problems[i]);
    for (int64_t k = 0; k < G->count; k++) {
        char shard[64];
        snprintf(shard, sizeof shard, "shard %lld/%lld: ", (long long)k, (long long)G->count);
        for (int i = 0; i < G->shards[k].problem_count; i++)
            print_problem(shard, G->shards[k].problems[i]);
    }
}

static void print_summary(const struct gather *G, const struct manifest_doc *ref, int complete)
{
    struct totals t = sum(G);
    char bytes[32], files[64] = "";
    host_format_bytes(t.intact_bytes, bytes, sizeof bytes);
    /* Only what was found intact is called so: "4 of 6 files" when some are missing or changed. */
    if (t.intact != t.files)
        snprintf(files, sizeof files, "%lld of ", (long long)t.intact);
    char *pipeline = name_escaped(ref->pipeline);
    printf("Pipeline %s: %lld runs in %lld shards (%s/.clops)\n\n", pipeline,
           (long long)ref->run_count, (long long)G->count, G->dir);
    free(pipeline);
    print_table(G);
    printf("\n%s: %lld of %lld shards ok, %lld runs, %s%lld files (%s) intact, %lld failed "
           "run%s; %.1f s of run time (the longest shard %.1f s)\n",
           complete ? "Complete" : "Incomplete", (long long)t.shards_ok, (long long)G->count,
           (long long)t.runs, files, (long long)t.files, bytes, (long long)t.failures,
           t.failures == 1 ? "" : "s", t.ms / 1000.0, t.longest_ms / 1000.0);
}

int gather_dir(const char *dir, int json)
{
    char *folder = host_xcalloc(strlen(dir) + 8, 1);
    sprintf(folder, "%s/.clops", dir);
    int count = 0;
    char **names = list_manifests(folder, &count);
    if (count == 0) {
        fprintf(stderr,
                "clops: gather: %s: no shard manifests (shard-K-of-N.json); run 'clops run "
                "--shard K/N --output-dir %s FILE.cfg' first\n",
                folder, dir);
        free(folder);
        return CLI_FAILED;
    }
    struct gather G = {.dir = dir, .json = json};
    /* The set is the one of the first manifest that can be read; N is its shard count. */
    struct manifest_doc ref = {0};
    char err[2048];
    int have_ref = 0;
    for (int i = 0; i < count && !have_ref; i++) {
        char *path = host_xcalloc(strlen(folder) + strlen(names[i]) + 2, 1);
        sprintf(path, "%s/%s", folder, names[i]);
        have_ref = manifest_read(path, &ref, err, sizeof err) == 0;
        if (!have_ref)
            manifest_doc_free(&ref);
        free(path);
    }
    if (have_ref && ref.count < 1) {
        snprintf(err, sizeof err, "%s: shard.count %lld", ref.file, (long long)ref.count);
        have_ref = 0;
    }
    if (!have_ref) {
        char *shown = name_escaped(err);
        fprintf(stderr, "clops: gather: no readable manifest in %s: %s\n", folder, shown);
        free(shown);
        for (int i = 0; i < count; i++)
            free(names[i]);
        free(names);
        free(folder);
        return CLI_FAILED;
    }
    G.count = ref.count;
    G.shards = host_xcalloc((size_t)G.count, sizeof *G.shards);
    for (int64_t k = 0; k < G.count; k++)
        judge_shard(&G, k, &ref);
    /* Manifests of another shard count: another set, left in the same directory. */
    for (int i = 0; i < count; i++) {
        int64_t k, n;
        shard_manifest_name(names[i], &k, &n);
        char message[600];
        if (n != G.count || k >= n) {
            snprintf(message, sizeof message,
                     "%s/%s is of another set of %lld shards (this set has %lld); remove it",
                     folder, names[i], (long long)n, (long long)G.count);
            add_problem(&G.problems, &G.problem_count, message);
        }
        free(names[i]);
    }
    free(names);
    int complete = G.problem_count == 0;
    for (int64_t k = 0; k < G.count; k++)
        complete &= strcmp(G.shards[k].state, "ok") == 0;
    print_problems(&G);
    int code = complete ? CLI_OK : CLI_FAILED;
    if (json)
        code = print_json(&G, &ref, complete);
    else
        print_summary(&G, &ref, complete);
    for (int64_t k = 0; k < G.count; k++) {
        manifest_doc_free(&G.shards[k].doc);
        for (int i = 0; i < G.shards[k].problem_count; i++)
            free(G.shards[k].problems[i]);
        free(G.shards[k].problems);
    }
    for (int i = 0; i < G.problem_count; i++)
        free(G.problems[i]);
    free(G.problems);
    free(G.shards);
    manifest_doc_free(&ref);
    free(folder);
    return code;
}
