"""Stream-ordered pool memory shared with another Python process: the pool's
file descriptor over a Unix socket (SCM_RIGHTS), an array's export data,
read there as a NumPy array. python_test.go runs it, on sim and on the
emulated CUDA driver; by hand:

    make libcuarray && CUARRAY_LIB=build/libcuarray.so /usr/bin/python3 -m unittest -v python/test_pool_ipc.py
"""
import json
import os
import socket
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402

SPEC = os.environ.get("CUARRAY_DEVICE", "sim:0")
SEED = int(os.environ.get("CUARRAY_TEST_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
print("test_pool_ipc: CUARRAY_TEST_SEED=%d replays the random draws" % SEED, file=sys.stderr)

# The importing process: it receives the pool and a descriptor on the
# socket it was given, maps the array, reads it as NumPy, writes its
# negation back, frees it, and reports its ledger (or the error) as JSON.
CHILD = r"""
import json, os, socket, sys
import numpy as np
import cuarray
sock = socket.socket(fileno=int(sys.argv[1]))
dev = cuarray.device(sys.argv[2])
report = {}
try:
    fd, desc = cuarray.pool.receive_pool(sock)
    try:
        pool = cuarray.pool.import_pool(fd, dev)
    finally:
        os.close(fd)
    b = pool.open(desc)
    n = np.frombuffer(b.to_bytes(), dtype=b.dtype).reshape(b.shape)
    if sys.argv[2].startswith("sim"):  # sim's memory is host memory: NumPy reads it in place too
        report["asarray_equal"] = bool(np.array_equal(np.asarray(b), n))
    b.copy_from((-n).tobytes())
    report["sum"] = float(n.astype(np.float64).sum())
    report["ipc_allocs"] = dev.ledger()["memory"]["ipc"]["allocs"]
    del b
    pool.close()
    led = dev.ledger()["memory"]
    report.update(ipc_frees=led["ipc"]["frees"], ipc_current=led["ipc"]["current"],
                  device_allocs=led["device"]["allocs"], pool_allocs=led["stream-ordered"]["allocs"])
except cuarray.CuarrayError as e:
    report["error"] = str(e)
print(json.dumps(report))
"""


def run_child(pool, array):
    """Sends pool and array (or its descriptor) to a new importing process
    and returns its report."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
    with mine:
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(theirs.fileno()), SPEC], pass_fds=[theirs.fileno()],
                                 stdout=subprocess.PIPE, text=True, env=env)
        theirs.close()
        cuarray.pool.send_pool(mine, pool, array)
        out, _ = child.communicate(timeout=120)
    if child.returncode != 0:
        raise AssertionError("the importing process failed (exit %d): %s" % (child.returncode, out))
    return json.loads(out)


class PoolIPC(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng([SEED, len(self.id())])

    def test_other_process_reads_and_writes(self):
        with cuarray.pool.SharedPool(SPEC) as pool:
            a = pool.empty((24, 10), "float32")
            want = self.rng.uniform(-4, 4, size=(24, 10)).astype(np.float32)
            a.copy_from(want.tobytes())
            got = run_child(pool, a)
            self.assertNotIn("error", got)
            self.assertAlmostEqual(got["sum"], float(want.astype(np.float64).sum()), places=2)
            self.assertEqual(got["ipc_allocs"], 1, "the import is counted as ipc")
            self.assertEqual(got["ipc_frees"], 1, "its free is counted")
            self.assertEqual(got["ipc_current"], 0, "nothing stays mapped")
            self.assertEqual(got["device_allocs"] + got["pool_allocs"], 0, "importing allocates nothing")
            if SPEC.startswith("sim"):
                self.assertTrue(got["asarray_equal"], "np.asarray reads the imported memory")
            back = np.frombuffer(a.to_bytes(), dtype=np.float32).reshape(a.shape)
            np.testing.assert_array_equal(back, -want, "the other process wrote into this one's memory")
            del a

    def test_freed_array_is_refused(self):
        with cuarray.pool.SharedPool(SPEC) as pool:
            a = pool.empty((64,), "uint8")
            a.copy_from(self.rng.integers(1, 256, size=64, dtype=np.uint8).tobytes())
            desc = pool.export(a)
            keep = pool.empty((8,), "uint8")  # the pool is still live
            del a  # the exporter frees the allocation: its export data is stale
            got = run_child(pool, desc)
            self.assertIn("error", got, "a freed allocation does not import")
            self.assertIn("stale", got["error"])
            del keep

    def test_foreign_descriptors_are_refused(self):
        r, w = os.pipe()
        try:
            with self.assertRaises(cuarray.CuarrayError):
                cuarray.pool.import_pool(r, SPEC)
        finally:
            os.close(r)
            os.close(w)
        with cuarray.pool.SharedPool(SPEC) as pool:
            fd = pool.export_fd()
            try:
                with self.assertRaisesRegex(cuarray.CuarrayError, "this process|INVALID_CONTEXT"):
                    cuarray.pool.import_pool(fd, SPEC)
            finally:
                os.close(fd)
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with mine, theirs:
            theirs.sendall(b"\x02\x00\x00\x00hi")
            with self.assertRaisesRegex(cuarray.CuarrayError, "0 file descriptors"):
                cuarray.pool.receive_pool(mine)


if __name__ == "__main__":
    unittest.main()
