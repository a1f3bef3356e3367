#!/usr/bin/env python3
"""bench_overhead.py [--reps N] [--config FILE] — where a small call's time goes (issue 25,
item 8): each operator on tiny operands, timed whole from Python and by parts, as the median of N
calls (default 300) after 20 warm-up calls (the kernels built before):

  python    clops.<function>(numpy arrays) (the NumPy API: checks, conversions, the call)
  binding   python's time outside the library: arguments bound, tensors described, ctypes
  in call   python's time inside the library's call (fresh output arrays each call)
  c host    invoke_sized with arguments prepared once, operands in host memory: the library's
            whole call (validation, staging, transfers, launch, wait, commit)
  transfers c host - c device: the host operands' uploads and downloads
  c device  the same call with every tensor in a device buffer (DeviceView): no transfers
  launch    c device - validate: the lifecycle, the launches and the wait
  validate  check_sized on the same arguments: the checks alone, nothing run

Each ctypes call costs about 1 us here, within every part. The figures go to
hosts/bench/RESULTS.md with the machine and commit. Exit status 0; 2 usage.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import clops  # noqa: E402
from clops._abi import DTYPES, clops_output_spec  # noqa: E402
import ctypes  # noqa: E402


CODES = {entry[3]: code for code, entry in DTYPES.items()}  # "float64" -> enum clops_dtype


def median_us(fn, reps):
    for _ in range(20):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def python_times(lib, fn, reps):
    """The median of the NumPy-API call, and of the time of it spent in the library's call (the
    library object's invoke timed around)."""
    inner = lib.invoke
    spent = []

    def timed(*args):
        t = time.perf_counter()
        status = inner(*args)
        spent.append(time.perf_counter() - t)
        return status
    lib.invoke = timed
    try:
        whole = median_us(fn, reps)
        spent.clear()
        median_us(fn, reps)
        return whole, statistics.median(spent[-reps:]) * 1e6
    finally:
        del lib.invoke  # the class's method again


def cases(rng):
    """(label, NumPy-API call, operator, host arguments, device argument shapes)."""
    x = rng.random(1000)
    a, b = rng.random((32, 32)), rng.random((32, 32))
    a128, b128 = rng.random((128, 128)), rng.random((128, 128))
    s = rng.random((8, 8)) + 8 * np.eye(8)
    rhs = rng.random((8, 1))
    t = rng.random((64, 48)).astype(np.float32)
    return [
        ("sum 1000 f64", lambda: clops.sum(x), "reduce",
         {"x": x, "out": np.zeros(1), "op": "sum"}),
        ("gemm 32 f64", lambda: clops.gemm(a, b), "gemm",
         {"a": a, "b": b, "c": np.zeros((32, 32))}),
        ("gemm 128 f64", lambda: clops.gemm(a128, b128), "gemm",
         {"a": a128, "b": b128, "c": np.zeros((128, 128))}),
        ("solve 8 f64", lambda: clops.solve(s, rhs), "solve",
         {"a": s.copy(), "b": rhs.copy(), "ipiv": np.zeros(8, np.int32),
          "info": np.zeros(1, np.int32)}),
        ("transpose 64x48 f32", lambda: clops.transpose(t), "transpose",
         {"x": t, "y": np.zeros((48, 64), np.float32)}),
    ]


def prepared(pool, name, kwargs, keep):
    """The clops_arg array of the call, built once."""
    return pool.arguments(name, kwargs, keep)


def on_device(pool, kwargs, keep):
    """The same arguments with every array in a device buffer of its own (uploaded once)."""
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            buf = pool.buffer(max(v.nbytes, 1))
            buf.upload(np.ascontiguousarray(v))
            keep.append(buf)
            out[k] = buf.view(CODES[v.dtype.name], v.shape)
        else:
            out[k] = v
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--config")
    opt = parser.parse_args()
    if opt.reps < 1:
        parser.error("--reps must be at least 1")
    pool = clops.Pool(config=opt.config)
    clops.default_pool = lambda: pool  # the NumPy API on the same pool
    lib, api = pool.lib, pool.lib.api
    print("libclops %s, device: %s; median of %d calls, us" %
          (lib.version(), pool.devices()[0].name, opt.reps))
    header = ("call", "python", "binding", "in call", "c host", "transfers", "c device",
              "launch", "validate")
    rows = []
    for label, numpy_call, name, kwargs in cases(np.random.default_rng(1)):
        op = lib.find(name)
        keep = []
        with pool._use() as handle:
            cargs, nargs = prepared(pool, name, kwargs, keep)
            dev_args, dev_n = prepared(pool, name, on_device(pool, kwargs, keep), keep)
            spec = (clops_output_spec * 8)()
            count = ctypes.c_int32()

            def host():
                lib.check(lib.invoke(handle, op, cargs, nargs))

            def device():
                lib.check(lib.invoke(handle, op, dev_args, dev_n))

            def validate():
                lib.check(api.check_sized(handle, op, cargs, nargs, ctypes.sizeof(cargs[0]),
                                          spec, ctypes.sizeof(clops_output_spec), 8,
                                          ctypes.byref(count)))
            t_host, t_dev, t_check = (median_us(host, opt.reps), median_us(device, opt.reps),
                                      median_us(validate, opt.reps))
        t_py, t_in = python_times(lib, numpy_call, opt.reps)
        rows.append((label, t_py, t_py - t_in, t_in, t_host, t_host - t_dev, t_dev,
                     t_dev - t_check, t_check))
    print("  ".join("%-19s" % h if i == 0 else "%9s" % h for i, h in enumerate(header)))
    for r in rows:
        print("  ".join("%-19s" % v if i == 0 else "%9.1f" % v for i, v in enumerate(r)))
    pool.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
