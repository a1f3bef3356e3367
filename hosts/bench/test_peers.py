#!/usr/bin/env python3
"""test_peers.py: ctest's checks of clops-bench --peers, gemm's --precision, --host (gemm, lu)
and mandelbrot's seed row.

    python3 test_peers.py --bench CLOPS_BENCH --work DIR TEST

TEST is one of the functions named in TESTS. clops-bench runs on the default pool's device
(PoCL on the development machine, a CPU device: its peers are NumPy and SciPy) with CLOPS_PYTHON
set to this python3. A test whose peers need NumPy and SciPy prints "SKIPPED: numpy is not
installed" and exits 0 where this python3 lacks them (ctest's SKIP_REGULAR_EXPRESSION); every
other failure is an AssertionError, exit 1.
"""

import math
import os
import re
import shutil
import sys

from test_chart import check_rows, read_csv, run
import testlib

RHS = {"lu": 0, "solve 1 RHS": 1, "solve 64 RHS": 64}
# The units a rate may be printed in, per second: the CSV's TFLOP/s and GB/s, and the smaller
# ones the Peers table takes where they suit the rates (a CPU device's GFLOP/s).
UNIT_SIZE = {"TFLOP/s": 1e12, "GFLOP/s": 1e9, "MFLOP/s": 1e6, "GB/s": 1e9, "MB/s": 1e6,
             "iterations/s": 1.0}


def need_numpy():
    try:
        import numpy  # noqa: F401
        import scipy.linalg  # noqa: F401
    except ImportError:
        print(f"SKIPPED: numpy is not installed for {sys.executable} "
              "(Debian/Ubuntu: python3-numpy python3-scipy)")
        sys.exit(0)


def gemm_rate(r):
    return 2 * int(r["n"]) ** 3 / (float(r["time_ms"]) * 1e9)


def lu_rate(r):
    n, op = int(r["n"]), r["op"].removesuffix(" host")
    return (2 / 3 * n ** 3 + 2 * n ** 2 * RHS[op]) / (float(r["time_ms"]) * 1e9)


def peers_table(stdout):
    """The Peers table's rows: (work, dtype, n, unit, clops, peer, peer's rate, clops/peer), the
    numbers as floats or None for "-"."""
    assert "\nPeers: " in stdout, f"no Peers table in:\n{stdout}"
    lines = stdout.split("\nPeers: ", 1)[1].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("work "))
    assert set(lines[header + 1]) == {"-"}, lines[header + 1]
    rows = []
    for line in lines[header + 2:]:
        if not line.strip():
            break
        # Columns are two blanks apart or more; a cell ("reduce sum axis 0") has single ones.
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == 8, (line, cells)

        def number(text):
            return None if text == "-" else float(text)

        rows.append((cells[0], cells[1], int(cells[2]), cells[3], number(cells[4]), cells[5],
                     number(cells[6]), number(cells[7])))
    assert rows, f"an empty Peers table in:\n{stdout}"
    return rows


def csv_key(work, peer):
    """The (op, impl) of the CSV row a Peers table row names as its peer."""
    if peer == "clops, device operands":
        return work.removesuffix(" host"), "clops"
    if peer.endswith(" device copy"):
        return "device copy", peer.removesuffix(" device copy")
    return work, peer


def check_ratios(table, rows):
    """Each table row's rates are its CSV rows' (4 significant digits, in the table's unit), and
    its ratio theirs."""
    rate = {(r["op"], r["dtype"], int(r["n"]), r["impl"]):
            float(r["rate"]) * UNIT_SIZE[r["unit"]] for r in rows}
    for work, dtype, n, unit, ours, peer, theirs, ratio in table:
        scale = UNIT_SIZE[unit]
        assert math.isclose(ours * scale, rate[(work, dtype, n, "clops")], rel_tol=1e-3), \
            (work, ours, unit)
        if peer == "-":
            assert theirs is None and ratio is None, (work, peer)
            continue
        op, impl = csv_key(work, peer)
        assert math.isclose(theirs * scale, rate[(op, dtype, n, impl)], rel_tol=1e-3), \
            (work, peer, unit)
        assert ratio > 0, (work, peer, ratio)
        # 3 significant digits, of rates of 4.
        assert math.isclose(ratio, ours / theirs, rel_tol=8e-3), (work, peer, ratio, ours, theirs)


def peer_keys(table):
    return sorted((work, dtype, n, peer) for work, dtype, n, _u, _o, peer, _t, _r in table)


# ---- the tests ---------------------------------------------------------------------------------

def peers_gemm_adds_blas_rows_and_ratios(a):
    """gemm --peers: NumPy's BLAS ("blas") joins the CSV beside clops and CLBlast, and the Peers
    table gives clops/peer for both, as the CSV's rates say."""
    need_numpy()
    out = os.path.join(a.work, "gemm.csv")
    result = run([a.bench, "gemm", "--sizes", "64,96", "--reps", "2", "--no-cold", "--peers",
                  "--csv", out])
    rows = read_csv(out)
    sizes, dtypes = (64, 96), ("f32", "f64")
    check_rows(rows, "gemm", [("gemm", d, i, n) for d in dtypes for n in sizes
                              for i in ("clops", "clblast", "blas")], gemm_rate)
    table = peers_table(result.stdout)
    assert peer_keys(table) == sorted(("gemm", d, n, p) for d in dtypes for n in sizes
                                      for p in ("clblast", "blas")), table
    check_ratios(table, rows)


def peers_lu_and_memory_add_lapack_and_numpy_rows(a):
    """lu and memory --peers: LAPACK's getrf and gesv through SciPy and NumPy, NumPy's reductions,
    transpose and the copy a transpose is judged against; an op without a peer (transpose in
    place) is in the table with "-"."""
    need_numpy()
    lu_csv, memory_csv = os.path.join(a.work, "lu.csv"), os.path.join(a.work, "memory.csv")
    result = run([a.bench, "lu", "--sizes", "64", "--reps", "1", "--peers", "--csv", lu_csv])
    rows = read_csv(lu_csv)
    check_rows(rows, "lu", [(op, d, i, 64) for op in RHS for d in ("f32", "f64")
                            for i in ("clops", "lapack")], lu_rate)
    table = peers_table(result.stdout)
    assert peer_keys(table) == sorted((op, d, 64, "lapack") for op in RHS
                                      for d in ("f32", "f64")), table
    check_ratios(table, rows)

    result = run([a.bench, "memory", "--reduce-size", "4096", "--transpose-size", "67", "--reps",
                  "2", "--peers", "--csv", memory_csv])
    rows = read_csv(memory_csv)
    reduce_ops = ["reduce " + w for w in
                  ("sum", "max", "norm2", "argmax", "sum axis 1", "sum axis 0")]
    element = {"f32": 4, "f64": 8}

    def memory_rate(r):
        n, ms = int(r["n"]), float(r["time_ms"])
        if r["op"].startswith("reduce"):
            return 4 * n / (ms * 1e6)
        return 2 * n * n * element[r["dtype"]] / (ms * 1e6)

    check_rows(rows, "memory",
               [(op, "f32", i, 4096) for op in reduce_ops for i in ("clops", "numpy")] +
               [(op, d, i, 67) for op in ("transpose", "device copy") for d in ("f32", "f64")
                for i in ("clops", "numpy") if (op, i) != ("device copy", "clops")] +
               [("transpose in place", "f32", "clops", 67)], memory_rate)
    table = peers_table(result.stdout)
    assert peer_keys(table) == sorted(
        [(op, "f32", 4096, "numpy") for op in reduce_ops] +
        [("transpose", d, 67, p) for d in ("f32", "f64") for p in ("numpy", "numpy device copy")] +
        [("transpose in place", "f32", 67, "-")]), table
    check_ratios(table, rows)


def peers_without_numpy_or_python_is_a_line_and_exit_0(a):
    """--peers where the python3 cannot import NumPy (hidden by a module on PYTHONPATH that fails
    to import), or where there is no python3 at all: a line says why, CLBlast is still the peer
    in the table, the CSV has no other peer, and the exit status is 0. A peers.py that fails (a
    "python3" that exits 1) is exit 5, said on stderr, the table still printed."""
    shadow = os.path.join(a.work, "shadow", "numpy")
    os.makedirs(shadow)
    with open(os.path.join(shadow, "__init__.py"), "w", encoding="utf-8") as file:
        file.write('raise ImportError("hidden by test_peers.py")\n')
    missing = "/nonexistent/python3"
    for env, why in (({"PYTHONPATH": os.path.dirname(shadow)}, "numpy is not importable"),
                     ({"CLOPS_PYTHON": missing}, f"cannot run '{missing}'")):
        out = os.path.join(a.work, "gemm.csv")
        result = run([a.bench, "--sizes", "64", "--reps", "1", "--no-cold", "--peers", "--csv",
                      out], env)
        assert why in result.stdout, result.stdout
        rows = read_csv(out)
        check_rows(rows, "gemm", [("gemm", d, i, 64) for d in ("f32", "f64")
                                  for i in ("clops", "clblast")], gemm_rate)
        table = peers_table(result.stdout)
        assert peer_keys(table) == [("gemm", "f32", 64, "clblast"),
                                    ("gemm", "f64", 64, "clblast")], table
        check_ratios(table, rows)

    result = run([a.bench, "--sizes", "64", "--reps", "1", "--no-cold", "--peers"],
                 {"CLOPS_PYTHON": shutil.which("false")}, expect=5)
    assert "peers.py failed (exit 1): no peers' rows" in result.stderr, result.stderr
    assert peer_keys(peers_table(result.stdout)) == [("gemm", "f32", 64, "clblast"),
                                                     ("gemm", "f64", 64, "clblast")]


def gemm_precision_writes_a_row_per_mode(a):
    """--precision fp32,3xtf32,tf32: three clops rows per size for f32 (gemm, gemm 3xtf32, gemm
    tf32; each checked against the host's product, or the run fails), CLBlast beside fp32; a list
    without fp32 leaves f32's row against CLBlast out; an unknown mode is a usage error."""
    out = os.path.join(a.work, "gemm.csv")
    result = run([a.bench, "--sizes", "64,96", "--reps", "1", "--no-cold", "--precision",
                  "fp32,3xtf32,tf32", "--csv", out])
    modes = ("gemm", "gemm 3xtf32", "gemm tf32")
    check_rows(read_csv(out), "gemm",
               [(op, "f32", "clops", n) for op in modes for n in (64, 96)] +
               [("gemm", "f32", "clblast", n) for n in (64, 96)] +
               [("gemm", "f64", i, n) for i in ("clops", "clblast") for n in (64, 96)], gemm_rate)
    for mode in ("3xtf32", "tf32"):
        for n in (64, 96):
            assert re.search(rf"^f32 {mode} +{n} ", result.stdout, re.MULTILINE), result.stdout

    run([a.bench, "--sizes", "64", "--reps", "1", "--no-cold", "--precision", "tf32", "--csv",
         out])
    check_rows(read_csv(out), "gemm",
               [("gemm tf32", "f32", "clops", 64)] +
               [("gemm", "f64", i, 64) for i in ("clops", "clblast")], gemm_rate)

    result = run([a.bench, "--precision", "fp16"], expect=2)
    assert "--precision wants fp32, 3xtf32 or tf32" in result.stderr, result.stderr


def host_operands_write_host_rows(a):
    """--host: gemm and lu time the same calls on host arrays, rows with " host" ops, shown in
    the Peers table against clops' own call on device operands."""
    gemm_csv, lu_csv = os.path.join(a.work, "gemm.csv"), os.path.join(a.work, "lu.csv")
    dtypes = ("f32", "f64")
    result = run([a.bench, "--sizes", "64", "--reps", "1", "--no-cold", "--host", "--csv",
                  gemm_csv])
    check_rows(read_csv(gemm_csv), "gemm",
               [(op, d, "clops", 64) for op in ("gemm", "gemm host") for d in dtypes] +
               [("gemm", d, "clblast", 64) for d in dtypes], gemm_rate)
    assert re.search(r"^f64 host operands +64 ", result.stdout, re.MULTILINE), result.stdout

    result = run([a.bench, "lu", "--sizes", "64", "--reps", "1", "--host", "--peers", "--csv",
                  lu_csv])
    rows = [r for r in read_csv(lu_csv) if r["impl"] == "clops"]
    check_rows(rows, "lu", [(op + suffix, d, "clops", 64) for op in RHS for d in dtypes
                            for suffix in ("", " host")], lu_rate)
    assert "The same with the operands in host memory" in result.stdout, result.stdout
    table = [row for row in peers_table(result.stdout) if row[0].endswith(" host")]
    assert peer_keys(table) == sorted((op + " host", d, 64, "clops, device operands")
                                      for op in RHS for d in dtypes), table
    check_ratios(table, rows)


def mandelbrot_peers_add_the_seed_row(a):
    """mandelbrot --peers: the seed's kernel on the same device and view, a row of impl "seed"
    whose iterations are those of the same image (the seed's counts agree with clops' at nearly
    every pixel), and clops / seed printed and in the Peers table."""
    out = os.path.join(a.work, "mandelbrot.csv")
    result = run([a.bench, "mandelbrot", "--size", "67", "--max-iterations", "64", "--no-split",
                  "--reps", "1", "--peers", "--csv", out])
    rows = read_csv(out)
    check_rows(rows, "mandelbrot", [("whole set", "f32", i, 67) for i in ("clops", "seed")],
               lambda r: None)
    iterations = {r["impl"]: float(r["rate"]) * float(r["time_ms"]) * 1e-3 for r in rows}
    assert math.isclose(iterations["seed"], iterations["clops"], rel_tol=0.02), iterations
    assert re.search(r"^the seed's kernel +- +[0-9.]+ ", result.stdout, re.MULTILINE), \
        result.stdout
    match = re.search(r"^clops / seed: ([0-9.]+) .* at ([0-9.]+)% of the pixels$", result.stdout,
                      re.MULTILINE)
    assert match and float(match.group(1)) > 0 and float(match.group(2)) > 90, result.stdout
    table = peers_table(result.stdout)
    assert peer_keys(table) == [("whole set", "f32", 67, "seed")], table
    check_ratios(table, rows)


def mandelbrot_deep_on_device_writes_deep_rows(a):
    """mandelbrot --deep-on-device: part 2's three runs render into a device buffer, are checked
    against the host (the bench exits 1 on a wrong count), and write three "deep zoom" rows of
    the same image (the same iterations); without the option they go into host memory."""
    for on_device in (True, False):
        out = os.path.join(a.work, f"deep-{on_device}.csv")
        result = run([a.bench, "mandelbrot", "--size", "33", "--max-iterations", "16",
                      "--deep-size", "65", "--deep-max-iterations", "64", "--reps", "1", "--csv",
                      out] + (["--deep-on-device"] if on_device else []))
        where = "a device buffer" if on_device else "host memory"
        assert f"f64, maxit 64, counts into {where}, tile" in result.stdout, result.stdout
        rows = [r for r in read_csv(out) if r["op"].startswith("deep zoom")]
        assert sorted(r["op"] for r in rows) == ["deep zoom CPU alone", "deep zoom GPU + CPU",
                                                  "deep zoom GPU alone"], rows
        assert all(int(r["n"]) == 65 and r["dtype"] == "f64" for r in rows), rows
        iterations = [float(r["rate"]) * float(r["time_ms"]) * 1e-3 for r in rows]
        assert all(math.isclose(i, iterations[0], rel_tol=1e-4) for i in iterations), iterations


if __name__ == "__main__":
    testlib.run((peers_gemm_adds_blas_rows_and_ratios,
                 peers_lu_and_memory_add_lapack_and_numpy_rows,
                 peers_without_numpy_or_python_is_a_line_and_exit_0,
                 gemm_precision_writes_a_row_per_mode,
                 host_operands_write_host_rows,
                 mandelbrot_peers_add_the_seed_row,
                 mandelbrot_deep_on_device_writes_deep_rows))
