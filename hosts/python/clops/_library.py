"""_library.py — finding and loading libclops, and reading its table and operator descriptors.

The rule is the one every clops host follows (hosts/common/loader.h). `import clops` loads
$CLOPS_LIBRARY when it is set, and only that (a library the user named that does not load is an
error, not a reason to pick another one); else the first that loads and serves ABI 1 of:
1. the library recorded when the package was installed, in clops/_install.py: by
   `cmake --install` (and so the .deb) the library installed with it; by pip
   (build_backend.py) $CLOPS_LIBRARY as it was while pip ran, else the installed clops that
   `pkg-config --variable=plugin clops` named; absent in a source tree;
2. libclops.so.1 in the library directories of the prefix the package is installed under, when
   it lies in PREFIX/lib*/python*/{site,dist}-packages (a venv, pip's --prefix or --user,
   `cmake --install --prefix`): PREFIX/lib/<multiarch>, PREFIX/lib64 or PREFIX/lib, those that
   exist; and PREFIX/.. the same way when PREFIX is Debian's `local` (Debian's pip installs
   `--prefix P` into P/local/lib/python3.X/dist-packages);
3. libclops.so.1 through the dynamic linker's search path.
On Windows the plugin is clops.dll: 1 as above; 2. clops.dll beside the module (in this clops
directory) and in PREFIX/bin, where the prefix's Lib/site-packages holds the package (CMake puts
DLLs in bin); 3. clops.dll through the DLL search order: the first directory of PATH that holds
it (ctypes no longer searches PATH since Python 3.8), else the name, which the system's
directories and os.add_dll_directory()'s serve.
A candidate that does not load, or does not serve ABI 1, is passed over; when none loads,
LoadError lists each and why."""

import ctypes
import os
import sys
import sysconfig
import threading
from collections import namedtuple
from ctypes import POINTER, c_uint32, c_void_p

from ._abi import (ABI_MAJOR, ARG_SIZE_1_1, DTYPES, ERR_NOT_FOUND, ERR_UNSUPPORTED, LOG_WARNING, OK,
                   PARAM_SIZE_1_1, _end_of, clops_api, clops_arg, clops_log_fn, clops_op,
                   clops_param)
from ._errors import LoadError, error_for

WINDOWS = os.name == "nt"
SONAME = "clops.dll" if WINDOWS else "libclops.so.1"  # the plugin's file name on this system
PACKAGE = os.path.dirname(os.path.abspath(__file__))  # this clops directory


class _Refused(Exception):
    """A library that loaded but cannot serve this binding (the reason is the message)."""


def installed_record():
    """clops/_install.py's (library, how it was found), or None without that file."""
    try:
        from . import _install
    except ImportError:
        return None
    return _install.LIBRARY, getattr(_install, "FOUND_BY", "cmake --install")


def windows_libraries(package=PACKAGE):
    """clops.dll beside the module (in the clops directory `package`), then in PREFIX/bin when
    the package lies in PREFIX/Lib/site-packages: those directories that exist."""
    site = os.path.dirname(package)
    dirs = [package]
    if os.path.basename(site).lower() == "site-packages" and \
            os.path.basename(os.path.dirname(site)).lower() == "lib":
        dirs.append(os.path.join(os.path.dirname(os.path.dirname(site)), "bin"))
    return [os.path.join(d, SONAME) for d in dirs if os.path.isdir(d)]


def searched_library():
    """Step 3 on Windows: the first clops.dll on PATH (a full path, which ctypes loads with
    the DLL's own directory searched for its dependencies), else the bare name."""
    for d in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(d, SONAME)
        if d and os.path.isfile(path):
            return path
    return SONAME


def prefix_libraries(package=PACKAGE):
    """libclops.so.1 in the existing library directories of the prefix `package` (a clops
    directory) is installed under, in the order tried; [] when it lies in no such prefix."""
    if WINDOWS:
        return windows_libraries(package)
    site = os.path.dirname(package)
    version_dir = os.path.dirname(site)
    libdir = os.path.dirname(version_dir)
    if os.path.basename(site) not in ("site-packages", "dist-packages") or \
            not os.path.basename(version_dir).startswith("python") or \
            not os.path.basename(libdir).startswith("lib"):
        return []
    prefixes = [os.path.dirname(libdir)]
    if os.path.basename(site) == "dist-packages" and os.path.basename(prefixes[0]) == "local":
        prefixes.append(os.path.dirname(prefixes[0]))
    multiarch = sysconfig.get_config_var("MULTIARCH") or \
        getattr(sys.implementation, "_multiarch", None)
    out = []
    for prefix in prefixes:
        dirs = [os.path.join(prefix, "lib", multiarch)] if multiarch else []
        dirs += [os.path.join(prefix, os.path.basename(libdir)), os.path.join(prefix, "lib")]
        for d in dirs:
            path = os.path.join(d, SONAME)
            if os.path.isdir(d) and path not in out:
                out.append(path)
    return out


def candidates():
    """(path, where it comes from) in the order `import clops` tries them."""
    env = os.environ.get("CLOPS_LIBRARY")
    if env:
        return [(env, "$CLOPS_LIBRARY")]
    out = []
    record = installed_record()
    if record:
        out.append((record[0], "recorded at installation in clops/_install.py: %s" % record[1]))
    if WINDOWS:
        out += [(path, "beside the module, or in the prefix's bin")
                for path in prefix_libraries()]
        out.append((searched_library(), "the DLL search order and PATH"))
        return out
    out += [(path, "the prefix the package is installed under") for path in prefix_libraries()]
    out.append((SONAME, "the dynamic linker's search path"))
    return out


_ARG_SIZE = ctypes.sizeof(clops_arg)


class Library:
    """The loaded plugin: its table `api`, and the operator descriptors. Library() searches the
    candidates() in order; Library(path) loads that file only. `path` is the one loaded."""

    def __init__(self, path=None):
        tried = []
        for candidate, origin in [(path, "given")] if path else candidates():
            try:
                self._open(candidate)
            except (OSError, _Refused) as e:
                tried.append("  %s (%s): %s" % (candidate, origin, e))
                continue
            self.path, self.origin = candidate, origin
            self._ops, self._ops_lock = {}, threading.Lock()
            return
        raise LoadError(ERR_NOT_FOUND, "cannot load libclops; tried, in order:\n" +
                        "\n".join(tried))

    def _open(self, path):
        # Windows has no RTLD_ flags: LoadLibraryEx resolves everything at once, per module.
        dll = ctypes.CDLL(path) if WINDOWS else ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        try:
            entry = dll.clops_plugin_entry
        except AttributeError:
            raise _Refused("no symbol clops_plugin_entry: not a clops plugin") from None
        entry.restype, entry.argtypes = POINTER(clops_api), [c_uint32]
        table = entry(ABI_MAJOR)
        # A shorter table comes from a plugin older than this mirror: members past its end must
        # not be read, and everything up to invoke is needed here.
        if not table or table.contents.abi_major != ABI_MAJOR:
            raise _Refused("does not serve ABI %d" % ABI_MAJOR)
        self.dll, self.api = dll, table.contents
        if not self.has("invoke"):
            raise _Refused("the table has %d bytes, ABI %d.0 needs %d"
                           % (self.api.struct_size, ABI_MAJOR, _end_of("invoke")))

    def has(self, member):
        """CLOPS_API_HAS: whether the plugin's table holds `member`."""
        return self.api.struct_size >= _end_of(member)

    def table(self, member):
        """The plugin's table, which must serve `member` (ABI 1.4): else UnsupportedError naming
        the ABI the plugin serves."""
        if not self.has(member):
            raise error_for(ERR_UNSUPPORTED, "%s: this libclops (ABI 1.%d) does not serve it "
                            "(ABI 1.4)" % (member, self.api.abi_minor))
        return self.api

    def invoke(self, pool, op, args, nargs):
        """invoke_sized with this mirror's sizeof(clops_arg); invoke() on a plugin older than
        ABI 1.2, which reads 1.1's clops_arg (the size this mirror still has)."""
        sized = self.__dict__.get("_sized")
        if sized is None:
            sized = self._sized = self.has("invoke_sized")
        if sized:
            return self.api.invoke_sized(pool, op, args, nargs, _ARG_SIZE)
        assert ctypes.sizeof(clops_arg) == ARG_SIZE_1_1, "invoke() needs 1.1's clops_arg"
        return self.api.invoke(pool, op, args, nargs)

    def check(self, status):
        """Raises the Error subclass for a failed call, with the plugin's message; read before
        any other call replaces it."""
        if status != OK:
            raise error_for(status, self.api.last_error().decode(),
                            self.api.status_name(status).decode())

    def version(self):
        return self.api.version().decode()

    def ops(self):
        """Every operator's descriptor, as Op tuples."""
        return [_op_info(self.api.op_at(i).contents) for i in range(self.api.op_count())]

    def find(self, name):
        op = self.api.op_find(name.encode())
        if not op:
            self.check(ERR_NOT_FOUND)
        return op

    def op(self, name):
        """The Op tuple of operator `name` (read once: descriptors live as long as the
        library)."""
        with self._ops_lock:
            info = self._ops.get(name)
            if info is None:
                info = self._ops[name] = _op_info(self.find(name).contents)
        return info

    def set_log_callback(self, fn, max_level=LOG_WARNING):
        """fn(level, message) receives the plugin's diagnostics, from any thread; None
        removes it."""
        # The ctypes callback is kept alive here for as long as the plugin may call it.
        if fn is None:
            self._log_fn = clops_log_fn()
        else:
            self._log_fn = clops_log_fn(lambda level, message, user: fn(level, message.decode()))
        self.api.set_log_callback(self._log_fn, None, max_level)


def _params(op):
    """The operator's parameter descriptors (a clops_op), stepping by the plugin's param_size:
    the plugin's struct clops_param may be larger or smaller than this mirror. A plugin older
    than ABI 1.2 does not state it (its struct_size ends before): its size is 1.1's."""
    has_size = op.struct_size >= _end_of("param_size", clops_op)
    size = op.param_size if has_size else PARAM_SIZE_1_1
    first = ctypes.cast(op.params, c_void_p).value
    return [clops_param.from_address(first + k * size) for k in range(op.param_count)]


Param = namedtuple("Param", "name kind dtypes enum_values default doc")


class Op(namedtuple("Op", "name version summary doc params")):
    """An operator's descriptor, read into Python: its Param tuples in order, and by name."""
    __slots__ = ()

    @property
    def params_by_name(self):
        return {p.name: p for p in self.params}


def _text(b):
    return b.decode() if b is not None else None


def _op_info(op):
    params = []
    for p in _params(op):
        values = []
        while p.enum_values and p.enum_values[len(values)] is not None:
            values.append(p.enum_values[len(values)].decode())
        dtypes = [DTYPES[d][0] for d in DTYPES if p.dtypes & (1 << d)]
        params.append(Param(p.name.decode(), p.kind, dtypes, values, _text(p.default_value),
                            _text(p.doc)))
    return Op(op.name.decode(), op.version, _text(op.summary), _text(op.doc), params)


_library = None
_library_lock = threading.Lock()


def library():
    """The process's Library, loaded on first use (`import clops` does it)."""
    global _library
    if _library is None:
        with _library_lock:
            if _library is None:
                _library = Library()
    return _library


def ops():
    return library().ops()
