"""test_numpy_api.py — the NumPy functions (gemm, lu_factor, lu_solve, solve, the reductions,
transpose, mandelbrot) against NumPy and SciPy, on fresh random inputs at awkward sizes (1,
primes, non-square), in C and Fortran order and strided or reversed views, float32 and float64,
with tolerances derived from the dtype's epsilon; and their refusals (the parameter named), the
default pool and the plugin's errors. unittest, no pytest needed: `python3
tests/test_numpy_api.py`. NumPy and SciPy are required: without them this file fails to import.
The library comes from $CLOPS_LIBRARY (ctest sets it to the build tree's)."""

import os
import sys
import threading
import unittest
import warnings
from fractions import Fraction
from math import fsum

import numpy as np
import scipy.linalg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import clops  # noqa: E402

FLOATS = (np.float32, np.float64)
HIGH = np.longdouble  # the references' precision (x86-64: a 64-bit significand)


def generator(test):
    """A fresh stream per test, reproducible from the test's name."""
    return np.random.default_rng(sum(ord(ch) * (k + 1) for k, ch in enumerate(test.id())))


def layouts(x):
    """x's contents in four memory layouts: C order, Fortran order, a strided view into a larger
    array, and a view with negative strides."""
    big = np.zeros((2 * x.shape[0] + 1, 3 * x.shape[1] + 2), dtype=x.dtype)
    strided = big[1::2, 2::3]
    strided[...] = x
    return [("C", np.ascontiguousarray(x)), ("F", np.asfortranarray(x)), ("strided", strided),
            ("reversed", np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1])]


def norm1(x):
    return np.abs(x).sum(axis=0).max() if x.size else 0.0


def pivot_margin(a):
    """The least ratio, over partial pivoting's steps on a (in float64), of the largest
    candidate's magnitude to the next one's: near 1 is a near tie, where two correct LU codes may
    pick different rows."""
    a = a.astype(np.float64)
    m, n = a.shape
    worst = np.inf
    for j in range(min(m, n)):
        col = np.abs(a[j:, j])
        if col.size > 1:
            second, first = np.sort(col)[-2:]
            worst = min(worst, first / second if second > 0 else np.inf)
        p = j + int(np.argmax(col))
        a[[j, p]] = a[[p, j]]
        if a[j, j] != 0:
            a[j + 1:, j] /= a[j, j]
            a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return worst


def untied_matrix(rng, shape, dtype):
    """A random matrix whose pivots are decided by at least 0.1 % at every step (float32's
    rounding in the elimination stays far below that at these sizes)."""
    while True:
        a = rng.standard_normal(shape).astype(dtype)
        if pivot_margin(a) > 1.001:
            return a


def lu_residual(a, lu, piv):
    """LAPACK's dget01: ||P A - L U||_1 / (max(M, N) ||A||_1 eps), P from SciPy's 0-based piv."""
    m, n = a.shape
    k = min(m, n)
    perm = np.arange(m)
    for i, p in enumerate(piv):
        perm[[i, p]] = perm[[p, i]]
    lu = lu.astype(HIGH)
    lower = np.tril(lu, -1)[:, :k] + np.eye(m, k, dtype=HIGH)
    upper = np.triu(lu)[:k, :]
    diff = a.astype(HIGH)[perm] - lower @ upper
    return float(norm1(diff) / (max(m, n) * norm1(a.astype(HIGH)) * np.finfo(a.dtype).eps))


def solve_residual(a, x, b):
    """LAPACK's dget02: ||B - A X||_1 / (||A||_1 ||X||_1 N eps)."""
    a2, x2, b2 = (v.astype(HIGH).reshape(v.shape[0], -1) for v in (a, x, b))
    diff = b2 - a2 @ x2
    return float(norm1(diff) / (norm1(a2) * norm1(x2) * a.shape[0] * np.finfo(a.dtype).eps))


class Case(unittest.TestCase):
    def setUp(self):
        self.rng = generator(self)

    def assertRefused(self, exc_type, needles, fn, *args, **kwargs):
        """fn(*args, **kwargs) raises exc_type, whose message holds each of needles (the
        parameter's name, what it was, what was expected)."""
        with self.assertRaises(exc_type) as cm:
            fn(*args, **kwargs)
        for needle in needles:
            self.assertIn(needle, str(cm.exception))
        return cm.exception


class GemmTest(Case):
    def check(self, c, a, b, alpha, beta=0.0, c0=None, trans_a=False, trans_b=False):
        """|C - ref| <= 2 (K + 2) eps (|alpha| |op(A)| |op(B)| + |beta| |C0|), elementwise:
        twice the rounding bound of any order of summation (fma or not), ref in long double."""
        opa = (a.T if trans_a else a).astype(HIGH)
        opb = (b.T if trans_b else b).astype(HIGH)
        ref = alpha * (opa @ opb)
        scale = abs(alpha) * (np.abs(opa) @ np.abs(opb))
        if c0 is not None:
            ref = ref + beta * c0.astype(HIGH)
            scale = scale + abs(beta) * np.abs(c0.astype(HIGH))
        k = opa.shape[1]
        err = np.abs(c.astype(HIGH) - ref)
        bound = 2 * (k + 2) * np.finfo(c.dtype).eps * scale
        self.assertTrue(np.all(err <= bound), "worst error %g, bound there %g"
                        % (err.max(), bound.flat[np.argmax(err - bound)]))

    def test_gemm_matches_long_double_product_every_layout(self):
        for dtype in FLOATS:
            for m, k, n in ((1, 1, 1), (7, 5, 3), (13, 1, 17), (2, 31, 5), (37, 19, 23)):
                a = self.rng.standard_normal((m, k)).astype(dtype)
                b = self.rng.standard_normal((k, n)).astype(dtype)
                for (la, va), (lb, vb) in zip(layouts(a), layouts(b)[::-1]):
                    with self.subTest(dtype=dtype.__name__, mkn=(m, k, n), a=la, b=lb):
                        c = clops.gemm(va, vb, alpha=-1.5)
                        self.assertEqual((c.shape, c.dtype), ((m, n), np.dtype(dtype)))
                        self.check(c, a, b, -1.5)

    def test_gemm_transposes(self):
        for dtype in FLOATS:
            a = self.rng.standard_normal((11, 4)).astype(dtype)  # op(a) = a.T: 4 x 11
            b = self.rng.standard_normal((3, 11)).astype(dtype)  # op(b) = b.T: 11 x 3
            for order in "CF":
                with self.subTest(dtype=dtype.__name__, order=order):
                    va, vb = np.asarray(a, order=order), np.asarray(b, order=order)
                    self.check(clops.gemm(va, vb, trans_a=True, trans_b=True), a, b, 1.0,
                               trans_a=True, trans_b=True)
                    self.check(clops.gemm(va, b.T, trans_a=True), a, b.T, 1.0, trans_a=True)
                    self.check(clops.gemm(a.T, vb, trans_b=True), a.T, b, 1.0, trans_b=True)

    def test_gemm_out_applies_beta_and_is_returned(self):
        for dtype in FLOATS:
            a = self.rng.standard_normal((5, 7)).astype(dtype)
            b = self.rng.standard_normal((7, 3)).astype(dtype)
            c0 = self.rng.standard_normal((5, 3)).astype(dtype)
            for name, out in layouts(c0.copy()):  # each a copy of c0, whatever gemm does
                with self.subTest(dtype=dtype.__name__, out=name):
                    base = out.base if out.base is not None else out
                    before = base.copy()
                    got = clops.gemm(a, b, alpha=2.0, beta=-0.5, out=out)
                    self.assertIs(got, out)
                    self.check(out, a, b, 2.0, -0.5, c0)
                    # Elements of the larger array outside the view are not written.
                    if name == "strided":
                        mask = np.ones(base.shape, bool)
                        mask[1::2, 2::3] = False
                        self.assertTrue(np.array_equal(base[mask], before[mask]))

    def test_gemm_out_with_beta_zero_ignores_nan(self):
        a = self.rng.standard_normal((4, 6))
        b = self.rng.standard_normal((6, 2))
        out = np.full((4, 2), np.nan)
        clops.gemm(a, b, out=out)
        self.check(out, a, b, 1.0)

    def test_gemm_out_overlapping_an_input(self):
        a = self.rng.standard_normal((6, 6))
        want = a @ a
        c0 = a.copy()
        clops.gemm(a, c0, out=a, beta=1.0)  # out is a: computed aside, then written into a
        self.check(a, c0, c0, 1.0, 1.0, c0)
        self.assertLess(np.abs(a - (want + c0)).max(), 1e-12)

    def test_gemm_refusals_name_the_parameter(self):
        f64 = np.ones((3, 3))
        self.assertRefused(TypeError, ("'b'", "complex128", "real"),
                           clops.gemm, f64, np.ones((3, 3), dtype=np.complex128))
        self.assertRefused(TypeError, ("'a'", "list", "<U1", "not numbers"),
                           clops.gemm, [["a"]], f64)
        self.assertRefused(ValueError, ("'b'", "(4, 2)", "expected 3"),
                           clops.gemm, np.ones((2, 3)), np.ones((4, 2)))
        self.assertRefused(ValueError, ("'b'", "(4,)", "expected 3"),
                           clops.gemm, np.ones((2, 3)), np.ones(4))
        self.assertRefused(ValueError, ("'a'", "3 dimensions", "1 or 2"),
                           clops.gemm, np.ones((3, 3, 3)), f64)
        self.assertRefused(ValueError, ("'out'", "(3, 4)", "(3, 3)"),
                           clops.gemm, f64, f64, out=np.zeros((3, 4)))
        self.assertRefused(TypeError, ("'out'", "int64", "float64", "same_kind"),
                           clops.gemm, f64, f64, out=np.zeros((3, 3), dtype=np.int64))
        self.assertRefused(TypeError, ("'out'", "list"), clops.gemm, f64, f64, out=[[0.0] * 3] * 3)


class LuTest(Case):
    SHAPES = ((1, 1), (2, 2), (7, 7), (13, 13), (37, 37), (5, 3), (3, 5), (31, 17), (17, 31))

    def test_lu_factor_residual_and_pivots_match_scipy(self):
        for dtype in FLOATS:
            for shape in self.SHAPES:
                a = untied_matrix(self.rng, shape, dtype)
                want_piv = scipy.linalg.lu_factor(a)[1]
                for name, view in layouts(a):
                    with self.subTest(dtype=dtype.__name__, shape=shape, layout=name):
                        kept = view.copy()
                        lu, piv = clops.lu_factor(view)
                        self.assertEqual((lu.shape, lu.dtype), (shape, np.dtype(dtype)))
                        self.assertEqual((piv.shape, piv.dtype), ((min(shape),), np.int32))
                        self.assertTrue(np.array_equal(piv, want_piv), (piv, want_piv))
                        self.assertLess(lu_residual(a, lu, piv), 30)
                        self.assertTrue(np.array_equal(view, kept))  # overwrite_a=False

    def test_lu_factor_overwrite_a_factors_in_place(self):
        for order in "CF":
            a = np.asarray(untied_matrix(self.rng, (9, 9), np.float64), order=order)
            a0 = a.copy()
            lu, piv = clops.lu_factor(a, overwrite_a=True)
            self.assertIs(lu, a)
            self.assertLess(lu_residual(a0, lu, piv), 30)

    def test_lu_factor_singular_warns_as_scipy(self):
        a = self.rng.standard_normal((6, 6))
        a[:, 3] = 0.0  # column 4 (1-based) of U is zero: getrf's info = 4
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            lu, piv = clops.lu_factor(a)
            scipy.linalg.lu_factor(a)
        self.assertEqual(len(got), 2, [str(w.message) for w in got])
        ours, theirs = got
        self.assertIs(ours.category, scipy.linalg.LinAlgWarning)
        self.assertEqual(str(ours.message), str(theirs.message))
        self.assertIn("Diagonal number 4", str(ours.message))
        self.assertEqual(ours.filename, __file__)  # the warning points at the caller
        self.assertEqual(lu[3, 3], 0.0)
        self.assertLess(lu_residual(a, lu, piv), 30)

    def test_lu_factor_refusals(self):
        self.assertRefused(TypeError, ("'a'", "complex64"),
                           clops.lu_factor, np.eye(3, dtype=np.complex64))
        self.assertRefused(ValueError, ("'a'", "3 dimensions"), clops.lu_factor, np.ones((2, 2, 2)))
        self.assertRefused(ValueError, ("'a'", "infs or NaNs"),
                           clops.lu_factor, np.array([[1.0, np.nan], [0.0, 1.0]]))

    def test_lu_solve_residual_every_trans(self):
        for dtype in FLOATS:
            for n in (1, 2, 7, 13, 37):
                a = self.rng.standard_normal((n, n)).astype(dtype)
                lu_and_piv = clops.lu_factor(a)
                for rhs in ((n,), (n, 1), (n, 5)):
                    b = self.rng.standard_normal(rhs).astype(dtype)
                    for trans, op_a in ((0, a), (1, a.T), (2, a.T)):
                        for order in "CF":
                            with self.subTest(dtype=dtype.__name__, n=n, b=rhs, trans=trans,
                                              order=order):
                                vb = np.asarray(b, order=order)
                                x = clops.lu_solve(lu_and_piv, vb, trans=trans)
                                self.assertEqual((x.shape, x.dtype), (b.shape, np.dtype(dtype)))
                                self.assertLess(solve_residual(op_a, x, b), 30)
                                self.assertTrue(np.array_equal(vb, b))

    def test_lu_solve_takes_scipys_factors(self):
        a = self.rng.standard_normal((8, 8))
        b = self.rng.standard_normal((8, 3))
        x = clops.lu_solve(scipy.linalg.lu_factor(a), b)
        self.assertLess(solve_residual(a, x, b), 30)
        self.assertLess(np.abs(x - scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b)).max(),
                        1e-10 * np.abs(x).max())

    def test_lu_solve_refusals(self):
        lu, piv = clops.lu_factor(self.rng.standard_normal((4, 4)))
        self.assertRefused(ValueError, ("'b'", "expected 4 rows"),
                           clops.lu_solve, (lu, piv), np.ones(5))
        self.assertRefused(ValueError, ("'piv'", "(3,)"), clops.lu_solve, (lu, piv[:3]), np.ones(4))
        self.assertRefused(ValueError, ("'piv'", "0 .. 3"),
                           clops.lu_solve, (lu, piv + 4), np.ones(4))
        self.assertRefused(ValueError, ("'trans'", "3"),
                           clops.lu_solve, (lu, piv), np.ones(4), trans=3)
        self.assertRefused(TypeError, ("'b'", "object"),
                           clops.lu_solve, (lu, piv), np.array([None] * 4))
        self.assertRefused(ValueError, ("'lu'", "square"),
                           clops.lu_solve, (lu[:, :3], piv), np.ones(4))


class SolveTest(Case):
    def test_solve_residual_1d_and_2d_b(self):
        for dtype in FLOATS:
            for n in (1, 2, 7, 13, 37):
                a = self.rng.standard_normal((n, n)).astype(dtype)
                for rhs in ((n,), (n, 1), (n, 4)):
                    b = self.rng.standard_normal(rhs).astype(dtype)
                    for (la, va), (lb, vb) in zip(layouts(a), layouts(b.reshape(n, -1))):
                        vb = vb.reshape(rhs) if len(rhs) == 1 else vb
                        with self.subTest(dtype=dtype.__name__, n=n, b=rhs, a=la, b_layout=lb):
                            x = clops.solve(va, vb)
                            self.assertEqual((x.shape, x.dtype), (rhs, np.dtype(dtype)))
                            self.assertLess(solve_residual(a, x, b), 30)
                            self.assertTrue(np.array_equal(va, a) and np.array_equal(vb, b))

    def test_solve_overwrite_b_solves_in_place(self):
        a = self.rng.standard_normal((6, 6))
        for b in (np.asfortranarray(self.rng.standard_normal((6, 2))),
                  self.rng.standard_normal(6)):
            b0 = b.copy()
            x = clops.solve(a, b, overwrite_b=True)
            self.assertIs(x, b)
            self.assertLess(solve_residual(a, x, b0), 30)

    def test_solve_singular_raises_linalg_error(self):
        a = np.array([[1.0, 2.0], [2.0, 4.0]])
        b = np.array([1.0, 1.0])
        e = self.assertRefused(clops.LinAlgError, ("singular",), clops.solve, a, b)
        self.assertIsInstance(e, np.linalg.LinAlgError)
        self.assertEqual(e.info, 2)
        self.assertTrue(np.array_equal(b, [1.0, 1.0]))

    def test_solve_refusals(self):
        self.assertRefused(ValueError, ("'a'", "square"), clops.solve, np.ones((3, 4)), np.ones(3))
        self.assertRefused(ValueError, ("'b'", "expected 3 rows"),
                           clops.solve, np.eye(3), np.ones(4))
        self.assertRefused(ValueError, ("'b'", "3 dimensions"),
                           clops.solve, np.eye(3), np.ones((3, 1, 1)))
        self.assertRefused(TypeError, ("'a'", "complex128"),
                           clops.solve, np.eye(3, dtype=np.complex128), np.ones(3))


REDUCE_SHAPES = ((1,), (13,), (1, 1), (7, 5), (5, 7), (1, 37), (37, 1), (3, 4, 5),
                 (2, 3, 4, 5), (2, 2, 1, 3, 3))


def reduce_inputs(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(0, 4, size=shape).astype(dtype)  # small range: ties for arg*


def views_of(x):
    if x.ndim != 2:
        return [("C", x), ("F", np.asfortranarray(x)), ("reversed", np.flip(np.flip(x).copy()))]
    return layouts(x)


def axes_of(x):
    return (None, 0, -1) if x.ndim == 1 else (None, 0, 1, -1, -2) if x.ndim == 2 else (None,)


class ReduceTest(Case):
    def each_case(self, dtypes):
        """(labels for subTest, x, x in some layout, axis) over dtypes, shapes, layouts, axes."""
        for dtype in dtypes:
            for shape in REDUCE_SHAPES:
                x = reduce_inputs(self.rng, shape, dtype)
                for layout, view in views_of(x):
                    for axis in axes_of(x):
                        yield (dict(dtype=np.dtype(dtype).name, shape=shape, layout=layout,
                                    axis=axis), x, view, axis)

    def test_exact_reductions_equal_numpy(self):
        ops = ((clops.min, np.min), (clops.max, np.max), (clops.argmin, np.argmin),
               (clops.argmax, np.argmax))
        for labels, x, view, axis in self.each_case((np.float32, np.float64, np.int32, np.uint32)):
            with self.subTest(**labels):
                for ours, numpys in ops:
                    got, want = ours(view, axis=axis), numpys(x, axis=axis)
                    self.assertEqual(np.asarray(got).dtype, np.asarray(want).dtype, ours.__name__)
                    self.assertTrue(np.array_equal(got, want), (ours.__name__, got, want))
                    if axis is None or x.ndim == 1:
                        self.assertIsInstance(got, np.generic)

    def test_integer_sums_are_exact(self):
        for labels, x, view, axis in self.each_case((np.int32, np.uint32)):
            with self.subTest(**labels):
                got, want = clops.sum(view, axis=axis), np.sum(x, axis=axis)
                self.assertEqual(np.asarray(got).dtype, np.asarray(want).dtype)
                self.assertTrue(np.array_equal(got, want), (got, want))

    def test_float_sums_within_the_documented_bound(self):
        """|s - sum| <= 3u|sum| + 4 n u^2 sum|x_i| (the operator's bound, u = eps / 2), plus the
        exact sum's rounding to float64 (fsum is correctly rounded)."""
        for labels, x, view, axis in self.each_case(FLOATS):
            with self.subTest(**labels):
                got = np.asarray(clops.sum(view, axis=axis))
                self.assertEqual(got.dtype, x.dtype)
                rows = x.reshape(1, -1) if axis is None or x.ndim == 1 else \
                    np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])
                u = np.finfo(x.dtype).eps / 2
                for s, row in zip(got.reshape(-1), rows.astype(np.float64)):
                    exact = fsum(row)
                    bound = 3 * u * abs(exact) + 4 * row.size * u * u * fsum(np.abs(row)) + \
                        2.0 ** -53 * abs(exact)
                    self.assertLessEqual(abs(float(s) - exact), bound)

    def test_norm_within_4u_of_long_double(self):
        for labels, x, view, axis in self.each_case(FLOATS):
            with self.subTest(**labels):
                got = np.asarray(clops.norm(view, axis=axis))
                want = np.linalg.norm(x.astype(HIGH), axis=axis)
                self.assertEqual(got.shape, np.shape(want))
                self.assertEqual(got.dtype, np.linalg.norm(x, axis=axis).dtype)
                u = np.finfo(x.dtype).eps / 2
                self.assertTrue(np.all(np.abs(got.astype(HIGH) - want) <= 4 * u * want + 1e-300))

    def test_nan_propagates_and_arg_finds_the_first(self):
        x = self.rng.standard_normal((5, 6))
        x[2, 3] = x[4, 1] = np.nan
        for ours, numpys in ((clops.sum, np.sum), (clops.min, np.min), (clops.max, np.max),
                             (clops.argmin, np.argmin), (clops.argmax, np.argmax)):
            for axis in (None, 0, 1):
                got, want = ours(x, axis=axis), numpys(x, axis=axis)
                self.assertTrue(np.array_equal(np.isnan(got), np.isnan(want)),
                                (ours.__name__, axis, got, want))
                # Elsewhere: exact, but for sums (rounded differently by NumPy).
                rtol = 1e-13 if ours is clops.sum else 0
                np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)

    def test_empty_sum_is_zero_and_empty_min_is_refused(self):
        self.assertEqual(clops.sum(np.zeros(0)), 0.0)
        self.assertTrue(np.array_equal(clops.sum(np.zeros((3, 0)), axis=1), np.zeros(3)))
        e = self.assertRefused(ValueError, ("'x'", "no elements"), clops.min,
                               np.zeros(0, dtype=np.float32))
        self.assertIsInstance(e, clops.InvalidArgumentError)
        self.assertIsInstance(e, clops.Error)
        self.assertEqual((e.status, e.status_name), (1, "CLOPS_ERR_INVALID_ARGUMENT"))
        self.assertIn("'x'", e.message)

    def test_reduce_refusals(self):
        m = np.ones((3, 4))
        self.assertRefused(ValueError, ("'axis'", "2", "out of bounds"), clops.sum, m, axis=2)
        self.assertRefused(ValueError, ("'axis'", "(0, -3)", "repeats"),
                           clops.max, np.ones((2, 3, 4)), axis=(0, -3))
        self.assertRefused(TypeError, ("'axis'",), clops.sum, m, axis=1.5)
        self.assertRefused(TypeError, ("'axis'", "(0, 1)", "an int"), clops.argmin, m, axis=(0, 1))
        self.assertRefused(ValueError, ("'x'", "int64", "int32", "float64"),
                           clops.min, np.array([2 ** 40, 1]))
        self.assertRefused(TypeError, ("'x'", "float128", "float32 and float64"),
                           clops.sum, np.ones(4, dtype=np.longdouble))
        self.assertRefused(TypeError, ("'x'", "complex128"),
                           clops.norm, np.ones(4, dtype=np.complex128))


class TransposeTest(Case):
    def test_transpose_equals_numpy_every_dtype_and_layout(self):
        for dtype in (np.float32, np.float64, np.int32, np.uint32, np.uint8):
            for shape in ((1, 1), (1, 13), (13, 1), (7, 5), (33, 65)):
                x = (self.rng.standard_normal(shape) * 100).astype(dtype)
                for name, view in layouts(x):
                    with self.subTest(dtype=np.dtype(dtype).name, shape=shape, layout=name):
                        y = clops.transpose(view)
                        self.assertTrue(y.flags.c_contiguous)
                        self.assertEqual(y.dtype, np.dtype(dtype))
                        self.assertTrue(np.array_equal(y, x.T))

    def test_transpose_refusals(self):
        self.assertRefused(ValueError, ("'a'", "1 dimensions"), clops.transpose, np.ones(3))
        self.assertRefused(TypeError, ("'a'", "float128", "16 bytes"),
                           clops.transpose, np.ones((2, 2), dtype=np.longdouble))


def fma64(a, b, c):
    """float64 a*b + c rounded once (Fraction arithmetic is exact, its float() correctly
    rounded)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def fma32(a, b, c):
    """float32 a*b + c rounded once, to nearest with ties to even."""
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    near = np.float32(float(exact))  # within one float32 step of the answer
    best = None
    for cand in (np.nextafter(near, np.float32(-np.inf)), near,
                 np.nextafter(near, np.float32(np.inf))):
        key = (abs(Fraction(float(cand)) - exact), int(cand.view(np.uint32)) & 1)
        if best is None or key < best[0]:
            best = (key, cand)
    return best[1]


def mandelbrot_count(i, j, h, w, cx0, cy0, scale, max_iter, f64):
    """The operator's documented steps (clops ops mandelbrot) for pixel (i, j), every operation
    rounded as the kernel rounds it."""
    if f64:
        num, fma = float, fma64
        px, half_w, half_h = scale / w, 0.5 * w, 0.5 * h
    else:
        num, fma = np.float32, fma32
        px, half_w, half_h = np.float32(scale / w), np.float32(0.5 * w), np.float32(0.5 * h)
    cx = num(cx0) + (((num(j) + num(0.5)) - half_w) * px)
    cy = num(cy0) - (((num(i) + num(0.5)) - half_h) * px)
    x = y = num(0)
    n = 0
    while n < max_iter:
        y2 = y * y
        if fma(x, x, y2) > 4:
            break
        x, y = fma(x, x, cx - y2), fma(x + x, y, cy)
        n += 1
    return n


def palette(counts, max_iter):
    """The operator's palette: black inside; outside, 4 colours a cycle of 256 iterations."""
    colours = np.array([[0, 7, 100], [32, 107, 203], [237, 255, 255], [255, 170, 0]], np.uint32)
    p = (counts.astype(np.uint32) * 4) & 1023
    s, w = p >> 8, (p & 255)[..., None]
    rgb = (colours[s] * (256 - w) + colours[(s + 1) & 3] * w) >> 8
    rgb[counts >= max_iter] = 0
    return np.concatenate([rgb, np.full(counts.shape + (1,), 255, np.uint32)], -1).astype(np.uint8)


class MandelbrotTest(Case):
    def test_counts_bit_identical_to_the_documented_steps(self):
        views = (((-0.5, 0.0), 3.0, 13, 7), (-0.74 + 0.12j, 0.05, 8, 5))
        for dtype in FLOATS:
            for center, scale, w, h in views:
                with self.subTest(dtype=dtype.__name__, center=center, size=(w, h)):
                    counts, rgba = clops.mandelbrot(w, h, center=center, scale=scale,
                                                    max_iter=60, dtype=dtype)
                    self.assertEqual((counts.shape, counts.dtype), ((h, w), np.uint32))
                    self.assertEqual((rgba.shape, rgba.dtype), ((h, w, 4), np.uint8))
                    cx, cy = (center.real, center.imag) if isinstance(center, complex) \
                        else center
                    want = np.array([[mandelbrot_count(i, j, h, w, cx, cy, scale, 60,
                                                       dtype is np.float64)
                                      for j in range(w)] for i in range(h)])
                    self.assertTrue(np.array_equal(counts, want), (counts, want))
                    self.assertTrue(0 < np.count_nonzero(counts == 60) < counts.size)
                    self.assertTrue(np.array_equal(rgba, palette(counts, 60)))

    def test_empty_image_and_refusals(self):
        counts, rgba = clops.mandelbrot(0, 4)
        self.assertEqual((counts.shape, rgba.shape), ((4, 0), (4, 0, 4)))
        self.assertRefused(TypeError, ("'dtype'", "int32", "float32 or float64"),
                           clops.mandelbrot, 8, 8, dtype=np.int32)
        self.assertRefused(ValueError, ("'width'", "-1"), clops.mandelbrot, -1, 8)
        self.assertRefused(clops.InvalidArgumentError, ("'scale'",),
                           clops.mandelbrot, 8, 8, scale=-1.0)


class PoolAndErrorTest(Case):
    def test_default_pool_is_one_pool_for_every_thread(self):
        got, start = [], threading.Barrier(8)

        def take():
            start.wait()
            got.append(clops.default_pool())
        threads = [threading.Thread(target=take) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(got), 8)
        self.assertTrue(all(p is got[0] for p in got))
        self.assertIs(got[0], clops.default_pool())

    def test_functions_run_on_the_default_pool_or_the_one_given(self):
        x = self.rng.standard_normal(17)
        default = clops.default_pool()
        before = default.stats().calls
        self.assertEqual(clops.sum(x), clops.sum(x, pool=default))
        self.assertEqual(default.stats().calls, before + 2)
        with clops.Pool() as pool:
            clops.gemm(np.ones((2, 2)), np.ones((2, 2)), pool=pool)
            clops.transpose(np.ones((2, 3)), pool=pool)
            self.assertEqual(pool.stats().calls, 2)
        self.assertEqual(default.stats().calls, before + 2)

    def test_threads_share_the_default_pool(self):
        results = {}

        def work(k):
            rng = np.random.default_rng(k)
            a, b = rng.standard_normal((9, 4)), rng.standard_normal((4, 6))
            results[k] = np.abs(clops.gemm(a, b) - a @ b).max()
        threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(results), list(range(6)))
        self.assertLess(max(results.values()), 4 * 6 * np.finfo(np.float64).eps * 10)

    def test_plugin_errors_carry_status_name_and_message(self):
        e = self.assertRefused(clops.Error, ("toaster",), clops.Pool,
                               config_text='devices = ( { type = "toaster"; } );')
        self.assertIs(type(e), clops.ConfigError)
        self.assertEqual((e.status, e.status_name), (clops.ERR_CONFIG, "CLOPS_ERR_CONFIG"))
        self.assertTrue(e.message and e.message in str(e), e)
        e = self.assertRefused(clops.NotFoundError, ("gamma",), clops.default_pool().invoke,
                               "gemm", gamma=1.0)
        self.assertIsInstance(e, LookupError)
        self.assertEqual(e.status, clops.ERR_NOT_FOUND)
        self.assertIn("gamma", e.message)
        self.assertIs(clops.ClopsError, clops.Error)

    def test_version_is_the_librarys(self):
        self.assertEqual(clops.__version__, clops.library().version())

    def test_lu_solve_trans_follows_the_operator_descriptor(self):
        trans = [p for p in clops.library().op("lu_solve").params if p.name == "trans"][0]
        self.assertEqual(trans.enum_values, ["none", "transpose"])
        saved = clops.library()._ops["lu_solve"]
        params = [p._replace(enum_values=["none"]) if p.name == "trans" else p
                  for p in saved.params]
        clops.library()._ops["lu_solve"] = saved._replace(params=params)
        try:
            lu_and_piv = clops.lu_factor(np.eye(3))
            np.testing.assert_array_equal(clops.lu_solve(lu_and_piv, np.ones(3)), np.ones(3))
            self.assertRefused(NotImplementedError, ("trans=1", "transpose", "offers: none"),
                               clops.lu_solve, lu_and_piv, np.ones(3), trans=1)
        finally:
            clops.library()._ops["lu_solve"] = saved


if __name__ == "__main__":
    unittest.main(verbosity=2)
