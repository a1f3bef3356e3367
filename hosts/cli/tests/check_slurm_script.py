"""check_slurm_script.py refuse|quote CLOPS TESTS_DIR WORK_DIR — `clops slurm` with hostile
values (issue 22, D5).

refuse: a value with a newline, a carriage return or another control character (an sbatch
option, --set, --output-dir) is refused with a message naming the option and the character; no
script is written, nothing is submitted and DIR/.clops is not made.

quote: a directory, a pipeline file, a --set value and sbatch options with blanks, both quotes,
$(...), backticks, '#', '%' and backslashes give a script that `bash -n` accepts; run by bash with
a recorder in clops's place it passes each value unchanged and runs nothing else; its #SBATCH
lines, read the way sbatch reads them, give sbatch each value unchanged; its --output is quoted.
Exits 1 on any failure."""
import os
import shlex
import shutil
import subprocess
import sys

mode, clops, tests, work = sys.argv[1:5]
failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def fresh_work():
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "bin"))
    # Were a script submitted, this sbatch would leave a mark instead of reaching a cluster.
    write_executable(os.path.join(work, "bin", "sbatch"),
                     f"#!/bin/sh\ntouch '{work}/SUBMITTED'\necho 1\n")
    return dict(os.environ, PATH=os.path.join(work, "bin") + os.pathsep + os.environ["PATH"])


def write_executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def slurm(env, *args):
    return subprocess.run([clops, "slurm", *args], capture_output=True, text=True, cwd=work,
                          env=env, timeout=120)


def marks():
    """Files that an injected command or a submission would have made."""
    return sorted(name for _, _, files in os.walk(work) for name in files
                  if name.startswith(("PWNED", "SUBMITTED")))


def refuse():
    cfg = os.path.join(tests, "zoom_shards.cfg")
    cases = [
        (["--partition=debug\ntouch PWNED"],
         "--partition: value 'debug...' has a newline at byte 5"),
        (["--comment=ok\rtouch PWNED"], "--comment: value 'ok...' has a carriage return at byte 2"),
        (["--set", "params.iterations=64\ntouch PWNED"],
         "--set: value 'params.iterations=64...' has a newline at byte 20"),
        (["--", "-J", "x\x1b]0;title\x07"],
         "sbatch option: value 'x...' has control character 0x1b at byte 1"),
    ]
    for extra, message in cases:
        env = fresh_work()
        out = os.path.join(work, "out")
        proc = slurm(env, "--submit", "--output-dir", out, cfg, *extra)
        what = repr(extra)
        check(proc.returncode == 2, f"{what}: exit {proc.returncode}, expected 2")
        check(f"clops: slurm: {message}; expected no control characters" in proc.stderr,
              f"{what}: message names the option and the character: {proc.stderr!r}")
        check(proc.stdout == "", f"{what}: no script printed: {proc.stdout[:200]!r}")
        check(not os.path.exists(os.path.join(out, ".clops")),
              f"{what}: no script written ({out}/.clops not made)")
        check(marks() == [], f"{what}: nothing ran or was submitted: {marks()}")
    env = fresh_work()
    proc = slurm(env, "--output-dir", os.path.join(work, "a\nb"), cfg)
    check(proc.returncode == 2 and "clops: slurm: --output-dir: value '" in proc.stderr
          and "has a newline at byte" in proc.stderr,
          f"an --output-dir with a newline is refused: {proc.returncode} {proc.stderr!r}")
    check(not os.path.exists(os.path.join(work, "a\nb")), "that directory is not made")


def sbatch_words(line):
    """The words sbatch takes from the text after '#SBATCH', as its tokenizer reads them
    (_get_argument in Slurm's src/sbatch/opt.c): words end at blanks outside quotes, ' and "
    quote and are dropped, a backslash takes the next character as it is, and an unquoted '#'
    ends the line."""
    words, i = [], 0
    while True:
        while i < len(line) and line[i].isspace():
            i += 1
        if i == len(line):
            return words
        word, quote, escaped = "", None, False
        while i < len(line) and (quote or not line[i].isspace()):
            c = line[i]
            i += 1
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
                continue
            elif quote:
                if c == quote:
                    quote = None
                    continue
            elif c in "'\"":
                quote = c
                continue
            elif c == "#":
                return words + [word] if word else words
            word += c
        words.append(word)


def quote():
    env = fresh_work()
    hostile = " 'q' \"dq\" $(touch PWNED1) `touch PWNED2` #h 100%x \\b"
    out = os.path.join(work, "out" + hostile)
    cfg_dir = os.path.join(work, "cfg" + hostile)
    os.makedirs(cfg_dir)
    cfg = os.path.join(cfg_dir, "zoom_shards.cfg")
    # With a string parameter, for a --set value that is as hostile as the rest.
    with open(os.path.join(tests, "zoom_shards.cfg")) as f:
        text = f.read().replace("iterations = 512; }", 'iterations = 512; tag = "x"; }')
    with open(cfg, "w") as f:
        f.write(text)
    tag = 'params.tag="a' + hostile.replace("\\", "\\\\").replace('"', '\\"') + '"'
    options = ["--partition=debug" + hostile, "--comment=" + hostile, "--exclusive", "-J",
               "x" + hostile]
    proc = slurm(env, "--output-dir", out, "--set", tag, cfg, options[0], options[1],
                 options[2], "--", *options[3:])
    check(proc.returncode == 0, f"clops slurm: exit {proc.returncode}: {proc.stderr}")
    script = proc.stdout
    print(script)
    path = os.path.join(work, "job.sbatch")
    with open(path, "w") as f:
        f.write(script)
    syntax = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
    check(syntax.returncode == 0, f"bash -n accepts the script: {syntax.stderr}")

    # bash runs the whole script with a recorder in the place of clops (its absolute path).
    real_clops, real_out, real_cfg = (os.path.realpath(p) for p in (clops, out, cfg))
    recorder = os.path.join(work, "bin", "clops-recorder")
    write_executable(recorder, "#!/bin/sh\nfor a; do printf '%s\\0' \"$a\"; done > \"$ARGS\"\n")
    command = f"exec '{real_clops}' "
    check(script.count(command) == 1, f"the script runs {real_clops} once")
    with open(path, "w") as f:
        f.write(script.replace(command, f"exec '{recorder}' "))
    args_file = os.path.join(work, "args")
    ran = subprocess.run(["bash", path], capture_output=True, text=True, cwd=work,
                         env=dict(env, ARGS=args_file), timeout=60)
    check(ran.returncode == 0, f"bash runs the script: {ran.stderr}")
    with open(args_file) as f:
        got = f.read().split("\0")[:-1]
    want = ["run", "--shard", "auto", "--quiet", "--output-dir", real_out, "--set", tag,
            real_cfg]
    check(got == want, f"clops gets each value unchanged:\n  got  {got}\n  want {want}")
    check(marks() == [], f"nothing in the values ran: {marks()}")

    # sbatch's view: the #SBATCH lines up to the first command.
    lines = script.splitlines()
    directives = [w for line in lines[:next(i for i, t in enumerate(lines) if not t.startswith("#"))]
                  if line.startswith("#SBATCH") for w in sbatch_words(line[len("#SBATCH"):])]
    logs = real_out.replace("%", "%%") + "/.clops/slurm-%A_%a.out"
    want = ["--job-name=clops-zoom_shards", "--array=0-5", "--output=" + logs, *options]
    check(directives == want, f"sbatch gets each value unchanged:\n  got  {directives}\n"
                              f"  want {want}")
    output = [line for line in lines if line.startswith("#SBATCH --output=")]
    check(len(output) == 1 and output[0].startswith('#SBATCH --output="/')
          and output[0].endswith('/.clops/slurm-%A_%a.out"'),
          f"the --output path, which has a blank, is quoted: {output}")
    gather = [line for line in lines if "Then: clops gather " in line]
    check(len(gather) == 1 and shlex.split(gather[0].split("Then: ")[1]) ==
          ["clops", "gather", real_out],
          f"the comment's gather command names the directory, quoted: {gather}")


{"refuse": refuse, "quote": quote}[mode]()
print(f"{len(failures)} failure(s)" if failures else "all passed")
sys.exit(1 if failures else 0)
