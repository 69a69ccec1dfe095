"""Tests of cuarray.plan (httomo's calc_max_slices by cuarray's planner) and
cuarray.testing (check_max_slices) on the sim device.

Run by `go test ./python` (which builds the library, and also checks that
every built-in method's answer here is the Go planner's), or by hand:
    make libcuarray && /usr/bin/python3 -m unittest -v python/test_plan.py
"""

import ctypes
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402
import cuarray.plan  # noqa: E402,F401  (the submodule imports by name too)
import cuarray.testing  # noqa: E402,F401

# A device of its own: scopes count everything on their device.
SPEC = "sim:0?mem=64MiB"
rng = np.random.default_rng()


class SeedExample(unittest.TestCase):
    """httomo's worked example (developers/memory_calculation.rst), line by line."""

    def test_line_by_line(self):
        # call calc_max_slices(0, (10, 20), np.float32(), 14450, **method_args)
        slice_dim, other_dims, dtype, available_memory = 0, (10, 20), np.float32(), 14450
        # input_mem_per_slice = 800; output_mem_per_slice = 800
        input_mem_per_slice = other_dims[0] * other_dims[1] * dtype.nbytes
        self.assertEqual(input_mem_per_slice, 800)
        self.assertEqual(cuarray.plan.explain("identity", slice_dim, other_dims, dtype, available_memory),
                         "input 800 + output 800 = 1600 bytes per slice; 14450 // 1600 = 9 slices")
        # => max_slices = 14450 // 1600 = 9
        max_slices, outdtype = cuarray.plan.calc_max_slices("identity", slice_dim, other_dims, dtype, available_memory, raw=True)
        self.assertEqual((max_slices, outdtype), (9, np.dtype(np.float32)))
        self.assertIsInstance(max_slices, int)
        self.assertIsInstance(outdtype, np.dtype)
        # The device rounds each slab of 9 slices (7200 bytes) to 7424: 8 fit.
        self.assertEqual(cuarray.plan.calc_max_slices("identity", slice_dim, other_dims, dtype, available_memory),
                         (8, np.dtype(np.float32)))

    def test_dtype_spellings(self):
        for dt in (np.float32, np.float32(), np.dtype("float32"), "float32", "f4", "<f4"):
            with self.subTest(dt=dt):
                self.assertEqual(cuarray.plan.calc_max_slices("identity", 0, (10, 20), dt, 14450, raw=True),
                                 (9, np.dtype("float32")))
        self.assertEqual(cuarray.plan.calc_max_slices("identity", np.int64(0), [np.int32(10), 20], np.float64, np.uint64(14450), raw=True),
                         (4, np.dtype("float64")), "NumPy integers; 14450 // 3200")


class CalcMaxSlices(unittest.TestCase):
    def test_every_method(self):
        names = cuarray.plan.methods()
        self.assertEqual(names, sorted(names))
        for m in ("identity", "kernels.scale", "kernels.transpose", "fbp.filter", "fbp.backproject", "fbp.reconstruct", "fbp.project"):
            self.assertIn(m, names)
        for name in names:
            for _ in range(5):
                other = (int(rng.integers(1, 400)), int(rng.integers(1, 400)))
                dt = rng.choice(["float32", "float64"])
                mem = int(rng.integers(0, 2**33))
                with self.subTest(method=name, other=other, dtype=dt, mem=mem):
                    dev, out = cuarray.plan.calc_max_slices(name, 0, other, dt, mem)
                    raw, rout = cuarray.plan.calc_max_slices(name, 0, other, dt, mem, raw=True)
                    self.assertGreaterEqual(dev, 0)
                    self.assertGreaterEqual(raw, dev, "rounding never fits more")
                    self.assertEqual(out, rout)
                    more, _ = cuarray.plan.calc_max_slices(name, 0, other, dt, 2 * mem)
                    self.assertGreaterEqual(more, dev, "more memory never fits fewer")
                    est = cuarray.plan.estimator(name, raw=True)
                    self.assertEqual(est(0, other, dt, mem), (raw, rout))

    def test_parameters(self):
        small, _ = cuarray.plan.calc_max_slices("fbp.backproject", 0, (180, 256), "float32", 2**28, size=64)
        big, _ = cuarray.plan.calc_max_slices("fbp.backproject", 0, (180, 256), "float32", 2**28, size=1024)
        self.assertGreater(small, big, "a larger image takes more memory")
        with self.assertRaisesRegex(ValueError, "unknown parameter"):
            cuarray.plan.calc_max_slices("fbp.backproject", 0, (180, 256), "float32", 2**28, bogus=1)
        with self.assertRaisesRegex(TypeError, "integer parameters"):
            cuarray.plan.calc_max_slices("fbp.backproject", 0, (180, 256), "float32", 2**28, size=64.5)

    def test_unknown_keyword(self):
        """A keyword the function and the method do not take, with a value that
        is no integer (a misspelt raw=True), is named with the keywords there are."""
        for call, want in [
            (lambda: cuarray.plan.calc_max_slices("fbp.backproject", 0, (180, 256), "float32", 2**28, rawx=True),
             "calc_max_slices: unknown keyword rawx=True: it takes raw, size (fbp.backproject's parameters: size)"),
            (lambda: cuarray.plan.calc_max_slices("identity", 0, (10, 20), "float32", 14450, rwa=True),
             "calc_max_slices: unknown keyword rwa=True: it takes raw (identity's parameters: none)"),
            (lambda: cuarray.plan.calc_max_slices("identity", 0, (10, 20), "float32", 14450, size=64.5),
             "calc_max_slices: unknown keyword size=64.5: it takes raw (identity's parameters: none)"),
            (lambda: cuarray.plan.explain("fbp.backproject", 0, (180, 256), "float32", 2**28, sise="512"),
             "explain: unknown keyword sise='512': it takes size (fbp.backproject's parameters: size)"),
            (lambda: cuarray.plan.estimator("fbp.filter")(0, (180, 256), "float32", 2**28, raww=True),
             "calc_max_slices: unknown keyword raww=True: it takes raw (fbp.filter's parameters: none)"),
        ]:
            with self.subTest(want):
                with self.assertRaises(TypeError) as cm:
                    call()
                self.assertEqual(str(cm.exception), want)

    def test_bad_input(self):
        calc = cuarray.plan.calc_max_slices
        for args, kwargs, exc, msg in [
            (("nope", 0, (10, 20), "float32", 1), {}, ValueError, "nope"),
            (("identity", 3, (10, 20), "float32", 1), {}, ValueError, "slice_dim"),
            (("identity", -1, (10, 20), "float32", 1), {}, ValueError, "slice_dim"),
            (("identity", 0, (10,), "float32", 1), {}, ValueError, "other_dims"),
            (("identity", 0, 10, "float32", 1), {}, TypeError, "other_dims"),
            (("identity", 0, (10, -20), "float32", 1), {}, ValueError, "other_dims"),
            (("identity", 0, (10, 20), "float32", -1), {}, ValueError, "available_memory"),
            (("identity", 0, (10, 20), "float32", 1.5), {}, TypeError, "available_memory"),
            (("identity", True, (10, 20), "float32", 1), {}, TypeError, "slice_dim"),
            (("identity", 0, (10, 20), "float7", 1), {}, ValueError, "float7"),
            (("fbp.filter", 1, (10, 20), "float32", 1), {}, ValueError, "axis 0"),
            (("fbp.filter", 0, (10, 20), "int16", 1), {}, ValueError, "dtype"),
            ((len, 0, (10, 20), "float32", 1), {}, TypeError, "method"),
        ]:
            with self.subTest(args=args):
                with self.assertRaisesRegex(exc, msg):
                    calc(*args, **kwargs)
        with self.assertRaisesRegex(ValueError, "knows"):
            cuarray.plan.estimator("nope")

    def test_null_pointers(self):
        lib = cuarray._lib
        cuarray.plan.methods()  # sets the argument types
        cuarray.testing.measure(SPEC).__enter__().__exit__()
        for name, call in [
            ("plan request", lambda: lib.cuarray_plan_max_slices(None, ctypes.byref(ctypes.c_void_p()))),
            ("plan out", lambda: lib.cuarray_plan_max_slices(b"{}", None)),
            ("methods out", lambda: lib.cuarray_plan_methods(None)),
            ("scope name", lambda: lib.cuarray_scope_push(cuarray.device(SPEC)._h, None, ctypes.byref(ctypes.c_uint64()))),
            ("scope out", lambda: lib.cuarray_scope_push(cuarray.device(SPEC)._h, b"x", None)),
            ("scope pop out", lambda: lib.cuarray_scope_pop(1, None)),
        ]:
            with self.subTest(name):
                err = call()
                self.assertTrue(err, "a NULL must be an error")
                msg = ctypes.string_at(err).decode()
                lib.cuarray_free_string(err)
                self.assertIn("NULL", msg)


class MemoryModel(unittest.TestCase):
    def test_dict_of_allocations(self):
        @cuarray.plan.memory_model(raw=True)
        def calc(slice_dim, other_dims, dtype, **kwargs):
            slab = other_dims[0] * other_dims[1] * dtype.itemsize
            return {"input": slab, "output": slab, "filter": (0, kwargs.get("taps", 0) * dtype.itemsize)}

        self.assertEqual(calc(0, (10, 20), np.float32, 14450), (9, np.dtype("float32")))
        self.assertEqual(calc(0, (10, 20), np.float32, 14450, taps=1024), (6, np.dtype("float32")), "(14450 - 4096) // 1600")
        self.assertEqual(calc.__name__, "calc")

        device = cuarray.plan.memory_model(calc.__wrapped__)
        self.assertEqual(device(0, (10, 20), np.float32, 14450), (8, np.dtype("float32")), "each slab rounded to 256 bytes")

    def test_pair_and_out_dtype(self):
        @cuarray.plan.memory_model(raw=True, out_dtype=np.float64)
        def widen(slice_dim, other_dims, dtype, **kwargs):
            return (other_dims[0] * other_dims[1] * (dtype.itemsize + 8), 100)

        self.assertEqual(widen(1, (10, 20), np.float32, 14450), (5, np.dtype("float64")), "(14450 - 100) // 2400")

        @cuarray.plan.memory_model(raw=True, out_dtype=lambda dt, **kw: np.dtype(kw.get("out", dt)))
        def same(slice_dim, other_dims, dtype, **kwargs):
            return (1, 0)

        self.assertEqual(same(0, (1, 1), "uint8", 10), (10, np.dtype("uint8")))
        self.assertEqual(same(0, (1, 1), "uint8", 10, out="int16"), (10, np.dtype("int16")))

    def test_bad_models(self):
        for result, exc in [([1, 2], TypeError), ((1, 2, 3), TypeError), ({"a": (1, 2, 3)}, TypeError),
                            ({"a": -1}, ValueError), ((1.5, 0), TypeError), ({"a": (1, -2)}, ValueError)]:
            with self.subTest(result=result):
                calc = cuarray.plan.memory_model(lambda *a, result=result, **k: result)
                with self.assertRaises(exc):
                    calc(0, (10, 20), np.float32, 14450)


# Methods written against cuarray's own arrays: a copy through a temporary,
# so the peak is input, temporary and output.
def copy_through_temporary(x, **kwargs):
    tmp = cuarray.empty(x.shape, x.dtype, device=SPEC)
    tmp.copy_(x)
    out = cuarray.empty(x.shape, x.dtype, device=SPEC)
    out.copy_(tmp)
    tmp.free()
    return out


def slabs(n):
    """An estimator that counts n slabs of the input's size per slice."""
    @cuarray.plan.memory_model
    def calc(slice_dim, other_dims, dtype, **kwargs):
        slab = other_dims[0] * other_dims[1] * dtype.itemsize
        return {"slab%d" % i: slab for i in range(n)}
    return calc


class CheckMaxSlices(unittest.TestCase):
    def current(self):
        return cuarray.device(SPEC).ledger()["memory"]["device"]["current"]

    def test_passes(self):
        before = self.current()
        for shape, sd, dt in [((40, 16, 32), 0, np.float32), ((16, 40, 32), 1, np.float64), ((16, 32, 40), 2, "uint8")]:
            with self.subTest(shape=shape, slice_dim=sd, dtype=dt):
                res = cuarray.testing.check_max_slices(copy_through_temporary, slabs(3), shape, sd, dt, device=SPEC)
                self.assertEqual(res.slices, 40)
                slab = 16 * 32 * np.dtype(dt).itemsize
                self.assertEqual(res.peak, 3 * 40 * slab, "input, temporary and output, each a multiple of 256 bytes")
                self.assertEqual(res.estimate, 40)
                self.assertEqual(res.ratio, 1.0)
                self.assertEqual(res.out_dtype, np.dtype(dt))
        self.assertEqual(self.current(), before, "the check frees what it made")

    def test_over_estimate_fails_with_the_numbers(self):
        with self.assertRaises(AssertionError) as cm:
            cuarray.testing.check_max_slices(copy_through_temporary, slabs(2), (40, 16, 32), 0, np.float32, device=SPEC)
        msg = str(cm.exception)
        self.assertIn("estimate 60 slices in 245760 bytes", msg)
        self.assertIn("actual 40 slices: estimate/actual = 1.500", msg)
        self.assertIn("over-estimates", msg)

    def test_under_estimate_fails_with_the_numbers(self):
        with self.assertRaises(AssertionError) as cm:
            cuarray.testing.check_max_slices(copy_through_temporary, slabs(5), (40, 16, 32), 0, np.float32, device=SPEC)
        msg = str(cm.exception)
        self.assertIn("estimate 24 slices in 245760 bytes", msg)
        self.assertIn("actual 40 slices: estimate/actual = 0.600", msg)
        self.assertIn("under-estimates", msg)
        # httomo's bounds are the defaults; a method may ask for others.
        res = cuarray.testing.check_max_slices(copy_through_temporary, slabs(5), (40, 16, 32), 0, np.float32,
                                               device=SPEC, min_ratio=0.5)
        self.assertEqual(res.estimate, 24)

    def test_builtin_estimator_and_kwargs(self):
        def identity(x, factor=1):
            self.assertEqual(factor, 3, "keywords reach the method")
            out = cuarray.empty(x.shape, x.dtype, device=SPEC)
            out.copy_(x)
            return out

        def est(slice_dim, other_dims, dtype, available_memory, factor=1):
            self.assertEqual(factor, 3, "and the estimator")
            return cuarray.plan.calc_max_slices("identity", slice_dim, other_dims, dtype, available_memory)

        res = cuarray.testing.check_max_slices(identity, est, (30, 7, 9), 0, np.float32, device=SPEC, factor=3)
        self.assertEqual(res.peak, 2 * 7680, "input and output of 30 × 7 × 9 × 4 = 7560 bytes, rounded to 256")
        self.assertEqual(res.estimate, 30, "the device estimate fits them exactly")

    def test_wrong_output_dtype(self):
        def widen(x):
            return cuarray.empty(x.shape, "float64", device=SPEC)

        with self.assertRaisesRegex(AssertionError, "output is float32, the method made float64"):
            cuarray.testing.check_max_slices(widen, slabs(1), (8, 16, 32), 0, np.float32, device=SPEC, max_ratio=9)

    def test_bad_arguments(self):
        for shape, sd, exc in [((4, 4), 0, ValueError), ((4, 4, 4), 3, ValueError), ((4, 4.0, 4), 0, TypeError)]:
            with self.subTest(shape=shape, slice_dim=sd):
                with self.assertRaises(exc):
                    cuarray.testing.check_max_slices(copy_through_temporary, slabs(3), shape, sd, np.float32, device=SPEC)

    def test_measure_nests(self):
        with cuarray.testing.measure(SPEC, "outer") as outer:
            a = cuarray.empty((1000,), "float32", device=SPEC)
            with cuarray.testing.measure(SPEC, "inner") as inner:
                b = cuarray.empty((1000,), "float64", device=SPEC)
                b.free()
            a.free()
        self.assertEqual(inner.peak, 8192)
        self.assertEqual(inner.allocs, 1)
        self.assertEqual(outer.peak, 4096 + 8192)
        self.assertEqual(outer.snapshot["name"], "outer")
        with self.assertRaisesRegex(RuntimeError, "not ended"):
            cuarray.testing.measure(SPEC).peak


class FakeCuPy:
    """The parts of CuPy that cuarray's CuPy allocator calls (see
    test_alloc.py), so that a "CuPy" method's allocations go through
    libcuarray's allocator entry points on sim, as CuPy's do on a GPU."""

    def __init__(self, device_id):
        class OutOfMemoryError(MemoryError):
            def __init__(self, size, total, limit=0):
                super().__init__(size, total, limit)

        class UnownedMemory:
            def __init__(self, ptr, size, owner, device_id=-1):
                self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id

        class MemoryPointer:
            def __init__(self, mem, offset):
                self.mem, self.ptr = mem, mem.ptr + offset

        import types
        self.cuda = types.SimpleNamespace(
            UnownedMemory=UnownedMemory, MemoryPointer=MemoryPointer,
            memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
            get_current_stream=lambda: types.SimpleNamespace(ptr=0),
            runtime=types.SimpleNamespace(getDevice=lambda: device_id))


class FakeCuPyArray:
    """An array whose memory comes from a CuPy allocator: dropping it frees it."""

    def __init__(self, alloc, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.nbytes = int(np.prod(shape)) * self.dtype.itemsize
        self.data = alloc(self.nbytes)


class CheckMaxSlicesThroughTheAllocator(unittest.TestCase):
    """check_max_slices reads the device's ledger, so the allocations of a
    CuPy method, made through cuarray's CuPy allocator, are in its peak."""

    def test_cupy_like_method(self):
        spec = "sim:41?mem=64MiB"
        dev = cuarray.device(spec)
        alloc = cuarray._alloc_module()._cupy_allocator(dev, False, None, FakeCuPy(41))

        def make_input(data):
            x = FakeCuPyArray(alloc, data.shape, data.dtype)
            ctypes.memmove(x.data.ptr, data.ctypes.data, x.nbytes)  # sim's device memory is host memory
            return x

        def method(x):
            tmp = FakeCuPyArray(alloc, x.shape, x.dtype)  # a temporary, dropped before returning
            out = FakeCuPyArray(alloc, x.shape, x.dtype)
            ctypes.memmove(tmp.data.ptr, x.data.ptr, x.nbytes)
            ctypes.memmove(out.data.ptr, tmp.data.ptr, x.nbytes)
            return out

        before = dev.ledger()["memory"]["device"]
        res = cuarray.testing.check_max_slices(method, slabs(3), (40, 16, 32), 0, np.float32, device=dev, make_input=make_input)
        self.assertEqual(res.peak, 3 * 40 * 16 * 32 * 4, "input, temporary and output, all through the allocator")
        self.assertEqual(res.estimate, 40)
        after = dev.ledger()["memory"]["device"]
        self.assertEqual(after["allocs"] - before["allocs"], 3, "one device allocation per CuPy malloc")
        self.assertEqual(after["current"], before["current"], "CuPy dropped them: freed through cuarray")
        with self.assertRaisesRegex(AssertionError, "estimate 60 slices in 245760 bytes"):
            cuarray.testing.check_max_slices(method, slabs(2), (40, 16, 32), 0, np.float32, device=dev, make_input=make_input)


if __name__ == "__main__":
    unittest.main()
