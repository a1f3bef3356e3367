"""testlib.py — the command line the bench's Python tests share (test_chart.py, test_peers.py):
`TEST --bench PROGRAM --work DIR [--script FILE]`, each test run in a fresh DIR."""
import argparse
import os
import shutil


def run(tests, *options):
    """Runs the test of `tests` (functions by name) the command line names; `options` are the
    extra required options it takes besides --bench and --work."""
    table = {f.__name__: f for f in tests}
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--work", required=True)
    for option in options:
        parser.add_argument(option, required=True)
    parser.add_argument("test", choices=sorted(table))
    a = parser.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    table[a.test](a)
    print(f"{a.test}: ok")
