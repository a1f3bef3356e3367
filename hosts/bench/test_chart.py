#!/usr/bin/env python3
"""test_chart.py: ctest's checks of clops-bench --csv and --chart, and of chart.py.

    python3 test_chart.py --bench CLOPS_BENCH --script CHART_PY --work DIR TEST

TEST is one of the functions named in TESTS. clops-bench runs on the default pool's device
(PoCL on the development machine) with CLOPS_PYTHON set to this python3. A test that draws
prints "SKIPPED: matplotlib is not installed" and exits 0 where this python3 has no matplotlib
(ctest's SKIP_REGULAR_EXPRESSION); every other failure is an AssertionError, exit 1.
"""

import csv
import math
import os
import re
import struct
import subprocess
import sys
import testlib

COLUMNS = ["area", "op", "dtype", "impl", "n", "n_unit", "time_ms", "rate", "unit", "device",
           "date"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# chart.py's default: 640 x 480 pixels per subplot, two subplots a row.
SUBPLOT_WIDTH, SUBPLOT_HEIGHT = 640, 480


def run(args, env_extra=None, expect=0):
    env = dict(os.environ, CLOPS_PYTHON=sys.executable)
    env.update(env_extra or {})
    result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=800)
    assert result.returncode == expect, (
        f"{' '.join(args)}: exit {result.returncode}, expected {expect}\n"
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def need_matplotlib():
    try:
        import matplotlib.image  # noqa: F401
    except ImportError:
        print(f"SKIPPED: matplotlib is not installed for {sys.executable} "
              "(Debian/Ubuntu: python3-matplotlib)")
        sys.exit(0)


# ---- the CSV -----------------------------------------------------------------------------------

def read_csv(path):
    with open(path, newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        header = next(reader)
        assert header == COLUMNS, f"{path}: header {header}, expected {COLUMNS}"
        return [dict(zip(header, row)) for row in reader]


def device_line(stdout):
    """The device's name as the area's header printed it: 'device: NAME (...'."""
    match = re.search(r"^(?:device|  device 0): (.*) \(", stdout, re.MULTILINE)
    assert match, f"no device line in:\n{stdout}"
    return match.group(1)


def check_rows(rows, area, expected, rate_of):
    """`rows` are exactly the (op, dtype, impl, n) of `expected`, each once, with positive times
    and rates, and a rate that is rate_of(row) from its own time (6 significant digits)."""
    keys = [(r["op"], r["dtype"], r["impl"], int(r["n"])) for r in rows]
    assert sorted(keys) == sorted(expected), f"rows {sorted(keys)}, expected {sorted(expected)}"
    for r in rows:
        assert r["area"] == area, r
        time_ms, rate = float(r["time_ms"]), float(r["rate"])
        assert math.isfinite(time_ms) and time_ms > 0, r
        assert math.isfinite(rate) and rate > 0, r
        want = rate_of(r)
        if want is not None:
            assert abs(rate - want) <= 1e-4 * want, f"rate {rate}, expected {want} from {r}"
        assert r["device"], r
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["date"]), r


# ---- the PNG -----------------------------------------------------------------------------------

def check_png(path, width, height):
    """A PNG of width x height pixels (its signature and IHDR) with a picture in it: many
    colours (antialiased lines and text), and neither blank nor filled."""
    with open(path, "rb") as file:
        head = file.read(24)
    assert head[:8] == PNG_SIGNATURE, f"{path}: not a PNG (signature {head[:8]!r})"
    assert head[12:16] == b"IHDR", f"{path}: the first chunk is {head[12:16]!r}, not IHDR"
    size = struct.unpack(">II", head[16:24])
    assert size == (width, height), f"{path}: {size[0]} x {size[1]}, expected {width} x {height}"
    import matplotlib.image
    import numpy

    pixels = matplotlib.image.imread(path)
    assert pixels.shape[:2] == (height, width), pixels.shape
    rgb = (pixels[:, :, :3] * 255).round().astype(numpy.uint8).reshape(-1, 3)
    colours = len(numpy.unique(rgb, axis=0))
    assert colours > 16, f"{path}: {colours} colours: a blank picture"
    inked = float((rgb.min(axis=1) < 200).mean())
    assert 0.005 < inked < 0.5, f"{path}: {inked:.1%} of the pixels are not white"
    return rgb


def has_colour(rgb, colour):
    import numpy

    return bool((rgb == numpy.array(colour, dtype=numpy.uint8)).all(axis=1).any())


# ---- the tests ---------------------------------------------------------------------------------

def gemm_writes_csv_rows_and_chart(a):
    """clops-bench --csv --chart (gemm, the test of the issue): 8 rows, and a 2-subplot chart."""
    need_matplotlib()
    out_csv, out_png = os.path.join(a.work, "gemm.csv"), os.path.join(a.work, "gemm.png")
    result = run([a.bench, "--sizes", "67,130", "--reps", "1", "--no-cold", "--csv", out_csv,
                  "--chart", out_png])
    assert f"chart: {out_png} (8 results, drawn by " in result.stdout, result.stdout
    rows = read_csv(out_csv)
    expected = [("gemm", d, i, n) for d in ("f32", "f64") for i in ("clops", "clblast")
                for n in (67, 130)]
    check_rows(rows, "gemm", expected,
               lambda r: 2 * int(r["n"]) ** 3 / (float(r["time_ms"]) * 1e9))
    device = device_line(result.stdout)
    assert all(r["device"] == device and r["unit"] == "TFLOP/s" and
               r["n_unit"] == "matrix order" for r in rows), rows
    check_png(out_png, 2 * SUBPLOT_WIDTH, SUBPLOT_HEIGHT)


def every_area_writes_csv_rows(a):
    """lu, memory and mandelbrot write their rows; lu draws its chart; chart.py draws the three
    files in one picture (7 subplots: memory's two kinds of n apart)."""
    need_matplotlib()
    path = {area: os.path.join(a.work, f"{area}.csv") for area in ("lu", "memory", "mandelbrot")}
    lu_png, all_png = os.path.join(a.work, "lu.png"), os.path.join(a.work, "areas.png")
    run([a.bench, "lu", "--sizes", "67,130", "--reps", "1", "--csv", path["lu"], "--chart",
         lu_png])
    run([a.bench, "memory", "--reduce-size", "4096", "--transpose-size", "67", "--reps", "2",
         "--csv", path["memory"]])
    run([a.bench, "mandelbrot", "--size", "67", "--max-iterations", "64", "--deep-size", "67",
         "--deep-max-iterations", "64", "--reps", "1", "--csv", path["mandelbrot"]])

    rhs = {"lu": 0, "solve 1 RHS": 1, "solve 64 RHS": 64}
    check_rows(read_csv(path["lu"]), "lu",
               [(op, d, "clops", n) for op in rhs for d in ("f32", "f64") for n in (67, 130)],
               lambda r: (2 / 3 * int(r["n"]) ** 3 + 2 * int(r["n"]) ** 2 * rhs[r["op"]])
               / (float(r["time_ms"]) * 1e9))
    check_png(lu_png, 2 * SUBPLOT_WIDTH, SUBPLOT_HEIGHT)

    reduce_ops = ["reduce " + w for w in
                  ("sum", "max", "norm2", "argmax", "sum axis 1", "sum axis 0")]
    element = {"f32": 4, "f64": 8}

    def memory_rate(r):
        n, ms = int(r["n"]), float(r["time_ms"])
        if r["op"].startswith("reduce"):
            return 4 * n / (ms * 1e6)
        return 2 * n * n * element[r["dtype"]] / (ms * 1e6)

    check_rows(read_csv(path["memory"]), "memory",
               [(op, "f32", "clops", 4096) for op in reduce_ops] +
               [("transpose", "f32", "clops", 67), ("transpose", "f64", "clops", 67),
                ("transpose in place", "f32", "clops", 67)], memory_rate)

    check_rows(read_csv(path["mandelbrot"]), "mandelbrot",
               [("whole set", "f32", "clops", 67)] +
               [(f"deep zoom {w}", "f64", "clops", 67)
                for w in ("GPU alone", "CPU alone", "GPU + CPU")], lambda r: None)

    run([sys.executable, a.script, path["lu"], path["memory"], path["mandelbrot"], all_png])
    check_png(all_png, 2 * SUBPLOT_WIDTH, 4 * SUBPLOT_HEIGHT)


def write_rows(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)


def chart_adds_peer_csv_deterministically(a):
    """chart.py adds a peer's file (only the required columns, a device name with a comma) to
    clops-bench's: the size asked for, the peer's line in its colour, the same bytes twice; and
    bad input is refused with the file, line and column named."""
    need_matplotlib()
    ours, peer = os.path.join(a.work, "ours.csv"), os.path.join(a.work, "peer.csv")
    sizes = (1024, 2048, 4096, 8192)
    write_rows(ours, COLUMNS,
               [("gemm", "gemm", d, impl, n, "matrix order", 1.0, rate * n / 8192, "TFLOP/s",
                 "NVIDIA H100 80GB HBM3", "2026-11-25T10:00:00Z")
                for d, scale in (("f32", 1.0), ("f64", 0.5))
                for impl, rate in (("clops", 40 * scale), ("clblast", 30 * scale))
                for n in sizes])
    write_rows(peer, ["area", "dtype", "impl", "n", "rate", "unit", "device"],
               [("gemm", d, "cublas", n, rate * n / 8192, "TFLOP/s", "H100, via cuBLAS")
                for d, rate in (("f32", 50.0), ("f64", 45.0)) for n in sizes])
    options = ["--width", "900", "--height", "700", "--dpi", "80"]
    both, again, alone = (os.path.join(a.work, f) for f in ("both.png", "again.png", "alone.png"))
    run([sys.executable, a.script, *options, ours, peer, both])
    run([sys.executable, a.script, *options, ours, peer, again])
    run([sys.executable, a.script, *options, ours, alone])
    with_peer, without_peer = check_png(both, 900, 700), check_png(alone, 900, 700)
    with open(both, "rb") as x, open(again, "rb") as y:
        assert x.read() == y.read(), "the same input drew two different PNGs"
    green = (0x2C, 0xA0, 0x2C)  # tab10's third colour: the third impl, cublas
    assert has_colour(with_peer, green), "the peer's line is not drawn"
    assert not has_colour(without_peer, green), "a third impl's colour without a peer"

    bad = os.path.join(a.work, "bad.csv")
    write_rows(bad, ["area", "dtype", "impl", "n", "unit"], [("gemm", "f32", "x", 64, "GB/s")])
    result = run([sys.executable, a.script, bad, os.path.join(a.work, "bad.png")], expect=1)
    assert "no column rate" in result.stderr, result.stderr
    write_rows(bad, ["area", "dtype", "impl", "n", "rate", "unit"],
               [("gemm", "f32", "x", 64, "1.5", "GB/s"), ("gemm", "f32", "x", 128, "-2", "GB/s")])
    result = run([sys.executable, a.script, bad, os.path.join(a.work, "bad.png")], expect=1)
    assert f"{bad}:3: rate '-2' is not a positive number" in result.stderr, result.stderr
    assert not os.path.exists(os.path.join(a.work, "bad.png"))
    run([sys.executable, a.script, ours], expect=2)


def chart_fails_clearly_without_matplotlib(a):
    """--chart without matplotlib (hidden by a module on PYTHONPATH that fails to import), or
    without python3, fails before anything is measured with exit 6 and says what is missing;
    an --csv file that cannot be created is exit 5."""
    shadow = os.path.join(a.work, "shadow", "matplotlib")
    os.makedirs(shadow)
    with open(os.path.join(shadow, "__init__.py"), "w", encoding="utf-8") as file:
        file.write('raise ImportError("hidden by test_chart.py")\n')
    hidden = {"PYTHONPATH": os.path.dirname(shadow)}
    png = os.path.join(a.work, "never.png")
    for area in ([], ["lu"], ["memory"], ["mandelbrot"]):
        result = run([a.bench, *area, "--chart", png], hidden, expect=6)
        assert "matplotlib is not installed" in result.stderr, result.stderr
        assert "python3-matplotlib" in result.stderr, result.stderr
        assert "Nothing was measured" in result.stderr, result.stderr
        assert result.stdout == "", f"measured anyway:\n{result.stdout}"
        assert not os.path.exists(png)

    missing = "/nonexistent/python3"
    result = run([a.bench, "--sizes", "67", "--chart", png], {"CLOPS_PYTHON": missing}, expect=6)
    assert f"cannot run '{missing}'" in result.stderr, result.stderr
    assert result.stdout == "", result.stdout

    result = run([a.bench, "--sizes", "67", "--csv", "/nonexistent/dir/x.csv"], expect=5)
    assert "cannot write the results to /nonexistent/dir/x.csv" in result.stderr, result.stderr


if __name__ == "__main__":
    testlib.run((gemm_writes_csv_rows_and_chart, every_area_writes_csv_rows,
                 chart_adds_peer_csv_deterministically,
                 chart_fails_clearly_without_matplotlib), "--script")
