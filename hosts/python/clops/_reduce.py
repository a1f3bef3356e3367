"""_reduce.py — NumPy's reductions through the reduce operator: sum, min, max, argmin, argmax and
norm, over the whole array (axis=None) or along an axis of a 2-D one. (A module of its own
because it defines sum, min and max: the built-ins of those names are not needed here.)

NumPy's axes map onto the operator's: axis=None is the operator's axis -1 (every element, x of
1 to 4 dimensions; more are flattened); for a 2-D x, NumPy's axis 0 (or -2) reduces down the
columns, as the operator's axis 0, and 1 (or -1) along the rows, as its axis 1; a 1-D x with
axis 0 or -1 is the whole vector. Any other rank and axis raises ValueError."""

import operator

import numpy as np

from ._abi import MAX_RANK
from ._api import accepted_dtypes, check_dtype, numpy_function, operand, pool_or_default
from ._pool import Call


def _reduce(fn, op, x, axis, pool, dtypes=None):
    dtypes = dtypes or accepted_dtypes("reduce", "x")
    x = np.asarray(x)
    check_dtype(x, "x", fn, dtypes)
    if x.ndim == 0:
        x = x.reshape(1)
    op_axis = _operator_axis(fn, x, axis)
    if op_axis == -1 and x.ndim > MAX_RANK:
        x = x.reshape(-1)  # row-major, so argmin's and argmax's flat indices stay NumPy's
    x = operand(x, "x", fn, dtypes, range(1, MAX_RANK + 1))
    out = np.empty(1 if op_axis == -1 else x.shape[1 - op_axis], dtype=_out_dtype(op, x.dtype))
    def finish():
        result = out.astype(np.uint64) if op == "sum" and x.dtype.kind == "u" else out
        # (an unsigned sum: the operator's exact i64 sum, as NumPy's dtype)
        return result[0] if op_axis == -1 else result
    return Call(pool_or_default(pool), "reduce", dict(x=x, out=out, op=op, axis=op_axis), finish)


def _operator_axis(fn, x, axis):
    """The reduce operator's axis for NumPy's `axis` on x: -1 (every element), 0 or 1."""
    if axis is None:
        return -1
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError("clops.%s: parameter 'axis' = %r; expected None or an int"
                        % (fn, axis)) from None
    if not -x.ndim <= axis < x.ndim:
        raise ValueError("clops.%s: parameter 'axis' = %d is out of bounds for x of %d "
                         "dimensions" % (fn, axis, x.ndim))
    if x.ndim == 1:
        return -1
    if x.ndim == 2:
        return axis % 2
    raise ValueError("clops.%s: parameter 'axis' = %d with x of %d dimensions; the reduce "
                     "operator takes axis=None for 1 to %d dimensions, and an axis for 1 or 2 "
                     "only" % (fn, axis, x.ndim, MAX_RANK))


def _out_dtype(op, dtype):
    """The operator's result dtype (its descriptor's out): i64 for argmin and argmax and for
    integer sums, else x's."""
    if op in ("argmin", "argmax") or (op == "sum" and dtype.kind in "iu"):
        return np.dtype(np.int64)
    return dtype


@numpy_function
def sum(x, axis=None, *, pool=None):
    """numpy.sum: float sums are compensated (within 3u|sum| + 4nu^2 sum|x_i|, u the unit
    roundoff); int32 sums are exact int64, uint32 sums exact uint64."""
    return _reduce("sum", "sum", x, axis, pool)


@numpy_function
def min(x, axis=None, *, pool=None):
    """numpy.min: exact; NaN propagates. No elements raises ValueError (InvalidArgumentError)."""
    return _reduce("min", "min", x, axis, pool)


@numpy_function
def max(x, axis=None, *, pool=None):
    """numpy.max: exact; NaN propagates. No elements raises ValueError (InvalidArgumentError)."""
    return _reduce("max", "max", x, axis, pool)


@numpy_function
def argmin(x, axis=None, *, pool=None):
    """numpy.argmin: the first index of the least element (of the first NaN, if any); for
    axis=None the index into x's row-major flattening, as NumPy's."""
    return _reduce("argmin", "argmin", x, axis, pool)


@numpy_function
def argmax(x, axis=None, *, pool=None):
    """numpy.argmax: the first index of the greatest element (of the first NaN, if any)."""
    return _reduce("argmax", "argmax", x, axis, pool)


@numpy_function
def norm(x, axis=None, *, pool=None):
    """The 2-norm, as numpy.linalg.norm with ord=None: of every element for axis=None (a
    vector's 2-norm, a matrix's Frobenius norm), or of each column (axis 0) or row (axis 1) of
    a 2-D x. float32 or float64; scaled (LAPACK 3.10's xNRM2), so neither overflows nor
    underflows, relative error within 4u."""
    floats = tuple(d for d in accepted_dtypes("reduce", "x") if d.kind == "f")
    return _reduce("norm", "norm2", x, axis, pool, floats)
