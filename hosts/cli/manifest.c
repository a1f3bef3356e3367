/* manifest.c — shard manifests (manifest.h; schema clops-shard/1): written as one JSON text,
 * atomically, when a shard ends; read back as a tree to judge a shard and its files. */
#include "manifest.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_json.h"
#include "formats.h"
#include "host_os.h"
#include "names.h"
#include "run_json.h"
#include "util.h"

/* ---- writing ------------------------------------------------------------------------------ */

int manifest_begin(struct manifest *m, const struct shard *shard, const char *path,
                   const struct pl_source *src, const struct run_options *options, char *err,
                   size_t size)
{
    memset(m, 0, sizeof *m);
    m->shard = shard;
    m->pipeline = path;
    m->src = src;
    m->options = options;
    m->device.gpu_count = -1;
    m->device.gpu_index = -1;
    m->start_ms = host_now_ms();
    time_t now = time(NULL);
    struct tm utc;
    if (host_utc_time(now, &utc) != 0)
        memset(&utc, 0, sizeof utc);
    strftime(m->started, sizeof m->started, "%Y-%m-%dT%H:%M:%SZ", &utc);
    int64_t bytes;
    if (sha256_file(path, m->pipeline_sha256, &bytes) != 0) {
        snprintf(err, size, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void manifest_add_run(struct manifest *m, int64_t index, const char *status, int code,
                      const char *error, double ms, const struct pipeline *pl,
                      const struct run_result *result)
{
    struct manifest_run *grown = host_xcalloc((size_t)m->run_count + 1, sizeof *grown);
    if (m->run_count > 0)
        memcpy(grown, m->runs, (size_t)m->run_count * sizeof *grown);
    free(m->runs);
    m->runs = grown;
    struct manifest_run *r = &m->runs[m->run_count++];
    memset(r, 0, sizeof *r);
    r->index = index;
    r->status = status;
    r->code = code;
    r->error = error != NULL && error[0] != '\0' ? host_xstrdup(error) : NULL;
    r->ms = ms;
    if (pl == NULL || result == NULL)
        return;
    r->files = host_xcalloc((size_t)(result->output_count > 0 ? result->output_count : 1),
                            sizeof *r->files);
    for (int o = 0; o < result->output_count && o < pl->output_count; o++) {
        const struct output_result *out = &result->outputs[o];
        if (!out->written)
            continue;
        struct manifest_file *f = &r->files[r->file_count++];
        f->file = host_xstrdup(pl->outputs[o].name);
        f->path = host_xstrdup(out->path);
        f->bytes = out->bytes;
        memcpy(f->sha256, out->sha256, sizeof f->sha256);
    }
}

static void write_shard(struct json_writer *w, const struct shard *s)
{
    json_key(w, "shard");
    json_begin_object(w);
    json_member_int(w, "index", s->index);
    json_member_int(w, "count", s->count);
    json_member_string(w, "split", "round-robin");
    json_member_string(w, "source", s->source);
    json_member_string(w, "variables", s->variables);
    json_end_object(w);
}

static void member_int_or_null(struct json_writer *w, const char *key, int64_t value, int known)
{
    json_key(w, key);
    if (known)
        json_int(w, value);
    else
        json_null(w);
}

static void write_device(struct json_writer *w, const struct manifest *m)
{
    char host[256];
    host_machine_name(host, sizeof host);
    json_member_string(w, "host", host);
    member_int_or_null(w, "local_rank", m->shard->local_rank, m->shard->local_rank >= 0);
    json_key(w, "device");
    json_begin_object(w);
    json_member_string(w, "choice", shard_device_kind_name(m->device.choice));
    member_int_or_null(w, "gpu_count", m->device.gpu_count, m->device.gpu_count >= 0);
    member_int_or_null(w, "gpu_index", m->device.gpu_index, m->device.gpu_index >= 0);
    json_member_string(w, "name", m->device.name[0] != '\0' ? m->device.name : NULL);
    json_member_int(w, "device_count", m->device.device_count);
    json_end_object(w);
}

static void write_run(struct json_writer *w, const struct manifest *m, const struct manifest_run *r)
{
    struct pl_run run;
    pipeline_source_run(m->src, r->index, &run);
    json_begin_object(w);
    json_member_int(w, "index", r->index);
    json_member_string(w, "label", run.label);
    json_key(w, "values");
    json_begin_object(w);
    for (int i = 0; i < m->src->params.count && i < run.value_count; i++) {
        json_key(w, m->src->params.items[i].name);
        run_json_value(w, &run.values[i]);
    }
    json_end_object(w);
    json_member_string(w, "status", r->status);
    member_int_or_null(w, "exit_code", r->code, r->code >= 0);
    json_member_string(w, "error", r->error);
    json_member_double(w, "time_ms", r->ms);
    json_key(w, "files");
    json_begin_array(w);
    for (int f = 0; f < r->file_count; f++) {
        json_begin_object(w);
        json_member_string(w, "file", r->files[f].file);
        json_member_string(w, "path", r->files[f].path);
        json_member_int(w, "bytes", r->files[f].bytes);
        json_member_string(w, "sha256", r->files[f].sha256);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
    pl_run_free(&run);
}

static const char *outcome(int code)
{
    return code == CLI_OK ? "ok" : code == CLI_CONFIG ? "invalid" : "failed";
}

int manifest_write(const struct manifest *m, const struct cli *cli, const char *path, int code,
                   const char *error, char *err, size_t size)
{
    struct host_memory_stream memory;
    if (host_memory_stream_open(&memory) != 0) {
        snprintf(err, size, "%s: cannot make the manifest: %s", path, strerror(errno));
        return -1;
    }
    struct json_writer w;
    json_init(&w, memory.f, JSON_PRETTY);
    json_begin_object(&w);
    cli_json_header(&w, cli, "clops-shard/1");
    json_member_string(&w, "pipeline", m->pipeline);
    json_member_string(&w, "pipeline_sha256", m->pipeline_sha256);
    json_member_string(&w, "output_dir", m->options->output_dir);
    json_key(&w, "sets");
    json_begin_array(&w);
    for (int i = 0; i < m->options->set_count; i++)
        json_string(&w, m->options->sets[i]);
    json_end_array(&w);
    write_shard(&w, m->shard);
    cli_json_member_sweep(&w, m->src);
    json_member_int(&w, "run_count", sweep_run_count(&m->src->sweep));
    write_device(&w, m);
    json_member_string(&w, "started", m->started);
    json_member_double(&w, "time_ms", host_now_ms() - m->start_ms);
    json_key(&w, "runs");
    json_begin_array(&w);
    for (int64_t i = 0; i < m->run_count; i++)
        write_run(&w, m, &m->runs[i]);
    json_end_array(&w);
    json_member_string(&w, "status", outcome(code));
    json_member_int(&w, "exit_code", code);
    json_member_string(&w, "error", error);
    json_end_object(&w);
    int status = json_finish(&w);
    int rc = -1;
    if (host_memory_stream_close(&memory) != 0 || status != JSON_OK)
        snprintf(err, size, "%s: cannot make the manifest", path);
    else
        rc = fmt_write_bytes(path, memory.text, memory.size, err, size);
    free(memory.text);
    return rc;
}

void manifest_free(struct manifest *m)
{
    for (int64_t i = 0; i < m->run_count; i++) {
        for (int f = 0; f < m->runs[i].file_count; f++) {
            free(m->runs[i].files[f].file);
            free(m->runs[i].files[f].path);
        }
        free(m->runs[i].files);
        free(m->runs[i].error);
    }
    free(m->runs);
    m->runs = NULL;
    m->run_count = 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* A manifest of more shards than clops run --shard accepts is not one it wrote. */
_Static_assert(SHARD_MAX_COUNT == SWEEP_MAX_RUNS, "a shard count is at most a sweep's run count");

int manifest_read(const char *path, struct manifest_doc *d, char *err, size_t size)
{
    memset(d, 0, sizeof *d);
    d->file = host_xstrdup(path);
    if (json_parse_file(path, &d->root, err, size) != 0)
        return -1;
    const struct json_value *root = &d->root, *shard = json_member(root, "shard");
    const char *schema = json_member_text(root, "schema");
    if (schema == NULL || strcmp(schema, "clops-shard/1") != 0) {
        snprintf(err, size, "%s: not a shard manifest of schema clops-shard/1 (schema: %s)", path,
                 schema != NULL ? schema : "none");
        return -1;
    }
    d->pipeline = json_member_text(root, "pipeline");
    d->pipeline_sha256 = json_member_text(root, "pipeline_sha256");
    d->status = json_member_text(root, "status");
    d->host = json_member_text(root, "host");
    d->device = json_member_text(json_member(root, "device"), "name");
    d->sets = json_member(root, "sets");
    d->runs = json_member(root, "runs");
    const struct json_value *time_ms = json_member(root, "time_ms");
    d->time_ms = time_ms != NULL && time_ms->type == JSON_NUMBER ? time_ms->number : NAN;
    if (d->pipeline == NULL || d->pipeline_sha256 == NULL || d->status == NULL || d->sets == NULL ||
        d->sets->type != JSON_ARRAY || d->runs == NULL || d->runs->type != JSON_ARRAY ||
        json_member_integer(shard, "index", &d->index) != 0 ||
        json_member_integer(shard, "count", &d->count) != 0 ||
        json_member_integer(root, "run_count", &d->run_count) != 0 || d->count < 1 ||
        d->count > SHARD_MAX_COUNT || d->index < 0 || d->index >= d->count) {
        snprintf(err, size,
                 "%s: a member is missing, of the wrong type or out of range (pipeline, "
                 "pipeline_sha256, sets, shard.index, shard.count, run_count, runs, status)",
                 path);
        return -1;
    }
    return 0;
}

void manifest_doc_free(struct manifest_doc *d)
{
    json_value_free(&d->root);
    free(d->file);
    d->file = NULL;
}

static int same_sets(const struct json_value *sets, const struct json_value *other,
                     char *const *list, int count)
{
    int n = other != NULL ? other->count : count;
    if (sets->count != n)
        return 0;
    for (int i = 0; i < n; i++) {
        const char *b = other != NULL
                            ? (other->items[i].type == JSON_STRING ? other->items[i].string : NULL)
                            : list[i];
        if (sets->items[i].type != JSON_STRING || b == NULL || strcmp(sets->items[i].string, b))
            return 0;
    }
    return 1;
}

int manifest_same_set(const struct manifest_doc *d, const char *sha256,
                      const struct json_value *sets, char *const *set_list, int set_count,
                      int64_t run_count, int64_t shard_count, char *why, size_t size)
{
    if (strcmp(d->pipeline_sha256, sha256) != 0)
        snprintf(why, size, "the pipeline's text differs (SHA-256 %.12s..., not %.12s...)",
                 d->pipeline_sha256, sha256);
    else if (!same_sets(d->sets, sets, set_list, set_count))
        snprintf(why, size, "its --set overrides differ");
    else if (d->run_count != run_count)
        snprintf(why, size, "it has %lld runs, not %lld", (long long)d->run_count,
                 (long long)run_count);
    else if (d->count != shard_count)
        snprintf(why, size, "it is one of %lld shards, not %lld", (long long)d->count,
                 (long long)shard_count);
    else
        return 1;
    return 0;
}

static void report(void (*problem)(void *, const char *), void *ctx, const char *fmt, ...)
    HOST_PRINTF(3, 4);
static void report(void (*problem)(void *, const char *), void *ctx, const char *fmt, ...)
{
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    problem(ctx, message);
}

/* Why a listed name is not checked: gather and the resume check look under the output
 * directory only, whatever a manifest (which anyone can edit) says; NULL when it is fine. */
static const char *name_refused(const char *file)
{
    if (host_path_is_absolute(file))
        return "is absolute";
    if (!name_stays_under(file))
        return "leaves the output directory";
    return NULL;
}

/* The file at `path` hashed, opened only if it is a regular file (a FIFO would block, a device
 * never end): 0, or 1 with the problem reported. */
static int hash_listed(const char *path, char found[SHA256_HEX_SIZE], int64_t *found_bytes,
                       void (*problem)(void *, const char *), void *ctx)
{
    char err[1024];
    int64_t size = 0;
    FILE *f = host_open_regular(path, &size, err, sizeof err);
    if (f == NULL) {
        if (access(path, F_OK) != 0 && errno == ENOENT)
            report(problem, ctx, "%s: missing", path);
        else
            report(problem, ctx, "%s", err);
        return 1;
    }
    int failed = sha256_stream(f, found, found_bytes) != 0;
    if (failed)
        report(problem, ctx, "%s: %s", path, strerror(errno));
    fclose(f);
    return failed;
}

/* Listed file `i` of run `r` against the disk: 0 when it is intact, else 1 with the problem
 * reported. */
static int check_file(const struct manifest_doc *d, int r, int i, const char *dir,
                      void (*problem)(void *, const char *), void *ctx,
                      struct manifest_file_counts *counts)
{
    const struct json_value *f = &json_member(&d->runs->items[r], "files")->items[i];
    const char *file = json_member_text(f, "file"), *sha256 = json_member_text(f, "sha256");
    int64_t size = 0;
    if (file == NULL || sha256 == NULL || json_member_integer(f, "bytes", &size) != 0) {
        report(problem, ctx, "%s: runs[%d].files[%d] lacks file, bytes or sha256", d->file, r, i);
        return 1;
    }
    counts->bytes += size;
    const char *refused = name_refused(file);
    if (refused != NULL) {
        report(problem, ctx,
               "%s: runs[%d].files[%d]: '%s' %s; only files under the output directory %s "
               "are checked",
               d->file, r, i, file, refused, dir);
        return 1;
    }
    char *path = output_path(dir, file);
    char found[SHA256_HEX_SIZE];
    int64_t found_bytes = 0;
    int bad = hash_listed(path, found, &found_bytes, problem, ctx);
    if (!bad && (found_bytes != size || strcmp(found, sha256) != 0)) {
        report(problem, ctx,
               "%s: changed since the shard wrote it (%lld bytes, SHA-256 %.12s...; the manifest "
               "says %lld bytes, %.12s...)",
               path, (long long)found_bytes, found, (long long)size, sha256);
        bad = 1;
    }
    if (!bad) {
        counts->intact++;
        counts->intact_bytes += size;
    }
    free(path);
    return bad;
}

int manifest_check_files(const struct manifest_doc *d, const char *dir,
                         void (*problem)(void *ctx, const char *message), void *ctx,
                         struct manifest_file_counts *counts)
{
    int problems = 0;
    memset(counts, 0, sizeof *counts);
    for (int r = 0; r < d->runs->count; r++) {
        const struct json_value *list = json_member(&d->runs->items[r], "files");
        for (int i = 0; list != NULL && list->type == JSON_ARRAY && i < list->count; i++) {
            counts->files++;
            problems += check_file(d, r, i, dir, problem, ctx, counts);
        }
    }
    return problems;
}
