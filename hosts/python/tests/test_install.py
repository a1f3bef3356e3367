"""test_install.py — the package installed, then imported from where it was installed (never from
hosts/python) by a fresh interpreter that runs a GEMM of exactly representable numbers:
- pip, offline (--no-build-isolation --no-deps --no-index), into a temporary --target, with
  $CLOPS_LIBRARY naming the build's library;
- `cmake --install` of this directory's component python into a temporary prefix: its
  clops/_install.py must name the library under that prefix, and `import clops` without
  $CLOPS_LIBRARY must load the library found there;
- and, when no candidate loads, the ImportError (clops.LoadError) lists each path and why.
ctest sets CLOPS_LIBRARY, CLOPS_TEST_CMAKE (cmake) and CLOPS_TEST_INSTALL_DIR (this directory's
build directory). unittest: `python3 tests/test_install.py`."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # hosts/python

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


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="clops-install-test-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.library = os.environ["CLOPS_LIBRARY"]

    def assertRan(self, result):
        self.assertEqual(result.returncode, 0, "%s\n%s\n%s" % (result.args, result.stdout,
                                                              result.stderr))

    def probe(self, pythonpath, **env_changes):
        result = run([sys.executable, "-c", PROBE], self.tmp, PYTHONPATH=pythonpath,
                     **env_changes)
        self.assertRan(result)
        got = json.loads(result.stdout)
        self.assertEqual(got["c"], WANT_C)
        self.assertEqual(got["version"], version())
        return got

    def test_pip_install_offline_into_a_target_directory(self):
        # From a copy: pip builds in the source tree, which must stay clean.
        src, site = os.path.join(self.tmp, "src"), os.path.join(self.tmp, "site")
        os.mkdir(src)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(os.path.join(SOURCE, name), src)
        shutil.copytree(os.path.join(SOURCE, "clops"), os.path.join(src, "clops"),
                        ignore=shutil.ignore_patterns("__pycache__", "_install.py"))
        self.assertRan(run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                            "--no-deps", "--no-index", "--target", site, src], self.tmp,
                           LD_PRELOAD=None))
        self.assertFalse(os.path.exists(os.path.join(site, "clops", "_install.py")))
        with open(glob.glob(os.path.join(site, "clops-*.dist-info", "METADATA"))[0]) as f:
            metadata = f.read()
        self.assertIn("Version: %s\n" % version(), metadata)
        self.assertIn("Requires-Dist: numpy", metadata)
        got = self.probe(site)
        self.assertEqual(got["file"], os.path.join(site, "clops", "__init__.py"))
        self.assertEqual((got["library"], got["origin"]), (self.library, "$CLOPS_LIBRARY"))

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


if __name__ == "__main__":
    unittest.main(verbosity=2)
