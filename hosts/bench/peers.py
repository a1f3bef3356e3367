#!/usr/bin/env python3
"""peers.py [--reps R] IN.csv OUT.csv — the vendor libraries' figures for clops-bench's rows.

clops-bench --peers writes its own rows (hosts/bench/README.md's CSV columns) to IN.csv and calls
this script, which runs the same work on the same kind of device with the peer libraries it can
import, and writes their rows, in the same columns, to OUT.csv:

- rows measured on an NVIDIA GPU: PyTorch (cuBLAS, cuSOLVER, its reduction and copy kernels) on
  the first CUDA device, else CuPy; operands on the device, one warm-up call, then the median of
  R calls (--reps, default 5; clops-bench passes its own) timed with CUDA events around each;
  the memory area's work (reductions, transposes, copies), whose clops rows are wall times, is
  timed in wall time too (the host's clock around the call and a synchronize, as clops-bench
  times its calls), and also with events, reported as impl "<peer> events";
- rows measured on a CPU device: NumPy and SciPy (the system BLAS and LAPACK) on the host, timed
  with time.perf_counter.

What each clops row is compared with (its `op`, as clops-bench names it):
  gemm, gemm fp32          C = A B (cuBLAS with TF32 off, or BLAS sgemm/dgemm)
  gemm 3xtf32              the same: 3xtf32 is judged against the fp32 product
  gemm tf32                cuBLAS with TF32 on (no CPU peer)
  lu                       getrf (torch.linalg.lu_factor / scipy.linalg.lu_factor)
  solve 1 RHS, 64 RHS      getrf + getrs (torch.linalg.solve / scipy.linalg.solve)
  reduce sum/max/norm2/argmax            over n elements
  reduce sum axis 0 / axis 1             of an n/1024 x 1024 row-major matrix
  transpose                out of place, N x N; also "device copy" (a clone of the same bytes),
                           the ceiling a transpose is judged against
Rows of other ops (Mandelbrot: the seed's kernel is clops-bench's own peer row; rows on host
operands, "gemm host", ...) and rows of other impls than clops get no peer.
Rates follow clops-bench's: TFLOP/s for gemm (2 N^3), lu ((2/3) N^3) and solve ((2/3) N^3 +
2 N^2 RHS); GB/s of bytes read (reduce, element size * n) or read and written (transpose and
copy, 2 N^2 element sizes).

Exit status: 0 (peer rows written, possibly none: a line on stderr says why, e.g. no library to
import); 1 IN.csv could not be read; 2 usage.
"""
import csv
import datetime
import statistics
import sys
import time

COLUMNS = ["area", "op", "dtype", "impl", "n", "n_unit", "time_ms", "rate", "unit", "device",
           "date"]


def gemm_flops(n):
    return 2.0 * n ** 3


def lu_flops(n):
    return 2.0 / 3.0 * n ** 3


def solve_flops(n, rhs):
    return lu_flops(n) + 2.0 * n * n * rhs


class Backend:
    """What a peer library offers: arrays on its device, a timer, and the operations."""

    def __init__(self, name, device):
        self.name = name  # the impl column: "cublas", "numpy", ...
        self.device = device


class TorchBackend(Backend):
    def __init__(self, torch):
        super().__init__("torch", torch.cuda.get_device_name(0))
        self.t = torch

    def dtype(self, name):
        return {"f32": self.t.float32, "f64": self.t.float64}[name]

    def rand(self, shape, dtype):
        return self.t.rand(*shape, device="cuda", dtype=self.dtype(dtype)) * 2 - 1

    def sync(self):
        self.t.cuda.synchronize()

    def timed_wall(self, fn, reps):
        """The median wall time of a call that returns once the device is done, in ms."""
        fn()
        self.sync()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            self.sync()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    def timed(self, fn, reps):
        fn()
        self.t.cuda.synchronize()
        times = []
        for _ in range(reps):
            start = self.t.cuda.Event(enable_timing=True)
            end = self.t.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            self.t.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)

    def matmul(self, a, b, tf32):
        self.t.backends.cuda.matmul.allow_tf32 = tf32
        return lambda: a @ b

    def lu(self, a):
        return lambda: self.t.linalg.lu_factor(a)

    def solve(self, a, b):
        return lambda: self.t.linalg.solve(a, b)

    def reduce(self, what, x, axis):
        fns = {"sum": self.t.sum, "max": self.t.amax, "argmax": self.t.argmax,
               "norm2": self.t.linalg.vector_norm}
        if axis is None:
            return lambda: fns[what](x)
        return lambda: fns[what](x, dim=axis)

    def transpose(self, x):
        return lambda: x.t().contiguous()

    def copy(self, x):
        return lambda: x.clone()

    def impl(self, what):
        return {"gemm": "cublas", "lu": "cusolver", "solve": "cusolver"}.get(what, "torch")


class CupyBackend(TorchBackend):
    def __init__(self, cupy):
        Backend.__init__(self, "cupy", cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
        self.cp = cupy

    def dtype(self, name):
        return {"f32": self.cp.float32, "f64": self.cp.float64}[name]

    def sync(self):
        self.cp.cuda.Device().synchronize()

    def rand(self, shape, dtype):
        return self.cp.random.random(shape).astype(self.dtype(dtype)) * 2 - 1

    def timed(self, fn, reps):
        fn()
        self.cp.cuda.Device().synchronize()
        times = []
        for _ in range(reps):
            start, end = self.cp.cuda.Event(), self.cp.cuda.Event()
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(self.cp.cuda.get_elapsed_time(start, end))
        return statistics.median(times)

    def matmul(self, a, b, tf32):
        if tf32:
            return None  # CuPy has no per-call TF32 switch
        return lambda: a @ b

    def lu(self, a):
        return None  # cupyx.scipy.linalg.lu_factor exists, but it is not cuSOLVER's getrf alone

    def solve(self, a, b):
        return lambda: self.cp.linalg.solve(a, b)

    def reduce(self, what, x, axis):
        fns = {"sum": self.cp.sum, "max": self.cp.max, "argmax": self.cp.argmax,
               "norm2": lambda v, **k: self.cp.linalg.norm(v, **k)}
        if axis is None:
            return lambda: fns[what](x)
        return lambda: fns[what](x, axis=axis)

    def transpose(self, x):
        return lambda: self.cp.ascontiguousarray(x.T)

    def copy(self, x):
        return lambda: x.copy()

    def impl(self, what):
        return {"gemm": "cublas", "solve": "cusolver"}.get(what, "cupy")


def cpu_name():
    """The host CPU's model, as /proc/cpuinfo names it (else the machine type)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.machine()


class NumpyBackend(Backend):
    def __init__(self, numpy, scipy_linalg):
        super().__init__("numpy", cpu_name())
        self.np = numpy
        self.sl = scipy_linalg
        self.rng = numpy.random.default_rng(2026)

    def rand(self, shape, dtype):
        return (self.rng.random(shape) * 2 - 1).astype({"f32": "float32", "f64": "float64"}[dtype])

    def timed(self, fn, reps):
        fn()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    def matmul(self, a, b, tf32):
        return None if tf32 else (lambda: a @ b)

    def lu(self, a):
        if self.sl is None:
            return None
        return lambda: self.sl.lu_factor(a, check_finite=False)

    def solve(self, a, b):
        return lambda: self.np.linalg.solve(a, b)

    def reduce(self, what, x, axis):
        fns = {"sum": self.np.sum, "max": self.np.max, "argmax": self.np.argmax,
               "norm2": lambda v, **k: self.np.linalg.norm(v, **k)}
        if axis is None:
            return lambda: fns[what](x)
        return lambda: fns[what](x, axis=axis)

    def transpose(self, x):
        return lambda: self.np.ascontiguousarray(x.T)

    def copy(self, x):
        return lambda: x.copy()

    def impl(self, what):
        return {"gemm": "blas", "lu": "lapack", "solve": "lapack"}.get(what, "numpy")


def gpu_backend():
    """PyTorch with CUDA, else CuPy; None (and why) when neither can be used."""
    why = []
    try:
        import torch
        if torch.cuda.is_available():
            return TorchBackend(torch), None
        why.append("torch sees no CUDA device")
    except ImportError:
        why.append("torch is not importable")
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return CupyBackend(cupy), None
        why.append("cupy sees no CUDA device")
    except Exception:  # ImportError, or CUDA missing under an installed cupy
        why.append("cupy is not importable")
    return None, "; ".join(why)


def cpu_backend():
    try:
        import numpy
    except ImportError:
        return None, "numpy is not importable"
    try:
        import scipy.linalg as scipy_linalg
    except ImportError:
        scipy_linalg = None
    return NumpyBackend(numpy, scipy_linalg), None


def work_for(be, row):
    """The peer's call for a clops row, its flop or byte count, and the impl and op it is
    reported under; None when the row has no peer on `be`."""
    op, dtype, n = row["op"] or row["area"], row["dtype"], int(row["n"])
    if dtype not in ("f32", "f64"):
        return None
    if op in ("gemm", "gemm fp32", "gemm 3xtf32", "gemm tf32"):
        tf32 = op == "gemm tf32"
        if tf32 and dtype != "f32":
            return None
        a, b = be.rand((n, n), dtype), be.rand((n, n), dtype)
        fn = be.matmul(a, b, tf32)
        impl = be.impl("gemm") + (" tf32" if tf32 else "")
        return fn and (fn, gemm_flops(n), impl, op)
    if op == "lu":
        fn = be.lu(be.rand((n, n), dtype))
        return fn and (fn, lu_flops(n), be.impl("lu"), op)
    if op.startswith("solve ") and op.endswith(" RHS"):
        rhs = int(op.split()[1])
        fn = be.solve(be.rand((n, n), dtype), be.rand((n, rhs), dtype))
        return fn and (fn, solve_flops(n, rhs), be.impl("solve"), op)
    size = 4 if dtype == "f32" else 8
    if op.startswith("reduce "):
        words = op.split()
        what, axis = words[1], (int(words[3]) if len(words) == 4 else None)
        if what not in ("sum", "max", "norm2", "argmax"):
            return None
        x = be.rand((n // 1024, 1024) if axis is not None else (n,), dtype)
        return (be.reduce(what, x, axis), size * n, be.impl("reduce"), op)
    if op == "transpose":
        return (be.transpose(be.rand((n, n), dtype)), 2 * size * n * n, be.impl("transpose"), op)
    return None


def copy_work(be, row):
    """The device copy of a transpose's bytes: the ceiling a transpose is judged against."""
    n, dtype = int(row["n"]), row["dtype"]
    size = 4 if dtype == "f32" else 8
    return (be.copy(be.rand((n, n), dtype)), 2 * size * n * n, be.impl("copy"), "device copy")


def timings(be, row, fn, impl, reps):
    """[(impl, ms)] of a peer's call: its backend's timer; for the memory area on a GPU, whose
    clops rows are wall times, the wall time under `impl` and the events' time beside it."""
    if row["area"] == "memory" and hasattr(be, "timed_wall"):
        return [(impl, be.timed_wall(fn, reps)), (impl + " events", be.timed(fn, reps))]
    return [(impl, be.timed(fn, reps))]


def parse_args(argv):
    """(reps, IN, OUT), or None for a usage error."""
    args, reps = argv[1:], 5
    if len(args) >= 2 and args[0] == "--reps":
        if not args[1].isdigit() or int(args[1]) < 1:
            return None
        args, reps = args[2:], int(args[1])
    if args and args[0] == "--":
        args = args[1:]
    return (reps, args[0], args[1]) if len(args) == 2 else None


def main(argv):
    parsed = parse_args(argv)
    if parsed is None:
        print("usage: " + __doc__.split("\n")[0].split(" — ")[0], file=sys.stderr)
        return 2
    reps, argv = parsed[0], [argv[0], parsed[1], parsed[2]]
    try:
        with open(argv[1], newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("impl") == "clops"]
    except (OSError, csv.Error) as e:
        print("peers.py: %s: %s" % (argv[1], e), file=sys.stderr)
        return 1
    on_gpu = [r for r in rows if "NVIDIA" in (r.get("device") or "")]
    on_cpu = [r for r in rows if r not in on_gpu]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = []
    for group, make in ((on_gpu, gpu_backend), (on_cpu, cpu_backend)):
        if not group:
            continue
        be, why = make()
        if be is None:
            print("peers.py: no peer for the rows measured on %s: %s"
                  % (group[0].get("device") or "the device", why), file=sys.stderr)
            continue
        done = set()
        for row in group:
            key = (row["area"], row["op"], row["dtype"], row["n"])
            if key in done:
                continue
            done.add(key)
            works = [work_for(be, row)]
            if row["op"] == "transpose":
                works.append(copy_work(be, row))
            for work in works:
                if not work:
                    continue
                fn, amount, impl, op = work
                for impl, ms in timings(be, row, fn, impl, reps):
                    unit = row["unit"]
                    rate = amount / ms / 1e9 if unit == "TFLOP/s" else amount / ms / 1e6
                    out.append({"area": row["area"], "op": op, "dtype": row["dtype"],
                                "impl": impl, "n": row["n"], "n_unit": row.get("n_unit", ""),
                                "time_ms": "%.6g" % ms, "rate": "%.6g" % rate, "unit": unit,
                                "device": be.device, "date": date})
    with open(argv[2], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
