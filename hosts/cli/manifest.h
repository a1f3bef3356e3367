/* manifest.h — a shard's manifest (schema clops-shard/1, docs/json.md): what `clops run --shard
 * K/N` ran and wrote, kept as <output-dir>/.clops/shard-K-of-N.json, and read back by the next
 * run of the same shard (to skip it when its outputs are intact) and by `clops gather`
 * (manifest.c). */
#ifndef CLOPS_CLI_MANIFEST_H
#define CLOPS_CLI_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "json_read.h"
#include "pipeline.h"
#include "pipeline_results.h"
#include "shard.h"

/* ---- writing ------------------------------------------------------------------------------ */

struct manifest_file {
    char *file; /* the output's name in the run (under the output directory unless absolute) */
    char *path; /* where it was written */
    int64_t bytes;
    char sha256[SHA256_HEX_SIZE];
};

struct manifest_run {
    int64_t index;
    const char *status; /* "ok", "failed", "invalid", "not_run" (static strings) */
    int code;           /* its exit code; -1: not run */
    char *error;        /* NULL: none */
    double ms;
    struct manifest_file *files; /* the outputs written */
    int file_count;
};

/* Where a shard ran. */
struct manifest_device {
    enum shard_device_kind choice;
    int gpu_count;  /* GPUs the node showed; -1: not counted (no local rank) */
    int gpu_index;  /* the GPU taken, with SHARD_DEVICE_GPU; else -1 */
    char name[128]; /* the pool's primary device; "" when no pool was made */
    int device_count;
};

/* The manifest as the runs go. */
struct manifest {
    const struct shard *shard;
    const char *pipeline; /* as given */
    char pipeline_sha256[SHA256_HEX_SIZE];
    const struct run_options *options;
    const struct pl_source *src;
    struct manifest_device device;
    char started[32]; /* UTC, ISO 8601 */
    double start_ms;
    struct manifest_run *runs;
    int64_t run_count; /* the shard's runs recorded */
};

/* Starts a manifest of `shard` of `path` (whose bytes are hashed: 0, or -1 when the file cannot
 * be read, with the message). */
int manifest_begin(struct manifest *m, const struct shard *shard, const char *path,
                   const struct pl_source *src, const struct run_options *options, char *err,
                   size_t size);
/* A run: its outcome and, with `result`, the files it wrote (`pl`'s outputs). */
void manifest_add_run(struct manifest *m, int64_t index, const char *status, int code,
                      const char *error, double ms, const struct pipeline *pl,
                      const struct run_result *result);
/* Writes the manifest atomically to `path` with the outcome `code`/`error`: 0, or -1 with the
 * message. */
int manifest_write(const struct manifest *m, const struct cli *cli, const char *path, int code,
                   const char *error, char *err, size_t size);
void manifest_free(struct manifest *m);

/* ---- reading ------------------------------------------------------------------------------ */

/* A manifest read back: the document and its members that identify and judge it. */
struct manifest_doc {
    struct json_value root;
    char *file; /* the manifest's path */
    const char *pipeline, *pipeline_sha256, *status, *host, *device;
    int64_t index, count, run_count;
    double time_ms;
    const struct json_value *sets, *runs;
};

/* Reads and checks the form of the manifest at `path` (schema clops-shard/1, the members used
 * here): 0, or -1 with the message. Freed with manifest_doc_free() either way. */
int manifest_read(const char *path, struct manifest_doc *d, char *err, size_t size);
void manifest_doc_free(struct manifest_doc *d);
/* Whether two manifests (or a manifest and this command) are of one set: the same pipeline text
 * (SHA-256), --set overrides, run count and shard count. 1, or 0 with what differs in `why`. */
int manifest_same_set(const struct manifest_doc *d, const char *sha256,
                      const struct json_value *sets, char *const *set_list, int set_count,
                      int64_t run_count, int64_t shard_count, char *why, size_t size);
/* What manifest_check_files found: the files listed and their recorded bytes, and of those
 * the ones intact on the disk. */
struct manifest_file_counts {
    int64_t files, bytes, intact, intact_bytes;
};
/* Checks every file the manifest lists under `dir`: present, a regular file, of its size and
 * SHA-256. A name that is absolute or leaves `dir` ("../x", "a/../../x") is refused unread.
 * Each problem goes to `problem` (ctx, "zoom/a.png: missing"); returns their number. */
int manifest_check_files(const struct manifest_doc *d, const char *dir,
                         void (*problem)(void *ctx, const char *message), void *ctx,
                         struct manifest_file_counts *counts);

#endif
