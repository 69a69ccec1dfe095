"""cuarray arrays through mpi4py, run as every rank of an MPI job:

    make mpi-deps libcuarray
    CUARRAY_LIB=build/libcuarray.so mpirun -np 2 /usr/bin/python3 -m unittest python/test_mpi.py

(make mpi-test runs it). On sim an array's memory is host memory: mpi4py
(Debian's 3.1) takes it through __dlpack__ (a kDLCPU tensor) and MPI reads
and writes it in place, so the ledger counts no copy for a send or a
receive. On a GPU (CUARRAY_DEVICE=cuda:N) with a CUDA-aware MPI
(CUARRAY_MPI_CUDA_AWARE=1, as Open MPI's MPIX_Query_cuda_support answers)
the same calls hand MPI the device pointer, through __dlpack__ or, alone,
__cuda_array_interface__; without one they are skipped, as a GPU buffer
cannot go to an MPI that reads only host memory.
"""

import os
import sys
import unittest

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuarray  # noqa: E402

SPEC = os.environ.get("CUARRAY_DEVICE", "sim:0")
COMM = MPI.COMM_WORLD
rng = np.random.default_rng()


def traffic(ledger):
    """(copies, allocations) counted in a ledger dict."""
    copies = sum(p["count"] for d in ledger.get("copies", {}).values() for p in d.values())
    allocs = sum(k["allocs"] for k in ledger.get("memory", {}).values())
    return copies, allocs


def on_gpu():
    return SPEC.startswith("cuda")


def only(a, names):
    """An object that shows a's interfaces named, and nothing else, so that
    mpi4py must take the array through one of them."""
    return type("Only", (), {n: property(lambda self, n=n: getattr(a, n)) for n in names})()


class MPITest(unittest.TestCase):
    def setUp(self):
        if COMM.size < 2:
            self.skipTest("needs at least 2 ranks: run under mpirun -np 2 (make mpi-test)")
        if on_gpu() and os.environ.get("CUARRAY_MPI_CUDA_AWARE") != "1":
            self.skipTest("%s arrays need a CUDA-aware MPI (set CUARRAY_MPI_CUDA_AWARE=1 where MPIX_Query_cuda_support says so)" % SPEC)
        self.dev = cuarray.device(SPEC)

    def array(self, values):
        a = cuarray.empty(values.shape, dtype=str(values.dtype), device=self.dev)
        a.copy_from(values)
        return a

    def test_send_recv_ring_moves_no_bytes_through_cuarray(self):
        for shape, dtype in [((64, 33), "float32"), ((1000,), "float64"), ((3, 5, 7), "int32")]:
            with self.subTest(shape=shape, dtype=dtype):
                mine = rng.standard_normal(shape).astype(dtype) if dtype != "int32" else rng.integers(-1000, 1000, shape).astype(dtype)
                right, left = (COMM.rank + 1) % COMM.size, (COMM.rank - 1) % COMM.size
                expected = COMM.sendrecv(mine, dest=right, source=left)  # pickled, for the check
                send, recv = self.array(mine), cuarray.empty(shape, dtype=dtype, device=self.dev)
                before = traffic(self.dev.ledger())
                COMM.Sendrecv(send, dest=right, recvbuf=recv, source=left)
                after = traffic(self.dev.ledger())
                self.assertEqual(before, after, "mpi4py moved the array's own memory: no copy, no allocation in the ledger")
                np.testing.assert_array_equal(recv.to_numpy(), expected)

    def test_alltoallv_of_uneven_blocks(self):
        size = COMM.size
        counts = rng.integers(1, 50, size)  # what this rank sends to each rank
        recv_counts = np.array(COMM.alltoall([int(c) for c in counts]))
        send_values = rng.standard_normal(int(counts.sum())).astype("float32")
        sdispl = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rdispl = np.concatenate([[0], np.cumsum(recv_counts)[:-1]])
        blocks = [send_values[sdispl[q]:sdispl[q] + counts[q]] for q in range(size)]
        expected = np.concatenate(COMM.alltoall(blocks))
        send = self.array(send_values)
        recv = cuarray.empty((int(recv_counts.sum()),), dtype="float32", device=self.dev)
        before = traffic(self.dev.ledger())
        COMM.Alltoallv([send, (counts, sdispl), MPI.FLOAT], [recv, (recv_counts, rdispl), MPI.FLOAT])
        self.assertEqual(before, traffic(self.dev.ledger()))
        np.testing.assert_array_equal(recv.to_numpy(), expected)

    def test_each_interface_alone(self):
        # mpi4py takes a buffer, then __dlpack__, then __cuda_array_interface__: each alone must do
        cases = [(["__dlpack__", "__dlpack_device__"], True)]
        if on_gpu():
            cases.append((["__cuda_array_interface__"], True))
        else:  # sim memory is host memory: no CUDA interface to take it through
            cases.append((["__cuda_array_interface__"], False))
        right, left = (COMM.rank + 1) % COMM.size, (COMM.rank - 1) % COMM.size
        for names, works in cases:
            with self.subTest(interfaces=names):
                mine = rng.standard_normal(100).astype("float32")
                expected = COMM.sendrecv(mine, dest=right, source=left)
                send, recv = self.array(mine), cuarray.empty((100,), dtype="float32", device=self.dev)
                if not works:
                    with self.assertRaises(TypeError):
                        COMM.Sendrecv(only(send, names), dest=right, recvbuf=only(recv, names), source=left)
                    continue
                COMM.Sendrecv(only(send, names), dest=right, recvbuf=only(recv, names), source=left)
                np.testing.assert_array_equal(recv.to_numpy(), expected)

    def test_a_slice_view_is_sent_in_place(self):
        full = rng.standard_normal((8, 16)).astype("float32")
        a = self.array(full)
        rows = a[2:5]  # contiguous rows: a view, no copy
        right, left = (COMM.rank + 1) % COMM.size, (COMM.rank - 1) % COMM.size
        expected = COMM.sendrecv(full[2:5], dest=right, source=left)
        recv = cuarray.empty((3, 16), dtype="float32", device=self.dev)
        COMM.Sendrecv(rows, dest=right, recvbuf=recv, source=left)
        np.testing.assert_array_equal(recv.to_numpy(), expected)


if __name__ == "__main__":
    unittest.main()
