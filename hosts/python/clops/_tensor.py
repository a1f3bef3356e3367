"""_tensor.py — operands as the plugin sees them (struct clops_tensor): NumPy arrays of any
layout (zero-copy), View over any writable buffer with an explicit shape, DeviceView in a device
Buffer, or a (buffer, shape) pair."""

import ctypes
import functools

import numpy

from ._abi import DTYPES, F32, F64, I32, I64, MAX_RANK, TENSOR_IN, U8, U32, clops_tensor

@functools.lru_cache(maxsize=256)
def _row_major_of(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return tuple(strides)


def _row_major(shape):
    return list(_row_major_of(tuple(shape)))


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

    def __repr__(self):
        return "<clops.View %s %s, strides %s, offset %d, over a %s>" % (
            DTYPES[self.dtype][0], self.shape, self.strides, self.offset,
            type(self.buffer).__name__)

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


_NUMPY_DTYPES = {v[3]: k for k, v in DTYPES.items()}
# The same by dtype object, filled as dtypes are met: numpy.dtype.name costs microseconds a
# call, a dict lookup by the dtype itself a fraction of one (per-call overhead, issue 25).
_BY_DTYPE = {}


def _clops_dtype(dt):
    code = _BY_DTYPE.get(dt)
    if code is None and dt not in _BY_DTYPE:
        code = _NUMPY_DTYPES.get(dt.name) if dt.isnative else None
        _BY_DTYPE[dt] = code
    return code


def numpy_strides(x):
    """x's strides in elements, as the descriptor takes them. An axis of extent 0 or 1 steps
    over nothing, so NumPy leaves any stride there (0 for x[:, None]); it becomes the span of
    the other axes, so that the plugin's layout checks (one unit stride, a leading dimension at
    least the extent it steps over) see the layout of the axes that have extent. None when a
    stride is not a multiple of the itemsize. An array with no elements reaches no memory:
    its strides, whatever NumPy chose (0 for numpy.zeros((3, 0))), become row-major ones."""
    if x.size == 0:
        return _row_major(x.shape)
    if x.flags.c_contiguous:  # the common case: the walk below, once per shape
        return list(_contiguous_strides(x.shape))
    if any(s % x.itemsize for n, s in zip(x.shape, x.strides) if n > 1):
        return None
    return _spanned([s // x.itemsize for s in x.strides], x.shape)


def _spanned(strides, shape):
    """The strides with those of extent-1 axes replaced by the span of the others."""
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, strides) if n > 1)
    return [s if n > 1 else span for n, s in zip(shape, strides)]


@functools.lru_cache(maxsize=256)
def _contiguous_strides(shape):
    return tuple(_spanned(list(_row_major_of(shape)), shape))


def _numpy_tensor(x, kind):
    """A zero-copy descriptor of an ndarray of any layout: strides in bytes become elements."""
    dtype = _clops_dtype(x.dtype)
    if dtype is None:
        raise ValueError("ndarray dtype %s; clops takes native f32, f64, i32, u32, u8, i64"
                         % x.dtype)
    if kind != TENSOR_IN and not x.flags.writeable:
        raise ValueError("a read-only ndarray cannot be an output")
    strides = numpy_strides(x)
    if strides is None:
        raise ValueError("ndarray strides %s are not multiples of its itemsize" % (x.strides,))
    t = _fill(clops_tensor(), dtype, x.shape, strides, 0)
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
    if isinstance(x, numpy.ndarray):
        return _numpy_tensor(x, kind)
    if isinstance(x, tuple) and len(x) == 2:
        return View(x[0], x[1]).tensor(keep)
    raise TypeError("%s is not a tensor: pass an ndarray, clops.View(buffer, shape) or "
                    "(buffer, shape)" % type(x).__name__)


class DeviceView:
    """A tensor in a device Buffer: dtype, shape, strides and offset in elements."""

    def __init__(self, buffer, dtype, shape, strides=None, offset=0):
        self.buffer, self.dtype, self.shape, self.offset = buffer, dtype, tuple(shape), offset
        self.strides = tuple(strides) if strides is not None else tuple(_row_major(shape))
        if _extent(self.shape, self.strides, offset) * DTYPES[dtype][1] > buffer.size:
            raise ValueError("device view reaches past the buffer's %d bytes" % buffer.size)

    def __repr__(self):
        return "<clops.DeviceView %s %s, strides %s, offset %d, of %r>" % (
            DTYPES[self.dtype][0], self.shape, self.strides, self.offset, self.buffer)

    def tensor(self, keep):
        t = _fill(clops_tensor(), self.dtype, self.shape, self.strides, self.offset)
        t.buffer = self.buffer._live()
        return t


