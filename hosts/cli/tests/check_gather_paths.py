"""check_gather_paths.py CASE CLOPS PIPELINE WORK — what `clops gather` and the resume check of
`clops run --shard` open when a manifest (which anyone can edit) or the files it lists are
hostile: one shard of PIPELINE (gather_paths.cfg) is run into WORK, then CASE changes what it
left and checks that both readers refuse it, by name, without blocking (a FIFO), reading without
end (/dev/zero) or looking outside WORK; that gather counts only intact files as intact; and
that it prints control characters in names escaped. Each clops runs with a time limit (a hang
is a failure, not a stuck test) and 2 GiB of address space (reading /dev/zero without end fails
fast instead of taking the machine's memory). Exits 1 on any failure."""
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys

case, clops, pipeline, work = sys.argv[1:5]
manifest = os.path.join(work, ".clops", "shard-0-of-1.json")
failures = []
# Set by hostile_gather_paths.cmake in a -DCLOPS_SANITIZE=ON build.
SANITIZED = os.environ.get("CLOPS_TEST_SANITIZED") == "1"


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def limit_memory():
    # AddressSanitizer reserves terabytes of address space for its shadow at start-up: a
    # sanitized clops gets its own RSS limit instead (memory_limit_env).
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def memory_limit_env():
    """The environment of a clops run: under AddressSanitizer, 2 GiB of RSS ends it."""
    env = dict(os.environ)
    if SANITIZED:
        options = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (options + ":" if options else "") + "hard_rss_limit_mb=2048"
    return env


def clops_run(*args, rc):
    try:
        proc = subprocess.run([clops, *args], capture_output=True, timeout=60,
                              preexec_fn=limit_memory, env=memory_limit_env())
    except subprocess.TimeoutExpired:
        check(False, f"clops {' '.join(args)}: still running after 60 s (blocked)")
        return "", ""
    out, err = (proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))
    print(f"$ clops {' '.join(args)}  # exit {proc.returncode}\n{out}{err}")
    check(proc.returncode == rc, f"clops {' '.join(args)}: exit {proc.returncode}, expected {rc}")
    return out, err


def shard(rc=0):
    return clops_run("run", "--quiet", "--shard", "0/1", "--output-dir", work, pipeline, rc=rc)


def gather(rc=1):
    return clops_run("gather", work, rc=rc)


def edit_manifest(change):
    with open(manifest) as f:
        doc = json.load(f)
    change(doc)
    with open(manifest, "w") as f:
        json.dump(doc, f, indent=2)


def list_outside(name):
    """The manifest's first file renamed `name`, a copy of it made where `name` points from WORK
    (with the SHA-256 and size recorded): a reader that followed the name would find it intact."""
    def change(doc):
        record = doc["runs"][0]["files"][0]
        target = name if os.path.isabs(name) else os.path.join(work, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(work, record["file"]), target)
        record["file"] = name
    edit_manifest(change)


def make_fifo(path):
    os.remove(path)
    os.mkfifo(path)


def fifo_output():
    path = os.path.join(work, "out", "t.npy")
    make_fifo(path)
    out, err = gather()
    check(f"shard 0/1: {path}: is a FIFO (named pipe), not a regular file" in err,
          "gather names the FIFO output")
    out, err = shard()
    check(f"shard 0/1 runs again: {path}: is a FIFO (named pipe), not a regular file" in err,
          "the resume check names the FIFO output and runs the shard again")
    check(os.path.isfile(path), "the run replaced the FIFO with the output")


def fifo_manifest():
    make_fifo(manifest)
    out, err = gather()
    check(f"{manifest}: is a FIFO (named pipe), not a regular file" in err,
          "gather names the FIFO manifest")
    out, err = shard()
    check(f"shard 0/1 runs again: {manifest}: is a FIFO (named pipe), not a regular file" in err,
          "the resume check names the FIFO manifest")


def dev_zero_manifest():
    os.remove(manifest)
    os.symlink("/dev/zero", manifest)
    out, err = gather()
    check(f"{manifest}: is a character device, not a regular file" in err,
          "gather refuses a manifest linked to /dev/zero")
    out, err = shard()
    check(f"runs again: {manifest}: is a character device, not a regular file" in err,
          "the resume check refuses a manifest linked to /dev/zero")


def huge_manifest():
    with open(manifest, "r+b") as f:
        f.truncate((1 << 30) + 1)  # sparse: nothing is written
    out, err = gather()
    check(f"{manifest}: 1073741825 bytes, larger than a document read back can be (1073741824)"
          in err, "gather refuses a manifest over 1 GiB before reading it")


def absolute_name():
    outside = os.path.join(os.path.dirname(work), "gather-paths-outside", "a.npy")
    list_outside(outside)
    for out, err in (gather(), shard()):
        check(f"{manifest}: runs[0].files[0]: '{outside}' is absolute; only files under the "
              f"output directory {work} are checked" in err,
              "an absolute name is refused, naming the manifest and the entry")


def dot_dot_name():
    for name in ("../gather-paths-outside/a.npy", "out/../../gather-paths-outside/a.npy"):
        list_outside(name)
        out, err = gather()
        check(f"{manifest}: runs[0].files[0]: '{name}' leaves the output directory; only files "
              f"under the output directory {work} are checked" in err,
              f"'{name}' is refused, naming the manifest and the entry")
        shutil.rmtree(work)
        shard()


def intact_counts():
    os.remove(os.path.join(work, "out", "t.npy"))
    out, err = gather()
    check("Incomplete: 0 of 1 shards ok, 1 runs, 1 of 2 files (176 B) intact" in out,
          "a missing file is not counted as intact")
    with open(os.path.join(work, "out", "a.npy"), "ab") as f:
        f.write(b"changed")
    out, err = gather()
    check("Incomplete: 0 of 1 shards ok, 1 runs, 0 of 2 files (0 B) intact" in out,
          "a changed file is not counted as intact")


def control_characters():
    hostile = "out/\x1b]0;owned\x07\x1b[2J\u009bt.npy"

    def change(doc):
        doc["host"] = "node\x1b[31m7"
        doc["runs"][0]["files"][0]["file"] = hostile
    edit_manifest(change)
    out, err = gather()
    check("\x1b" not in out + err and "\x07" not in out + err and "\u009b" not in out + err,
          "no control character reaches the terminal")
    check(f"{work}/out/\\x1b]0;owned\\x07\\x1b[2J\\xc2\\x9bt.npy: missing" in err,
          "the name is printed with its control characters escaped")
    check("node\\x1b[31m7" in out, "the host is printed escaped")


CASES = {f.__name__: f for f in (fifo_output, fifo_manifest, dev_zero_manifest, huge_manifest,
                                 absolute_name, dot_dot_name, intact_counts, control_characters)}


def main():
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(os.path.join(os.path.dirname(work), "gather-paths-outside"), ignore_errors=True)
    shard()
    out, err = gather(rc=0)
    check("Complete: 1 of 1 shards ok, 1 runs, 2 files (352 B) intact" in out, "the set is whole")
    CASES[case]()
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
