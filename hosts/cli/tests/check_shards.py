"""check_shards.py CLOPS CHECK_OUTPUTS SCHEMA_DIR TESTS_DIR WORK_DIR — `clops run --shard` and
`clops gather` on one machine: zoom_shards.cfg's 6 runs in 4 shards, each shard's manifest
against docs/schema/clops-shard.schema.json (strictly) and its files against hashlib, every frame
against the host's Mandelbrot reference (check_outputs), gather's text and JSON
(clops-gather.schema.json); a shard whose outputs are intact is skipped, a changed file and a
missing manifest are named by gather and re-running every shard recomputes those two alone; a
failing run (sweep_failing.cfg) is named, and the fixed file re-runs the set; --shard auto from
Open MPI's variables with the device it chose; the errors of --shard. Exits 1 on any failure."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_json  # noqa: E402

check = check_json.check
clops, check_outputs, schema_dir, tests, work = sys.argv[1:6]
SCALES = ["0.4", "0.1", "0.025", "0.00625", "0.0016", "0.0004"]
ENV = {k: v for k, v in os.environ.items()
       if not k.startswith(("SLURM_", "OMPI_", "PMI_", "PMIX_"))}


def run(*args, rc=0, env=None):
    proc = subprocess.run([clops, *args], capture_output=True, text=True, timeout=300,
                          env=env if env is not None else ENV)
    check(proc.returncode == rc, f"clops {' '.join(args)}: exit {proc.returncode}, expected {rc}:"
                                 f"\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")
    return proc


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def manifest(out, k, n):
    with open(os.path.join(out, ".clops", f"shard-{k}-of-{n}.json")) as f:
        return json.load(f)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    with open(os.path.join(schema_dir, "clops-shard.schema.json")) as f:
        shard_schema = json.load(f)
    with open(os.path.join(schema_dir, "clops-gather.schema.json")) as f:
        gather_schema = json.load(f)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "zoom")
    cfg = os.path.join(tests, "zoom_shards.cfg")

    # Four shards of six runs: 0 and 1 get two, 2 and 3 one; every run once.
    for k in range(4):
        proc = run("run", "--quiet", "--shard", f"{k}/4", "--output-dir", out, cfg)
        check(f"Shard {k}/4: manifest" in proc.stdout, f"shard {k}: names its manifest")
    seen = []
    for k in range(4):
        m = manifest(out, k, 4)
        check_json.validate(m, shard_schema, f"shard {k}/4's manifest")
        check(m["shard"]["index"] == k and m["shard"]["count"] == 4 and m["run_count"] == 6
              and m["status"] == "ok" and m["exit_code"] == 0,
              f"shard {k}: K, N, runs and status: {m['shard']}, {m['status']}")
        indices = [r["index"] for r in m["runs"]]
        check(indices == list(range(k, 6, 4)), f"shard {k}: runs {indices}, round-robin")
        seen += indices
        for r in m["runs"]:
            scale = SCALES[r["index"]]
            check(r["values"] == {"scale": float(scale), "iterations": 512}
                  and r["label"] == f"scale={scale}", f"shard {k}: run values {r['values']}")
            check(len(r["files"]) == 1 and r["files"][0]["file"] == f"zoom/view-scale={scale}.png",
                  f"shard {k}: run {r['index']}'s file: {r['files']}")
            path = os.path.join(out, r["files"][0]["file"])
            check(r["files"][0]["sha256"] == sha256_of(path)
                  and r["files"][0]["bytes"] == os.path.getsize(path),
                  f"shard {k}: {path}'s size and SHA-256 as recorded")
    check(sorted(seen) == list(range(6)), f"every run in exactly one shard: {sorted(seen)}")
    frames = []
    for scale in SCALES:
        frames += ["--", "png", os.path.join(out, f"zoom/view-scale={scale}.png"), "-0.743643",
                   "0.131825", scale, "512", "f64", "60", "80"]
    proc = subprocess.run([check_outputs, *frames[1:]], capture_output=True, text=True)
    check(proc.returncode == 0, f"every frame equals the host reference: {proc.stderr}")

    proc = run("gather", out)
    check("Complete: 4 of 4 shards ok, 6 runs, 6 files" in proc.stdout,
          f"gather: complete: {proc.stdout}")
    doc = json.loads(run("gather", "--json", out).stdout)
    check_json.validate(doc, gather_schema, "gather --json")
    check(doc["complete"] and doc["exit_code"] == 0 and doc["runs"] == 6 and doc["files"] == 6
          and doc["failures"] == 0 and doc["shard_count"] == 4
          and [s["status"] for s in doc["shards"]] == ["ok"] * 4,
          f"gather --json: complete, 6 runs and files: {doc}")

    # A shard whose outputs are intact is skipped, its manifest untouched.
    before = {k: read_bytes(os.path.join(out, ".clops", f"shard-{k}-of-4.json")) for k in range(4)}
    proc = run("run", "--quiet", "--shard", "2/4", "--output-dir", out, cfg)
    check("Shard 2/4 of" in proc.stdout and "skipped" in proc.stdout,
          f"a done shard is skipped: {proc.stdout}")

    # A changed file and a lost manifest: gather names both shards and fails.
    with open(os.path.join(out, "zoom/view-scale=0.1.png"), "ab") as f:
        f.write(b"x")
    os.remove(os.path.join(out, ".clops", "shard-3-of-4.json"))
    proc = run("gather", out, rc=1)
    check("shard 1/4: " in proc.stderr and "view-scale=0.1.png: changed since the shard wrote it"
          in proc.stderr, f"gather names the changed file's shard: {proc.stderr}")
    check("shard 3/4: missing" in proc.stderr, f"gather names the missing shard: {proc.stderr}")
    check("Incomplete: 2 of 4 shards ok" in proc.stdout, f"gather: incomplete: {proc.stdout}")
    doc = json.loads(run("gather", "--json", out, rc=1).stdout)
    check_json.validate(doc, gather_schema, "gather --json, incomplete")
    check([s["status"] for s in doc["shards"]] == ["ok", "corrupt", "ok", "missing"]
          and not doc["complete"] and doc["exit_code"] == 1,
          f"gather --json: shards 1 and 3: {[s['status'] for s in doc['shards']]}")

    # Re-running the whole array recomputes shards 1 and 3 alone.
    for k in range(4):
        proc = run("run", "--quiet", "--shard", f"{k}/4", "--output-dir", out, cfg)
        skipped = "skipped" in proc.stdout
        check(skipped == (k in (0, 2)), f"re-run: shard {k} {'skipped' if skipped else 'ran'}")
        if k == 1:
            check("shard 1/4 runs again: " in proc.stderr and "changed since" in proc.stderr,
                  f"re-run: shard 1 says why it runs again: {proc.stderr}")
    for k in (0, 2):
        check(read_bytes(os.path.join(out, ".clops", f"shard-{k}-of-4.json")) == before[k],
              f"shard {k}'s manifest is untouched by the re-run")
    check(read_bytes(os.path.join(out, ".clops", "shard-1-of-4.json")) != before[1],
          "shard 1's manifest is new")
    proc = run("gather", out)
    check("Complete: 4 of 4 shards ok, 6 runs, 6 files" in proc.stdout,
          f"gather after the re-run: complete: {proc.stdout}")
    check(sha256_of(os.path.join(out, "zoom/view-scale=0.1.png")) == manifest(out, 1, 4)["runs"][0]
          ["files"][0]["sha256"], "the changed file is rewritten")

    # --force runs a done shard again.
    proc = run("run", "--quiet", "--force", "--shard", "0/4", "--output-dir", out, cfg)
    check("skipped" not in proc.stdout and manifest(out, 0, 4)["started"] >= json.loads(
        before[0])["started"] and read_bytes(os.path.join(out, ".clops", "shard-0-of-4.json"))
        != before[0], "--force runs the shard again")

    # A failing run: its shard fails, gather names it; the fixed file re-runs the set.
    failing = os.path.join(work, "sweep_failing.cfg")
    shutil.copy(os.path.join(tests, "sweep_failing.cfg"), failing)
    fout = os.path.join(work, "failing")
    for k in range(3):
        run("run", "--quiet", "--shard", f"{k}/3", "--output-dir", fout, failing,
            rc=1 if k == 1 else 0)
    m = manifest(fout, 1, 3)
    check_json.validate(m, shard_schema, "a failed shard's manifest")
    check(m["status"] == "failed" and m["exit_code"] == 1 and m["runs"][0]["status"] == "failed"
          and m["runs"][0]["files"] == [], f"the failed shard's manifest: {m['runs']}")
    proc = run("gather", fout, rc=1)
    check("shard 1/3: run 1 (tol=1e-30) failed: run 1 (tol=1e-30): 1 of 1 checks failed"
          in proc.stderr, f"gather names the failed run: {proc.stderr}")
    with open(failing) as f:
        text = f.read().replace("1e-30", "1e-2")
    with open(failing, "w") as f:
        f.write(text)
    for k in range(3):
        proc = run("run", "--quiet", "--shard", f"{k}/3", "--output-dir", fout, failing)
        why = "its manifest says it failed" if k == 1 else "the pipeline's text differs"
        check(f"shard {k}/3 runs again: {why}" in proc.stderr,
              f"shard {k} of the fixed file runs again: {proc.stderr}")
    check("Complete: 3 of 3 shards ok, 3 runs, 3 files" in run("gather", fout).stdout,
          "the fixed set is complete")

    # --shard auto from Open MPI's variables: K, N, the local rank and the device it chose.
    env = dict(ENV, OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="2",
               OMPI_COMM_WORLD_LOCAL_RANK="1")
    aout = os.path.join(work, "auto")
    run("run", "--quiet", "--shard", "auto", "--output-dir", aout, cfg, env=env)
    m = manifest(aout, 1, 2)
    check_json.validate(m, shard_schema, "an auto shard's manifest")
    d = m["device"]
    check(m["shard"]["source"] == "mpi" and m["local_rank"] == 1
          and [r["index"] for r in m["runs"]] == [1, 3, 5], f"auto: shard 1/2 of mpi: {m['shard']}")
    gpus = d["gpu_count"]
    check(gpus is not None and (d["choice"], d["gpu_index"]) ==
          (("gpu", 1 % gpus) if gpus > 0 else ("default", None)),
          f"auto: the device choice for local rank 1 and {gpus} GPUs: {d}")
    # More shards than runs: the extra ones have nothing to run, and say so.
    proc = run("run", "--quiet", "--shard", "7/8", "--output-dir", aout, cfg)
    m = manifest(aout, 7, 8)
    check("Shard 7/8 has none of the 6 runs" in proc.stdout and m["runs"] == []
          and m["status"] == "ok", f"shard 7/8 of 6 runs: {proc.stdout}, {m['runs']}")
    proc = run("run", "--shard", "auto", cfg, rc=2)
    for name in ("SLURM_ARRAY_TASK_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        check(name in proc.stderr, f"--shard auto without a launcher names {name}: {proc.stderr}")
    proc = run("run", "--shard", "4/4", cfg, rc=2)
    check("shards are numbered from 0" in proc.stderr, f"--shard 4/4 refused: {proc.stderr}")
    proc = run("gather", os.path.join(work, "nothing"), rc=1)
    check("no shard manifests" in proc.stderr, f"gather of an empty directory: {proc.stderr}")

    return check_json.finish("all checks passed")


if __name__ == "__main__":
    sys.exit(main())
