/* entry.c — the ABI table: the functions a host reaches through clops_plugin_entry(). Each one
 * clears the thread's last error, checks its arguments and delegates to its module. */
#include "entry.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "buffer_copy.h"
#include "config.h"
#include "error.h"
#include "event.h"
#include "host_register.h"
#include "invoke.h"
#include "pool.h"
#include "prebuild.h"
#include "registry.h"
#include "stream.h"
#include "tensor.h"

static const char *api_version(void)
{
    return CLOPS_VERSION_STRING;
}

static const char *api_last_error(void)
{
    return err_last();
}

static const char *api_status_name(int32_t status)
{
    return err_status_name(status);
}

static void api_set_log_callback(clops_log_fn fn, void *user, int32_t max_level)
{
    log_set_callback(fn, user, max_level);
}

static int32_t api_devices_list(struct clops_device_info *out, int32_t capacity, int32_t *count)
{
    err_clear();
    if (count == NULL || capacity < 0 || (capacity > 0 && out == NULL))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "devices_list: expected count non-NULL, capacity >= 0 and out non-NULL "
                       "when capacity > 0");
    return pool_list_devices(out, capacity, count);
}

static int32_t create_pool(const struct pool_config *cfg, struct clops_pool **out)
{
    if (out == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "pool_create: parameter 'out' is NULL");
    return pool_create(cfg, out);
}

static int32_t api_pool_create_default(struct clops_pool **out)
{
    err_clear();
    struct pool_config cfg;
    config_defaults(&cfg);
    /* No file or text to name in messages ("<source>: no OpenCL device found"). */
    snprintf(cfg.source, sizeof cfg.source, "%s", "<default configuration>");
    return create_pool(&cfg, out);
}

/* pool_create_from_file and _from_string: `source` is the path or the text that `parse` reads;
 * `entry` and `param` name the call and the parameter in the message when it is NULL. */
static int32_t create_pool_parsed(const char *source,
                                  int32_t (*parse)(const char *, struct pool_config *),
                                  const char *entry, const char *param, struct clops_pool **out)
{
    err_clear();
    if (out != NULL)
        *out = NULL;
    if (source == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter '%s' is NULL", entry, param);
    struct pool_config cfg;
    int32_t status = parse(source, &cfg);
    return status != CLOPS_OK ? status : create_pool(&cfg, out);
}

static int32_t api_pool_create_from_file(const char *path, struct clops_pool **out)
{
    return create_pool_parsed(path, config_parse_file, "pool_create_from_file", "path", out);
}

static int32_t api_pool_create_from_string(const char *text, struct clops_pool **out)
{
    return create_pool_parsed(text, config_parse_string, "pool_create_from_string", "config_text",
                              out);
}

static void api_pool_release(struct clops_pool *pool)
{
    pool_release(pool);
}

static int32_t api_pool_device_count(const struct clops_pool *pool)
{
    if (pool == NULL || pool_hold(pool, "pool_device_count") != CLOPS_OK)
        return 0;
    const int32_t count = pool_device_count(pool);
    pool_unhold(pool);
    return count;
}

/* The stats and info entries' checks, `entry` naming the call: pool and out are non-NULL. Then
 * the pool is held (pool_hold) until the caller lets go of it. */
static int32_t hold_pool_and_out(const char *entry, const struct clops_pool *pool, const void *out)
{
    if (pool == NULL || out == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter '%s' is NULL", entry,
                       pool == NULL ? "pool" : "out");
    return pool_hold(pool, entry);
}

/* hold_pool_and_out, and index names one of the pool's devices: *dev. On failure nothing is
 * held. */
static int32_t find_device(const char *entry, const struct clops_pool *pool, int32_t index,
                           const void *out, const struct pool_device **dev)
{
    int32_t status = hold_pool_and_out(entry, pool, out);
    if (status != CLOPS_OK)
        return status;
    const int32_t count = pool_device_count(pool);
    if (index < 0 || index >= count) {
        pool_unhold(pool);
        return err_set(CLOPS_ERR_NOT_FOUND, "%s: parameter 'index' = %d; the pool has %d device(s)",
                       entry, (int)index, (int)count);
    }
    *dev = pool_device_at(pool, index);
    return CLOPS_OK;
}

static int32_t api_pool_device_info(const struct clops_pool *pool, int32_t index,
                                    struct clops_device_info *out)
{
    err_clear();
    const struct pool_device *dev = NULL;
    int32_t status = find_device("pool_device_info", pool, index, out, &dev);
    if (status != CLOPS_OK)
        return status;
    status = pool_copy_sized(out, pool_device_info(dev), sizeof *out);
    pool_unhold(pool);
    return status;
}

static int32_t api_pool_stats(const struct clops_pool *pool, struct clops_stats *out)
{
    err_clear();
    int32_t status = hold_pool_and_out("pool_stats", pool, out);
    if (status != CLOPS_OK)
        return status;
    struct clops_stats s;
    pool_read_stats(pool, &s);
    pool_unhold(pool);
    return pool_copy_sized(out, &s, sizeof s);
}

static int32_t api_pool_op_stats(const struct clops_pool *pool, int32_t index,
                                 struct clops_op_stats *out)
{
    err_clear();
    int32_t status = hold_pool_and_out("pool_op_stats", pool, out);
    if (status != CLOPS_OK)
        return status;
    if (index < 0 || index >= registry_count()) {
        pool_unhold(pool);
        return err_set(CLOPS_ERR_NOT_FOUND,
                       "pool_op_stats: parameter 'index' = %d; there are %d operators", (int)index,
                       (int)registry_count());
    }
    struct clops_op_stats s;
    pool_read_op_stats(pool, index, &s);
    pool_unhold(pool);
    return pool_copy_sized(out, &s, sizeof s);
}

static int32_t api_pool_device_stats(const struct clops_pool *pool, int32_t index,
                                     struct clops_device_stats *out)
{
    err_clear();
    const struct pool_device *dev = NULL;
    int32_t status = find_device("pool_device_stats", pool, index, out, &dev);
    if (status != CLOPS_OK)
        return status;
    struct clops_device_stats s;
    pool_read_device_stats(dev, &s);
    pool_unhold(pool);
    return pool_copy_sized(out, &s, sizeof s);
}

static int32_t api_buffer_create(struct clops_pool *pool, int64_t bytes, struct clops_buffer **out)
{
    err_clear();
    return buffer_create(pool, bytes, out);
}

static int32_t api_buffer_upload(struct clops_buffer *b, int64_t offset, const void *src,
                                 int64_t bytes)
{
    err_clear();
    return buffer_upload(b, offset, src, bytes);
}

static int32_t api_buffer_download(struct clops_buffer *b, int64_t offset, void *dst, int64_t bytes)
{
    err_clear();
    return buffer_download(b, offset, dst, bytes);
}

static void api_buffer_release(struct clops_buffer *b)
{
    buffer_release(b);
}

static int64_t api_buffer_size(const struct clops_buffer *b)
{
    return buffer_size(b);
}

static int32_t api_op_count(void)
{
    return registry_count();
}

static const struct clops_op *api_op_at(int32_t index)
{
    return registry_at(index);
}

static const struct clops_op *api_op_find(const char *name)
{
    err_clear();
    const struct clops_op *op = registry_find(name);
    if (op == NULL)
        err_set(CLOPS_ERR_NOT_FOUND, "op_find: no operator named '%s'",
                name == NULL ? "(NULL)" : name);
    return op;
}

static int32_t api_op_index(const struct clops_op *op)
{
    return registry_index(op);
}

/* ---- ABI 1.4: interop and device memory ---- */

/* The size of an args struct through `member`, its last in the ABI that added the struct: the
 * least struct_size accepted (members appended later are read only when it covers them). */
#define ARGS_SIZE_THROUGH(type, member) (offsetof(type, member) + sizeof(((type *)NULL)->member))

/* The checks every args struct gets: non-NULL, and a struct_size of at least `least`. */
static int32_t check_args_struct(const void *args, size_t least, const char *entry)
{
    if (args == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'args' is NULL", entry);
    uint32_t size;
    memcpy(&size, args, sizeof size);
    if (size < least)
        return err_set(CLOPS_ERR_ABI_MISMATCH,
                       "%s: args->struct_size = %u; expected at least %zu (set it to sizeof the "
                       "struct)",
                       entry, (unsigned)size, least);
    return CLOPS_OK;
}

static int32_t api_pool_create_from_cl(struct clops_pool_from_cl_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_pool_from_cl_args, pool), "pool_create_from_cl");
    return status != CLOPS_OK ? status : pool_create_from_cl(args);
}

static int32_t api_buffer_wrap_cl(struct clops_buffer_wrap_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_buffer_wrap_args, bytes), "buffer_wrap_cl");
    return status != CLOPS_OK ? status : buffer_wrap_cl(args);
}

static int32_t api_buffer_cl(struct clops_buffer_cl_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_buffer_cl_args, cl_context), "buffer_cl");
    return status != CLOPS_OK ? status : buffer_cl(args);
}

static int32_t api_memory_stats(struct clops_memory_stats_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_memory_stats_args, limit_bytes), "memory_stats");
    if (status == CLOPS_OK)
        status = hold_pool_and_out("memory_stats", args->pool, args);
    if (status != CLOPS_OK)
        return status;
    const int32_t count = pool_device_count(args->pool);
    if (args->device < 0 || args->device >= count)
        status = err_set(CLOPS_ERR_NOT_FOUND,
                         "memory_stats: parameter 'device' = %d; the pool has %d device(s)",
                         (int)args->device, (int)count);
    else
        pool_read_memory_stats(pool_device_at(args->pool, args->device), args);
    pool_unhold(args->pool);
    return status;
}

/* ---- ABI 1.5: kernels ahead of time ---- */

static int32_t api_pool_prebuild(struct clops_prebuild_args *args)
{
    err_clear();
    int32_t status = check_args_struct(args, ARGS_SIZE_THROUGH(struct clops_prebuild_args, wall_ns),
                                       "pool_prebuild");
    if (status != CLOPS_OK)
        return status;
    args->programs_built = args->programs_loaded = args->build_ns = args->wall_ns = 0;
    if (args->flags != 0)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "pool_prebuild: flags = %d; expected 0",
                       (int)args->flags);
    if ((args->ops != NULL && args->op_count < 0) || (args->ops == NULL && args->op_count != 0))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "pool_prebuild: op_count = %d with ops %s; expected ops NULL (every "
                       "operator) with op_count 0, or op_count >= 0 names",
                       (int)args->op_count, args->ops == NULL ? "NULL" : "given");
    if ((args->dtypes != NULL && args->dtype_count < 0) ||
        (args->dtypes == NULL && args->dtype_count != 0))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "pool_prebuild: dtype_count = %d with dtypes %s; expected dtypes NULL "
                       "(every dtype) with dtype_count 0, or dtype_count >= 0 dtypes",
                       (int)args->dtype_count, args->dtypes == NULL ? "NULL" : "given");
    status = hold_pool_and_out("pool_prebuild", args->pool, args);
    if (status != CLOPS_OK)
        return status;
    status = prebuild_run(args);
    pool_unhold(args->pool);
    return status;
}

/* ---- ABI 1.4: streams, events, submit ---- */

static int32_t api_stream_create(struct clops_stream_create_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_stream_create_args, stream), "stream_create");
    if (status != CLOPS_OK)
        return status;
    args->stream = NULL;
    if (args->pool == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "stream_create: parameter 'pool' is NULL");
    return stream_create(args->pool, args->device, (cl_command_queue)args->cl_queue, &args->stream);
}

static int32_t api_stream_release(struct clops_stream_release_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_stream_release_args, stream), "stream_release");
    if (status != CLOPS_OK || args->stream == NULL)
        return status;
    return stream_release(args->stream);
}

static int32_t api_stream_wait(struct clops_stream_wait_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_stream_wait_args, events), "stream_wait");
    if (status != CLOPS_OK)
        return status;
    if (args->stream == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "stream_wait: parameter 'stream' is NULL");
    return stream_wait_events(args->stream, args->events, args->event_count);
}

static int32_t api_submit(struct clops_submit_args *args)
{
    err_clear();
    int32_t status =
        check_args_struct(args, ARGS_SIZE_THROUGH(struct clops_submit_args, event), "submit");
    if (status != CLOPS_OK)
        return status;
    args->event = NULL;
    if (args->stream == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "submit: parameter 'stream' is NULL");
    const struct clops_op *op = registry_at(args->op_index);
    if (op == NULL)
        return err_set(CLOPS_ERR_NOT_FOUND,
                       "submit: parameter 'op_index' = %d; expected 0 .. %d (op_count() - 1)",
                       (int)args->op_index, (int)registry_count() - 1);
    union op_value values[CALL_MAX_PARAMS];
    int32_t index = -1;
    status = invoke_bind(op, args->args, args->nargs, args->arg_size, "submit", &index, values);
    if (status != CLOPS_OK)
        return status;
    const struct stream_waits waits = {args->wait_events, args->wait_count,
                                       (const cl_event *)args->cl_wait_events, args->cl_wait_count};
    return stream_submit(args->stream, index, values, &waits, args->on_complete, args->user,
                         &args->event);
}

/* Every event function's args hold the event at offset 8, which check_event_args reads. */
_Static_assert(offsetof(struct clops_event_query_args, event) == 8, "event at offset 8");
_Static_assert(offsetof(struct clops_event_callback_args, event) == 8, "event at offset 8");
_Static_assert(offsetof(struct clops_event_cancel_args, event) == 8, "event at offset 8");
_Static_assert(offsetof(struct clops_event_cl_args, event) == 8, "event at offset 8");

/* The checks of the event functions' args: the struct, and its event. */
static int32_t check_event_args(const void *args, size_t least, const char *entry)
{
    int32_t status = check_args_struct(args, least, entry);
    if (status != CLOPS_OK)
        return status;
    struct clops_event *event;
    memcpy(&event, (const char *)args + 8, sizeof event); /* every one has it at offset 8 */
    if (event == NULL)
        return err_set(CLOPS_ERR_INVALID_ARGUMENT, "%s: parameter 'event' is NULL", entry);
    return CLOPS_OK;
}

static int32_t api_event_query(struct clops_event_query_args *args)
{
    err_clear();
    int32_t status = check_event_args(
        args, ARGS_SIZE_THROUGH(struct clops_event_query_args, progress), "event_query");
    return status != CLOPS_OK ? status : event_query(args);
}

static int32_t api_event_wait(struct clops_event_wait_args *args)
{
    err_clear();
    int32_t status = check_args_struct(args, ARGS_SIZE_THROUGH(struct clops_event_wait_args, ready),
                                       "event_wait");
    if (status != CLOPS_OK)
        return status;
    if (args->count < 0 || (args->count > 0 && args->events == NULL))
        return err_set(CLOPS_ERR_INVALID_ARGUMENT,
                       "event_wait: count = %d and events = %p; expected count >= 0 and events "
                       "non-NULL when count > 0",
                       (int)args->count, (const void *)args->events);
    for (int32_t i = 0; i < args->count; i++)
        if (args->events[i] == NULL)
            return err_set(CLOPS_ERR_INVALID_ARGUMENT, "event_wait: events[%d] is NULL", (int)i);
    return event_wait(args);
}

static int32_t api_event_on_complete(struct clops_event_callback_args *args)
{
    err_clear();
    int32_t status = check_event_args(
        args, ARGS_SIZE_THROUGH(struct clops_event_callback_args, user), "event_on_complete");
    if (status == CLOPS_OK && args->fn == NULL)
        status = err_set(CLOPS_ERR_INVALID_ARGUMENT, "event_on_complete: parameter 'fn' is NULL");
    return status != CLOPS_OK ? status : event_on_complete(args);
}

static int32_t api_event_cancel(struct clops_event_cancel_args *args)
{
    err_clear();
    int32_t status = check_event_args(
        args, ARGS_SIZE_THROUGH(struct clops_event_cancel_args, event), "event_cancel");
    return status != CLOPS_OK ? status : event_cancel(args);
}

static int32_t api_event_release(struct clops_event_release_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_event_release_args, event), "event_release");
    if (status == CLOPS_OK)
        event_release(args->event);
    return status;
}

static int32_t api_event_cl_event(struct clops_event_cl_args *args)
{
    err_clear();
    int32_t status = check_event_args(args, ARGS_SIZE_THROUGH(struct clops_event_cl_args, cl_event),
                                      "event_cl_event");
    return status != CLOPS_OK ? status : event_cl_event(args);
}

static int32_t api_host_register(struct clops_host_register_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_host_register_args, bytes), "host_register");
    return status != CLOPS_OK ? status : host_register(args);
}

static int32_t api_host_unregister(struct clops_host_register_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_host_register_args, bytes), "host_unregister");
    return status != CLOPS_OK ? status : host_unregister(args);
}

static int32_t api_buffer_create_on(struct clops_buffer_create_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_buffer_create_args, buffer), "buffer_create_on");
    if (status != CLOPS_OK)
        return status;
    args->buffer = NULL;
    return buffer_create_on(args->pool, args->device, args->bytes, &args->buffer,
                            "buffer_create_on");
}

static int32_t api_buffer_copy(struct clops_buffer_copy_args *args)
{
    err_clear();
    int32_t status = check_args_struct(
        args, ARGS_SIZE_THROUGH(struct clops_buffer_copy_args, event), "buffer_copy");
    return status != CLOPS_OK ? status : buffer_copy_submit(args);
}

static const struct clops_api api_v1 = {
    .struct_size = sizeof(struct clops_api),
    .abi_major = CLOPS_ABI_MAJOR,
    .abi_minor = CLOPS_ABI_MINOR,
    .version = api_version,
    .last_error = api_last_error,
    .status_name = api_status_name,
    .set_log_callback = api_set_log_callback,
    .devices_list = api_devices_list,
    .pool_create_default = api_pool_create_default,
    .pool_create_from_file = api_pool_create_from_file,
    .pool_create_from_string = api_pool_create_from_string,
    .pool_release = api_pool_release,
    .pool_device_count = api_pool_device_count,
    .pool_device_info = api_pool_device_info,
    .pool_stats = api_pool_stats,
    .pool_op_stats = api_pool_op_stats,
    .buffer_create = api_buffer_create,
    .buffer_upload = api_buffer_upload,
    .buffer_download = api_buffer_download,
    .buffer_release = api_buffer_release,
    .buffer_size = api_buffer_size,
    .op_count = api_op_count,
    .op_at = api_op_at,
    .op_find = api_op_find,
    .op_index = api_op_index,
    .invoke = invoke_op,
    .pool_device_stats = api_pool_device_stats,
    .invoke_sized = invoke_op_sized,
    .check_sized = check_op_sized,
    .stream_create = api_stream_create,
    .stream_release = api_stream_release,
    .stream_wait = api_stream_wait,
    .submit = api_submit,
    .event_query = api_event_query,
    .event_wait = api_event_wait,
    .event_on_complete = api_event_on_complete,
    .event_cancel = api_event_cancel,
    .event_release = api_event_release,
    .event_cl_event = api_event_cl_event,
    .pool_create_from_cl = api_pool_create_from_cl,
    .buffer_wrap_cl = api_buffer_wrap_cl,
    .buffer_cl = api_buffer_cl,
    .memory_stats = api_memory_stats,
    .buffer_copy = api_buffer_copy,
    .host_register = api_host_register,
    .host_unregister = api_host_unregister,
    .buffer_create_on = api_buffer_create_on,
    .pool_prebuild = api_pool_prebuild,
};

/* Descriptors state sizeof(struct clops_param) (param_size); ABI 1.1's hosts step by the old. */
_Static_assert(sizeof(struct clops_param) >= CLOPS_PARAM_SIZE_1_1, "struct clops_param only grows");

const struct clops_api *entry_table(uint32_t abi_major)
{
    return abi_major == CLOPS_ABI_MAJOR ? &api_v1 : NULL;
}
