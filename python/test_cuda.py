"""Tests of a cuda device through the cuda build of the library, with neither
CuPy nor PyTorch: what a GPU array gives other libraries
(__cuda_array_interface__ v3, DLPack), the stream handoff, and the data
behind them. CI runs them on the emulated CUDA driver (go test -tags
cuda,cudaemu ./python), whose stream operations complete 500 ms after they
are queued there, so async work is still pending when an export asks:

    CUARRAY_EMULATED_DRIVER='latency=500ms' CUARRAY_LIB=... CUARRAY_DEVICE=cuda:0 \\
        /usr/bin/python3 -m unittest -v python/test_cuda.py
"""

import gc
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402

SPEC = os.environ.get("CUARRAY_DEVICE", "cuda:0")
rng = np.random.default_rng()
KDL_CUDA = 2


def setUpModule():
    global dev
    try:
        dev = cuarray.device(SPEC)
    except cuarray.CuarrayError as e:
        raise unittest.SkipTest("no cuda device %s: %s" % (SPEC, e))
    if not dev.ledger()["name"].startswith("cuda"):
        raise unittest.SkipTest("%s is not a cuda device" % SPEC)


def filled(shape, dtype="float32"):
    want = rng.standard_normal(shape).astype(dtype)
    a = cuarray.empty(shape, dtype, dev)
    a.copy_from(want)
    return a, want


class Exports(unittest.TestCase):
    def test_cuda_array_interface_describes_views(self):
        a, want = filled((64, 32))
        cai = a.__cuda_array_interface__
        self.assertEqual(cai["version"], 3)
        self.assertEqual(cai["shape"], (64, 32))
        self.assertEqual(cai["typestr"], "<f4")
        ptr, readonly = cai["data"]
        self.assertNotEqual(ptr, 0)
        self.assertFalse(readonly)
        views = {
            "transposed": (a.T, ptr, (4, 128), want.T),
            "row block": (a[2:10], ptr + 2 * 128, None, want[2:10]),
            "stepped": (a[:, ::2], ptr, (128, 8), want[:, ::2]),
        }
        for name, (v, vptr, strides, expect) in views.items():
            with self.subTest(view=name):
                c = v.__cuda_array_interface__
                self.assertEqual(c["data"][0], vptr, "a view copies nothing: it points into the array")
                if strides is not None:
                    self.assertEqual(c["strides"], strides)
                np.testing.assert_array_equal(v.to_numpy(), expect)
        self.assertTrue(a.as_readonly().__cuda_array_interface__["data"][1], "read-only")

    def test_device_memory_has_no_host_interface(self):
        a, _ = filled((4,))
        with self.assertRaises(AttributeError):
            a.__array_interface__

    def test_dlpack_device_and_round_trip(self):
        a, want = filled((16, 8))
        self.assertEqual(a.__dlpack_device__(), (KDL_CUDA, 0))
        for name, src, expect in (("array", a, want), ("transposed view", a[1:5].T, want[1:5].T)):
            with self.subTest(src=name):
                b = cuarray.from_dlpack(src)
                self.assertEqual(b.__cuda_array_interface__["data"][0], src.__cuda_array_interface__["data"][0],
                                 "DLPack passes the pointer, not a copy")
                np.testing.assert_array_equal(b.to_numpy(), expect)

    def test_imported_interface_borrows(self):
        a, want = filled((8, 8), "float64")

        class Foreign:  # another library's array, known by its interface alone
            __cuda_array_interface__ = a.__cuda_array_interface__

        b = cuarray.asarray(Foreign())
        self.assertEqual(b.__cuda_array_interface__["data"][0], a.__cuda_array_interface__["data"][0])
        before = dev.ledger()["memory"]["device"]["current"]
        np.testing.assert_array_equal(b.to_numpy(), want)
        self.assertEqual(dev.ledger()["memory"]["device"]["current"], before, "borrowing allocates nothing")


class Lifetime(unittest.TestCase):
    def test_cuda_array_interface_owner_holds_the_memory(self):
        # CuPy, PyTorch and Numba keep the object whose __cuda_array_interface__
        # they read as the owner of the memory: after free() it holds the memory.
        def current():
            return dev.ledger()["memory"]["device"]["current"]
        gc.collect()
        start = current()
        a, want = filled((int(rng.integers(2, 40)), 16))
        held = current()
        consumer = {"owner": a, "cai": a.__cuda_array_interface__}
        a.free()
        del a
        self.assertEqual(current(), held, "the consumer's owner holds the freed memory")
        b, _ = filled(want.shape)
        self.assertNotEqual(b.__cuda_array_interface__["data"][0], consumer["cai"]["data"][0],
                            "a new allocation does not get memory a consumer reads")

        class Foreign:  # reads the memory through the consumer's interface
            __cuda_array_interface__ = consumer["cai"]
        np.testing.assert_array_equal(cuarray.asarray(Foreign()).to_numpy(), want)
        b.free()
        del b, consumer
        gc.collect()
        self.assertEqual(current(), start, "the consumer gone, the memory is freed")


class StreamHandoff(unittest.TestCase):
    def pending_copy(self):
        """dst being written by an async copy on stream s, and what it will hold."""
        src, want = filled((256, 64))
        dst = cuarray.empty((256, 64), "float32", dev)
        s = dev.stream()
        self.addCleanup(s.close)
        dst.copy_async(src, s)
        return dst, want, s

    def test_cuda_array_interface_names_the_stream(self):
        dst, want, s = self.pending_copy()
        self.assertEqual(dst.__cuda_array_interface__["stream"], s.ptr,
                         "the consumer is told which stream to wait for, not made to wait")
        s.synchronize()
        self.assertIsNone(dst.__cuda_array_interface__["stream"], "nothing left to wait for")
        np.testing.assert_array_equal(dst.to_numpy(), want)

    def test_dlpack_consumer_stream_waits(self):
        dst, want, s = self.pending_copy()
        consumer = dev.stream()
        self.addCleanup(consumer.close)
        cap = dst.__dlpack__(stream=consumer.ptr, max_version=(1, 0))
        del cap
        consumer.synchronize()
        self.assertIsNone(dst.__cuda_array_interface__["stream"],
                          "the consumer's stream waited for the producer's copy")
        np.testing.assert_array_equal(dst.to_numpy(), want)

    def test_synchronous_reads_wait(self):
        dst, want, _ = self.pending_copy()
        np.testing.assert_array_equal(dst.to_numpy(), want, "a synchronous read waits for the pending copy")


if __name__ == "__main__":
    unittest.main()
