"""test_interop.py — clops computing on OpenCL objects that pyopencl made (ABI 1.4 interop):
pyopencl makes the context, the queue and the buffers (pyopencl arrays), clops makes a pool on
them, wraps the arrays' cl_mem without a copy and runs gemm and lu on them; pyopencl reads the
results back. Checked against NumPy in float64 and SciPy's LU. unittest; the package is imported
from the directory above, the library from $CLOPS_LIBRARY (set by ctest)."""

import os
import sys
import unittest

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import scipy.linalg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import clops  # noqa: E402
from clops import _interop  # noqa: E402


def first_device():
    for platform in cl.get_platforms():
        devices = platform.get_devices()
        if devices:
            return devices[0]
    raise unittest.SkipTest("no OpenCL device")


class InteropTest(unittest.TestCase):
    def setUp(self):
        self.device = first_device()
        self.ctx = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.ctx)
        self.rng = np.random.default_rng(2304)
        self.pool = _interop.pool_from_cl(self.ctx, [self.device], [self.queue])

    def tearDown(self):
        self.pool.release()

    def wrapped(self, host):
        """A pyopencl array holding `host`, and a clops view of its cl_mem (no copy)."""
        arr = cla.to_device(self.queue, np.ascontiguousarray(host))
        buf = self.pool.wrap(arr.data)
        dtype = clops.F32 if host.dtype == np.float32 else clops.F64
        return arr, buf, buf.view(dtype, host.shape)

    def test_gemm_on_pyopencl_arrays_matches_numpy(self):
        for m, n, k in ((7, 5, 3), (1, 9, 13), (33, 17, 20)):
            for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-13)):
                if dtype == np.float64 and not self.device.double_fp_config:
                    continue
                a = self.rng.uniform(-1, 1, (m, k)).astype(dtype)
                b = self.rng.uniform(-1, 1, (k, n)).astype(dtype)
                c = self.rng.uniform(-1, 1, (m, n)).astype(dtype)
                arrays = [self.wrapped(x) for x in (a, b, c)]
                self.pool.gemm(arrays[0][2], arrays[1][2], arrays[2][2], alpha=1.5, beta=-0.25)
                want = 1.5 * a.astype(np.float64) @ b.astype(np.float64) - 0.25 * c
                got = arrays[2][0].get()  # pyopencl reads the cl_mem clops wrote
                err = np.max(np.abs(got - want))
                self.assertLessEqual(err, tol * (k + 2), (m, n, k, dtype, err))
                for _, buf, _ in arrays:
                    buf.release()

    def test_lu_in_a_pyopencl_array_matches_scipy(self):
        n = 11
        a = self.rng.uniform(-1, 1, (n, n))
        if not self.device.double_fp_config:
            a = a.astype(np.float32)
        arr, buf, view = self.wrapped(a)
        ipiv = self.pool.buffer(4 * n)
        info = self.pool.buffer(4)
        self.pool.invoke("lu", a=view, ipiv=ipiv.view(clops.I32, (n,)),
                         info=info.view(clops.I32, (1,)))
        lu_ref, piv_ref = scipy.linalg.lu_factor(a.astype(np.float64))
        got_piv = ipiv.download(np.zeros(n, np.int32))
        np.testing.assert_array_equal(got_piv - 1, piv_ref)
        tol = 1e-4 if a.dtype == np.float32 else 1e-12
        self.assertLessEqual(np.max(np.abs(arr.get() - lu_ref)), tol * n)

    def test_buffer_cl_and_memory_stats(self):
        arr = cla.zeros(self.queue, 1000, np.float32)
        before = _interop.memory_stats(self.pool)
        wrapped = self.pool.wrap(arr.data)
        self.assertEqual(wrapped.size, 4000)
        mem, context, device = _interop.buffer_cl(wrapped)
        self.assertEqual(mem, arr.data.int_ptr)
        self.assertEqual(context, self.ctx.int_ptr)
        self.assertEqual(device, 0)
        self.assertEqual(_interop.memory_stats(self.pool), before)  # the host's, not counted
        own = self.pool.buffer(777)
        now = _interop.memory_stats(self.pool)
        self.assertEqual(now["allocated_bytes"], before["allocated_bytes"] + 777)
        self.assertEqual(now["buffers"], before["buffers"] + 1)
        self.assertGreaterEqual(now["peak_bytes"], now["allocated_bytes"])
        # pyopencl sees clops' own buffer as a cl_mem of its context.
        mem, context, _ = _interop.buffer_cl(own)
        self.assertEqual(context, self.ctx.int_ptr)
        pyobj = cl.MemoryObject.from_int_ptr(mem)  # retains it
        self.assertEqual(pyobj.size, 777)
        own.release()
        wrapped.release()
        self.assertEqual(_interop.memory_stats(self.pool)["allocated_bytes"],
                         before["allocated_bytes"])
        pyobj.release()

    def test_foreign_buffers_and_bad_arguments_are_refused(self):
        other = cl.Context([self.device])
        foreign = cl.Buffer(other, cl.mem_flags.READ_WRITE, 64)
        with self.assertRaises(clops.InvalidArgumentError) as e:
            self.pool.wrap(foreign)
        self.assertIn("parameter 'cl_mem' is a buffer of another cl_context", e.exception.message)
        with self.assertRaises(clops.NotFoundError) as e:
            self.pool.wrap(cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 64), device=3)
        self.assertIn("parameter 'device' = 3", e.exception.message)
        other_queue = cl.CommandQueue(other)
        with self.assertRaises(clops.InvalidArgumentError) as e:
            _interop.pool_from_cl(self.ctx, [self.device], [other_queue])
        self.assertIn("'cl_queues[0]' is a queue of another context", e.exception.message)
        with self.assertRaises(clops.ConfigError) as e:
            _interop.pool_from_cl(self.ctx, [self.device], None,
                                  "devices = ( { type = \"cpu\"; } );")
        self.assertIn("devices: refused by pool_create_from_cl", e.exception.message)


if __name__ == "__main__":
    unittest.main()
