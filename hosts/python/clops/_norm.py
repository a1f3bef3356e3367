"""_norm.py — numpy.linalg.norm through the reduce operator, for the orders it can compose:

vector orders (x 1-D, or axis an int):
  None, 2   the operator's norm2 (scaled: no overflow or underflow; within 4u)
  1         the operator's sum of |x|
  inf, -inf the operator's max or min of |x|
  0         the operator's sum of (x != 0) as int32: the count of nonzero elements
  p         the operator's sum of |x|^p, then ^(1/p) of each sum, as NumPy computes it
matrix orders (x 2-D, or axis a pair):
  None, 'fro'  norm2 over both axes
  1, -1        the operator's sums of |x| down the columns, then its max or min of those
  inf, -inf    the same along the rows
|x|, |x|^p and (x != 0) are computed on the host (a copy of x; NumPy does the same), the
reductions by clops; the matrix orders are two reduce calls, the second over the first's results.
'nuc', 2 and -2 need singular values, which clops has no operator for: NotImplementedError naming
'ord'. Integers and bool are converted to float64 first, as NumPy's norm does; float16 is
computed in float32, its result given as float16."""

import numbers
import operator

import numpy as np

from ._api import host_array, numpy_function, pool_or_default
from ._pool import Call
from ._reduce import max, min, normalize_axes, reduce_call, result_shape


def float_operand(fn, x):
    """x as float32 or float64 for the operator, and the dtype of NumPy's result."""
    x = host_array(x, "x", fn)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)  # numpy.linalg.norm: x.astype(float)
    if x.dtype.itemsize > 8:
        raise TypeError("clops.norm: parameter 'x' has dtype %s; the reduce operator takes "
                        "float32 and float64 (convert x, or use numpy.linalg.norm)" % x.dtype)
    result = x.dtype.newbyteorder("=")
    if x.dtype.itemsize < 4 or not x.dtype.isnative:
        x = x.astype(np.float32 if x.dtype.itemsize < 4 else result)
    return x, result


def cast_to(dtype):
    return lambda r: r.astype(dtype, copy=False)


def chained(call, then):
    """`call`, whose result goes through then(result) (a second reduction run when the first is
    done: on the caller's thread, or for a submitted call on the completion thread)."""
    finish = call.finish
    return Call(call.pool, call.op, call.kwargs, lambda: then(finish()))


def vector_norm(x, ord, axes, keepdims, pool, dtype):
    if ord is None or ord == 2:
        return reduce_call("norm", "norm2", x, axes, keepdims, pool, cast_to(dtype))
    if ord == np.inf:
        return reduce_call("norm", "max", np.abs(x), axes, keepdims, pool, cast_to(dtype))
    if ord == -np.inf:
        return reduce_call("norm", "min", np.abs(x), axes, keepdims, pool, cast_to(dtype))
    if ord == 0:
        return reduce_call("norm", "sum", (x != 0).astype(np.int32), axes, keepdims, pool,
                           cast_to(dtype))
    if ord == 1:
        return reduce_call("norm", "sum", np.abs(x), axes, keepdims, pool, cast_to(dtype))
    if isinstance(ord, numbers.Number) and not isinstance(ord, (bool, np.bool_)):
        p = np.asarray(ord, dtype=x.dtype)
        return reduce_call("norm", "sum", np.abs(x) ** p, axes, keepdims, pool,
                           lambda r: (r ** (1 / p)).astype(dtype, copy=False))
    raise ValueError("clops.norm: parameter 'ord' = %r is no order of a vector norm (None, "
                     "inf, -inf, 0, 1, 2 or another number)" % (ord,))


def matrix_norm(x, ord, axes, keepdims, pool, dtype):
    row_axis, col_axis = axes  # as given: NumPy's matrix norms read the pair in its order
    if ord is None or ord == "fro":
        return reduce_call("norm", "norm2", x, tuple(sorted(axes)), keepdims, pool,
                           cast_to(dtype))
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(
            "clops.norm: parameter 'ord' = %r needs the singular values of x, which clops has "
            "no operator for; use numpy.linalg.norm (or scipy.linalg.svdvals)" % (ord,))
    if ord in (1, -1):
        summed, over = row_axis, col_axis  # column sums, then their max or min
    elif ord in (np.inf, -np.inf):
        summed, over = col_axis, row_axis
    else:
        raise ValueError("clops.norm: parameter 'ord' = %r is no order of a matrix norm clops "
                         "computes (None, 'fro', 1, -1, inf, -inf)" % (ord,))
    extreme = max if ord > 0 else min
    over_after = over - (over > summed)  # its place once `summed` is gone
    shape = result_shape(x.shape, (row_axis, col_axis), True)
    def then(sums):
        result = extreme(sums, axis=over_after, pool=pool).astype(dtype, copy=False)
        return result.reshape(shape) if keepdims else result
    return chained(reduce_call("norm", "sum", np.abs(x), (summed,), False, pool), then)


@numpy_function
def norm(x, ord=None, axis=None, keepdims=False, *, pool=None):
    """numpy.linalg.norm(x, ord, axis, keepdims) for the orders the module lists: of every
    element for axis=None and ord=None (a vector's 2-norm, a matrix's Frobenius norm, any
    rank); with ord, x must be 1-D (a vector norm) or 2-D (a matrix norm), or axis says which:
    an int (vector norms along it) or a pair (matrix norms over those two axes). The result has
    NumPy's dtype: x's float dtype, float64 for integers."""
    x, dtype = float_operand("norm", x)
    pool = pool_or_default(pool)
    if axis is None:
        if ord is None:
            return reduce_call("norm", "norm2", x, tuple(range(x.ndim)), keepdims, pool,
                               cast_to(dtype))
        if x.ndim not in (1, 2):
            raise ValueError("clops.norm: parameter 'ord' = %r with axis=None needs x of 1 or "
                             "2 dimensions; x has %d dimensions (name the axes with axis=)"
                             % (ord, x.ndim))
        axis = tuple(range(x.ndim))
    elif not isinstance(axis, tuple):
        axis = (axis,)
    if len(axis) not in (1, 2):
        raise ValueError("clops.norm: parameter 'axis' = %r; expected an int or a pair of "
                         "ints" % (axis,))
    normalize_axes("norm", axis, x.ndim)  # its checks: types, bounds, repeats
    axes = tuple(operator.index(a) % x.ndim for a in axis)  # in the order given
    if len(axes) == 1:
        return vector_norm(x, ord, axes, keepdims, pool, dtype)
    return matrix_norm(x, ord, axes, keepdims, pool, dtype)
