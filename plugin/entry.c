/* entry.c — the ABI table: the functions a host reaches through clops_plugin_entry(). Each one
 * clears the thread's last error, checks its arguments and delegates to its module. */
#include "entry.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "invoke.h"
#include "pool.h"
#include "registry.h"
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
};

/* Descriptors state sizeof(struct clops_param) (param_size); ABI 1.1's hosts step by the old. */
_Static_assert(sizeof(struct clops_param) >= CLOPS_PARAM_SIZE_1_1, "struct clops_param only grows");

const struct clops_api *entry_table(uint32_t abi_major)
{
    return abi_major == CLOPS_ABI_MAJOR ? &api_v1 : NULL;
}
