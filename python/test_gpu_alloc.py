"""GPU tests of cuarray as CuPy's and PyTorch's allocator (python/test_alloc.py
has the sim ones), with the cuda build of the library:

    CUARRAY_LIB=.gpu/libcuarray.so python3 -m unittest -v python/test_gpu_alloc.py

Each class skips, saying why, where CuPy, PyTorch or a GPU is missing. The
PyTorch tests run in a child process each: PyTorch takes a pluggable
allocator only before its first CUDA allocation.
"""

import json
import os
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402

SPEC = os.environ.get("CUARRAY_GPU_DEVICE", "cuda:0")
rng = np.random.default_rng()

try:
    import cupy
except ImportError:  # pragma: no cover - depends on the machine
    cupy = None


def gpu_or_skip():
    try:
        name = cuarray.device(SPEC).ledger()["name"]
    except cuarray.CuarrayError as e:
        raise unittest.SkipTest("no GPU for %s: %s" % (SPEC, e))
    if not name.startswith("cuda"):
        raise unittest.SkipTest("%s is %s, not a GPU" % (SPEC, name))


def device_memory():
    return cuarray.device(SPEC).ledger()["memory"]["device"]


def stream_ordered_memory():
    """The ledger's stream-ordered figures (zeros before the first such allocation)."""
    zero = {"allocs": 0, "frees": 0, "current": 0, "cached": 0}
    return {**zero, **cuarray.device(SPEC).ledger()["memory"].get("stream-ordered", {})}


class CuPyAllocator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if cupy is None:
            raise unittest.SkipTest("CuPy is not installed")
        gpu_or_skip()

    def setUp(self):
        self.saved = cupy.cuda.get_allocator()

    def tearDown(self):
        cupy.cuda.set_allocator(self.saved)
        cuarray.cupy_allocator(SPEC, limit=0)  # no limit left behind

    def test_a_method_runs_on_cuarray_memory(self):
        for pool in (False, True):
            with self.subTest(pool=pool):
                cupy.cuda.set_allocator(cuarray.cupy_allocator(SPEC, pool=pool))
                before, stats0 = device_memory(), cuarray.allocator_stats()
                want = rng.standard_normal((256, 384)).astype(np.float32)
                x = cupy.asarray(want)
                y = cupy.fft.irfft2(cupy.fft.rfft2(x), s=x.shape) * 2 + x.T.T
                got = cupy.asnumpy(y)
                np.testing.assert_allclose(got, want * 3, rtol=1e-4, atol=1e-4)
                stats = cuarray.allocator_stats()
                self.assertGreaterEqual(stats["allocated"] - stats0["allocated"], 3, "CuPy allocated through cuarray")
                if not pool:
                    self.assertEqual(device_memory()["allocs"] - before["allocs"],
                                     stats["allocated"] - stats0["allocated"], "one ledger allocation per CuPy allocation")
                del x, y
                cupy.cuda.Device().synchronize()
                after = device_memory()
                self.assertEqual(after["current"] - after["cached"], before["current"] - before["cached"],
                                 "CuPy's frees went back through cuarray")

    def test_limit_raises_cupys_error_with_cuarrays_message(self):
        limit = 64 << 20
        cupy.cuda.set_allocator(cuarray.cupy_allocator(SPEC, limit=limit))
        with self.assertRaises(cupy.cuda.memory.OutOfMemoryError) as cm:
            cupy.empty(limit // 4 + 1, dtype=cupy.float32)
        self.assertIsInstance(cm.exception, cuarray.CuarrayError)
        self.assertIn("limit is 64.00 MiB", str(cm.exception))

    def test_check_max_slices_on_a_cupy_method(self):
        # httomo's 80-100 % rule on a CuPy method whose every allocation lands in cuarray's ledger:
        # x * 2 holds its input and its output at its peak, which is the identity method's model.
        cupy.cuda.set_allocator(cuarray.cupy_allocator(SPEC))
        got = cuarray.testing.check_max_slices(
            lambda x: x * 2, cuarray.plan.estimator("identity", raw=True), (64, 96, 128), 0, np.float32,
            device=SPEC, make_input=cupy.asarray)
        self.assertEqual(got.estimate, 64, got)

    def test_frees_on_a_stream(self):
        cupy.cuda.set_allocator(cuarray.cupy_allocator(SPEC, pool=True))
        want = rng.standard_normal(1 << 20).astype(np.float32)
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            for _ in range(20):
                x = cupy.asarray(want)
                y = x * 2
                del x
            got = cupy.asnumpy(y, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(got, want * 2)
        self.assertGreater(cuarray.allocator_stats()["pools"][SPEC.split(":")[1]]["from_cache"], 0)

    def test_stream_ordered_memory(self):
        """memory="stream-ordered": CuPy's allocations on a stream of its own are
        cuMemAllocAsync on that stream (pool=False, as CuPy's MemoryAsyncPool)
        or the caching pool's blocks over the default stream-ordered pool
        (pool=True), in the ledger's stream-ordered kind, none from cuMemAlloc."""
        for pool in (False, True):
            with self.subTest(pool=pool):
                cupy.cuda.set_allocator(cuarray.cupy_allocator(SPEC, pool=pool, memory="stream-ordered"))
                before, so0, stats0 = device_memory(), stream_ordered_memory(), cuarray.allocator_stats()
                want = rng.standard_normal((256, 384)).astype(np.float32)
                s = cupy.cuda.Stream(non_blocking=True)
                with s:
                    x = cupy.asarray(want)
                    y = (x * 2 + x).sum(axis=0)
                    got = cupy.asnumpy(y, stream=s)
                    del x, y
                s.synchronize()
                np.testing.assert_allclose(got, (want * 3).sum(axis=0), rtol=1e-4, atol=1e-3)
                stats, so = cuarray.allocator_stats(), stream_ordered_memory()
                self.assertGreaterEqual(stats["allocated"] - stats0["allocated"], 2, "CuPy allocated through cuarray")
                self.assertGreater(so["allocs"] - so0["allocs"], 0, "from the stream-ordered pool")
                self.assertEqual(device_memory()["allocs"], before["allocs"], "nothing from cuMemAlloc")
                self.assertEqual(so["current"] - so["cached"], so0["current"] - so0["cached"],
                                 "CuPy's frees went back through cuarray")
                cupy.cuda.set_allocator(self.saved)


def run_torch(body):
    """Runs body in a child process after use_as_torch_allocator; returns its JSON."""
    child = "import json, sys, torch, cuarray\n" + body
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0:
        raise AssertionError("the PyTorch child failed (%d):\n%s" % (r.returncode, r.stderr[-4000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


class TorchAllocator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            import torch
        except ImportError:
            raise unittest.SkipTest("PyTorch is not installed")
        if not torch.cuda.is_available():
            raise unittest.SkipTest("PyTorch has no CUDA device")
        gpu_or_skip()

    def test_a_method_runs_on_cuarray_memory(self):
        for pool in (False, True):
            with self.subTest(pool=pool):
                got = run_torch(
                    "cuarray.use_as_torch_allocator(%r, pool=%r)\n"
                    "led = lambda: cuarray.device(%r).ledger()['memory']['device']\n"
                    "before = led()\n"
                    "x = torch.randn(512, 512, device='cuda')\n"
                    "y = (x @ x.T).relu_().sum(dim=0)\n"
                    "torch.cuda.synchronize()\n"
                    "ok = bool(torch.allclose(y.cpu(), (x.cpu() @ x.cpu().T).relu_().sum(dim=0), rtol=1e-3, atol=1e-2))\n"
                    "mid, st = led(), cuarray.allocator_stats()\n"
                    "del x, y; torch.cuda.synchronize()\n"
                    "after = led()\n"
                    "print(json.dumps({'ok': ok, 'allocated': st['allocated'], 'allocs': mid['allocs'] - before['allocs'],"
                    " 'held': (after['current'] - after['cached']) - (before['current'] - before['cached'])}))\n"
                    % (SPEC, pool, SPEC))
                self.assertTrue(got["ok"], "the result matches the CPU's")
                self.assertGreaterEqual(got["allocated"], 2, "PyTorch allocated through cuarray")
                if not pool:
                    self.assertEqual(got["allocs"], got["allocated"], "one ledger allocation per PyTorch allocation")
                self.assertEqual(got["held"], 0, "PyTorch's frees went back through cuarray")

    def test_stream_ordered_memory(self):
        """memory="stream-ordered": PyTorch's allocations are cuMemAllocAsync on
        the stream it passes (its cudaMallocAsync backend's way; pool=False) or
        the caching pool's blocks over the default stream-ordered pool."""
        for pool in (False, True):
            with self.subTest(pool=pool):
                got = run_torch(
                    "cuarray.use_as_torch_allocator(%r, pool=%r, memory='stream-ordered')\n"
                    "led = lambda kind: cuarray.device(%r).ledger()['memory'].get(kind, {})\n"
                    "dev0 = led('device').get('allocs', 0)\n"
                    "s = torch.cuda.Stream()\n"
                    "with torch.cuda.stream(s):\n"
                    "    x = torch.randn(512, 512, device='cuda')\n"
                    "    y = (x @ x.T).relu_().sum(dim=0)\n"
                    "s.synchronize()\n"
                    "ok = bool(torch.allclose(y.cpu(), (x.cpu() @ x.cpu().T).relu_().sum(dim=0), rtol=1e-3, atol=1e-2))\n"
                    "mid = led('stream-ordered')\n"
                    "del x, y; torch.cuda.synchronize()\n"
                    "after = led('stream-ordered')\n"
                    "print(json.dumps({'ok': ok, 'so_allocs': mid.get('allocs', 0), 'dev_allocs': led('device').get('allocs', 0) - dev0,"
                    " 'held': after.get('current', 0) - after.get('cached', 0)}))\n"
                    % (SPEC, pool, SPEC))
                self.assertTrue(got["ok"], "the result matches the CPU's")
                self.assertGreater(got["so_allocs"], 0, "PyTorch allocated from the stream-ordered pool")
                self.assertEqual(got["dev_allocs"], 0, "nothing from cuMemAlloc")
                self.assertEqual(got["held"], 0, "PyTorch's frees went back through cuarray")

    def test_check_max_slices_on_a_torch_method(self):
        got = run_torch(
            "cuarray.use_as_torch_allocator(%r)\n"
            "import numpy as np\n"
            "r = cuarray.testing.check_max_slices(lambda x: x * 2, cuarray.plan.estimator('identity', raw=True),"
            " (64, 96, 128), 0, np.float32, device=%r, make_input=lambda a: torch.as_tensor(a, device='cuda'))\n"
            "print(json.dumps({'estimate': r.estimate, 'peak': r.peak}))\n" % (SPEC, SPEC))
        self.assertEqual(got["estimate"], 64, got)

    def test_limit_fails_with_cuarrays_message(self):
        got = run_torch(
            "cuarray.use_as_torch_allocator(%r, limit=64 << 20)\n"
            "err = None\n"
            "try:\n"
            "    x = torch.empty(32 << 20, device='cuda'); x.fill_(1); torch.cuda.synchronize()\n"
            "except Exception as e:\n"
            "    err = '%%s: %%s' %% (type(e).__name__, e)\n"
            "print(json.dumps({'error': err, 'cuarray': cuarray.last_allocator_error()}))\n" % SPEC)
        self.assertIsNotNone(got["error"], "PyTorch raised")
        self.assertIn("limit is 64.00 MiB", got["error"], "with cuarray's message (cuarray_torch_malloc_raise's exception)")
        self.assertIn("limit is 64.00 MiB", got["cuarray"] or "", "cuarray's message says why")


if __name__ == "__main__":
    unittest.main()
