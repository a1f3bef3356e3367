/* pipeline_pool.c — the pool of a run: made from the file the pipeline names (or the built-in
 * defaults), on the GPU a shard's local rank picks, and kept for the next run of a sweep that
 * names the same file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "formats.h"
#include "pipeline_run.h"

static int same_pool_file(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

void release_pool(const struct cli *cli, struct run_pool *p)
{
    struct manifest_device *kept = p->shard_device;
    cli->lib.api->pool_release(p->pool);
    free(p->path);
    memset(p, 0, sizeof *p);
    p->shard_device = kept;
}

/* Whether a pool file lists `devices` (then a shard keeps them). A file libconfig cannot read
 * counts as naming them: the pool is then made from it as it is, which reports its errors.
 * Only the list's length is read, which no integer libconfig wraps can change; the plugin
 * refuses such an integer when it makes the pool, from the file or from the text built on it. */
static int pool_file_names_devices(const char *path)
{
    config_t cfg;
    config_init(&cfg);
    int names = 1;
    if (config_read_file(&cfg, path) == CONFIG_TRUE) {
        const config_setting_t *devices = config_lookup(&cfg, "devices");
        names = devices != NULL && config_setting_length(devices) > 0;
    }
    config_destroy(&cfg);
    return names;
}

/* The GPUs the OpenCL ICD loader shows, or 0. */
static int count_gpus(const struct clops_api *api)
{
    enum { MAX_LISTED = 256 };
    struct clops_device_info *infos = host_xcalloc(MAX_LISTED, sizeof *infos);
    int32_t count = 0, gpus = 0;
    for (int i = 0; i < MAX_LISTED; i++)
        infos[i].struct_size = sizeof infos[i];
    if (api->devices_list(infos, MAX_LISTED, &count) == CLOPS_OK)
        for (int32_t i = 0; i < count && i < MAX_LISTED; i++)
            gpus += infos[i].type == CLOPS_DEVICE_GPU;
    free(infos);
    return gpus;
}

/* A shard that knows its rank on the node takes GPU local_rank % GPUs, through a pool
 * configuration made of the pool file (one that names no devices) and a devices line, unless
 * the file names its devices or there is no GPU (shard_device_choice). */
static int32_t create_pool(struct run *r, const char *pool_path, struct clops_pool **out)
{
    const struct clops_api *api = r->cli->lib.api;
    const struct shard *s = r->options->shard;
    struct manifest_device *d = r->pool->shard_device;
    struct shard_device choice = {SHARD_DEVICE_POOL, -1};
    if (s != NULL && s->local_rank >= 0) {
        int names = pool_path != NULL && pool_file_names_devices(pool_path);
        int gpus = names ? -1 : count_gpus(api);
        choice = shard_device_choice(s->local_rank, gpus, names);
        if (d != NULL)
            d->gpu_count = gpus;
    }
    if (d != NULL) {
        d->choice = choice.kind;
        d->gpu_index = choice.gpu_index;
    }
    if (choice.kind != SHARD_DEVICE_GPU)
        return pool_path != NULL ? api->pool_create_from_file(pool_path, out)
                                 : api->pool_create_default(out);
    char *base = NULL;
    if (pool_path != NULL) {
        int64_t size = 0;
        char err[512];
        FILE *f = fmt_open_input(pool_path, &size, err, sizeof err);
        if (f == NULL)
            return api->pool_create_from_file(pool_path, out); /* it reports the problem */
        base = host_xcalloc((size_t)size + 1, 1);
        size_t got = fread(base, 1, (size_t)size, f);
        base[got] = '\0';
        fclose(f);
    }
    char *config = shard_pool_config(base, choice.gpu_index);
    int32_t status = api->pool_create_from_string(config, out);
    free(config);
    free(base);
    return status;
}

/* The dtype a step's kernels are built for: Mandelbrot's precision, else its operator's first
 * tensor parameter's dtype; CLOPS_DTYPE_INVALID when the step gives neither. */
static int32_t step_dtype(const struct pipeline *pl, const struct pl_step *step)
{
    for (int32_t p = 0; p < step->op->param_count; p++) {
        const struct clops_param *param = &step->op->params[p];
        const struct pl_value *v = &step->values[p];
        if (strcmp(step->op->name, "mandelbrot") == 0 && strcmp(param->name, "precision") == 0)
            return v->has_value && v->s != NULL && strcmp(v->s, "f64") == 0 ? CLOPS_F64 : CLOPS_F32;
        if (strcmp(step->op->name, "mandelbrot") != 0 && v->tensor >= 0)
            return pl->tensors[v->tensor].dtype;
    }
    return CLOPS_DTYPE_INVALID;
}

/* The kernels of the steps' operators in their dtypes, built (or loaded from the cache) on the
 * new pool before the first step (pool_prebuild, ABI 1.5), so that the steps' times are the
 * operators' own; each operator and dtype once. A failure is no error of the run: the step
 * that needs the kernel builds it, or reports why it cannot. */
static void prebuild_steps(struct run *r)
{
    const struct clops_api *api = r->cli->lib.api;
    if (r->options->no_prebuild || !CLOPS_API_HAS(api, pool_prebuild))
        return;
    const int show = !r->options->quiet && r->json == NULL;
    if (show)
        fprintf(stderr, "%sbuilding the steps' kernels ...", r->prefix);
    const double start = host_now_ms();
    for (int i = 0; i < r->pl->step_count; i++) {
        const struct pl_step *step = &r->pl->steps[i];
        const int32_t dtype = step_dtype(r->pl, step);
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = r->pl->steps[j].op == step->op && step_dtype(r->pl, &r->pl->steps[j]) == dtype;
        if (seen || dtype == CLOPS_DTYPE_INVALID)
            continue;
        const char *const ops[1] = {step->op->name};
        struct clops_prebuild_args a = {.struct_size = sizeof a,
                                        .pool = r->pool->pool,
                                        .ops = ops,
                                        .op_count = 1,
                                        .dtypes = &dtype,
                                        .dtype_count = 1};
        if (api->pool_prebuild(&a) == CLOPS_OK) {
            r->pool->programs_built += a.programs_built;
            r->pool->programs_loaded += a.programs_loaded;
        }
    }
    r->pool->prebuilt = 1;
    r->pool->prebuild_ms = host_now_ms() - start;
    if (show)
        fprintf(stderr, " done in %.1f ms\n", r->pool->prebuild_ms);
}

int take_pool(struct run *r)
{
    const struct clops_api *api = r->cli->lib.api;
    const char *pool_path = r->pl->pool_path;
    if (r->pool->pool != NULL && same_pool_file(r->pool->path, pool_path))
        return CLI_OK;
    release_pool(r->cli, r->pool);
    int32_t status = create_pool(r, pool_path, &r->pool->pool);
    if (status != CLOPS_OK) {
        /* The message first: every later call of the library clears it. */
        char message[sizeof r->result->error];
        snprintf(message, sizeof message, "%s", api->last_error());
        host_append(r->result->error, sizeof r->result->error, "; ", message);
        int code = cli_pool_error(r->cli, status);
        if (r->json != NULL)
            r->pool->json_index = run_json_pool(r->json, pool_path, NULL, status, message);
        return code;
    }
    if (r->json != NULL)
        r->pool->json_index = run_json_pool(r->json, pool_path, r->pool->pool, CLOPS_OK, NULL);
    r->pool->path = pool_path != NULL ? host_xstrdup(pool_path) : NULL;
    struct clops_device_info info = {.struct_size = sizeof info};
    if (api->pool_device_info(r->pool->pool, 0, &info) != CLOPS_OK)
        return run_error(r, CLI_FAILED, "%s", api->last_error());
    snprintf(r->pool->device, sizeof r->pool->device, "%s", info.name);
    r->pool->device_count = api->pool_device_count(r->pool->pool);
    prebuild_steps(r);
    if (r->pool->shard_device != NULL) {
        snprintf(r->pool->shard_device->name, sizeof r->pool->shard_device->name, "%s", info.name);
        r->pool->shard_device->device_count = r->pool->device_count;
    }
    return CLI_OK;
}