/* pipeline_resume.c — clops run --shard run again: a shard whose manifest says it succeeded,
 * for this very pipeline and set, with every file it lists intact, is skipped; any other runs
 * again, saying why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "names.h"
#include "pipeline_run.h"

/* First problem only: why a shard is run again. */
static void first_problem(void *ctx, const char *message)
{
    char *why = ctx;
    if (why[0] == '\0')
        snprintf(why, 1024, "%s", message);
}

/* Whether the shard's manifest says it succeeded for this very pipeline and set, and every file
 * it lists is intact (size and SHA-256). 1: skip it; 0, with `why` ("" when there is no
 * manifest). */
static int shard_is_done(const struct manifest *m, const char *manifest_path, char *why,
                         int64_t *files)
{
    struct manifest_doc d;
    char err[1024];
    int done = 0;
    why[0] = '\0';
    if (access(manifest_path, F_OK) != 0)
        return 0;
    const struct shard *s = m->shard;
    int64_t runs = sweep_run_count(&m->src->sweep);
    struct manifest_file_counts counts = {0};
    if (manifest_read(manifest_path, &d, err, sizeof err) != 0)
        snprintf(why, 1024, "%s", err);
    else if (strcmp(d.status, "ok") != 0)
        snprintf(why, 1024, "its manifest says it %s", d.status);
    else if (!manifest_same_set(&d, m->pipeline_sha256, NULL, m->options->sets,
                                m->options->set_count, runs, s->count, why, 1024))
        ;
    else if (d.runs->count != shard_run_count(s, runs))
        snprintf(why, 1024, "its manifest lists %d runs, not %lld", d.runs->count,
                 (long long)shard_run_count(s, runs));
    else
        done = manifest_check_files(&d, m->options->output_dir, first_problem, why, &counts) == 0;
    *files = counts.files;
    manifest_doc_free(&d);
    return done;
}

/* A shard whose manifest says it is done is skipped (unless --force); one whose manifest says
 * otherwise runs again, and says why. Returns 1 to skip. */
int shard_skip(const struct manifest *m, const char *manifest_path)
{
    const struct shard *s = m->shard;
    char why[1024];
    int64_t files = 0, runs = shard_run_count(s, sweep_run_count(&m->src->sweep));
    if (shard_is_done(m, manifest_path, why, &files)) {
        fprintf(m->options->json ? stderr : stdout,
                "Shard %lld/%lld of %s is done (%s: %lld run%s, %lld file%s intact); skipped. "
                "--force runs it again.\n",
                (long long)s->index, (long long)s->count, m->pipeline, manifest_path,
                (long long)runs, runs == 1 ? "" : "s", (long long)files, files == 1 ? "" : "s");
        return 1;
    }
    if (why[0] != '\0') {
        /* `why` quotes the manifest, which may name anything: escaped for the terminal. */
        char *shown = name_escaped(why);
        fprintf(stderr, "clops: shard %lld/%lld runs again: %s\n", (long long)s->index,
                (long long)s->count, shown);
        free(shown);
    }
    return 0;
}
