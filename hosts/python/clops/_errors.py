"""_errors.py — what clops raises: Error for a failed plugin call (one subclass per
enum clops_status, each also the built-in exception a Python caller would expect), LoadError when
no libclops could be loaded, LinAlgError for a singular system, and the warning lu_factor gives
for a singular U."""

import concurrent.futures
import warnings

import numpy

from ._abi import _STATUS_NAMES


class Error(Exception):
    """A clops call failed. `status` is the enum clops_status value (an int), `status_name` its
    name ("CLOPS_ERR_INVALID_ARGUMENT"), `message` the plugin's last_error() text, which names the
    parameter, its value and what was expected."""

    def __init__(self, status, message, status_name=None):
        self.status, self.message = status, message
        if status_name is None:  # raised before the library could name it (loading)
            status_name = "CLOPS_" + ("ERR_" if status else "") + _STATUS_NAMES[status]
        self.status_name = status_name
        super().__init__("%s: %s" % (self.status_name, message))


ClopsError = Error  # the name of clops.py (one module) before it became this package


class InvalidArgumentError(Error, ValueError):
    """CLOPS_ERR_INVALID_ARGUMENT: a parameter's value is wrong; the message names it."""


class UnsupportedError(Error):
    """CLOPS_ERR_UNSUPPORTED: a dtype, layout or option the operator does not handle (f64 on a
    device without double precision, say)."""


class OutOfDeviceMemoryError(Error, MemoryError):
    """CLOPS_ERR_OUT_OF_DEVICE_MEMORY: the call would pass the device's memory limit."""


class OutOfHostMemoryError(Error, MemoryError):
    """CLOPS_ERR_OUT_OF_HOST_MEMORY."""


class DeviceError(Error):
    """CLOPS_ERR_DEVICE: an OpenCL call failed; the message carries its error name."""


class BuildError(Error):
    """CLOPS_ERR_BUILD: a kernel failed to build; the message carries the build log."""


class ConfigError(Error):
    """CLOPS_ERR_CONFIG: a configuration error; the message has file:line: key."""


class FileError(Error, OSError):
    """CLOPS_ERR_IO: a file could not be read or written."""


class NotFoundError(Error, LookupError):
    """CLOPS_ERR_NOT_FOUND: no such operator, parameter, device or file."""


class AbiMismatchError(Error):
    """CLOPS_ERR_ABI_MISMATCH: a struct_size too small, or an ABI version not served."""


class NoDeviceError(Error):
    """CLOPS_ERR_NO_DEVICE: no OpenCL device matches the configuration."""


class InternalError(Error):
    """CLOPS_ERR_INTERNAL: a bug in clops; please report the message."""


class ClopsCancelled(Error, concurrent.futures.CancelledError):
    """CLOPS_ERR_CANCELLED (ABI 1.4): a submitted call was cancelled (Future.cancel(), Ctrl-C
    during a call), or a call it waited for failed or was cancelled; its host outputs are
    untouched. A concurrent.futures.CancelledError, so code written for futures catches it."""


class ClopsTimeout(Error, concurrent.futures.TimeoutError):
    """CLOPS_ERR_TIMEOUT (ABI 1.4): a wait's timeout passed first; nothing else changed. A
    concurrent.futures.TimeoutError (the built-in TimeoutError since Python 3.11)."""


_BY_STATUS = (None, InvalidArgumentError, UnsupportedError, OutOfDeviceMemoryError,
              OutOfHostMemoryError, DeviceError, BuildError, ConfigError, FileError,
              NotFoundError, AbiMismatchError, NoDeviceError, InternalError, ClopsCancelled,
              ClopsTimeout)


def error_for(status, message, status_name=None):
    """The exception for a failed call's status: its class, or Error for a status newer than
    this binding."""
    cls = _BY_STATUS[status] if 0 < status < len(_BY_STATUS) else Error
    if status_name is None and cls is Error:
        status_name = "CLOPS_STATUS_%d" % status
    return cls(status, message, status_name)


class LoadError(Error, ImportError):
    """No libclops could be loaded (status CLOPS_ERR_NOT_FOUND): the message lists every path
    tried and why it failed. An ImportError, since `import clops` loads the library."""


class LinAlgError(numpy.linalg.LinAlgError):
    """A linear-algebra failure: solve() on a singular matrix."""


def linalg_warning():
    """The category lu_factor warns with on a singular U: SciPy's LinAlgWarning when SciPy is
    installed (what scipy.linalg.lu_factor gives, so filters written for it apply), else
    RuntimeWarning."""
    try:
        from scipy.linalg import LinAlgWarning
    except ImportError:
        return RuntimeWarning
    return LinAlgWarning


def warn_singular(k, stacklevel):
    """SciPy's warning for U(k, k) = 0 (k 1-based, as LAPACK's info)."""
    warnings.warn("Diagonal number %d is exactly zero. Singular matrix." % k, linalg_warning(),
                  stacklevel=stacklevel + 1)
