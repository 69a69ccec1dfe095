"""Tests of cuarray as CuPy's and PyTorch's allocator, on the sim device,
without CuPy, PyTorch or a GPU (python/test_gpu.py has the real ones):

- libcuarray's PyTorch entry points, called through C function pointers as
  torch.cuda.memory.CUDAPluggableAllocator calls them, from many threads;
- cuarray.cupy_allocator's logic, with a small fake of the CuPy classes it
  uses, and use_as_torch_allocator's with a fake of PyTorch's two functions.

With CUARRAY_DEVICE=cuda:0 and a cuda build of the library on the emulated
CUDA driver (go test -tags cuda,cudaemu ./python, which gives it 48 GPUs), the
same tests run on cuda devices, less the four that only a sim device can
run (they say why).

Run by `go test ./python`, or by hand:
    make libcuarray && CUARRAY_LIB=build/libcuarray.so /usr/bin/python3 -m unittest -v python/test_alloc.py
"""

import ctypes
import gc
import os
import random as pyrandom
import sys
import threading
import types
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402
import cuarray_alloc  # noqa: E402

# PyTorch's CUDAPluggableAllocator prototypes (torch/csrc/cuda/CUDAPluggableAllocator.h).
MALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
HUGE = 1 << 50  # 1 PiB: never fits
ON_CUDA = os.environ.get("CUARRAY_DEVICE", "").startswith("cuda")
rng = np.random.default_rng()


def spec(ordinal):
    """A sim device of its own (the ordinal is the device index the
    allocator serves), with the test device's latency if it has one; with
    a cuda test device (CUARRAY_DEVICE=cuda:N), that GPU's ordinal."""
    if os.environ.get("CUARRAY_DEVICE", "").startswith("cuda"):
        return "cuda:%d" % ordinal
    s = "sim:%d?mem=1GiB" % ordinal
    latency = [p for p in os.environ.get("CUARRAY_DEVICE", "").replace("?", "&").split("&") if p.startswith("latency=")]
    return s + "".join("&" + p for p in latency)


def torch_functions(lib=None):
    """The two entry points as PyTorch gets them: by name from the library,
    called through C function pointers."""
    lib = lib or cuarray._lib
    m = ctypes.cast(getattr(lib, "cuarray_torch_malloc"), ctypes.c_void_p).value
    f = ctypes.cast(getattr(lib, "cuarray_torch_free"), ctypes.c_void_p).value
    return MALLOC(m), FREE(f)


def device_memory(dev):
    return dev.ledger()["memory"]["device"]


def stream_ordered_memory(dev):
    """The ledger's stream-ordered figures (zeros before the first such allocation)."""
    zero = {"allocs": 0, "frees": 0, "current": 0, "cached": 0, "allocated_bytes": 0, "failed": 0}
    return {**zero, **dev.ledger()["memory"].get("stream-ordered", {})}


def default_pool(dev):
    """The ledger's figures of the device's default stream-ordered pool."""
    pools = [p for p in dev.ledger().get("pools", []) if p["name"] == "default"]
    return pools[0] if pools else {}


def granules(n):
    """The bytes the device allocates for n: 256-byte granules, at least one."""
    return (max(n, 1) + 255) // 256 * 256


def write_and_check(test, ptr, size):
    """Writes fresh random bytes to the start and end of the block (sim
    device memory is host memory) and reads them back."""
    n = min(size, 64)
    for at in {0, size - n}:
        data = rng.integers(1, 256, size=n, dtype=np.uint8).tobytes()
        ctypes.memmove(ptr + at, data, n)
        test.assertEqual(ctypes.string_at(ptr + at, n), data)


class TorchEntryPoints(unittest.TestCase):
    """cuarray_torch_malloc and cuarray_torch_free as PyTorch calls them."""

    def run_threads(self, ordinal, pool, memory="device"):
        dev = cuarray.device(spec(ordinal))
        index = cuarray_alloc._use(dev, pool, None, memory)
        self.assertEqual(index, ordinal, "the device index is the device's ordinal")
        malloc, free = torch_functions()
        s1, s2 = dev.stream(), dev.stream()
        streams = [0, s1.ptr, s2.ptr]
        before, stats0 = device_memory(dev), cuarray.allocator_stats()
        results = []

        def worker(seed):
            r = pyrandom.Random(seed)
            held, got = [], {"ok": 0, "zero": 0, "failed": 0, "bytes": 0, "messages": 0}
            for _ in range(120):
                if held and r.random() < 0.35:
                    ptr, size, stream = held.pop(r.randrange(len(held)))
                    free(ptr, size, index, stream)
                    continue
                size = r.choice([0, HUGE, r.randint(1, 3 << 20)] + [r.randint(1, 65536)] * 5)
                stream = r.choice(streams)
                ptr = malloc(size, index, stream)
                if size == 0:
                    self.assertIsNone(ptr, "a malloc of 0 bytes is NULL")
                    got["zero"] += 1
                elif not ptr:
                    got["failed"] += 1
                    msg = cuarray.last_allocator_error(clear=True)  # this thread's: its own failure's
                    if msg and "out of memory" in msg and "1.00 PiB" in msg:
                        got["messages"] += 1
                else:
                    write_and_check(self, ptr, size)
                    got["ok"] += 1
                    got["bytes"] += granules(size)
                    held.append((ptr, size, stream))
            for ptr, size, stream in held:
                free(ptr, size, index, stream)
            results.append(got)

        threads = [threading.Thread(target=worker, args=(int(rng.integers(1 << 62)),)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(results), len(threads), "every thread finished")
        want = {k: sum(g[k] for g in results) for k in results[0]}
        self.assertGreater(want["ok"], 0)
        self.assertGreater(want["failed"], 0, "the 1 PiB requests fail")
        stats = cuarray.allocator_stats()
        delta = {k: stats[k] - stats0[k] for k in ("mallocs", "allocated", "zero", "failed", "frees", "live")}
        self.assertEqual(delta, {"mallocs": want["ok"] + want["zero"] + want["failed"], "allocated": want["ok"],
                                 "zero": want["zero"], "failed": want["failed"], "frees": want["ok"], "live": 0})
        self.assertEqual(want["messages"], want["failed"],
                         "each failed malloc's thread read its message, with the size asked for")
        self.assertEqual(stats["errors"] - stats0["errors"], want["failed"], "every thread's failures counted")
        s1.synchronize()
        s2.synchronize()
        return dev, before, want, (stats0, stats)

    def test_threads_device(self):
        dev, before, want, _ = self.run_threads(21, pool=False)
        after = device_memory(dev)
        self.assertEqual(after["allocs"] - before["allocs"], want["ok"], "one device allocation per malloc")
        self.assertEqual(after["frees"] - before["frees"], want["ok"], "one device free per free")
        self.assertEqual(after["allocated_bytes"] - before["allocated_bytes"], want["bytes"], "the bytes asked for, in granules")
        self.assertEqual(after["failed"] - before["failed"], want["failed"], "the ledger counts the refusals")
        self.assertEqual(after["current"], before["current"], "device memory back where it was")

    def test_threads_pool(self):
        dev, before, want, (stats0, stats) = self.run_threads(22, pool=True)
        p, p0 = stats["pools"]["22"], stats0["pools"].get("22", {})
        self.assertEqual(p["allocs"] - p0.get("allocs", 0), want["ok"], "the pool served every allocation")
        self.assertEqual(p["frees"] - p0.get("frees", 0), want["ok"])
        self.assertEqual(p["in_use"], 0, "the pool has nothing handed out")
        self.assertGreater(p["from_cache"] - p0.get("from_cache", 0), 0, "freed blocks were reused")
        after = device_memory(dev)
        self.assertEqual(after["current"] - after["cached"], 0, "what the ledger holds is the pool's cache")

    def test_threads_stream_ordered(self):
        """memory="stream-ordered" alone: each malloc a cuMemAllocAsync on the
        stream PyTorch passes (the legacy default stream and two others), each
        free a cuMemFreeAsync, all counted under the ledger's stream-ordered
        kind and the default pool's used bytes, none under device."""
        dev = cuarray.device(spec(43))
        so0 = stream_ordered_memory(dev)
        dev, before, want, _ = self.run_threads(43, pool=False, memory="stream-ordered")
        so = stream_ordered_memory(dev)
        self.assertEqual(so["allocs"] - so0["allocs"], want["ok"], "one stream-ordered allocation per malloc")
        self.assertEqual(so["frees"] - so0["frees"], want["ok"], "one stream-ordered free per free")
        self.assertEqual(so["allocated_bytes"] - so0["allocated_bytes"], want["bytes"], "the bytes asked for, in granules")
        self.assertEqual(so["current"], 0, "everything went back")
        self.assertEqual(device_memory(dev)["allocs"], before["allocs"], "nothing from cuMemAlloc")
        self.assertEqual(default_pool(dev).get("used"), 0, "the default pool has nothing handed out")

    def test_threads_pool_stream_ordered(self):
        """pool=True over memory="stream-ordered": cuarray's caching pool serves
        every malloc, its segments from the default stream-ordered pool."""
        dev, before, want, (stats0, stats) = self.run_threads(44, pool=True, memory="stream-ordered")
        p, p0 = stats["pools"]["44"], stats0["pools"].get("44", {})
        self.assertEqual(p["allocs"] - p0.get("allocs", 0), want["ok"], "the pool served every allocation")
        self.assertEqual(p["in_use"], 0, "the pool has nothing handed out")
        self.assertGreater(p["from_cache"] - p0.get("from_cache", 0), 0, "freed blocks were reused")
        so = stream_ordered_memory(dev)
        self.assertEqual(so["current"], p["reserved"], "the pool's segments are the stream-ordered memory held")
        self.assertEqual(so["cached"], p["reserved"], "all of it cached by the pool")
        # The default pool counts the blocks it handed out, and a freed block it
        # reuses for a smaller segment goes out whole: at least the segments.
        self.assertGreaterEqual(default_pool(dev)["used"], p["reserved"], "the default pool's used bytes hold the segments")
        self.assertEqual(device_memory(dev)["allocs"], before["allocs"], "nothing from cuMemAlloc")

    def test_stream_ordered_limit(self):
        """With memory="stream-ordered" the limit is the ledger's on stream-ordered memory."""
        dev = cuarray.device(spec(45))
        limit = int(rng.integers(1 << 20, 2 << 20))
        index = cuarray_alloc._use(dev, False, limit, "stream-ordered")
        try:
            self.assertEqual(stream_ordered_memory(dev)["limit"], limit)
            malloc, free = torch_functions()
            a = malloc(limit // 2, index, None)
            self.assertTrue(a, cuarray.last_allocator_error())
            self.assertIsNone(malloc(limit, index, None), "a malloc past the limit is NULL")
            msg = cuarray.last_allocator_error(clear=True)
            self.assertIn("out of memory", msg)
            self.assertIn("malloc async %d bytes" % limit, msg)
            free(a, limit // 2, index, None)
        finally:
            cuarray_alloc._use(dev, False, 0, "stream-ordered")
        self.assertEqual(stream_ordered_memory(dev)["current"], 0)

    def test_memory_argument(self):
        dev = cuarray.device(spec(45))
        for bad in ("managed", None, 2):
            with self.subTest(memory=bad):
                with self.assertRaisesRegex(ValueError, "memory must be one of"):
                    cuarray_alloc._use(dev, False, None, bad)
        lib = cuarray_alloc._lib()
        index = ctypes.c_int()
        err = lib.cuarray_allocator_use(dev._h, 4, -1, ctypes.byref(index))
        self.assertTrue(err, "an unknown flag is refused")
        self.assertIn("CUARRAY_ALLOCATOR_STREAM_ORDERED", cuarray_alloc._message(lib, err))

    def test_limit(self):
        dev = cuarray.device(spec(23))
        limit = int(rng.integers(1 << 20, 2 << 20))
        index = cuarray_alloc._use(dev, False, limit)
        try:
            malloc, free = torch_functions()
            cuarray.last_allocator_error(clear=True)
            a = malloc(limit // 2, index, None)
            self.assertTrue(a, cuarray.last_allocator_error())
            before = device_memory(dev)
            self.assertIsNone(malloc(limit, index, None), "a malloc past the limit is NULL")
            msg = cuarray.last_allocator_error(clear=True)
            self.assertIn("out of memory", msg)
            self.assertIn("malloc %d bytes" % limit, msg)
            self.assertRegex(msg, r"limit is \d", "with the limit")
            self.assertIsNone(cuarray.last_allocator_error(), "cleared")
            self.assertEqual(device_memory(dev)["current"], before["current"], "a refused malloc holds nothing")
            free(a, limit // 2, index, None)
            b = malloc(limit // 2, index, None)
            self.assertTrue(b, "after the free the same size fits again")
            free(b, limit // 2, index, None)
        finally:
            cuarray_alloc._use(dev, False, 0)
        self.assertEqual(device_memory(dev)["current"], 0)

    def test_last_error_is_each_threads_own(self):
        """Threads that fail at once each read their own failure's message, as
        with errno: each makes a failing call of its own (a malloc past the
        limit of a size no other asks for, through the PyTorch or the CuPy
        entry point; a free of an odd address no other frees), all wait, then
        each reads its last error, every fourth clearing it, and after a
        second wait reads it again. With one last error per process they
        would read one thread's message, or none once a thread cleared it."""
        dev = cuarray.device(spec(27))
        limit = int(rng.integers(1 << 20, 2 << 20))
        index = cuarray_alloc._use(dev, False, limit)
        lib = cuarray_alloc._lib()
        malloc, free = torch_functions()
        n = 12
        failed, cleared = threading.Barrier(n, timeout=60), threading.Barrier(n, timeout=60)
        sizes = [limit + 1 + int(s) for s in rng.choice(1 << 30, size=n, replace=False)]
        ptrs = [int(p) * 2 + 1 for p in rng.choice(1 << 46, size=n, replace=False)]  # odd: never handed out

        def call(i):
            size, ptr = sizes[i], ptrs[i]
            if i % 3 == 0:
                return lambda: malloc(size, index, None), None, "malloc %d bytes" % size
            if i % 3 == 1:
                return lambda: free(ptr, size, index, None), None, "free %#x (%d bytes" % (ptr, size)

            def cupy_malloc():
                out = ctypes.c_size_t()
                err = lib.cuarray_allocator_malloc(size, index, 0, ctypes.byref(out))
                return cuarray_alloc._message(lib, err) if err else None
            return cupy_malloc, "returned", "malloc %d bytes" % size

        calls = [call(i) for i in range(n)]
        got = [None] * n

        def worker(i):
            returned = calls[i][0]()
            failed.wait()
            first = cuarray.last_allocator_error(clear=(i % 4 == 0))
            cleared.wait()
            got[i] = (returned, first, cuarray.last_allocator_error(clear=True))

        stats0 = cuarray.allocator_stats()
        try:
            threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            cuarray_alloc._use(dev, False, 0)
        self.assertEqual(cuarray.allocator_stats()["errors"] - stats0["errors"], n, "every thread's error counted")
        for i, (_, returns, want) in enumerate(calls):
            with self.subTest(thread=i):
                self.assertIsNotNone(got[i], "the thread finished")
                returned, first, second = got[i]
                self.assertIn(want, first or "", "the thread reads its own failure's message")
                if returns:
                    self.assertEqual(returned, first, "cuarray_allocator_malloc returned the message it recorded")
                if i % 4 == 0:
                    self.assertIsNone(second, "the thread cleared its message")
                else:
                    self.assertIn(want, second or "", "the other threads' clears left its message")
        self.assertEqual(device_memory(dev)["current"], 0, "the failures held nothing")

    def test_limit_argument(self):
        dev = cuarray.device(spec(23))
        for bad, error in ((-1, ValueError), ("1GiB", TypeError), (True, TypeError), (1.5, TypeError)):
            with self.subTest(limit=bad):
                with self.assertRaises(error):
                    cuarray_alloc._use(dev, False, bad)
        cuarray_alloc._use(dev, False, np.int64(1 << 30))
        self.assertEqual(device_memory(dev)["limit"], 1 << 30, "a NumPy integer is a number of bytes")
        cuarray_alloc._use(dev, False, 0)
        self.assertEqual(device_memory(dev)["limit"], 0, "0 removes the limit")

    def test_bad_frees_are_harmless(self):
        dev = cuarray.device(spec(24))
        index = cuarray_alloc._use(dev, False, None)
        malloc, free = torch_functions()
        p = malloc(4096, index, None)
        self.assertTrue(p)
        host = np.frombuffer(rng.bytes(64), dtype=np.uint8).copy()
        host_before = host.copy()
        before, stats0 = device_memory(dev), cuarray.allocator_stats()
        cases = [
            ("foreign pointer", lambda: free(host.ctypes.data, 64, index, None), "not allocated by cuarray's allocator"),
            ("NULL", lambda: free(None, 0, index, None), None),
            ("unknown device index", lambda: self.assertIsNone(malloc(64, 777, None)), "no cuarray device"),
            ("negative size", lambda: self.assertIsNone(malloc(-5, index, None)), "malloc -5 bytes"),
        ]
        for name, call, want in cases:
            with self.subTest(name):
                cuarray.last_allocator_error(clear=True)
                call()
                if want is None:
                    self.assertIsNone(cuarray.last_allocator_error())
                else:
                    self.assertIn(want, cuarray.last_allocator_error())
                self.assertEqual(device_memory(dev)["current"], before["current"], "nothing allocated or freed")
        self.assertEqual(cuarray.allocator_stats()["foreign"] - stats0["foreign"], 1)
        np.testing.assert_array_equal(host, host_before, "the foreign memory is untouched")
        free(p, 4096, index, None)
        cuarray.last_allocator_error(clear=True)
        free(p, 4096, index, None)
        self.assertIn("freed twice", cuarray.last_allocator_error(clear=True))
        self.assertEqual(device_memory(dev)["current"], before["current"] - 4096)


class FakeCuPy(types.ModuleType):
    """The parts of CuPy that cupy_allocator uses, with CuPy's signatures:
    cuda.UnownedMemory(ptr, size, owner, device_id), cuda.MemoryPointer(mem,
    offset), cuda.memory.OutOfMemoryError(size, total, limit),
    cuda.get_current_stream().ptr and cuda.runtime.getDevice()."""

    def __init__(self, device_id):
        super().__init__("cupy")
        fake = self
        self.stream_ptr = 0

        class OutOfMemoryError(MemoryError):
            def __init__(self, size, total, limit=0):
                self._size, self._total, self._limit = size, total, limit
                super().__init__("Out of memory allocating {:,} bytes".format(size))

        class UnownedMemory:
            def __init__(self, ptr, size, owner, device_id=-1):
                self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id

        class MemoryPointer:
            def __init__(self, mem, offset):
                self.mem, self.ptr = mem, mem.ptr + offset

        self.cuda = types.SimpleNamespace(
            UnownedMemory=UnownedMemory, MemoryPointer=MemoryPointer,
            memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
            get_current_stream=lambda: types.SimpleNamespace(ptr=fake.stream_ptr),
            runtime=types.SimpleNamespace(getDevice=lambda: device_id))


class CuPyAllocator(unittest.TestCase):
    """cupy_allocator's logic on sim, with the fake CuPy."""

    def test_alloc_and_free_through_the_ledger(self):
        for ordinal, pool in ((31, False), (32, True)):
            with self.subTest(pool=pool):
                dev = cuarray.device(spec(ordinal))
                fake = FakeCuPy(ordinal)
                alloc = cuarray_alloc._cupy_allocator(dev, pool, None, fake)
                before = device_memory(dev)
                sizes = [int(n) for n in rng.integers(1, 1 << 20, size=8)] + [0]
                ptrs = [alloc(n) for n in sizes]
                for n, mp in zip(sizes, ptrs):
                    self.assertIsInstance(mp, fake.cuda.MemoryPointer)
                    self.assertEqual(mp.mem.size, n)
                    self.assertEqual(mp.mem.device_id, ordinal)
                    if n:
                        write_and_check(self, mp.ptr, n)
                    else:
                        self.assertEqual(mp.ptr, 0, "0 bytes: a NULL pointer, no allocation")
                after = device_memory(dev)
                if not pool:
                    self.assertEqual(after["allocs"] - before["allocs"], len(sizes) - 1, "one device allocation per alloc")
                    self.assertEqual(after["current"] - before["current"], sum(granules(n) for n in sizes if n))
                else:
                    self.assertEqual(cuarray.allocator_stats()["pools"][str(ordinal)]["in_use"],
                                     sum(granules(n) for n in sizes if n))
                del ptrs, mp
                gc.collect()
                after = device_memory(dev)
                self.assertEqual(after["current"] - after["cached"], before["current"] - before["cached"],
                                 "CuPy dropped the pointers: the memory went back through cuarray")

    def test_out_of_memory_is_cupys_error_with_cuarrays_message(self):
        dev = cuarray.device(spec(33))
        fake = FakeCuPy(33)
        limit = int(rng.integers(1 << 20, 2 << 20))
        alloc = cuarray_alloc._cupy_allocator(dev, False, limit, fake)
        try:
            keep = alloc(limit // 2)
            with self.assertRaises(fake.cuda.memory.OutOfMemoryError) as cm:
                alloc(limit)
            e = cm.exception
            self.assertIsInstance(e, cuarray.CuarrayError)
            self.assertIsInstance(e, MemoryError)
            self.assertIn("out of memory", str(e))
            self.assertIn("malloc %d bytes" % limit, str(e))
            self.assertRegex(str(e), r"limit is \d")
            self.assertEqual((e._size, e._limit), (limit, limit), "CuPy's own fields: size and limit")
            del keep
        finally:
            cuarray_alloc._use(dev, False, 0)

    @unittest.skipIf(ON_CUDA, "holds a stream with sim's Pause, which only sim streams have")
    def test_frees_follow_cupys_current_stream(self):
        dev = cuarray.device(spec(34))
        fake = FakeCuPy(34)
        alloc = cuarray_alloc._cupy_allocator(dev, True, None, fake)
        a, b = dev.stream(), dev.stream()
        n = int(rng.integers(1, 1 << 20))
        fake.stream_ptr = a.ptr
        resume = a._hold()  # stream a is busy, as with a long kernel
        try:
            mp = alloc(n)
            first = mp.ptr
            del mp  # freed on a, which has not passed the free
            mp = alloc(n)
            self.assertEqual(mp.ptr, first, "stream a reuses its block at once")
            del mp
            fake.stream_ptr = b.ptr
            mp = alloc(n)
            self.assertNotEqual(mp.ptr, first, "stream b waits until a has passed the free")
            del mp
        finally:
            resume()
        a.synchronize()
        b.synchronize()
        self.assertEqual(cuarray.allocator_stats()["pools"]["34"]["in_use"], 0)

    @unittest.skipIf(ON_CUDA, "holds a stream with sim's Pause, which only sim streams have")
    def test_stream_ordered_follows_cupys_current_stream(self):
        """memory="stream-ordered": CuPy's alloc is a cuMemAllocAsync on its
        current stream, and CuPy's free a cuMemFreeAsync on its current
        stream, as with CuPy's MemoryAsyncPool: a block freed on a busy
        stream is that stream's again at once (another stream may reuse it
        only with a wait for the free, which the default pool may insert)."""
        dev = cuarray.device(spec(46))
        fake = FakeCuPy(46)
        alloc = cuarray_alloc._cupy_allocator(dev, False, None, fake, "stream-ordered")
        a, b = dev.stream(), dev.stream()
        n = int(rng.integers(1, 1 << 20))
        so0 = stream_ordered_memory(dev)
        fake.stream_ptr = a.ptr
        resume = a._hold()  # stream a is busy, as with a long kernel
        try:
            mp = alloc(n)
            first = mp.ptr
            write_and_check(self, first, n)
            del mp  # freed on a, which has not passed the free
            mp = alloc(n)
            self.assertEqual(mp.ptr, first, "stream a reuses its block at once")
            del mp
            fake.stream_ptr = b.ptr
            mp = alloc(n)  # on b; freed on b
            self.assertTrue(mp.ptr)
            del mp
        finally:
            resume()
        fake.stream_ptr = (int(rng.integers(1 << 40)) | 1) << 4  # a handle of no stream
        with self.assertRaisesRegex(cuarray.CuarrayError, "malloc async %d bytes on .*, stream %#x" % (n, fake.stream_ptr)):
            alloc(n)  # the stream reaches the driver: an unknown one is refused
        a.synchronize()
        b.synchronize()
        so = stream_ordered_memory(dev)
        self.assertEqual(so["allocs"] - so0["allocs"], 3, "each alloc a stream-ordered allocation")
        self.assertEqual(so["current"], 0, "each free a stream-ordered free")
        self.assertEqual(device_memory(dev)["allocs"], 0, "nothing from cuMemAlloc")

    @unittest.skipIf(ON_CUDA, "checks the refusal of a sim device; a cuda one is accepted")
    def test_needs_a_gpu_device_and_cupy(self):
        saved = sys.modules.get("cupy")
        try:
            sys.modules["cupy"] = FakeCuPy(0)
            with self.assertRaisesRegex(ValueError, "emulated in host memory"):
                cuarray.cupy_allocator(spec(35))
            sys.modules["cupy"] = None  # import cupy fails, as where it is not installed
            with self.assertRaisesRegex(ImportError, "cupy_allocator needs CuPy"):
                cuarray.cupy_allocator(spec(35))
        finally:
            if saved is None:
                sys.modules.pop("cupy", None)
            else:
                sys.modules["cupy"] = saved


class FakeTorch(types.ModuleType):
    """torch.cuda.memory's CUDAPluggableAllocator and change_current_allocator,
    doing what PyTorch does with them: load the library by its path and take
    the two functions' addresses."""

    def __init__(self):
        super().__init__("torch")
        fake = self
        self.current = None

        class CUDAPluggableAllocator:
            def __init__(self, path, alloc_fn_name, free_fn_name):
                lib = ctypes.CDLL(path)
                self.path = path
                self.malloc = ctypes.cast(getattr(lib, alloc_fn_name), ctypes.c_void_p).value
                self.free = ctypes.cast(getattr(lib, free_fn_name), ctypes.c_void_p).value

        def change_current_allocator(a):
            fake.current = a

        self.cuda = types.SimpleNamespace(memory=types.SimpleNamespace(
            CUDAPluggableAllocator=CUDAPluggableAllocator, change_current_allocator=change_current_allocator))


class TorchHelper(unittest.TestCase):
    def test_installs_the_loaded_librarys_entry_points(self):
        dev = cuarray.device(spec(41))
        fake = FakeTorch()
        a = cuarray_alloc._use_as_torch_allocator(dev, False, None, fake)
        self.assertIs(fake.current, a, "change_current_allocator was called with it")
        self.assertEqual(a.path, cuarray._lib._name, "the library already loaded")
        lib = cuarray._lib
        self.assertEqual(a.malloc, ctypes.cast(lib.cuarray_torch_malloc_raise, ctypes.c_void_p).value,
                         "the loaded library's cuarray_torch_malloc_raise (C++ callers that do not check for NULL)")
        self.assertEqual(a.free, ctypes.cast(lib.cuarray_torch_free, ctypes.c_void_p).value)
        before = device_memory(dev)
        n = int(rng.integers(1, 1 << 16))
        p = MALLOC(a.malloc)(n, 41, None)
        self.assertTrue(p)
        self.assertEqual(device_memory(dev)["allocs"] - before["allocs"], 1)
        FREE(a.free)(p, n, 41, None)
        self.assertEqual(device_memory(dev)["current"], before["current"])

    @unittest.skipIf(ON_CUDA, "checks the refusal of a sim device; a cuda one is accepted")
    def test_needs_a_gpu_device_and_torch(self):
        saved = sys.modules.get("torch")
        try:
            sys.modules["torch"] = FakeTorch()
            with self.assertRaisesRegex(ValueError, "emulated in host memory"):
                cuarray.use_as_torch_allocator(spec(42))
            sys.modules["torch"] = None
            with self.assertRaisesRegex(ImportError, "use_as_torch_allocator needs PyTorch"):
                cuarray.use_as_torch_allocator(spec(42))
        finally:
            if saved is None:
                sys.modules.pop("torch", None)
            else:
                sys.modules["torch"] = saved


if __name__ == "__main__":
    unittest.main()
