"""Hostile input to the allocator, plan and testing helpers and to the C
entry points behind them, on the sim device: NULL out-pointers, values past
64 bits, bad handles, scopes ended in the wrong order, shapes with no
slices. Each call is a clear TypeError or ValueError (or cuarray's error),
never a ctypes crash, never a silently wrapped value; nothing leaks.

Run by `go test ./python`, or by hand:
    make libcuarray && CUARRAY_LIB=build/libcuarray.so /usr/bin/python3 -m unittest -v python/test_alloc_hostile.py
"""

import ctypes
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402
import cuarray_alloc  # noqa: E402
import cuarray_plan  # noqa: E402
import cuarray_testing  # noqa: E402
from test_alloc import FakeCuPy  # noqa: E402

rng = np.random.default_rng()


def device_memory(dev):
    return dev.ledger()["memory"]["device"]


class CEntryPoints(unittest.TestCase):
    """The allocator's, scopes' and planner's C entry points with NULL
    out-pointers and bad handles: an error message, never a crash."""

    def setUp(self):
        self.lib = cuarray_alloc._lib()
        self.dev = cuarray.device("sim:51?mem=64MiB")

    def message(self, err):
        self.assertTrue(err, "an error, not success")
        return cuarray_alloc._message(self.lib, err)

    def test_null_out_pointers(self):
        lib = self.lib
        for name, call in (
            ("cuarray_allocator_use", lambda: lib.cuarray_allocator_use(self.dev._h, 0, -1, None)),
            ("cuarray_allocator_malloc", lambda: lib.cuarray_allocator_malloc(64, 51, 0, None)),
            ("cuarray_allocator_stats", lambda: lib.cuarray_allocator_stats(None)),
            ("cuarray_plan_max_slices", lambda: cuarray_plan._entry("cuarray_plan_max_slices")(b"{}", None)),
            ("cuarray_plan_max_slices", lambda: cuarray_plan._entry("cuarray_plan_max_slices")(None, ctypes.byref(ctypes.c_void_p()))),
            ("cuarray_plan_methods", lambda: cuarray_plan._entry("cuarray_plan_methods")(None)),
            ("cuarray_scope_push", lambda: cuarray_testing._entry("cuarray_scope_push")(self.dev._h, None, ctypes.byref(ctypes.c_uint64()))),
            ("cuarray_scope_push", lambda: cuarray_testing._entry("cuarray_scope_push")(self.dev._h, b"x", None)),
            ("cuarray_scope_pop", lambda: cuarray_testing._entry("cuarray_scope_pop")(1, None)),
        ):
            with self.subTest(name=name):
                self.assertIn(name + ": ", self.message(call()))
                self.assertIn("is NULL", self.message(call()))

    def test_bad_handles(self):
        lib = self.lib
        index = ctypes.c_int()
        arr = cuarray.empty((4, 4), np.float32, device=self.dev)
        for h in (0, 2**64 - 1, arr._h):
            with self.subTest(handle=h):
                self.assertIn("not a live handle", self.message(lib.cuarray_allocator_use(h, 1, -1, ctypes.byref(index))))
                out = ctypes.c_uint64()
                self.assertIn("not a live handle",
                              self.message(cuarray_testing._entry("cuarray_scope_push")(h, b"x", ctypes.byref(out))))
                js = ctypes.c_void_p()
                self.assertIn("not a live handle", self.message(cuarray_testing._entry("cuarray_scope_pop")(h, ctypes.byref(js))))
        arr.free()


class AllocatorArguments(unittest.TestCase):
    """The allocator helpers' arguments: a limit or a size past 64 bits was
    wrapped by ctypes (2**64 + 4096 a limit of 4096 bytes; 2**64 + 64 a
    malloc of 64), and is now a ValueError or CuPy's out-of-memory error."""

    def test_limit_past_int64(self):
        dev = cuarray.device("sim:52?mem=64MiB")
        small = int(rng.integers(4096, 1 << 20))
        cuarray_alloc._use(dev, False, 0)
        for limit in (2**63, 2**64 + small, np.uint64(2**64 - 1)):
            with self.subTest(limit=int(limit)):
                with self.assertRaisesRegex(ValueError, "more than the most a ledger counts"):
                    cuarray_alloc._use(dev, False, limit)
                self.assertEqual(device_memory(dev).get("limit", 0), 0, "the limit is left as it was")
        for limit in (True, 1.5, "1GiB", None.__class__):
            with self.subTest(limit=limit):
                with self.assertRaises(TypeError):
                    cuarray_alloc._use(dev, False, limit)

    def test_cupy_size_past_int64(self):
        dev = cuarray.device("sim:53?mem=64MiB")
        fake = FakeCuPy(53)
        alloc = cuarray_alloc._cupy_allocator(dev, False, None, fake)
        before = device_memory(dev)["current"]
        n = int(rng.integers(1, 1 << 16))
        for size in (2**64 + n, 2**63):
            with self.subTest(size=size):
                with self.assertRaises(fake.cuda.memory.OutOfMemoryError) as cm:
                    alloc(size)
                self.assertIsInstance(cm.exception, cuarray.CuarrayError)
                self.assertIn("more than any device has", str(cm.exception))
                self.assertEqual(device_memory(dev)["current"], before, "nothing allocated")
        with self.assertRaises(cuarray.CuarrayError):
            alloc(-n)
        self.assertEqual(device_memory(dev)["current"], before)


class PlanArguments(unittest.TestCase):
    """calc_max_slices with NumPy integers, bools, floats, negative and huge
    values: an answer, or a TypeError/ValueError that names the argument."""

    def test_values(self):
        calc = cuarray_plan.calc_max_slices
        a = (9, np.dtype("float32"))
        self.assertEqual(calc("identity", np.int64(0), (np.int32(10), np.uint64(20)), np.float32, np.int64(14450), raw=True), a)
        self.assertEqual(calc("identity", 0, np.array([10, 20]), np.float32, np.uint16(14450), raw=True), a)
        for args, kw, err, what in (
            ((True, (10, 20), np.float32, 14450), {}, TypeError, "slice_dim"),
            ((0, (10, 20), np.float32, 14450.0), {}, TypeError, "available_memory"),
            ((0, (10, 20), np.float32, np.float64(14450)), {}, TypeError, "available_memory"),
            ((0, (10, 20.5), np.float32, 14450), {}, TypeError, "other_dims"),
            ((0, (10, False), np.float32, 14450), {}, TypeError, "other_dims"),
            ((0, (10, 20), np.float32, -1), {}, ValueError, "available_memory"),
            ((0, (-10, 20), np.float32, 14450), {}, ValueError, "other_dims"),
            ((3, (10, 20), np.float32, 14450), {}, ValueError, "slice_dim"),
            ((0, (10, 20), np.float32, 2**63), {}, ValueError, "available_memory .* more than the planner counts"),
            ((0, (10, 20), np.float32, 2**64 + 14450), {}, ValueError, "available_memory"),
            ((0, (2**63, 1), np.float32, 14450), {}, ValueError, "other_dims"),
            ((0, (10, 20, 30), np.float32, 14450), {}, ValueError, "other_dims"),
            ((0, 10, np.float32, 14450), {}, TypeError, "other_dims"),
            ((0, (10, 20), "nope", 14450), {}, ValueError, "dtype"),
            ((0, (10, 20), None, 14450), {}, TypeError, "dtype"),
        ):
            with self.subTest(args=args):
                with self.assertRaisesRegex(err, what):
                    calc("identity", *args, **kw)
        for size, err in ((2**70, ValueError), (-2**63 - 1, ValueError), (512.0, TypeError), (True, TypeError)):
            with self.subTest(size=size):
                with self.assertRaisesRegex(err, "size"):
                    calc("fbp.backproject", 0, (180, 256), np.float32, 2**30, size=size)

    def test_huge_shapes_fit_nothing(self):
        n, _ = cuarray_plan.calc_max_slices("identity", 0, (2**31, 2**31), np.float32, 2**62, raw=True)
        self.assertEqual(n, 0, "a slice of 16 EiB does not fit")

    def test_memory_model_values(self):
        for result, err in (((2**63, 0), ValueError), ((1.5, 0), TypeError), ((True, 0), TypeError),
                            ((-1, 0), ValueError), (None, TypeError), ((1, 2, 3), TypeError)):
            with self.subTest(result=result):
                with self.assertRaises(err):
                    cuarray_plan.memory_model(lambda sd, od, dt, r=result: r)(0, (1, 1), np.float32, 100)


class TestingArguments(unittest.TestCase):
    """measure and check_max_slices with bad arguments, and scopes ended in
    the wrong order."""

    def test_scopes_ended_out_of_order(self):
        dev = cuarray.device("sim:54?mem=64MiB")
        outer, inner = cuarray_testing.measure(dev, "outer"), cuarray_testing.measure(dev, "inner")
        outer.__enter__()
        inner.__enter__()
        a = cuarray.empty((int(rng.integers(1, 64)),), np.float32, device=dev)
        with self.assertRaisesRegex(cuarray.CuarrayError, "not the innermost"):
            outer.__exit__(None, None, None)
        inner.__exit__(None, None, None)
        outer.__exit__(None, None, None)  # lost its handle before: the ledger stayed inside "outer" for good
        self.assertIsNotNone(outer.snapshot)
        self.assertEqual(outer.allocs, 1)
        a.free()
        with cuarray_testing.measure(dev, "after") as m:
            b = cuarray.empty((8,), np.float32, device=dev)
            b.free()
        self.assertEqual(m.allocs, 1)

    def test_bad_arguments(self):
        dev = cuarray.device("sim:55?mem=64MiB")
        est = cuarray_plan.estimator("identity")

        def ident(x):
            return x

        for shape, err in (((0, 4, 4), ValueError), ((4, 0, 4), ValueError), ((-1, 4, 4), ValueError),
                           ((4, 4), ValueError), ((4.0, 4, 4), TypeError), ((True, 4, 4), TypeError)):
            with self.subTest(shape=shape):
                with self.assertRaises(err):
                    cuarray_testing.check_max_slices(ident, est, shape, 0, np.float32, device=dev)
        with self.assertRaises(TypeError):
            cuarray_testing.measure(dev, None)
        self.assertEqual(device_memory(dev)["current"], 0, "nothing left allocated")


if __name__ == "__main__":
    unittest.main()
