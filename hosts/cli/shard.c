/* shard.c — a shard of a sweep's runs: its K and N from the command line or the launcher's
 * environment, the runs it owns, its manifest's name and its GPU (shard.h). */
#include "shard.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A non-negative decimal integer, the whole of `text`: 0, or -1. */
static int parse_count(const char *text, int64_t *out)
{
    if (text == NULL || *text < '0' || *text > '9')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* An environment variable that must be such an integer when set: 0 (absent: *set = 0), or -1
 * with the message. */
static int env_count(shard_env_fn env, const char *name, int64_t *out, int *set, char *err,
                     size_t size)
{
    const char *text = env(name);
    *set = text != NULL && *text != '\0';
    if (*set && parse_count(text, out) != 0) {
        snprintf(err, size, "--shard auto: %s=%s is not a non-negative integer", name, text);
        return -1;
    }
    return 0;
}

static int check_range(const struct shard *s, const char *what, char *err, size_t size)
{
    if (s->count < 1 || s->index < 0 || s->index >= s->count) {
        snprintf(err, size,
                 "--shard %s: shard %" PRId64 " of %" PRId64
                 " is out of range; shards are numbered from 0: 0/N .. (N-1)/N, N >= 1",
                 what, s->index, s->count);
        return -1;
    }
    if (s->count > SHARD_MAX_COUNT) {
        snprintf(err, size,
                 "--shard %s: %" PRId64 " shards; at most %" PRId64
                 " (as many as a sweep can have runs)",
                 what, s->count, SHARD_MAX_COUNT);
        return -1;
    }
    return 0;
}

/* A Slurm array task: 1 when the environment has one (then 0 or -1 in *rc). */
static int from_slurm(shard_env_fn env, struct shard *s, int *rc, char *err, size_t size)
{
    int64_t id = 0, count = 0, min = 0, max = 0, step = 1;
    int has_id, has_count, has_min, has_max, has_step;
    *rc = -1;
    if (env_count(env, "SLURM_ARRAY_TASK_ID", &id, &has_id, err, size) != 0)
        return 1;
    if (!has_id)
        return 0;
    if (env_count(env, "SLURM_ARRAY_TASK_COUNT", &count, &has_count, err, size) != 0 ||
        env_count(env, "SLURM_ARRAY_TASK_MIN", &min, &has_min, err, size) != 0 ||
        env_count(env, "SLURM_ARRAY_TASK_MAX", &max, &has_max, err, size) != 0 ||
        env_count(env, "SLURM_ARRAY_TASK_STEP", &step, &has_step, err, size) != 0)
        return 1;
    if (!has_count && !(has_min && has_max)) {
        snprintf(err, size,
                 "--shard auto: SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT "
                 "nor SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX");
        return 1;
    }
    if (step < 1)
        step = 1;
    s->index = (id - min) / step;
    s->count = has_count ? count : (max - min) / step + 1;
    s->source = "slurm";
    s->variables = has_count ? "SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT"
                             : "SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_MAX";
    int64_t local = 0;
    int has_local;
    if (env_count(env, "SLURM_LOCALID", &local, &has_local, err, size) != 0)
        return 1;
    s->local_rank = has_local ? (int)local : -1;
    *rc = check_range(s, "auto", err, size);
    return 1;
}

/* An MPI launcher's rank and size (`rank`, `size`) and node-local rank (`local`). */
static int from_mpi(shard_env_fn env, const char *rank, const char *size_name, const char *local,
                    const char *variables, struct shard *s, int *rc, char *err, size_t size)
{
    int64_t r = 0, n = 0, l = 0;
    int has_rank, has_size, has_local;
    *rc = -1;
    if (env_count(env, rank, &r, &has_rank, err, size) != 0 ||
        env_count(env, size_name, &n, &has_size, err, size) != 0 ||
        env_count(env, local, &l, &has_local, err, size) != 0)
        return 1;
    if (!has_rank && !has_size)
        return 0;
    if (!has_rank || !has_size) {
        snprintf(err, size, "--shard auto: %s is set but not %s", has_rank ? rank : size_name,
                 has_rank ? size_name : rank);
        return 1;
    }
    s->index = r;
    s->count = n;
    s->source = "mpi";
    s->variables = variables;
    s->local_rank = has_local ? (int)l : -1;
    *rc = check_range(s, "auto", err, size);
    return 1;
}

int shard_parse(const char *spec, shard_env_fn env, struct shard *out, char *err, size_t size)
{
    memset(out, 0, sizeof *out);
    out->local_rank = -1;
    out->variables = "";
    if (strcmp(spec, "auto") != 0) {
        const char *slash = strchr(spec, '/');
        char k[32];
        if (slash == NULL || (size_t)(slash - spec) >= sizeof k) {
            snprintf(err, size, "--shard %s: expected K/N (shard K of N, from 0) or auto", spec);
            return -1;
        }
        memcpy(k, spec, (size_t)(slash - spec));
        k[slash - spec] = '\0';
        if (parse_count(k, &out->index) != 0 || parse_count(slash + 1, &out->count) != 0) {
            snprintf(err, size, "--shard %s: expected K/N (shard K of N, from 0) or auto", spec);
            return -1;
        }
        out->source = "option";
        return check_range(out, spec, err, size);
    }
    int rc;
    if (from_slurm(env, out, &rc, err, size) ||
        from_mpi(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                 "OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE", out, &rc, err, size) ||
        from_mpi(env, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_RANK, PMI_SIZE", out, &rc,
                 err, size))
        return rc;
    snprintf(err, size,
             "--shard auto: none of SLURM_ARRAY_TASK_ID (with SLURM_ARRAY_TASK_COUNT, or "
             "SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX), OMPI_COMM_WORLD_RANK and "
             "OMPI_COMM_WORLD_SIZE, PMI_RANK and PMI_SIZE is set: run it as a Slurm array task or "
             "under mpirun, or give --shard K/N");
    return -1;
}

int shard_owns(const struct shard *s, int64_t run)
{
    return s == NULL || run % s->count == s->index;
}

int64_t shard_run_count(const struct shard *s, int64_t total)
{
    if (s == NULL)
        return total;
    return total > s->index ? (total - s->index + s->count - 1) / s->count : 0;
}

int64_t shard_position(const struct shard *s, int64_t run)
{
    return s == NULL ? run : run / s->count;
}

char *shard_manifest_path(const char *output_dir, int64_t index, int64_t count)
{
    size_t size = strlen(output_dir) + 80;
    char *path = malloc(size);
    if (path != NULL)
        snprintf(path, size, "%s/.clops/shard-%" PRId64 "-of-%" PRId64 ".json", output_dir, index,
                 count);
    return path;
}

int shard_manifest_name(const char *name, int64_t *index, int64_t *count)
{
    long long k, n;
    char again[96];
    /* Only the name clops writes: no sign, no leading zero, nothing after. */
    if (sscanf(name, "shard-%lld-of-%lld.json", &k, &n) != 2 || k < 0 || n < 1)
        return -1;
    snprintf(again, sizeof again, "shard-%lld-of-%lld.json", k, n);
    if (strcmp(again, name) != 0)
        return -1;
    *index = k;
    *count = n;
    return 0;
}

struct shard_device shard_device_choice(int local_rank, int gpu_count, int pool_names_devices)
{
    if (pool_names_devices || local_rank < 0)
        return (struct shard_device){SHARD_DEVICE_POOL, -1};
    if (gpu_count <= 0)
        return (struct shard_device){SHARD_DEVICE_DEFAULT, -1};
    return (struct shard_device){SHARD_DEVICE_GPU, local_rank % gpu_count};
}

const char *shard_device_kind_name(enum shard_device_kind kind)
{
    switch (kind) {
    case SHARD_DEVICE_GPU: return "gpu";
    case SHARD_DEVICE_DEFAULT: return "default";
    default: return "pool";
    }
}

char *shard_pool_config(const char *base, int gpu_index)
{
    const char *text = base != NULL ? base : "";
    size_t size = strlen(text) + 96;
    char *config = malloc(size);
    if (config != NULL)
        snprintf(config, size, "%s\ndevices = ( { type = \"gpu\"; index = %d; } );\n", text,
                 gpu_index);
    return config;
}
