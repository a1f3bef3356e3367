/* abi_layout.c — the C compiler's sizes and member offsets of abi/clops.h's structs, for
 * test_clops.f90 to compare with its bind(c) mirrors member by member. */
#include <stddef.h>
#include <stdint.h>

#include "clops.h"

#define SIZE(type) (int64_t)sizeof(struct type)
#define AT(type, member) (int64_t) offsetof(struct type, member)

/* The order is the one test_clops.f90's fortran_layout() lists. */
static const int64_t layout[] = {
    SIZE(clops_tensor),
    AT(clops_tensor, buffer),
    AT(clops_tensor, offset),
    AT(clops_tensor, dtype),
    AT(clops_tensor, rank),
    AT(clops_tensor, shape),
    AT(clops_tensor, strides),
    SIZE(clops_param),
    AT(clops_param, kind),
    AT(clops_param, dtypes),
    AT(clops_param, enum_values),
    AT(clops_param, default_value),
    AT(clops_param, doc),
    SIZE(clops_op),
    AT(clops_op, version),
    AT(clops_op, name),
    AT(clops_op, summary),
    AT(clops_op, doc),
    AT(clops_op, param_count),
    AT(clops_op, reserved),
    AT(clops_op, params),
    AT(clops_op, entry),
    AT(clops_op, param_size),
    AT(clops_op, reserved2),
    SIZE(clops_arg),
    AT(clops_arg, kind),
    AT(clops_arg, reserved),
    AT(clops_arg, tensor),
    AT(clops_arg, i),
    AT(clops_arg, d),
    AT(clops_arg, s),
    SIZE(clops_device_info),
    AT(clops_device_info, type),
    AT(clops_device_info, name),
    AT(clops_device_info, vendor),
    AT(clops_device_info, platform),
    AT(clops_device_info, driver_version),
    AT(clops_device_info, opencl_version),
    AT(clops_device_info, global_mem_bytes),
    AT(clops_device_info, local_mem_bytes),
    AT(clops_device_info, compute_units),
    AT(clops_device_info, queues),
    AT(clops_device_info, fp64),
    AT(clops_device_info, platform_index),
    AT(clops_device_info, device_index),
    AT(clops_device_info, reserved),
    SIZE(clops_stats),
    AT(clops_stats, reserved),
    AT(clops_stats, programs_built),
    AT(clops_stats, programs_loaded),
    AT(clops_stats, cache_rejected),
    AT(clops_stats, calls),
    AT(clops_stats, bytes_uploaded),
    AT(clops_stats, bytes_downloaded),
    AT(clops_stats, build_ns),
    SIZE(clops_op_stats),
    AT(clops_op_stats, reserved),
    AT(clops_op_stats, name),
    AT(clops_op_stats, calls),
    AT(clops_op_stats, failures),
    AT(clops_op_stats, device_ns),
    SIZE(clops_device_stats),
    AT(clops_device_stats, reserved),
    AT(clops_device_stats, tasks),
    AT(clops_device_stats, busy_ns),
    SIZE(clops_api),
    AT(clops_api, abi_major),
    AT(clops_api, abi_minor),
    AT(clops_api, version),
    AT(clops_api, last_error),
    AT(clops_api, status_name),
    AT(clops_api, set_log_callback),
    AT(clops_api, devices_list),
    AT(clops_api, pool_create_default),
    AT(clops_api, pool_create_from_file),
    AT(clops_api, pool_create_from_string),
    AT(clops_api, pool_release),
    AT(clops_api, pool_device_count),
    AT(clops_api, pool_device_info),
    AT(clops_api, pool_stats),
    AT(clops_api, pool_op_stats),
    AT(clops_api, buffer_create),
    AT(clops_api, buffer_upload),
    AT(clops_api, buffer_download),
    AT(clops_api, buffer_release),
    AT(clops_api, buffer_size),
    AT(clops_api, op_count),
    AT(clops_api, op_at),
    AT(clops_api, op_find),
    AT(clops_api, op_index),
    AT(clops_api, invoke),
    AT(clops_api, pool_device_stats),
    AT(clops_api, invoke_sized),
    AT(clops_api, check_sized),
    SIZE(clops_output_spec),
    AT(clops_output_spec, param),
    AT(clops_output_spec, dtype),
    AT(clops_output_spec, rank),
    AT(clops_output_spec, shape),
};

/* Copies up to `capacity` entries into `out`; returns how many there are. */
int32_t clops_test_abi_layout(int64_t *out, int32_t capacity);

int32_t clops_test_abi_layout(int64_t *out, int32_t capacity)
{
    int32_t count = (int32_t)(sizeof layout / sizeof layout[0]);
    for (int32_t i = 0; i < count && i < capacity; i++)
        out[i] = layout[i];
    return count;
}
