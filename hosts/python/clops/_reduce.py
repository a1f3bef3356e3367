"""_reduce.py — NumPy's reductions through the reduce operator: sum, min, max, argmin and argmax,
over the whole array, an axis or a tuple of axes, with keepdims. (A module of its own because it
defines sum, min and max: the built-ins of those names are not needed here.) norm is _norm.py's,
on the same plans.

The operator reduces a tensor of rank 1 to 4 whole, or a matrix along axis 0 or 1. Everything
else is put in one of those shapes: the axes kept are moved before the axes reduced and each
group is merged into one (a transposed, reshaped view; a copy when the strides do not allow
one), so that a reduction over any axes is one call along the rows of a kept x reduced matrix.

dtypes are NumPy's: float32 and float64 as they are; float16 computed in float32 (exact for
min and max; the sum rounded once to float16); bool and integers of up to 32 bits widened to
int32 or uint32 (exact); int64 and uint64 sums as two uint32 halves of each element summed in one
call (the reduce operator sums 32-bit integers exactly in 64 bits) and put together modulo 2^64,
as NumPy's int64 sum wraps; int64 and uint64 min, max, argmin and argmax when every element fits
in 32 bits (ValueError naming 'x' otherwise). Results have NumPy's dtypes."""

import operator
import sys

import numpy as np

from ._abi import MAX_RANK
from ._api import _PLAIN_MAX, host_array, numpy_function, operand, pool_or_default
from ._pool import Call

# numpy.exceptions.AxisError (NumPy 1.25), numpy.AxisError before: a ValueError and IndexError.
AxisError = getattr(getattr(np, "exceptions", np), "AxisError")


class Plan:
    """A reduction of x over some axes as one reduce call: `x` the tensor the operator takes,
    `axis` its axis (-1: every element), `count` the results it writes, and `shape` the result's
    NumPy shape (keepdims applied)."""

    def __init__(self, x, axis, count, shape):
        self.x, self.axis, self.count, self.shape = x, axis, count, shape


def normalize_axes(fn, axis, ndim, tuples=True):
    """NumPy's `axis` (None, an int, or with `tuples` a tuple of ints) as a sorted tuple of
    axes of x; AxisError, TypeError or ValueError naming 'axis' as NumPy refuses it."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) and tuples else (axis,)
    axes = []
    for item in items:
        try:
            a = operator.index(item)
        except TypeError:
            raise TypeError("clops.%s: parameter 'axis' = %r; expected None, an int%s"
                            % (fn, axis, " or a tuple of ints" if tuples else "")) from None
        if not -ndim <= a < ndim:
            raise AxisError("clops.%s: parameter 'axis' = %r: axis %d is out of bounds for x "
                            "of %d dimensions" % (fn, axis, a, ndim))
        axes.append(a % ndim)
    if len(set(axes)) != len(axes):
        raise ValueError("clops.%s: parameter 'axis' = %r repeats an axis" % (fn, axis))
    return tuple(sorted(axes))


def result_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def reshaped_view(y, shape):
    """y reshaped to `shape` without copying, or None when its strides do not allow that."""
    view = y.view()
    try:
        view.shape = shape  # raises rather than copy, unlike reshape()
    except AttributeError:
        return None
    return view


def plan(fn, x, axes, keepdims, kept_first=True):
    """The Plan of reducing x (an ndarray the operator's dtypes take) over `axes` (sorted).
    With kept_first False the matrix is reduced x kept, along its axis 0, with a contiguous last
    axis (the int64 halves' layout)."""
    shape = result_shape(x.shape, axes, keepdims)
    if x.ndim == 0:
        x = x.reshape(1)
    kept = [i for i in range(x.ndim) if i not in axes]
    if not kept and x.ndim <= MAX_RANK and kept_first:
        return Plan(operand(x, "x", fn, (x.dtype,), range(1, MAX_RANK + 1)), -1, 1, shape)
    if x.ndim == 2 and len(axes) == 1 and kept_first:
        return Plan(operand(x, "x", fn, (x.dtype,), (2,)), axes[0], x.shape[kept[0]], shape)
    k = int(np.prod([x.shape[i] for i in kept], dtype=np.int64))
    r = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    rows = reshaped_view(x.transpose(kept + list(axes)), (k, r)) if kept_first else None
    if rows is not None:
        return Plan(operand(rows, "x", fn, (x.dtype,), (2,)), 1, k, shape)
    columns = reshaped_view(x.transpose(list(axes) + kept), (r, k))
    if columns is None or (not kept_first and columns.strides[1] != x.itemsize and k > 1):
        columns = np.ascontiguousarray(x.transpose(list(axes) + kept)).reshape(r, k)
    return Plan(operand(columns, "x", fn, (x.dtype,), (2,)), 0, k, shape)


def reduce_call(fn, op, x, axes, keepdims, pool, convert=None):
    """The reduce Call of `op` over `axes` of x, whose operator dtype is x's (f32, f64, i32,
    u32); its result is convert(the operator's results as NumPy's shape) when given."""
    return planned_call(op, plan(fn, x, axes, keepdims), convert, pool)


def planned_call(op, p, convert, pool):
    """The reduce Call of `op` that Plan p describes; finish as reduce_call's."""
    out = np.empty(p.count, dtype=operator_out_dtype(op, p.x.dtype))
    def finish():
        result = out.reshape(p.shape)
        if convert is not None:
            result = convert(result)
        return result[()] if not p.shape else result  # a NumPy scalar, as NumPy's
    return Call(pool_or_default(pool), "reduce", dict(x=p.x, out=out, op=op, axis=p.axis),
                finish)


def operator_out_dtype(op, dtype):
    """The operator's result dtype (its descriptor's out): i64 for argmin and argmax and for
    integer sums, else x's."""
    if op in ("argmin", "argmax") or (op == "sum" and dtype.kind in "iu"):
        return np.dtype(np.int64)
    return dtype


def wide_sum_call(fn, x, axes, keepdims, pool):
    """The sum of an int64 or uint64 x as one call: each element's two uint32 halves, side by
    side in a reduced x (kept, 2) matrix, summed exactly in 64 bits, then lo + 2^32 hi modulo
    2^64 (a signed high half read as unsigned changes hi by a multiple of 2^32, which vanishes
    modulo 2^64: NumPy's wrapped sum either way)."""
    dtype = x.dtype
    p = plan(fn, x.astype(dtype.newbyteorder("="), copy=False), axes, keepdims,
             kept_first=False)
    halves = p.x.view(np.uint32)  # r x 2k: element j's halves at 2j and 2j + 1
    out = np.empty(2 * p.count, dtype=np.int64)
    low = 0 if sys.byteorder == "little" else 1
    def finish():
        lo, hi = out[low::2].astype(np.uint64), out[1 - low::2].astype(np.uint64)
        result = (lo + (hi << np.uint64(32))).view(dtype.newbyteorder("=")).reshape(p.shape)
        return result[()] if not p.shape else result  # a NumPy scalar, as NumPy's
    return Call(pool_or_default(pool), "reduce", dict(x=halves, out=out, op="sum", axis=0),
                finish)


def narrowed(fn, x, dtype):
    """x (int64 or uint64) as `dtype` (int32 or uint32) when every element fits, else
    ValueError naming 'x'."""
    y = x.astype(dtype)
    if not np.array_equal(y, x):
        raise ValueError("clops.%s: parameter 'x' has dtype %s with elements beyond %s, and the "
                         "reduce operator compares 32-bit integers; convert x "
                         "(x.astype(numpy.float64): exact to 2^53)" % (fn, x.dtype, dtype))
    return y


def _reduce(fn, op, x, axis, keepdims, pool):
    """The Call of NumPy's reduction `fn` (the operator's `op`): dtypes as the module says. A
    float32 or float64 ndarray that the operator takes as it is keeps its plan under its
    signature (_PLAINS): the next call of that signature plans nothing again (a small call's
    time from Python, issue 25 item 8)."""
    key = _plain_key(op, x, axis, keepdims)
    hit = _PLAINS.get(key) if key is not None else None
    if hit is not None:
        axis, count, shape, convert = hit
        return planned_call(op, Plan(x, axis, count, shape), convert, pool)
    original = x
    x = host_array(x, "x", fn)
    axes = normalize_axes(fn, axis, x.ndim, tuples=op not in ("argmin", "argmax"))
    dtype, kind = x.dtype, x.dtype.kind
    if kind == "f" and dtype.itemsize > 8:
        raise TypeError("clops.%s: parameter 'x' has dtype %s; the reduce operator takes "
                        "float32 and float64 (convert x, or use NumPy)" % (fn, dtype))
    if kind in "iu" and dtype.itemsize == 8:
        if op == "sum":
            return wide_sum_call(fn, x, axes, keepdims, pool)
        x = narrowed(fn, x, np.int32 if kind == "i" else np.uint32)
    elif dtype.itemsize < 4:
        x = x.astype({"b": np.int32, "i": np.int32, "u": np.uint32, "f": np.float32}[kind])
    elif not dtype.isnative:
        x = x.astype(dtype.newbyteorder("="))
    # The operator's results as NumPy's dtype: x's for min, max and float sums; uint64 for
    # unsigned sums (the operator's exact int64 sum, which is >= 0); int64 as they are.
    convert = None
    if op in ("min", "max") or (op == "sum" and kind == "f"):
        convert = lambda r: r.astype(dtype.newbyteorder("="), copy=False)  # noqa: E731
    elif op == "sum" and kind == "u":
        convert = lambda r: r.astype(np.uint64)  # noqa: E731
    p = plan(fn, x, axes, keepdims)
    if key is not None and p.x is original and len(_PLAINS) < _PLAIN_MAX:
        _PLAINS[key] = (p.axis, p.count, p.shape, convert)
    return planned_call(op, p, convert, pool)


# _reduce's signatures of float ndarrays reduced as they are -> (axis, count, shape, convert)
# of their Plan; at most _api's _PLAIN_MAX, the bound of its own such caches (a dict's get and
# set are atomic: threads share it).
_PLAINS = {}


def _plain_key(op, x, axis, keepdims):
    """_reduce's signature of a call: None unless x is a float32 or float64 ndarray itself and
    axis is None, an int or a tuple (hashable as NumPy takes them)."""
    if type(x) is not np.ndarray or x.dtype.kind != "f" or x.dtype.itemsize > 8 or \
            type(axis) not in (type(None), int, tuple):
        return None
    try:
        return (op, x.dtype, x.shape, x.strides, axis, bool(keepdims))
    except TypeError:  # a tuple holding something unhashable: NumPy refuses it, as _reduce will
        return None


@numpy_function
def sum(x, axis=None, *, keepdims=False, pool=None):
    """numpy.sum: float sums are compensated (within 3u|sum| + 4nu^2 sum|x_i|, u the unit
    roundoff); integer sums are exact, int64 for bool and signed integers, uint64 for unsigned
    ones, wrapped modulo 2^64 as NumPy's. axis: None, an int or a tuple of ints."""
    return _reduce("sum", "sum", x, axis, keepdims, pool)


@numpy_function
def min(x, axis=None, *, keepdims=False, pool=None):
    """numpy.min: exact; NaN propagates. No elements raises ValueError (InvalidArgumentError)."""
    return _reduce("min", "min", x, axis, keepdims, pool)


@numpy_function
def max(x, axis=None, *, keepdims=False, pool=None):
    """numpy.max: exact; NaN propagates. No elements raises ValueError (InvalidArgumentError)."""
    return _reduce("max", "max", x, axis, keepdims, pool)


@numpy_function
def argmin(x, axis=None, *, keepdims=False, pool=None):
    """numpy.argmin: the first index of the least element (of the first NaN, if any); for
    axis=None the index into x's row-major flattening, as NumPy's. axis: None or an int."""
    return _reduce("argmin", "argmin", x, axis, keepdims, pool)


@numpy_function
def argmax(x, axis=None, *, keepdims=False, pool=None):
    """numpy.argmax: the first index of the greatest element (of the first NaN, if any)."""
    return _reduce("argmax", "argmax", x, axis, keepdims, pool)
