"""GPU tests of the Python module with CuPy and PyTorch, in one process with
the library loaded (run by .gpu/run.sh on the GPU machine):

    CUARRAY_LIB=.gpu/libcuarray.so python3 -m unittest -v python/test_gpu.py

Each class skips, saying why, where CuPy, PyTorch or a GPU is missing.
"""

import json
import os
import subprocess
import sys
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


if __name__ == "__main__":
    unittest.main()
