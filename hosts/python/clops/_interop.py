"""_interop.py — clops on the host's own OpenCL objects (ABI 1.4): a Pool on a cl_context, its
devices and (optionally) queues; Buffers over cl_mem objects, without a copy; a buffer's cl_mem;
the device memory clops holds. OpenCL objects are pyopencl's (anything with `int_ptr`) or raw
handles as integers. clops retains what it is given while it uses it and never frees it: the
host keeps its own objects alive and releases them as usual."""

import ctypes
from ctypes import c_void_p

import numpy

from ._abi import (DTYPES, clops_buffer_cl_args, clops_buffer_wrap_args,
                   clops_pool_from_cl_args)
from ._library import library
from ._pool import Buffer, Pool
from ._tensor import DeviceView

def _table(lib, member):
    """The plugin's table, which must serve `member` (ABI 1.4)."""
    return lib.table(member)


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
        self._adopt(c_void_p(args.pool))
        # The synchronous calls run on the host's queue of device 0 when it gave queues: in
        # order with its own work there, as before streams.
        self._sync_queue = queues[0] if queues else None

    def wrap(self, cl_mem, device=0):
        """A Buffer over the host's cl_mem (a buffer of this pool's context), without a copy."""
        b = WrappedBuffer(self, cl_mem, device)
        self._buffers.add(b)
        return b


class WrappedBuffer(Buffer):
    """A Buffer over the host's cl_mem: clops reads and writes the cl_mem itself, retains it
    until release() (or until the object is collected) and never frees it; its bytes are not
    counted in memory_stats()."""

    def __del__(self):
        if getattr(self, "handle", None):
            self.release()

    def __init__(self, pool, cl_mem, device=0):
        self.pool = pool
        args = _sized(clops_buffer_wrap_args, pool=None, cl_mem=_handle(cl_mem), device=device)
        with pool._use() as pool_handle:
            args.pool = pool_handle
            pool.lib.check(_table(pool.lib, "buffer_wrap_cl").buffer_wrap_cl(ctypes.byref(args)))
        self.handle, self.size, self.device = c_void_p(args.buffer), args.bytes, device


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
    """Pool.memory_stats(device) as a dict: allocated_bytes, peak_bytes, buffers, limit_bytes."""
    return pool.memory_stats(device)._asdict()


# ---- pyopencl arrays in and out ----------------------------------------------------------------
# pyopencl does not speak DLPack (no __dlpack__, and DLPack's kDLOpenCL has no consumer there):
# its arrays cross as (cl_mem, offset, strides), both ways without a copy.

_DTYPE_OF_NUMPY = {numpy.dtype(v[3]): k for k, v in DTYPES.items()}


def array_view(pool, arr, keep):
    """A DeviceView of the pyopencl array `arr` (its cl_mem wrapped in a Buffer of `pool`, whose
    context must be arr's), without a copy; the Buffer is appended to `keep` and released
    when `keep` is dropped. What a call's tensor argument becomes (Pool.arguments)."""
    dtype = _DTYPE_OF_NUMPY.get(numpy.dtype(arr.dtype))
    if dtype is None or not numpy.dtype(arr.dtype).isnative:
        raise ValueError("pyopencl array of dtype %s; clops takes native f32, f64, i32, u32, u8, "
                         "i64" % arr.dtype)
    itemsize = arr.dtype.itemsize
    if any(s % itemsize or s < 0 for s in arr.strides) or arr.offset % itemsize:
        raise ValueError("pyopencl array strides %s (offset %d) are not non-negative multiples "
                         "of its itemsize" % (arr.strides, arr.offset))
    buffer = WrappedBuffer(pool, arr.base_data)
    keep.append(buffer)
    strides = [s // itemsize if n > 1 else 1 for n, s in zip(arr.shape, arr.strides)]
    return DeviceView(buffer, dtype, arr.shape, strides, arr.offset // itemsize)


def to_pyopencl(x, queue, dtype=None, shape=None):
    """A pyopencl.array.Array over clops device memory, without a copy: x is a Buffer (then
    dtype and shape say how to view it: default uint8 bytes) or a DeviceView (its dtype, shape,
    strides and offset). pyopencl retains the cl_mem, so the array stays valid after the clops
    buffer's release; `queue` is a pyopencl queue of the pool's context."""
    import pyopencl
    import pyopencl.array
    if isinstance(x, DeviceView):
        buffer, item = x.buffer, DTYPES[x.dtype][1]
        np_dtype = numpy.dtype(DTYPES[x.dtype][3])
        shape, strides, offset = x.shape, tuple(s * item for s in x.strides), x.offset * item
    else:
        buffer = x
        np_dtype = numpy.dtype(dtype if dtype is not None else numpy.uint8)
        shape = tuple(shape) if shape is not None else (buffer.size // np_dtype.itemsize,)
        strides, offset = None, 0
    mem, _, _ = buffer_cl(buffer)
    data = pyopencl.Buffer.from_int_ptr(mem, retain=True)
    return pyopencl.array.Array(queue, shape, np_dtype, data=data, offset=offset,
                                strides=strides)
