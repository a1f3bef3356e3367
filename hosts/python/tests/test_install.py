"""test_install.py — the package installed, then imported from where it was installed (never from
hosts/python) by a fresh interpreter that runs a GEMM of exactly representable numbers:
- the README's and hosts/python/README.md's pip commands as they are written, run by sh from the
  top of the tree in a fresh $HOME, with Debian's python3 (they name /usr/bin/python3) and
  another python3 first on PATH, which has neither `wheel` nor NumPy; the plugin installed in a
  prefix that pkg-config knows (clops.pc and libclops.so.1 copied as `cmake --install` puts
  them), found by the installed package without $CLOPS_LIBRARY;
- pip with a python3 that has no `wheel` and setuptools 66 (a bare venv: what failed with
  "invalid command 'bdist_wheel'"), then none at all, and with the python3 first on PATH when
  that is not /usr/bin/python3 (a pyenv's);
- pip, offline, into a --target (no library recorded), a --prefix (the library found in the
  prefix's lib), with $CLOPS_LIBRARY recorded, or refused when relative; an sdist; -e;
- `cmake --install` of this directory's component python into a temporary prefix: its
  clops/_install.py must name the library under that prefix, and `import clops` without
  $CLOPS_LIBRARY must load the library found there;
- and, when no candidate loads, the ImportError (clops.LoadError) lists each path and why.
ctest sets CLOPS_LIBRARY, CLOPS_TEST_CMAKE (cmake), CLOPS_TEST_INSTALL_DIR (this directory's
build directory) and CLOPS_TEST_PC (the build's clops.pc). The virtual environments need
Debian's python3-venv. unittest: `python3 tests/test_install.py`."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import unittest.mock

import numpy as np

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # hosts/python
TOP = os.path.dirname(os.path.dirname(SOURCE))  # the top of the tree
DEBIAN_PYTHON = "/usr/bin/python3"  # the python3 the documented commands name

# Prints what was imported from where, and a product of small integers (exact in float64).
PROBE = """
import json, numpy as np, clops
a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4) - 5
print(json.dumps({"file": clops.__file__, "library": clops.library().path,
                  "origin": clops.library().origin, "version": clops.__version__,
                  "c": clops.gemm(a, b, alpha=0.5).tolist()}))
"""
WANT_C = (0.5 * (np.arange(6.0).reshape(2, 3) @ (np.arange(12.0).reshape(3, 4) - 5))).tolist()


def run(argv, cwd, **env_changes):
    """argv in a fresh process, with os.environ changed as given (None removes a variable). The
    sanitizer runtimes are kept out of what does not load libclops (pip, cmake)."""
    env = dict(os.environ)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def version():
    with open(os.path.join(SOURCE, "clops", "_version.py")) as f:
        scope = {}
        exec(f.read(), scope)
    return scope["__version__"]


# pkg-config finding no clops, whatever is installed on the machine.
NO_PKG_CONFIG = {"PKG_CONFIG_LIBDIR": "/nonexistent", "PKG_CONFIG_PATH": None}


def tree_listing(top):
    """Every path under `top` but caches: what pip must leave as it was in the source tree."""
    out = []
    for d, dirs, files in os.walk(top):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        out += [os.path.relpath(os.path.join(d, x), top) for x in dirs + sorted(files)]
    return out


def readme_block():
    """hosts/python/README.md's pip commands: the sh block after the comment that names this
    file."""
    with open(os.path.join(SOURCE, "README.md")) as f:
        text = f.read()
    found = re.search(r"<!-- tests/test_install.py runs this block as it is written -->\n"
                      r" *```sh\n(.*?)\n *```", text, re.S)
    return "\n".join(line.strip() for line in found.group(1).splitlines())


def top_readme_line():
    """The top README's Python line: the first code span of its "- **Python:**" item, whose
    line break Markdown reads as a space."""
    with open(os.path.join(TOP, "README.md")) as f:
        text = f.read()
    return " ".join(re.search(r"^- \*\*Python:\*\* `([^`]*)`", text, re.M).group(1).split())


def make_venv(path, *options):
    """A virtual environment of Debian's python3 (python3-venv); its python."""
    result = run([DEBIAN_PYTHON, "-m", "venv", *options, path], os.path.dirname(path),
                 LD_PRELOAD=None)
    assert result.returncode == 0, "%s -m venv (Debian: apt-get install python3-venv):\n%s%s" \
        % (DEBIAN_PYTHON, result.stdout, result.stderr)
    return os.path.join(path, "bin", "python")


class Case(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="clops-install-test-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.library = os.environ["CLOPS_LIBRARY"]

    def assertRan(self, result):
        self.assertEqual(result.returncode, 0, "%s\n%s\n%s" % (result.args, result.stdout,
                                                              result.stderr))

    def probe(self, pythonpath, python=sys.executable, **env_changes):
        """PROBE's findings, run by `python` with `pythonpath` (None: no PYTHONPATH)."""
        result = run([python, "-c", PROBE], self.tmp, PYTHONPATH=pythonpath, **env_changes)
        self.assertRan(result)
        got = json.loads(result.stdout)
        self.assertEqual(got["c"], WANT_C)
        self.assertEqual(got["version"], version())
        return got


class InstallTest(Case):
    def test_pip_install_offline_into_a_target_directory(self):
        # From a copy: pip builds in the source tree, which must stay clean.
        src, site = os.path.join(self.tmp, "src"), os.path.join(self.tmp, "site")
        os.mkdir(src)
        for name in ("pyproject.toml", "build_backend.py", "README.md"):
            shutil.copy(os.path.join(SOURCE, name), src)
        shutil.copytree(os.path.join(SOURCE, "clops"), os.path.join(src, "clops"),
                        ignore=shutil.ignore_patterns("__pycache__", "_install.py"))
        # Neither $CLOPS_LIBRARY nor a clops that pkg-config knows while pip runs: no record.
        self.assertRan(run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                            "--target", site, src], self.tmp, LD_PRELOAD=None,
                           CLOPS_LIBRARY=None, **NO_PKG_CONFIG))
        self.assertFalse(os.path.exists(os.path.join(site, "clops", "_install.py")))
        with open(glob.glob(os.path.join(site, "clops-*.dist-info", "METADATA"))[0]) as f:
            metadata = f.read()
        self.assertIn("Version: %s\n" % version(), metadata)
        self.assertIn("Requires-Dist: numpy", metadata)
        got = self.probe(site)
        self.assertEqual(got["file"], os.path.join(site, "clops", "__init__.py"))
        self.assertEqual((got["library"], got["origin"]), (self.library, "$CLOPS_LIBRARY"))

    def installed_site(self, top):
        """The directory holding the clops package that pip installed under `top`."""
        inits = glob.glob(os.path.join(top, "**", "clops", "__init__.py"), recursive=True)
        self.assertEqual(len(inits), 1, inits)
        return os.path.dirname(os.path.dirname(inits[0]))

    def test_pip_prefix_finds_the_library_in_its_prefix(self):
        # As `cmake --install --prefix P` and `pip install --prefix P` leave them, with nothing
        # recorded: the package finds P's lib by where it lies.
        prefix = os.path.join(self.tmp, "prefix")
        self.assertRan(run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                            "--prefix", prefix, SOURCE], self.tmp, LD_PRELOAD=None,
                           CLOPS_LIBRARY=None, **NO_PKG_CONFIG))
        site = self.installed_site(prefix)
        self.assertFalse(os.path.exists(os.path.join(site, "clops", "_install.py")))
        # (Debian's pip puts the package in prefix/local/lib/python3.X/dist-packages.)
        installed = os.path.join(prefix, "lib", "libclops.so.1")
        os.makedirs(os.path.dirname(installed), exist_ok=True)
        shutil.copy(os.path.realpath(self.library), installed)
        got = self.probe(site, CLOPS_LIBRARY=None)
        self.assertEqual((got["library"], got["origin"]),
                         (installed, "the prefix the package is installed under"))

    def test_pip_records_clops_library_set_while_it_runs(self):
        site = os.path.join(self.tmp, "site")
        library = os.path.abspath(self.library)
        self.assertRan(run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                            "--target", site, SOURCE], self.tmp, LD_PRELOAD=None,
                           CLOPS_LIBRARY=library))
        got = self.probe(site, CLOPS_LIBRARY=None)
        self.assertEqual(got["library"], library)
        self.assertEqual(got["origin"], "recorded at installation in clops/_install.py: "
                         "$CLOPS_LIBRARY when pip built the package")

    def test_pip_refuses_a_relative_clops_library(self):
        result = run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                      "--target", os.path.join(self.tmp, "site"), SOURCE], self.tmp,
                     LD_PRELOAD=None, CLOPS_LIBRARY="build/libclops.so.1")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("$CLOPS_LIBRARY = 'build/libclops.so.1' is a relative path",
                      result.stdout + result.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "site")))

    def test_sdist_installs_as_the_tree_does(self):
        code = "import sys; sys.path.insert(0, %r); import build_backend; " \
               "print(build_backend.build_sdist(%r))" % (SOURCE, self.tmp)
        result = run([sys.executable, "-c", code], self.tmp)
        self.assertRan(result)
        sdist = os.path.join(self.tmp, result.stdout.strip())
        with tarfile.open(sdist) as tar:
            names = tar.getnames()
        base = "clops-%s/" % version()
        for name in ("PKG-INFO", "pyproject.toml", "build_backend.py", "README.md",
                     "clops/__init__.py", "clops/_version.py"):
            self.assertIn(base + name, names)
        self.assertNotIn(base + "clops/_install.py", names)
        site = os.path.join(self.tmp, "site")
        self.assertRan(run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                            "--target", site, sdist], self.tmp, LD_PRELOAD=None,
                           CLOPS_LIBRARY=None, **NO_PKG_CONFIG))
        self.assertEqual(self.probe(site)["file"], os.path.join(site, "clops", "__init__.py"))

    def test_cmake_install_records_the_installed_library(self):
        prefix = os.path.join(self.tmp, "prefix")
        self.assertRan(run([os.environ["CLOPS_TEST_CMAKE"], "--install",
                            os.environ["CLOPS_TEST_INSTALL_DIR"], "--component", "python",
                            "--prefix", prefix], self.tmp, LD_PRELOAD=None))
        inits = glob.glob(os.path.join(prefix, "**", "clops", "__init__.py"), recursive=True)
        self.assertEqual(len(inits), 1, inits)
        package = os.path.dirname(inits[0])
        self.assertEqual(glob.glob(os.path.join(package, "**", "__pycache__"), recursive=True),
                         [])
        record = {}
        with open(os.path.join(package, "_install.py")) as f:
            exec(f.read(), record)
        installed = record["LIBRARY"]
        self.assertEqual(os.path.dirname(installed), record["LIBDIR"])
        self.assertTrue(installed.startswith(prefix + os.sep), installed)
        self.assertTrue(os.path.basename(installed).startswith("libclops.so."), installed)
        # The library's own install rules are not this component's: put the build's there.
        os.makedirs(record["LIBDIR"], exist_ok=True)
        shutil.copy(os.path.realpath(self.library), installed)
        got = self.probe(os.path.dirname(package), CLOPS_LIBRARY=None)
        self.assertEqual(got["file"], inits[0])
        self.assertEqual(got["library"], installed)
        self.assertIn("_install.py", got["origin"])

    def import_from_source(self, **env):
        """`import clops` from the source tree (no _install.py) in a fresh process with `env`:
        what it loaded and from where, or the LoadError's type, status and message."""
        code = """
import json
try:
    import clops
except ImportError as e:
    print(json.dumps({"loaded": None, "type": type(e).__name__, "status": e.status,
                      "message": str(e)}))
else:
    print(json.dumps({"loaded": clops.library().path, "origin": clops.library().origin}))
"""
        result = run([sys.executable, "-c", code], self.tmp, PYTHONPATH=SOURCE, **env)
        self.assertRan(result)
        return json.loads(result.stdout)

    def test_a_named_library_that_fails_is_an_error(self):
        # libm loads but is no clops plugin.
        got = self.import_from_source(CLOPS_LIBRARY="libm.so.6")
        # As every clops host: the library the user named, and no other, even where a
        # libclops.so.1 is installed.
        self.assertEqual((got["loaded"], got["type"], got["status"]), (None, "LoadError", 9))
        message = got["message"]
        self.assertIn("libm.so.6 ($CLOPS_LIBRARY): no symbol clops_plugin_entry", message)
        self.assertNotIn("libclops.so.1 (", message)

    def test_load_error_lists_every_path_tried(self):
        # No $CLOPS_LIBRARY and no _install.py (the source tree): libclops.so.1 from the search
        # path, which on a machine without an installed clops fails and is listed.
        got = self.import_from_source(CLOPS_LIBRARY=None)
        if got["loaded"] is not None:  # a libclops.so.1 is installed on this machine
            self.assertEqual(got["origin"], "the dynamic linker's search path")
            return
        self.assertEqual((got["type"], got["status"]), ("LoadError", 9))
        self.assertIn("libclops.so.1 (the dynamic linker's search path): libclops.so.1: cannot "
                      "open shared object file", got["message"])


class WindowsCandidatesTest(unittest.TestCase):
    """The rule on Windows (hosts/common/loader.h), with _library's WINDOWS and SONAME as a
    Windows python would have them: clops.dll beside the module, then in the prefix's bin, then
    the first on PATH; $CLOPS_LIBRARY alone when set."""

    def setUp(self):
        sys.path.insert(0, SOURCE)
        self.addCleanup(sys.path.remove, SOURCE)
        from clops import _library
        self.lib = _library
        for name, value in (("WINDOWS", True), ("SONAME", "clops.dll")):
            self.addCleanup(setattr, _library, name, getattr(_library, name))
            setattr(_library, name, value)
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_beside_the_module_then_the_prefix_bin(self):
        package = os.path.join(self.tmp, "Lib", "site-packages", "clops")
        os.makedirs(package)
        os.makedirs(os.path.join(self.tmp, "bin"))
        self.assertEqual(self.lib.prefix_libraries(package),
                         [os.path.join(package, "clops.dll"),
                          os.path.join(self.tmp, "bin", "clops.dll")])

    def test_the_first_clops_dll_on_path_else_the_name(self):
        first, second = os.path.join(self.tmp, "a"), os.path.join(self.tmp, "b")
        os.makedirs(first)
        os.makedirs(second)
        open(os.path.join(second, "clops.dll"), "wb").close()
        path = os.pathsep.join([first, second])
        with unittest.mock.patch.dict(os.environ, {"PATH": path}):
            self.assertEqual(self.lib.searched_library(), os.path.join(second, "clops.dll"))
        with unittest.mock.patch.dict(os.environ, {"PATH": first}):
            self.assertEqual(self.lib.searched_library(), "clops.dll")

    def test_clops_library_alone_else_the_search_last(self):
        with unittest.mock.patch.dict(os.environ, {"CLOPS_LIBRARY": r"C:\x\clops.dll"}):
            self.assertEqual(self.lib.candidates(), [(r"C:\x\clops.dll", "$CLOPS_LIBRARY")])
        env = {k: v for k, v in os.environ.items() if k != "CLOPS_LIBRARY"}
        env["PATH"] = self.tmp
        with unittest.mock.patch.dict(os.environ, env, clear=True):
            got = self.lib.candidates()
        self.assertEqual(got[-1], ("clops.dll", "the DLL search order and PATH"))
        self.assertTrue(all(path.endswith("clops.dll") for path, _ in got), got)


class DocumentedCommandsTest(Case):
    """The READMEs' commands as written, and pip with pythons that lack what setuptools needed."""

    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.mkdtemp(prefix="clops-install-test-")
        # A python3 with neither `wheel` nor NumPy and with setuptools 66 (Debian's venv without
        # the system's packages), put first on PATH as a pyenv's python3 is: a script, since a
        # symbolic link to the venv's python would be taken for the python it links to.
        cls.bare = make_venv(os.path.join(cls.shared, "bare"))
        cls.other_bin = os.path.join(cls.shared, "other-bin")
        os.mkdir(cls.other_bin)
        with open(os.path.join(cls.other_bin, "python3"), "w") as f:
            f.write('#!/bin/sh\nexec "%s" "$@"\n' % cls.bare)
        os.chmod(os.path.join(cls.other_bin, "python3"), 0o755)
        # The plugin where `cmake --install --prefix PREFIX` puts it, with its clops.pc (whose
        # prefix is relative to the file), PREFIX known to pkg-config through PKG_CONFIG_PATH.
        cls.prefix_lib = os.path.join(cls.shared, "prefix", "lib")
        os.makedirs(os.path.join(cls.prefix_lib, "pkgconfig"))
        shutil.copy(os.path.realpath(os.environ["CLOPS_LIBRARY"]),
                    os.path.join(cls.prefix_lib, "libclops.so.1"))
        shutil.copy(os.environ["CLOPS_TEST_PC"], os.path.join(cls.prefix_lib, "pkgconfig"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared)

    def run_documented(self, commands):
        """`commands` run by sh -e from the top of the tree, as a user would: in a fresh $HOME,
        the other python3 first on PATH, no $CLOPS_LIBRARY, pip offline; the source tree must be
        left as it was. Returns the python of the venv they made, and their output."""
        home = os.path.join(self.tmp, "home")
        os.mkdir(home)
        before = tree_listing(SOURCE)
        result = run(["sh", "-ec", commands], TOP, HOME=home, CLOPS_LIBRARY=None,
                     PATH=self.other_bin + os.pathsep + os.environ["PATH"],
                     PKG_CONFIG_PATH=os.path.join(self.prefix_lib, "pkgconfig"), PIP_NO_INDEX="1")
        self.assertRan(result)
        self.assertEqual(tree_listing(SOURCE), before)
        python = os.path.join(home, ".venvs", "clops", "bin", "python")
        got = self.probe(None, python, CLOPS_LIBRARY=None)
        self.assertEqual(got["library"], os.path.join(self.prefix_lib, "libclops.so.1"))
        self.assertEqual(got["origin"], "recorded at installation in clops/_install.py: "
                         "pkg-config --variable=plugin clops when pip built the package")
        self.assertTrue(got["file"].startswith(os.path.join(home, ".venvs", "clops") + os.sep))
        return result.stdout

    def test_the_other_python3_lacks_wheel_and_numpy(self):
        # What makes the commands below a test of "another python3 first on PATH".
        for module in ("wheel", "numpy"):
            result = run(["python3", "-c", "import " + module], self.tmp,
                         PATH=self.other_bin + os.pathsep + os.environ["PATH"])
            self.assertIn("No module named '%s'" % module, result.stderr)

    def test_python_readme_commands_as_written(self):
        commands = readme_block()
        self.assertIn("/usr/bin/python3 -m venv --system-site-packages ~/.venvs/clops",
                      commands)
        output = self.run_documented(commands)
        # Its last command prints the library the installed package loaded.
        self.assertEqual(output.splitlines()[-1],
                         os.path.join(self.prefix_lib, "libclops.so.1"))

    def test_top_readme_python_line_as_written(self):
        line = top_readme_line()
        self.assertIn("-m pip install hosts/python", line)
        self.run_documented(line)

    def test_pip_needs_neither_wheel_nor_setuptools(self):
        # With setuptools 66 and no `wheel`, the setup that failed with "invalid command
        # 'bdist_wheel'", then with no setuptools at all (Python 3.12's venv).
        library = os.path.abspath(self.library)
        for step in ("setuptools 66, no wheel", "no setuptools"):
            with self.subTest(step):
                self.assertRan(run([self.bare, "-m", "pip", "install", "--no-deps",
                                    "--no-index", "--force-reinstall", SOURCE], TOP,
                                   LD_PRELOAD=None, CLOPS_LIBRARY=library))
                # Imported with Debian's NumPy added to the path (same python).
                numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
                got = self.probe(numpy_dir, self.bare, CLOPS_LIBRARY=None)
                self.assertEqual(got["library"], library)
            self.assertRan(run([self.bare, "-m", "pip", "uninstall", "-y", "setuptools"], TOP,
                               LD_PRELOAD=None))

    def test_pip_with_the_python3_first_on_path(self):
        first = shutil.which("python3")
        if first is None or os.path.realpath(first) == os.path.realpath(DEBIAN_PYTHON):
            self.skipTest("the python3 first on PATH is %s" % first)
        # A pyenv's python3, say: built and installed; it may lack NumPy, so no import.
        site = os.path.join(self.tmp, "site")
        self.assertRan(run(["python3", "-m", "pip", "install", "--no-deps", "--no-index",
                            "--target", site, SOURCE], TOP, LD_PRELOAD=None,
                           CLOPS_LIBRARY=os.path.abspath(self.library)))
        record = {}
        with open(os.path.join(site, "clops", "_install.py")) as f:
            exec(f.read(), record)
        self.assertEqual(record["LIBRARY"], os.path.abspath(self.library))

    def test_editable_install_imports_the_source_tree(self):
        python = make_venv(os.path.join(self.tmp, "editable"), "--system-site-packages")
        before = tree_listing(SOURCE)
        self.assertRan(run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-e",
                            SOURCE], TOP, LD_PRELOAD=None))
        self.assertEqual(tree_listing(SOURCE), before)
        got = self.probe(None, python)
        self.assertEqual(got["file"], os.path.join(SOURCE, "clops", "__init__.py"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
