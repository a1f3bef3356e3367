/* pipeline_run_one.c — one run of a pipeline: its host tensors, device copies of those its steps
 * use, each step's calls (pipeline_call.c; timed apart from the kernel builds they cause), the
 * checks right after their step, the result tables and the outputs. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "interrupt.h"
#include "pipeline_run.h"

/* Prints "clops: <message>" on stderr and keeps the message as what stopped the run (after any
 * kept before it). Returns `code`. */
int run_error(struct run *r, int code, const char *fmt, ...)
{
    char message[sizeof r->result->error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fprintf(stderr, "clops: %s\n", message);
    host_append(r->result->error, sizeof r->result->error, "; ", message);
    return code;
}

/* ---- tensors ------------------------------------------------------------------------------ */

static void store(void *data, int32_t dtype, int64_t index, double value)
{
    switch (dtype) {
    case CLOPS_F32: ((float *)data)[index] = (float)value; break;
    case CLOPS_F64: ((double *)data)[index] = value; break;
    case CLOPS_I32: ((int32_t *)data)[index] = (int32_t)llround(value); break;
    case CLOPS_U32: ((uint32_t *)data)[index] = (uint32_t)llround(value); break;
    case CLOPS_U8: ((uint8_t *)data)[index] = (uint8_t)llround(value); break;
    case CLOPS_I64: ((int64_t *)data)[index] = (int64_t)llround(value); break;
    default: break;
    }
}

/* The generators of the format (demo.cfg's header); file tensors were read while validating. */
static void generate(struct pl_tensor *t)
{
    if (t->init != INIT_FILE)
        t->data = host_xcalloc((size_t)t->elements, (size_t)host_dtype_size(t->dtype));
    int64_t cols = t->rank == 2 ? t->shape[1] : 1;
    if (t->init == INIT_RANDOM) {
        struct host_rng rng;
        host_rng_seed(&rng, t->seed);
        host_fill_random(t->data, t->dtype, t->elements, &rng);
    } else if (t->init == INIT_IDENTITY) {
        int64_t diagonal = t->shape[0] < t->shape[1] ? t->shape[0] : t->shape[1];
        for (int64_t i = 0; i < diagonal; i++)
            store(t->data, t->dtype, i * cols + i, 1.0);
    } else if (t->init == INIT_HILBERT) {
        for (int64_t i = 0; i < t->shape[0]; i++)
            for (int64_t j = 0; j < cols; j++)
                store(t->data, t->dtype, i * cols + j, 1.0 / (double)(i + j + 1));
    } else if (t->init == INIT_LINSPACE) {
        double step = t->elements > 1 ? (t->stop - t->start) / (double)(t->elements - 1) : 0.0;
        for (int64_t k = 0; k < t->elements; k++)
            store(t->data, t->dtype, k,
                  k + 1 == t->elements ? t->stop : t->start + step * (double)k);
    }
    t->view = pl_tensor_view(t, t->data);
}

int64_t tensor_bytes(const struct pl_tensor *t)
{
    return t->elements * host_dtype_size(t->dtype);
}

static int transfer_error(struct run *r, const char *what, const struct pl_tensor *t)
{
    return run_error(r, CLI_FAILED, "cannot %s tensor '%s': %s", what, t->name,
                     r->cli->lib.api->last_error());
}

/* Tensors the steps use live in device buffers for the whole run: uploaded once here, passed
 * to every step as device tensors, downloaded only for checks, outputs and repeats. Empty ones
 * stay on the host (there is nothing to move). */
static int upload_tensors(struct run *r)
{
    const struct clops_api *api = r->cli->lib.api;
    for (int i = 0; i < r->pl->tensor_count; i++) {
        struct pl_tensor *t = &r->pl->tensors[i];
        if (!t->on_device || t->elements == 0)
            continue;
        if (api->buffer_create(r->pool->pool, tensor_bytes(t), &t->buffer) != CLOPS_OK ||
            api->buffer_upload(t->buffer, 0, t->data, tensor_bytes(t)) != CLOPS_OK)
            return transfer_error(r, "upload", t);
        t->view.data = NULL;
        t->view.buffer = t->buffer;
    }
    return CLI_OK;
}

/* Makes the host copy current. */
static int fetch(struct run *r, struct pl_tensor *t)
{
    if (t->buffer == NULL || !t->host_stale)
        return CLI_OK;
    if (r->cli->lib.api->buffer_download(t->buffer, 0, t->data, tensor_bytes(t)) != CLOPS_OK)
        return transfer_error(r, "download", t);
    t->host_stale = 0;
    return CLI_OK;
}

static void release_buffers(struct run *r)
{
    for (int i = 0; i < r->pl->tensor_count; i++) {
        r->cli->lib.api->buffer_release(r->pl->tensors[i].buffer);
        r->pl->tensors[i].buffer = NULL;
    }
}

/* ---- steps -------------------------------------------------------------------------------- */

int has_checks(const struct pipeline *pl, int32_t step_index)
{
    for (int i = 0; i < pl->check_count; i++)
        if (pl->checks[i].step == step_index)
            return 1;
    return 0;
}

/* Copies of the tensors the step writes, on the host: for the checks' reference and to give
 * every repeated run the same input. */
static int snapshot_written(struct run *r, struct pl_step *step)
{
    const struct clops_op *op = step->op;
    step->before = host_xcalloc((size_t)op->param_count, sizeof *step->before);
    for (int32_t p = 0; p < op->param_count; p++) {
        int t = step->values[p].tensor;
        if (!param_kind_writes(op->params[p].kind) || t < 0)
            continue;
        struct pl_tensor *tensor = &r->pl->tensors[t];
        if (fetch(r, tensor) != CLI_OK)
            return CLI_FAILED;
        step->before[p] = host_xmalloc((size_t)tensor_bytes(tensor) + 1);
        memcpy(step->before[p], tensor->data, (size_t)tensor_bytes(tensor));
    }
    return CLI_OK;
}

/* Puts the written tensors back as they were before the step (uploads for device tensors). */
static int restore_written(struct run *r, const struct pl_step *step)
{
    for (int32_t p = 0; p < step->op->param_count; p++) {
        if (step->before[p] == NULL)
            continue;
        struct pl_tensor *t = &r->pl->tensors[step->values[p].tensor];
        if (t->buffer != NULL && r->cli->lib.api->buffer_upload(t->buffer, 0, step->before[p],
                                                                tensor_bytes(t)) != CLOPS_OK)
            return transfer_error(r, "restore", t);
        if (t->buffer == NULL)
            memcpy(t->data, step->before[p], (size_t)tensor_bytes(t));
    }
    return CLI_OK;
}

/* After a step, the device holds the newer contents of what it wrote. */
static void mark_written(const struct pipeline *pl, const struct pl_step *step)
{
    for (int32_t p = 0; p < step->op->param_count; p++) {
        int t = step->values[p].tensor;
        if (param_kind_writes(step->op->params[p].kind) && t >= 0 && pl->tensors[t].buffer)
            pl->tensors[t].host_stale = 1;
    }
}

/* The nanoseconds the pool has spent building kernel programs (ABI 1.3's build_ns), or -1 when
 * the library does not report them. */
static int64_t build_ns(const struct run *r)
{
    const struct clops_api *api = r->cli->lib.api;
    struct clops_stats stats = {.struct_size = sizeof stats};
    if (api->abi_minor < 3 || api->pool_stats(r->pool->pool, &stats) != CLOPS_OK)
        return -1;
    return stats.build_ns;
}

/* One call of a step, timed: its wall time less the kernel builds it caused (a first call
 * compiles, or loads from the cache, what later calls reuse), which go to the step's
 * compile_ms. */
static int32_t timed_call(struct run *r, struct pl_step *step, const struct clops_arg *args,
                          int32_t count, struct step_result *result)
{
    int64_t built_before = build_ns(r);
    double start = host_now_ms();
    int32_t status = run_call(r, step->op, args, count);
    double ms = host_now_ms() - start;
    int64_t built_after = build_ns(r);
    if (built_before >= 0 && built_after >= 0) {
        double building = (double)(built_after - built_before) * 1e-6;
        result->compile_ms = (isnan(result->compile_ms) ? 0.0 : result->compile_ms) + building;
        /* build_ns sums the threads that build at once (one per device): never below 0. */
        ms = fmax(ms - building, 0.0);
    }
    if (status == CLOPS_OK) {
        result->call_ms[result->calls++] = ms;
        progress_call_end(r->progress, ms);
    }
    return status;
}

/* LAPACK's info, where the step has it: read back from the device after the step. */
static int read_info(struct run *r, const struct pl_step *step, struct step_result *result)
{
    int p = step_info_param(step);
    if (p < 0)
        return CLI_OK;
    struct pl_tensor *t = &r->pl->tensors[step->values[p].tensor];
    if (t->elements < 1 || fetch(r, t) != CLI_OK)
        return t->elements < 1 ? CLI_OK : CLI_FAILED;
    result->info = ((const int32_t *)t->data)[0];
    result->has_info = 1;
    return CLI_OK;
}

/* The calls of one step; a failed transfer is reported here, a failed call by the caller. */
static int32_t run_step(struct run *r, int index, int *transfer_failed)
{
    struct pl_step *step = &r->pl->steps[index];
    struct step_result *result = &r->result->steps[index];
    *transfer_failed = 0;
    if ((step->repeat > 1 || has_checks(r->pl, index)) && snapshot_written(r, step) != CLI_OK) {
        *transfer_failed = 1;
        result->state = STEP_FAILED;
        return CLOPS_ERR_DEVICE;
    }
    struct clops_arg *args = host_xcalloc((size_t)step->op->param_count, sizeof *args);
    int32_t count = step_args(r->pl, step, args);
    result->call_ms = host_xcalloc((size_t)step->repeat, sizeof *result->call_ms);
    char label[128];
    snprintf(label, sizeof label, "step %d/%d %s", index + 1, r->pl->step_count, step->op->name);
    progress_begin(r->progress, shard_position(r->options->shard, r->pl->run->index), index, label);
    int32_t status = CLOPS_OK;
    double first = host_now_ms();
    for (int32_t call = 0; call < step->repeat && status == CLOPS_OK; call++) {
        if (call > 0 && restore_written(r, step) != CLI_OK) {
            *transfer_failed = 1;
            status = CLOPS_ERR_DEVICE;
            break;
        }
        progress_call_begin(r->progress, call, step->repeat);
        status = timed_call(r, step, args, count, result);
    }
    step_result_summarise(result);
    step->best_ms = result->best_ms;
    mark_written(r->pl, step);
    if (status == CLOPS_OK && read_info(r, step, result) != CLI_OK) {
        *transfer_failed = 1;
        status = CLOPS_ERR_DEVICE;
    }
    result->state = status == CLOPS_OK ? STEP_OK : STEP_FAILED;
    char line[256], building[64] = "";
    if (result->compile_ms > 0.0)
        snprintf(building, sizeof building, " (%.1f ms of it building kernels)",
                 result->compile_ms);
    snprintf(line, sizeof line, "%s ... %s in %.1f ms%s", label,
             status == CLOPS_OK              ? "done"
             : status == CLOPS_ERR_CANCELLED ? "cancelled"
                                             : "FAILED",
             host_now_ms() - first, building);
    progress_end(r->progress, line);
    free(args);
    return status;
}

/* The step's checks, on host copies of its tensors. */
static int measure_checks_of(struct run *r, int32_t step_index)
{
    const struct pl_step *step = &r->pl->steps[step_index];
    for (int32_t p = 0; p < step->op->param_count; p++)
        if (step->values[p].tensor >= 0 && fetch(r, &r->pl->tensors[step->values[p].tensor]))
            return CLI_FAILED;
    for (int i = 0; i < r->pl->check_count; i++) {
        struct pl_check *check = &r->pl->checks[i];
        if (check->step != step_index)
            continue;
        check->error = check->kind->measure(r->pl, step, check->detail, sizeof check->detail);
        check->ran = 1;
    }
    return CLI_OK;
}

/* The progress model's slot of a step's checks: after the steps' own. */
int checks_slot(const struct pipeline *pl, int step_index)
{
    return pl->step_count + step_index;
}

/* Checks run right after their step, before a later step can change what they look at; they
 * read host copies, so the step's tensors come back from the device first. */
static int run_checks_of(struct run *r, int32_t step_index)
{
    const struct pl_step *step = &r->pl->steps[step_index];
    if (!has_checks(r->pl, step_index))
        return CLI_OK;
    char label[128];
    snprintf(label, sizeof label, "step %d/%d %s, checks", step_index + 1, r->pl->step_count,
             step->op->name);
    progress_begin(r->progress, shard_position(r->options->shard, r->pl->run->index),
                   checks_slot(r->pl, step_index), label);
    double start = host_now_ms();
    int code = measure_checks_of(r, step_index);
    if (code == CLI_OK)
        progress_call_end(r->progress, host_now_ms() - start);
    progress_end(r->progress, NULL);
    return code;
}

int check_passed(const struct pl_check *check)
{
    return check->ran && !isnan(check->error) && check->error <= check->tolerance;
}

/* ---- outputs ------------------------------------------------------------------------------ */

/* A signal caught (interrupt.h) stopped the run: the message says where (the step cancelled,
 * or the outputs left unwritten), and nothing more is written. Returns the exit code. */
static int interrupted(struct run *r, const char *where)
{
    int sig = interrupt_signal();
    return run_error(r, interrupt_exit_code(sig), "%sinterrupted (%s): %s", r->prefix,
                     interrupt_signal_name(sig), where);
}

/* Writes the outputs, each file's size and SHA-256 read back from what was written. */
static int write_outputs(struct run *r)
{
    for (int i = 0; i < r->pl->output_count; i++) {
        const struct pl_output *out = &r->pl->outputs[i];
        struct output_result *written = &r->result->outputs[i];
        struct pl_tensor *t = &r->pl->tensors[out->tensor];
        if (interrupt_signal() != 0) {
            char where[64];
            snprintf(where, sizeof where, "outputs[%d] and those after it not written", i);
            return interrupted(r, where);
        }
        if (fetch(r, t) != CLI_OK)
            return CLI_FAILED;
        struct fmt_tensor f = {.dtype = t->dtype, .rank = t->rank, .data = t->data};
        memcpy(f.shape, t->shape, sizeof f.shape);
        char err[512];
        if (fmt_write(written->path, &f, err, sizeof err) != 0)
            return run_error(r, CLI_FAILED, "%soutputs[%d] (%s:%d): cannot write %s: %s", r->prefix,
                             i, r->pl->path, out->line, written->path, err);
        if (sha256_file(written->path, written->sha256, &written->bytes) != 0)
            return run_error(r, CLI_FAILED, "%soutputs[%d] (%s:%d): cannot read %s back: %s",
                             r->prefix, i, r->pl->path, out->line, written->path, strerror(errno));
        written->written = 1;
        if (r->json == NULL)
            printf("Wrote %s (%s, %lld bytes of data) to %s\n", t->name, host_dtype_name(t->dtype),
                   (long long)tensor_bytes(t), written->path);
    }
    return CLI_OK;
}

/* ---- one run ------------------------------------------------------------------------------ */

static int step_failed(struct run *r, int i, int transfer_failed)
{
    const struct pl_step *step = &r->pl->steps[i];
    if (r->json == NULL)
        print_steps(r);
    return run_error(r, CLI_FAILED, "%ssteps[%d] (%s, %s:%d) failed%s%s; outputs not written",
                     r->prefix, i, step->op->name, r->pl->path, step->line,
                     transfer_failed ? "" : ": ", transfer_failed ? "" : r->call_error);
}

/* The step that ran when a signal came: its call cancelled (or complete, if it came too late). */
static int step_interrupted(struct run *r, int i)
{
    const struct pl_step *step = &r->pl->steps[i];
    char where[1024];
    snprintf(where, sizeof where, "steps[%d] (%s, %s:%d) cancelled; outputs not written", i,
             step->op->name, r->pl->path, step->line);
    return interrupted(r, where);
}

/* Runs every step (stopping at the first failure) with its checks; returns an exit code. */
static int run_steps(struct run *r)
{
    for (int i = 0; i < r->pl->step_count; i++) {
        int transfer_failed = 0;
        int32_t status = run_step(r, i, &transfer_failed);
        if (interrupt_signal() != 0)
            return step_interrupted(r, i);
        if (status != CLOPS_OK)
            return step_failed(r, i, transfer_failed);
        r->steps_done = i + 1;
        if (run_checks_of(r, i) != CLI_OK)
            return step_failed(r, i, 1);
    }
    if (interrupt_signal() != 0)
        return interrupted(r, "after the last step; outputs not written");
    if (r->progress != NULL)
        putc('\n', stderr);
    if (r->json == NULL) {
        print_steps(r);
        print_checks(r->pl);
    }
    int failed = 0;
    for (int i = 0; i < r->pl->check_count; i++)
        failed += !check_passed(&r->pl->checks[i]);
    if (failed > 0)
        return run_error(r, CLI_FAILED, "%s%d of %d checks failed; outputs not written", r->prefix,
                         failed, r->pl->check_count);
    return CLI_OK;
}

int run_one(struct run *r, int *fatal)
{
    struct pipeline *pl = r->pl;
    if (pl->run->label[0] != '\0')
        snprintf(r->prefix, sizeof r->prefix, "run %lld (%s): ", (long long)pl->run->index,
                 pl->run->label);
    for (int i = 0; i < pl->tensor_count; i++)
        generate(&pl->tensors[i]);
    int code = take_pool(r);
    *fatal = code != CLI_OK;
    if (code == CLI_OK) {
        if (r->json == NULL)
            printf("Pipeline %s on %s (pool: %s)\n\n", pl->path, r->pool->device,
                   pl->pool_path != NULL ? pl->pool_path : "built-in defaults");
        if (r->json == NULL && r->pool->prebuilt == 1) {
            printf("Kernels built before the steps: %lld programs compiled, %lld loaded from the "
                   "cache, in %.1f ms\n(not in the steps' times; --no-prebuild leaves it to "
                   "their first calls)\n\n",
                   (long long)r->pool->programs_built, (long long)r->pool->programs_loaded,
                   r->pool->prebuild_ms);
            r->pool->prebuilt = 2; /* said once, for the run that made the pool */
        }
        fflush(stdout);
        code = run_stream_open(r);
    }
    if (code == CLI_OK)
        code = upload_tensors(r);
    if (code == CLI_OK)
        code = run_steps(r);
    if (code == CLI_OK && pl->output_count > 0) {
        if (r->json == NULL)
            putchar('\n');
        code = write_outputs(r);
    }
    run_stream_close(r);
    if (r->pool->pool != NULL && r->cli->verbose && interrupt_signal() == 0)
        print_pool_stats(r);
    release_buffers(r);
    return code;
}
