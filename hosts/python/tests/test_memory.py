"""test_memory.py — device and host memory from Python (ABI 1.4): Stream.copy (buffer_copy) as a
stream call returning the package's Future: byte ranges at awkward offsets checked against NumPy,
the rest of the destination untouched, ordering behind another stream's gemm through wait=,
refused copies raising at once; Pool.memory_stats: a buffer's bytes counted exactly and given
back, a wrapped pyopencl buffer not counted; Pool.register (host_register): gemm on operands
inside a registered array against a long-double product and bit for bit against the same call
unregistered, the with block unregistering, overlapping and non-contiguous registrations
refused, a submitted call outliving its array's registration, the array held until unregister or
the pool's release, a library without the members refused by name; Pool.buffer(device=...)
(buffer_create_on), on a pool of two devices where there is one (two GPUs, or PoCL's two CPU
devices): random bytes round-tripping on each device, the buffer living and counted there, a
gemm on buffers of device 0 and of the last device against a long-double product, device 99
refused (NotFoundError naming 'device', nothing allocated), a library without the member
refused by name while buffer(nbytes) still works. unittest; the package is imported from the
directory above, the library from $CLOPS_LIBRARY (set by ctest)."""

import concurrent.futures
import gc
import os
import sys
import time
import unittest
import weakref

# PoCL then shows two CPU devices, for buffers on device 1 (a value the user set is kept); set
# before OpenCL is first asked for its platforms.
os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
import clops  # noqa: E402
from clops import _interop  # noqa: E402


def first_device():
    return next(d for p in cl.get_platforms() for d in p.get_devices())


class StreamCopyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # On pyopencl's context: a user event of it holds a call back (cl_wait).
        cls.ctx = cl.Context([first_device()])
        cls.pool = _interop.pool_from_cl(cls.ctx, cls.ctx.devices)

    @classmethod
    def tearDownClass(cls):
        cls.pool.release()

    def setUp(self):
        self.rng = np.random.default_rng(int(time.time() * 1000) % 2**32)

    def random_buffer(self, nbytes):
        data = self.rng.integers(0, 256, nbytes, dtype=np.uint8)
        buf = self.pool.buffer(nbytes)
        buf.upload(data)
        return buf, data

    def test_copy_writes_the_range_and_nothing_else(self):
        src, src_data = self.random_buffer(8 * 1001 + 24)
        dst, dst_data = self.random_buffer(8 * 777 + 5)
        with self.pool.stream() as s:
            f = s.copy(src, dst, src_offset=17, dst_offset=41, nbytes=3001)
            self.assertIsInstance(f, clops.Future)
            self.assertIsInstance(f, concurrent.futures.Future)
            self.assertIs(f.result(120), dst)
        expected = dst_data.copy()
        expected[41:41 + 3001] = src_data[17:17 + 3001]
        np.testing.assert_array_equal(dst.download(np.empty_like(dst_data)), expected)
        np.testing.assert_array_equal(src.download(np.empty_like(src_data)), src_data)
        src.release()
        dst.release()

    def test_copy_without_nbytes_takes_the_rest_of_src(self):
        src, src_data = self.random_buffer(1000)
        dst, dst_data = self.random_buffer(2000)
        with self.pool.stream() as s:
            done, _ = concurrent.futures.wait([s.copy(src, dst, src_offset=333, dst_offset=999)],
                                              timeout=120)
            self.assertEqual(len(done), 1)
        expected = dst_data.copy()
        expected[999:999 + 667] = src_data[333:]
        np.testing.assert_array_equal(dst.download(np.empty_like(dst_data)), expected)
        src.release()
        dst.release()

    def test_copy_waits_for_a_gemm_on_another_stream(self):
        m, n, k = 37, 29, 45
        a, b = self.rng.standard_normal((m, k)), self.rng.standard_normal((k, n))
        dtype = clops.F64
        bufs = [self.pool.buffer(x) for x in (a.nbytes, b.nbytes, 8 * m * n, 8 * m * n)]
        bufs[0].upload(a)
        bufs[1].upload(b)
        bufs[3].upload(np.full((m, n), np.nan))
        gate = cl.UserEvent(self.ctx)
        with self.pool.stream() as s1, self.pool.stream() as s2:
            f1 = s1.submit("gemm", a=bufs[0].view(dtype, a.shape), b=bufs[1].view(dtype, b.shape),
                           c=bufs[2].view(dtype, (m, n)), cl_wait=[gate])
            f2 = s2.copy(bufs[2], bufs[3], wait=[f1])
            time.sleep(0.05)
            self.assertFalse(f2.done())  # held back by the gemm the gate holds back
            gate.set_status(cl.command_execution_status.COMPLETE)
            self.assertIs(f2.result(120), bufs[3])
        c = bufs[3].download(np.empty((m, n)))
        reference = (a.astype(np.longdouble) @ b.astype(np.longdouble)).astype(np.float64)
        self.assertLess(np.max(np.abs(c - reference)), 1e-12 * k * np.max(np.abs(a)) *
                        np.max(np.abs(b)))
        for buf in bufs:
            buf.release()

    def test_refused_copy_raises_at_once_and_names_the_parameter(self):
        buf, data = self.random_buffer(4096)
        other, _ = self.random_buffer(100)
        with self.pool.stream() as s:
            with self.assertRaises(clops.InvalidArgumentError) as caught:
                s.copy(buf, buf, src_offset=0, dst_offset=100, nbytes=1000)
            self.assertIn("'dst'", caught.exception.message)
            self.assertIn("overlaps", caught.exception.message)
            with self.assertRaises(clops.Error) as caught:
                s.copy(buf, other, nbytes=101)
            self.assertIn("'dst", caught.exception.message)
        np.testing.assert_array_equal(buf.download(np.empty_like(data)), data)
        buf.release()
        other.release()


class MemoryStatsTest(unittest.TestCase):
    def test_a_buffer_counts_its_bytes_and_gives_them_back(self):
        with clops.Pool() as pool:
            before = pool.memory_stats()
            self.assertIsInstance(before, clops.MemoryStats)
            self.assertGreater(before.limit_bytes, 0)
            self.assertGreaterEqual(before.peak_bytes, before.allocated_bytes)
            nbytes = 8 * 12345 + 24
            buf = pool.buffer(nbytes)
            now = pool.memory_stats(0)
            self.assertEqual(now.allocated_bytes - before.allocated_bytes, nbytes)
            self.assertEqual(now.buffers, before.buffers + 1)
            self.assertGreaterEqual(now.peak_bytes, now.allocated_bytes)
            self.assertLessEqual(now.allocated_bytes, now.limit_bytes)
            buf.release()
            after = pool.memory_stats()
            self.assertEqual((after.allocated_bytes, after.buffers),
                             (before.allocated_bytes, before.buffers))
            self.assertEqual(after.limit_bytes, before.limit_bytes)
            with self.assertRaises(clops.NotFoundError) as caught:
                pool.memory_stats(device=pool.lib.api.pool_device_count(pool.handle))
            self.assertIn("'device'", caught.exception.message)

    def test_a_wrapped_pyopencl_buffer_is_not_counted(self):
        device = first_device()
        ctx = cl.Context([device])
        host = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1 << 20)
        pool = _interop.pool_from_cl(ctx, [device])
        before = pool.memory_stats()
        wrapped = _interop.wrap_cl_buffer(pool, host)
        self.assertEqual(pool.memory_stats(), before)
        self.assertEqual(_interop.memory_stats(pool), before._asdict())
        wrapped.release()
        pool.release()


class HostRegisterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # On pyopencl's context: a user event of it holds a submitted call back (cl_wait).
        device = first_device()
        cls.ctx = cl.Context([device])
        cls.pool = _interop.pool_from_cl(cls.ctx, cls.ctx.devices)
        cls.dtypes = (np.float32, np.float64) if device.double_fp_config else (np.float32,)

    @classmethod
    def tearDownClass(cls):
        cls.pool.release()

    def setUp(self):
        self.rng = np.random.default_rng(int(time.time() * 1000) % 2**32)

    def region(self, dtype, m, n, k):
        """One array holding a (m x k) and b (k x n) at odd offsets, and the two views."""
        region = self.rng.uniform(-1, 1, 3 + m * k + 5 + k * n + 7).astype(dtype)
        a = region[3:3 + m * k].reshape(m, k)
        b = region[3 + m * k + 5:3 + m * k + 5 + k * n].reshape(k, n)
        return region, a, b

    def assert_product(self, c, a, b):
        """c within 2(K+2)u |a||b| elementwise of a long-double product."""
        exact = a.astype(np.longdouble) @ b.astype(np.longdouble)
        bound = np.abs(a).astype(np.longdouble) @ np.abs(b).astype(np.longdouble)
        u = np.finfo(c.dtype).eps / 2
        excess = np.abs(c - exact) - 2 * (a.shape[1] + 2) * u * bound
        self.assertLessEqual(np.max(excess), 0, (c.dtype, a.shape, b.shape))

    def test_gemm_on_a_registered_array_matches_numpy(self):
        # The larger shape spans over 1 MiB: a submitted call (run_interruptible), the smaller
        # one goes through invoke_sized.
        for dtype in self.dtypes:
            for m, n, k in ((37, 29, 53), (1, 1, 1), (301, 263, 257)):
                region, a, b = self.region(dtype, m, n, k)
                c = np.full((m, n), np.nan, dtype)
                with self.pool.register(region) as reg:
                    self.assertTrue(reg.registered)
                    self.pool.gemm(a, b, c)
                    fortran = np.asfortranarray(c)
                    self.pool.gemm(a, b, fortran)  # the output's layout is the caller's
                self.assert_product(c, a, b)
                staged = self.pool.gemm(a, b, np.full((m, n), np.nan, dtype))
                np.testing.assert_array_equal(c, staged)
                np.testing.assert_array_equal(fortran, staged)

    def test_with_block_unregisters(self):
        x = self.rng.standard_normal(1001)
        with self.pool.register(x) as reg:
            self.assertIsInstance(reg, clops.Registration)
            self.assertEqual((reg.address, reg.nbytes), (x.ctypes.data, x.nbytes))
            self.assertIs(reg.array, x)
            self.assertIn("registered", repr(reg))
        self.assertFalse(reg.registered)
        reg.unregister()  # again: nothing
        again = self.pool.register(x)  # would overlap if the with block had not unregistered
        self.assertTrue(again.registered)
        reg.unregister()  # the first one's must not unregister the second
        self.assertTrue(again.registered)
        again.unregister()
        again.unregister()
        self.assertFalse(again.registered)

    def test_overlapping_and_non_contiguous_registrations_are_refused(self):
        x = self.rng.standard_normal((40, 30))
        with self.pool.register(x[10:20]):
            for other in (x, x[15:16], x[19:25]):
                with self.assertRaises(clops.InvalidArgumentError) as caught:
                    self.pool.register(other)
                self.assertIn("overlaps", caught.exception.message)
            with self.pool.register(x[20:]):  # adjacent is not overlapping
                pass
        with self.assertRaises(clops.InvalidArgumentError) as caught:
            self.pool.register(x[:, ::2])
        self.assertIn("'array'", caught.exception.message)
        self.assertIn("not contiguous", caught.exception.message)
        with self.pool.register(x.T):  # Fortran order is one block too
            pass
        with self.assertRaises(clops.InvalidArgumentError) as caught:
            self.pool.register(np.empty(0))
        self.assertIn("'bytes'", caught.exception.message)
        with self.assertRaises(TypeError):
            self.pool.register([1.0, 2.0])
        with self.pool.register(bytearray(4096)) as reg:  # the buffer protocol
            self.assertEqual(reg.nbytes, 4096)

    def test_submitted_call_outlives_its_registration(self):
        m, n, k = 41, 23, 67
        region, a, b = self.region(self.dtypes[-1], m, n, k)
        a_copy, b_copy = a.copy(), b.copy()
        held = weakref.ref(region)
        reg = self.pool.register(region)
        gate = cl.UserEvent(self.ctx)
        with self.pool.stream() as s:
            try:
                f = s.submit(clops.gemm, a, b, cl_wait=[gate])
                time.sleep(0.05)
                self.assertFalse(f.done())  # held back by the gate
                reg.unregister()
                self.assertFalse(reg.registered)
                del reg, region, a, b
                gc.collect()
                self.assertIsNotNone(held())  # the future holds the operands
                self.assertFalse(f.done())
            finally:
                gate.set_status(cl.command_execution_status.COMPLETE)
            c = f.result(120)
        self.assert_product(c, a_copy, b_copy)
        del f
        gc.collect()
        self.assertIsNone(held())

    def test_the_pool_holds_the_array_until_unregister_or_its_release(self):
        pool = clops.Pool()
        x, y = self.rng.standard_normal(777), self.rng.standard_normal(333)
        held_x, held_y = weakref.ref(x), weakref.ref(y)
        kept = pool.register(y)
        pool.register(x)  # the Registration dropped: the range stays registered
        del x, y
        gc.collect()
        self.assertIsNotNone(held_x())
        with self.assertRaises(clops.InvalidArgumentError) as caught:
            pool.register(held_x())
        self.assertIn("overlaps", caught.exception.message)
        pool.release()  # frees both ranges: no crash, and the arrays are let go of
        self.assertFalse(kept.registered)
        kept.unregister()  # after the pool's release: nothing
        del kept
        gc.collect()
        self.assertIsNone(held_x())
        self.assertIsNone(held_y())
        with self.assertRaises(clops.Error):
            pool.register(np.ones(10))  # the pool was released

    def test_a_library_without_the_members_refuses_by_name(self):
        lib = self.pool.lib
        lib.has = lambda member, has=lib.has: member not in ("host_register",
                                                             "host_unregister") and has(member)
        try:
            with self.assertRaises(clops.UnsupportedError) as caught:
                self.pool.register(np.ones(10))
            self.assertIn("host_unregister", caught.exception.message)
            self.assertIn("ABI 1.4", caught.exception.message)
        finally:
            lib.__dict__.pop("has", None)
        self.assertTrue(lib.has("host_unregister"))


def pool_of_two_devices_or_one():
    """Two GPUs, or PoCL's two CPU devices (POCL_DEVICES, set above); else the default pool."""
    for kind in ("gpu", "cpu"):
        try:
            return clops.Pool(config_text='devices = ( { type = "%s"; }, { type = "%s"; '
                              'index = 1; } ); cpu_fallback = false;' % (kind, kind))
        except clops.Error:
            pass
    return clops.Pool()


class BufferOnDeviceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pool = pool_of_two_devices_or_one()
        cls.devices = cls.pool.devices()

    @classmethod
    def tearDownClass(cls):
        cls.pool.release()

    def setUp(self):
        self.rng = np.random.default_rng(int(time.time() * 1000) % 2**32)

    def test_random_bytes_round_trip_on_each_device_and_live_there(self):
        for device in range(len(self.devices)):
            nbytes = 8 * int(self.rng.integers(1000, 5000)) + 13
            data = self.rng.integers(0, 256, nbytes, dtype=np.uint8)
            before = self.pool.memory_stats(device)
            buf = self.pool.buffer(nbytes, device=device)
            self.assertEqual(buf.size, nbytes)
            self.assertEqual(self.pool.memory_stats(device).allocated_bytes,
                             before.allocated_bytes + nbytes)
            self.assertEqual(_interop.buffer_cl(buf)[2], device)
            buf.upload(data)
            np.testing.assert_array_equal(buf.download(np.empty_like(data)), data)
            buf.release()
            self.assertEqual(self.pool.memory_stats(device).allocated_bytes,
                             before.allocated_bytes)

    def test_gemm_on_buffers_of_one_device_matches_a_long_double_product(self):
        # Device 0, and the last device (another one where the pool has several): the call runs
        # where its buffers live, whatever device gemm is configured on.
        for device in sorted({0, len(self.devices) - 1}):
            dtype = np.float64 if self.devices[device].fp64 else np.float32
            m, k, n = (int(x) for x in self.rng.integers(17, 90, 3))
            a = self.rng.uniform(-1, 1, (m, k)).astype(dtype)
            b = self.rng.uniform(-1, 1, (k, n)).astype(dtype)
            c0 = self.rng.uniform(-1, 1, (m, n)).astype(dtype)
            bufs = [self.pool.buffer(x.nbytes, device=device) for x in (a, b, c0)]
            for buf, x in zip(bufs, (a, b, c0)):
                buf.upload(x)
            cdt = clops.F64 if dtype == np.float64 else clops.F32
            self.pool.gemm(bufs[0].view(cdt, a.shape), bufs[1].view(cdt, b.shape),
                           bufs[2].view(cdt, c0.shape), alpha=-0.75, beta=1.5)
            c = bufs[2].download(np.empty_like(c0))
            la, lb, lc = (x.astype(np.longdouble) for x in (a, b, c0))
            exact = -0.75 * (la @ lb) + 1.5 * lc
            bound = 0.75 * (np.abs(la) @ np.abs(lb)) + 1.5 * np.abs(lc)
            u = np.finfo(dtype).eps / 2
            excess = np.abs(c - exact) - 2 * (k + 2) * u * bound
            self.assertLessEqual(np.max(excess), 0, (device, dtype, m, k, n))
            for buf in bufs:
                buf.release()

    def test_a_device_the_pool_lacks_is_not_found_and_allocates_nothing(self):
        before = self.pool.memory_stats(0)
        with self.assertRaises(clops.NotFoundError) as caught:
            self.pool.buffer(4096, device=99)
        self.assertIn("'device'", caught.exception.message)
        self.assertIn("99", caught.exception.message)
        self.assertEqual(self.pool.memory_stats(0), before)

    def test_a_library_without_the_member_refuses_by_name(self):
        lib = self.pool.lib
        lib.has = lambda member, has=lib.has: member != "buffer_create_on" and has(member)
        try:
            with self.assertRaises(clops.UnsupportedError) as caught:
                self.pool.buffer(64, device=0)
            self.assertIn("buffer_create_on", caught.exception.message)
            self.assertIn("ABI 1.4", caught.exception.message)
            buf = self.pool.buffer(64)  # buffer_create: every library serves it
            buf.upload(bytes(range(64)))
            self.assertEqual(bytes(buf.download(bytearray(64))), bytes(range(64)))
            buf.release()
        finally:
            lib.__dict__.pop("has", None)
        self.assertTrue(lib.has("buffer_create_on"))


if __name__ == "__main__":
    unittest.main()
