"""_abi.py — abi/clops.h mirrored for ctypes: the constants, every struct member by member (same
order, same fixed-width types) and the table clops_plugin_entry() returns. Nothing here calls the
library; _library.py loads it and reads the table through these mirrors."""

import ctypes
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_int32, c_int64,
                    c_uint16, c_uint32, c_void_p)

__all__ = [
    "ABI_MAJOR", "ABI_MINOR", "PARAM_SIZE_1_1", "ARG_SIZE_1_1", "MAX_RANK",
    "OK", "ERR_INVALID_ARGUMENT", "ERR_UNSUPPORTED", "ERR_OUT_OF_DEVICE_MEMORY",
    "ERR_OUT_OF_HOST_MEMORY", "ERR_DEVICE", "ERR_BUILD", "ERR_CONFIG", "ERR_IO", "ERR_NOT_FOUND",
    "ERR_ABI_MISMATCH", "ERR_NO_DEVICE", "ERR_INTERNAL", "ERR_CANCELLED", "ERR_TIMEOUT",
    "F32", "F64", "I32", "U32", "U8", "I64", "DTYPES",
    "TENSOR_IN", "TENSOR_OUT", "TENSOR_INOUT", "INT64", "DOUBLE", "ENUM", "STRING", "TENSOR_KINDS",
    "LOG_ERROR", "LOG_WARNING", "LOG_INFO", "LOG_DEBUG",
    "clops_tensor", "clops_param", "clops_op", "clops_arg", "clops_device_info", "clops_stats",
    "clops_op_stats", "clops_device_stats", "clops_output_spec", "clops_log_fn", "clops_api",
    "EVENT_QUEUED", "EVENT_RUNNING", "EVENT_COMPLETE", "EVENT_FAILED", "EVENT_CANCELLED",
    "clops_event_fn", "clops_stream_create_args", "clops_stream_release_args",
    "clops_stream_wait_args", "clops_submit_args", "clops_event_query_args",
    "clops_event_wait_args", "clops_event_callback_args", "clops_event_cancel_args",
    "clops_event_release_args", "clops_event_cl_args", "clops_pool_from_cl_args",
    "clops_buffer_wrap_args", "clops_buffer_cl_args", "clops_memory_stats_args",
    "clops_buffer_copy_args", "clops_host_register_args", "clops_buffer_create_args",
]

ABI_MAJOR = 1
ABI_MINOR = 5
# Element sizes of ABI 1.0 and 1.1, which did not state them (CLOPS_PARAM_SIZE_1_1, ..._ARG_...).
PARAM_SIZE_1_1, ARG_SIZE_1_1 = 40, 48
MAX_RANK = 4

# enum clops_status
OK, ERR_INVALID_ARGUMENT, ERR_UNSUPPORTED = 0, 1, 2
ERR_OUT_OF_DEVICE_MEMORY, ERR_OUT_OF_HOST_MEMORY, ERR_DEVICE, ERR_BUILD = 3, 4, 5, 6
ERR_CONFIG, ERR_IO, ERR_NOT_FOUND, ERR_ABI_MISMATCH, ERR_NO_DEVICE, ERR_INTERNAL = range(7, 13)
ERR_CANCELLED, ERR_TIMEOUT = 13, 14  # ABI 1.4
_STATUS_NAMES = ("OK INVALID_ARGUMENT UNSUPPORTED OUT_OF_DEVICE_MEMORY OUT_OF_HOST_MEMORY DEVICE "
                 "BUILD CONFIG IO NOT_FOUND ABI_MISMATCH NO_DEVICE INTERNAL CANCELLED "
                 "TIMEOUT").split()

# enum clops_dtype: name, itemsize, array.array typecode, NumPy dtype name
F32, F64, I32, U32, U8, I64 = 1, 2, 3, 4, 5, 6
DTYPES = {F32: ("f32", 4, "f", "float32"), F64: ("f64", 8, "d", "float64"),
          I32: ("i32", 4, "i", "int32"), U32: ("u32", 4, "I", "uint32"),
          U8: ("u8", 1, "B", "uint8"), I64: ("i64", 8, "q", "int64")}

# enum clops_param_kind
TENSOR_IN, TENSOR_OUT, TENSOR_INOUT, INT64, DOUBLE, ENUM, STRING = range(1, 8)
TENSOR_KINDS = (TENSOR_IN, TENSOR_OUT, TENSOR_INOUT)

# enum clops_log_level
LOG_ERROR, LOG_WARNING, LOG_INFO, LOG_DEBUG = range(4)

# enum clops_event_state (ABI 1.4)
EVENT_QUEUED, EVENT_RUNNING, EVENT_COMPLETE, EVENT_FAILED, EVENT_CANCELLED = range(5)


# ---- The ABI, mirrored from abi/clops.h: same members, same order, same fixed-width types ----

class clops_tensor(Structure):
    _fields_ = [("data", c_void_p), ("buffer", c_void_p), ("offset", c_int64),
                ("dtype", c_int32), ("rank", c_int32),
                ("shape", c_int64 * MAX_RANK), ("strides", c_int64 * MAX_RANK)]


class clops_param(Structure):
    _fields_ = [("name", c_char_p), ("kind", c_int32), ("dtypes", c_uint32),
                ("enum_values", POINTER(c_char_p)), ("default_value", c_char_p),
                ("doc", c_char_p)]


class clops_op(Structure):
    _fields_ = [("struct_size", c_uint32), ("version", c_int32), ("name", c_char_p),
                ("summary", c_char_p), ("doc", c_char_p), ("param_count", c_int32),
                ("reserved", c_int32), ("params", POINTER(clops_param)), ("entry", c_void_p),
                # Appended in ABI 1.2: present when struct_size covers it (see _params).
                ("param_size", c_uint32), ("reserved2", c_int32)]


class clops_arg(Structure):
    _fields_ = [("name", c_char_p), ("kind", c_int32), ("reserved", c_int32),
                ("tensor", POINTER(clops_tensor)), ("i", c_int64), ("d", c_double),
                ("s", c_char_p)]


class clops_device_info(Structure):
    _fields_ = [("struct_size", c_uint32), ("type", c_int32), ("name", ctypes.c_char * 128),
                ("vendor", ctypes.c_char * 64), ("platform", ctypes.c_char * 64),
                ("driver_version", ctypes.c_char * 64), ("opencl_version", ctypes.c_char * 64),
                ("global_mem_bytes", c_int64), ("local_mem_bytes", c_int64),
                ("compute_units", c_int32), ("queues", c_int32), ("fp64", c_int32),
                ("platform_index", c_int32), ("device_index", c_int32), ("reserved", c_int32)]


class clops_stats(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_int32), ("programs_built", c_int64),
                ("programs_loaded", c_int64), ("cache_rejected", c_int64), ("calls", c_int64),
                ("bytes_uploaded", c_int64), ("bytes_downloaded", c_int64),
                ("build_ns", c_int64)]  # ABI 1.3


class clops_op_stats(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_int32), ("name", c_char_p),
                ("calls", c_int64), ("failures", c_int64), ("device_ns", c_int64)]


class clops_device_stats(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_int32), ("tasks", c_int64),
                ("busy_ns", c_int64)]


class clops_output_spec(Structure):
    """What an output tensor of a call must be (check_sized, ABI 1.2)."""
    _fields_ = [("struct_size", c_uint32), ("param", c_int32), ("dtype", c_int32),
                ("rank", c_int32), ("shape", c_int64 * MAX_RANK)]


clops_log_fn = CFUNCTYPE(None, c_int32, c_char_p, c_void_p)
_pool_p, _buffer_p = c_void_p, c_void_p  # opaque: struct clops_pool *, struct clops_buffer *


# ---- ABI 1.4: non-blocking calls (abi/clops.h, "Non-blocking calls"): streams, events, submit.
# Every function takes one args struct that starts with its size (struct_size = its sizeof).
_stream_p, _event_p = c_void_p, c_void_p  # opaque: struct clops_stream *, struct clops_event *

# void (*)(struct clops_event *event, int32_t status, void *user): runs on a thread of the stream.
clops_event_fn = CFUNCTYPE(None, _event_p, c_int32, c_void_p)


class clops_stream_create_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("device", c_int32), ("pool", _pool_p),
                ("cl_queue", c_void_p), ("stream", _stream_p)]


class clops_stream_release_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_int32), ("stream", _stream_p)]


class clops_stream_wait_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("event_count", c_int32), ("stream", _stream_p),
                ("events", POINTER(_event_p))]


class clops_submit_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("op_index", c_int32), ("stream", _stream_p),
                ("args", POINTER(clops_arg)), ("nargs", c_int32), ("arg_size", c_uint32),
                ("wait_events", POINTER(_event_p)), ("wait_count", c_int32),
                ("cl_wait_count", c_int32), ("cl_wait_events", POINTER(c_void_p)),
                ("on_complete", clops_event_fn), ("user", c_void_p), ("event", _event_p)]


class clops_event_query_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("state", c_int32), ("event", _event_p),
                ("status", c_int32), ("reserved", c_int32), ("message", c_char_p),
                ("progress", c_double)]


class clops_event_wait_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("count", c_int32), ("events", POINTER(_event_p)),
                ("timeout_ns", c_int64), ("wait_all", c_int32), ("ready", c_int32)]


class clops_event_callback_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_int32), ("event", _event_p),
                ("fn", clops_event_fn), ("user", c_void_p)]


class clops_event_cancel_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_int32), ("event", _event_p)]


class clops_event_release_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_int32), ("event", _event_p)]


class clops_event_cl_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_int32), ("event", _event_p),
                ("cl_event", c_void_p)]


# ---- ABI 1.4: interop and device memory (abi/clops.h, "Interop and device memory") ----
# OpenCL handles cross the ABI as void *: integers here (pyopencl's `int_ptr`).

class clops_pool_from_cl_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("device_count", c_int32), ("cl_context", c_void_p),
                ("cl_devices", POINTER(c_void_p)), ("cl_queues", POINTER(c_void_p)),
                ("config_text", c_char_p), ("pool", c_void_p)]


class clops_buffer_wrap_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("device", c_int32), ("pool", c_void_p),
                ("cl_mem", c_void_p), ("buffer", c_void_p), ("bytes", c_int64)]


class clops_buffer_cl_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("device", c_int32), ("buffer", c_void_p),
                ("cl_mem", c_void_p), ("cl_context", c_void_p)]


class clops_memory_stats_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("device", c_int32), ("pool", c_void_p),
                ("allocated_bytes", c_int64), ("peak_bytes", c_int64), ("buffers", c_int64),
                ("limit_bytes", c_int64)]


class clops_buffer_copy_args(Structure):
    _fields_ = [("struct_size", c_uint32), ("wait_count", c_int32), ("stream", c_void_p),
                ("src", c_void_p), ("src_offset", c_int64), ("dst", c_void_p),
                ("dst_offset", c_int64), ("bytes", c_int64), ("wait_events", POINTER(c_void_p)),
                ("event", c_void_p)]


class clops_host_register_args(Structure):
    """host_register and host_unregister's (ABI 1.4, after buffer_copy): [data, data + bytes)
    page-locked for the pool's devices; host_unregister reads data only."""
    _fields_ = [("struct_size", c_uint32), ("flags", c_int32), ("pool", c_void_p),
                ("data", c_void_p), ("bytes", c_int64)]


class clops_buffer_create_args(Structure):
    """buffer_create_on's (ABI 1.4, after host_unregister): a buffer of `bytes` on the pool's
    device `device`; buffer is the host's until buffer_release."""
    _fields_ = [("struct_size", c_uint32), ("device", c_int32), ("pool", c_void_p),
                ("bytes", c_int64), ("buffer", c_void_p)]


class clops_prebuild_args(Structure):
    """pool_prebuild's (ABI 1.5): the kernels of `ops` (NULL: every operator) in `dtypes` (NULL:
    every dtype each takes) built ahead of time on every device of the pool; the counts out."""
    _fields_ = [("struct_size", c_uint32), ("flags", c_int32), ("pool", c_void_p),
                ("ops", POINTER(c_char_p)), ("op_count", c_int32), ("dtype_count", c_int32),
                ("dtypes", POINTER(c_int32)), ("programs_built", c_int64),
                ("programs_loaded", c_int64), ("build_ns", c_int64), ("wall_ns", c_int64)]


def _args_fn(args_type):
    """int32_t (*)(struct args_type *): the shape of every function ABI 1.4 appends."""
    return CFUNCTYPE(c_int32, POINTER(args_type))


class clops_api(Structure):
    _fields_ = [
        ("struct_size", c_uint32), ("abi_major", c_uint16), ("abi_minor", c_uint16),
        ("version", CFUNCTYPE(c_char_p)),
        ("last_error", CFUNCTYPE(c_char_p)),
        ("status_name", CFUNCTYPE(c_char_p, c_int32)),
        ("set_log_callback", CFUNCTYPE(None, clops_log_fn, c_void_p, c_int32)),
        ("devices_list", CFUNCTYPE(c_int32, POINTER(clops_device_info), c_int32,
                                   POINTER(c_int32))),
        ("pool_create_default", CFUNCTYPE(c_int32, POINTER(_pool_p))),
        ("pool_create_from_file", CFUNCTYPE(c_int32, c_char_p, POINTER(_pool_p))),
        ("pool_create_from_string", CFUNCTYPE(c_int32, c_char_p, POINTER(_pool_p))),
        ("pool_release", CFUNCTYPE(None, _pool_p)),
        ("pool_device_count", CFUNCTYPE(c_int32, _pool_p)),
        ("pool_device_info", CFUNCTYPE(c_int32, _pool_p, c_int32, POINTER(clops_device_info))),
        ("pool_stats", CFUNCTYPE(c_int32, _pool_p, POINTER(clops_stats))),
        ("pool_op_stats", CFUNCTYPE(c_int32, _pool_p, c_int32, POINTER(clops_op_stats))),
        ("buffer_create", CFUNCTYPE(c_int32, _pool_p, c_int64, POINTER(_buffer_p))),
        ("buffer_upload", CFUNCTYPE(c_int32, _buffer_p, c_int64, c_void_p, c_int64)),
        ("buffer_download", CFUNCTYPE(c_int32, _buffer_p, c_int64, c_void_p, c_int64)),
        ("buffer_release", CFUNCTYPE(None, _buffer_p)),
        ("buffer_size", CFUNCTYPE(c_int64, _buffer_p)),
        ("op_count", CFUNCTYPE(c_int32)),
        ("op_at", CFUNCTYPE(POINTER(clops_op), c_int32)),
        ("op_find", CFUNCTYPE(POINTER(clops_op), c_char_p)),
        ("op_index", CFUNCTYPE(c_int32, POINTER(clops_op))),
        ("invoke", CFUNCTYPE(c_int32, _pool_p, POINTER(clops_op), POINTER(clops_arg), c_int32)),
        # Appended in ABI 1.1: check with has("pool_device_stats").
        ("pool_device_stats", CFUNCTYPE(c_int32, _pool_p, c_int32, POINTER(clops_device_stats))),
        # Appended in ABI 1.2: check with has("invoke_sized").
        ("invoke_sized", CFUNCTYPE(c_int32, _pool_p, POINTER(clops_op), POINTER(clops_arg), c_int32,
                                   c_uint32)),
        ("check_sized", CFUNCTYPE(c_int32, _pool_p, POINTER(clops_op), POINTER(clops_arg), c_int32,
                                  c_uint32, POINTER(clops_output_spec), c_uint32, c_int32,
                                  POINTER(c_int32))),
        # Appended in ABI 1.4: check with has("stream_create") (or the member used).
        ("stream_create", _args_fn(clops_stream_create_args)),
        ("stream_release", _args_fn(clops_stream_release_args)),
        ("stream_wait", _args_fn(clops_stream_wait_args)),
        ("submit", _args_fn(clops_submit_args)),
        ("event_query", _args_fn(clops_event_query_args)),
        ("event_wait", _args_fn(clops_event_wait_args)),
        ("event_on_complete", _args_fn(clops_event_callback_args)),
        ("event_cancel", _args_fn(clops_event_cancel_args)),
        ("event_release", _args_fn(clops_event_release_args)),
        ("event_cl_event", _args_fn(clops_event_cl_args)),
        ("pool_create_from_cl", _args_fn(clops_pool_from_cl_args)),
        ("buffer_wrap_cl", _args_fn(clops_buffer_wrap_args)),
        ("buffer_cl", _args_fn(clops_buffer_cl_args)),
        ("memory_stats", _args_fn(clops_memory_stats_args)),
        ("buffer_copy", _args_fn(clops_buffer_copy_args)),
        # Appended after buffer_copy: check with has("host_unregister") before either.
        ("host_register", _args_fn(clops_host_register_args)),
        ("host_unregister", _args_fn(clops_host_register_args)),
        # Appended after host_unregister: check with has("buffer_create_on").
        ("buffer_create_on", _args_fn(clops_buffer_create_args)),
        # Appended in ABI 1.5: check with has("pool_prebuild").
        ("pool_prebuild", _args_fn(clops_prebuild_args)),
    ]


def _end_of(member, struct=clops_api):
    """CLOPS_API_HAS's bound: the offset just past `member` of `struct`."""
    field = getattr(struct, member)
    return field.offset + field.size
