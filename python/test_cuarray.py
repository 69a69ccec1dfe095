"""Tests of the Python module against NumPy on the sim device.

Run by `go test ./python` (which builds the library), or by hand:
    make libcuarray && /usr/bin/python3 -m unittest -v python/test_cuarray.py
"""

import gc
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402

SPEC = os.environ.get("CUARRAY_DEVICE", "sim:0")
DTYPES = ["float32", "float64", "int16", "uint8", "int64", "complex64"]
rng = np.random.default_rng()


def random(shape, dtype):
    """Fresh random values of dtype, never all zeros."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(dt)


def counts(ledger):
    """(copies, allocations) in a ledger dict."""
    copies = sum(p["count"] for d in ledger.get("copies", {}).values() for p in d.values())
    allocs = sum(k["allocs"] for k in ledger.get("memory", {}).values())
    return copies, allocs


def model(a):
    """The array's elements read by Go (a counted device-to-host copy)."""
    return np.frombuffer(a.to_bytes(), dtype=a.dtype).reshape(a.shape)


def views(a):
    """Contiguous and strided views of a 2-D array, by name."""
    return {
        "contiguous": a,
        "row block": a[1:4],
        "stepped": a[1:5, ::2],
        "transposed": a.T,
        "reversed": a[::-1, 1:],
        "column": a[:, 2],
    }


class SharesMemory(unittest.TestCase):
    """numpy.asarray and numpy.from_dlpack of a cuarray array are the same memory."""

    def check_shared(self, a, n):
        self.assertEqual(n.ctypes.data, a.ptr, "the same pointer")
        self.assertEqual(n.shape, a.shape)
        self.assertEqual(n.strides, a.strides)
        self.assertEqual(n.dtype, np.dtype(a.dtype))
        # A write on the NumPy side is read by Go (NumPy 1.x makes every
        # from_dlpack array read-only, since the legacy ABI has no flag for
        # it; NumPy 2 takes the versioned tensor and honours the flag) ...
        if n.flags.writeable or np.lib.NumpyVersion(np.__version__) >= "2.0.0":
            want = random(n.shape, n.dtype)
            n[...] = want
            np.testing.assert_array_equal(model(a), want)
        # ... and a write by Go is read on the NumPy side.
        want = random(n.shape, n.dtype)
        a.copy_from(np.ascontiguousarray(want).tobytes())
        np.testing.assert_array_equal(n, want)

    def test_asarray(self):
        for dtype in DTYPES:
            base = cuarray.empty((6, 5), dtype, SPEC)
            for name, a in views(base).items():
                with self.subTest(dtype=dtype, view=name):
                    before = counts(a.ledger())
                    n = np.asarray(a)
                    self.assertEqual(counts(a.ledger()), before, "the hand-over copies and allocates nothing")
                    self.check_shared(a, n)

    def test_from_dlpack(self):
        for dtype in DTYPES:
            base = cuarray.empty((6, 5), dtype, SPEC)
            for name, a in views(base).items():
                with self.subTest(dtype=dtype, view=name):
                    before = counts(a.ledger())
                    n = np.from_dlpack(a)
                    self.assertEqual(counts(a.ledger()), before, "the hand-over copies and allocates nothing")
                    self.check_shared(a, n)

    def test_readonly(self):
        a = cuarray.empty((3, 4), "float32", SPEC).as_readonly()
        self.assertTrue(a.readonly)
        n = np.asarray(a)
        self.assertFalse(n.flags.writeable, "read-only travels with the array interface")
        with self.assertRaises(BufferError):
            a.__dlpack__()  # the legacy ABI cannot say read-only, so it refuses
        cap = a.__dlpack__(max_version=(1, 0))
        self.assertIsNotNone(cap)  # the versioned one says it; dropping it unused deletes it

    def test_memory_outlives_the_python_array(self):
        a = cuarray.empty((8,), "float64", SPEC)
        dev = cuarray.device(SPEC)
        current = dev.ledger()["memory"]["device"]["current"]
        n = np.from_dlpack(a)
        want = random(8, "float64")
        a.copy_from(want.tobytes())
        del a
        gc.collect()
        np.testing.assert_array_equal(n, want, "NumPy still holds the memory through the deleter")
        self.assertEqual(dev.ledger()["memory"]["device"]["current"], current)
        del n
        gc.collect()
        self.assertLess(dev.ledger()["memory"]["device"]["current"], current, "the deleter freed it")

    def test_unconsumed_capsule_is_deleted(self):
        dev = cuarray.device(SPEC)
        a = cuarray.empty((1000,), "float32", SPEC)
        current = dev.ledger()["memory"]["device"]["current"]
        for kw in ({}, {"max_version": (1, 0)}):
            cap = a.__dlpack__(**kw)
            del cap  # the capsule destructor calls the deleter
        del a
        gc.collect()
        self.assertLess(dev.ledger()["memory"]["device"]["current"], current)


class ImportsNumPy(unittest.TestCase):
    """cuarray.asarray and cuarray.from_dlpack of NumPy memory copy nothing."""

    def check_borrowed(self, n, a):
        self.assertEqual(a.ptr, n.ctypes.data)
        self.assertEqual(a.shape, n.shape)
        self.assertEqual(a.strides, n.strides)
        self.assertEqual(np.dtype(a.dtype), n.dtype)
        self.assertEqual(a.device, "cpu:0")
        np.testing.assert_array_equal(model(a), n, "Go reads NumPy's memory in place")
        want = random(n.shape, n.dtype)
        a.copy_from(np.ascontiguousarray(want).tobytes())
        np.testing.assert_array_equal(n, want, "and writes it in place")

    def numpy_views(self, dtype):
        n = random((7, 6), dtype)
        return {"contiguous": n, "stepped": n[1::2, ::3], "transposed": n.T, "reversed": n[::-1]}

    def test_asarray(self):
        dev = cuarray.device(SPEC)
        for dtype in DTYPES:
            for name, n in self.numpy_views(dtype).items():
                with self.subTest(dtype=dtype, view=name):
                    before = counts(dev.ledger())
                    a = cuarray.asarray(n)
                    self.assertEqual(counts(dev.ledger()), before)
                    self.check_borrowed(n, a)

    def test_from_dlpack(self):
        for dtype in DTYPES:
            for name, n in self.numpy_views(dtype).items():
                if not n.flags.writeable:
                    continue
                with self.subTest(dtype=dtype, view=name):
                    a = cuarray.from_dlpack(n)
                    self.check_borrowed(n, a)
                    del a
                    gc.collect()  # the deleter runs: NumPy drops its reference

    def test_readonly_numpy(self):
        n = random((4, 4), "float32")
        n.flags.writeable = False
        a = cuarray.asarray(n)
        self.assertTrue(a.readonly)
        with self.assertRaises(cuarray.CuarrayError):
            a.copy_from(bytes(a.nbytes))


class RoundTrip(unittest.TestCase):
    """Go → NumPy → Go keeps pointer, shape, strides, dtype and read-only, and copies nothing."""

    def test_round_trips(self):
        for dtype in DTYPES:
            base = cuarray.empty((6, 5), dtype, SPEC)
            base.copy_from(random((6, 5), dtype).tobytes())
            vs = views(base)
            vs["read-only"] = base[1:].as_readonly()
            for name, a in vs.items():
                for way, there_and_back in ROUND_TRIPS.items():
                    with self.subTest(dtype=dtype, view=name, way=way):
                        before = counts(a.ledger())
                        b = there_and_back(a)
                        self.assertEqual(counts(a.ledger()), before, "no copy, no allocation")
                        self.assertEqual(b.ptr, a.ptr)
                        self.assertEqual(b.shape, a.shape)
                        self.assertEqual(b.strides, a.strides)
                        self.assertEqual(b.dtype, a.dtype)
                        self.assertEqual(b.readonly, a.readonly)


ROUND_TRIPS = {
    "numpy array interface": lambda a: cuarray.asarray(np.asarray(a)),
    "dlpack capsule": lambda a: cuarray.from_dlpack(a),
}
if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
    # NumPy 1.x takes only legacy tensors, makes them read-only, and will
    # not export a read-only array: the round trip through it needs NumPy 2.
    ROUND_TRIPS["numpy dlpack"] = lambda a: cuarray.from_dlpack(np.from_dlpack(a))


class IPC(unittest.TestCase):
    """Another Python process opens an exported array: same bytes, no copy."""

    def test_other_process(self):
        import subprocess
        a = cuarray.empty((16, 12), "float32", SPEC)
        want = random((16, 12), "float32")
        a.copy_from(want.tobytes())
        v = a[2:14:3, 1::2]
        child = (
            "import sys, json, numpy as np, cuarray\n"
            "b = cuarray.ipc_open(sys.stdin.read())\n"
            "n = np.frombuffer(b.to_bytes(), dtype=b.dtype).reshape(b.shape)\n"
            "b.copy_from((-n).tobytes())\n"
            "led = b.ledger()\n"
            "del b\n"
            "led2 = cuarray.device(json.loads(sys.argv[1])['spec']).ledger()\n"
            "print(json.dumps({'sum': float(n.sum()), 'ipc_allocs': led['memory']['ipc']['allocs'],"
            " 'ipc_frees': led2['memory']['ipc']['frees'], 'device_allocs': led2['memory']['device']['allocs']}))\n"
        )
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run([sys.executable, "-c", child, '{"spec": "%s"}' % SPEC], input=v.ipc_export(),
                             capture_output=True, text=True, env=env, check=True).stdout
        import json
        got = json.loads(out)
        self.assertAlmostEqual(got["sum"], float(np.asarray(want[2:14:3, 1::2], dtype=np.float64).sum()), places=2)
        self.assertEqual(got["ipc_allocs"], 1, "opening is counted")
        self.assertEqual(got["ipc_frees"], 1, "closing is counted")
        self.assertEqual(got["device_allocs"], 0, "no device allocation in the other process")
        np.testing.assert_array_equal(model(v), -want[2:14:3, 1::2], "the other process wrote into this one's memory")


class Errors(unittest.TestCase):
    def test_bad_input(self):
        with self.assertRaises(ValueError):
            cuarray.empty((2, 2), "float17", SPEC)
        with self.assertRaises(ValueError):
            cuarray.empty((-1, 2), "float32", SPEC)
        with self.assertRaises(TypeError):
            cuarray.asarray(object())
        with self.assertRaises(cuarray.CuarrayError):
            cuarray.device("nonsense:0")
        a = cuarray.empty((3, 4), "float32", SPEC)
        with self.assertRaises(IndexError):
            a[5]
        with self.assertRaises(cuarray.CuarrayError):
            a.reshape(5, 5)
        with self.assertRaises(ValueError):
            a.copy_from(b"short")
        if a.device.startswith("sim"):
            self.assertFalse(hasattr(a, "__cuda_array_interface__"), "sim memory is host memory")


if __name__ == "__main__":
    unittest.main()
