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


def run_isolated(body, prelude=""):
    """Runs body (Python source, with cuarray, ctypes, lib and SPEC in scope,
    after prelude) in a new process and returns its stdout; a crash or a hang
    is a failure."""
    src = "import ctypes, json, sys, threading, cuarray\nlib = cuarray._lib\nSPEC = %r\n" % SPEC
    src += textwrap.dedent(prelude) + textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env, timeout=TIMEOUT)
    if p.returncode != 0:
        # a Go crash says what and where first, then dumps every goroutine
        raise AssertionError("the process ended with %d (a crash is a negative signal number):\n%s%s"
                             % (p.returncode, p.stdout[-2000:], p.stderr[:4000]))
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
        "ledger_report out": "lib.cuarray_ledger_report(dev._h, None)",
        "device_info out": "lib.cuarray_device_info(dev._h, None)",
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
            dev = cuarray.device(SPEC)
            results = {}
            # sim and the driver round allocations up to 256 bytes: 64 floats fit, 65 do not
            for name, shape, strides in [("1 GiB", [1 << 28], None), ("past the end", [65], None),
                                         ("stride past the end", [2], [1024]), ("inside", [64], None)]:
                d2 = {"data": [a.ptr, False], "shape": shape, "typestr": "<f4", "version": 3}
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


# DLPack's structs (dlpack.h), for tensors built by hand: the deleter is
# NULL, so nothing is freed when the library lets go of them.
DLPACK_STRUCTS = """
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]
class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]
class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]
class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

def tensor(data, n, dl_device, readonly=False):
    shape = (ctypes.c_int64 * 1)(n)
    t = DLManagedTensorVersioned(1, 1, None, None, 1 if readonly else 0,
                                 DLTensor(data, DLDevice(*dl_device), 1, DLDataType(2, 32, 1), shape, None, 0))
    t._keep = shape
    return t

def import_tensor(dev_handle, t):
    out = ctypes.c_uint64()
    err = lib.cuarray_from_dlpack(dev_handle, ctypes.byref(t), 1, ctypes.byref(out))
    if err:
        msg = ctypes.string_at(err).decode()
        lib.cuarray_free_string(err)
        return msg
    lib.cuarray_release(out.value)
    return None

def import_interface(dev_handle, ptr, shape, readonly=False, strides=None):
    d = {"data": [ptr, readonly], "shape": shape, "typestr": "<f4", "version": 3}
    if strides:
        d["strides"] = strides
    out = ctypes.c_uint64()
    err = lib.cuarray_import_interface(dev_handle, json.dumps(d).encode(), ctypes.byref(out))
    if err:
        msg = ctypes.string_at(err).decode()
        lib.cuarray_free_string(err)
        return msg
    lib.cuarray_release(out.value)
    return None

# Three pages of host memory whose first and last are inaccessible: the
# middle one, at mid, is the only allocation there is around it.
import mmap
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
PAGE = mmap.PAGESIZE
base = libc.mmap(None, 3 * PAGE, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
assert base not in (None, ctypes.c_void_p(-1).value)
assert libc.mprotect(base, PAGE, 0) == 0 and libc.mprotect(base + 2 * PAGE, PAGE, 0) == 0
mid = base + PAGE
"""


class ImportsOfHostMemory(unittest.TestCase):
    """An import of host memory with no device (NumPy's __array_interface__,
    a CPU DLPack tensor) must lie in memory the process has mapped, readable
    (and writable unless read-only): a descriptor of unmapped memory, or one
    reaching past its mapping, is refused instead of crashing the process on
    the first copy."""

    def test_interface_of_unmapped_or_guarded_memory(self):
        out = run_isolated(prelude=DLPACK_STRUCTS, body="""
            results = {
                "page 1": import_interface(0, 4096, [4]),
                "inside": import_interface(0, mid, [PAGE // 4]),
                "into the guard page": import_interface(0, mid, [PAGE // 4 + 1]),
                "from the guard page": import_interface(0, base, [4], readonly=True),
                "backwards into the guard page": import_interface(0, mid + 4, [2], strides=[-8]),
                "1 GiB": import_interface(0, mid, [1 << 28]),
            }
            print(json.dumps(results))
        """)
        got = json.loads(out)
        self.assertIsNone(got.pop("inside"), "the middle page imports")
        for name, msg in got.items():
            self.assertIsNotNone(msg, name + " must be refused")
            self.assertIn("not inside", msg, name)

    def test_interface_of_read_only_memory(self):
        out = run_isolated(prelude=DLPACK_STRUCTS, body="""
            libc.mprotect(mid, PAGE, mmap.PROT_READ)
            results = {"writable claim": import_interface(0, mid, [4]),
                       "read-only claim": import_interface(0, mid, [4], readonly=True),
                       "writable tensor": import_tensor(0, tensor(mid, 4, (1, 0))),
                       "read-only tensor": import_tensor(0, tensor(mid, 4, (1, 0), readonly=True))}
            # and a copy out through an accepted import works
            out = ctypes.c_uint64()
            d = {"data": [mid, True], "shape": [4], "typestr": "<f4", "version": 3}
            assert not lib.cuarray_import_interface(0, json.dumps(d).encode(), ctypes.byref(out))
            buf = ctypes.create_string_buffer(16)
            err = lib.cuarray_to_host(out.value, buf, 16)
            results["copy out"] = ctypes.string_at(err).decode() if err else None
            lib.cuarray_release(out.value)
            print(json.dumps(results))
        """)
        got = json.loads(out)
        for ok in ["read-only claim", "read-only tensor", "copy out"]:
            self.assertIsNone(got[ok], ok)
        for bad in ["writable claim", "writable tensor"]:
            self.assertIsNotNone(got[bad], "a writable import of a read-only page is refused")
            self.assertIn("not inside host memory this process has mapped readable and writable", got[bad])

    def test_memory_made_inaccessible_after_it_was_seen(self):
        """The library reads the process's mappings again only when an import
        does not fit what it read before, so a page made read-only or
        inaccessible since is not seen at the import: the copy that then
        faults is an error, not a crash."""
        out = run_isolated(prelude=DLPACK_STRUCTS, body="""
            assert import_interface(0, mid, [4]) is None  # the library has seen the page writable
            out = ctypes.c_uint64()
            d = {"data": [mid, False], "shape": [4], "typestr": "<f4", "version": 3}
            assert not lib.cuarray_import_interface(0, json.dumps(d).encode(), ctypes.byref(out))
            buf = ctypes.create_string_buffer(16)
            results = {}
            libc.mprotect(mid, PAGE, mmap.PROT_READ)
            err = lib.cuarray_from_host(out.value, buf, 16)
            results["write into a read-only page"] = ctypes.string_at(err).decode() if err else None
            libc.mprotect(mid, PAGE, 0)
            err = lib.cuarray_to_host(out.value, buf, 16)
            results["read from an inaccessible page"] = ctypes.string_at(err).decode() if err else None
            lib.cuarray_release(out.value)
            print(json.dumps(results))
        """)
        for name, msg in json.loads(out).items():
            self.assertIsNotNone(msg, name)
            self.assertIn("fault", msg, name)

    def test_dlpack_of_unmapped_or_guarded_memory(self):
        out = run_isolated(prelude=DLPACK_STRUCTS, body="""
            results = {
                "page 1": import_tensor(0, tensor(4096, 4, (1, 0))),
                "inside": import_tensor(0, tensor(mid, PAGE // 4, (1, 0))),
                "into the guard page": import_tensor(0, tensor(mid, PAGE // 4 + 1, (1, 0))),
                "1 GiB": import_tensor(0, tensor(mid, 1 << 28, (1, 0))),
            }
            print(json.dumps(results))
        """)
        got = json.loads(out)
        self.assertIsNone(got.pop("inside"), "the middle page imports")
        for name, msg in got.items():
            self.assertIsNotNone(msg, name + " must be refused")
            self.assertIn("not inside", msg, name)

    def test_numpy_imports_still_work(self):
        import numpy as np
        for x in [np.arange(12, dtype=np.float32).reshape(3, 4), np.arange(10.0)[::-3], np.zeros((0, 5)),
                  np.array(2.5), np.float64(-1.5), np.arange(6, dtype=np.int16).reshape(2, 3).T]:
            with self.subTest(shape=x.shape, strides=x.strides):
                a = cuarray.asarray(x)
                self.assertEqual(a.shape, np.shape(x))
                np.testing.assert_array_equal(np.frombuffer(a.to_bytes(), x.dtype).reshape(np.shape(x)), x)
                if isinstance(x, np.ndarray):  # NumPy scalars have no __dlpack__
                    b = cuarray.from_dlpack(x)
                    self.assertEqual(b.shape, x.shape)


class ImportsOfDeviceMemory(unittest.TestCase):
    def test_dlpack_claiming_more_than_its_allocation(self):
        out = run_isolated(prelude=DLPACK_STRUCTS, body="""
            a = cuarray.zeros((16,), 'float32', SPEC)
            dev = cuarray.device(SPEC)
            dl = a.__dlpack_device__()
            results = {"inside": import_tensor(dev._h, tensor(a.ptr, 64, dl)),
                       "past the end": import_tensor(dev._h, tensor(a.ptr, 65, dl)),
                       "1 GiB": import_tensor(dev._h, tensor(a.ptr, 1 << 28, dl)),
                       "no allocation": import_tensor(dev._h, tensor(4096, 4, dl))}
            a.free()
            results["freed"] = import_tensor(dev._h, tensor(a.ptr, 4, dl))
            print(json.dumps(results))
        """)
        got = json.loads(out)
        self.assertIsNone(got.pop("inside"), "the array's own allocation imports")
        for name, msg in got.items():
            self.assertIsNotNone(msg, name + " must be refused")
            self.assertIn("not inside", msg, name)

    def test_interface_of_a_freed_allocation(self):
        out = run_isolated(prelude=DLPACK_STRUCTS, body="""
            a = cuarray.zeros((16,), 'float32', SPEC)
            dev = cuarray.device(SPEC)
            ptr = a.ptr
            a.free()
            print(json.dumps(import_interface(dev._h, ptr, [4])))
        """)
        msg = json.loads(out)
        self.assertIsNotNone(msg, "a freed allocation is no allocation")
        self.assertIn("not inside", msg)


class Strings(unittest.TestCase):
    def test_null_strings(self):
        for name, call in {
            "device spec": "lib.cuarray_device(None, ctypes.byref(ctypes.c_uint64()))",
            "empty dtype": "lib.cuarray_empty(dev._h, None, 1, (ctypes.c_int64 * 1)(4), 0, ctypes.byref(ctypes.c_uint64()))",
        }.items():
            with self.subTest(name):
                msg = json.loads(run_isolated(error_of(call)))
                self.assertIsNotNone(msg, "a NULL string must be an error")
                self.assertIn("NULL", msg)


class Concurrency(unittest.TestCase):
    def test_every_handle_operation_from_many_threads(self):
        """Eight threads call every entry point on one shared set of handles,
        releasing them as they go: each call is a result or an error, the
        process lives, and once all is released the ledger is back to zero.
        Device copies take arrays, not their transposed views: a strided
        copy runs inside devarray.Use, which deadlocks against a release of
        the same array on another thread (devarray's to fix, reported with
        the hostile-input audit; libcuarray's TestConcurrentHandleOperations/strided runs
        that case once it is fixed)."""
        out = run_isolated("""
            import random
            dev = cuarray.device(SPEC)
            u64 = ctypes.c_uint64
            def new():
                return cuarray.zeros((32, 32), 'float32', dev)
            keep = [new() for _ in range(8)]
            arrays = [a._h for a in keep]  # the arrays
            handles = list(arrays)         # the arrays and their views
            for a in keep:
                a._h = 0  # the threads own them now
            lock = threading.Lock()
            streams = [dev.stream() for _ in range(2)]
            msgs = set()
            def call(err):
                if err:
                    m = ctypes.string_at(err).decode()
                    lib.cuarray_free_string(err)
                    with lock:
                        msgs.add(m.split(':')[0])
            def worker(seed):
                r = random.Random(seed)
                buf = ctypes.create_string_buffer(32 * 32 * 4)
                for _ in range(300):
                    h = r.choice(handles)
                    a, b = r.choice(arrays), r.choice(arrays)
                    op = r.randrange(12)
                    if op == 0:
                        call(lib.cuarray_release(h))
                    elif op == 1:
                        out = u64()
                        err = lib.cuarray_view(h, b'{"op":"transpose"}', ctypes.byref(out))
                        call(err)
                        if not err:
                            with lock:
                                handles.append(out.value)
                    elif op == 2:
                        call(lib.cuarray_copy(a, b))
                    elif op == 3:
                        call(lib.cuarray_to_host(h, buf, len(buf)))
                    elif op == 4:
                        call(lib.cuarray_from_host(h, buf, len(buf)))
                    elif op == 5:
                        call(lib.cuarray_copy_async(a, b, r.choice(streams).ptr))
                    elif op == 6:
                        p = ctypes.c_void_p()
                        err = lib.cuarray_export_dlpack(a, 1, r.randrange(4) == 0, r.choice([-1, 0, streams[0].ptr]),
                                                        ctypes.byref(p))
                        call(err)
                        if not err:
                            lib.cuarray_dlpack_delete(p, 1)
                    elif op == 7:
                        d = cuarray._Desc()
                        call(lib.cuarray_describe(h, ctypes.byref(d)))
                    elif op == 8:
                        s = ctypes.c_void_p()
                        err = lib.cuarray_interface(h, 0, r.randrange(2), ctypes.byref(s))
                        call(err)
                        if not err:
                            lib.cuarray_free_string(s)
                    elif op == 9:
                        call(lib.cuarray_export_wait(h, r.choice([-1, 0, streams[1].ptr])))
                    elif op == 10:
                        call(lib.cuarray_stream_synchronize(r.choice(streams)._h))
                    else:
                        with lock:
                            if len(handles) < 64:
                                x = new()
                                handles.append(x._h)
                                arrays.append(x._h)
                                x._h = 0
            ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
            for t in ts: t.start()
            for t in ts: t.join()
            for s in streams:
                s.close()
            for h in reversed(handles):
                err = lib.cuarray_release(h)
                if err:
                    lib.cuarray_free_string(err)
            led = dev.ledger()
            print(json.dumps({"device_bytes": led["memory"]["device"]["current"], "errors": sorted(msgs)}))
        """)
        got = json.loads(out)
        self.assertEqual(got["device_bytes"], 0, "everything released: %s" % got)

    def test_dlpack_while_other_threads_free(self):
        """Threads make DLPack capsules of shared arrays and their views (in C,
        from descriptions they keep) while other threads free the arrays and
        allocate new ones, which may be handed the freed arrays' keeps: each
        capsule is made or refused with BufferError, the process lives, and
        once every capsule is gone the ledger is back where it started."""
        out = run_isolated("""
            import gc, random
            dev = cuarray.device(SPEC)
            start = dev.ledger()["memory"]["device"]["current"]
            arrays = [cuarray.empty((16, 16), 'float32', dev) for _ in range(16)]
            shared = arrays + [a.T for a in arrays]
            lock = threading.Lock()
            made, refused = [0], [0]
            def export(seed):
                r = random.Random(seed)
                caps = []
                for _ in range(2000):
                    try:
                        caps.append(r.choice(shared).__dlpack__(max_version=(1, 0)))
                        with lock:
                            made[0] += 1
                    except BufferError:
                        with lock:
                            refused[0] += 1
                    if len(caps) > 32 or r.random() < 0.3:
                        caps.clear()
            def free(seed):
                r = random.Random(seed)
                for a in r.sample(arrays, len(arrays)):
                    try:
                        a.free()
                    except cuarray.CuarrayError:
                        pass  # the other freeing thread released it first
                    cuarray.empty((16, 16), 'float32', dev).free()  # may take a freed keep
            ts = [threading.Thread(target=export, args=(i,)) for i in range(6)]
            ts += [threading.Thread(target=free, args=(i,)) for i in range(2)]
            for t in ts: t.start()
            for t in ts: t.join()
            del shared, arrays
            gc.collect()
            print(json.dumps({"made": made[0], "refused": refused[0],
                              "leaked": dev.ledger()["memory"]["device"]["current"] - start}))
        """)
        got = json.loads(out)
        self.assertEqual(got["made"] + got["refused"], 6 * 2000, got)
        self.assertGreater(got["made"], 0, got)
        self.assertEqual(got["leaked"], 0, "every array's memory went back: %s" % got)

    def test_stream_release_from_many_threads(self):
        out = run_isolated("""
            dev = cuarray.device(SPEC)
            released = []
            for round in range(10):
                s = dev.stream()
                h, s._h = s._h, 0
                start = threading.Barrier(8)
                errs = []
                def go(i):
                    start.wait()
                    f = lib.cuarray_stream_release if i % 2 else lib.cuarray_stream_synchronize
                    errs.append((i % 2, f(h)))
                ts = [threading.Thread(target=go, args=(i,)) for i in range(8)]
                for t in ts: t.start()
                for t in ts: t.join()
                released.append(sum(1 for rel, e in errs if rel and not e))
                for _, e in errs:
                    if e:
                        lib.cuarray_free_string(e)
            print(json.dumps(released))
        """)
        self.assertEqual(json.loads(out), [1] * 10, "each stream is released exactly once")


class DLPackCapsules(unittest.TestCase):
    def test_capsule_name_protocol_and_foreign_deleters(self):
        """A consumer that renamed a capsule ("used_dltensor...") owns its
        tensor: destroying the capsule then deletes nothing, and the freed
        array's memory stays counted until the consumer calls the deleter,
        from a thread of its own without the GIL. An unconsumed capsule's
        destructor deletes its tensor. Capsules still alive when the
        interpreter finalizes are deleted then without a crash."""
        out = run_isolated("""
            import array, gc, random
            api = ctypes.pythonapi
            api.PyCapsule_IsValid.restype = ctypes.c_int
            api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
            api.PyCapsule_GetPointer.restype = ctypes.c_void_p
            api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
            api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
            dev = cuarray.device(SPEC)
            def current():
                return dev.ledger()["memory"]["device"]["current"]  # also lets go of what was drained
            def filled():
                n = random.randint(1, 64)
                a = cuarray.empty((n, 3), 'float32', dev)
                a.copy_from(array.array('f', [1 + random.random() for _ in range(3 * n)]))
                return a
            start = current()
            got = {}
            # The deleter's offset: after version and manager_ctx, or after the DLTensor.
            for versioned, name, off in ((True, b"dltensor_versioned", 16), (False, b"dltensor", 56)):
                for consumed in (True, False):
                    a = filled()
                    allocated = current()
                    cap = a.__dlpack__(max_version=(1, 0)) if versioned else a.__dlpack__()
                    assert api.PyCapsule_IsValid(cap, name), name
                    p = api.PyCapsule_GetPointer(cap, name)
                    if consumed:
                        api.PyCapsule_SetName(cap, b"used_" + name)
                    a.free()
                    del cap
                    gc.collect()
                    kept = current()
                    if consumed:
                        deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(ctypes.c_void_p.from_address(p + off).value)
                        t = threading.Thread(target=deleter, args=(p,))  # a ctypes call drops the GIL
                        t.start()
                        t.join()
                    got["%s/consumed=%s" % (name.decode(), consumed)] = [kept - allocated, current() - start]
            # Left for the interpreter's finalization: capsules of live and freed arrays.
            live = filled()
            dead = filled()
            caps = [live.__dlpack__(max_version=(1, 0)), dead.__dlpack__(), dead.T.__dlpack__(max_version=(1, 0))]
            dead.free()
            print(json.dumps(got))
        """)
        got = json.loads(out)
        self.assertEqual(len(got), 4, got)
        for case, (kept, leaked) in got.items():
            if case.endswith("consumed=True"):
                self.assertEqual(kept, 0, "%s: the destructor left the consumer's tensor alone, and it kept the memory" % case)
            else:
                self.assertLess(kept, 0, "%s: the destructor deleted the tensor, and the memory went" % case)
            self.assertEqual(leaked, 0, "%s: the ledger is back where it started" % case)


    def test_capsule_that_cannot_be_made_deletes_its_tensor(self):
        """When the capsule of a tensor the library exported cannot be made
        (PyCapsule_New raises, as it does out of memory), __dlpack__ raises
        and the tensor is deleted: a copy (copy=True) goes back to the
        device, and a freed array's memory is not kept for a tensor nobody
        holds."""
        out = run_isolated("""
            import array, gc, random
            dev = cuarray.device(SPEC)
            def current():
                return dev.ledger()["memory"]["device"]["current"]
            real = cuarray._api.PyCapsule_New
            def failing(*args):
                raise MemoryError("PyCapsule_New")
            start = current()
            got = {}
            for versioned in (True, False):
                for copy in (True, None):
                    n = random.randint(1, 64)
                    a = cuarray.empty((n, 2), 'float32', dev)
                    a.copy_from(array.array('f', [1 + random.random() for _ in range(2 * n)]))
                    capsule = cuarray._capsule
                    cuarray._capsule = None  # the export through the library, as with work pending
                    cuarray._api.PyCapsule_New = failing
                    try:
                        a.__dlpack__(max_version=(1, 0) if versioned else None, copy=copy)
                        raised = False
                    except MemoryError:
                        raised = True
                    finally:
                        cuarray._api.PyCapsule_New = real
                        cuarray._capsule = capsule
                    a.free()
                    gc.collect()
                    got["versioned=%s/copy=%s" % (versioned, copy)] = [raised, current() - start]
            print(json.dumps(got))
        """)
        got = json.loads(out)
        self.assertEqual(len(got), 4, got)
        for case, (raised, leaked) in got.items():
            self.assertTrue(raised, "%s: __dlpack__ raised the capsule's MemoryError" % case)
            self.assertEqual(leaked, 0, "%s: the tensor was deleted and its memory went back" % case)

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

    def test_dtype_spellings(self):
        import numpy as np
        for dt in ["f4", "<f4", "=f4", np.dtype("<f4"), "single"]:
            with self.subTest(dtype=dt):
                self.assertEqual(cuarray.empty((2,), dt, SPEC).dtype, "float32")
        self.assertEqual(cuarray.empty((2,), "bfloat16", SPEC).dtype, "bfloat16")
        self.assertEqual(cuarray.empty((2,), np.bool_, SPEC).dtype, "bool")
        self.assertEqual(cuarray.empty((2,), ">u1", SPEC).dtype, "uint8", "one byte has no byte order")
        for bad in [">f4", np.dtype(">i8"), "f4,i4", np.dtype([("a", "f4")]), "U4", object, "float17"]:
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError, msg="a dtype cuarray does not support"):
                    cuarray.empty((2,), bad, SPEC)
        for bad in [True, None, 3.5, object()]:
            with self.subTest(bad=bad):
                with self.assertRaises(TypeError, msg="no dtype at all"):
                    cuarray.empty((2,), bad, SPEC)

    def test_copy_from_never_reinterprets(self):
        import array
        import numpy as np
        a = cuarray.zeros((4,), "float32", SPEC)
        for bad, err in [(np.arange(4, dtype=">f4"), TypeError),             # big-endian float32
                         (array.array("d", [1, 2]), TypeError),               # 16 bytes of float64
                         (memoryview(np.zeros(4, np.int32)), TypeError),      # 16 bytes of int32
                         ([1.0, 2.0, 3.0], ValueError),                       # Python numbers convert, but 3 are not 4
                         (["a", "b", "c", "d"], ValueError),                  # strings are no numbers
                         (np.zeros(5, np.float32), ValueError),
                         (np.float32(1), ValueError),                         # a scalar: one element
                         ("abcd" * 4, TypeError), (None, TypeError), (object(), TypeError), ({1, 2}, TypeError)]:
            with self.subTest(bad=type(bad).__name__):
                with self.assertRaises(err):
                    a.copy_from(bad)
        a.copy_from([1.5, 2.5, 3.5, 4.5])  # Python numbers convert to float32 as numpy.asarray would
        self.assertEqual(np.frombuffer(a.to_bytes(), "float32").tolist(), [1.5, 2.5, 3.5, 4.5])
        a.copy_from(array.array("f", [1, 2, 3, 4]))
        self.assertEqual(np.frombuffer(a.to_bytes(), "float32").tolist(), [1, 2, 3, 4])
        a.copy_from(np.arange(8, dtype=np.float32)[::2])
        self.assertEqual(np.frombuffer(a.to_bytes(), "float32").tolist(), [0, 2, 4, 6])
        a.copy_from(bytearray(np.full(4, 7, np.float32).tobytes()))
        self.assertEqual(np.frombuffer(a.to_bytes(), "float32").tolist(), [7] * 4)
        a.copy_from(memoryview(np.full(8, 5, np.float32).tobytes())[::2 * 4][:0].tobytes() + np.full(4, 5, np.float32).tobytes())
        b = cuarray.zeros((2, 2), "int64", SPEC)
        b.copy_from([[1, 2], [3, 4]])
        self.assertEqual(np.frombuffer(b.to_bytes(), "int64").tolist(), [1, 2, 3, 4])
        s = cuarray.zeros((), "float32", SPEC)
        s.copy_from(np.float32(2.5))
        self.assertEqual(np.frombuffer(s.to_bytes(), "float32").tolist(), [2.5])

    def test_streams_and_devices(self):
        a = cuarray.zeros((4,), "float32", SPEC)
        b = cuarray.zeros((4,), "float32", SPEC)
        for bad, err in [(2**64, OverflowError), (2**64 + 1, OverflowError), (-5, TypeError), (0, TypeError),
                         (1.0, TypeError), ("1", TypeError), (True, TypeError), (None, TypeError)]:
            with self.subTest(stream=bad):
                with self.assertRaises(err):
                    a.copy_async(b, bad)
        for bad, err in [(2**64 - 1, OverflowError), (2**63, OverflowError), (1.5, TypeError), (True, TypeError)]:
            with self.subTest(dlpack_stream=bad):
                with self.assertRaises(err):
                    a.__dlpack__(stream=bad)
        with self.assertRaises(TypeError):
            a.copy_(b"not an array")
        for bad, err in [(0, TypeError), (None, TypeError), (b"sim:0", TypeError), ("sim:0\0junk", ValueError)]:
            with self.subTest(device=bad):
                with self.assertRaises(err):
                    cuarray.device(bad)
        with self.assertRaises(TypeError):
            cuarray.empty((2,), "float32", 0)

    def test_ipc_open_of_garbage(self):
        for bad, err in [("", ValueError), ("{", ValueError), ("[]", ValueError), ('{"backend": 1}', ValueError),
                         ('{"backend": "sim", "device": true}', ValueError), (None, TypeError), (42, TypeError),
                         ('{"backend": "sim", "device": 0, "handle": "00"}', cuarray.CuarrayError),
                         ('{"backend": "sim", "device": 0}\0', ValueError)]:
            with self.subTest(descriptor=bad):
                with self.assertRaises(err):
                    cuarray.ipc_open(bad)

    def test_interfaces_of_numpy_scalars(self):
        import numpy as np
        for x in [np.float64(-1.5), np.int16(7), np.array(3.0, np.float32)]:
            with self.subTest(x=repr(x)):
                a = cuarray.asarray(x)
                self.assertEqual((a.shape, a.dtype), ((), np.asarray(x).dtype.name))
                self.assertEqual(np.frombuffer(a.to_bytes(), a.dtype)[0], x)

    def test_missing_library(self):
        env = dict(os.environ, CUARRAY_LIB="/nonexistent/libcuarray.so",
                   PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
        p = subprocess.run([sys.executable, "-c", "import cuarray"], capture_output=True, text=True, env=env,
                           timeout=TIMEOUT)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("ImportError", p.stderr)
        self.assertIn("/nonexistent/libcuarray.so", p.stderr, "it says where it looked")
        self.assertIn("make libcuarray", p.stderr, "and how to build it")



class DeviceFault(unittest.TestCase):
    """After a sticky device fault (sim's fail-fault: an illegal address on a
    GPU) every call on that device raises DeviceFaultError, a CuarrayError,
    whose message starts with "device fault: "; nothing crashes or hangs,
    and arrays collected afterwards say nothing."""

    def test_fault_raises_device_fault_error(self):
        out = run_isolated("""
            import random
            spec = "sim:37?mem=16MiB&fail-fault=2"
            a = cuarray.empty((64,), "float32", spec)
            data = bytes(random.randrange(1, 256) for _ in range(256))
            a.copy_from(data)                   # the first copy: done
            results = []
            for name, call in [("to_bytes", a.to_bytes),   # the second copy faults
                               ("empty", lambda: cuarray.empty((4,), "float32", spec)),
                               ("copy_from", lambda: a.copy_from(data)),
                               ("free", a.free)]:
                try:
                    call()
                    results.append([name, "returned"])
                except cuarray.DeviceFaultError as e:
                    results.append([name, isinstance(e, cuarray.CuarrayError), str(e).startswith("device fault: "), "\\n" in str(e)])
            b = cuarray.empty((8,), "float32", "sim:38")   # another device is untouched
            b.copy_from(data[:32])
            results.append(["other device", b.to_bytes() == data[:32]])
            print(json.dumps(results))
        """)
        self.assertEqual(json.loads(out), [
            ["to_bytes", True, True, False],
            ["empty", True, True, False],
            ["copy_from", True, True, False],
            ["free", True, True, False],
            ["other device", True],
        ])

if __name__ == "__main__":
    unittest.main()
