"""_pool.py — pools (devices, queues, compiled kernels; shared by threads), their device
buffers, and calling any operator by name with arguments typed by its descriptor."""

import array
import ctypes
import contextlib
import os
import threading
import weakref
from ctypes import c_void_p

import numpy

from ._abi import (DOUBLE, DTYPES, ENUM, ERR_INVALID_ARGUMENT, I32, INT64, STRING, TENSOR_KINDS,
                   clops_arg, clops_device_info, clops_stats)
from ._errors import Error
from ._library import _params, library
from ._tensor import DeviceView, View, as_tensor


class Pool:
    """Devices, queues and compiled kernels; shared by threads. Release it (or use `with`):
    its buffers are released first. A release never frees what a call running on another thread
    uses: the pool and buffers released meanwhile are freed when the last such call ends."""

    def __init__(self, config=None, config_text=None, lib=None):
        self.lib = lib or library()
        api, handle = self.lib.api, c_void_p()
        if config is not None:
            status = api.pool_create_from_file(os.fsencode(config), ctypes.byref(handle))
        elif config_text is not None:
            status = api.pool_create_from_string(config_text.encode(), ctypes.byref(handle))
        else:
            status = api.pool_create_default(ctypes.byref(handle))
        self.lib.check(status)
        self.handle, self._buffers = handle, weakref.WeakSet()
        # Calls in flight on the pool or its buffers (_use), and the frees that wait for them.
        # A call takes its handles inside _use, so no handle it took can be freed under it.
        self._lock, self._calls, self._deferred = threading.Lock(), 0, []

    def release(self):
        for b in list(self._buffers):
            b.release()
        self._retire(self, self.lib.api.pool_release)

    @contextlib.contextmanager
    def _use(self):
        """The pool's handle, for a call into the library that takes handles of the pool or its
        buffers inside this block: what release() frees meanwhile waits for its end."""
        with self._lock:
            handle = self.handle
            if not handle:
                raise Error(ERR_INVALID_ARGUMENT, "the pool was released")
            self._calls += 1
        try:
            yield handle
        finally:
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

    def devices(self):
        """The pool's devices: clops_device_info structs (name, type, queues, fp64, ...)."""
        out = []
        with self._use() as handle:
            for i in range(self.lib.api.pool_device_count(handle)):
                info = clops_device_info(struct_size=ctypes.sizeof(clops_device_info))
                self.lib.check(self.lib.api.pool_device_info(handle, i, ctypes.byref(info)))
                out.append(info)
        return out

    def stats(self):
        """The pool's counters (clops_stats): programs_built, programs_loaded, cache_rejected,
        calls, bytes_uploaded, bytes_downloaded, and (ABI 1.3) build_ns."""
        out = clops_stats(struct_size=ctypes.sizeof(clops_stats))
        with self._use() as handle:
            self.lib.check(self.lib.api.pool_stats(handle, ctypes.byref(out)))
        return out

    def buffer(self, nbytes):
        """Device memory on the pool's primary device."""
        b = Buffer(self, nbytes)
        self._buffers.add(b)
        return b

    def invoke(self, name, *args, **kwargs):
        """Calls operator `name` with arguments matched to its parameters by position, then by
        name; left-out parameters take their defaults. Tensors: see as_tensor(); enums: the
        value's text, or its index (True/False for none/transpose); None leaves a parameter out."""
        lib = self.lib
        op = lib.find(name)
        params = {p.name.decode(): p for p in _params(op.contents)}
        names = list(params)
        if len(args) > len(names):
            raise TypeError("%s takes %d parameters, %d given" % (name, len(names), len(args)))
        for pname, value in zip(names, args):
            if pname in kwargs:
                raise TypeError("%s: parameter '%s' given twice" % (name, pname))
            kwargs[pname] = value
        with self._use() as handle:  # a DeviceView takes its buffer's handle in as_tensor
            self._invoke(handle, op, params, kwargs)

    def _invoke(self, handle, op, params, kwargs):
        lib, keep, cargs = self.lib, [], []
        for pname, value in kwargs.items():
            if value is None:
                continue
            p = params.get(pname)
            # An unknown name goes through as a string: the library reports it with the list of
            # the operator's parameters.
            kind = p.kind if p is not None else STRING
            a = clops_arg(name=pname.encode(), kind=kind)
            if kind in TENSOR_KINDS:
                a.tensor = ctypes.pointer(as_tensor(value, keep, kind))
            elif kind == INT64:
                a.i = int(value)
            elif kind == DOUBLE:
                a.d = float(value)
            elif kind == ENUM and not isinstance(value, str):
                a.i = int(value)
            else:
                a.s = str(value).encode()
            cargs.append(a)
        array_t = clops_arg * max(len(cargs), 1)
        lib.check(lib.invoke(handle, op, array_t(*cargs), len(cargs)))

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


def _int32s(like, n):
    """n zeroed i32s: an ndarray when `like` is one, else a View over array.array('i')."""
    if isinstance(like, numpy.ndarray):
        return numpy.zeros(n, dtype=numpy.int32)
    return View(array.array(DTYPES[I32][2], [0] * n), (n,), I32)


def _first(x):
    return x.buffer[0] if isinstance(x, View) else x[0]


class Buffer:
    """Device memory of a pool, released with release() (or `with`) before the pool."""

    def __init__(self, pool, nbytes):
        self.pool, handle = pool, c_void_p()
        with pool._use() as pool_handle:
            pool.lib.check(pool.lib.api.buffer_create(pool_handle, nbytes, ctypes.byref(handle)))
        self.handle, self.size = handle, nbytes

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
