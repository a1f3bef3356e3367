"""clops — OpenCL compute operators (libclops) from Python: NumPy functions shaped like NumPy's
and scipy.linalg's, and the plugin's whole ABI through ctypes (nothing is compiled).

    import numpy as np, clops
    a, b = np.random.rand(300, 200), np.random.rand(200, 100)
    c = clops.gemm(a, b)                           # a @ b, on the default pool
    lu, piv = clops.lu_factor(np.random.rand(50, 50))
    x = clops.solve(np.random.rand(5, 5), np.ones(5))
    counts, rgba = clops.mandelbrot(640, 480, max_iter=256)

`import clops` loads libclops by the hosts' rule (hosts/common/loader.h): $CLOPS_LIBRARY, else
the library recorded at installation (clops/_install.py: by cmake --install, or by pip from
$CLOPS_LIBRARY or pkg-config), else libclops.so.1 in the lib directories of the prefix the
package is installed under (Windows: clops.dll beside the module and in the prefix's bin), else
from the dynamic linker's path (Windows: PATH, the DLL search order); LoadError (an ImportError) lists each path tried and why it failed.
clops.library().path is the one loaded, clops.candidates() the order.

The low-level API: Pool (pool.invoke(name, ...) runs any operator; pool.gemm(a, b, c),
pool.lu(a), pool.solve(a, b) work in place, as LAPACK), View, Buffer, ops(). A failed plugin call
raises clops.Error (a subclass per status) with .status, .status_name and .message.

Non-blocking calls (ABI 1.4): clops.submit(clops.gemm, a, b) returns a Future at once
(concurrent.futures and asyncio both take it); pool.stream() makes a Stream; Ctrl-C cancels a
running synchronous call; stream.copy(src, dst) copies between device buffers as a stream
call; pool.memory_stats() says how much device memory clops holds; `with pool.register(a):`
page-locks a host array that many calls read, so that their uploads from it are one DMA each.
clops._interop: pools on pyopencl's context, its arrays in, clops buffers out as pyopencl arrays.
"""

import numpy  # required: the package's functions take and return ndarrays

from . import _abi
from ._abi import *  # noqa: F401,F403  the constants and struct mirrors of abi/clops.h
from ._abi import _end_of  # noqa: F401  (CLOPS_API_HAS's bound; the ABI tests use it)
from . import _interop  # noqa: F401  (pyopencl interop: pools, buffers and arrays)
from ._api import (default_pool, gemm, lu_factor, lu_solve, mandelbrot, solve,  # noqa: F401
                   submit, transpose)
from ._errors import (AbiMismatchError, BuildError, ClopsCancelled, ClopsError,  # noqa: F401
                      ClopsTimeout, ConfigError,
                      DeviceError, Error, FileError, InternalError, InvalidArgumentError,
                      LinAlgError, LoadError, NoDeviceError, NotFoundError,
                      OutOfDeviceMemoryError, OutOfHostMemoryError, UnsupportedError,
                      linalg_warning)
from ._library import Library, Op, Param, candidates, library, ops  # noqa: F401
from ._library import _op_info, _params  # noqa: F401  (descriptor walking; tested directly)
from ._pool import (Buffer, Call, Device, MemoryStats, Pool, Prebuilt,  # noqa: F401
                    Registration, Stats)
from ._stream import Future, Stream  # noqa: F401
from ._norm import norm  # noqa: F401
from ._reduce import argmax, argmin, max, min, sum  # noqa: F401
from ._tensor import DeviceView, View, as_tensor  # noqa: F401
from ._version import __version__  # noqa: F401

__all__ = [
    # the NumPy functions
    "gemm", "lu_factor", "lu_solve", "solve", "transpose", "mandelbrot",
    "sum", "min", "max", "argmin", "argmax", "norm", "default_pool",
    # non-blocking calls (ABI 1.4)
    "submit", "Stream", "Future",
    # the low-level API
    "Pool", "Buffer", "Call", "Device", "Stats", "MemoryStats", "Prebuilt", "Registration", "View",
    "DeviceView", "as_tensor",
    "Library", "library", "ops", "candidates",
    "Op", "Param", "__version__",
    # errors
    "Error", "ClopsError", "InvalidArgumentError", "UnsupportedError", "OutOfDeviceMemoryError",
    "OutOfHostMemoryError", "DeviceError", "BuildError", "ConfigError", "FileError",
    "NotFoundError", "AbiMismatchError", "NoDeviceError", "InternalError", "ClopsCancelled",
    "ClopsTimeout", "LoadError",
    "LinAlgError", "linalg_warning",
]
__all__ += _abi.__all__

# Public classes show as clops.X (in reprs and tracebacks), not as the private module's.
for _name in __all__:
    if isinstance(globals()[_name], type) and globals()[_name].__module__.startswith("clops._"):
        globals()[_name].__module__ = __name__
del _name

library()  # loading is importing: a missing or unusable libclops is an ImportError (LoadError)
