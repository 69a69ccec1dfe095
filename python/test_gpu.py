"""GPU tests of the Python module with CuPy and PyTorch, in one process with
the library loaded (run by .gpu/run.sh on the GPU machine):

    CUARRAY_LIB=.gpu/libcuarray.so python3 -m unittest -v python/test_gpu.py

Each class skips, saying why, where CuPy, PyTorch or a GPU is missing.
"""

import ctypes
import json
import os
import subprocess
import sys
import threading
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402
from test_cuarray import counts, model, random  # noqa: E402

SPEC = os.environ.get("CUARRAY_GPU_DEVICE", "cuda:0")
DTYPES = ["float32", "float64", "int32", "uint8"]

try:
    import cupy
except ImportError:  # pragma: no cover - depends on the machine
    cupy = None
try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def views(a):
    return {"contiguous": a, "stepped": a[1:7, ::2], "transposed": a.T, "column": a[:, 3]}


def gpu_or_skip():
    try:
        cuarray.device(SPEC)
    except cuarray.CuarrayError as e:
        raise unittest.SkipTest("no GPU for %s: %s" % (SPEC, e))


class CuPy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if cupy is None:
            raise unittest.SkipTest("CuPy is not installed")
        gpu_or_skip()

    def test_shares_memory(self):
        for dtype in DTYPES:
            base = cuarray.empty((8, 6), dtype, SPEC)
            for name, a in views(base).items():
                for way, consume in (("asarray", cupy.asarray), ("from_dlpack", cupy.from_dlpack)):
                    with self.subTest(dtype=dtype, view=name, way=way):
                        before = counts(a.ledger())
                        c = consume(a)
                        self.assertEqual(counts(a.ledger()), before, "no copy, no allocation")
                        self.assertEqual(c.data.ptr, a.ptr)
                        self.assertEqual(c.strides, a.strides)
                        want = random(a.shape, dtype)
                        c[...] = cupy.asarray(want)
                        cupy.cuda.runtime.deviceSynchronize()
                        np.testing.assert_array_equal(model(a), want, "Go reads CuPy's write")
                        want = random(a.shape, dtype)
                        a.copy_from(np.ascontiguousarray(want).tobytes())
                        np.testing.assert_array_equal(cupy.asnumpy(c), want, "CuPy reads Go's write")

    def test_import_cupy(self):
        for way, take in (("cuda array interface", cuarray.asarray), ("dlpack", cuarray.from_dlpack)):
            with self.subTest(way=way):
                c = cupy.asarray(random((9, 7), "float32"))[::2, 1:]
                a = take(c)
                self.assertEqual(a.ptr, c.data.ptr)
                self.assertEqual(a.strides, c.strides)
                np.testing.assert_array_equal(model(a), cupy.asnumpy(c))

    def test_round_trip(self):
        a = cuarray.empty((8, 6), "float32", SPEC)[1:, ::2]
        for way, there in (("asarray", cupy.asarray), ("dlpack", cupy.from_dlpack)):
            with self.subTest(way=way):
                before = counts(a.ledger())
                b = cuarray.asarray(there(a)) if way == "asarray" else cuarray.from_dlpack(there(a))
                self.assertEqual(counts(a.ledger()), before)
                self.assertEqual((b.ptr, b.shape, b.strides, b.dtype, b.readonly), (a.ptr, a.shape, a.strides, a.dtype, a.readonly))


class PyTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if torch is None or not torch.cuda.is_available():
            raise unittest.SkipTest("PyTorch with CUDA is not available")
        gpu_or_skip()

    def test_shares_memory(self):
        for dtype in DTYPES:
            base = cuarray.empty((8, 6), dtype, SPEC)
            for name, a in views(base).items():
                for way, consume in (("as_tensor", lambda x: torch.as_tensor(x, device="cuda")), ("from_dlpack", torch.from_dlpack)):
                    with self.subTest(dtype=dtype, view=name, way=way):
                        before = counts(a.ledger())
                        t = consume(a)
                        self.assertEqual(counts(a.ledger()), before, "no copy, no allocation")
                        self.assertEqual(t.data_ptr(), a.ptr)
                        self.assertEqual(tuple(s * t.element_size() for s in t.stride()), a.strides)
                        want = random(a.shape, dtype)
                        t.copy_(torch.from_numpy(want))
                        torch.cuda.synchronize()
                        np.testing.assert_array_equal(model(a), want, "Go reads PyTorch's write")
                        want = random(a.shape, dtype)
                        a.copy_from(np.ascontiguousarray(want).tobytes())
                        np.testing.assert_array_equal(t.cpu().numpy(), want, "PyTorch reads Go's write")

    def test_import_torch(self):
        for way, take in (("cuda array interface", cuarray.asarray), ("dlpack", cuarray.from_dlpack)):
            with self.subTest(way=way):
                t = torch.randn(9, 7, device="cuda")[::2, 1:]
                a = take(t)
                self.assertEqual(a.ptr, t.data_ptr())
                np.testing.assert_array_equal(model(a), t.cpu().numpy())

    def test_ipc_to_a_torch_process(self):
        """cuarray's Go code exports (in this process, through the library);
        a separate PyTorch process opens the handle with the library, wraps it
        with torch.as_tensor, reads it and writes back."""
        a = cuarray.empty((32, 16), "float32", SPEC)
        want = random((32, 16), "float32")
        a.copy_from(want.tobytes())
        child = (
            "import sys, json, torch, cuarray\n"
            "b = cuarray.ipc_open(sys.stdin.read())\n"
            "t = torch.as_tensor(b, device='cuda')\n"
            "s = float(t.double().sum())\n"
            "t.mul_(-1); torch.cuda.synchronize()\n"
            "print(json.dumps({'sum': s, 'ipc_allocs': b.ledger()['memory']['ipc']['allocs']}))\n"
        )
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run([sys.executable, "-c", child], input=a.ipc_export(), capture_output=True, text=True, env=env, check=True).stdout
        got = json.loads(out)
        self.assertAlmostEqual(got["sum"], float(want.astype(np.float64).sum()), places=2)
        self.assertEqual(got["ipc_allocs"], 1)
        np.testing.assert_array_equal(model(a), -want, "the PyTorch process wrote into this process's memory")


class AsyncExports(unittest.TestCase):
    """An export after copy_async is correct in CuPy and PyTorch: CAI names
    the stream (CuPy waits on it), DLPack makes the consumer's stream wait;
    with nothing pending CAI names none."""

    @classmethod
    def setUpClass(cls):
        if cupy is None and (torch is None or not torch.cuda.is_available()):
            raise unittest.SkipTest("neither CuPy nor PyTorch with CUDA is installed")
        gpu_or_skip()

    def pending_copy(self, stream=None):
        n = 16 << 20  # 64 MiB: the copy is likely still running when the export comes
        want = random((n,), "float32")
        src = cuarray.empty((n,), "float32", SPEC)
        src.copy_from(want.tobytes())
        dst = cuarray.empty((n,), "float32", SPEC)
        s = stream or cuarray.device(SPEC).stream()
        dst.copy_async(src, s)
        return src, dst, want, s

    def test_nothing_pending(self):
        a = cuarray.empty((8, 6), "float32", SPEC)
        self.assertIsNone(a.__cuda_array_interface__["stream"])

    def test_cai_stream(self):
        if cupy is None:
            self.skipTest("CuPy is not installed")
        src, dst, want, s = self.pending_copy()
        stream = dst.__cuda_array_interface__["stream"]
        self.assertIn(stream, (s.ptr, None), "the copy's stream, or none once it is done")
        np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(dst)), want, "CuPy waited on the stream CAI names")
        s.synchronize()
        self.assertIsNone(dst.__cuda_array_interface__["stream"])

    def test_dlpack_consumer_stream(self):
        if torch is None or not torch.cuda.is_available():
            self.skipTest("PyTorch with CUDA is not available")
        for name, consumer in (("legacy default", None), ("a torch stream", torch.cuda.Stream())):
            with self.subTest(consumer=name):
                src, dst, want, s = self.pending_copy()
                if consumer is None:
                    t = torch.from_dlpack(dst)
                    got = t.cpu().numpy()
                else:
                    with torch.cuda.stream(consumer):
                        t = torch.from_dlpack(dst)  # torch passes its current stream
                        got = t.cpu().numpy()
                np.testing.assert_array_equal(got, want, "PyTorch's stream waited for the copy")

    def test_copy_on_a_torch_stream(self):
        if torch is None or not torch.cuda.is_available():
            self.skipTest("PyTorch with CUDA is not available")
        ts = torch.cuda.Stream()
        src, dst, want, _ = self.pending_copy(ts.cuda_stream)
        self.assertIn(dst.__cuda_array_interface__["stream"], (ts.cuda_stream, None))
        ts.synchronize()
        np.testing.assert_array_equal(model(dst), want)


def _libcuda():
    cu = ctypes.CDLL("libcuda.so.1")
    for name in ("cuInit", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuDeviceGet", "cuCtxCreate_v2", "cuCtxDestroy_v2"):
        getattr(cu, name).restype = ctypes.c_int
    return cu


class Context(unittest.TestCase):
    """Every call restores the calling thread's current CUDA context, as it
    was (none, or another library's), and so do the deleters of its DLPack
    tensors."""

    @classmethod
    def setUpClass(cls):
        gpu_or_skip()
        cls.cu = _libcuda()
        assert cls.cu.cuInit(0) == 0

    def current(self):
        c = ctypes.c_void_p()
        self.assertEqual(self.cu.cuCtxGetCurrent(ctypes.byref(c)), 0)
        return c.value

    def calls(self):
        a = cuarray.empty((64, 32), "float32", SPEC)
        want = random((64, 32), "float32")
        a.copy_from(want.tobytes())
        b = cuarray.empty((64, 32), "float32", SPEC)
        b.copy_(a)
        s = cuarray.device(SPEC).stream()
        c = cuarray.empty((64, 32), "float32", SPEC)
        c.copy_async(b, s)
        c.__cuda_array_interface__
        cap = c.__dlpack__(stream=1)
        del cap  # the deleter runs here
        got = model(c)
        s.close()
        for x in (a, b, c):
            x.free()
        return got, want

    def in_thread(self, setup, teardown):
        out = {}

        def body():
            try:
                ctx = setup()
                before = self.current()
                got, want = self.calls()
                out["result"] = (before, self.current(), ctx, got, want)
                teardown(ctx)
            except BaseException as e:
                out["error"] = e
        th = threading.Thread(target=body)
        th.start()
        th.join()
        if "error" in out:
            raise out["error"]
        return out["result"]

    def test_no_context(self):
        before, after, _, got, want = self.in_thread(lambda: None, lambda ctx: None)
        self.assertIsNone(before, "a new thread has no current context")
        self.assertIsNone(after, "the library left none current")
        np.testing.assert_array_equal(got, want)

    def test_another_context(self):
        def create():
            dev, ctx = ctypes.c_int(), ctypes.c_void_p()
            self.assertEqual(self.cu.cuDeviceGet(ctypes.byref(dev), int(SPEC.split(":")[1])), 0)
            self.assertEqual(self.cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), 0)
            return ctx.value

        before, after, ctx, got, want = self.in_thread(create, lambda ctx: self.cu.cuCtxDestroy_v2(ctypes.c_void_p(ctx)))
        self.assertEqual(before, ctx)
        self.assertEqual(after, ctx, "the caller's own context is current again")
        np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    unittest.main()
