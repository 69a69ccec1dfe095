"""Sharing stream-ordered pool memory between processes (cuarray.pool).

A SharedPool is a stream-ordered pool made shareable
(cuMemPoolCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR): its arrays
can be mapped by other processes. send_pool hands the pool's file
descriptor to another process over a Unix socket (SCM_RIGHTS), with an
array's descriptor (its export data from cuMemPoolExportPointer and its
layout); receive_pool takes them there, import_pool imports the pool and
ImportedPool.open maps the array: no copy, counted in the importer's
ledger as kind "ipc" until the array is freed::

    # exporter                                  # importer
    pool = cuarray.pool.SharedPool("sim:0")     fd, desc = cuarray.pool.receive_pool(sock)
    a = pool.empty((512, 512), "float32")       p = cuarray.pool.import_pool(fd, "sim:0")
    a.copy_from(data)                           os.close(fd)
    cuarray.pool.send_pool(sock, pool, a)       b = p.open(desc)      # np.asarray(b) reads it

This is what cuda.core's IPC-enabled device memory resource does; the
framing on the socket is Go's interop.SendPoolFD: a 4-byte little-endian
length, then the descriptor's JSON, the file descriptor riding on the
first byte. The exporter keeps its array allocated until every importer
has freed its import.
"""
from __future__ import annotations

import ctypes
import os
import socket
import struct
from typing import Sequence, Tuple, Union

import cuarray

_u64, _p_u64, _p_str = ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_void_p)
_SIGNATURES = {
    "cuarray_pool_shared": [_u64, _p_u64],
    "cuarray_pool_empty": [_u64, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), _p_u64],
    "cuarray_pool_export_fd": [_u64, ctypes.POINTER(ctypes.c_int)],
    "cuarray_pool_export_array": [_u64, _u64, _p_str],
    "cuarray_pool_import": [_u64, ctypes.c_int, _p_u64],
    "cuarray_pool_open": [_u64, ctypes.c_char_p, _p_u64],
    "cuarray_pool_release": [_u64],
}

# MAX_MESSAGE bounds a descriptor's JSON on the socket (Go's interop.MaxPoolMessage).
MAX_MESSAGE = 1 << 20


def _entry(name: str):
    """The library's entry point name, with its argument types set."""
    f = getattr(cuarray._lib, name, None)
    if f is None:
        raise cuarray.CuarrayError("the cuarray library %s has no %s: rebuild it (make libcuarray)"
                                   % (getattr(cuarray._lib, "_name", "?"), name))
    if f.argtypes is None:
        f.argtypes = _SIGNATURES[name]
        f.restype = ctypes.c_void_p
    return f


class _Pool:
    """A pool handle of the library, destroyed by close() or when collected."""

    def __init__(self, handle: int, dev: cuarray.Device):
        self._h = handle
        self.device = dev

    def close(self) -> None:
        """Destroys the pool (cuMemPoolDestroy). Its arrays hold it open until
        they are freed: free them before closing it."""
        h, self._h = getattr(self, "_h", 0), 0
        if h and cuarray._lib is not None:
            cuarray._check(_entry("cuarray_pool_release")(h))

    def __del__(self):
        try:
            self.close()
        except cuarray.CuarrayError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _live(self) -> int:
        if not self._h:
            raise ValueError("the pool is closed")
        return self._h


class SharedPool(_Pool):
    """A stream-ordered pool whose arrays other processes can map."""

    def __init__(self, device: Union[str, cuarray.Device, None] = None):
        dev = cuarray._device_arg(device, "")
        super().__init__(cuarray._handle(_entry("cuarray_pool_shared"), dev._h), dev)

    def empty(self, shape: Sequence[int], dtype: str = "float32") -> cuarray.Array:
        """An uninitialised C-contiguous array of the pool's memory, its
        allocation complete on the device."""
        shape = tuple(int(n) for n in shape)
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        h = cuarray._handle(_entry("cuarray_pool_empty"), self._live(), str(dtype).encode(), len(shape), dims)
        return cuarray.Array(h, self.device, keep=self)

    def export_fd(self) -> int:
        """A new file descriptor of the pool (cuMemPoolExportToShareableHandle);
        close it once sent."""
        fd = ctypes.c_int(-1)
        cuarray._check(_entry("cuarray_pool_export_fd")(self._live(), ctypes.byref(fd)))
        return fd.value

    def export(self, array: cuarray.Array) -> str:
        """The JSON descriptor of an array this pool allocated, for a process
        that imports the pool (cuMemPoolExportPointer and the layout)."""
        return cuarray._string(_entry("cuarray_pool_export_array"), self._live(), array._live())


class ImportedPool(_Pool):
    """A pool another process shared, imported here: it maps that process's
    arrays and allocates none."""

    def open(self, descriptor: Union[str, bytes]) -> cuarray.Array:
        """Maps the array descriptor names (cuMemPoolImportPointer): no copy;
        counted in the ledger as kind "ipc" and freed when the array is."""
        if isinstance(descriptor, str):
            descriptor = descriptor.encode()
        if not isinstance(descriptor, (bytes, bytearray)) or b"\0" in descriptor:
            raise ValueError("open: the descriptor is the JSON SharedPool.export returned")
        h = cuarray._handle(_entry("cuarray_pool_open"), self._live(), bytes(descriptor))
        return cuarray.Array(h, self.device, keep=self)


def import_pool(fd: int, device: Union[str, cuarray.Device, None] = None) -> ImportedPool:
    """Imports the pool another process sent as file descriptor fd
    (cuMemPoolImportFromShareableHandle). fd stays the caller's to close.
    A descriptor that is not a shared pool's, or whose pool or process is
    gone, is a CuarrayError."""
    dev = cuarray._device_arg(device, "")
    return ImportedPool(cuarray._handle(_entry("cuarray_pool_import"), dev._h, int(fd)), dev)


def send_pool(sock: socket.socket, pool: SharedPool, array: Union[cuarray.Array, str]) -> None:
    """Sends pool's file descriptor and the descriptor of array (an array
    of the pool, or the JSON SharedPool.export returned for one) over the
    Unix socket sock, as Go's interop.SendPoolFD does."""
    msg = (array if isinstance(array, str) else pool.export(array)).encode()
    fd = pool.export_fd()
    try:
        data = struct.pack("<I", len(msg)) + msg
        sent = socket.send_fds(sock, [data], [fd])
        sock.sendall(data[sent:])
    finally:
        os.close(fd)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise cuarray.CuarrayError("receive_pool: the socket closed before the message ended")
        out += chunk
    return out


def receive_pool(sock: socket.socket) -> Tuple[int, str]:
    """Receives a pool's file descriptor and an array's descriptor that
    send_pool (or Go's interop.SendPoolFD) sent. The file descriptor is the
    caller's to close."""
    head, fds, _, _ = socket.recv_fds(sock, 4, 4)
    try:
        if len(fds) != 1:
            raise cuarray.CuarrayError("receive_pool: %d file descriptors came with the message, want 1" % len(fds))
        head += _recv_exactly(sock, 4 - len(head))
        (n,) = struct.unpack("<I", head)
        if n > MAX_MESSAGE:
            raise cuarray.CuarrayError("receive_pool: a message of %d bytes, at most %d" % (n, MAX_MESSAGE))
        return fds[0], _recv_exactly(sock, n).decode()
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
