#!/usr/bin/env python3
"""test_progress.py: ctest's checks of what clops-bench reports as it measures, and of the units
its tables print rates in.

    python3 test_progress.py --bench CLOPS_BENCH --work DIR TEST

TEST is one of the functions below. clops-bench runs on the default pool's device (PoCL in CI:
a CPU device, whose GEMM runs at some GFLOP/s). A failure is an AssertionError, exit 1.
"""

import os
import pty
import re
import subprocess

from test_chart import read_csv
import testlib

# The units a table may print FLOP/s in, the largest first, and their size.
FLOP_UNITS = (("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6))
# "clops-bench: [4/8 0:01] f32 N=256 host operands: 3.934 ms, 8.53 GFLOP/s"
LINE = re.compile(r"^clops-bench: \[(\d+)/(\d+) \d+:\d\d\] (f32|f64) N=(\d+)( host operands)?: "
                  r"(.*)$")
RATE = re.compile(r"[0-9.]+(?:e[-+]\d+)? ([TGM]FLOP/s)")


def unit_for(rate):
    """The largest unit in which `rate` (FLOP/s) reads 1 or more, as clops-bench chooses."""
    return next((name for name, size in FLOP_UNITS if rate >= size), FLOP_UNITS[-1][0])


def gemm_table(stdout):
    """The first table's header cells and rows, split at runs of two blanks or more."""
    lines = stdout.split("\ndtype ", 1)[1].splitlines()
    header = re.split(r"\s{2,}", ("dtype " + lines[0]).strip())
    assert set(lines[1]) == {"-"}, lines[1]
    rows = []
    for line in lines[2:]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return header, rows


def each_measurement_is_a_stderr_line_and_cpu_rates_read_gflops(a):
    """gemm at tiny sizes, stdout and stderr into files: stderr holds one line per measurement
    (size, dtype, variant), numbered 1 to 8 of 8 in the order they ran, each with its time and
    rate, as many as the CSV has clops rows and nothing else; stdout holds the tables and no
    progress line. The table names its rate unit in the header, the one that suits its largest
    rate (GFLOP/s on a CPU device, where TFLOP/s would print 0.00x), and its cells are the CSV's
    rates, which stay in TFLOP/s."""
    out_csv = os.path.join(a.work, "gemm.csv")
    out_path, err_path = os.path.join(a.work, "stdout"), os.path.join(a.work, "stderr")
    with open(out_path, "w", encoding="utf-8") as out, \
            open(err_path, "w", encoding="utf-8") as err:
        status = subprocess.run([a.bench, "--sizes", "64,256", "--reps", "1", "--no-cold",
                                 "--host", "--csv", out_csv], stdout=out, stderr=err,
                                timeout=800).returncode
    with open(out_path, encoding="utf-8") as out, open(err_path, encoding="utf-8") as err:
        stdout, stderr = out.read(), err.read()
    assert status == 0, f"exit {status}\nstdout:\n{stdout}\nstderr:\n{stderr}"

    lines = stderr.splitlines()
    matches = [LINE.match(line) for line in lines]
    assert all(matches), f"stderr has lines that are not progress lines:\n{stderr}"
    expected = [(d, n, host) for d in ("f32", "f64") for n in (64, 256) for host in (False, True)]
    got = [(m.group(3), int(m.group(4)), m.group(5) is not None) for m in matches]
    assert got == expected, f"measurements {got}, expected {expected}"
    assert [(int(m.group(1)), int(m.group(2))) for m in matches] == \
        [(k, len(expected)) for k in range(1, len(expected) + 1)], stderr
    for m in matches:
        figures = m.group(6)
        assert re.search(r"\d\.\d+ ms", figures), figures
        # Against CLBlast: clops' and CLBlast's rates; on host operands: clops' alone.
        assert len(RATE.findall(figures)) == (1 if m.group(5) else 2), figures
    clops_rows = [r for r in read_csv(out_csv) if r["impl"] == "clops"]
    assert len(clops_rows) == len(lines), (len(clops_rows), len(lines))
    assert "clops-bench: [" not in stdout, stdout

    rows = read_csv(out_csv)
    assert all(r["unit"] == "TFLOP/s" for r in rows), rows
    table = [r for r in rows if r["op"] == "gemm"]
    unit = unit_for(max(float(r["rate"]) for r in table) * 1e12)
    size = dict(FLOP_UNITS)[unit]
    header, cells = gemm_table(stdout)
    assert header[3] == f"clops {unit}" and header[5] == f"CLBlast {unit}", (header, unit)
    # PoCL names its CPU devices pthread-<CPU>: there, N = 256 runs at some GFLOP/s.
    assert unit == "GFLOP/s" or "device: pthread-" not in stdout, \
        f"a CPU device's GEMM at N = 256 prints {unit}:\n{stdout}"
    rate = {(r["dtype"], int(r["n"]), r["impl"]): float(r["rate"]) * 1e12 for r in table}
    for row in cells:
        for impl, column in (("clops", 3), ("clblast", 5)):
            want = rate[(row[0], int(row[1]), impl)] / size
            assert abs(float(row[column]) - want) <= 0.006 * want, (row, impl, want)


def read_terminal(master):
    """Everything written to the pseudo-terminal whose master side is `master`, until every
    writer has closed its side (the program has exited)."""
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: no writer is left
            chunk = b""
        if not chunk:
            return data.decode("utf-8")
        data += chunk


def a_terminal_shows_one_line_rewritten_in_place(a):
    """lu with stderr on a terminal (a pseudo-terminal) and stdout in a file: stderr is one line,
    drawn again at each measurement's start and end ("\\r" and an erase), with a bar that is
    full at the end, and ended by one line break; the table is in the file."""
    out_path = os.path.join(a.work, "stdout")
    master, slave = pty.openpty()
    with open(out_path, "w", encoding="utf-8") as out:
        process = subprocess.Popen([a.bench, "lu", "--sizes", "67", "--reps", "1"], stdout=out,
                                   stderr=slave, env=dict(os.environ, COLUMNS="200"))
        os.close(slave)
        text = read_terminal(master)
        status = process.wait(timeout=800)
    os.close(master)
    with open(out_path, encoding="utf-8") as out:
        stdout = out.read()
    assert status == 0, f"exit {status}\nstdout:\n{stdout}\nterminal:\n{text!r}"
    # The terminal turns "\n" into "\r\n".
    assert text.endswith("\r\n") and text.count("\n") == 1, repr(text)
    draws = text[:-2].split("\r\033[K")
    assert draws[0] == "", repr(text)
    draws = draws[1:]
    # Six measurements (lu, solve 1 RHS, solve 64 RHS in f32 and f64), each drawn as it starts
    # and as it ends.
    assert len(draws) == 12, draws
    assert draws[0].startswith("[....................] [1/6 ") and draws[0].endswith(" ..."), draws
    assert draws[-1].startswith("[####################] [6/6 "), draws
    assert re.search(r"f64 N=67 solve 64 RHS: [0-9.]+ ms, [0-9.]+ [TGM]FLOP/s$", draws[-1]), draws
    assert "lu ms" in stdout and "[6/6" not in stdout, stdout


if __name__ == "__main__":
    testlib.run((each_measurement_is_a_stderr_line_and_cpu_rates_read_gflops,
                 a_terminal_shows_one_line_rewritten_in_place))
