/* shard.h — a share of a sweep's runs for one process among many (shard.c): `--shard K/N` or
 * `--shard auto` (K and N from a Slurm job array's or an MPI launcher's environment), which
 * runs are K's, and which GPU a shard of a node takes. Pure functions of their arguments, for
 * clops run and its tests. */
#ifndef CLOPS_CLI_SHARD_H
#define CLOPS_CLI_SHARD_H

#include <stddef.h>
#include <stdint.h>

/* Shard `index` of `count`: 0 <= index < count. Runs are dealt round-robin: run i belongs to
 * shard i % count, so that the expensive end of a sweep (the deepest zoom, the largest size) is
 * spread over the shards rather than landing on the last one. */
struct shard {
    int64_t index, count;
    const char *source;    /* where K and N came from: "option", "slurm", "mpi" */
    const char *variables; /* the environment variables read ("SLURM_ARRAY_TASK_ID, ..."); "" */
    int local_rank;        /* the process's rank on its node (SLURM_LOCALID,
                              OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID); -1: unknown */
};

/* The most shards: as many as a sweep can have runs (SWEEP_MAX_RUNS); more would all be empty.
 * shard_parse refuses more, and a manifest of more is refused when read back. */
#define SHARD_MAX_COUNT INT64_C(1000000)

/* The environment as the shard reads it: getenv, or a test's table. */
typedef const char *(*shard_env_fn)(const char *name);

/* `spec` is "K/N" (decimal, 0 <= K < N) or "auto"; for "auto" K, N and the local rank come
 * from `env`: a Slurm array task (SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT, or with
 * SLURM_ARRAY_TASK_MIN and _MAX; K = (ID - MIN) / STEP), else Open MPI's
 * OMPI_COMM_WORLD_RANK and _SIZE, else PMI_RANK and PMI_SIZE (MPICH, Intel MPI), in this order.
 * Returns 0, or -1 with a message in `err` (naming the variables when none is set). */
int shard_parse(const char *spec, shard_env_fn env, struct shard *out, char *err, size_t size);

/* Whether run `run` is the shard's; a NULL shard owns every run. */
int shard_owns(const struct shard *s, int64_t run);
/* How many of `total` runs are the shard's, and run `run`'s position among them. */
int64_t shard_run_count(const struct shard *s, int64_t total);
int64_t shard_position(const struct shard *s, int64_t run);

/* Where the manifest of a shard goes: "<dir>/.clops/shard-K-of-N.json". Allocated. */
char *shard_manifest_path(const char *output_dir, int64_t index, int64_t count);
/* Reads K and N back from a manifest's file name "shard-K-of-N.json": 0, or -1 for another
 * name. */
int shard_manifest_name(const char *name, int64_t *index, int64_t *count);

/* Which device a shard's pool opens. */
enum shard_device_kind {
    SHARD_DEVICE_POOL = 0,    /* the pipeline's pool as its file says (it names devices, or the
                                 local rank is unknown) */
    SHARD_DEVICE_DEFAULT = 1, /* the default pool: there is no GPU to choose among */
    SHARD_DEVICE_GPU = 2      /* GPU `gpu_index` of the node, the pool's devices replaced */
};
struct shard_device {
    enum shard_device_kind kind;
    int gpu_index; /* with SHARD_DEVICE_GPU; else -1 */
};
/* The choice: a pool file that names its devices is obeyed; else, with a local rank (0 or
 * more) and GPUs, GPU local_rank % gpu_count, so that the ranks of a node spread over its GPUs;
 * without GPUs, the default pool (the first CPU device). */
struct shard_device shard_device_choice(int local_rank, int gpu_count, int pool_names_devices);
/* "gpu", "default" or "pool", as the manifest records it. */
const char *shard_device_kind_name(enum shard_device_kind kind);
/* The pool configuration of a shard that takes GPU `gpu_index`: `base` (a pool file's text
 * that names no devices; NULL or "": none) followed by the devices line. Allocated. */
char *shard_pool_config(const char *base, int gpu_index);

#endif
