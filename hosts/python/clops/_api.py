"""_api.py — the NumPy functions, shaped like scipy.linalg's and NumPy's: gemm, lu_factor,
lu_solve, solve, transpose and mandelbrot, and the default pool they run on when given no
pool=.

Arrays of any layout go in (C or Fortran order, slices, transposed views) and are viewed in place
where the operator can take them; what it cannot (negative or zero strides, a non-native byte
order, a matrix with no unit stride for the LU family) is copied first. Inputs are never written:
results are new arrays, unless out= (gemm) or overwrite_a/overwrite_b (as SciPy's) allow it.

dtypes as SciPy's: the linear algebra functions compute in float64 when any operand is float64,
long double or an integer of more than 16 bits, else in float32 (scipy.linalg.get_blas_funcs'
choice; among floats, NumPy's result_type); operands of another dtype are converted (a copy).
What is no array of numbers (complex, objects, strings; a pyopencl array, which lives in device
memory) raises TypeError naming the parameter. The reductions are in _reduce.py, norm in
_norm.py."""

import functools
import numbers
import threading

import numpy as np

from ._abi import DTYPES
from ._errors import LinAlgError, warn_singular
from ._library import library
from ._pool import Call, Pool
from ._tensor import numpy_strides

_default = None
_default_lock = threading.Lock()


def default_pool():
    """The pool the functions use when given no pool=: Pool() (the built-in configuration: the
    first GPU, else the CPU device), created by the first call from any thread, the same for
    every thread, and never released: the process's exit frees it. Releasing it at exit would
    save nothing (no state of it outlives the process; the OS and the driver reclaim its memory)
    and would run while daemon threads may still be inside calls on it."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Pool()
    return _default


def pool_or_default(pool):
    return default_pool() if pool is None else pool


def numpy_function(prepare):
    """The NumPy function made of `prepare`, which takes the function's parameters (pool=
    included), checks and converts them and returns the operator's Call: the function runs it
    and returns its finish(). clops.submit(fn, ...) submits fn.prepare's Call instead."""
    @functools.wraps(prepare)
    def function(*args, **kwargs):
        call = prepare(*args, **kwargs)
        call.pool.execute(call.op, call.kwargs)
        return call.finish()
    function.prepare = prepare
    return function


def submit(fn, *args, stream=None, wait=(), cl_wait=(), **kwargs):
    """Submits a call and returns its Future (a concurrent.futures.Future that asyncio can
    await) at once: fn is one of the NumPy functions (clops.gemm, lu_factor, solve, ...) with its
    arguments, or an operator's name with Pool.invoke's; on `stream` (a Stream), else on the
    default stream of pool= (else of the default pool). wait: Futures that must complete first;
    cl_wait: cl_events the call's device work waits for. The arrays named stay in use, and are
    held by the Future, until it is done; see Stream.submit."""
    if stream is None:
        # Popped for a function too: Stream.submit gives it its stream's pool.
        stream = pool_or_default(kwargs.pop("pool", None)).default_stream()
    elif not isinstance(fn, str):
        kwargs.pop("pool", None)
    return stream.submit(fn, *args, wait=wait, cl_wait=cl_wait, **kwargs)


# ---- Operands -------------------------------------------------------------------------------

_NUMPY_NAME = {name: numpy_name for name, _, _, numpy_name in DTYPES.values()}


@functools.lru_cache(maxsize=None)
def accepted_dtypes(op, param):
    """The NumPy dtypes operator `op`'s descriptor accepts for its tensor `param` (read once:
    a descriptor never changes while the library is loaded)."""
    for p in library().op(op).params:
        if p.name == param:
            return tuple(np.dtype(_NUMPY_NAME[d]) for d in p.dtypes)
    raise LookupError("operator %s has no parameter %r" % (op, param))


def dtype_names(dtypes):
    names = [d.name for d in dtypes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def check_dtype(arr, name, fn, dtypes):
    if arr.dtype.newbyteorder("=") not in dtypes:
        raise TypeError("clops.%s: parameter '%s' has dtype %s; expected %s"
                        % (fn, name, arr.dtype, dtype_names(dtypes)))


# The operator each NumPy function calls: what a pyopencl array can be given to instead.
_OPERATOR = {"gemm": "gemm", "lu_factor": "lu", "lu_solve": "lu_solve", "solve": "solve",
             "transpose": "transpose"}


def host_array(x, name, fn):
    """x as an ndarray of numbers (bool, integers or floats): else TypeError naming the
    parameter, for a pyopencl array (device memory, which np.asarray would wrap as an object)
    with what to do instead, or for what NumPy makes no numbers of."""
    kind = type(x)
    if kind.__module__.startswith("pyopencl"):
        raise TypeError(
            "clops.%s: parameter '%s' is a %s.%s, in device memory; the NumPy functions take "
            "host arrays. Pass %s.get() (a host copy), or call the operator on the pyopencl "
            "arrays themselves, without a copy, through a pool made on their context: "
            "pool = clops._interop.pool_from_cl(ctx, ctx.devices, [queue]); "
            "pool.invoke(%r, ...)"
            % (fn, name, kind.__module__, kind.__name__, name, _OPERATOR.get(fn, "reduce")))
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        what = "has dtype %s" % arr.dtype if isinstance(x, np.ndarray) else \
            "(a %s) makes an array of dtype %s" % (kind.__name__, arr.dtype)
        why = ", and clops' operators are real" if arr.dtype.kind == "c" else ", not numbers"
        raise TypeError("clops.%s: parameter '%s' %s%s; expected bool, integers or floats"
                        % (fn, name, what, why))
    return arr


def compute_dtype(fn, named, accepted):
    """The float dtype a linear algebra function computes in for its operands `named`
    ((name, ndarray) pairs), SciPy's (scipy.linalg.get_blas_funcs): float64 when any operand is
    float64, long double, or an integer of more than 16 bits; else float32 (float32, float16,
    bool, integers of up to 16 bits). Among floats that is NumPy's result_type. TypeError
    naming the first operand when `accepted` (the operator's dtypes) lacks it."""
    wide = any(arr.dtype.itemsize > (4 if arr.dtype.kind == "f" else 2) for _, arr in named)
    dtype = np.dtype(np.float64 if wide else np.float32)
    if dtype not in accepted:
        name, arr = named[0]
        raise TypeError("clops.%s: parameter '%s' has dtype %s, computed in %s; expected %s"
                        % (fn, name, arr.dtype, dtype, dtype_names(accepted)))
    return dtype


def linalg_operands(fn, op, named, also=()):
    """(dtype, arrays): the operands `named` ((name, value, ndims) triples; the first named as
    operator `op`'s parameter whose dtypes are listed) as arrays the operator views, in the
    dtype compute_dtype gives them and the ndarrays `also` ((name, ndarray) pairs: gemm's out):
    the arrays themselves when that is theirs, else converted copies.

    What it decides depends on the operands' dtypes, shapes and strides alone: for ndarrays it
    takes as they are, the dtype is kept under that signature (_PLAIN_OPERANDS), and the next
    call of the same signature checks nothing again (a small call's time from Python, issue 25
    item 8)."""
    key = _operands_key(fn, named, also)
    dtype = _PLAIN_OPERANDS.get(key) if key is not None else None
    if dtype is not None:
        return dtype, [x for _, x, _ in named]
    arrays = [(name, host_array(x, name, fn)) for name, x, _ in named]
    dtype = compute_dtype(fn, arrays + list(also), accepted_dtypes(op, named[0][0]))
    operands = [operand(arr if arr.dtype == dtype else arr.astype(dtype), name, fn, (dtype,),
                        ndims)
                for (name, arr), (_, _, ndims) in zip(arrays, named)]
    if key is not None and len(_PLAIN_OPERANDS) < _PLAIN_MAX and \
            all(arr is x for arr, (_, x, _) in zip(operands, named)):
        _PLAIN_OPERANDS[key] = dtype
    return dtype, operands


# linalg_operands' signatures of operands taken as they are -> their dtype; at most _PLAIN_MAX
# (a dict's get and set are atomic: threads share it).
_PLAIN_OPERANDS = {}
_PLAIN_MAX = 256


def _operands_key(fn, named, also):
    """linalg_operands' signature of a call: None unless every operand is an ndarray itself (a
    subclass or anything else goes the whole way)."""
    key = [fn]
    for _, x, _ in named:
        if type(x) is not np.ndarray:
            return None
        key.append((x.dtype, x.shape, x.strides))
    for _, x in also:
        key.append(x.dtype)
    return tuple(key)


def viewable(arr):
    """Whether the plugin takes arr's layout in place: native byte order, every axis with
    extent stepping forward by whole elements."""
    strides = numpy_strides(arr)
    return arr.dtype.isnative and strides is not None and \
        all(s > 0 for n, s in zip(arr.shape, strides) if n > 1)


def matrix_layout(arr):
    """Whether arr is a matrix the LU operators (and gemm's c) take in place: row- or
    column-major, one unit stride and the other at least the extent it steps over."""
    if arr.ndim != 2 or not viewable(arr):
        return False
    (m, n), (s0, s1) = arr.shape, numpy_strides(arr)
    return (s1 == 1 and s0 >= n) or (s0 == 1 and s1 >= m)


def operand(x, name, fn, dtypes, ndims):
    """x as an ndarray the plugin can view: one of `dtypes` (TypeError naming the parameter
    otherwise), a number of dimensions in `ndims` (ValueError otherwise); copied, in C order,
    when its layout cannot be viewed."""
    arr = host_array(x, name, fn)
    check_dtype(arr, name, fn, dtypes)
    if arr.ndim not in ndims:
        raise ValueError("clops.%s: parameter '%s' has %d dimensions (shape %s); expected %s"
                         % (fn, name, arr.ndim, arr.shape,
                            " or ".join(str(n) for n in ndims)))
    return arr if viewable(arr) else native_copy(arr)


def native_copy(arr):
    """A C-order copy of arr in native byte order: what any operator can view."""
    return np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C")


def private_copy(arr):
    """A copy an operator may overwrite, in the layout of arr when that is Fortran order
    (SciPy's), else in C order (the LU operators' working layout)."""
    order = "F" if arr.flags.f_contiguous and not arr.flags.c_contiguous else "C"
    return np.array(arr, order=order)


def overwritable(arr, original, matrix):
    """Whether arr, made by operand() from the caller's `original`, is that very array and may
    be written in place: writable, and of a layout the operator takes (a matrix, or a
    contiguous vector that becomes an N x 1 one)."""
    if arr is not original or not arr.flags.writeable:
        return False
    return matrix_layout(arr) if matrix else arr.flags.c_contiguous


def require_finite(arr, name, fn):
    if not np.isfinite(arr).all():
        raise ValueError("clops.%s: parameter '%s' must not contain infs or NaNs" % (fn, name))


# ---- GEMM -----------------------------------------------------------------------------------

@numpy_function
def gemm(a, b, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, out=None, pool=None):
    """alpha * op(a) @ op(b), op(x) being x or x.T as trans_a / trans_b say: a new array, or,
    with out= (an ndarray of the product's shape), alpha * op(a) @ op(b) + beta * out written
    into out, which is returned. Without out, beta has nothing to scale.

    a and b: 2-D or 1-D, any layout. A 1-D operand is a vector as numpy.matmul takes it: a row
    on the left, a column on the right, and its axis is not in the result (a matrix times a
    vector is a vector, a vector times a vector a scalar); trans_a/trans_b leave a vector as it
    is, as v.T does. The dtype is compute_dtype's of a, b and out (integers: float64, as
    SciPy's); out receives the result cast as NumPy's out= does (casting='same_kind')."""
    if out is not None and not isinstance(out, np.ndarray):
        raise TypeError("clops.gemm: parameter 'out' is a %s; expected a numpy.ndarray"
                        % type(out).__name__)
    dtype, (a, b) = linalg_operands("gemm", "gemm", [("a", a, (1, 2)), ("b", b, (1, 2))],
                                    [("out", out)] if out is not None else [])
    # A vector as the 1 x k row or k x 1 column matrix it is (a view).
    row, column = a.ndim == 1, b.ndim == 1
    if row:
        a, trans_a = a.reshape(1, -1), False
    if column:
        b, trans_b = b.reshape(-1, 1), False
    m, k = a.shape[::-1] if trans_a else a.shape
    kb, n = b.shape[::-1] if trans_b else b.shape
    if kb != k:
        raise ValueError("clops.gemm: parameter 'b' has shape %s, so op(b) has %d rows; "
                         "expected %d, the columns of op(a) (%d x %d)"
                         % ((kb,) if column else b.shape, kb, k, m, k))
    shape = (() if row else (m,)) + (() if column else (n,))
    if out is None:
        c, beta = np.empty((m, n), dtype=dtype), 0.0
    else:
        c = gemm_target(out, dtype, a, b, shape, (m, n))
    def finish():
        if out is None:
            return c.reshape(shape)[()]  # [()]: a NumPy scalar for vector @ vector
        if not np.may_share_memory(c, out):
            np.copyto(out, c.reshape(shape), casting="same_kind")
        return out
    return Call(pool_or_default(pool), "gemm", dict(a=a, b=b, c=c, trans_a=bool(trans_a),
                                                    trans_b=bool(trans_b), alpha=alpha,
                                                    beta=beta), finish)


def gemm_target(out, dtype, a, b, shape, matrix_shape):
    """The m x n matrix gemm writes for out= (of the product's `shape`): a view of out itself,
    or a copy of it in `dtype` when the operator cannot write it in place (another dtype, no
    unit stride, foreign byte order, or memory shared with a or b)."""
    if out.shape != shape:
        raise ValueError("clops.gemm: parameter 'out' has shape %s; expected %s (op(a) @ op(b))"
                         % (out.shape, shape))
    if not out.flags.writeable:
        raise ValueError("clops.gemm: parameter 'out' is read-only")
    if not np.can_cast(dtype, out.dtype, "same_kind"):
        raise TypeError("clops.gemm: parameter 'out' has dtype %s; the product is %s, which "
                        "NumPy's out= does not cast to it (casting='same_kind')"
                        % (out.dtype, dtype))
    c = out.reshape(matrix_shape)  # a view: the same elements, a vector's axis restored
    if out.dtype == dtype and matrix_layout(c) and not np.may_share_memory(c, a) and \
            not np.may_share_memory(c, b):
        return c
    return np.array(c, dtype=dtype, order="C")


# ---- LU -------------------------------------------------------------------------------------

@numpy_function
def lu_factor(a, overwrite_a=False, check_finite=True, *, pool=None):
    """LU factorization with partial pivoting, as scipy.linalg.lu_factor: returns (lu, piv),
    lu holding U and L's entries below the diagonal (unit diagonal not stored), piv the row
    interchanges: row i was interchanged with row piv[i], for i = 0, 1, ... in order.

    piv is 0-based, as SciPy's: the lu operator writes LAPACK's 1-based ipiv (getrf's), and
    piv = ipiv - 1. a: M x N; its dtype as compute_dtype says (integers: float64, as SciPy's).
    A singular U (some U[k, k] exactly 0) gives a
    LinAlgWarning (SciPy's when SciPy is installed, else RuntimeWarning), and the factors."""
    original = a
    _, (a,) = linalg_operands("lu_factor", "lu", [("a", a, (2,))])
    if check_finite:
        require_finite(a, "a", "lu_factor")
    lu = a if overwrite_a and overwritable(a, original, True) else private_copy(a)
    ipiv = np.zeros(min(lu.shape), dtype=np.int32)
    info = np.zeros(1, dtype=np.int32)
    def finish():
        if info[0] > 0:
            warn_singular(int(info[0]), stacklevel=3)  # finish, lu_factor, its caller
        return lu, ipiv - 1
    return Call(pool_or_default(pool), "lu", dict(a=lu, ipiv=ipiv, info=info), finish)


# SciPy's trans values: 0 A x = b, 1 A^T x = b, 2 A^H x = b (A^T for real matrices).
_TRANS = {0: "none", 1: "transpose", 2: "transpose"}


@numpy_function
def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True, *, pool=None):
    """Solves A x = b (trans=0) or A^T x = b (trans=1, or 2: A^H = A^T for real A) with the
    (lu, piv) of lu_factor, as scipy.linalg.lu_solve; b is N or N x K, x has b's shape and the
    dtype compute_dtype gives lu and b (a float32 lu and a float64 b: float64)."""
    lu, piv = lu_and_piv
    original = b
    _, (lu, b) = linalg_operands("lu_solve", "lu_solve", [("lu", lu, (2,)), ("b", b, (1, 2))])
    if lu.shape[0] != lu.shape[1]:
        raise ValueError("clops.lu_solve: parameter 'lu' has shape %s; expected a square "
                         "matrix" % (lu.shape,))
    if not matrix_layout(lu):
        lu = np.ascontiguousarray(lu)
    n = lu.shape[0]
    ipiv = lapack_pivots(piv, n)
    op_trans = lu_solve_trans(trans)
    check_rows("lu_solve", "b", b, n, "lu")
    if check_finite:
        require_finite(lu, "lu", "lu_solve")
        require_finite(b, "b", "lu_solve")
    x = b if overwrite_b and overwritable(b, original, b.ndim == 2) else private_copy(b)
    return Call(pool_or_default(pool), "lu_solve",
                dict(lu=lu, ipiv=ipiv, b=as_matrix(x), trans=op_trans), lambda: x)


def lapack_pivots(piv, n):
    """SciPy's 0-based piv as the 1-based i32 ipiv the operators take (LAPACK's)."""
    piv = np.asarray(piv)
    if piv.dtype.kind not in "iu":
        raise TypeError("clops.lu_solve: parameter 'piv' has dtype %s; expected integers "
                        "(lu_factor's pivots)" % piv.dtype)
    if piv.shape != (n,):
        raise ValueError("clops.lu_solve: parameter 'piv' has shape %s; expected (%d,), the "
                         "order of lu" % (piv.shape, n))
    if n and (piv.min() < 0 or piv.max() >= n):
        raise ValueError("clops.lu_solve: parameter 'piv' has entries from %d to %d; expected "
                         "0-based row numbers 0 .. %d" % (piv.min(), piv.max(), n - 1))
    return (piv + 1).astype(np.int32)


def lu_solve_trans(trans):
    """The operator's trans value for SciPy's, if the plugin's lu_solve lists it."""
    try:
        wanted = _TRANS[trans]
    except (KeyError, TypeError):
        raise ValueError("clops.lu_solve: parameter 'trans' = %r; expected 0, 1 or 2"
                         % (trans,)) from None
    offered = next(p.enum_values for p in library().op("lu_solve").params if p.name == "trans")
    if wanted not in offered:
        raise NotImplementedError("clops.lu_solve: trans=%r needs the lu_solve operator's trans "
                                  "= %s, which this plugin does not have (it offers: %s)"
                                  % (trans, wanted, ", ".join(offered)))
    return wanted


def check_rows(fn, name, b, n, of):
    if b.shape[0] != n:
        raise ValueError("clops.%s: parameter '%s' has shape %s; expected %d rows, the order of "
                         "'%s'" % (fn, name, b.shape, n, of))


def as_matrix(x):
    """x, or an N-vector as the N x 1 matrix the operators take (a view: results land in x)."""
    return x.reshape(x.shape[0], 1) if x.ndim == 1 else x


@numpy_function
def solve(a, b, overwrite_a=False, overwrite_b=False, check_finite=True, *, pool=None):
    """x with a x = b, as scipy.linalg.solve for a general square a: b is N or N x K, x has b's
    shape and the dtype compute_dtype gives a and b. A singular a raises clops.LinAlgError (a
    numpy.linalg.LinAlgError) with `.info`, the 1-based k with U[k, k] exactly 0."""
    original_a, original_b = a, b
    _, (a, b) = linalg_operands("solve", "solve", [("a", a, (2,)), ("b", b, (1, 2))])
    if a.shape[0] != a.shape[1]:
        raise ValueError("clops.solve: parameter 'a' has shape %s; expected a square matrix"
                         % (a.shape,))
    check_rows("solve", "b", b, a.shape[0], "a")
    if check_finite:
        require_finite(a, "a", "solve")
        require_finite(b, "b", "solve")
    lu = a if overwrite_a and overwritable(a, original_a, True) else private_copy(a)
    x = b if overwrite_b and overwritable(b, original_b, b.ndim == 2) else private_copy(b)
    ipiv = np.zeros(a.shape[0], dtype=np.int32)
    info = np.zeros(1, dtype=np.int32)
    def finish():
        if info[0] > 0:
            error = LinAlgError("clops.solve: matrix is singular: U[%d, %d] of its LU factors "
                                "is exactly zero" % (info[0] - 1, info[0] - 1))
            error.info = int(info[0])
            raise error
        return x
    return Call(pool_or_default(pool), "solve", dict(a=lu, b=as_matrix(x), ipiv=ipiv, info=info),
                finish)


# ---- Transpose and Mandelbrot -----------------------------------------------------------------

@numpy_function
def transpose(a, *, pool=None):
    """a.T of a 2-D array as a new C-contiguous array, copied by the transpose operator, which
    copies elements as raw bits of their size: any bool, integer or float dtype of 1, 4 or 8
    bytes is viewed as the operator's dtype of that size (int64 as float64, bool as uint8),
    bit for bit; 2-byte ones (int16, uint16, float16) go through uint32 and back. The result
    has a's dtype."""
    # An ndarray whose view as its carrier the operator takes as it is keeps the carrier under
    # its signature (_PLAIN_TRANSPOSES): the next call of it checks nothing again.
    key = (a.dtype, a.shape, a.strides) if type(a) is np.ndarray else None
    carrier = _PLAIN_TRANSPOSES.get(key) if key is not None else None
    if carrier is not None:
        dtype, x = a.dtype, a.view(carrier)
    else:
        a = host_array(a, "a", "transpose")
        dtype = a.dtype
        carrier = transpose_carrier(dtype, accepted_dtypes("transpose", "x"))
        if dtype.itemsize == 2:
            x = a.view(np.dtype(np.uint16).newbyteorder(dtype.byteorder)).astype(carrier)
        else:
            x = a.view(carrier.newbyteorder(dtype.byteorder))
        view = x
        x = operand(x, "a", "transpose", (carrier,), (2,))
        if key is not None and x is view and dtype.itemsize != 2 and dtype.isnative and \
                len(_PLAIN_TRANSPOSES) < _PLAIN_MAX:
            _PLAIN_TRANSPOSES[key] = carrier
    y = np.empty(x.shape[::-1], dtype=carrier)
    def finish():
        if dtype.itemsize == 2:
            return y.astype(np.uint16).view(dtype.newbyteorder("="))
        return y.view(dtype.newbyteorder("="))
    return Call(pool_or_default(pool), "transpose", dict(x=x, y=y), finish)


# transpose's signatures (dtype, shape, strides) of native ndarrays viewed as their carrier as they
# are -> the carrier; at most _PLAIN_MAX.
_PLAIN_TRANSPOSES = {}


def transpose_carrier(dtype, accepted):
    """The operator's dtype that carries `dtype`'s bits: the one of its size (uint32 for 2
    bytes), preferring an integer one; TypeError naming 'a' for a size it has none of."""
    size = 4 if dtype.itemsize == 2 else dtype.itemsize
    fits = sorted((d for d in accepted if d.itemsize == size), key=lambda d: d.kind == "f")
    if not fits:
        raise TypeError("clops.transpose: parameter 'a' has dtype %s, of %d bytes; the "
                        "transpose operator copies elements of %s bytes"
                        % (dtype, dtype.itemsize, ", ".join(sorted({str(d.itemsize)
                                                                      for d in accepted}))))
    return fits[0]


@numpy_function
def mandelbrot(width, height, *, center=(-0.5, 0.0), scale=3.0, max_iter=1024,
               dtype=np.float32, pool=None):
    """Renders the Mandelbrot set: returns (counts, rgba), counts the uint32 height x width
    iteration counts (max_iter for points that did not escape), rgba the uint8 height x width x 4
    image through the operator's palette (black inside). The view is centred on `center` (an
    (x, y) pair or a complex number) and `scale` wide in the complex plane, square pixels;
    row 0 is the top. dtype (float32 or float64) is the arithmetic of the iteration; float64 for
    deep zooms needs a device with double precision. Bit-identical on every device: see
    `clops ops mandelbrot` for the exact steps."""
    width = size_argument(width, "width")
    height = size_argument(height, "height")
    if isinstance(center, complex):
        center = (center.real, center.imag)
    try:
        center_x, center_y = (float(c) for c in center)
    except (TypeError, ValueError):
        raise TypeError("clops.mandelbrot: parameter 'center' = %r; expected an (x, y) pair or "
                        "a complex number" % (center,)) from None
    precision = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}.get(np.dtype(dtype))
    offered = next(p.enum_values for p in library().op("mandelbrot").params
                   if p.name == "precision")
    if precision not in offered:
        raise TypeError("clops.mandelbrot: parameter 'dtype' is %s; expected %s"
                        % (np.dtype(dtype), dtype_names([np.dtype(_NUMPY_NAME[p])
                                                         for p in offered])))
    counts = np.empty((height, width), dtype=np.uint32)
    rgba = np.empty((height, width, 4), dtype=np.uint8)
    return Call(pool_or_default(pool), "mandelbrot",
                dict(iterations=counts, image=rgba, center_x=center_x, center_y=center_y,
                     scale=scale, max_iterations=max_iter, precision=precision),
                lambda: (counts, rgba))


def size_argument(value, name):
    if not isinstance(value, numbers.Integral):
        raise TypeError("clops.mandelbrot: parameter '%s' = %r; expected an int" % (name, value))
    if value < 0:
        raise ValueError("clops.mandelbrot: parameter '%s' = %d; expected 0 or more"
                         % (name, value))
    return int(value)
