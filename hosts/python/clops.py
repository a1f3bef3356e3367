"""clops.py — Python binding of libclops through ctypes alone (no compiled extension).

The library is loaded from $CLOPS_LIBRARY, else libclops.so.1 on the system library path, and
reached only through the table clops_plugin_entry() returns, whose layout is mirrored below
member by member from abi/clops.h. Tensors are NumPy arrays (zero-copy, any strides) when NumPy
is installed, or views over any writable buffer (array.array, bytearray, memoryview) with an
explicit shape: View(buf, shape).

    import array, clops
    a = clops.View(array.array('d', [1, 2, 3, 4, 5, 6]), (2, 3))
    b = clops.View(array.array('d', [1, 0, 0, 1, 1, 1]), (3, 2))
    c = clops.View(array.array('d', [0] * 4), (2, 2))
    with clops.Pool() as pool:
        pool.gemm(a, b, c)                              # c.tolist(): [4, 5, 10, 11]
        pool.invoke("gemm", a=a, b=b, c=c, beta=1.0)    # any operator by name: [8, 10, 20, 22]
"""

import array
import ctypes
import os
import weakref
from collections import namedtuple
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_int32, c_int64,
                    c_uint16, c_uint32, c_void_p)

try:
    import numpy
except ImportError:  # the binding works without it, on buffers with explicit shapes
    numpy = None

ABI_MAJOR = 1
ABI_MINOR = 2
# Element sizes of ABI 1.0 and 1.1, which did not state them (CLOPS_PARAM_SIZE_1_1, ..._ARG_...).
PARAM_SIZE_1_1, ARG_SIZE_1_1 = 40, 48
MAX_RANK = 4

# enum clops_status
OK, ERR_INVALID_ARGUMENT, ERR_UNSUPPORTED = 0, 1, 2
ERR_OUT_OF_DEVICE_MEMORY, ERR_OUT_OF_HOST_MEMORY, ERR_DEVICE, ERR_BUILD = 3, 4, 5, 6
ERR_CONFIG, ERR_IO, ERR_NOT_FOUND, ERR_ABI_MISMATCH, ERR_NO_DEVICE, ERR_INTERNAL = range(7, 13)
_STATUS_NAMES = ("OK INVALID_ARGUMENT UNSUPPORTED OUT_OF_DEVICE_MEMORY OUT_OF_HOST_MEMORY DEVICE "
                 "BUILD CONFIG IO NOT_FOUND ABI_MISMATCH NO_DEVICE INTERNAL").split()

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
                ("bytes_uploaded", c_int64), ("bytes_downloaded", c_int64)]


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
    ]


# ---- Errors and loading ---------------------------------------------------------------------

class ClopsError(Exception):
    """A clops call failed: `status` is the enum clops_status value, `message` the library's
    message (it names the parameter, its value and what was expected)."""

    def __init__(self, status, message, status_name=None):
        self.status, self.message = status, message
        if status_name is None:  # raised before the library could name it (loading)
            status_name = "CLOPS_" + ("ERR_" if status else "") + _STATUS_NAMES[status]
        self.status_name = status_name
        super().__init__("%s: %s" % (self.status_name, message))


class Library:
    """The loaded plugin: its table `api`, and the operator descriptors."""

    def __init__(self, path=None):
        path = path or os.environ.get("CLOPS_LIBRARY") or "libclops.so.1"
        try:
            self.dll = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as e:
            raise ClopsError(ERR_NOT_FOUND, "cannot load libclops: %s" % e) from None
        entry = self.dll.clops_plugin_entry
        entry.restype, entry.argtypes = POINTER(clops_api), [c_uint32]
        table = entry(ABI_MAJOR)
        # A shorter table comes from a plugin older than this mirror: members past its end must
        # not be read, and everything up to invoke is needed here.
        if not table or table.contents.abi_major != ABI_MAJOR:
            raise ClopsError(ERR_ABI_MISMATCH, "%s does not serve ABI %d" % (path, ABI_MAJOR))
        self.api, self.path = table.contents, path
        if not self.has("invoke"):
            raise ClopsError(ERR_ABI_MISMATCH, "%s: the table has %d bytes, ABI %d.0 needs %d"
                             % (path, self.api.struct_size, ABI_MAJOR, _end_of("invoke")))

    def has(self, member):
        """CLOPS_API_HAS: whether the plugin's table holds `member`."""
        return self.api.struct_size >= _end_of(member)

    def invoke(self, pool, op, args, nargs):
        """invoke_sized with this mirror's sizeof(clops_arg); invoke() on a plugin older than
        ABI 1.2, which reads 1.1's clops_arg (the size this mirror still has)."""
        if self.has("invoke_sized"):
            return self.api.invoke_sized(pool, op, args, nargs, ctypes.sizeof(clops_arg))
        assert ctypes.sizeof(clops_arg) == ARG_SIZE_1_1, "invoke() needs 1.1's clops_arg"
        return self.api.invoke(pool, op, args, nargs)

    def check(self, status):
        """Raises ClopsError for a failed call; read before any other call replaces the message."""
        if status != OK:
            raise ClopsError(status, self.api.last_error().decode(),
                             self.api.status_name(status).decode())

    def version(self):
        return self.api.version().decode()

    def ops(self):
        """Every operator's descriptor, as Op tuples."""
        return [_op_info(self.api.op_at(i).contents) for i in range(self.api.op_count())]

    def find(self, name):
        op = self.api.op_find(name.encode())
        if not op:
            self.check(ERR_NOT_FOUND)
        return op

    def set_log_callback(self, fn, max_level=LOG_WARNING):
        """fn(level, message) receives the plugin's diagnostics, from any thread; None
        removes it."""
        # The ctypes callback is kept alive here for as long as the plugin may call it.
        if fn is None:
            self._log_fn = clops_log_fn()
        else:
            self._log_fn = clops_log_fn(lambda level, message, user: fn(level, message.decode()))
        self.api.set_log_callback(self._log_fn, None, max_level)


def _end_of(member, struct=clops_api):
    field = getattr(struct, member)
    return field.offset + field.size


def _params(op):
    """The operator's parameter descriptors (a clops_op), stepping by the plugin's param_size:
    the plugin's struct clops_param may be larger or smaller than this mirror. A plugin older
    than ABI 1.2 does not state it (its struct_size ends before): its size is 1.1's."""
    has_size = op.struct_size >= _end_of("param_size", clops_op)
    size = op.param_size if has_size else PARAM_SIZE_1_1
    first = ctypes.cast(op.params, c_void_p).value
    return [clops_param.from_address(first + k * size) for k in range(op.param_count)]


Param = namedtuple("Param", "name kind dtypes enum_values default doc")
Op = namedtuple("Op", "name version summary doc params")


def _text(b):
    return b.decode() if b is not None else None


def _op_info(op):
    params = []
    for p in _params(op):
        values = []
        while p.enum_values and p.enum_values[len(values)] is not None:
            values.append(p.enum_values[len(values)].decode())
        dtypes = [DTYPES[d][0] for d in DTYPES if p.dtypes & (1 << d)]
        params.append(Param(p.name.decode(), p.kind, dtypes, values, _text(p.default_value),
                            _text(p.doc)))
    return Op(op.name.decode(), op.version, _text(op.summary), _text(op.doc), params)


_library = None


def library():
    """The process's Library, loaded on first use."""
    global _library
    if _library is None:
        _library = Library()
    return _library


def ops():
    return library().ops()


# ---- Tensors ---------------------------------------------------------------------------------

def _row_major(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return strides


def _fill(t, dtype, shape, strides, offset):
    if len(shape) > MAX_RANK or len(strides) != len(shape):
        raise ValueError("rank %d (strides %s); clops takes rank <= %d with one stride per axis"
                         % (len(shape), list(strides), MAX_RANK))
    t.dtype, t.rank, t.offset = dtype, len(shape), offset
    for k, (n, s) in enumerate(zip(shape, strides)):
        t.shape[k], t.strides[k] = n, s
    return t


def _extent(shape, strides, offset):
    """One past the largest element index the view reaches (0 for an empty view)."""
    if any(n == 0 for n in shape):
        return 0
    return offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides))


_FORMATS = {"f": F32, "d": F64, "B": U8}


def _dtype_of_format(fmt, itemsize):
    fmt = fmt.lstrip("@=")
    if fmt in _FORMATS:
        return _FORMATS[fmt]
    if fmt in ("i", "l", "q", "h"):
        return {4: I32, 8: I64}.get(itemsize)
    if fmt in ("I", "L", "Q"):
        return {4: U32}.get(itemsize)
    return None


class View:
    """A tensor over a writable buffer (array.array, bytearray, memoryview, ...): `shape` and
    `strides` in elements (default row-major), `offset` in elements, `dtype` by default the
    buffer's. The buffer stays owned by the caller; clops reads or writes it during calls."""

    def __init__(self, buffer, shape, dtype=None, strides=None, offset=0):
        self.buffer, self.shape, self.offset = buffer, tuple(shape), offset
        self.strides = tuple(strides) if strides is not None else tuple(_row_major(shape))
        mv = memoryview(buffer)
        self.dtype = dtype or _dtype_of_format(mv.format, mv.itemsize)
        if self.dtype not in DTYPES:
            raise ValueError("buffer format %r: give dtype= (one of clops.F32, F64, ...)"
                             % mv.format)
        capacity = mv.nbytes // DTYPES[self.dtype][1]
        if _extent(self.shape, self.strides, offset) > capacity:
            raise ValueError("view shape %s strides %s offset %d reaches past the buffer's %d "
                             "elements" % (self.shape, self.strides, offset, capacity))

    def tensor(self, keep):
        mv = memoryview(self.buffer).cast("B")
        if mv.readonly:
            raise ValueError("clops needs a writable buffer (got a read-only %s)"
                             % type(self.buffer).__name__)
        # from_buffer exports the buffer (it cannot be resized) until `keep` is dropped.
        anchor = (ctypes.c_char * max(mv.nbytes, 1)).from_buffer(mv) if mv.nbytes else \
            ctypes.create_string_buffer(1)
        keep.append(anchor)
        t = _fill(clops_tensor(), self.dtype, self.shape, self.strides, self.offset)
        t.data = ctypes.addressof(anchor)
        return t

    def tolist(self):
        """The elements in row-major order, as a flat list."""
        mv = memoryview(self.buffer).cast("B").cast(DTYPES[self.dtype][2])
        out = []

        def walk(axis, index):
            if axis == len(self.shape):
                out.append(mv[index])
                return
            for i in range(self.shape[axis]):
                walk(axis + 1, index + i * self.strides[axis])
        walk(0, self.offset)
        return out


def _numpy_tensor(x, kind):
    """A zero-copy descriptor of an ndarray of any layout: strides in bytes become elements."""
    names = {v[3]: k for k, v in DTYPES.items()}
    dtype = names.get(x.dtype.name) if x.dtype.isnative else None
    if dtype is None:
        raise ValueError("ndarray dtype %s; clops takes native f32, f64, i32, u32, u8, i64"
                         % x.dtype)
    if kind != TENSOR_IN and not x.flags.writeable:
        raise ValueError("a read-only ndarray cannot be an output")
    if any(s % x.itemsize for s in x.strides):
        raise ValueError("ndarray strides %s are not multiples of its itemsize" % (x.strides,))
    t = _fill(clops_tensor(), dtype, x.shape, [s // x.itemsize for s in x.strides], 0)
    t.data = x.ctypes.data
    return t


def as_tensor(x, keep, kind=TENSOR_IN):
    """The clops_tensor for x: an ndarray, a View, a DeviceView, a (buffer, shape) pair, or a
    clops_tensor as is. Objects that must outlive the call are appended to `keep`."""
    keep.append(x)
    if isinstance(x, clops_tensor):
        return x
    if isinstance(x, (View, DeviceView)):
        return x.tensor(keep)
    if numpy is not None and isinstance(x, numpy.ndarray):
        return _numpy_tensor(x, kind)
    if isinstance(x, tuple) and len(x) == 2:
        return View(x[0], x[1]).tensor(keep)
    raise TypeError("%s is not a tensor: pass an ndarray, clops.View(buffer, shape) or "
                    "(buffer, shape)" % type(x).__name__)


# ---- Pools and buffers -----------------------------------------------------------------------

class Pool:
    """Devices, queues and compiled kernels; shared by threads. Release it (or use `with`):
    its buffers are released first."""

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

    def release(self):
        if self.handle:
            for b in list(self._buffers):
                b.release()
            self.lib.api.pool_release(self.handle)
            self.handle = None

    close = release

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        if getattr(self, "handle", None):
            self.release()

    def _live(self):
        if not self.handle:
            raise ClopsError(ERR_INVALID_ARGUMENT, "the pool was released")
        return self.handle

    def devices(self):
        """The pool's devices: clops_device_info structs (name, type, queues, fp64, ...)."""
        out = []
        for i in range(self.lib.api.pool_device_count(self._live())):
            info = clops_device_info(struct_size=ctypes.sizeof(clops_device_info))
            self.lib.check(self.lib.api.pool_device_info(self.handle, i, ctypes.byref(info)))
            out.append(info)
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
        keep, cargs = [], []
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
        lib.check(lib.invoke(self._live(), op, array_t(*cargs), len(cargs)))

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
    if numpy is not None and isinstance(like, numpy.ndarray):
        return numpy.zeros(n, dtype=numpy.int32)
    return View(array.array(DTYPES[I32][2], [0] * n), (n,), I32)


def _first(x):
    return x.buffer[0] if isinstance(x, View) else x[0]


class DeviceView:
    """A tensor in a device Buffer: dtype, shape, strides and offset in elements."""

    def __init__(self, buffer, dtype, shape, strides=None, offset=0):
        self.buffer, self.dtype, self.shape, self.offset = buffer, dtype, tuple(shape), offset
        self.strides = tuple(strides) if strides is not None else tuple(_row_major(shape))
        if _extent(self.shape, self.strides, offset) * DTYPES[dtype][1] > buffer.size:
            raise ValueError("device view reaches past the buffer's %d bytes" % buffer.size)

    def tensor(self, keep):
        t = _fill(clops_tensor(), self.dtype, self.shape, self.strides, self.offset)
        t.buffer = self.buffer._live()
        return t


class Buffer:
    """Device memory of a pool, released with release() (or `with`) before the pool."""

    def __init__(self, pool, nbytes):
        self.pool, handle = pool, c_void_p()
        pool.lib.check(pool.lib.api.buffer_create(pool._live(), nbytes, ctypes.byref(handle)))
        self.handle, self.size = handle, nbytes

    def _live(self):
        if not self.handle:
            raise ClopsError(ERR_INVALID_ARGUMENT, "the buffer was released")
        return self.handle

    def view(self, dtype, shape, strides=None, offset=0):
        return DeviceView(self, dtype, shape, strides, offset)

    def upload(self, src, offset=0):
        """Copies all of `src` (any buffer object) to byte `offset`."""
        mv = memoryview(src).cast("B")
        data = (ctypes.c_char * len(mv)).from_buffer_copy(mv)
        self.pool.lib.check(self.pool.lib.api.buffer_upload(self._live(), offset, data, len(mv)))

    def download(self, dst, offset=0):
        """Fills all of the writable buffer `dst` from byte `offset`; returns dst."""
        mv = memoryview(dst).cast("B")
        data = (ctypes.c_char * len(mv)).from_buffer(mv)
        self.pool.lib.check(self.pool.lib.api.buffer_download(self._live(), offset, data,
                                                              len(mv)))
        return dst

    def release(self):
        if self.handle:
            self.pool.lib.api.buffer_release(self.handle)
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
