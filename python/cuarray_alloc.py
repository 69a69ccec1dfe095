"""cuarray as CuPy's and PyTorch's allocator, as RAPIDS RMM is: every
allocation those libraries make comes from a cuarray device, so it is in the
device's ledger (counts, peak, scopes) and under its limit.

    import cupy, cuarray
    cupy.cuda.set_allocator(cuarray.cupy_allocator("cuda:0"))

    import torch, cuarray
    cuarray.use_as_torch_allocator("cuda:0")     # before PyTorch's first CUDA allocation

The functions are cuarray.cupy_allocator, cuarray.use_as_torch_allocator,
cuarray.last_allocator_error and cuarray.allocator_stats; this module holds
them and imports CuPy and PyTorch only when they are called.

pool=False (the default): each allocation is one device allocation, counted
in the ledger as it is made, so the ledger's peak is the library's peak.
pool=True: allocations come from cuarray's caching pool (one per device), the
ledger counts the pool's segments, and frees are stream-ordered: a block
freed on a stream is reusable at once on that stream and on others once the
stream has passed the free. Stream 2, CUDA's per-thread default stream (CuPy
with CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1), is a different stream on each
thread: a block one thread freed on it waits for that thread's stream before
another thread gets it, and a block freed by another thread than the one that
allocated it on stream 2 first waits for the device. Through PyTorch (use_as_torch_allocator), whose
pluggable allocator passes only the allocation stream and drops
tensor.record_stream, a free first waits for the device (every stream), so
that a side stream's use of a tensor is over before its block is reused.
limit (bytes) sets the device ledger's limit on
device memory, 0 removes it, None leaves it: an allocation past it fails with
cuarray's message and figures.

memory="stream-ordered" takes the memory from the device's default
stream-ordered pool (cuMemAllocAsync) instead of cuMemAlloc, counted in the
ledger under "stream-ordered", whose limit the limit then sets. With
pool=False each allocation is a cuMemAllocAsync on the caller's stream (CuPy's
current stream, the stream PyTorch passes) and each free a cuMemFreeAsync on
the stream the free names, as CuPy's MemoryAsyncPool and PyTorch's
cudaMallocAsync backend do, with the same waits for the device as the pool's
frees where the free's stream is not the allocation's; with pool=True
cuarray's caching pool takes its segments from that pool.
"""

from __future__ import annotations

import ctypes
import operator
import threading
from typing import Any, Callable, Optional, Union

import cuarray

__all__ = ["cupy_allocator", "use_as_torch_allocator", "last_allocator_error", "allocator_stats"]

# PyTorch does not check the pointer a pluggable allocator returns (a NULL
# becomes a tensor at address 0), so PyTorch gets the malloc that throws, as
# RMM's does: PyTorch raises RuntimeError with cuarray's message. The one that
# returns NULL, cuarray_torch_malloc, is for callers that check.
_TORCH_MALLOC, _TORCH_FREE = "cuarray_torch_malloc_raise", "cuarray_torch_free"
_setup_lock = threading.Lock()
_INT64_MAX = (1 << 63) - 1
# cuarray_allocator_use's flags (libcuarray.h: CUARRAY_ALLOCATOR_POOL, CUARRAY_ALLOCATOR_STREAM_ORDERED).
_POOL, _STREAM_ORDERED = 1, 2
# The memory an allocator hands out, by the `memory` argument: its flag and its ledger kind.
_MEMORY = {"device": (0, "device"), "stream-ordered": (_STREAM_ORDERED, "stream-ordered")}
_ready = []


def _lib():
    """The loaded libcuarray, with the allocator's prototypes set (once)."""
    lib = cuarray._lib
    with _setup_lock:
        if not _ready:
            for name, args in {
                "cuarray_allocator_use": [ctypes.c_uint64, ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_int)],
                "cuarray_allocator_malloc": [ctypes.c_int64, ctypes.c_int, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)],
                "cuarray_allocator_free": [ctypes.c_size_t, ctypes.c_int64, ctypes.c_int, ctypes.c_size_t],
                "cuarray_allocator_last_error": [ctypes.c_int],
                "cuarray_allocator_stats": [ctypes.POINTER(ctypes.c_void_p)],
            }.items():
                f = getattr(lib, name, None)
                if f is None:
                    raise ImportError("cuarray: the library %s has no %s: rebuild it (make libcuarray)" % (lib._name, name))
                f.argtypes, f.restype = args, ctypes.c_void_p
            _ready.append(True)
    return lib


def _message(lib, err):
    """The message of an error the library returned, freed."""
    try:
        return ctypes.string_at(err).decode()
    finally:
        lib.cuarray_free_string(err)


def _import(name, what):
    """Imports CuPy or PyTorch for `what`, or says plainly that it is missing."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError("cuarray.%s needs %s, which cannot be imported here (%s); install it, or use "
                          "cuarray's own arrays" % (what, {"cupy": "CuPy", "torch": "PyTorch"}[name], e)) from e


def _device(device):
    if isinstance(device, cuarray.Device):
        return device
    if not isinstance(device, str):
        raise TypeError("device must be a spec such as \"cuda:0\" or a cuarray Device, not %r" % (device,))
    return cuarray.device(device)


def _require_gpu(dev, what):
    """CuPy and PyTorch take device pointers: a sim device's memory is host memory."""
    name = dev.ledger().get("name", dev.spec)
    if not name.startswith("cuda"):
        which = name if dev.spec == name else "%r (%s)" % (dev.spec, name)
        raise ValueError("cuarray.%s: the device %s is emulated in host memory; CuPy and PyTorch need a GPU "
                         "device (\"cuda:N\", with the library built with -tags cuda)" % (what, which))


def _memory(memory):
    """The flag and ledger kind of the `memory` argument, or a ValueError."""
    try:
        return _MEMORY[memory]
    except (KeyError, TypeError):
        raise ValueError("memory must be one of %s, not %r" % (", ".join(map(repr, _MEMORY)), memory)) from None


def _use(dev, pool, limit, memory="device"):
    """Makes dev the allocator's device for its index; returns the index."""
    flag, _ = _memory(memory)
    if limit is None:
        limit = -1
    else:
        try:
            if isinstance(limit, bool):
                raise TypeError
            limit = operator.index(limit)
        except TypeError:
            raise TypeError("limit must be None or a number of bytes, not %r" % (limit,)) from None
        if limit < 0:
            raise ValueError("limit must be None or a number of bytes >= 0, not %r" % (limit,))
        if limit > _INT64_MAX:  # ctypes would wrap it: 2**64 + 4096 became a limit of 4096 bytes
            raise ValueError("limit %d bytes is more than the most a ledger counts (2**63 - 1)" % limit)
    lib = _lib()
    index = ctypes.c_int()
    cuarray._check(lib.cuarray_allocator_use(dev._h, (_POOL if pool else 0) | flag, limit, ctypes.byref(index)))
    return index.value


def last_allocator_error(clear: bool = False) -> Optional[str]:
    """The message of the calling thread's last allocator error (a malloc
    past a limit, a free of a pointer it did not hand out), or None. Each
    thread has its own, as with errno: a thread reads its own failure's
    message whatever other threads do, and clear forgets it for this thread
    only (allocator_stats()["errors"] counts every thread's). PyTorch's
    out-of-memory error cannot carry it: read it here, on the thread whose
    allocation failed."""
    err = _lib().cuarray_allocator_last_error(1 if clear else 0)
    return _message(cuarray._lib, err) if err else None


def allocator_stats() -> dict:
    """The allocator's counts (mallocs, allocated, zero, failed, frees,
    foreign, live, in_use, peak_in_use, errors: every thread's) and, under "pools", each
    pooled device index's pool figures."""
    import json
    return json.loads(cuarray._string(_lib().cuarray_allocator_stats))


_oom_classes = {}


def _oom_class(base):
    """An error that is both CuPy's OutOfMemoryError (base) and a
    CuarrayError, whose message is cuarray's."""
    cls = _oom_classes.get(base)
    if cls is None:
        class CuarrayOutOfMemoryError(base, cuarray.CuarrayError):
            """CuPy's OutOfMemoryError with cuarray's message and figures."""

            def __init__(self, message, size, total, limit):
                base.__init__(self, size, total, limit)
                self.args = (message,)
                self.message = message

            def __str__(self):
                return self.message

            def __reduce__(self):
                return (type(self), (self.message, self._size, self._total, self._limit))

        cls = _oom_classes[base] = CuarrayOutOfMemoryError
    return cls


class _Block:
    """The owner of one allocation handed to CuPy: when CuPy drops it, the
    memory goes back through cuarray, ordered on CuPy's current stream."""

    __slots__ = ("lib", "ptr", "size", "index", "stream", "__weakref__")

    def __init__(self, lib, ptr, size, index, stream):
        self.lib, self.ptr, self.size, self.index, self.stream = lib, ptr, size, index, stream

    def free(self):
        ptr, self.ptr = self.ptr, 0
        if not ptr or self.lib is None:
            return
        try:
            stream = self.stream()
        except Exception:  # CuPy half gone at exit: the allocation's own stream still orders it
            stream = 0
        err = self.lib.cuarray_allocator_free(ptr, self.size, self.index, stream)
        if err:  # recorded as the last error too; a finalizer cannot raise
            self.lib.cuarray_free_string(err)

    __del__ = free


def _cupy_allocator(dev, pool, limit, cupy, memory="device") -> Callable[[int], Any]:
    """cupy_allocator's work, with the cupy module given (tests pass a fake)."""
    _use(dev, pool, limit, memory)
    kind = _memory(memory)[1]
    lib = _lib()
    unowned, pointer = cupy.cuda.UnownedMemory, cupy.cuda.MemoryPointer
    current_stream, current_device = cupy.cuda.get_current_stream, cupy.cuda.runtime.getDevice
    oom = _oom_class(cupy.cuda.memory.OutOfMemoryError)

    def stream():
        return current_stream().ptr or 0

    def alloc(nbytes):
        size = int(nbytes)
        index = current_device()
        if size > _INT64_MAX:  # ctypes would wrap it: 2**64 + 64 bytes became 64
            raise oom("cuarray allocator: malloc %d bytes: more than any device has" % size, size, -1, 0)
        out = ctypes.c_size_t()
        err = lib.cuarray_allocator_malloc(size, index, stream(), ctypes.byref(out))
        if err:
            msg = _message(lib, err)
            if "out of memory" in msg:  # CuPy's figures: the size, the device's bytes in use, its limit
                mem = dev.ledger()["memory"].get(kind, {})
                raise oom(msg, size, mem.get("current", -1), mem.get("limit", 0))
            raise cuarray.CuarrayError(msg)
        owner = _Block(lib, out.value, size, index, stream)
        return pointer(unowned(out.value, size, owner, index), 0)

    alloc.device = dev
    return alloc


def cupy_allocator(device: Union[str, "cuarray.Device"] = "cuda:0", pool: bool = False,
                   limit: Optional[int] = None, memory: str = "device") -> Callable[[int], Any]:
    """A CuPy allocator backed by a cuarray GPU device, for
    cupy.cuda.set_allocator: alloc(nbytes) returns a cupy.cuda.MemoryPointer
    over cuarray memory (a cupy.cuda.UnownedMemory whose owner frees it
    through cuarray when CuPy drops it, on CuPy's current stream). The device
    serves CuPy's device of the same index. Past a limit, alloc raises an
    error that is both cupy.cuda.memory.OutOfMemoryError and
    cuarray.CuarrayError, with cuarray's message and figures.
    memory="stream-ordered": from the device's default stream-ordered pool,
    each alloc a cuMemAllocAsync on CuPy's current stream (CuPy's
    MemoryAsyncPool, through cuarray's ledger), or with pool=True cuarray's
    caching pool over it (see the module's doc)."""
    _memory(memory)
    cupy = _import("cupy", "cupy_allocator")
    dev = _device(device)
    _require_gpu(dev, "cupy_allocator")
    return _cupy_allocator(dev, pool, limit, cupy, memory)


def _use_as_torch_allocator(dev, pool, limit, torch, memory="device"):
    """use_as_torch_allocator's work, with the torch module given (tests pass a fake)."""
    _use(dev, pool, limit, memory)
    path = cuarray._lib._name
    alloc = torch.cuda.memory.CUDAPluggableAllocator(path, _TORCH_MALLOC, _TORCH_FREE)
    torch.cuda.memory.change_current_allocator(alloc)
    return alloc


def use_as_torch_allocator(device: Union[str, "cuarray.Device"] = "cuda:0", pool: bool = False,
                           limit: Optional[int] = None, memory: str = "device"):
    """Makes cuarray PyTorch's CUDA allocator, through
    torch.cuda.memory.CUDAPluggableAllocator over the loaded libcuarray's
    cuarray_torch_malloc_raise and cuarray_torch_free, serving PyTorch's
    device of the same index from device. Call it before PyTorch's first
    CUDA allocation (PyTorch cannot swap an allocator it has used). Returns
    the CUDAPluggableAllocator. A failed allocation (past a limit) throws a
    C++ std::bad_alloc with cuarray's message, which PyTorch raises as a
    RuntimeError (not torch.cuda.OutOfMemoryError: PyTorch keeps that for
    its own allocator); cuarray.last_allocator_error(), on the thread that
    allocated, has the message too. With pool=True each free first waits
    for the device (every stream, PyTorch's side streams included):
    PyTorch's pluggable allocator never passes tensor.record_stream on, so
    the pool cannot know which streams still use a block.
    memory="stream-ordered": from the device's default stream-ordered pool,
    each allocation a cuMemAllocAsync on the stream PyTorch passes (PyTorch's
    cudaMallocAsync backend, through cuarray's ledger; each free then waits
    for the device too), or with pool=True cuarray's caching pool over it."""
    _memory(memory)
    torch = _import("torch", "use_as_torch_allocator")
    dev = _device(device)
    _require_gpu(dev, "use_as_torch_allocator")
    return _use_as_torch_allocator(dev, pool, limit, torch, memory)
