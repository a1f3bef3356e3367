"""_version.py — the package's version: libclops's (CMake's project version), which the tests
check against the loaded library's version(). Read by build_backend.py without importing clops."""

__version__ = "1.5.0"
