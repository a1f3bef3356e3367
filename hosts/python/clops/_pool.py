"""_pool.py — pools (devices, queues, compiled kernels; shared by threads), their device
buffers, host memory registered with them, and calling any operator by name with arguments typed
by its descriptor."""

import array
import ctypes
import contextlib
import os
import threading
import weakref
from collections import namedtuple
from ctypes import c_void_p

import numpy

from ._abi import (DOUBLE, DTYPES, ENUM, ERR_INVALID_ARGUMENT, I32, INT64, STRING, TENSOR_KINDS,
                   clops_arg, clops_buffer_create_args, clops_device_info,
                   clops_host_register_args, clops_memory_stats_args, clops_prebuild_args,
                   clops_stats)
from . import _stream
from ._errors import Error, InvalidArgumentError
from ._library import library
from ._tensor import DeviceView, View, as_tensor


class MemoryStats(namedtuple("MemoryStats", "allocated_bytes peak_bytes buffers limit_bytes")):
    """The device memory clops holds on one device (Pool.memory_stats), in bytes: allocated now,
    the peak since the device was first opened, the number of cl_mem objects held, and the
    limit (device_memory_percent of its global memory). Counted over every pool of the process
    on that device; buffers wrapped over the host's cl_mem are not counted."""
    __slots__ = ()


class Device(namedtuple("Device", "index name type vendor platform driver_version "
                               "opencl_version global_mem_bytes local_mem_bytes compute_units "
                               "queues fp64 platform_index device_index")):
    """One device of a pool (Pool.devices()): abi/clops.h's clops_device_info read into Python,
    its texts as str, `type` as "gpu", "cpu" or "other", `fp64` a bool; `index` is its place in
    the pool (the `device` of Pool.buffer, Pool.stream and memory_stats)."""
    __slots__ = ()

    @classmethod
    def from_info(cls, index, info):
        def text(field):
            return getattr(info, field).decode(errors="replace")
        return cls(index, text("name"), _DEVICE_TYPES.get(info.type, str(info.type)),
                   text("vendor"), text("platform"), text("driver_version"),
                   text("opencl_version"), info.global_mem_bytes, info.local_mem_bytes,
                   info.compute_units, info.queues, bool(info.fp64), info.platform_index,
                   info.device_index)


# enum clops_device_type
_DEVICE_TYPES = {1: "gpu", 2: "cpu", 4: "other"}


class Stats(namedtuple("Stats", "programs_built programs_loaded cache_rejected calls "
                                "bytes_uploaded bytes_downloaded build_ns")):
    """A pool's counters (Pool.stats()): abi/clops.h's clops_stats read into Python. build_ns
    (ABI 1.3) is 0 from an older library."""
    __slots__ = ()


def _dtype_code(dtype):
    """enum clops_dtype of a name ("f32") or anything numpy.dtype() takes (numpy.float64)."""
    for code, (name, _size, _fmt, numpy_name) in DTYPES.items():
        if dtype == name or dtype == code:
            return code
    try:
        import numpy
        numpy_name = numpy.dtype(dtype).name
    except (ImportError, TypeError):
        numpy_name = None
    for code, entry in DTYPES.items():
        if entry[3] == numpy_name:
            return code
    raise InvalidArgumentError(ERR_INVALID_ARGUMENT,
                               f"prebuild: parameter 'dtypes': {dtype!r} is none of "
                               f"{', '.join(e[0] for e in DTYPES.values())}")


class Prebuilt(namedtuple("Prebuilt", "programs_built programs_loaded build_ns wall_ns")):
    """What Pool.prebuild did: programs compiled from source and loaded from the on-disk cache,
    the time that took and the whole call's, in ns."""
    __slots__ = ()


class Call:
    """An operator call ready to run on `pool`: the operator's name, its arguments by parameter
    name, and finish(), which makes the caller's result once the call completed (on the thread
    that waited for it: the caller's for Pool.run, the completion thread for a submitted one).
    The NumPy functions are made of a prepare step that returns one (fn.prepare) and run()."""
    __slots__ = ("pool", "op", "kwargs", "finish")

    def __init__(self, pool, op, kwargs, finish):
        self.pool, self.op, self.kwargs, self.finish = pool, op, kwargs, finish


class Pool:
    """Devices, queues and compiled kernels; shared by threads. Release it (or use `with`):
    its buffers are released first. A release never frees what a call running on another thread
    uses: the pool and buffers released meanwhile are freed when the last such call ends."""

    def __init__(self, config=None, config_text=None, lib=None, prebuild=None):
        """`prebuild`: True, or operator names, builds those kernels ahead of time as soon as the
        pool is made (Pool.prebuild), so that no first call pays for compiling them."""
        self.lib = lib or library()
        api, handle = self.lib.api, c_void_p()
        if config is not None:
            status = api.pool_create_from_file(os.fsencode(config), ctypes.byref(handle))
        elif config_text is not None:
            status = api.pool_create_from_string(config_text.encode(), ctypes.byref(handle))
        else:
            status = api.pool_create_default(ctypes.byref(handle))
        self.lib.check(status)
        self._adopt(handle)
        if prebuild:
            try:
                self.prebuild(None if prebuild is True else prebuild)
            except BaseException:
                self.release()
                raise

    def prebuild(self, ops=None, dtypes=None):
        """Builds the kernels of `ops` (operator names; None: every operator) in `dtypes` (names
        such as "f32" or NumPy dtypes; None: every dtype each operator takes) on every device of
        the pool, into the pool and the on-disk cache, from which later processes load them
        (ABI 1.5's pool_prebuild; UnsupportedError from an older library). Returns a Prebuilt:
        programs compiled and loaded, and the times."""
        api = self.lib.table("pool_prebuild")
        args = clops_prebuild_args(struct_size=ctypes.sizeof(clops_prebuild_args))
        names = [ops] if isinstance(ops, str) else ops
        codes = None if dtypes is None else [_dtype_code(d) for d in
                                             ([dtypes] if isinstance(dtypes, str) else dtypes)]
        if names is not None:
            arr = (ctypes.c_char_p * max(len(names), 1))(*[n.encode() for n in names])
            args.ops, args.op_count = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p)), len(names)
        if codes is not None:
            darr = (ctypes.c_int32 * max(len(codes), 1))(*codes)
            args.dtypes = ctypes.cast(darr, ctypes.POINTER(ctypes.c_int32))
            args.dtype_count = len(codes)
        with self._use() as handle:
            args.pool = handle
            self.lib.check(api.pool_prebuild(ctypes.byref(args)))
        return Prebuilt(args.programs_built, args.programs_loaded, args.build_ns, args.wall_ns)

    def _adopt(self, handle):
        """The Python side of a pool the library made: its handle and bookkeeping."""
        self.handle, self._buffers = handle, weakref.WeakSet()
        # Calls in flight on the pool or its buffers (_use), and the frees that wait for them.
        # A call takes its handles inside _use, so no handle it took can be freed under it.
        self._lock, self._calls, self._deferred = threading.Lock(), 0, []
        # Streams (ABI 1.4): the host's (Stream objects), clops.submit()'s default one, and the
        # idle ones synchronous calls borrow.
        self._streams, self._default_stream, self._idle_streams = weakref.WeakSet(), None, []
        self._sync_queue = None  # the host's queue the synchronous calls run on (ClPool)
        # Host memory registered with the pool: address -> the [object] a Registration holds.
        # The pool holds the object too, so that its memory stays allocated until host_unregister
        # or pool_release, whatever becomes of the Registration.
        self._registered = {}

    def release(self):
        """Releases the pool's streams (each waits for the calls submitted to it), its buffers,
        then the pool, whose release unregisters the host memory still registered (the arrays
        are let go of once it has)."""
        for s in list(self._streams):
            s.release()
        with self._lock:
            idle, self._idle_streams = self._idle_streams, []
        for stream in idle:
            _stream.release_stream(self.lib, stream)
        for b in list(self._buffers):
            b.release()
        api, registered = self.lib.api, self._registered

        def free(handle):
            api.pool_release(handle)
            registered.clear()  # the plugin let go of the ranges: their memory may go
        self._retire(self, free)

    @contextlib.contextmanager
    def _use(self, released_ok=False):
        """The pool's handle, for a call into the library that takes handles of the pool or its
        buffers inside this block: what release() frees meanwhile waits for its end. A released
        pool raises, or with `released_ok` gives None (and nothing waits for the block)."""
        handle = self._enter(released_ok)
        if not handle:
            yield None
            return
        try:
            yield handle
        finally:
            self._leave()

    def _enter(self, released_ok=False):
        """_use's start: the handle, counted as in use (None, not counted, for a released pool
        with `released_ok`; else a released pool raises)."""
        with self._lock:
            handle = self.handle
            if not handle and not released_ok:
                raise Error(ERR_INVALID_ARGUMENT, "the pool was released")
            if handle:
                self._calls += 1
        return handle

    def _leave(self):
        """_use's end, after an _enter that gave a handle: what was released meanwhile is freed
        when the last call in flight ends."""
        with self._lock:
            self._calls -= 1
            deferred = []
            if not self._calls:
                deferred, self._deferred = self._deferred, []
        for free, handle in deferred:
            free(handle)

    def _retire(self, owner, free):
        """Takes owner.handle (the pool's or a buffer's) and frees it with `free` now, or, while
        calls are in flight (_use), when the last of them ends."""
        with self._lock:
            handle, owner.handle = owner.handle, None
            if handle and self._calls:
                self._deferred.append((free, handle))
                handle = None
        if handle:
            free(handle)

    close = release

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        if getattr(self, "handle", None):
            self.release()

    def __repr__(self):
        if not self.handle:
            return "<clops.Pool, released>"
        devices = ["%d: %s %r" % (d.index, d.type, d.name) for d in self.devices()]
        return "<clops.Pool of %d device%s (%s)>" % (len(devices), "s"[:len(devices) != 1],
                                                     ", ".join(devices))

    def devices(self):
        """The pool's devices, as Device tuples (name, type, vendor, queues, fp64, ...)."""
        out = []
        with self._use() as handle:
            for i in range(self.lib.api.pool_device_count(handle)):
                info = clops_device_info(struct_size=ctypes.sizeof(clops_device_info))
                self.lib.check(self.lib.api.pool_device_info(handle, i, ctypes.byref(info)))
                out.append(Device.from_info(i, info))
        return out

    def stats(self):
        """The pool's counters, a Stats tuple: programs_built, programs_loaded, cache_rejected,
        calls, bytes_uploaded, bytes_downloaded, and (ABI 1.3) build_ns."""
        out = clops_stats(struct_size=ctypes.sizeof(clops_stats))
        with self._use() as handle:
            self.lib.check(self.lib.api.pool_stats(handle, ctypes.byref(out)))
        return Stats(*(getattr(out, name) for name in Stats._fields))

    def memory_stats(self, device=0):
        """The device memory clops holds on device `device` of the pool (ABI 1.4): a
        MemoryStats (allocated_bytes, peak_bytes, buffers, limit_bytes)."""
        api = self.lib.table("memory_stats")
        args = clops_memory_stats_args(struct_size=ctypes.sizeof(clops_memory_stats_args),
                                       device=device)
        with self._use() as handle:
            args.pool = handle
            self.lib.check(api.memory_stats(ctypes.byref(args)))
        return MemoryStats(args.allocated_bytes, args.peak_bytes, args.buffers, args.limit_bytes)

    def buffer(self, nbytes, device=None):
        """Device memory on the pool's device `device`; None: its primary device (device 0),
        through buffer_create, which every library serves. A device given, 0 included, is
        buffer_create_on's (ABI 1.4, UnsupportedError from a library without it; NotFoundError
        naming 'device' for an index the pool does not have). A call whose device buffers all
        live on one device runs on that device."""
        b = Buffer(self, nbytes, device)
        self._buffers.add(b)
        return b

    def register(self, array):
        """Registers the memory of `array` (an ndarray, or any object with the buffer protocol,
        in one contiguous block) with the pool (ABI 1.4, host_register): it is page-locked for
        the pool's devices, so that a call's upload of an operand lying wholly inside it is one
        DMA from it instead of a copy into clops' staging blocks and a DMA from there. Returns a
        Registration, which holds the array until unregister() (or the end of its `with`
        block, or the pool's release). Registering costs milliseconds (about two copies of the
        range): it pays for memory that many calls read. Ranges of one pool may not overlap
        (InvalidArgumentError from the library)."""
        api = self.lib.table("host_unregister")  # appended together: it has both, or neither
        address, nbytes = _host_range(array)
        reg = Registration(self, array, address, nbytes)
        args = clops_host_register_args(struct_size=ctypes.sizeof(clops_host_register_args),
                                        data=address, bytes=nbytes)
        with self._use() as handle:
            args.pool = handle
            self.lib.check(api.host_register(ctypes.byref(args)))
            with self._lock:
                self._registered[address] = reg._holds
        return reg

    def _unregister(self, reg):
        """host_unregister of `reg`'s range, once: nothing when it was unregistered before, or
        by the pool's release."""
        with self._use(released_ok=True) as handle:
            if handle is None:
                return
            with self._lock:  # claimed here, so that two threads' unregister() call it once
                if self._registered.get(reg.address) is not reg._holds:
                    return
                del self._registered[reg.address]
            args = clops_host_register_args(struct_size=ctypes.sizeof(clops_host_register_args),
                                            pool=handle, data=reg.address)
            try:
                self.lib.check(self.lib.api.host_unregister(ctypes.byref(args)))
            except Error:
                with self._lock:
                    self._registered[reg.address] = reg._holds
                raise

    def invoke(self, name, *args, **kwargs):
        """Calls operator `name` with arguments matched to its parameters by position, then by
        name; left-out parameters take their defaults. Tensors: see as_tensor(); enums: the
        value's text, or its index (True/False for none/transpose); None leaves a parameter out.
        With ABI 1.4 the call is submitted and waited for in slices, so that Ctrl-C
        (KeyboardInterrupt) cancels it, waits for its end and is raised (see _stream.py)."""
        self.execute(name, self.bind(name, args, kwargs)[1])

    def execute(self, name, kwargs):
        """invoke() with the arguments by parameter name, as bind() gives them. A call of a
        signature bound before on this thread only points that call's tensors at its arrays
        (_Bound): the path of a small call from Python, kept short (no context managers, the
        operator's descriptor kept with the bound call)."""
        key = _signature(name, kwargs)
        calls = _bound_calls() if key is not None else None
        bound = calls.get(key) if key is not None else None
        handle = self._enter()  # a DeviceView takes its buffer's handle in as_tensor
        try:
            if bound is not None and not bound.busy and bound.lib is self.lib:
                bound.rebind(kwargs)
            else:
                keep = []
                cargs, nargs = self.arguments(name, kwargs, keep)
                direct = not (self.lib.has("submit")
                              and _tensor_bytes(cargs, nargs) >= DIRECT_CALL_BYTES)
                bound = _Bound(self.lib, self.lib.find(name), cargs, nargs, kwargs, keep,
                               direct)
                if key is not None and len(calls) < _BOUND_MAX:
                    calls[key] = bound
            bound.busy = True
            try:
                if bound.direct:
                    self.lib.check(self.lib.invoke(handle, bound.op, bound.array, bound.count))
                else:
                    with self._borrow_stream(handle) as stream:
                        _stream.run_interruptible(self.lib, stream, bound.op, bound.array,
                                                  bound.count)
            finally:
                bound.busy, bound.current = False, None  # the arrays are the caller's again
        finally:
            self._leave()

    def bind(self, name, args, kwargs):
        """(operator descriptor, {parameter: value}) for a call of `name` with `args` matched to
        its parameters by position, then `kwargs` by name."""
        op = self.lib.find(name)
        names = [p.name for p in self.lib.op(name).params]
        if len(args) > len(names):
            raise TypeError("%s takes %d parameters, %d given" % (name, len(names), len(args)))
        kwargs = dict(kwargs)
        for pname, value in zip(names, args):
            if pname in kwargs:
                raise TypeError("%s: parameter '%s' given twice" % (name, pname))
            kwargs[pname] = value
        return op, kwargs

    def arguments(self, name, kwargs, keep):
        """The clops_arg array of a call of operator `name` and its length; what the array
        points into (tensor descriptors, the ndarrays and buffers they view) is appended to
        `keep`, which must live until the call has ended."""
        params = self.lib.op(name).params_by_name
        cargs = []
        for pname, value in kwargs.items():
            if value is None:
                continue
            p = params.get(pname)
            # An unknown name goes through as a string: the library reports it with the list of
            # the operator's parameters.
            kind = p.kind if p is not None else STRING
            a = clops_arg(name=pname.encode(), kind=kind)
            if kind in TENSOR_KINDS:
                if type(value).__module__.startswith("pyopencl"):
                    from ._interop import array_view  # (imports this module)
                    value = array_view(self, value, keep)
                t = as_tensor(value, keep, kind)
                keep.append(t)
                a.tensor = ctypes.pointer(t)
            elif kind == INT64:
                a.i = int(value)
            elif kind == DOUBLE:
                a.d = float(value)
            elif kind == ENUM and not isinstance(value, str):
                a.i = int(value)
            else:
                a.s = str(value).encode()
            cargs.append(a)
        array = (clops_arg * max(len(cargs), 1))(*cargs)
        keep.append(array)
        return array, len(cargs)

    def stream(self, device=0, queue=None):
        """A Stream (ABI 1.4) on the pool's device `device`: an in-order queue of submitted
        calls; `queue`, optional, is the host's in-order cl_command_queue (pyopencl's, or a
        handle) on that device and the pool's context, used instead of one of clops' own."""
        return _stream.Stream(self, device, queue)

    def default_stream(self):
        """The stream clops.submit() uses for this pool when given none: made on device 0 by
        the first submit, released with the pool."""
        with self._lock:
            stream = self._default_stream
        if stream is None:
            stream = self.stream()
            with self._lock:
                if self._default_stream is None:
                    self._default_stream, stream = stream, None
            if stream is not None:  # another thread made it first
                stream.release()
        return self._default_stream

    @contextlib.contextmanager
    def _borrow_stream(self, handle):
        """A stream handle for one synchronous call: an idle one of the pool's, or a new one;
        given back to the idle ones after the call (released if the pool was meanwhile).
        Streams are not per thread: a thread that ends leaves none behind."""
        with self._lock:
            stream = self._idle_streams.pop() if self._idle_streams else None
        if stream is None:
            stream = _stream.create_stream(self.lib, handle, 0, self._sync_queue)
        try:
            yield stream
        finally:
            with self._lock:
                if self.handle:
                    self._idle_streams.append(stream)
                    stream = None
            if stream is not None:
                _stream.release_stream(self.lib, stream)

    # Typed helpers for the common operators; each is one invoke().
    def gemm(self, a, b, c, alpha=1.0, beta=0.0, trans_a=False, trans_b=False):
        """c = alpha op(a) op(b) + beta c, in place; returns c."""
        self.invoke("gemm", a=a, b=b, c=c, alpha=alpha, beta=beta, trans_a=bool(trans_a),
                    trans_b=bool(trans_b))
        return c

    def lu(self, a, pivoting="partial"):
        """P a = L U in place (LAPACK getrf); returns (ipiv, info): 1-based pivots, and 0 or the
        first k with U(k, k) = 0."""
        shape = as_tensor(a, []).shape
        ipiv, info = _int32s(a, min(shape[0], shape[1])), _int32s(a, 1)
        self.invoke("lu", a=a, ipiv=ipiv, info=info, pivoting=pivoting)
        return ipiv.buffer if isinstance(ipiv, View) else ipiv, int(_first(info))

    def solve(self, a, b):
        """a x = b (LAPACK gesv): a becomes its LU factors, b becomes x. Returns (ipiv, info);
        info > 0 means a is singular and b was left as it was."""
        ipiv, info = _int32s(a, as_tensor(a, []).shape[0]), _int32s(a, 1)
        self.invoke("solve", a=a, b=b, ipiv=ipiv, info=info)
        return ipiv.buffer if isinstance(ipiv, View) else ipiv, int(_first(info))


# Synchronous calls whose tensors span fewer bytes than this run through invoke_sized, as before
# ABI 1.4: they end within milliseconds, and a submit and a wait cost two hand-overs between
# threads (about 75 us on PoCL, a third of a 64x64 gemm). Larger ones are submitted and waited
# for in slices, so that Ctrl-C cancels them (_stream.run_interruptible).
DIRECT_CALL_BYTES = 1 << 20


# ---- Calls bound once, called again -------------------------------------------------------
# A small call's time from Python was half the binding's (the arguments described into ctypes
# structs, issue 25 item 8: 48-86 us of a 102-128 us gemm of 32 x 32 on an H200). A call whose
# arguments are NumPy arrays and plain values keeps its clops_arg array for the next call with
# the same signature (operator, parameters, and each array's dtype, shape, strides and
# writability, or each value): that call only points the tensors at its arrays' memory. Per
# thread, so that two threads never share one; an entry in use (a call that, from a callback,
# makes the same call on its thread) is not reused, the call binds anew.
_BOUND_MAX = 64
_bound = threading.local()


def _bound_calls():
    calls = getattr(_bound, "calls", None)
    if calls is None:
        calls = _bound.calls = {}
    return calls


def _signature(name, kwargs):
    """The key of a call of operator `name` with these arguments, or None where one is not a
    NumPy array or a plain value (a View, a DeviceView, a pyopencl array: bound every time)."""
    key = [name]
    for pname, value in kwargs.items():
        kind = type(value)
        if kind is numpy.ndarray:
            key.append((pname, value.dtype, value.shape, value.strides, value.flags.writeable))
        elif value is None or kind in (int, float, str, bool):
            key.append((pname, kind, value))
        else:
            return None
    return tuple(key)


class _Bound:
    """A call's clops_arg array, and for each NumPy array argument its tensor's data field."""
    __slots__ = ("lib", "op", "array", "count", "slots", "keep", "current", "direct", "busy")

    def __init__(self, lib, op, array, count, kwargs, keep, direct):
        # keep: what the array points into (the tensor structs), not the first call's arrays,
        # which the cache must not keep alive; current: the arrays of the call under way.
        # lib and op: the library whose operator `op` (its descriptor) the call is of.
        self.lib, self.op, self.array, self.count, self.current = lib, op, array, count, kwargs
        self.keep = [k for k in keep if type(k) is not numpy.ndarray]
        self.direct, self.busy = direct, False
        self.slots, k = [], 0
        for pname, value in kwargs.items():
            if value is None:
                continue
            if type(value) is numpy.ndarray:
                # The signature fixes whether every array of it is C-contiguous, writable and
                # not empty: then a ctypes view of its buffer gives its address in a third of
                # the time of arr.ctypes.data.
                flags = value.flags
                by_buffer = flags.c_contiguous and flags.writeable and value.size > 0
                self.slots.append((array[k].tensor.contents, pname, by_buffer))
            k += 1

    def rebind(self, kwargs):
        """The tensors pointed at these arrays (of the signature's dtypes, shapes, strides)."""
        for tensor, pname, by_buffer in self.slots:
            value = kwargs[pname]
            tensor.data = _address(_char.from_buffer(value)) if by_buffer else value.ctypes.data
        self.current = kwargs


_char, _address = ctypes.c_char, ctypes.addressof


def _tensor_bytes(cargs, nargs):
    """The bytes the tensor arguments of a call span, from first to last element."""
    total = 0
    for k in range(nargs):
        if cargs[k].tensor:
            t = cargs[k].tensor.contents
            span = 1
            for i in range(t.rank):
                if t.shape[i] == 0:
                    span = 0
                    break
                span += (t.shape[i] - 1) * abs(t.strides[i])
            total += span * DTYPES.get(t.dtype, (None, 8))[1]
    return total


def _host_range(x):
    """(address, bytes) of the memory of x, an ndarray or a buffer object, which must be one
    contiguous block (C or Fortran order)."""
    if isinstance(x, numpy.ndarray):
        arr = x
    else:
        try:
            arr = numpy.asarray(memoryview(x))  # a view of x's memory, never a copy
        except TypeError:
            raise TypeError("register: parameter 'array' is a %s; expected an ndarray or an "
                            "object with the buffer protocol" % type(x).__name__) from None
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        raise InvalidArgumentError(
            ERR_INVALID_ARGUMENT, "register: parameter 'array' (shape %s, strides %s) is not "
            "contiguous; expected one block of memory (register the array it views, or "
            "numpy.ascontiguousarray's copy)" % (arr.shape, arr.strides))
    return arr.ctypes.data, arr.nbytes


class Registration:
    """Host memory registered with a pool (Pool.register): `array`, its `address` and `nbytes`.
    The memory stays registered, and the array held, until unregister() (at the end of a `with`
    block; again, it does nothing) or the pool's release. Unregistering while a submitted call
    reads the array is allowed: the call's Future holds the array, and the plugin keeps the
    range page-locked until the call completes."""

    def __init__(self, pool, array, address, nbytes):
        self.pool, self.array, self.address, self.nbytes = pool, array, address, nbytes
        # What the pool holds while registered: this list, not the Registration (no cycle).
        self._holds = [array]

    @property
    def registered(self):
        """Whether the range is still registered (neither unregister() nor the pool's release
        came)."""
        pool = self.pool
        with pool._lock:
            return bool(pool.handle) and pool._registered.get(self.address) is self._holds

    def unregister(self):
        """Unregisters the range (host_unregister), and the pool lets go of the array; once
        only: later calls, and calls after the pool's release (which unregistered it), do
        nothing."""
        self.pool._unregister(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unregister()

    def __repr__(self):
        state = "registered" if self.registered else "unregistered"
        return "<clops.Registration of %d bytes at 0x%x, %s>" % (self.nbytes, self.address, state)


def _int32s(like, n):
    """n zeroed i32s: an ndarray when `like` is one, else a View over array.array('i')."""
    if isinstance(like, numpy.ndarray):
        return numpy.zeros(n, dtype=numpy.int32)
    return View(array.array(DTYPES[I32][2], [0] * n), (n,), I32)


def _first(x):
    return x.buffer[0] if isinstance(x, View) else x[0]


class Buffer:
    """Device memory of a pool, released with release() (or `with`) before the pool."""

    def __init__(self, pool, nbytes, device=None):
        self.pool, handle = pool, c_void_p()
        if device is None:
            with pool._use() as pool_handle:
                pool.lib.check(pool.lib.api.buffer_create(pool_handle, nbytes,
                                                          ctypes.byref(handle)))
        else:
            api = pool.lib.table("buffer_create_on")
            args = clops_buffer_create_args(struct_size=ctypes.sizeof(clops_buffer_create_args),
                                            device=device, bytes=nbytes)
            with pool._use() as pool_handle:
                args.pool = pool_handle
                pool.lib.check(api.buffer_create_on(ctypes.byref(args)))
            handle = c_void_p(args.buffer)
        self.handle, self.size, self.device = handle, nbytes, device or 0

    def __repr__(self):
        return "<clops.%s of %d bytes on device %d%s>" % (
            type(self).__name__, self.size, self.device, "" if self.handle else ", released")

    def _live(self):
        if not self.handle:
            raise Error(ERR_INVALID_ARGUMENT, "the buffer was released")
        return self.handle

    def view(self, dtype, shape, strides=None, offset=0):
        return DeviceView(self, dtype, shape, strides, offset)

    def upload(self, src, offset=0):
        """Copies all of `src` (any buffer object) to byte `offset`."""
        mv = memoryview(src).cast("B")
        data = (ctypes.c_char * len(mv)).from_buffer_copy(mv)
        with self.pool._use():
            self.pool.lib.check(self.pool.lib.api.buffer_upload(self._live(), offset, data,
                                                                len(mv)))

    def download(self, dst, offset=0):
        """Fills all of the writable buffer `dst` from byte `offset`; returns dst."""
        mv = memoryview(dst).cast("B")
        data = (ctypes.c_char * len(mv)).from_buffer(mv)
        with self.pool._use():
            self.pool.lib.check(self.pool.lib.api.buffer_download(self._live(), offset, data,
                                                                  len(mv)))
        return dst

    def release(self):
        """Frees the buffer now, or when the calls running on its pool end (Pool.release)."""
        self.pool._retire(self, self.pool.lib.api.buffer_release)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
