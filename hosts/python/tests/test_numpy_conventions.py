"""test_numpy_conventions.py — NumPy's and SciPy's habits, case by case against them (issue 25's
first-hour list): integer, bool, float16 and mixed operands of gemm, lu_factor, lu_solve and
solve in SciPy's dtypes; matrix x vector; reductions over every axis and tuple of axes, with
keepdims, of every integer, bool and float dtype (int64 sums wrapping as NumPy's); norm's
vector and matrix orders against long double, and the orders it refuses; transpose of every
dtype bit for bit; str device names and the pool's objects' reprs; pyopencl arrays refused with
what to do instead; the composed calls through clops.submit. unittest: `python3
tests/test_numpy_conventions.py`; the library comes from $CLOPS_LIBRARY (ctest sets it)."""

import itertools
import os
import sys
import unittest
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import scipy.linalg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import clops  # noqa: E402

HIGH = np.longdouble  # the references' precision (x86-64: a 64-bit significand)
INTEGERS = (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
            np.uint64)
EVERY = INTEGERS + (np.float16, np.float32, np.float64)


def generator(test):
    """A fresh stream per test, reproducible from the test's name."""
    return np.random.default_rng(sum(ord(ch) * (k + 1) for k, ch in enumerate(test.id())))


def small_integers(rng, shape, dtype):
    """Random elements of dtype that its every reduction and float conversion hold exactly."""
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    low = 0 if np.dtype(dtype).kind == "u" else -9
    return rng.integers(low, 10, size=shape).astype(dtype)


def every_axes(ndim):
    """None, each axis (also negative), each tuple of two or more axes, and ()."""
    out = [None] + list(range(ndim)) + ([-1] if ndim else [])
    out += [c for r in range(2, ndim + 1) for c in itertools.combinations(range(ndim), r)]
    return out + [()]


def nonsingular(rng, n, dtype):
    """An n x n matrix of dtype with small integer elements, nonsingular in every dtype: the
    rows of a triangular matrix with a unit diagonal, shuffled (pivoting has work to do)."""
    upper = np.triu(small_integers(rng, (n, n), dtype), 1)
    a = (upper | np.eye(n, dtype=bool)) if upper.dtype == np.bool_ else \
        upper + np.eye(n, dtype=dtype)
    return a[rng.permutation(n)]


class Case(unittest.TestCase):
    def setUp(self):
        self.rng = generator(self)

    def assertSameResult(self, got, want):
        """NumPy's shape, dtype, kind of result (a scalar for a scalar) and values, exactly."""
        self.assertEqual(np.shape(got), np.shape(want))
        self.assertEqual(np.asarray(got).dtype, np.asarray(want).dtype)
        self.assertEqual(isinstance(got, np.ndarray), isinstance(want, np.ndarray))
        self.assertTrue(np.array_equal(got, want, equal_nan=True), (got, want))

    def assertRefused(self, exc_type, needles, fn, *args, **kwargs):
        with self.assertRaises(exc_type) as cm:
            fn(*args, **kwargs)
        for needle in needles:
            self.assertIn(needle, str(cm.exception))
        return cm.exception


class LinalgDtypeTest(Case):
    """gemm, lu_factor, lu_solve and solve compute in SciPy's dtype for every operand dtype and
    pair, and agree with SciPy's results."""

    def test_scipys_dtype_for_each_dtype_and_pair(self):
        for da, db in itertools.product(EVERY + (np.longdouble,), repeat=2):
            a, b = nonsingular(self.rng, 4, da), small_integers(self.rng, (4, 2), db)
            with self.subTest(a=np.dtype(da).name, b=np.dtype(db).name):
                want = scipy.linalg.get_blas_funcs("gemm", (a, b)).dtype
                self.assertEqual(clops.gemm(a, b).dtype, want)
                self.assertEqual(clops.solve(a, b).dtype, scipy.linalg.solve(a, b).dtype)
                lu = scipy.linalg.lu_factor(a)
                self.assertEqual(clops.lu_factor(a)[0].dtype, lu[0].dtype)
                self.assertEqual(clops.lu_solve(lu, b).dtype,
                                 scipy.linalg.lu_solve(lu, b).dtype)

    def test_integer_operands_give_scipys_results(self):
        for dtype in INTEGERS:
            a, b = nonsingular(self.rng, 6, dtype), small_integers(self.rng, (6, 3), dtype)
            with self.subTest(dtype=np.dtype(dtype).name):
                # Small integers: the product is exact in either float dtype.
                c = clops.gemm(a, b)
                self.assertTrue(np.array_equal(c, a.astype(np.float64) @ b.astype(np.float64)))
                lu, piv = clops.lu_factor(a)
                want_lu, want_piv = scipy.linalg.lu_factor(a)
                self.assertTrue(np.array_equal(piv, want_piv))
                eps = np.finfo(lu.dtype).eps
                np.testing.assert_allclose(lu, want_lu, rtol=0, atol=64 * eps * np.abs(a).max())
                x = clops.solve(a, b)
                residual = np.abs(a.astype(HIGH) @ x.astype(HIGH) - b.astype(HIGH)).max()
                self.assertLessEqual(residual, 64 * eps * np.abs(a).max() * np.abs(x).max() * 6)
                np.testing.assert_allclose(clops.lu_solve((lu, piv), b),
                                           scipy.linalg.lu_solve((want_lu, want_piv), b),
                                           rtol=64 * eps, atol=64 * eps)

    def test_mixed_floats_promote_as_result_type(self):
        a = self.rng.standard_normal((5, 5)).astype(np.float32) + 5 * np.eye(5, dtype=np.float32)
        b = self.rng.standard_normal((5, 2))
        x = clops.solve(a, b)
        self.assertEqual(x.dtype, np.result_type(a, b))
        # Computed in float64 from a's float32 values, as SciPy does.
        np.testing.assert_allclose(x, scipy.linalg.solve(a, b), rtol=1e-12, atol=1e-12)
        c = clops.gemm(a, b)
        self.assertEqual(c.dtype, np.float64)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-13, atol=1e-13)

    def test_out_takes_the_product_as_numpys_out_does(self):
        a, b = self.rng.standard_normal((3, 4)), self.rng.standard_normal((4, 2))
        out = np.ones((3, 2), dtype=np.float32)
        self.assertIs(clops.gemm(a, b, beta=2.0, out=out), out)
        np.testing.assert_allclose(out, (a @ b + 2).astype(np.float32), rtol=1e-6)
        # A float32 product into float64 out: computed in float64 (out takes part).
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        out64 = np.zeros((3, 2))
        clops.gemm(a32, b32, out=out64)
        np.testing.assert_allclose(out64, a32.astype(np.float64) @ b32, rtol=1e-13)


class MatrixVectorTest(Case):
    """gemm with a 1-D operand is numpy.matmul's matrix x vector, vector x matrix and inner
    product, in every float dtype and from integers."""

    def test_vectors_as_matmul_takes_them(self):
        for dtype in (np.float32, np.float64, np.int64):
            a = small_integers(self.rng, (5, 3), dtype)
            v, w = small_integers(self.rng, 3, dtype), small_integers(self.rng, 5, dtype)
            want_dtype = np.float64 if dtype == np.int64 else dtype
            with self.subTest(dtype=np.dtype(dtype).name):
                for got, want in ((clops.gemm(a, v), a @ v), (clops.gemm(w, a), w @ a),
                                  (clops.gemm(v, v), v @ v),
                                  (clops.gemm(a, w, trans_a=True), a.T @ w),
                                  (clops.gemm(a[::2], v[::-1]), a[::2] @ v[::-1])):
                    self.assertEqual(np.shape(got), np.shape(want))
                    self.assertEqual(np.asarray(got).dtype, want_dtype)
                    self.assertEqual(isinstance(got, np.ndarray), isinstance(want, np.ndarray))
                    self.assertTrue(np.array_equal(got, want), (got, want))

    def test_vector_out_and_alpha_beta(self):
        a, v = self.rng.standard_normal((6, 4)), self.rng.standard_normal(4)
        out = self.rng.standard_normal(12)[::2]  # strided: computed in a copy, written back
        want = 3 * (a @ v) - out
        self.assertIs(clops.gemm(a, v, alpha=3.0, beta=-1.0, out=out), out)
        np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-13)
        self.assertRefused(ValueError, ("'out'", "(6, 1)", "(6,)"),
                           clops.gemm, a, v, out=np.zeros((6, 1)))


class ReduceTest(Case):
    """sum, min, max, argmin and argmax equal NumPy's over every axis and tuple of axes, with
    and without keepdims, for every integer, bool and float dtype and layout."""

    SHAPES = ((), (7,), (4, 5), (1, 6), (3, 4, 5), (2, 3, 1, 4), (2, 1, 3, 2, 2))

    def layouts(self, x):
        out = [("C", x)]
        if x.ndim >= 2:
            out.append(("F", np.asfortranarray(x)))
            out.append(("axes reversed", np.ascontiguousarray(np.moveaxis(x, 0, -1))
                        .transpose([x.ndim - 1] + list(range(x.ndim - 1)))))
        if x.ndim >= 1:
            big = np.zeros(tuple(2 * n + 1 for n in x.shape), dtype=x.dtype)
            inner = tuple(slice(1, None, 2) for _ in x.shape)
            big[inner] = x
            out.append(("strided", big[inner]))
            out.append(("negative strides", np.flip(np.flip(x).copy())))
        return out

    def each_case(self, dtypes, make):
        for dtype in dtypes:
            for shape in self.SHAPES:
                x = make(shape, dtype)
                for layout, view in self.layouts(x):
                    for axis in every_axes(x.ndim):
                        for keepdims in (False, True):
                            yield (dict(dtype=np.dtype(dtype).str, shape=shape, layout=layout,
                                        axis=axis, keepdims=keepdims), x, view, axis, keepdims)

    def test_integer_and_bool_reductions_equal_numpy(self):
        dtypes = INTEGERS + (np.dtype(">i4"), np.dtype(">u8"))
        for labels, x, view, axis, keepdims in self.each_case(
                dtypes, lambda shape, dtype: small_integers(self.rng, shape, dtype)):
            with self.subTest(**labels):
                self.assertExactReductions(view, x, axis, keepdims, with_sum=True)

    def assertExactReductions(self, view, x, axis, keepdims, with_sum):
        """min and max (and sum, with_sum) of view equal NumPy's of x to the bit, and argmin
        and argmax too where NumPy takes the axis (None or one)."""
        pairs = ((clops.sum, np.sum),) if with_sum else ()
        pairs += ((clops.min, np.min), (clops.max, np.max))
        if axis is None or isinstance(axis, int):
            pairs += ((clops.argmin, np.argmin), (clops.argmax, np.argmax))
        for ours, numpys in pairs:
            self.assertSameResult(ours(view, axis=axis, keepdims=keepdims),
                                  numpys(x, axis=axis, keepdims=keepdims))

    def test_float_reductions_equal_numpy(self):
        """min, max and arg* exactly; sums within the operator's bound, 3u|s| + 4nu^2 sum|x_i|
        (u of the dtype computed in: float32 for float16, which then rounds once more)."""
        dtypes = (np.float16, np.float32, np.float64, np.dtype(">f8"))
        for labels, x, view, axis, keepdims in self.each_case(
                dtypes, lambda shape, dtype: self.rng.standard_normal(shape).astype(dtype)):
            with self.subTest(**labels):
                self.assertExactReductions(view, x, axis, keepdims, with_sum=False)
                got = clops.sum(view, axis=axis, keepdims=keepdims)
                want = np.sum(x, axis=axis, keepdims=keepdims)
                self.assertEqual((np.shape(got), np.asarray(got).dtype),
                                 (np.shape(want), np.asarray(want).dtype))
                exact = np.sum(x.astype(HIGH), axis=axis, keepdims=keepdims)
                magnitude = np.sum(np.abs(x.astype(HIGH)), axis=axis, keepdims=keepdims)
                u = np.finfo(np.float32 if x.dtype.itemsize == 2 else x.dtype).eps / 2
                rounding = np.finfo(x.dtype).eps / 2 * np.abs(exact)
                bound = 3 * u * np.abs(exact) + 4 * x.size * u * u * magnitude + rounding
                self.assertTrue(np.all(np.abs(np.asarray(got, dtype=HIGH) - exact) <= bound))

    def test_int64_sums_wrap_as_numpys(self):
        for dtype in (np.int64, np.uint64):
            info = np.iinfo(dtype)
            x = self.rng.integers(info.min, info.max, size=(5, 7), dtype=dtype, endpoint=True)
            for axis in (None, 0, 1, (0, 1)):
                with self.subTest(dtype=np.dtype(dtype).name, axis=axis):
                    self.assertSameResult(clops.sum(x, axis=axis), np.sum(x, axis=axis))
        big = np.array([2 ** 62, 2 ** 62, 2 ** 62, -3])
        self.assertSameResult(clops.sum(big), np.sum(big))  # past 2^63: wrapped

    def test_numpys_first_examples(self):
        self.assertSameResult(clops.sum(np.arange(10)), np.int64(45))
        x = np.arange(24.0).reshape(2, 3, 4)
        self.assertSameResult(clops.sum(x, axis=2), np.sum(x, axis=2))
        self.assertSameResult(clops.max(x, axis=(0, 1)), np.max(x, axis=(0, 1)))
        self.assertSameResult(clops.sum(x, axis=1, keepdims=True), np.sum(x, 1, keepdims=True))
        self.assertSameResult(clops.sum(np.float64(2.5)), np.sum(np.float64(2.5)))

    def test_refusals_as_numpys(self):
        x = np.ones((2, 3))
        e = self.assertRefused(ValueError, ("'axis'", "out of bounds"), clops.sum, x, axis=(0, 2))
        self.assertIsInstance(e, IndexError)  # numpy's AxisError is both
        self.assertRefused(ValueError, ("'axis'", "repeats"), clops.min, x, axis=(1, -1))
        self.assertRefused(TypeError, ("'axis'", "(0, 1)"), clops.argmax, x, axis=(0, 1))
        self.assertRefused(TypeError, ("'axis'", "[0, 1]"), clops.sum, x, axis=[0, 1])
        self.assertRefused(ValueError, ("'x'", "uint64", "uint32"),
                           clops.max, np.array([2 ** 33], dtype=np.uint64))


class NormTest(Case):
    """norm's orders against numpy.linalg.norm in long double: 2-norms within 4u, sums of
    |x| within 4u (compensated sums of nonnegative terms), max, min and counts exactly, p-norms
    within 8u/p + 4u (|x|^p is rounded in x's dtype, by NumPy as by clops); the matrix norms
    over every pair of axes, keepdims; NumPy's result dtype."""

    VECTOR_ORDERS = (None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1, -2.5)
    MATRIX_ORDERS = (None, "fro", 1, -1, np.inf, -np.inf)

    def check(self, x, ord, axis, keepdims):
        with warnings.catch_warnings():
            # 1/0 for negative orders over zeros: NumPy warns, and so does clops (the same
            # host step).
            warnings.simplefilter("ignore", RuntimeWarning)
            got = clops.norm(x, ord, axis, keepdims)
            want = np.linalg.norm(x.astype(HIGH), ord, axis, keepdims)
            numpys = np.linalg.norm(x, ord, axis, keepdims)
        self.assertEqual((np.shape(got), np.asarray(got).dtype),
                         (np.shape(numpys), np.asarray(numpys).dtype))
        u = np.finfo(np.float32 if np.asarray(got).dtype.itemsize <= 4 else np.float64).eps / 2
        if ord in (np.inf, -np.inf, 0) and (axis is None and x.ndim == 1 or
                                            isinstance(axis, int)):
            tolerance = 0 if x.dtype.kind == "f" else 2 * u  # exact but for the conversion
        elif isinstance(ord, float) and ord not in (np.inf, -np.inf) or ord in (3, -2.5):
            tolerance = 8 * u / abs(ord) + 4 * u
        else:
            tolerance = 4 * u
        if np.asarray(got).dtype == np.float16:
            tolerance += np.finfo(np.float16).eps / 2
        err = np.abs(np.asarray(got, dtype=HIGH) - want)
        self.assertTrue(np.all((err <= tolerance * np.abs(want)) | (got == want)),
                        (ord, axis, got, want))

    def test_vector_orders(self):
        for dtype in (np.float32, np.float64, np.int32, np.float16):
            x = self.rng.standard_normal(37) * 4
            x[[3, 11]] = 0
            x = x.astype(dtype)
            for ord in self.VECTOR_ORDERS:
                with self.subTest(dtype=np.dtype(dtype).name, ord=ord):
                    self.check(x, ord, None, False)

    def test_vector_orders_along_each_axis(self):
        x = self.rng.standard_normal((3, 4, 5))
        for ord in self.VECTOR_ORDERS:
            for axis in (0, 1, 2, -1):
                for keepdims in (False, True):
                    with self.subTest(ord=ord, axis=axis, keepdims=keepdims):
                        self.check(x, ord, axis, keepdims)

    def test_matrix_orders_over_each_pair_of_axes(self):
        for dtype in (np.float32, np.float64, np.int64):
            m = (self.rng.standard_normal((6, 5)) * 3).astype(dtype)
            t = (self.rng.standard_normal((3, 4, 5)) * 3).astype(dtype)
            for ord in self.MATRIX_ORDERS:
                for x, axis in [(m, None), (m, (1, 0))] + \
                        [(t, pair) for pair in itertools.permutations(range(3), 2)]:
                    for keepdims in (False, True):
                        with self.subTest(dtype=np.dtype(dtype).name, ord=ord, shape=x.shape,
                                          axis=axis, keepdims=keepdims):
                            self.check(x, ord, axis, keepdims)

    def test_any_rank_without_ord(self):
        x = self.rng.standard_normal((2, 3, 2, 2, 3))
        self.check(x, None, None, False)
        self.check(x, None, None, True)

    def test_orders_it_cannot_compute_are_refused(self):
        m = np.ones((3, 3))
        for ord in ("nuc", 2, -2):
            self.assertRefused(NotImplementedError, ("'ord'", "singular values"),
                               clops.norm, m, ord)
        self.assertRefused(ValueError, ("'ord'", "'fro'", "vector"), clops.norm, np.ones(3), "fro")
        self.assertRefused(ValueError, ("'ord'", "matrix"), clops.norm, m, 0)
        self.assertRefused(ValueError, ("'ord'", "3 dimensions"), clops.norm, np.ones((2, 2, 2)), 1)
        self.assertRefused(ValueError, ("'axis'", "(0, 1, 2)"),
                           clops.norm, np.ones((2, 2, 2)), None, (0, 1, 2))


class TransposeTest(Case):
    def test_every_dtype_bit_for_bit(self):
        bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
        for dtype in EVERY + (np.dtype(">i8"), np.dtype(">f2")):
            dtype = np.dtype(dtype)
            raw = self.rng.integers(0, 2 ** (8 * dtype.itemsize), size=(7, 5),
                                    dtype=bits[dtype.itemsize], endpoint=False)
            x = raw.view(dtype.newbyteorder("=")).astype(dtype) if dtype != np.bool_ else \
                raw.astype(bool)
            for view in (x, x[::-1, ::2], np.asfortranarray(x)):
                with self.subTest(dtype=dtype.str, layout=view.strides):
                    y = clops.transpose(view)
                    self.assertEqual(y.dtype, dtype.newbyteorder("="))
                    self.assertTrue(y.flags.c_contiguous)
                    want = np.ascontiguousarray(view.T).astype(y.dtype)
                    self.assertTrue(np.array_equal(y.view(bits[dtype.itemsize]),
                                                   want.view(bits[dtype.itemsize])))


class ObjectsTest(Case):
    def test_device_names_are_str_and_objects_have_reprs(self):
        with clops.Pool() as pool:
            devices = pool.devices()
            self.assertTrue(devices)
            for d in devices:
                self.assertIsInstance(d, clops.Device)
                self.assertIsInstance(d.name, str)
                self.assertIsInstance(d.vendor, str)
                self.assertIn(d.type, ("gpu", "cpu", "other"))
                self.assertIsInstance(d.fp64, bool)
                self.assertIn(repr(d.name), repr(pool))
            stats = pool.stats()
            self.assertIsInstance(stats, clops.Stats)
            self.assertTrue(repr(stats).startswith("Stats(programs_built="))
            with pool.buffer(64) as buffer:
                self.assertEqual(repr(buffer), "<clops.Buffer of 64 bytes on device 0>")
                self.assertIn("f64 (2, 4)", repr(buffer.view(clops.F64, (2, 4))))
            self.assertIn("released", repr(buffer))
            with pool.stream() as stream:
                self.assertEqual(repr(stream), "<clops.Stream on device 0>")
            self.assertIn("MemoryStats(allocated_bytes=", repr(pool.memory_stats()))
        self.assertEqual(repr(pool), "<clops.Pool, released>")


class PyopenclArrayTest(Case):
    def test_a_pyopencl_array_is_refused_with_what_to_do(self):
        ctx = cl.Context([next(d for p in cl.get_platforms() for d in p.get_devices())])
        queue = cl.CommandQueue(ctx)
        d = cla.to_device(queue, np.ones((3, 3)))
        for fn, args, name in ((clops.gemm, (d, np.ones((3, 3))), "'a'"),
                               (clops.gemm, (np.ones((3, 3)), d), "'b'"),
                               (clops.solve, (np.eye(3), d), "'b'"),
                               (clops.lu_factor, (d,), "'a'"), (clops.sum, (d,), "'x'"),
                               (clops.norm, (d,), "'x'"), (clops.transpose, (d,), "'a'")):
            with self.subTest(fn=fn.__name__, parameter=name):
                self.assertRefused(TypeError, (name, "pyopencl.array.Array", ".get()",
                                               "pool_from_cl"), fn, *args)


class SubmitTest(Case):
    def test_composed_and_converted_calls_submit(self):
        m = self.rng.standard_normal((5, 4))
        cases = [(clops.norm, (m, 1), np.linalg.norm(m, 1)),
                 (clops.norm, (m, -np.inf, None, True), np.linalg.norm(m, -np.inf, None, True)),
                 (clops.sum, (np.arange(12).reshape(3, 4),), np.int64(66)),
                 (clops.gemm, (np.arange(6).reshape(2, 3), np.arange(3)), np.array([5.0, 14.0]))]
        futures = [clops.submit(fn, *args) for fn, args, _ in cases]
        for (fn, _, want), future in zip(cases, futures):
            with self.subTest(fn=fn.__name__):
                got = future.result(timeout=60)
                self.assertEqual(np.shape(got), np.shape(want))
                np.testing.assert_allclose(got, want, rtol=1e-14)


if __name__ == "__main__":
    unittest.main(verbosity=2)
