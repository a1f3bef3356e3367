#!/usr/bin/python3
"""check_readme_packages.py README.md — the README's package list covers what the tests run.

Run it with Debian's /usr/bin/python3, whose modules are the ones checked.

On a bare Debian 12 (debootstrap minbase) the README's test command failed every Slurm test:
`ss` comes with iproute2, which the list lacked, and CI passed only because its machine had it
(issue 25, item 7). This check sees that on any machine: each program and Python module the
tests use (TOOLS, MODULES) must come from a package of the README's list, from a package those
depend on (recursively), or from one that every Debian has (Priority: required, what minbase
installs). It also checks that the README's two apt-get commands list the same packages.
Exit status: 0 covered; 1 a tool or module is not (each is named, with its package); 2 usage.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

# Programs the tests and their scripts run (tests/scale/slurm-cluster, the MPI, Snakemake,
# Fortran and man-page tests, the CLI's pipelines) and the Python modules they import.
TOOLS = ["ss", "slurmctld", "slurmd", "sbatch", "munged", "mungekey", "mpirun", "snakemake",
         "gfortran", "clinfo", "groff", "pkg-config", "cmake", "make", "flock", "hostname",
         "timeout", "python3"]
# ensurepip: what `python3 -m venv` needs, for the Python install commands and their tests.
MODULES = ["numpy", "scipy", "matplotlib", "jsonschema", "pyopencl", "ensurepip"]


def readme_lists(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # The commands that build on Linux (the Windows section's cross build has its own list, which
    # .ci/run installs as well).
    return [line.split()
            for line in re.findall(r"apt-get install -y ([^&\n]*)&& cmake -S \. -B build ", text)]


def owner(path):
    """The Debian package that installed `path` (symbolic links followed), or None."""
    real = os.path.realpath(path)
    # With merged /usr, dpkg knows /bin/ss where the file is /usr/bin/ss.
    unmerged = [re.sub(r"^/usr/(s?bin|lib)/", r"/\1/", p) for p in (path, real)]
    for candidate in [path, real] + unmerged:
        done = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout.split(":")[0].split(",")[0].strip()
    return None


def closure(packages):
    """The packages and everything they depend on, recursively, as installed here."""
    done = subprocess.run(
        ["apt-cache", "depends", "--recurse", "--installed", "--no-recommends", "--no-suggests",
         "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + packages,
        capture_output=True, text=True, check=True)
    found = set(packages)
    for line in done.stdout.splitlines():
        m = re.match(r"^\s*\|?(?:Pre)?Depends: <?([^\s>:]+)", line) or re.match(r"^(\S+)$", line)
        if m:
            found.add(m.group(1))
    return found


def required():
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Priority}\n"],
                          capture_output=True, text=True, check=True)
    return {p for p, prio in (l.split() for l in done.stdout.splitlines() if " " in l)
            if prio == "required"}


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    lists = readme_lists(sys.argv[1])
    if not lists:
        print(f"{sys.argv[1]}: no 'apt-get install -y ...' command found", file=sys.stderr)
        return 1
    if any(sorted(l) != sorted(lists[0]) for l in lists):
        print(f"{sys.argv[1]}: its apt-get commands list different packages: {lists}",
              file=sys.stderr)
        return 1
    listed = [p for p in lists[0] if shutil.which("dpkg") and owner_installed(p)]
    missing_here = sorted(set(lists[0]) - set(listed))
    if missing_here:
        print(f"not installed on this machine, cannot check: {missing_here}", file=sys.stderr)
        return 1
    covered = closure(listed) | required()
    failures = []
    for tool in TOOLS:
        # Debian's own python3, whatever python3 comes first on PATH (pyenv, a venv).
        path = "/usr/bin/python3" if tool == "python3" else shutil.which(
            tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
        package = owner(path) if path else None
        if package is None or package not in covered:
            failures.append(f"{tool} ({path or 'not found'}, package {package}) comes from no "
                            "package of the README's list nor their dependencies")
    for module in MODULES:
        spec = importlib.util.find_spec(module)
        package = owner(spec.origin) if spec and spec.origin else None
        if package is None or package not in covered:
            failures.append(f"python3 module {module} (package {package}) comes from no package "
                            "of the README's list nor their dependencies")
    for failure in failures:
        print(failure, file=sys.stderr)
    print(f"{len(TOOLS)} programs and {len(MODULES)} modules checked against "
          f"{len(lists[0])} listed packages ({len(covered)} with dependencies and required)")
    return 1 if failures else 0


def owner_installed(package):
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", package],
                          capture_output=True, text=True)
    return done.returncode == 0 and "installed" in done.stdout.split()


if __name__ == "__main__":
    sys.exit(main())
