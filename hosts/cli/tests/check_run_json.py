"""check_run_json.py CLOPS SCHEMA_DIR TESTS_DIR WORK_DIR — `clops run --json` validated against
docs/schema/clops-run.schema.json, strictly (check_json.py's strict(): every member the output
has must be one the schema documents), on a real run of a tiny sweep (run_json.cfg), on
--dry-run, on a sweep with a failing run and on an invalid file; then the values: the number
of runs and their values, the output files' sizes and SHA-256 against Python's hashlib of the
files, the checks' pass flags, LAPACK's info, the compile time apart from the calls' times, the
exit codes. Exits 1 on any failure, jsonschema missing included (Debian: python3-jsonschema)."""
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_json  # noqa: E402  (its strict() and validate(), and its failure list)

check = check_json.check


def run_json(clops, *args, rc=0):
    """The document `clops run --json args...` prints, and its stderr."""
    proc = subprocess.run([clops, "run", "--json", *args], capture_output=True, text=True,
                          timeout=600)
    check(proc.returncode == rc,
          f"clops run --json {' '.join(args)} exited with {proc.returncode}, expected {rc}: "
          f"{proc.stderr}")
    try:
        return json.loads(proc.stdout), proc.stderr
    except json.JSONDecodeError as error:
        check(False, f"clops run --json {' '.join(args)}: stdout is not one JSON document "
                     f"({error}): {proc.stdout[:400]!r}")
        return None, proc.stderr


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_real_run(doc, out, prebuilt=False):
    check(doc["status"] == "ok" and doc["exit_code"] == 0 and doc["error"] is None,
          f"run: ok, exit 0, no error: {doc['status']}, {doc['exit_code']}, {doc['error']}")
    check(doc["dry_run"] is False, "run: not a dry run")
    check(doc["sweep"] == {"params": ["n"], "run_count": 2}, f"run: the sweep over n: {doc['sweep']}")
    runs = doc["runs"]
    check(len(runs) == 2, f"run: 2 runs, not {len(runs)}")
    check(len(doc["pools"]) == 1 and doc["pools"][0]["error"] is None
          and len(doc["pools"][0]["devices"]) >= 1,
          f"run: the runs share one pool, with its devices: {doc['pools']}")
    for index, (run, n) in enumerate(zip(runs, (8, 12))):
        what = f"run {index}"
        check(run["index"] == index and run["values"] == {"n": n} and run["label"] == f"n={n}",
              f"{what}: index, values and label of n = {n}: {run['index']}, {run['values']}, "
              f"{run['label']}")
        check(run["status"] == "ok" and run["exit_code"] == 0 and run["error"] is None
              and run["pool"] == 0 and run["time_ms"] > 0, f"{what}: ran fine on pool 0: {run}")
        gemm, lu = run["steps"]
        check(gemm["operator"] == "gemm" and gemm["status"] == "ok" and gemm["repeat"] == 3
              and gemm["devices"] == [0], f"{what}: gemm ran 3 times on device 0: {gemm}")
        check(gemm["args"] == {"a": "A", "b": "B", "c": "C"}
              and gemm["shapes"] == {"a": [n, n], "b": [n, n], "c": [n, n]},
              f"{what}: gemm's arguments and their shapes: {gemm['args']}, {gemm['shapes']}")
        times = gemm["times_ms"]
        check(len(times) == 3 and gemm["best_ms"] == min(times)
              and gemm["median_ms"] == sorted(times)[1],
              f"{what}: gemm's best and median are those of its 3 calls: {gemm}")
        check(gemm["rate"] is not None and gemm["rate"]["unit"] == "GFLOP/s"
              and abs(gemm["rate"]["value"] - 2 * n**3 / (gemm["best_ms"] * 1e-3) / 1e9)
              <= 1e-9 * gemm["rate"]["value"],
              f"{what}: gemm's rate is 2n^3 flops over the best call: {gemm['rate']}")
        check(gemm["info"] is None, f"{what}: gemm has no info")
        # The pool is new in run 0: with --no-prebuild its first gemm builds (or loads from the
        # cache) its kernels, which takes time, kept apart from the calls'; by default they were
        # built before the first step, and no call builds any. Run 1 reuses the pool.
        if index == 0 and not prebuilt:
            check(gemm["compile_ms"] is not None and gemm["compile_ms"] > 0,
                  f"{what}: gemm's first call built its kernels: compile_ms {gemm['compile_ms']}")
        if prebuilt:
            check(all(s["compile_ms"] == 0 for s in run["steps"]),
                  f"{what}: kernels built before the steps, none in them: "
                  f"{[s['compile_ms'] for s in run['steps']]}")
        check(gemm["compile_ms"] is not None and gemm["compile_ms"] >= 0,
              f"{what}: a compile time: {gemm['compile_ms']}")
        check(lu["info"] == {"value": 2, "meaning": "U(2,2) is exactly zero (singular)"},
              f"{what}: lu's info is 2, singular: {lu['info']}")
        check(lu["shapes"] == {"a": [3, 3], "ipiv": [3], "info": [1]},
              f"{what}: lu's shapes: {lu['shapes']}")
        check([c["pass"] for c in run["checks"]] == [True] and run["checks"][0]["ran"]
              and run["checks"][0]["kind"] == "gemm_reference"
              and run["checks"][0]["error"] <= run["checks"][0]["tolerance"],
              f"{what}: the gemm check ran and passed: {run['checks']}")
        check([t["name"] for t in run["tensors"]] == ["A", "B", "C", "S", "piv", "info"],
              f"{what}: the tensors in order: {run['tensors']}")
        a = run["tensors"][0]
        check(a["shape"] == [n, n] and a["dtype"] == "f64" and a["bytes"] == 8 * n * n
              and a["init"] == "random" and a["seed"] == 1,
              f"{what}: tensor A: {a}")
        check(run["tensors"][3]["init"] == "file"
              and run["tensors"][3]["file"].endswith("data/singular3.mtx"),
              f"{what}: tensor S is read from its file: {run['tensors'][3]}")
        names = [f"c-n={n}.npy", f"lu-n={n}.npy"]
        check([o["file"] for o in run["outputs"]] == names, f"{what}: outputs {names}")
        for output in run["outputs"]:
            path = output["path"]
            check(output["written"] and os.path.isfile(path)
                  and path == os.path.join(out, output["file"]),
                  f"{what}: {output['file']} written under --output-dir: {output}")
            if os.path.isfile(path):
                check(output["bytes"] == os.path.getsize(path),
                      f"{what}: {path}: bytes {output['bytes']}, the file has "
                      f"{os.path.getsize(path)}")
                check(output["sha256"] == sha256_of(path),
                      f"{what}: {path}: sha256 {output['sha256']}, hashlib's {sha256_of(path)}")


def check_dry_run(doc, out):
    check(doc["status"] == "ok" and doc["dry_run"] is True and doc["pools"] == [],
          f"dry run: ok, no pool: {doc['status']}, {doc['pools']}")
    runs = doc["runs"]
    check([r["values"] for r in runs] == [{"n": 8}, {"n": 12}], f"dry run: 2 runs over n: {runs}")
    for run in runs:
        n = run["values"]["n"]
        check(run["status"] == "planned" and run["exit_code"] is None and run["time_ms"] is None,
              f"dry run: run {run['index']} is planned: {run['status']}")
        check([s["status"] for s in run["steps"]] == ["not_run", "not_run"]
              and all(s["times_ms"] == [] and s["best_ms"] is None and s["compile_ms"] is None
                      for s in run["steps"]),
              f"dry run: nothing ran: {run['steps']}")
        check(run["steps"][0]["args"] == {"a": "A", "b": "B", "c": "C"}
              and run["steps"][0]["repeat"] == 3, f"dry run: gemm's arguments: {run['steps'][0]}")
        check([c["ran"] for c in run["checks"]] == [False] and run["checks"][0]["pass"] is None,
              f"dry run: the check did not run: {run['checks']}")
        check([(o["file"], o["written"], o["sha256"]) for o in run["outputs"]]
              == [(f"c-n={n}.npy", False, None), (f"lu-n={n}.npy", False, None)],
              f"dry run: the outputs planned, not written: {run['outputs']}")
        check(run["tensors"][2]["shape"] == [n, n] and run["tensors"][2]["bytes"] == 8 * n * n,
              f"dry run: C is n x n: {run['tensors'][2]}")
    check(not os.path.exists(os.path.join(out, "c-n=8.npy")), "dry run: nothing written")


def check_failing_sweep(doc, stderr):
    expected = "sweep_failing.cfg: 1 of 3 runs failed: run 1 (tol=1e-30)"
    check(doc["status"] == "failed" and doc["exit_code"] == 1 and expected in (doc["error"] or ""),
          f"failing sweep: failed, exit 1, naming run 1: {doc['status']}, {doc['error']}")
    check(expected in stderr, f"failing sweep: stderr still names the failed run: {stderr}")
    statuses = [(r["status"], r["exit_code"]) for r in doc["runs"]]
    check(statuses == [("ok", 0), ("failed", 1), ("ok", 0)], f"failing sweep: {statuses}")
    failed = doc["runs"][1]
    check(failed["error"] == "run 1 (tol=1e-30): 1 of 1 checks failed; outputs not written",
          f"failing sweep: run 1's message: {failed['error']}")
    check([c["pass"] for c in failed["checks"]] == [False], "failing sweep: run 1's check failed")
    check([c["pass"] for c in doc["runs"][0]["checks"]] == [True], "failing sweep: run 0's passed")
    check([o["written"] for o in failed["outputs"]] == [False]
          and [o["written"] for o in doc["runs"][2]["outputs"]] == [True],
          "failing sweep: run 1 wrote nothing, run 2 its file")


def main():
    clops, schema_dir, tests, work = sys.argv[1:5]
    with open(os.path.join(schema_dir, "clops-run.schema.json")) as f:
        schema = json.load(f)
    check_json.jsonschema.Draft202012Validator.check_schema(schema)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "out")
    pipeline = os.path.join(tests, "run_json.cfg")

    dry, _ = run_json(clops, "--dry-run", "--output-dir", out, pipeline)
    if dry is not None:
        check_json.validate(dry, schema, "clops run --json --dry-run run_json.cfg")
        check_dry_run(dry, out)

    real, _ = run_json(clops, "--no-prebuild", "--output-dir", out, pipeline)
    if real is not None:
        check_json.validate(real, schema, "clops run --json --no-prebuild run_json.cfg")
        check_real_run(real, out)

    prebuilt, _ = run_json(clops, "--output-dir", out, pipeline)
    if prebuilt is not None:
        check_json.validate(prebuilt, schema, "clops run --json run_json.cfg")
        check_real_run(prebuilt, out, prebuilt=True)

    failing, stderr = run_json(clops, "--output-dir", os.path.join(work, "failing"),
                               os.path.join(tests, "sweep_failing.cfg"), rc=1)
    if failing is not None:
        check_json.validate(failing, schema, "clops run --json sweep_failing.cfg")
        check_failing_sweep(failing, stderr)

    invalid, stderr = run_json(clops, "--output-dir", os.path.join(work, "invalid"),
                               os.path.join(tests, "sweep_invalid.cfg"), rc=4)
    if invalid is not None:
        check_json.validate(invalid, schema, "clops run --json sweep_invalid.cfg")
        check(invalid["status"] == "invalid" and invalid["exit_code"] == 4 and invalid["runs"] == []
              and "1 of 4 runs are invalid (2); nothing was run" in (invalid["error"] or ""),
              f"invalid sweep: invalid, exit 4, no runs, the count: {invalid['error']}")
        check("division by zero" in stderr, "invalid sweep: the problems stay on stderr")

    # A usage error prints no document (docs/json.md), as ops and devices do.
    proc = subprocess.run([clops, "run", "--json", "--set", "tensors.NOPE.shape=[1]", pipeline],
                          capture_output=True, text=True, timeout=600)
    check(proc.returncode == 2 and proc.stdout == "",
          f"usage error: exit 2 and nothing on stdout: {proc.returncode}, {proc.stdout!r}")

    # The validator is live: a run less its status, or an output with a malformed checksum, fails.
    if real is not None:
        broken = copy.deepcopy(real)
        del broken["runs"][0]["status"]
        bad_sum = copy.deepcopy(real)
        bad_sum["runs"][0]["outputs"][0]["sha256"] = "ABC"
        for document, what in ((broken, "a run less its status"),
                               (bad_sum, "a malformed sha256")):
            strict = check_json.strict(schema)
            errors = list(check_json.jsonschema.Draft202012Validator(strict).iter_errors(document))
            check(errors, f"the schema rejects {what}")

    return check_json.finish("clops run --json (a sweep, --dry-run, a failing run, an invalid file) "
                             "matches docs/schema/clops-run.schema.json")


if __name__ == "__main__":
    sys.exit(main())
