"""Hostile input to the C library and the Python module: every case must end
in a clean error, never a crash of the process. Each case that could crash
runs in a subprocess of its own, so that a crash fails that case instead of
killing the test run. Run by `go test ./python` (which builds the library),
or by hand: CUARRAY_LIB=build/libcuarray.so python3 -m unittest -v test_hostile
"""

import json
import os
import subprocess
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402

SPEC = os.environ.get("CUARRAY_DEVICE", "sim:0")
TIMEOUT = 60  # seconds; a hung case fails instead of hanging the run


def run_isolated(body):
    """Runs body (Python source, with cuarray, ctypes, lib and SPEC in scope)
    in a new process and returns its stdout; a crash or a hang is a failure."""
    src = "import ctypes, json, sys, threading, cuarray\nlib = cuarray._lib\nSPEC = %r\n" % SPEC
    src += textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env, timeout=TIMEOUT)
    if p.returncode != 0:
        raise AssertionError("the process ended with %d (a crash is a negative signal number):\n%s%s"
                             % (p.returncode, p.stdout, p.stderr))
    return p.stdout


def error_of(call):
    """Source for: the error message a C call returned, freed, or None."""
    return textwrap.dedent("""
        a = cuarray.zeros((4,), 'float32', SPEC)  # kept alive across the call
        dev = cuarray.device(SPEC)
        err = %s
        msg = None
        if err:
            msg = ctypes.string_at(err).decode()
            lib.cuarray_free_string(err)
        print(json.dumps(msg))
    """ % call)


class NullPointers(unittest.TestCase):
    """A NULL where the C ABI wants a pointer is an error message."""

    CASES = {
        "device out": "lib.cuarray_device(SPEC.encode(), None)",
        "empty out": "lib.cuarray_empty(dev._h, b'float32', 1, (ctypes.c_int64 * 1)(4), 0, None)",
        "view op": "lib.cuarray_view(a._h, None, ctypes.byref(ctypes.c_uint64()))",
        "view out": "lib.cuarray_view(a._h, b'T', None)",
        "to_host buffer": "lib.cuarray_to_host(a._h, None, 16)",
        "from_host buffer": "lib.cuarray_from_host(a._h, None, 16)",
        "info out": "lib.cuarray_info(a._h, None)",
        "describe out": "lib.cuarray_describe(a._h, None)",
        "interface out": "lib.cuarray_interface(a._h, 0, 1, None)",
        "import json": "lib.cuarray_import_interface(dev._h, None, ctypes.byref(ctypes.c_uint64()))",
        "import out": "lib.cuarray_import_interface(dev._h, b'{}', None)",
        "from_dlpack tensor": "lib.cuarray_from_dlpack(dev._h, None, 1, ctypes.byref(ctypes.c_uint64()))",
        "to_dlpack out": "lib.cuarray_to_dlpack(a._h, 1, 0, None)",
        "ledger out": "lib.cuarray_ledger(dev._h, None)",
        "array_device out": "lib.cuarray_array_device(a._h, None)",
        "ipc_export out": "lib.cuarray_ipc_export(a._h, None)",
        "ipc_open descriptor": "lib.cuarray_ipc_open(dev._h, None, ctypes.byref(ctypes.c_uint64()))",
        "stream_new out": "lib.cuarray_stream_new(dev._h, None, ctypes.byref(ctypes.c_size_t()))",
        "stream_new handle": "lib.cuarray_stream_new(dev._h, ctypes.byref(ctypes.c_uint64()), None)",
    }

    def test_null_pointers(self):
        for name, call in self.CASES.items():
            with self.subTest(name):
                msg = json.loads(run_isolated(error_of(call)))
                self.assertIsNotNone(msg, "a NULL must be an error")
                self.assertTrue("NULL" in msg or "null" in msg.lower(), msg)

    def test_dlpack_delete_of_null(self):
        self.assertEqual(run_isolated("lib.cuarray_dlpack_delete(None, 1); lib.cuarray_dlpack_delete(None, 0); print('ok')"),
                         "ok\n")


class Handles(unittest.TestCase):
    def test_stale_and_foreign_handles(self):
        out = run_isolated("""
            a = cuarray.zeros((4,), 'float32', SPEC)
            h = a._h
            msgs = []
            for call in ["lib.cuarray_release(h)", "lib.cuarray_release(h)", "lib.cuarray_alive(h)",
                         "lib.cuarray_release(0)", "lib.cuarray_release(2**64 - 1)", "lib.cuarray_copy(h, h)"]:
                err = eval(call)
                msgs.append(ctypes.string_at(err).decode() if err else None)
                if err:
                    lib.cuarray_free_string(err)
            a._h = 0
            print(json.dumps(msgs))
        """)
        msgs = json.loads(out)
        self.assertIsNone(msgs[0], "the first release works")
        for m in msgs[1:]:
            self.assertIsNotNone(m)
            self.assertIn("not a live handle", m)

    def test_release_from_many_threads_at_once(self):
        out = run_isolated("""
            results = []
            for round in range(20):
                a = cuarray.zeros((64,), 'float32', SPEC)
                h, a._h = a._h, 0
                start = threading.Barrier(8)
                errs = []
                def release():
                    start.wait()
                    err = lib.cuarray_release(h)
                    errs.append(err)
                ts = [threading.Thread(target=release) for _ in range(8)]
                for t in ts: t.start()
                for t in ts: t.join()
                results.append(sum(1 for e in errs if not e))
                for e in errs:
                    if e:
                        lib.cuarray_free_string(e)
            led = cuarray.device(SPEC).ledger()
            print(json.dumps({"released_once": results, "device_bytes": led["memory"]["device"]["current"]}))
        """)
        got = json.loads(out)
        self.assertEqual(got["released_once"], [1] * 20, "each handle is released exactly once")
        self.assertEqual(got["device_bytes"], 0)


class Imports(unittest.TestCase):
    def test_interface_claiming_more_than_its_allocation(self):
        out = run_isolated("""
            a = cuarray.zeros((16,), 'float32', SPEC)
            d = dict(a.__array_interface__ if SPEC.startswith('sim') else a.__cuda_array_interface__)
            dev = cuarray.device(SPEC)
            results = {}
            # sim and the driver round allocations up to 256 bytes: 64 floats fit, 65 do not
            for name, shape, strides in [("1 GiB", [1 << 28], None), ("past the end", [65], None),
                                         ("stride past the end", [2], [1024]), ("inside", [64], None)]:
                d2 = {"data": [d["data"][0], False], "shape": shape, "typestr": "<f4", "version": 3}
                if strides:
                    d2["strides"] = strides
                out = ctypes.c_uint64()
                err = lib.cuarray_import_interface(dev._h, json.dumps(d2).encode(), ctypes.byref(out))
                results[name] = ctypes.string_at(err).decode() if err else None
                if err:
                    lib.cuarray_free_string(err)
                else:
                    lib.cuarray_release(out.value)
            print(json.dumps(results))
        """)
        got = json.loads(out)
        self.assertIsNone(got["inside"], "the array's own extent imports")
        for name in ["1 GiB", "past the end", "stride past the end"]:
            self.assertIsNotNone(got[name], name)
            self.assertIn("not inside one live allocation", got[name], name)


class ModuleValidates(unittest.TestCase):
    """The Python module checks its arguments before it calls the library."""

    def test_shapes(self):
        import numpy as np
        for bad, err in [((2.5,), TypeError), (("3",), TypeError), ((True,), TypeError), ("4", TypeError),
                         ((2**63,), OverflowError), ((2**64 + 3,), OverflowError), ((-1,), ValueError),
                         ((1,) * 65, ValueError), (None, TypeError)]:
            with self.subTest(bad=bad):
                with self.assertRaises(err):
                    cuarray.empty(bad, "float32", SPEC)
        self.assertEqual(cuarray.empty((np.int64(3), np.uint8(4)), "float32", SPEC).shape, (3, 4))
        self.assertEqual(cuarray.empty(np.int32(5), "float32", SPEC).shape, (5,))

    def test_zero_d(self):
        import numpy as np
        a = cuarray.zeros((), "float64", SPEC)
        self.assertEqual((a.shape, a.size, a.nbytes), ((), 1, 8))
        a.copy_from(np.array(-3.25))
        self.assertEqual(np.frombuffer(a.to_bytes(), "float64")[0], -3.25)

    def test_dtypes(self):
        import numpy as np
        for dt in ["float32", np.float32, np.dtype("f4"), np.dtype("float32")]:
            with self.subTest(dtype=dt):
                self.assertEqual(cuarray.empty((2,), dt, SPEC).dtype, "float32")
        self.assertEqual(cuarray.empty((2,), float, SPEC).dtype, "float64")
        for bad in [object(), 3, "nonsense"]:
            with self.subTest(bad=bad):
                with self.assertRaises((TypeError, ValueError)):
                    cuarray.empty((2,), bad, SPEC)

    def test_indices(self):
        import numpy as np
        a = cuarray.zeros((3, 4), "float32", SPEC)
        self.assertEqual(a[np.int64(1)].shape, (4,))
        for bad in [1.0, "1", True, 2**70]:
            with self.subTest(bad=bad):
                with self.assertRaises((TypeError, IndexError, OverflowError)):
                    a[bad]
        with self.assertRaises(TypeError):
            a.reshape(2.0, 6)

    def test_copy_from_checks_what_it_copies(self):
        import numpy as np
        a = cuarray.zeros((3, 4), "float32", SPEC)
        with self.assertRaises(TypeError, msg="float64 into float32 is not reinterpreted"):
            a.copy_from(np.zeros((3, 4)))
        with self.assertRaises(ValueError):
            a.copy_from(np.zeros((2, 4), np.float32))
        with self.assertRaises(ValueError):
            a.copy_from(b"\0" * 47)
        want = np.random.default_rng().standard_normal((4, 3)).astype(np.float32)
        a.copy_from(want.T)  # any layout of the right dtype and size
        np.testing.assert_array_equal(np.frombuffer(a.to_bytes(), "float32").reshape(3, 4), want.T)

    def test_missing_library(self):
        env = dict(os.environ, CUARRAY_LIB="/nonexistent/libcuarray.so",
                   PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
        p = subprocess.run([sys.executable, "-c", "import cuarray"], capture_output=True, text=True, env=env,
                           timeout=TIMEOUT)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("ImportError", p.stderr)
        self.assertIn("/nonexistent/libcuarray.so", p.stderr, "it says where it looked")
        self.assertIn("make libcuarray", p.stderr, "and how to build it")


if __name__ == "__main__":
    unittest.main()
