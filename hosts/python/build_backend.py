"""build_backend.py — the package's PEP 517 build backend, with Python's standard library alone,
so that `pip install hosts/python` works offline with any pip and any setuptools or none:
setuptools before 70.1 builds no wheel without the `wheel` package, which a pyenv python3 or a
bare virtual environment lacks (`invalid command 'bdist_wheel'`), and Python 3.12's venv has no
setuptools at all. The package is pure Python: a wheel is a zip of clops/ and its metadata.

A wheel records the libclops the installed package is to load, in clops/_install.py (as
`cmake --install` does): $CLOPS_LIBRARY when it is set while pip runs (an absolute path, or a
bare file name for the dynamic linker's search), else the installed clops that
`pkg-config --variable=plugin clops` names; neither: no record, and `import clops` searches
(clops/_library.py). An editable install (`pip install -e`) records nothing: its package is
the source tree's."""

import base64
import hashlib
import io
import os
import subprocess
import tarfile
import zipfile

SOURCE = os.path.dirname(os.path.abspath(__file__))  # hosts/python
NAME = "clops"


def version():
    """clops/_version.py's __version__, read without importing clops (which loads libclops)."""
    scope = {}
    with open(os.path.join(SOURCE, NAME, "_version.py")) as f:
        exec(f.read(), scope)
    return scope["__version__"]


def metadata():
    """The core metadata (METADATA in a wheel, PKG-INFO in an sdist), README.md its
    description."""
    with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return "\n".join([
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + version(),
        "Summary: OpenCL compute operators (libclops): NumPy functions shaped like NumPy's and "
        "scipy.linalg's, and the plugin's C ABI through ctypes",
        "Requires-Python: >=3.8",
        "Requires-Dist: numpy",
        "Provides-Extra: test",
        "Requires-Dist: scipy; extra == \"test\"",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Topic :: Scientific/Engineering :: Mathematics",
        "Description-Content-Type: text/markdown",
        "",
        readme,
    ])


def package_files():
    """(path in the archive, path here) of the package's modules: clops/*.py, never a source
    tree's _install.py or caches."""
    names = sorted(n for n in os.listdir(os.path.join(SOURCE, NAME))
                   if n.endswith(".py") and n != "_install.py")
    return [(NAME + "/" + n, os.path.join(SOURCE, NAME, n)) for n in names]


class BuildError(Exception):
    """A wheel that would not work as asked (pip shows the message)."""


def library_to_record():
    """(library, how it was found) for clops/_install.py, or None: see the module's doc."""
    named = os.environ.get("CLOPS_LIBRARY")
    if named:
        if "/" in named and not os.path.isabs(named):
            # pip runs this in the package's directory, not where the user typed the command.
            raise BuildError("$CLOPS_LIBRARY = %r is a relative path, and pip builds the package "
                             "in another directory; name the library by its absolute path "
                             "(CLOPS_LIBRARY=$PWD/%s)" % (named, named))
        if "/" in named and not os.path.isfile(named):
            raise BuildError("$CLOPS_LIBRARY = %r: no such file; it names the libclops that "
                             "the installed package is to load" % named)
        return named, "$CLOPS_LIBRARY when pip built the package"
    try:
        found = subprocess.run(["pkg-config", "--variable=plugin", "clops"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               universal_newlines=True).stdout.strip()
    except OSError:  # no pkg-config
        return None
    if found and os.path.isfile(found):
        # clops.pc's prefix is relative to the file itself (${pcfiledir}/../..).
        return (os.path.normpath(found),
                "pkg-config --variable=plugin clops when pip built the package")
    return None


def install_record(library, found_by):
    """clops/_install.py's text, the fields cmake's record_install.cmake writes and how the
    library was found."""
    return ('"""_install.py — written by hosts/python/build_backend.py when pip built the '
            'package: the\nlibclops that import clops loads after $CLOPS_LIBRARY."""\n\n'
            "LIBDIR = %r\nLIBRARY = %r\nFOUND_BY = %r\n"
            % (os.path.dirname(library), library, found_by))


class Wheel:
    """A wheel being written: its files and their RECORD lines."""

    def __init__(self, directory):
        self.dist_info = "%s-%s.dist-info" % (NAME, version())
        self.name = "%s-%s-py3-none-any.whl" % (NAME, version())
        self.zip = zipfile.ZipFile(os.path.join(directory, self.name), "w",
                                   zipfile.ZIP_DEFLATED)
        self.records = []

    def add(self, arcname, data):
        if isinstance(data, str):
            data = data.encode("utf-8")
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        self.records.append("%s,sha256=%s,%d" % (arcname, digest.decode(), len(data)))
        self.write(arcname, data)

    def write(self, arcname, data):
        # A fixed date, so that the same sources make the same wheel; files readable by all.
        info = zipfile.ZipInfo(arcname, (1980, 1, 1, 0, 0, 0))
        info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
        self.zip.writestr(info, data)

    def finish(self):
        self.add(self.dist_info + "/METADATA", metadata())
        self.add(self.dist_info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: clops "
                 "build_backend.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        self.add(self.dist_info + "/top_level.txt", NAME + "\n")
        record = self.dist_info + "/RECORD"
        self.write(record, "\n".join(self.records + [record + ",,"]) + "\n")
        self.zip.close()
        return self.name


# ---- PEP 517 and PEP 660 hooks ----------------------------------------------------------------

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    record = library_to_record()
    wheel = Wheel(wheel_directory)
    for arcname, path in package_files():
        with open(path, "rb") as f:
            wheel.add(arcname, f.read())
    if record:
        wheel.add(NAME + "/_install.py", install_record(*record))
    return wheel.finish()


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    wheel = Wheel(wheel_directory)
    wheel.add(NAME + ".pth", SOURCE + "\n")  # site adds the source tree to sys.path
    return wheel.finish()


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz",
                      format=tarfile.PAX_FORMAT) as tar:
        files = [("pyproject.toml", os.path.join(SOURCE, "pyproject.toml")),
                 ("build_backend.py", os.path.join(SOURCE, "build_backend.py")),
                 ("README.md", os.path.join(SOURCE, "README.md"))] + package_files()
        for arcname, path in files:
            tar.add(path, arcname=base + "/" + arcname)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = metadata().encode("utf-8")
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return name
