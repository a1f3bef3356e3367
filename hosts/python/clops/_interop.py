"""_interop.py — clops on the host's own OpenCL objects (ABI 1.4): a Pool on a cl_context, its
devices and (optionally) queues; Buffers over cl_mem objects, without a copy; a buffer's cl_mem;
the device memory clops holds. OpenCL objects are pyopencl's (anything with `int_ptr`) or raw
handles as integers. clops retains what it is given while it uses it and never frees it: the
host keeps its own objects alive and releases them as usual."""

import ctypes
import threading
import weakref
from ctypes import CFUNCTYPE, POINTER, Structure, c_int32, c_void_p

from ._abi import (ERR_UNSUPPORTED, clops_api, clops_buffer_cl_args, clops_buffer_wrap_args,
                   clops_memory_stats_args, clops_pool_from_cl_args)
from ._errors import Error
from ._library import library
from ._pool import Buffer, Pool

# The members of ABI 1.4 this module calls, after the ten of streams and events that come first
# in the table (abi/clops.h): a mirror of the table through them, for as long as _abi.clops_api
# stops at ABI 1.3's end.
_STREAM_MEMBERS = ("stream_create", "stream_release", "stream_wait", "submit", "event_query",
                   "event_wait", "event_on_complete", "event_cancel", "event_release",
                   "event_cl_event")
_INTEROP_MEMBERS = [
    ("pool_create_from_cl", CFUNCTYPE(c_int32, POINTER(clops_pool_from_cl_args))),
    ("buffer_wrap_cl", CFUNCTYPE(c_int32, POINTER(clops_buffer_wrap_args))),
    ("buffer_cl", CFUNCTYPE(c_int32, POINTER(clops_buffer_cl_args))),
    ("memory_stats", CFUNCTYPE(c_int32, POINTER(clops_memory_stats_args))),
]

if hasattr(clops_api, "pool_create_from_cl"):
    _Table = clops_api
else:
    class _Table(Structure):
        _fields_ = (list(clops_api._fields_) + [(m, c_void_p) for m in _STREAM_MEMBERS] +
                    _INTEROP_MEMBERS)


def _table(lib, member):
    """The plugin's table read through a mirror that holds `member`, which it must serve."""
    field = getattr(_Table, member)
    if lib.api.struct_size < field.offset + field.size:
        raise Error(ERR_UNSUPPORTED, "%s: this libclops (ABI 1.%d) does not serve it (ABI 1.4)"
                    % (member, lib.api.abi_minor))
    return ctypes.cast(ctypes.pointer(lib.api), POINTER(_Table)).contents


def _handle(x):
    """An OpenCL object's handle: pyopencl's int_ptr, or the integer itself."""
    return getattr(x, "int_ptr", x)


def _sized(struct_type, **members):
    return struct_type(struct_size=ctypes.sizeof(struct_type), **members)


class ClPool(Pool):
    """A Pool on the host's cl_context and devices, on the host's in-order queues (one per
    device) or, with queues=None, on queues of clops' own in that context. config_text sets the
    rest as Pool(config_text=...) does, without a `devices` section."""

    def __init__(self, context, devices, queues=None, config_text=None, lib=None):
        self.lib = lib or library()
        devices = [_handle(d) for d in devices]
        cl_devices = (c_void_p * max(len(devices), 1))(*devices)
        cl_queues = None
        if queues is not None:
            cl_queues = (c_void_p * max(len(queues), 1))(*[_handle(q) for q in queues])
        args = _sized(clops_pool_from_cl_args, device_count=len(devices),
                      cl_context=_handle(context), cl_devices=cl_devices, cl_queues=cl_queues,
                      config_text=config_text.encode() if config_text is not None else None)
        self.lib.check(_table(self.lib, "pool_create_from_cl").pool_create_from_cl(
            ctypes.byref(args)))
        # Pool's own state, as Pool.__init__ sets it up around its handle.
        self.handle, self._buffers = c_void_p(args.pool), weakref.WeakSet()
        self._lock, self._calls, self._deferred = threading.Lock(), 0, []

    def wrap(self, cl_mem, device=0):
        """A Buffer over the host's cl_mem (a buffer of this pool's context), without a copy."""
        b = WrappedBuffer(self, cl_mem, device)
        self._buffers.add(b)
        return b


class WrappedBuffer(Buffer):
    """A Buffer over the host's cl_mem: clops reads and writes the cl_mem itself, retains it
    until release() and never frees it; its bytes are not counted in memory_stats()."""

    def __init__(self, pool, cl_mem, device=0):
        self.pool = pool
        args = _sized(clops_buffer_wrap_args, pool=None, cl_mem=_handle(cl_mem), device=device)
        with pool._use() as pool_handle:
            args.pool = pool_handle
            pool.lib.check(_table(pool.lib, "buffer_wrap_cl").buffer_wrap_cl(ctypes.byref(args)))
        self.handle, self.size = c_void_p(args.buffer), args.bytes


def pool_from_cl(context, devices, queues=None, config_text=None):
    """ClPool(...): a pool on the host's OpenCL context, devices and optional queues."""
    return ClPool(context, devices, queues, config_text)


def wrap_cl_buffer(pool, cl_mem, device=0):
    """pool.wrap(cl_mem): a Buffer over the host's cl_mem (any Pool on the cl_mem's context)."""
    b = WrappedBuffer(pool, cl_mem, device)
    pool._buffers.add(b)
    return b


def buffer_cl(buffer):
    """(cl_mem, cl_context, device index) of a Buffer, created or wrapped, as integers: not
    retained (retain them, pyopencl.MemoryObject.from_int_ptr does, to keep them longer)."""
    lib = buffer.pool.lib
    with buffer.pool._use():
        args = _sized(clops_buffer_cl_args, buffer=buffer._live())
        lib.check(_table(lib, "buffer_cl").buffer_cl(ctypes.byref(args)))
    return args.cl_mem, args.cl_context, args.device


def memory_stats(pool, device=0):
    """The device memory clops holds on one device of the pool, over the whole process (every
    pool on that device): allocated_bytes, peak_bytes, buffers, limit_bytes. Wrapped buffers are
    the host's and are not counted."""
    with pool._use() as handle:
        args = _sized(clops_memory_stats_args, pool=handle, device=device)
        pool.lib.check(_table(pool.lib, "memory_stats").memory_stats(ctypes.byref(args)))
    return {name: getattr(args, name)
            for name in ("allocated_bytes", "peak_bytes", "buffers", "limit_bytes")}
