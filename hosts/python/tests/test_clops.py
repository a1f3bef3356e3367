"""test_clops.py — tests of the low-level API (the ctypes mirror, Pool, View, buffers), without
pytest: `python3 tests/test_clops.py` runs every test_* function, prints PASS or FAIL for each
and exits 1 if any failed. The package is imported from the directory above (hosts/python), the
library from $CLOPS_LIBRARY (ctest sets it to the build tree's). Results are checked against
references computed here in pure Python."""

import array
import ctypes
import os
import random
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import clops  # noqa: E402

EPS64 = 2.0 ** -52
EPS32 = 2.0 ** -23


def random_matrix(rng, m, n, typecode="d"):
    return array.array(typecode, [rng.uniform(-1, 1) for _ in range(m * n)])


def matmul(a, b, m, k, n, a_stride=None):
    """Row-major m x k times k x n, in pure Python; a_stride = (row, col) strides of a."""
    rs, cs = a_stride or (k, 1)
    return [sum(a[i * rs + p * cs] * b[p * n + j] for p in range(k))
            for i in range(m) for j in range(n)]


def max_abs_diff(x, y):
    assert len(x) == len(y), (len(x), len(y))
    return max(abs(p - q) for p, q in zip(x, y))


def test_abi_mirror_matches_plugin():
    """The ctypes mirrors have the plugin's sizes: the table's struct_size and clops_op's."""
    lib = clops.library()
    assert lib.api.abi_major == clops.ABI_MAJOR
    if lib.api.abi_minor == clops.ABI_MINOR:
        assert lib.api.struct_size == ctypes.sizeof(clops.clops_api), lib.api.struct_size
    assert lib.has("invoke") and lib.has("pool_device_stats")
    op = lib.find("gemm").contents
    assert op.struct_size == ctypes.sizeof(clops.clops_op), op.struct_size
    assert lib.version().count(".") == 2, lib.version()


def test_sized_arrays_of_abi_1_2():
    """The plugin states sizeof(clops_param) in each descriptor and has invoke_sized."""
    lib = clops.library()
    assert lib.api.abi_minor >= 2 and lib.has("invoke_sized")
    for i in range(lib.api.op_count()):
        op = lib.api.op_at(i).contents
        assert op.struct_size >= clops._end_of("param_size", clops.clops_op), op.struct_size
        assert op.param_size == ctypes.sizeof(clops.clops_param), op.param_size
        assert op.reserved2 == 0


def _fake_op(names, stride, struct_size):
    """A descriptor as another plugin would publish it: parameters `stride` bytes apart (the
    bytes past this mirror's clops_param set to 0xA5), and `struct_size`."""
    raw = ctypes.create_string_buffer(b"\xa5" * (stride * len(names)))
    keep = [raw]
    for k, name in enumerate(names):
        p = clops.clops_param.from_address(ctypes.addressof(raw) + k * stride)
        ctypes.memset(ctypes.addressof(p), 0, ctypes.sizeof(p))
        keep.append(ctypes.create_string_buffer(name.encode()))
        # The pointer itself: assigning bytes to p.name would own a copy p cannot keep alive.
        ctypes.c_void_p.from_address(ctypes.addressof(p)).value = ctypes.addressof(keep[-1])
        p.kind = clops.INT64
    op = clops.clops_op(struct_size=struct_size, name=b"fake", param_count=len(names),
                        param_size=999)
    op.params = ctypes.cast(raw, ctypes.POINTER(clops.clops_param))
    if struct_size >= clops._end_of("param_size", clops.clops_op):
        op.param_size = stride
    return op, keep


def test_params_step_by_the_plugins_param_size():
    """A plugin whose clops_param grew is walked by its param_size; one older than ABI 1.2
    (its clops_op ends before param_size) by 1.1's 40 bytes, whatever lies past its end."""
    names = ["first", "second", "third"]
    grown, keep = _fake_op(names, ctypes.sizeof(clops.clops_param) + 24,
                           ctypes.sizeof(clops.clops_op))
    assert [p.name.decode() for p in clops._params(grown)] == names
    assert [p.name for p in clops._op_info(grown).params] == names
    old, keep = _fake_op(names, clops.PARAM_SIZE_1_1, clops._end_of("entry", clops.clops_op))
    assert [p.name.decode() for p in clops._params(old)] == names


def test_invoke_falls_back_to_invoke_on_a_1_1_plugin(pool):
    """Without invoke_sized in the table (a 1.1 plugin), Pool.invoke calls invoke."""
    lib = clops.library()
    a, b = array.array("d", [1, 2, 3, 4]), array.array("d", [5, 6, 7, 8])
    for hide in (False, True):
        if hide:
            lib.has = lambda member, has=lib.has: member != "invoke_sized" and has(member)
        try:
            c = array.array("d", [1, 1, 1, 1])
            pool.invoke("gemm", clops.View(a, (2, 2)), clops.View(b, (2, 2)),
                        clops.View(c, (2, 2)), beta=1.0)
            assert c.tolist() == [20, 23, 44, 51], (hide, c.tolist())
        finally:
            lib.__dict__.pop("has", None)
    assert lib.has("invoke_sized")


def test_op_listing_contains_gemm():
    ops = {op.name: op for op in clops.ops()}
    for name in ("gemm", "lu", "solve", "lu_solve"):
        assert name in ops, sorted(ops)
    params = {p.name: p for p in ops["gemm"].params}
    assert [p.name for p in ops["gemm"].params] == \
        ["a", "b", "c", "trans_a", "trans_b", "alpha", "beta", "precision"]
    assert params["c"].kind == clops.TENSOR_INOUT and params["c"].dtypes == ["f32", "f64"]
    assert params["trans_a"].enum_values == ["none", "transpose"]
    assert params["alpha"].kind == clops.DOUBLE and float(params["alpha"].default) == 1.0
    assert params["a"].default is None  # required
    assert params["precision"].enum_values == ["fp32", "3xtf32", "tf32"]
    assert params["precision"].default == "fp32"


def test_gemm_matches_python_matmul(pool):
    """C = 1.5 A B + 0.5 C at awkward sizes, f64 and f32, against a pure-Python product."""
    rng = random.Random(1)
    m, k, n = 7, 5, 3
    for typecode, eps in (("d", EPS64), ("f", EPS32)):
        a, b = random_matrix(rng, m, k, typecode), random_matrix(rng, k, n, typecode)
        c = random_matrix(rng, m, n, typecode)
        want = [1.5 * p + 0.5 * q for p, q in zip(matmul(a, b, m, k, n), c)]
        out = pool.gemm(clops.View(a, (m, k)), clops.View(b, (k, n)), clops.View(c, (m, n)),
                        alpha=1.5, beta=0.5)
        err = max_abs_diff(out.tolist(), want)
        assert err <= 4 * k * eps, (typecode, err)


def test_gemm_transposed_and_column_major_views(pool):
    """The same product through trans_a on A^T, and through a column-major view of A."""
    rng = random.Random(2)
    m, k, n = 4, 6, 5
    a, b = random_matrix(rng, m, k), random_matrix(rng, k, n)
    want = matmul(a, b, m, k, n)
    at = array.array("d", [a[i * k + p] for p in range(k) for i in range(m)])  # k x m
    c = clops.View(array.array("d", [0.0] * (m * n)), (m, n))
    pool.gemm(clops.View(at, (k, m)), (b, (k, n)), c, trans_a=True)
    assert max_abs_diff(c.tolist(), want) <= 4 * k * EPS64
    c2 = clops.View(array.array("d", [0.0] * (m * n)), (m, n))
    pool.gemm(clops.View(at, (m, k), strides=(1, m)), (b, (k, n)), c2)  # A, column-major
    assert max_abs_diff(c2.tolist(), want) <= 4 * k * EPS64


def test_invoke_by_name_with_defaults(pool):
    """invoke() with positional and named arguments; beta = 0 never reads the NaNs in C."""
    a = array.array("d", [1, 2, 3, 4, 5, 6])
    b = array.array("d", [1, 0, 0, 1, 1, 1])
    c = array.array("d", [float("nan")] * 4)
    pool.invoke("gemm", (a, (2, 3)), (b, (3, 2)), c=(c, (2, 2)), trans_b="none")
    assert list(c) == [4.0, 5.0, 10.0, 11.0], list(c)


def lu_residual(a0, lu, ipiv, n):
    """||P A - L U||_max / (||A||_max n eps), with P applied as LAPACK's 1-based ipiv says."""
    pa = [list(a0[i * n:(i + 1) * n]) for i in range(n)]
    for i in range(n):
        p = ipiv[i] - 1
        pa[i], pa[p] = pa[p], pa[i]
    worst = 0.0
    for i in range(n):
        for j in range(n):
            s = sum((lu[i * n + p] if p < i else 1.0) * lu[p * n + j]
                    for p in range(min(i, j) + 1))
            worst = max(worst, abs(pa[i][j] - s))
    return worst / (max(abs(x) for x in a0) * n * EPS64)


def test_lu_and_solve_residuals_5x5(pool):
    rng = random.Random(3)
    n, nrhs = 5, 2
    a0 = random_matrix(rng, n, n)
    a = array.array("d", a0)
    ipiv, info = pool.lu(clops.View(a, (n, n)))
    assert info == 0 and len(ipiv) == n, (info, list(ipiv))
    assert all(i + 1 <= p <= n for i, p in enumerate(ipiv)), list(ipiv)
    assert lu_residual(a0, a, ipiv, n) < 10, lu_residual(a0, a, ipiv, n)

    b0 = random_matrix(rng, n, nrhs)
    a, x = array.array("d", a0), array.array("d", b0)
    ipiv, info = pool.solve(clops.View(a, (n, n)), clops.View(x, (n, nrhs)))
    assert info == 0, info
    ax = matmul(a0, x, n, n, nrhs)
    norm_a = max(sum(abs(a0[i * n + j]) for j in range(n)) for i in range(n))
    residual = max_abs_diff(ax, b0) / (norm_a * max(abs(v) for v in x) * n * EPS64)
    assert residual < 10, residual
    assert lu_residual(a0, a, ipiv, n) < 10  # a holds the factors, as lu's


def test_singular_matrix_reports_info(pool):
    a = array.array("d", [1, 2, 2, 4])  # rank 1: U(2, 2) is exactly zero
    b = array.array("d", [1, 1])
    ipiv, info = pool.solve((a, (2, 2)), (b, (2, 1)))
    assert info == 2 and list(b) == [1.0, 1.0], (info, list(b))


def test_bad_argument_raises_clops_error(pool):
    a = (array.array("d", [0.0] * 4), (2, 2))
    try:
        pool.invoke("gemm", a=a, b=a, c=(array.array("d", [0.0] * 4), (2, 2)), gamma=2.0)
        raise AssertionError("no error for parameter 'gamma'")
    except clops.ClopsError as e:
        assert e.status == clops.ERR_NOT_FOUND, e
        assert "no parameter named 'gamma'" in e.message and "CLOPS_ERR_NOT_FOUND" in str(e), e
    try:
        pool.gemm(a, a, (array.array("d", [0.0] * 6), (2, 3)))
        raise AssertionError("no error for a 2x3 C")
    except clops.ClopsError as e:
        assert e.status == clops.ERR_INVALID_ARGUMENT and "'c'" in e.message, e
    try:
        pool.invoke("gemmm")
        raise AssertionError("no error for operator 'gemmm'")
    except clops.ClopsError as e:
        assert e.status == clops.ERR_NOT_FOUND and "gemmm" in e.message, e


def test_log_callback_receives_pool_messages():
    got = []
    clops.library().set_log_callback(lambda level, message: got.append((level, message)),
                                     clops.LOG_INFO)
    try:
        with clops.Pool():
            pass
    finally:
        clops.library().set_log_callback(None)
    assert any(level == clops.LOG_INFO and "device 0" in m for level, m in got), got


def test_view_past_its_buffer_is_refused():
    try:
        clops.View(array.array("d", [0.0] * 5), (2, 3))
        raise AssertionError("a 2x3 view of 5 elements was accepted")
    except ValueError as e:
        assert "past the buffer" in str(e), e


def test_device_buffers_gemm(pool):
    """Operands kept in device buffers: upload, gemm on device views, download."""
    rng = random.Random(4)
    m, k, n = 3, 4, 2
    a, b = random_matrix(rng, m, k), random_matrix(rng, k, n)
    with pool.buffer(8 * m * k) as da, pool.buffer(8 * k * n) as db, \
            pool.buffer(8 * m * n) as dc:
        da.upload(a)
        db.upload(b)
        pool.gemm(da.view(clops.F64, (m, k)), db.view(clops.F64, (k, n)),
                  dc.view(clops.F64, (m, n)), alpha=2.0)
        c = dc.download(array.array("d", [0.0] * (m * n)))
    want = [2 * v for v in matmul(a, b, m, k, n)]
    assert max_abs_diff(c, want) <= 8 * k * EPS64


def test_numpy_views_any_layout(pool):
    np = clops.numpy
    rng = np.random.default_rng(5)
    a = rng.standard_normal((9, 7))
    b = np.asfortranarray(rng.standard_normal((7, 4)))
    c = np.zeros((4, 9)).T  # column-major 9x4 view
    pool.gemm(a[:, :], b, c)
    assert np.max(np.abs(c - a @ b)) <= 8 * 7 * EPS64
    c32 = np.zeros((5, 4), np.float32)
    a32 = rng.standard_normal((7, 5)).astype(np.float32)
    pool.gemm(a32.T, b[:, :].astype(np.float32), c32)  # a transposed view, no copy
    assert np.max(np.abs(c32 - a32.T @ b.astype(np.float32))) <= 8 * 7 * EPS32
    big = rng.standard_normal((10, 8))
    c = np.zeros((5, 4))
    pool.gemm(big[::2, 1:9:2], b[:4], c)  # strided slices, taken in place
    assert np.max(np.abs(c - big[::2, 1:9:2] @ b[:4])) <= 8 * 4 * EPS64
    m = rng.standard_normal((5, 5))
    ipiv, info = pool.lu(m.copy())
    assert ipiv.dtype == np.int32 and ipiv.shape == (5,) and info == 0
    x = rng.standard_normal((5, 2))
    lu, rhs = m.copy(), x.copy()
    ipiv, info = pool.solve(lu, rhs)
    assert info == 0 and np.max(np.abs(m @ rhs - x)) <= 1e-12 * np.abs(m).max() * 5


def test_prebuild_builds_ahead_and_a_first_call_compiles_nothing():
    """Pool.prebuild (ABI 1.5): the named kernels built into a cache of the pool's own, a first
    call of them then builds nothing, an operator not named still does; Pool(prebuild=...)
    does it at creation, a second pool on the same cache loads instead of compiling; an unknown
    operator or dtype is refused naming it."""
    import tempfile
    with tempfile.TemporaryDirectory() as cache:
        config = 'cache = { enabled = true; dir = "%s"; };' % cache
        with clops.Pool(config_text=config) as pool:
            done = pool.prebuild(["transpose"], ["u8", "float32"])
            assert done.programs_built >= 1 and done.programs_loaded == 0, done
            assert done.wall_ns >= done.build_ns > 0, done
            before = pool.stats()
            assert before.calls == 0, before  # the prebuild's own calls are not counted
            x, y = array.array("B", range(6)), array.array("B", bytes(6))
            pool.invoke("transpose", x=clops.View(x, (2, 3)), y=clops.View(y, (3, 2)))
            assert list(y) == [0, 3, 1, 4, 2, 5], list(y)
            assert pool.stats().programs_built == before.programs_built
            xd, yd = array.array("d", range(6)), array.array("d", bytes(48))
            pool.invoke("transpose", x=clops.View(xd, (2, 3)), y=clops.View(yd, (3, 2)))
            assert pool.stats().programs_built > before.programs_built  # f64: not prebuilt
        with clops.Pool(config_text=config, prebuild=["transpose"]) as again:
            stats = again.stats()
            # transpose moves bits: its programs are by element size (1, 4, 8 bytes), all three
            # in the cache now (u8 and f32 prebuilt, f64 by the call): loaded, none compiled.
            assert stats.programs_built == 0 and stats.programs_loaded == 3, stats
        with clops.Pool(config_text=config) as pool:
            for bad, error in ((lambda: pool.prebuild(["qr"])), "qr"), \
                              ((lambda: pool.prebuild(["gemm"], ["f16"])), "f16"):
                try:
                    bad()
                    raise AssertionError("not refused: " + error)
                except clops.Error as e:
                    assert error in str(e), str(e)


def test_a_call_bound_again_reads_its_own_arrays_and_keeps_none():
    """Pool.execute keeps a call's bound arguments for the next call of the same signature
    (per-call overhead, issue 25 item 8): each call computes with its own arrays, and no
    array outlives its call in that cache."""
    import gc
    import weakref
    import numpy as np
    pool = clops.default_pool()
    rng = np.random.default_rng(5)
    refs = []
    for _ in range(4):
        a, b = rng.random((7, 5)), rng.random((5, 3))
        c = clops.gemm(a, b)
        assert np.allclose(c, a @ b, rtol=1e-12, atol=1e-12), (c, a @ b)
        refs += [weakref.ref(a), weakref.ref(b), weakref.ref(c)]
        del a, b, c
    gc.collect()
    assert all(r() is None for r in refs), "an array outlived its call"
    # A different scalar is another signature: the result follows it.
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    y = np.empty((3, 2))
    pool.invoke("transpose", x=x, y=y)
    assert (y == x.T).all()
    x2 = np.arange(6, 12, dtype=np.float64).reshape(2, 3)
    pool.invoke("transpose", x=x2, y=y)
    assert (y == x2.T).all()


def test_calls_of_one_signature_again_decide_as_the_first():
    """gemm, solve, transpose and the reductions keep what they decided for ndarrays taken as
    they are under the arrays' signature (dtype, shape, strides), and Pool.execute takes an
    address by buffer for C-contiguous writable ones (issue 25 item 8): every layout, called
    three times with fresh values (the first call deciding, the next two from the caches),
    gives NumPy's result; an array that must be converted, a read-only one and a subclass go
    their own way, and the caches stay bounded."""
    import numpy as np
    from clops import _api, _reduce
    rng = np.random.default_rng(11)

    def layouts(m, n, dtype):
        base = rng.random((m + n + 3, m + 2 * n + 1)).astype(dtype)
        readonly = rng.random((m, n)).astype(dtype)
        readonly.flags.writeable = False
        return {"c": np.ascontiguousarray(base[:m, :n]), "f": np.asfortranarray(base[:m, :n]),
                "padded": base[1:m + 1, :n], "strided": base[:m, :2 * n:2],
                "transposed": np.ascontiguousarray(base[:n, :m]).T, "readonly": readonly,
                "swapped": base[:m, :n].astype(np.dtype(dtype).newbyteorder()),
                "matrix": np.asmatrix(base[:m, :n]), "reversed": base[:m, :n][::-1, ::-1],
                "broadcast": np.broadcast_to(base[0, :n], (m, n))}

    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        for name in layouts(5, 7, dtype):
            for _ in range(3):
                a, b = layouts(5, 7, dtype)[name], layouts(7, 3, dtype)[name]
                c = clops.gemm(a, b)
                want = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
                assert np.allclose(c, want, rtol=tol, atol=tol), (name, dtype)
                t = clops.transpose(a)
                assert (np.asarray(t) == np.asarray(a).T).all() and \
                    t.dtype == a.dtype.newbyteorder("="), name
                for axis, keepdims in ((None, False), (0, False), (1, True), ((0, 1), True)):
                    s = clops.sum(a, axis=axis, keepdims=keepdims)
                    w = np.sum(np.asarray(a, np.float64), axis=axis, keepdims=keepdims)
                    assert np.shape(s) == np.shape(w), (name, axis, np.shape(s))
                    assert np.allclose(s, w, rtol=tol * 10, atol=tol * 10), (name, axis)
                    assert clops.max(a, axis=axis, keepdims=keepdims).tolist() == \
                        np.max(np.asarray(a), axis=axis, keepdims=keepdims).tolist(), name
                sq = layouts(6, 6, dtype)[name] + 6 * np.eye(6, dtype=dtype)
                rhs = layouts(6, 2, dtype)[name]
                x = clops.solve(sq, rhs)
                assert np.allclose(np.asarray(sq, np.float64) @ x, rhs, rtol=tol * 100,
                                   atol=tol * 100), (name, dtype)
    # The same signature with integers, and a list: converted each time, never a hit.
    ints = np.arange(35).reshape(5, 7)
    assert clops.gemm(ints, ints.T).dtype == np.float64
    assert (clops.gemm(ints, ints.T) == ints @ ints.T).all()
    assert clops.sum(ints) == 595 and clops.sum(ints.tolist()) == 595
    # Refusals still refuse after a signature of the same shape was kept.
    for bad in (np.zeros((5, 7), complex), np.zeros((5, 8))):
        try:
            clops.gemm(bad, np.zeros((7, 3)))
        except (TypeError, ValueError):
            pass
        else:
            raise AssertionError("gemm took %s %s" % (bad.dtype, bad.shape))
    for size in range(300):  # more signatures than any cache keeps
        v = rng.random(size + 1)
        assert abs(clops.sum(v) - v.sum()) < 1e-9 * (size + 1)
    assert len(_reduce._PLAINS) <= _api._PLAIN_MAX
    assert len(_api._PLAIN_OPERANDS) <= _api._PLAIN_MAX
    assert len(_api._PLAIN_TRANSPOSES) <= _api._PLAIN_MAX


def main():
    tests = [(k, v) for k, v in globals().items() if k.startswith("test_") and callable(v)]
    failed = 0
    with clops.Pool() as pool:
        print("libclops %s from %s, device: %s" % (clops.library().version(),
              clops.library().path, pool.devices()[0].name))
        for name, fn in tests:
            try:
                fn(pool) if fn.__code__.co_argcount else fn()
                print("PASS", name)
            except Exception:  # noqa: BLE001 — report every failure, then the next test
                failed += 1
                print("FAIL", name)
                traceback.print_exc()
    print("%d of %d tests failed" % (failed, len(tests)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
