"""Tests of the Python module against NumPy on the sim device.

Run by `go test ./python` (which builds the library), or by hand:
    make libcuarray && /usr/bin/python3 -m unittest -v python/test_cuarray.py
"""

import gc
import ctypes
import json
import re
import os
import sys
import threading
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402

SPEC = os.environ.get("CUARRAY_DEVICE", "sim:0")
# Holding a stream at a point (as a long kernel would) needs the emulated device.
HOLD_SPEC = SPEC if SPEC.startswith("sim") else "sim:0"
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


class ExportsHoldTheMemory(unittest.TestCase):
    """Every export holds the memory: free() lets go of the owner's
    reference, the ledger counts the memory while an export lives, a new
    allocation never gets it, and once the last export is gone it is freed
    (the ledger's current bytes back where they were)."""

    def setUp(self):
        self.dev = cuarray.device(SPEC)
        gc.collect()  # arrays of earlier tests let go first
        self.start = self.current()

    def current(self):
        return self.dev.ledger()["memory"]["device"]["current"]

    def filled(self, dtype="float64"):
        shape = (int(rng.integers(2, 30)), int(rng.integers(2, 30)))
        a = cuarray.empty(shape, dtype, self.dev)
        want = random(shape, dtype)
        a.copy_from(want)
        return a, want

    def check_freed_but_held(self, a, want, held, read):
        """After a.free(): the memory is still counted, a new array gets
        other memory, and read() gives a's elements, not the new array's."""
        self.assertEqual(self.current(), held, "the export holds the freed memory")
        b, other = self.filled()
        self.assertNotEqual(b.ptr, a.ptr, "a new allocation does not get memory an export reads")
        np.testing.assert_array_equal(read(), want, "the export reads the freed array's elements")
        b.free()

    def test_array_interface(self):
        a, want = self.filled()
        held = self.current()
        n, t, r = np.asarray(a), np.asarray(a[1:, ::-2].T), np.asarray(a.as_readonly())
        a.free()
        with self.assertRaisesRegex(cuarray.CuarrayError, "the array was freed"):
            np.asarray(a)
        self.check_freed_but_held(a, want, held, lambda: n)
        self.assertIsInstance(n.base, memoryview, "NumPy keeps the memoryview that holds the memory")
        np.testing.assert_array_equal(t, want[1:, ::-2].T, "a view's export holds it too")
        np.testing.assert_array_equal(r, want)
        self.assertFalse(r.flags.writeable, "read-only still")
        del n, t
        gc.collect()
        self.assertEqual(self.current(), held, "one export left")
        del r
        gc.collect()
        self.assertEqual(self.current(), self.start, "the last export gone, the memory is freed (a is still referenced)")

    def test_cuda_array_interface(self):
        # CuPy, PyTorch and Numba keep the object whose __cuda_array_interface__
        # they read as the owner of the memory: that object holds it.
        class Consumer:
            def __init__(self, obj):
                self.owner, self.cai = obj, obj._cuda_interface()  # sim's stand-in for __cuda_array_interface__

        a, want = self.filled()
        held = self.current()
        c = Consumer(a)
        self.assertEqual(c.cai["data"], (a.ptr, False))
        self.assertEqual((c.cai["shape"], c.cai["typestr"], c.cai["version"]), (a.shape, "<f8", 3))
        a.free()
        with self.assertRaisesRegex(cuarray.CuarrayError, "the array was freed"):
            c.owner._cuda_interface()
        del a

        def read():
            ptr, n = c.cai["data"][0], want.nbytes
            return np.frombuffer(ctypes.string_at(ptr, n), dtype=want.dtype).reshape(want.shape)
        self.check_freed_but_held(c.owner, want, held, read)
        del c
        gc.collect()
        self.assertEqual(self.current(), self.start, "the consumer gone, the memory is freed")

    def test_dlpack(self):
        a, want = self.filled()
        held = self.current()
        n, t = np.from_dlpack(a), np.from_dlpack(a.T)
        a.free()
        self.check_freed_but_held(a, want, held, lambda: n)
        np.testing.assert_array_equal(t, want.T)
        del n, t
        gc.collect()
        self.assertEqual(self.current(), self.start, "the last tensor deleted, the memory is freed")

    def test_buffer_protocol(self):
        a, want = self.filled()
        held = self.current()
        with self.assertRaises(TypeError):
            memoryview(a)  # an Array exports no buffer of its own ...
        m = memoryview(np.asarray(a))  # ... the NumPy array made of it does, and holds the memory
        a.free()
        self.check_freed_but_held(a, want, held, lambda: np.asarray(m))
        del m
        gc.collect()
        self.assertEqual(self.current(), self.start, "the buffer released, the memory is freed")

    def test_borrowed_memory(self):
        # The DLPack tensors of an array over NumPy memory, made in C, keep that
        # memory too, after the array and the NumPy array are gone: 2 MiB, which
        # NumPy returns to the system when it is freed, so reading it then would
        # crash. (The interface exports keep the array, and so the NumPy one.)
        x = random((1 << 18,), "float64")
        want = x.copy()
        b = cuarray.asarray(x)
        exports = {"DLPack": np.from_dlpack(b), "a view's DLPack": np.from_dlpack(b[::-3])}
        b.free()
        del b, x
        gc.collect()
        cuarray.empty((4,), "float32", self.dev).free()  # a call that lets go of what no export uses
        for name, n in exports.items():
            with self.subTest(name):
                np.testing.assert_array_equal(n, want[::-3] if "view" in name else want)
        self.assertEqual(len(cuarray._parked), 1, "the NumPy array is kept for the DLPack tensors")
        del exports, n
        gc.collect()
        self.dev.ledger()
        self.assertEqual(len(cuarray._parked), 0, "and let go of once they are deleted")


class DLPackInC(unittest.TestCase):
    """__dlpack__ builds its capsule in C (libcuarray/keep.c) without a call
    into the library's Go side while nothing is pending; the memory stays
    counted in the ledger until the last capsule's tensor is deleted."""

    def spy(self, name):
        """Counts the calls of the library function name from here on."""
        real = getattr(cuarray._lib, name)
        calls = []

        def counted(*args):
            calls.append(args)
            return real(*args)
        setattr(cuarray._lib, name, counted)
        self.addCleanup(setattr, cuarray._lib, name, real)
        return calls

    def test_no_library_call_while_nothing_is_pending(self):
        if cuarray._capsule is None:
            self.skipTest("the library has no cuarray_dlpack_capsule")
        calls = self.spy("cuarray_export_dlpack")
        base = cuarray.empty((6, 5), "float32", SPEC)
        base.copy_from(random((6, 5), "float32").tobytes())
        n = int(rng.integers(1, 20))
        host = bool(base._flags & cuarray._HOST_ACCESSIBLE)
        for name, a in views(base).items():
            with self.subTest(view=name):
                for _ in range(n):
                    if host:  # NumPy consumes it and reads the same elements
                        np.testing.assert_array_equal(np.from_dlpack(a), model(a))
                    else:
                        self.assertIsNotNone(a.__dlpack__(max_version=(1, 0)))
                self.assertEqual(calls, [], "no call into the library's export")
        # What only the library can do goes to it: a copy, and the legacy ABI's
        # refusal of a read-only array (with its message).
        copied = cuarray.from_dlpack(_Copied(base))
        np.testing.assert_array_equal(model(copied), model(base))
        del copied
        with self.assertRaisesRegex(BufferError, "read-only"):
            base.as_readonly().__dlpack__()
        self.assertEqual(len(calls), 2, "copy=True and the refusal go through cuarray_export_dlpack")

    def test_capsules_keep_freed_memory(self):
        dev = cuarray.device(SPEC)
        start = dev.ledger()["memory"]["device"]["current"]
        shape = (int(rng.integers(1, 40)), int(rng.integers(1, 40)))
        a = cuarray.empty(shape, "float64", SPEC)
        want = random(shape, "float64")
        a.copy_from(want.tobytes())
        allocated = dev.ledger()["memory"]["device"]["current"]
        self.assertGreaterEqual(allocated - start, want.nbytes)
        caps = [a.__dlpack__(max_version=(1, 0)) for _ in range(int(rng.integers(1, 8)))]
        t = a.T
        caps.append(t.__dlpack__())
        n = cuarray.from_dlpack(t)  # a consumer: it holds the tensor until it is freed
        a.free()
        for x in (a, t):
            with self.assertRaises(BufferError):
                x.__dlpack__(max_version=(1, 0))
        self.assertEqual(dev.ledger()["memory"]["device"]["current"], allocated,
                         "%d capsules and a consumer keep the memory" % len(caps))
        del caps
        gc.collect()
        self.assertEqual(dev.ledger()["memory"]["device"]["current"], allocated, "the consumer still keeps it")
        np.testing.assert_array_equal(model(n), want.T, "the consumer reads the freed array's elements")
        del n
        gc.collect()
        self.assertEqual(dev.ledger()["memory"]["device"]["current"], start, "the last deleter let it go")


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
            "dev = cuarray.device(json.loads(sys.argv[1])['spec'])\n"
            "b = cuarray.ipc_open(sys.stdin.read(), dev)\n"
            "n = np.frombuffer(b.to_bytes(), dtype=b.dtype).reshape(b.shape)\n"
            "b.copy_from((-n).tobytes())\n"
            "led = b.ledger()\n"
            "del b\n"
            "led2 = dev.ledger()\n"
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


def pointer_form(ai):
    """An __array_interface__ with its memoryview "data" (and "offset") as
    the (pointer, read-only) pair of the library's interface."""
    d = dict(ai)
    mv = d.pop("data")
    d["data"] = (ctypes.addressof(mv.obj) + d.pop("offset"), mv.readonly)
    return d


def library_interface(a, cuda):
    """The interface of a as the library writes it (JSON): what the Python
    module's cached one must equal."""
    d = cuarray._interface(json.loads(cuarray._string(cuarray._lib.cuarray_interface, a._h, 0, 0 if cuda else 1)))
    if not cuda:
        d.pop("stream", None)
    return d


class Described(unittest.TestCase):
    """An array is described once: its interfaces come from that description,
    equal the library's, and are handed out again without a call while
    nothing is freed and nothing is pending; a freed array does not export."""

    def test_interfaces_match_the_library(self):
        for dtype in DTYPES:
            base = cuarray.empty((6, 5), dtype, SPEC)
            vs = views(base)
            vs["read-only"] = base[1:, ::2].as_readonly()
            for name, a in vs.items():
                with self.subTest(dtype=dtype, view=name):
                    self.assertEqual(pointer_form(a.__array_interface__), library_interface(a, False))
                    self.assertEqual(a._cuda_interface(), library_interface(a, True))
                    self.assertIsNone(a._cuda_interface()["stream"], "nothing pending: no stream to wait on")

    def test_described_once(self):
        a = cuarray.empty((8, 4), "float64", SPEC)
        v = a[::2, 1:]
        want = random(v.shape, "float64")
        calls = []
        lib = cuarray._lib
        names = ["cuarray_alive", "cuarray_export_wait", "cuarray_export_stream", "cuarray_interface", "cuarray_describe", "cuarray_info"]
        originals = {n: getattr(lib, n) for n in names}

        def counting(n):
            def f(*args):
                calls.append(n)
                return originals[n](*args)
            return f
        gc.collect()
        gc.disable()  # a collection frees arrays, which (rightly) sends the next export through the library
        try:
            first = v.__array_interface__
            for n in names:
                setattr(lib, n, counting(n))
            for _ in range(200):
                ai = v.__array_interface__
                self.assertEqual(ai, first)
                ai["shape"] = (0,)  # the caller's to change: the next one is a fresh dict
                n = np.asarray(v)
            self.assertEqual(calls, [], "200 exports of a described array make no library call")
            v.copy_from(want.tobytes())
            np.testing.assert_array_equal(n, want, "and are the array's memory")
        finally:
            for n, f in originals.items():
                setattr(lib, n, f)
            gc.enable()

    def test_freed_arrays_do_not_export(self):
        def base_freed():
            a = cuarray.empty((6, 5), "float32", SPEC)
            a.__array_interface__, a._cuda_interface()  # cache them
            a.free()
            return a

        def view_of_freed_base():
            a = cuarray.empty((6, 5), "float32", SPEC)
            v = a[1:, ::2]
            v.__array_interface__, v._cuda_interface()
            a.free()
            return v

        def view_freed():
            a = cuarray.empty((6, 5), "float32", SPEC)
            v = a.T
            v.__array_interface__, v._cuda_interface()
            v.free()
            np.asarray(a)  # the base is still there
            return v

        def freed_twice():
            a = base_freed()
            a.free()
            return a

        for name, make in (("base freed", base_freed), ("view of a freed base", view_of_freed_base),
                           ("view freed", view_freed), ("freed twice", freed_twice)):
            with self.subTest(name):
                a = make()
                with self.assertRaises(cuarray.CuarrayError):
                    a.__array_interface__
                with self.assertRaises(cuarray.CuarrayError):
                    a._cuda_interface()
                with self.assertRaises(cuarray.CuarrayError):
                    np.asarray(a)
                for kw in ({}, {"max_version": (1, 0)}, {"stream": -1}):
                    with self.assertRaises(BufferError):
                        a.__dlpack__(**kw)

    def test_dlpack_consumer_keeps_freed_memory(self):
        a = cuarray.empty((16,), "float64", SPEC)
        want = random(16, "float64")
        a.copy_from(want.tobytes())
        n = np.from_dlpack(a)
        a.free()
        with self.assertRaises(cuarray.CuarrayError):
            a.__array_interface__
        np.testing.assert_array_equal(n, want, "the consumer's hold keeps the memory")


def run_held(fn, resume, wait=0.05):
    """Runs fn in a thread while a stream is held, then resumes the stream:
    returns whether fn was still blocked before the resume, and its result."""
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # re-raised in the test's thread
            out["error"] = e
    th = threading.Thread(target=body)
    th.start()
    th.join(wait)
    blocked = th.is_alive()
    resume()
    th.join(30)
    if th.is_alive():
        raise AssertionError("the call did not return after the stream was resumed")
    if "error" in out:
        raise out["error"]
    return blocked, out.get("value")


class AsyncExports(unittest.TestCase):
    """After async work (copy_async on a held stream, as a long kernel would
    hold it on a GPU), exports follow the stream rules: host consumers wait
    for the array's work and nothing else, CAI names the stream, DLPack's
    consumer stream waits on the device."""

    def setUp(self):
        self.dev = cuarray.device(HOLD_SPEC)

    def held_copy(self, shape=(12, 10), dtype="float32"):
        """dst.copy_async(src) queued behind a hold: (src, dst, want, stream, resume)."""
        want = random(shape, dtype)
        src = cuarray.empty(shape, dtype, self.dev)
        src.copy_from(want.tobytes())
        dst = cuarray.empty(shape, dtype, self.dev)
        dst.copy_from(np.zeros(shape, dtype).tobytes())
        for a in (src, dst):  # described and exported before: the pending work must get past the cache
            np.asarray(a), a._cuda_interface()
        s = self.dev.stream()
        resume = s._hold()
        self.addCleanup(s.close)
        self.addCleanup(resume)  # before close: a held stream cannot end
        dst.copy_async(src, s)
        return src, dst, want, s, resume

    def returns_at_once(self, fn, resume, what):
        blocked, value = run_held(fn, resume, wait=5)
        self.assertFalse(blocked, what)
        return value

    def test_host_consumers_wait(self):
        def copied(b):
            x = cuarray.empty(b.shape, b.dtype, self.dev)
            x.copy_(b)
            return model(x)

        consumers = {
            "__array_interface__": (lambda src, dst: np.array(np.asarray(dst)), lambda w: w),
            "a view's __array_interface__": (lambda src, dst: np.array(np.asarray(dst[2:, ::3])), lambda w: w[2:, ::3]),
            "numpy.from_dlpack": (lambda src, dst: np.array(np.from_dlpack(dst)), lambda w: w),
            "to_bytes": (lambda src, dst: model(dst), lambda w: w),
            "copy_": (lambda src, dst: copied(dst), lambda w: w),
            "dlpack copy=True": (lambda src, dst: np.array(np.from_dlpack(cuarray.from_dlpack(_Copied(dst)))), lambda w: w),
            "the copy's source (it must not be written early)": (lambda src, dst: (np.asarray(src), model(dst))[1], lambda w: w),
        }
        for name, (consume, expect) in consumers.items():
            with self.subTest(consumer=name):
                src, dst, want, _, resume = self.held_copy()
                blocked, got = run_held(lambda: consume(src, dst), resume)
                self.assertTrue(blocked, "the consumer must wait for the async copy")
                np.testing.assert_array_equal(got, expect(want), "the consumer sees the copy done")

    def test_unrelated_arrays_do_not_wait(self):
        _, _, _, _, resume = self.held_copy()
        other = cuarray.empty((5, 7), "int16", self.dev)
        want = random((5, 7), "int16")
        other.copy_from(want.tobytes())
        got = self.returns_at_once(lambda: (np.array(np.asarray(other)), np.array(np.from_dlpack(other))), resume,
                                   "work on other memory is not waited for: no device-wide synchronization")
        np.testing.assert_array_equal(got[0], want)
        np.testing.assert_array_equal(got[1], want)

    def test_cai_names_the_stream(self):
        src, dst, want, s, resume = self.held_copy()
        other = cuarray.empty((3,), "float32", self.dev)
        got = self.returns_at_once(lambda: [x._cuda_interface()["stream"] for x in (dst, dst[1:], src, other)], lambda: None,
                                   "CAI names the stream instead of waiting")
        self.assertEqual(got, [s.ptr, s.ptr, s.ptr, None])
        resume()
        s.synchronize()
        self.assertIsNone(dst._cuda_interface()["stream"], "done work: nothing to wait for")
        self.assertEqual(cuarray._token.value & 1, 0, "no pending work left")
        np.testing.assert_array_equal(model(dst), want)

    def test_dlpack_consumer_stream_waits(self):
        for way in ("handle", "Stream object"):
            with self.subTest(way=way):
                _, dst, want, _, resume = self.held_copy()
                consumer = self.dev.stream()
                self.addCleanup(consumer.close)
                arg = consumer.ptr if way == "handle" else consumer
                cap = self.returns_at_once(lambda: dst.__dlpack__(stream=arg, max_version=(1, 0)), lambda: None,
                                           "__dlpack__(stream=s) makes s wait, not the caller")
                del cap
                blocked, _ = run_held(consumer.synchronize, resume)
                self.assertTrue(blocked, "the consumer's stream waits for the producer's copy")
                np.testing.assert_array_equal(model(dst), want)
        # The legacy default stream (1; 0 from older consumers) is the one
        # the device's synchronous calls run on: they wait behind it.
        for stream in (1, 0):
            with self.subTest(way="legacy default stream %d" % stream):
                _, dst, want, _, resume = self.held_copy()
                other = cuarray.empty((4,), "float32", self.dev)
                cap = self.returns_at_once(lambda: dst.__dlpack__(stream=stream), lambda: None,
                                           "the legacy default stream waits, not the caller")
                del cap
                blocked, _ = run_held(lambda: model(other), resume)
                self.assertTrue(blocked, "a synchronous call on the legacy default stream waits for the producer's copy")
                np.testing.assert_array_equal(model(dst), want)

    def test_dlpack_no_sync(self):
        _, dst, _, _, resume = self.held_copy()
        consumer = self.dev.stream()
        self.addCleanup(consumer.close)
        self.returns_at_once(lambda: dst.__dlpack__(stream=-1), lambda: None, "stream=-1: no synchronization")
        self.returns_at_once(consumer.synchronize, resume, "stream=-1 makes no stream wait")

    def test_dlpack_stream_values(self):
        a = cuarray.empty((4,), "float32", self.dev)
        host = cuarray.asarray(random((4,), "float32"))
        s = self.dev.stream()
        self.addCleanup(s.close)
        for stream, err in ((-2, BufferError), ("1", TypeError), (True, TypeError), (1.0, TypeError)):
            with self.subTest(stream=stream):
                with self.assertRaises(err):
                    a.__dlpack__(stream=stream)
        with self.assertRaises(BufferError):
            host.__dlpack__(stream=s.ptr)  # host memory without a device: only None (and -1)
        for stream in (None, -1):
            self.assertIsNotNone(host.__dlpack__(stream=stream))
        for stream in (None, -1, 0, 1, 2, s.ptr, s):
            with self.subTest(stream=stream):
                self.assertIsNotNone(a.__dlpack__(stream=stream), "nothing pending: any stream is fine")

    def test_async_copies_chain_across_streams(self):
        src, dst, want, _, resume = self.held_copy()
        dst2 = cuarray.empty(dst.shape, dst.dtype, self.dev)
        s2 = self.dev.stream()
        self.addCleanup(s2.close)
        self.returns_at_once(lambda: dst2.copy_async(dst, s2), lambda: None, "copy_async queues, it does not wait")
        blocked, _ = run_held(s2.synchronize, resume)
        self.assertTrue(blocked, "the second stream waits for the first copy")
        np.testing.assert_array_equal(model(dst2), want)

    def test_free_during_async_copy(self):
        src, dst, want, s, resume = self.held_copy()
        current = self.dev.ledger()["memory"]["device"]["current"]
        self.returns_at_once(dst.free, lambda: None, "free does not wait for the async copy")
        self.returns_at_once(src.free, lambda: None, "nor does the source's")
        shape, dtype = dst.shape, dst.dtype
        del src, dst  # their CUDA interfaces were handed out: the Array objects held the memory too
        self.assertEqual(self.dev.ledger()["memory"]["device"]["current"], current,
                         "the copy holds the memory while it runs")
        fresh = cuarray.empty(shape, dtype, self.dev)
        zeros = np.zeros(shape, dtype)
        fresh.copy_from(zeros.tobytes())
        resume()
        s.synchronize()
        self.assertLess(self.dev.ledger()["memory"]["device"]["current"], current + fresh.nbytes,
                        "given back once the copy is done")
        np.testing.assert_array_equal(model(fresh), zeros, "a new allocation never receives the copy's bytes")

    def test_copy_async_errors(self):
        a = cuarray.empty((4,), "float32", self.dev)
        b = cuarray.empty((4,), "float32", self.dev)
        for stream in (0, -1, None, "s"):
            with self.subTest(stream=stream), self.assertRaises(TypeError):
                a.copy_async(b, stream)
        with self.assertRaises(cuarray.CuarrayError):
            a.copy_async(b, 0xdead0)  # no stream of the device
        host = cuarray.asarray(random((4,), "float32"))
        with self.assertRaises(cuarray.CuarrayError):
            host.copy_async(cuarray.asarray(random((4,), "float32")), 1)


class StreamOrderedArrays(unittest.TestCase):
    """An array from the default stream-ordered pool (empty_async: cuMemAllocAsync
    in a stream's order), filled on its stream, exported through the CUDA Array
    Interface and DLPack and read by NumPy (sim memory is host memory): exports
    follow the stream rules until the stream has passed the allocation and the
    fill, the ledger counts it as stream-ordered memory, and a DLPack export
    keeps it past the array's deletion."""

    SPEC = "sim:46?mem=64MiB"  # a device of this test's own: its counts are the test's

    def setUp(self):
        self.dev = cuarray.device(self.SPEC)

    def stream_ordered(self):
        return self.dev.ledger()["memory"].get("stream-ordered", {"current": 0, "allocs": 0})

    def filled(self, shape, dtype, hold):
        """An empty_async array filled by copy_async on its stream, the stream
        held before both when hold: (array, want, stream, resume)."""
        want = random(shape, dtype)
        src = cuarray.empty(shape, dtype, self.dev)
        src.copy_from(want.tobytes())
        s = self.dev.stream()
        resume = s._hold() if hold else (lambda: None)
        self.addCleanup(s.close)
        self.addCleanup(resume)  # before close: a held stream cannot end
        a = cuarray.empty_async(shape, dtype, s)
        a.copy_async(src, s)
        return a, want, s, resume

    def test_exports_read_by_numpy(self):
        for dtype in ("float32", "int16", "complex64"):
            with self.subTest(dtype=dtype):
                shape = (int(rng.integers(3, 40)), int(rng.integers(3, 40)))
                before = self.stream_ordered()
                a, want, s, resume = self.filled(shape, dtype, hold=True)
                so = self.stream_ordered()
                self.assertEqual(so["allocs"] - before["allocs"], 1, "one stream-ordered allocation")
                self.assertEqual(so["current"] - before["current"], (a.nbytes + 255) // 256 * 256)
                cai = a._cuda_interface()
                self.assertEqual(cai["stream"], s.ptr, "CAI names the stream the allocation and fill are queued on")
                self.assertEqual(a[1:]._cuda_interface()["stream"], s.ptr, "and so does a view's")
                blocked, got = run_held(lambda: np.array(np.asarray(a)), resume)
                self.assertTrue(blocked, "NumPy, a host consumer, waits for the stream")
                np.testing.assert_array_equal(got, want)
                s.synchronize()
                cai = a._cuda_interface()
                self.assertIsNone(cai["stream"], "done work: nothing to wait for")
                host = dict(cai, version=3)
                del host["stream"]
                np.testing.assert_array_equal(np.asarray(_Interface(host)), want, "NumPy reads the CAI's pointer")
                np.testing.assert_array_equal(np.from_dlpack(a), want, "NumPy reads the DLPack tensor")
                del a, cai
                gc.collect()
                s.synchronize()
                self.assertEqual(self.stream_ordered()["current"], before["current"], "freed in the stream's order")

    def test_the_allocation_is_pending_work(self):
        s = self.dev.stream()
        resume = s._hold()
        self.addCleanup(s.close)
        self.addCleanup(resume)  # before close: a held stream cannot end
        a = cuarray.empty_async((int(rng.integers(1, 100)),), "int64", s)
        self.assertEqual(a._cuda_interface()["stream"], s.ptr, "CAI names the stream the allocation is queued on")
        resume()
        s.synchronize()
        self.assertIsNone(a._cuda_interface()["stream"], "the stream passed it: nothing to wait for")

    def test_dlpack_consumer_stream_waits(self):
        a, want, s, resume = self.filled((17, 9), "float64", hold=True)
        consumer = self.dev.stream()
        self.addCleanup(consumer.close)
        blocked, cap = run_held(lambda: a.__dlpack__(stream=consumer.ptr, max_version=(1, 0)), lambda: None, wait=5)
        self.assertFalse(blocked, "__dlpack__(stream=s) makes s wait, not the caller")
        del cap
        blocked, _ = run_held(consumer.synchronize, resume)
        self.assertTrue(blocked, "the consumer's stream waits for the allocation's stream")
        np.testing.assert_array_equal(np.from_dlpack(a), want)

    def test_dlpack_outlives_the_array(self):
        before = self.stream_ordered()["current"]
        a, want, s, _ = self.filled((int(rng.integers(8, 64)),), "float32", hold=False)
        n = np.from_dlpack(a)
        nbytes = a.nbytes
        del a
        gc.collect()
        s.synchronize()
        self.assertEqual(self.stream_ordered()["current"] - before, (nbytes + 255) // 256 * 256,
                         "the tensor keeps the memory")
        np.testing.assert_array_equal(n, want)
        del n
        gc.collect()
        cuarray.empty((1,), "uint8", self.dev)  # an allocation lets go of what no tensor uses
        s.synchronize()
        self.assertEqual(self.stream_ordered()["current"], before, "the last tensor gone, the memory went back")

    def test_refusals(self):
        with self.assertRaises(TypeError):
            cuarray.empty_async((4,), "float32", self.dev)
        s = self.dev.stream()
        with self.assertRaises(ValueError):
            cuarray.empty_async((-1,), "float32", s)
        s.close()
        with self.assertRaisesRegex(cuarray.CuarrayError, "closed"):
            cuarray.empty_async((4,), "float32", s)


class _Interface:
    """An object with a given __array_interface__, as NumPy reads one."""

    def __init__(self, interface):
        self.__array_interface__ = interface


class StreamRaces(unittest.TestCase):
    """A stream race the checker reports ("sim:N?check=streams": libcuarray's
    message starts "stream race: ") is a StreamRaceError, a CuarrayError,
    with the report's text; other errors stay what they were. The module's
    own stream handling orders every handoff (copy_async waits for the work
    queued on either array, however it was imported), so the race is
    seeded at the C boundary."""

    def raised(self, text):
        libc = ctypes.CDLL(None)
        libc.strdup.restype = ctypes.c_void_p
        libc.strdup.argtypes = [ctypes.c_char_p]
        with self.assertRaises(cuarray.CuarrayError) as cm:
            cuarray._check(libc.strdup(text.encode()))  # freed by _check, as libcuarray's strings are
        return cm.exception

    def test_race_message_raises_stream_race_error(self):
        report = ("stream race: device: stream race on 16 bytes at [0x1000, 0x1010) (nothing orders one before the other):\n"
                  "  read of [0x1000, 0x1100) by async copy DtoD on stream 0x101, queued at\n"
                  "  previous write of [0x1000, 0x1010) by async memset on stream 0x100, queued at")
        e = self.raised(report)
        self.assertIsInstance(e, cuarray.StreamRaceError)
        self.assertEqual(str(e), report)
        self.assertNotIsInstance(self.raised("view: device: invalid value"), cuarray.StreamRaceError)
        self.assertIsInstance(self.raised("device fault: sim: kernel"), cuarray.DeviceFaultError)


class _Copied:
    """A producer that passes copy=True on to a cuarray array's __dlpack__."""

    def __init__(self, a):
        self.a = a

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()

    def __dlpack__(self, **kw):
        kw["copy"] = True
        return self.a.__dlpack__(**kw)


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



class Freed(unittest.TestCase):
    """After free(), every call that reads, writes or exports the array says
    that the array was freed, as np.asarray does, not that handle 0 is not
    a live handle."""

    def test_calls_after_free_say_the_array_was_freed(self):
        data = random((3, 4), "float32")
        for name, call in (
            ("to_numpy", lambda a, b: a.to_numpy()),
            ("get", lambda a, b: a.get()),
            ("to_bytes", lambda a, b: a.to_bytes()),
            ("copy_from", lambda a, b: a.copy_from(data)),
            ("copy_ into it", lambda a, b: a.copy_(b)),
            ("view", lambda a, b: a[1:]),
            ("transpose", lambda a, b: a.T),
            ("ipc_export", lambda a, b: a.ipc_export()),
            ("np.asarray", lambda a, b: np.asarray(a)),
        ):
            with self.subTest(name):
                a, b = cuarray.empty((3, 4), "float32", SPEC), cuarray.empty((3, 4), "float32", SPEC)
                a.copy_from(data)
                a.free()
                with self.assertRaises(cuarray.CuarrayError) as cm:
                    call(a, b)
                self.assertEqual(str(cm.exception), "the array was freed")
        a, b = cuarray.empty((3, 4), "float32", SPEC), cuarray.empty((3, 4), "float32", SPEC)
        b.free()
        with self.assertRaisesRegex(cuarray.CuarrayError, "^src was freed$"):
            a.copy_(b)
        with self.assertRaisesRegex(BufferError, "the array was freed"):
            b.__dlpack__()

    def test_printing_says_freed(self):
        for shape in ((3, 4), (7,), (2, 3, 5)):
            with self.subTest(shape=shape):
                a = cuarray.empty(shape, "float32", SPEC)
                a.copy_from(random(shape, "float32"))
                self.assertNotIn("freed", str(a))
                a.free()
                self.assertIn("freed", str(a))
                self.assertIn("freed", repr(a))


class DeviceByType(unittest.TestCase):
    """cuarray.Device(spec) opens a device as cuarray.device(spec) does."""

    def test_device_type_opens_by_spec(self):
        for spec in (SPEC, "sim:3"):
            with self.subTest(spec=spec):
                d = cuarray.Device(spec)
                self.assertIs(d, cuarray.device(spec), "one object per spec")
                self.assertIsInstance(d, cuarray.Device)
                a = cuarray.empty((2, 3), "float32", d)
                a.copy_from(random((2, 3), "float32"))
                self.assertEqual((2, 3), a.shape)
        with self.assertRaises(TypeError):
            cuarray.Device(7)


def ledger_bytes(n):
    """ledger_bytes(n) writes n as Go's accounting.FormatBytes does: bytes
    below 1 KiB, then binary units with two decimals."""
    if abs(n) < 1024:
        return "%d B" % n
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        n /= 1024
        if abs(n) < 1024 - 0.005 or unit == "EiB":
            return "%.2f %s" % (n, unit)


class LedgerReport(unittest.TestCase):
    """Device.ledger_report() is Go's Ledger.Report(): the text table; the
    ledger dict prints as it."""

    SPEC = "sim:44?mem=64MiB"  # a device of this test's own: its counts are the test's

    def test_report(self):
        dev = cuarray.device(self.SPEC)
        n = int(rng.integers(2, 200))
        a = cuarray.empty((n,), "float32", self.SPEC)
        a.copy_from(random((n,), "float32"))
        report = dev.ledger_report()
        lines = report.splitlines()
        self.assertEqual(lines[0], "ledger sim:44", report)
        self.assertRegex(lines[1], r"^  memory\s+current\s+cached\s+peak\s+allocs\s+frees\s+allocated\s+failed\s+limit$")
        granules = -(-4 * n // 256) * 256  # the device allocates whole 256-byte granules
        size = re.escape(ledger_bytes(granules))
        self.assertRegex(report, r"\n  device\s+%s\s+0 B\s+%s\s+1\s+0\s+%s\s+0\s+none\n" % (size, size, size))
        self.assertRegex(report, r"\n  HtoD\s+direct\s+1\s+%d B\s" % (4 * n))
        self.assertNotIn("DtoH", report, "nothing came down")

        ledger = dev.ledger()
        self.assertIsInstance(ledger, dict)
        self.assertEqual(ledger["memory"]["device"]["allocs"], 1)
        self.assertEqual(str(ledger), report, "str() of the ledger is the report")
        self.assertEqual(ledger.report(), report)
        self.assertEqual(a.ledger_report(), report)
        self.assertEqual(json.loads(json.dumps(ledger)), dict(ledger), "still a dict of figures")

        a.to_numpy()
        self.assertRegex(dev.ledger_report(), r"\n  DtoH\s+\w+\s+1\s+%d B\s" % (4 * n))
        a.free()
        self.assertRegex(dev.ledger_report(), r"\n  device\s+0 B\s+0 B\s+%s\s+1\s+1\s" % re.escape(ledger_bytes(granules)))

        host = cuarray.asarray(random((2, 3), "float64"))
        self.assertEqual(host.ledger_report(), "", "host memory with no device has no ledger")
        self.assertEqual(host.ledger(), {})
        self.assertEqual(str(host.ledger()), "")


class InfoCommand(unittest.TestCase):
    """python -m cuarray info prints what Go's cuarray info prints, in its
    format (the device's lines, then the ledger's table), with the library's
    path between them."""

    SPEC = "sim:45?mem=64MiB"

    def test_text_is_gos_format(self):
        import contextlib
        import importlib
        import importlib.util
        import io
        try:  # the installed package's command line
            main = importlib.import_module("cuarray.__main__")
        except ImportError:  # the module beside this file: its package's __main__.py
            path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuarray_package", "__main__.py")
            spec = importlib.util.spec_from_file_location("cuarray_main", path)
            main = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(main)
        dev = cuarray.device(self.SPEC)
        n = int(rng.integers(2, 200))
        a = cuarray.empty((n,), "float32", self.SPEC)
        a.copy_from(random((n,), "float32"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(main.info(self.SPEC, False), 0)
        text = out.getvalue()
        lines = text.splitlines()
        self.assertEqual(lines[0], "device      sim:45 (sim backend)", text)
        self.assertRegex(lines[1], r"^model       \S", text)
        self.assertRegex(text, r"\nmemory      [0-9.]+ \S+ free of 64\.00 MiB\n")
        self.assertRegex(text, r"\nalignment   256 bytes\nmap host    (true|false)\n")
        self.assertEqual(text, dev.info() + "library     %s\n\n" % cuarray._lib._name + dev.ledger_report())
        self.assertRegex(text, r"\n  HtoD\s+direct\s+1\s+%d B\s" % (4 * n))
        a.free()


class HostData(unittest.TestCase):
    """Python numbers and lists go in as NumPy would convert them; to_numpy()
    (and get()) come back with the array's shape; a shape that differs is an
    error, not a silent reshape."""

    def test_lists_and_numbers_convert(self):
        for dtype in DTYPES:
            with self.subTest(dtype=dtype):
                want = random((4, 5), dtype)
                a = cuarray.empty((4, 5), dtype, SPEC)
                for data in (want.tolist(), want.ravel().tolist(), tuple(want.ravel().tolist())):
                    a.copy_from(np.zeros((4, 5), dtype))
                    a.copy_from(data)
                    np.testing.assert_array_equal(a.to_numpy(), want)
                x = want.ravel()[0].item()
                a.copy_from(x)
                np.testing.assert_array_equal(a.get(), np.full((4, 5), x, dtype))

    def test_float_list_into_float32(self):
        vals = rng.standard_normal(20).tolist()
        a = cuarray.empty((4, 5), "float32", SPEC)
        a.copy_from(vals)
        np.testing.assert_array_equal(model(a), np.asarray(vals, "float32").reshape(4, 5))

    def test_to_numpy_of_views(self):
        want = random((6, 5), "float64")
        a = cuarray.empty((6, 5), "float64", SPEC)
        a.copy_from(want)
        for name, v in views(a).items():
            with self.subTest(view=name):
                got = v.to_numpy()
                self.assertEqual(got.shape, v.shape)
                self.assertEqual(got.dtype, np.dtype("float64"))
                np.testing.assert_array_equal(got, model(v))

    def test_shape_mismatch(self):
        a = cuarray.empty((4, 5), "float32", SPEC)
        before = counts(a.ledger())[0]
        for bad in (random((5, 4), "float32"), random((2, 10), "float32"), random((20,), "float32")[:19],
                    [[1.0] * 4] * 5, [1.0] * 21):
            with self.subTest(shape=np.shape(bad)):
                with self.assertRaises(ValueError):
                    a.copy_from(bad)
        self.assertEqual(counts(a.ledger())[0], before, "nothing moved")
        with self.assertRaises(TypeError):
            a.copy_from(random((4, 5), "float64"))  # typed data is never converted
        with self.assertRaises((TypeError, ValueError)):
            a.copy_from(["x"] * 20)


if __name__ == "__main__":
    unittest.main()
