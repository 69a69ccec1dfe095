"""cuarray for Python: zero-copy arrays on cuarray devices, through ctypes.

No build step: the module loads the C library that `make libcuarray` builds
(build/libcuarray.so beside this folder, or the path in $CUARRAY_LIB).

    import cuarray, numpy
    a = cuarray.empty((4, 5), dtype="float32", device="sim:0")
    n = numpy.asarray(a)            # the same memory (sim arrays are host memory)
    d = numpy.from_dlpack(a)        # the same memory again, through DLPack
    b = cuarray.asarray(n)          # and back: anything with __cuda_array_interface__,
                                    # __array_interface__ or __dlpack__
    a.ledger()                      # the device's ledger: no copy, no allocation for any of it

Arrays on a GPU ("cuda:0") expose __cuda_array_interface__ (CuPy, PyTorch,
Numba); arrays in host memory (sim, imported NumPy memory) expose
__array_interface__. Both expose __dlpack__ and __dlpack_device__.

Every export holds the memory: after a.free() it stays allocated (and
counted in the ledger) until the last export is gone. A DLPack tensor holds
it until its deleter runs; NumPy's array through the memoryview that is the
"data" of __array_interface__; the consumers of __cuda_array_interface__
through the Array object they keep as its owner (see Array.free).

An array is described once, when it is made; its interfaces are built from
that description on first use and handed out again without a call into the
library while the library's export token says nothing was freed and no
async work is pending. Calls not named async return with their work
complete, so then there is nothing to synchronize. __dlpack__ is then one
call into C (cuarray_dlpack_capsule) that builds the tensor from the
description and counts it where the library sees it when the array is
freed: the memory stays until the last tensor is deleted. After Array.copy_async
(work queued on a Stream, or on a CuPy or PyTorch stream by its handle),
exports follow the stream rules instead of synchronizing the device:
__cuda_array_interface__ names the stream to wait on (CAI v3),
__dlpack__(stream=s) makes the consumer's stream s wait on the device (-1:
no synchronization; None: the legacy default stream on CUDA, the host for
host memory), and __array_interface__, to_bytes, copy_ and ipc_export wait
on the host.
"""

from __future__ import annotations

import ctypes
import json
import operator
import os
from typing import Any, Union

__all__ = ["Array", "Device", "Ledger", "Stream", "device", "empty", "empty_async", "zeros", "asarray", "from_dlpack", "ipc_open", "CuarrayError", "DeviceFaultError", "StreamRaceError"]

# DLPack device types (dlpack.h)
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_CAPSULE = b"dltensor"
_CAPSULE_VERSIONED = b"dltensor_versioned"
_CAPSULE_USED = b"used_dltensor"
_CAPSULE_USED_VERSIONED = b"used_dltensor_versioned"
_DLPACK_VERSION = (1, 1)


class CuarrayError(RuntimeError):
    """An error the cuarray library returned."""


class DeviceFaultError(CuarrayError):
    """The device's context failed (an illegal address, a failed launch: a
    CUDA sticky error; "sim:N?fail-fault=K" emulates one). Every later call
    on that device raises it too, frees included; on a GPU only a new
    process can use CUDA again. Stop using the device rather than retry."""


class StreamRaceError(CuarrayError):
    """Two operations touch the same bytes, at least one writes, and
    nothing orders one before the other by CUDA's rules (no stream order,
    event or synchronization): a race on a GPU, whatever the timing.
    "sim:N?check=streams" reports it; the message names both operations,
    their streams, byte ranges and where each was queued."""


_FAULT_PREFIX = "device fault: "  # libcuarray's message for ErrContextFailed
_RACE_PREFIX = "stream race: "  # libcuarray's message for ErrStreamRace (check=streams)


def _library_candidates():
    """Where the C library is looked for, in order: $CUARRAY_LIB, then
    build/libcuarray.so of the checkout this module sits in, then the
    system's library path."""
    path = os.environ.get("CUARRAY_LIB")
    if path:
        return [path]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.normpath(os.path.join(here, os.pardir, "build", "libcuarray.so")), "libcuarray.so"]


def _open_library():
    tried = []
    for path in _library_candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (no such file)" % path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("cuarray: cannot load the C library libcuarray.so; looked at: %s. Build it with "
                      "`make libcuarray` in the cuarray checkout (it writes build/libcuarray.so), or set "
                      "CUARRAY_LIB to its path." % "; ".join(tried))


_MAX_DIMS = 64
# cuarray_desc flags (libcuarray/main.go)
_READONLY, _C_CONTIG, _F_CONTIG, _HOST_ACCESSIBLE, _OWNED, _VIEW = 1, 2, 4, 8, 16, 32


class _Desc(ctypes.Structure):
    """cuarray_desc: an array as cuarray_describe fills it in."""
    _fields_ = [
        ("ptr", ctypes.c_uint64),
        ("itemsize", ctypes.c_int64),
        ("extent", ctypes.c_int64 * 2),
        ("ndim", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
        ("dl_device", ctypes.c_int32 * 2),
        ("typestr", ctypes.c_char * 8),
        ("dtype", ctypes.c_char * 16),
        ("kind", ctypes.c_char * 16),
        ("device", ctypes.c_char * 40),
        ("shape", ctypes.c_int64 * _MAX_DIMS),
        ("strides", ctypes.c_int64 * _MAX_DIMS),
        ("keep", ctypes.c_void_p),
        ("keep_gen", ctypes.c_uint32),
        ("dl_ok", ctypes.c_int32),
        ("dl_code", ctypes.c_uint8),
        ("dl_bits", ctypes.c_uint8),
        ("dl_lanes", ctypes.c_uint16),
        ("reserved", ctypes.c_uint32),
    ]


def _load():
    lib = _open_library()
    u64, p_u64 = ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)
    p_str = ctypes.POINTER(ctypes.c_void_p)
    p_size = ctypes.POINTER(ctypes.c_size_t)
    sig = {
        "cuarray_device": [ctypes.c_char_p, p_u64],
        "cuarray_empty": [u64, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int, p_u64],
        "cuarray_empty_async": [u64, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), p_u64],
        "cuarray_view": [u64, ctypes.c_char_p, p_u64],
        "cuarray_release": [u64],
        "cuarray_copy": [u64, u64],
        "cuarray_to_host": [u64, ctypes.c_void_p, ctypes.c_int64],
        "cuarray_from_host": [u64, ctypes.c_void_p, ctypes.c_int64],
        "cuarray_info": [u64, p_str],
        "cuarray_describe": [u64, ctypes.POINTER(_Desc)],
        "cuarray_alive": [u64],
        "cuarray_interface": [u64, ctypes.c_size_t, ctypes.c_int, p_str],
        "cuarray_export_stream": [u64, p_size],
        "cuarray_export_wait": [u64, ctypes.c_int64],
        "cuarray_export_dlpack": [u64, ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)],
        "cuarray_copy_async": [u64, u64, ctypes.c_size_t],
        "cuarray_stream_new": [u64, p_u64, p_size],
        "cuarray_stream_synchronize": [u64],
        "cuarray_stream_release": [u64],
        "cuarray_stream_hold": [u64, p_u64],
        "cuarray_stream_resume": [u64],
        "cuarray_import_interface": [u64, ctypes.c_char_p, p_u64],
        "cuarray_to_dlpack": [u64, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)],
        "cuarray_from_dlpack": [u64, ctypes.c_void_p, ctypes.c_int, p_u64],
        "cuarray_ledger": [u64, p_str],
        "cuarray_ledger_report": [u64, p_str],
        "cuarray_device_info": [u64, p_str],
        "cuarray_array_device": [u64, p_u64],
        "cuarray_ipc_export": [u64, p_str],
        "cuarray_ipc_open": [u64, ctypes.c_char_p, p_u64],
    }
    for name, args in sig.items():
        f = getattr(lib, name, None)
        if f is None:
            continue
        f.argtypes = args
        f.restype = ctypes.c_void_p  # an error message to free, or NULL
    lib.cuarray_free_string.argtypes = [ctypes.c_void_p]
    lib.cuarray_free_string.restype = None
    lib.cuarray_dlpack_delete.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.cuarray_dlpack_delete.restype = None
    missing = [n for n in ("cuarray_keep_hold", "cuarray_keep_unhold", "cuarray_keep_live") if getattr(lib, n, None) is None]
    if missing:
        raise ImportError("cuarray: the C library %s is older than this module (it lacks %s): rebuild it with "
                          "`make libcuarray`" % (lib._name, ", ".join(missing)))
    lib.cuarray_keep_hold.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.cuarray_keep_hold.restype = ctypes.c_int
    lib.cuarray_keep_unhold.argtypes = [ctypes.c_void_p]
    lib.cuarray_keep_unhold.restype = None
    lib.cuarray_keep_live.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.cuarray_keep_live.restype = ctypes.c_uint64
    return lib


_lib = _load()
# Changes on every free; odd while async work may be pending (libcuarray/state.c).
_token = ctypes.c_int64.in_dll(_lib, "cuarray_export_token")

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_destructor = ctypes.cast(_lib.cuarray_capsule_destructor, ctypes.c_void_p).value


def _load_capsule():
    """cuarray_dlpack_capsule, called with the GIL held (it makes a Python
    object): __dlpack__ in one call, without entering Go. None when the
    library predates it."""
    f = getattr(ctypes.PyDLL(_lib._name), "cuarray_dlpack_capsule", None)
    if f is not None:
        f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
        f.restype = ctypes.py_object
    return f


_capsule = _load_capsule()


def _check(err):
    if err:
        msg = ctypes.string_at(err).decode()
        _lib.cuarray_free_string(err)
        if msg.startswith(_FAULT_PREFIX):
            raise DeviceFaultError(msg)
        if msg.startswith(_RACE_PREFIX):
            raise StreamRaceError(msg)
        raise CuarrayError(msg)


def _string(call, *args):
    out = ctypes.c_void_p()
    _check(call(*args, ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value).decode()
    finally:
        _lib.cuarray_free_string(out.value)


def _handle(call, *args):
    out = ctypes.c_uint64()
    _check(call(*args, ctypes.byref(out)))
    return out.value


class Ledger(dict):
    """A device's ledger as Device.ledger() returns it: a dict (memory per
    kind, copies per direction and path, as Go's Ledger.JSON) whose str()
    is Go's Ledger.Report(), the text table, taken right after the dict:

        print(a.ledger())                    # the table
        a.ledger()["memory"]["device"]       # the figures
    """

    def __init__(self, figures=(), report: str = "") -> None:
        super().__init__(figures)
        self._report = report

    def report(self) -> str:
        """The ledger as Go's Ledger.Report() writes it: a text table."""
        return self._report

    def __str__(self) -> str:
        return self._report


class Device:
    """A cuarray device: "sim:N" (emulated, host memory) or "cuda:N".

    Device(spec) opens it as device(spec) does, and returns the same object
    for the same spec: cuarray.Device("sim:0") is cuarray.device("sim:0")."""

    def __new__(cls, spec: str = "") -> "Device":
        return device(spec)

    @classmethod
    def _opened(cls, handle: int, spec: str) -> "Device":
        d = object.__new__(cls)
        d._h = handle
        d.spec = spec
        return d

    def ledger(self) -> Ledger:
        """The device's ledger as a dict: memory per kind, copies per direction
        and path; print() it (str()) for the text table of ledger_report()."""
        _unpark()
        figures = json.loads(_string(_lib.cuarray_ledger, self._h))
        return Ledger(figures, self.ledger_report())

    def ledger_report(self) -> str:
        """The device's ledger as Go's Ledger.Report() writes it: a text table
        of memory per kind and copies per direction and path."""
        if getattr(_lib, "cuarray_ledger_report", None) is None:
            raise CuarrayError("the cuarray library has no cuarray_ledger_report: rebuild it (make libcuarray)")
        return _string(_lib.cuarray_ledger_report, self._h)

    def info(self) -> str:
        """What ``cuarray info`` prints of the device before its ledger, a line
        a fact: device and backend, model, driver, memory, alignment, map host,
        context flags (Go's device.Describe)."""
        if getattr(_lib, "cuarray_device_info", None) is None:
            raise CuarrayError("the cuarray library has no cuarray_device_info: rebuild it (make libcuarray)")
        return _string(_lib.cuarray_device_info, self._h)

    def stream(self) -> "Stream":
        """A new Stream of this device."""
        return Stream(self)

    def __repr__(self):
        return "cuarray.Device(%r)" % self.spec


class Stream:
    """A stream of a device: work queued on it (Array.copy_async) runs in
    order, asynchronously to the caller. ptr is its handle (a CUstream on
    CUDA), the number __dlpack__(stream=...) and a CAI "stream" carry."""

    def __init__(self, device: Device) -> None:
        if not isinstance(device, Device):
            raise TypeError("Stream: device must be a cuarray Device, not %r" % (device,))
        h, ptr = ctypes.c_uint64(), ctypes.c_size_t()
        _check(_lib.cuarray_stream_new(device._h, ctypes.byref(h), ctypes.byref(ptr)))
        self._h, self.ptr, self.device = h.value, ptr.value, device

    def synchronize(self) -> None:
        """Waits until the work queued so far is done."""
        if not self._h:
            raise CuarrayError("the stream was closed")
        _check(_lib.cuarray_stream_synchronize(self._h))

    def close(self) -> None:
        """Waits for the stream's work and destroys it. Closing twice is harmless."""
        h, self._h = getattr(self, "_h", 0), 0
        if h and _lib is not None:
            _check(_lib.cuarray_stream_release(h))

    __del__ = close

    def _hold(self):
        """sim only, for tests: holds the stream at this point, as a long
        kernel would on a GPU, and returns the function that lets it go."""
        r = _handle(_lib.cuarray_stream_hold, self._h)
        done = []

        def resume():
            if not done:
                done.append(True)
                _check(_lib.cuarray_stream_resume(r))
        return resume

    def __repr__(self):
        return "cuarray.Stream(%s, %#x)" % (self.device.spec, self.ptr)


_devices = {}


def device(spec: str = "") -> Device:
    """Opens (once) and returns the device for spec ("sim:0", "cuda:0",
    "sim:1?latency=1ms"); "" is cuda:0 when a GPU answers, else sim:0."""
    if not isinstance(spec, str):
        raise TypeError("device: spec must be a string such as \"sim:0\", not %r" % (spec,))
    if "\0" in spec:
        raise ValueError("device: spec %r holds a NUL character" % (spec,))
    if spec not in _devices:
        _devices[spec] = Device._opened(_handle(_lib.cuarray_device, spec.encode()), spec)
    return _devices[spec]


def _device_of_handle(h):
    for d in _devices.values():
        if d._h == h:
            return d
    return None


# cuarray_keep_hold's refusals (libcuarray/keep.h)
_HOLD_REFUSED = {1: "the array was freed",
                 4: "the array has no keep: the library ran out of C memory when it was made",
                 5: "2^31-1 exports of the array are alive"}


# Foreign objects (a NumPy or CuPy array whose memory an Array borrowed) kept
# after their Array went, while DLPack tensors made of it in C, which keep no
# Python object, are alive: by (keep, generation).
_parked = {}


def _unpark():
    """Lets go of the parked objects whose memory no export uses any more
    (the calls that allocate, free or read the ledger check)."""
    for key in list(_parked) if _parked else ():
        if not _lib.cuarray_keep_live(*key):
            _parked.pop(key, None)


class _Hold:
    """A hold on an array's memory, counted in the library as a DLPack
    tensor is (cuarray_keep_hold): the memory stays allocated, even after
    the owner's free(), until the last hold and tensor are gone. It also
    keeps alive what the array keeps (its base array, or the foreign
    object whose memory it borrows). The interface exports hold one."""

    def __init__(self, array: "Array") -> None:
        k = ctypes.c_void_p()
        r = _lib.cuarray_keep_hold(array._dp, ctypes.byref(k))
        if r:
            raise CuarrayError(_HOLD_REFUSED.get(r, "hold: result %d" % r))
        self._k, self._keep = k.value, array._keep

    def __del__(self):
        k, self._k = getattr(self, "_k", None), None
        if k and _lib is not None:
            _lib.cuarray_keep_unhold(k)


class Array:
    """A cuarray DevArray: a pointer, shape, byte strides, dtype and device."""

    def __init__(self, handle, device=None, keep=None):
        self._h = handle
        self._device = device
        self._keep = keep  # what must outlive the array: its base array, a foreign object
        self._tok = -1     # the export token when the interfaces were last checked (-1: never)
        d = self._d = _Desc()  # kept: cuarray_dlpack_capsule builds tensors from it
        self._dp = ctypes.addressof(d)
        err = _lib.cuarray_describe(handle, ctypes.byref(d))
        if err:
            self._h = 0
            rerr = _lib.cuarray_release(handle)
            if rerr:
                _lib.cuarray_free_string(rerr)
            _check(err)
        n = d.ndim
        self._shape = tuple(d.shape[:n])
        self._strides = tuple(d.strides[:n])
        self._ptr = d.ptr
        self._flags = d.flags
        self._itemsize = d.itemsize
        self._typestr = d.typestr.decode()
        self._dtype = d.dtype.decode()
        self._kind = d.kind.decode()
        self._devname = d.device.decode()
        self._dl_device = (d.dl_device[0], d.dl_device[1])
        # DLPack's stream=None: CUDA's legacy default stream (1) waits;
        # for host memory the host does (0).
        self._dl_default = 1 if self._kind == "cuda" else 0
        self._ai = self._cai = None  # the interfaces, built on first use
        self._cai_hold = None  # held while this object lives: CAI consumers keep it, not a hold

    def __del__(self):
        h, self._h = getattr(self, "_h", 0), 0
        self._ai = self._cai_hold = None  # let go of this object's holds first: then the release frees
        keep, d = getattr(self, "_keep", None), getattr(self, "_d", None)
        if keep is not None and d is not None and not isinstance(keep, Array) and _lib is not None and \
                _lib.cuarray_keep_live(d.keep, d.keep_gen):
            _parked[d.keep, d.keep_gen] = keep  # borrowed memory that DLPack tensors still use
        if h and _lib is not None:
            try:
                _check(_lib.cuarray_release(h))
            except DeviceFaultError:
                pass  # the faulted device keeps the memory; said already by the call that met the fault

    def free(self) -> None:
        """Frees the array's memory now, once the async work on it is done,
        unless an export still holds it: then free() lets go of the owner's
        reference and the memory is freed when the last export is gone (the
        ledger counts it until then). Exports hold it as long as they live:
        a DLPack tensor until its deleter runs, a NumPy array made through
        __array_interface__ through the memoryview in its "data", and,
        once __cuda_array_interface__ was handed out, this Array object,
        which CuPy, PyTorch and Numba keep as the owner of what they
        imported. A view only lets go of its handle. Every later export of
        the array, or of a view of it, raises. Freeing twice is harmless."""
        h, self._h, self._tok, self._ai = self._h, 0, -1, None
        _unpark()
        if h:
            _check(_lib.cuarray_release(h))

    # --- description ---
    shape = property(lambda self: self._shape)
    strides = property(lambda self: self._strides)
    dtype = property(lambda self: self._dtype)
    typestr = property(lambda self: self._typestr)
    itemsize = property(lambda self: self._itemsize)
    ndim = property(lambda self: len(self._shape))
    ptr = property(lambda self: self._ptr)
    readonly = property(lambda self: bool(self._flags & _READONLY))
    device = property(lambda self: self._devname)

    @property
    def size(self) -> int:
        """The number of elements (1 for a 0-d array)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        """The number of bytes the elements take, packed."""
        return self.size * self.itemsize

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self):
        freed = "" if getattr(self, "_h", 0) else ", freed"
        return "cuarray.Array(shape=%s, dtype=%s, device=%s, strides=%s%s)" % (
            self.shape, self.dtype, self.device, self.strides, freed)

    def ledger(self) -> Ledger:
        """The ledger of the array's device (an empty one for host memory with no device)."""
        return self._device.ledger() if self._device else Ledger()

    def ledger_report(self) -> str:
        """The ledger of the array's device as a text table (Device.ledger_report;
        "" for host memory with no device)."""
        return self._device.ledger_report() if self._device else ""

    # --- views: no copy, no allocation ---
    def _view(self, **op):
        return Array(_handle(_lib.cuarray_view, self._live(), json.dumps(op).encode()), self._device, keep=self)

    @property
    def T(self) -> "Array":
        """The transposed view (axes reversed)."""
        return self._view(op="transpose")

    def transpose(self, *axes: Any) -> "Array":
        """A view with the axes permuted: no arguments reverse them; else one
        integer axis per dimension, or one sequence of them."""
        if not axes:
            return self.T
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return self._view(op="permute", axes=[_int(a, "an axis") for a in axes])

    def reshape(self, *shape: Any) -> "Array":
        """A view of another shape with the same elements in C order (a
        contiguous array's; -1 once for the length that fits): integers, or
        one sequence of them."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return self._view(op="reshape", shape=[_int(n, "a reshape entry") for n in shape])

    def as_readonly(self) -> "Array":
        """A read-only view of the array."""
        return self._view(op="readonly")

    def __getitem__(self, key: Any) -> "Array":
        """A view: integers (NumPy integers too) drop an axis, slices (any
        step) keep it, ... stands for the axes not named."""
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key):
            i = key.index(Ellipsis)
            key = key[:i] + (slice(None),) * (self.ndim - len(key) + 1) + key[i + 1:]
        if len(key) > self.ndim:
            raise IndexError("too many indices: %d for %d dimensions" % (len(key), self.ndim))
        out, axis = self, 0
        for k in key:
            n = out.shape[axis]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                r = range(start, stop, step)
                if step < 0 and len(r) > 0:  # flip, then slice forwards
                    out = out._view(op="flip", axis=axis)
                    start, stop, step = n - 1 - r[0], n - 1 - r[-1] + 1, -step
                elif len(r) == 0:
                    start, stop, step = 0, 0, 1
                out = out._view(op="slice", axis=axis, start=start, stop=stop, step=step)
                axis += 1
            elif not isinstance(k, bool) and hasattr(k, "__index__"):
                k = _int(k, "an index")
                if k < 0:
                    k += n
                if not 0 <= k < n:
                    raise IndexError("index %d out of range for axis %d of length %d" % (k, axis, n))
                out = out._view(op="index", axis=axis, start=k)
            else:
                raise TypeError("cuarray indices are ints, slices and ..., not %r" % (k,))
        return out

    # --- data: counted copies ---
    def to_bytes(self) -> bytes:
        """The elements, packed in C order, copied to a new bytes object."""
        buf = ctypes.create_string_buffer(self.nbytes)
        _check(_lib.cuarray_to_host(self._live(), buf, self.nbytes))
        return buf.raw

    def to_numpy(self):
        """The elements copied to a new NumPy array of this array's shape and
        dtype (one counted device-to-host copy of the elements' bytes; a
        strided view is packed on the device first)."""
        import numpy
        try:
            dt = numpy.dtype(self.dtype)
        except TypeError:
            raise TypeError("to_numpy: NumPy has no %s dtype: use to_bytes()" % self.dtype) from None
        return numpy.frombuffer(self.to_bytes(), dtype=dt).reshape(self.shape)

    get = to_numpy  # CuPy's name for the same copy

    def copy_from(self, data: Any) -> None:
        """Copies the elements from data: an array-like with a dtype (a NumPy
        array or scalar, of this array's dtype, in native byte order; any
        layout), a typed buffer (array.array, a memoryview with a format),
        checked the same way, a Python number or a (nested) list or tuple of
        them, converted to this array's dtype as numpy.asarray(data, dtype)
        would (a number fills the array), or a bytes-like object of exactly
        nbytes bytes packed in C order. Data with a shape must have this
        array's shape, or be 1-D with one element for each (taken in C
        order). The bytes are never reinterpreted: float64 data into a
        float32 array is a TypeError, a shape or size that differs a
        ValueError."""
        mv = None
        if isinstance(data, (bool, int, float, complex)):
            import numpy
            data = numpy.full(self.shape, data, dtype=numpy.dtype(self.dtype))
        elif isinstance(data, (list, tuple)):
            import numpy
            try:
                data = numpy.asarray(data, dtype=numpy.dtype(self.dtype))
            except (TypeError, ValueError, OverflowError) as e:
                raise type(e)("copy_from: the sequence does not convert to %s: %s" % (self.dtype, e)) from None
        if not (hasattr(data, "dtype") and hasattr(data, "shape")):
            try:
                mv = memoryview(data)
            except TypeError:
                if isinstance(data, (str, dict, set)) or not hasattr(data, "__len__"):
                    raise TypeError("copy_from: want an array, a buffer or a sequence of numbers, not %s"
                                    % type(data).__name__) from None
            if mv is not None and mv.format in ("B", "b", "c"):
                pass  # bytes-like: packed bytes, checked by size below
            else:
                import numpy
                data = numpy.asarray(data if mv is None else mv)
                mv = None
        if mv is None:
            name = _dtype_name(data.dtype, "copy_from: data of dtype", TypeError)
            if name != self.dtype:
                raise TypeError("copy_from: data of dtype %s into an array of %s: convert it first "
                                "(the bytes are not reinterpreted)" % (name, self.dtype))
            size = 1
            for n in data.shape:
                size *= _int(n, "a dimension of the data")
            if size != self.size:
                raise ValueError("copy_from: %d elements of shape %s into an array of %d, shape %s"
                                 % (size, tuple(data.shape), self.size, self.shape))
            if tuple(data.shape) != tuple(self.shape) and len(data.shape) > 1:
                raise ValueError("copy_from: data of shape %s into an array of shape %s: reshape it first "
                                 "(1-D data of %d elements is taken in C order)"
                                 % (tuple(data.shape), tuple(self.shape), self.size))
            import numpy
            data = numpy.ascontiguousarray(data)
            mv = memoryview(data)
        mv = mv.cast("B") if mv.c_contiguous else memoryview(mv.tobytes())
        if len(mv) != self.nbytes:
            raise ValueError("copy_from: %d bytes for an array of %d bytes" % (len(mv), self.nbytes))
        buf = (ctypes.c_char * len(mv)).from_buffer_copy(mv) if mv.readonly else (ctypes.c_char * len(mv)).from_buffer(mv)
        _check(_lib.cuarray_from_host(self._live(), buf, self.nbytes))

    def copy_(self, src: "Array") -> None:
        """Copies src (a cuarray Array of the same shape) into this array on
        the device, and returns when the copy is complete."""
        if not isinstance(src, Array):
            raise TypeError("copy_: src must be a cuarray Array, not %s" % type(src).__name__)
        _check(_lib.cuarray_copy(self._live(), src._live("src")))

    def copy_async(self, src: "Array", stream: Union["Stream", int]) -> None:
        """Queues a copy of src (a cuarray Array of the same shape) into this
        array on stream (a Stream, or the handle of a stream of the device:
        CuPy's stream.ptr, PyTorch's cuda_stream, 1 or 2 for CUDA's default
        streams) and returns at once. The stream first waits for the async
        work already queued on either array; exports and synchronous calls
        of either wait for the copy as the stream rules say."""
        if not isinstance(src, Array):
            raise TypeError("copy_async: src must be a cuarray Array, not %s" % type(src).__name__)
        _check(_lib.cuarray_copy_async(self._live(), src._live("src"), _stream_ptr(stream)))

    def ipc_export(self) -> str:
        """A JSON descriptor (IPC handle, offset, layout) that another process
        opens with cuarray.ipc_open. Keep this array alive while it is used."""
        return _string(_lib.cuarray_ipc_export, self._live())

    # --- interchange: no copy ---
    def _build_interface(self, host):
        """The interface dict for a host consumer (__array_interface__) or a
        CUDA one, built once from the description, with a hold on the
        memory. The host one's "data" is a memoryview of the bytes the
        array reaches ("offset": where element 0 is) that carries the hold:
        NumPy keeps it as the base of what it makes, so the memory lives as
        long as that does. The CUDA one's "data" is (pointer, read-only),
        all CAI v3 allows: its consumers keep this Array object instead,
        which holds the memory from then on for as long as it lives."""
        strides = None if self._flags & _C_CONTIG else self._strides
        d = {"shape": self._shape, "typestr": self._typestr, "version": 3, "strides": strides,
             "descr": [("", self._typestr)]}
        hold = _Hold(self)
        if host:
            lo, hi = self._d.extent[0], self._d.extent[1]
            raw = (ctypes.c_char * (hi - lo)).from_address(self._ptr + lo)
            raw.hold = hold
            mv = memoryview(raw)
            d["data"], d["offset"] = mv.toreadonly() if self._flags & _READONLY else mv, -lo
            self._ai = d
        else:
            d["data"], d["stream"] = (self._ptr, bool(self._flags & _READONLY)), None
            self._cai, self._cai_hold = d, hold

    def _live(self, which="the array"):
        """The array's handle, or CuarrayError("the array was freed") once
        free() ran: the library would only say that handle 0 is not a live
        handle. which names the array in the message ("src")."""
        if not self._h:
            raise CuarrayError("%s was freed" % which)
        return self._h

    def _checked(self, host):
        """The token after the library checked the array is alive and readied
        it for an export: with async work pending, the host waits for it
        (host) or the stream CAI names is returned (not host)."""
        tok = _token.value  # read before the check: a free after it changes the token
        if not self._h:
            raise CuarrayError("the array was freed")
        stream = None
        if not tok & 1:
            _check(_lib.cuarray_alive(self._h))
        elif host:
            _check(_lib.cuarray_export_wait(self._h, 0))
        else:
            out = ctypes.c_size_t()
            _check(_lib.cuarray_export_stream(self._h, ctypes.byref(out)))
            stream = out.value or None
        if (self._ai if host else self._cai) is None:
            self._build_interface(host)
        if not tok & 1:
            self._tok = tok
        return stream

    @property
    def __array_interface__(self):
        """NumPy's array interface (v3) of host memory. Its "data" is a
        memoryview of the bytes the array reaches, read-only for a read-only
        array, and "offset" is where element 0 lies in it (a.ptr is its
        address): the memoryview holds the memory, so what NumPy makes of it
        keeps the memory after free()."""
        if not self._flags & _HOST_ACCESSIBLE:
            raise AttributeError("__array_interface__: %s memory is not host memory (use __cuda_array_interface__)" % self.device)
        if _token.value == self._tok and self._ai is not None:  # nothing freed, nothing pending since the last check
            return self._ai.copy()
        self._checked(True)
        return self._ai.copy()

    @property
    def __cuda_array_interface__(self):
        if self._kind != "cuda":
            raise AttributeError("__cuda_array_interface__: %s memory is not CUDA device memory (use __array_interface__)" % self.device)
        if _token.value == self._tok and self._cai is not None:
            return self._cai.copy()
        return self._cuda_interface()

    def _cuda_interface(self):
        """__cuda_array_interface__ through the library, which checks the
        array and names the stream of the async work pending on it (the tests
        call it on sim, whose memory has no CUDA interface)."""
        stream = self._checked(False)
        d = self._cai.copy()
        d["stream"] = stream
        return d

    def __dlpack_device__(self):
        return self._dl_device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the array: versioned when the consumer asks for
        max_version >= (1, 0), else the legacy "dltensor" one. The memory
        stays alive until the consumer calls the tensor's deleter. stream is
        the consumer's: it waits on the device for the async work pending on
        the array (-1: no synchronization; None: CUDA's legacy default
        stream, or the host for host memory; 0, which the spec disallows, the
        legacy default stream too; sim streams stand in for CUDA's)."""
        if dl_device is not None and tuple(dl_device) != self._dl_device:
            raise BufferError("__dlpack__: the array is on %s, not DLPack device %s" % (self._dl_device, dl_device))
        consumer = self._dl_default if stream is None else self._dl_stream(stream)
        versioned = max_version is not None and max_version[0] >= 1
        if not self._h:
            raise BufferError("__dlpack__: the array was freed")
        if not copy and _capsule is not None:
            # Built in C from the description, counted in C memory (libcuarray/keep.c); None
            # where the library must be asked: async work pending, the array freed, an error.
            cap = _capsule(self._dp, versioned, consumer)
            if cap is not None:
                return cap
        p = ctypes.c_void_p()
        err = _lib.cuarray_export_dlpack(self._h, versioned, bool(copy), consumer, ctypes.byref(p))
        if err:
            try:
                _check(err)
            except DeviceFaultError:
                raise  # the device failed: not an array that cannot be exported
            except CuarrayError as e:
                raise BufferError(str(e)) from None
        try:
            return _api.PyCapsule_New(p.value, _CAPSULE_VERSIONED if versioned else _CAPSULE, _capsule_destructor)
        except BaseException:  # no capsule (out of memory): nobody else will delete the tensor
            _lib.cuarray_dlpack_delete(p.value, versioned)
            raise

    def _dl_stream(self, stream):
        """The consumer argument of the library for DLPack's stream."""
        if isinstance(stream, Stream):
            stream = stream.ptr
        stream = _int(stream, "__dlpack__: stream")
        if stream == -1:
            return -1
        if stream < 0:
            raise BufferError("__dlpack__: stream %d: want None, -1 or a stream handle" % stream)
        if self._device is None:
            raise BufferError("__dlpack__: host memory without a device has no streams: stream must be None")
        # 0 is ambiguous and the spec disallows it; older PyTorch passed it for
        # CUDA's default stream, so it is taken as the legacy default one.
        return stream or 1


def _stream_ptr(stream):
    """A stream's handle for the library: a Stream's, or a positive integer
    (a CuPy or PyTorch stream's handle, 1 or 2 for CUDA's default streams)."""
    if isinstance(stream, Stream):
        return stream.ptr
    if isinstance(stream, bool) or not hasattr(stream, "__index__") or operator.index(stream) <= 0:
        raise TypeError("stream must be a cuarray Stream or a positive stream handle, not %r" % (stream,))
    n = operator.index(stream)
    if n >= 2**64:
        raise OverflowError("stream handle %d does not fit in 64 bits" % n)
    return n


def _interface(d):
    """JSON lists back to the tuples the interfaces use."""
    d["shape"] = tuple(d["shape"])
    d["data"] = tuple(d["data"])
    if d.get("strides") is not None:
        d["strides"] = tuple(d["strides"])
    d["descr"] = [tuple(x) for x in d["descr"]]
    return d


_INT64_MAX = 2**63 - 1


def _int(x, what, lo=None):
    """x as an int: ints and NumPy integers (operator.index), never a bool,
    a float or a string, and within int64 (and at least lo)."""
    if isinstance(x, bool):
        raise TypeError("%s must be an integer, not a bool (%r)" % (what, x))
    try:
        n = operator.index(x)
    except TypeError:
        raise TypeError("%s must be an integer, not %s (%r)" % (what, type(x).__name__, x)) from None
    if not -_INT64_MAX - 1 <= n <= _INT64_MAX:
        raise OverflowError("%s %d does not fit in 64 bits" % (what, n))
    if lo is not None and n < lo:
        raise ValueError("%s must be at least %d, not %d" % (what, lo, n))
    return n


def _shape(shape):
    """A shape as a tuple of ints: one integer, or a sequence of them (() is
    0-d); each at least 0 and at most 2**63-1, at most 64 of them."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        return (_int(shape, "a shape", 0),)
    dims = tuple(_int(n, "shape entry %d" % i, 0) for i, n in enumerate(shape))
    if len(dims) > _MAX_DIMS:
        raise ValueError("a shape of %d dimensions: at most %d" % (len(dims), _MAX_DIMS))
    return dims


# The dtypes the library knows, by name (devarray's table).
_DTYPES = frozenset(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                     "float16", "bfloat16", "float32", "float64", "complex64", "complex128"])


def _dtype_name(dtype, what="dtype", unsupported=ValueError):
    """A dtype's name as the library knows it ("float32"): a name the library
    knows, another NumPy spelling of one ("f4", "<f4", "float"), a NumPy dtype
    (numpy.dtype("f4")) or a scalar type (numpy.float32, float). What is no
    dtype at all is a TypeError; a dtype cuarray does not support (an
    unknown name, big-endian, structured) is an unsupported (ValueError):
    the library would reinterpret its bytes."""
    if isinstance(dtype, str) and dtype in _DTYPES:
        return dtype
    if isinstance(dtype, bool) or dtype is None:
        raise TypeError("%s must be a name such as \"float32\", a NumPy dtype or a scalar type, not %r"
                        % (what, dtype))
    try:
        import numpy
        dt = numpy.dtype(dtype)
    except ImportError:
        raise TypeError("%s %r: without NumPy, a dtype is one of the names %s"
                        % (what, dtype, ", ".join(sorted(_DTYPES)))) from None
    except (TypeError, ValueError) as e:
        exc = unsupported if isinstance(dtype, (str, bytes)) else TypeError
        raise exc("%s must be a name such as \"float32\", a NumPy dtype or a scalar type, not %r (%s)"
                  % (what, dtype, e)) from None
    if dt.fields is not None or dt.subdtype is not None or dt.name not in _DTYPES:
        raise unsupported("%s %s (%r) is not one cuarray supports: %s" % (what, dt, dtype, ", ".join(sorted(_DTYPES))))
    if not dt.isnative and dt.itemsize > 1:
        raise unsupported("%s %s is not in native byte order: convert it first (numpy's astype(%r))"
                          % (what, dt.str, dt.newbyteorder("=").str))
    return dt.name


def empty(shape: Any, dtype: Any = "float32", device: Union[str, Device] = "sim:0") -> Array:
    """A new uninitialised C-contiguous array on the device (counted in its
    ledger). shape is an int or a sequence of ints (() for 0-d; NumPy
    integers too); dtype a name ("float32"), a NumPy dtype or a scalar type;
    device a spec ("sim:0", "cuda:0") or a Device."""
    return _alloc(shape, dtype, device, zero=False)


def zeros(shape: Any, dtype: Any = "float32", device: Union[str, Device] = "sim:0") -> Array:
    """A new zero-filled C-contiguous array on the device; the arguments are
    those of empty."""
    return _alloc(shape, dtype, device, zero=True)


def empty_async(shape: Any, dtype: Any, stream: "Stream") -> Array:
    """A new uninitialised C-contiguous array from the stream's device's
    default stream-ordered pool (cuMemAllocAsync), in the stream's order:
    work queued on the stream may use it at once. The ledger counts it under
    "stream-ordered". Until the stream has passed the allocation, exports
    follow the stream rules as after copy_async: __cuda_array_interface__
    names the stream, __dlpack__(stream=s) makes s wait for it, NumPy (a
    host consumer, on sim) waits for it. Deleting the array frees it in the
    stream's order: the array keeps the Stream object alive, and the stream
    must not be close()d before the array is gone."""
    if not isinstance(stream, Stream):
        raise TypeError("empty_async: stream must be a cuarray Stream, not %r" % (stream,))
    if not stream._h:
        raise CuarrayError("empty_async: the stream was closed")
    _unpark()
    shape = _shape(shape)
    name = _dtype_name(dtype)
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    if getattr(_lib, "cuarray_empty_async", None) is None:
        raise CuarrayError("empty_async: the C library %s is older than this module: rebuild it with "
                           "`make libcuarray`" % _lib._name)
    try:
        h = _handle(_lib.cuarray_empty_async, stream._h, name.encode(), len(shape), dims)
    except DeviceFaultError:
        raise  # the device failed: not a bad shape or dtype
    except CuarrayError as e:
        raise ValueError(str(e)) from None
    return Array(h, stream.device, keep=stream)


def _alloc(shape, dtype, spec, zero):
    _unpark()
    dev = spec if isinstance(spec, Device) else globals()["device"](spec)
    shape = _shape(shape)
    name = _dtype_name(dtype)
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    try:
        h = _handle(_lib.cuarray_empty, dev._h, name.encode(), len(shape), dims, int(zero))
    except DeviceFaultError:
        raise  # the device failed: not a bad shape or dtype
    except CuarrayError as e:
        raise ValueError(str(e)) from None
    return Array(h, dev)


# The keys of an array interface the library reads; others (NumPy scalars'
# "__ref", an array of theirs) are left out.
_INTERFACE_KEYS = ("data", "shape", "strides", "typestr", "version", "descr", "mask", "stream")


def _jsonable(d):
    """An array interface as JSON the library reads: its integers (NumPy's
    too) as ints, in range (the library checks the rest)."""
    out = {}
    for k in _INTERFACE_KEYS:
        if k not in d:
            continue
        v = d[k]
        if k in ("shape", "strides") and v is not None:
            v = [_int(x, "interface %s entry" % k) for x in v]
        elif k == "data" and isinstance(v, (tuple, list)) and len(v) == 2:
            v = [_int(v[0], "interface data pointer"), bool(v[1])]
        elif k == "stream" and v is not None:
            v = _int(v, "interface stream")
        elif k == "descr" and v is not None:
            v = [list(x) for x in v]
        out[k] = v
    return out


def asarray(obj: Any, device: Union[str, Device, None] = None) -> Array:
    """An Array over obj's memory, without copying: obj may be a cuarray
    Array, or have __cuda_array_interface__ (CuPy, PyTorch CUDA tensors,
    Numba), __array_interface__ (NumPy) or __dlpack__. The array keeps obj
    alive. CUDA memory is imported on device (default "cuda:N" of the
    memory), after waiting for the producer's stream as the interface asks.
    Host memory (a NumPy array, through __array_interface__) is borrowed
    as it is, on no cuarray device: its device reads "cpu:0" and it moves
    nothing to a device; to put the data on one, copy it into an array made
    there: empty(n.shape, n.dtype, device="sim:0").copy_from(n)."""
    if isinstance(obj, Array):
        return obj
    if hasattr(obj, "__cuda_array_interface__"):
        cai = dict(obj.__cuda_array_interface__)
        if cai.get("mask") is not None:
            raise ValueError("asarray: masked arrays are not supported")
        dev = _device_arg(device, "cuda:0")
        h = _handle(_lib.cuarray_import_interface, dev._h, json.dumps(_jsonable(cai)).encode())
        return Array(h, dev, keep=obj)
    if hasattr(obj, "__array_interface__"):
        ai = dict(obj.__array_interface__)
        if not isinstance(ai.get("data"), tuple):
            raise ValueError("asarray: an __array_interface__ without a (pointer, read-only) data pair (a buffer object) is not supported")
        h = _handle(_lib.cuarray_import_interface, 0, json.dumps(_jsonable(ai)).encode())
        return Array(h, None, keep=obj)
    if hasattr(obj, "__dlpack__"):
        return from_dlpack(obj, device)
    raise TypeError("asarray: %s has no __cuda_array_interface__, __array_interface__ or __dlpack__" % type(obj).__name__)


def _device_arg(dev, default):
    if isinstance(dev, Device):
        return dev
    if dev is not None and not isinstance(dev, str):
        raise TypeError("device must be a spec such as \"sim:0\" or a cuarray Device, not %r" % (dev,))
    return device(dev if dev is not None else default)


def from_dlpack(obj: Any, device: Union[str, Device, None] = None) -> Array:
    """An Array over the memory of obj's DLPack tensor, without copying.
    The array owns the tensor: freeing it calls the tensor's deleter."""
    dl_type, dl_id = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (_DL_CPU, 0)
    try:
        capsule = obj.__dlpack__(max_version=_DLPACK_VERSION)
    except TypeError:  # a producer from before DLPack 1.0
        capsule = obj.__dlpack__()
    if _api.PyCapsule_IsValid(capsule, _CAPSULE_VERSIONED):
        name, used, versioned = _CAPSULE_VERSIONED, _CAPSULE_USED_VERSIONED, 1
    elif _api.PyCapsule_IsValid(capsule, _CAPSULE):
        name, used, versioned = _CAPSULE, _CAPSULE_USED, 0
    else:
        raise ValueError("from_dlpack: __dlpack__ returned no unused DLPack capsule")
    p = _api.PyCapsule_GetPointer(capsule, name)
    if dl_type == _DL_CUDA:
        dev = _device_arg(device, "cuda:%d" % dl_id)
    elif device is not None:
        dev = _device_arg(device, None)
    elif isinstance(obj, Array):
        dev = obj._device  # back onto the cuarray device it came from
    else:
        dev = None  # host memory: a descriptor with no device
    h = _handle(_lib.cuarray_from_dlpack, dev._h if dev else 0, p, versioned)
    _api.PyCapsule_SetName(capsule, used)  # ours now: the capsule no longer deletes it
    return Array(h, dev)


def ipc_open(descriptor: Union[str, bytes], device: Union[str, Device, None] = None) -> Array:
    """Opens an array another process exported with Array.ipc_export, on
    device (default: the exporter's backend and ordinal). No copy; the
    mapping is counted in the device's ledger as kind "ipc" and closed when
    the array is freed. A descriptor that is not one is a ValueError."""
    if isinstance(descriptor, str):
        descriptor = descriptor.encode()
    if not isinstance(descriptor, (bytes, bytearray)):
        raise TypeError("ipc_open: the descriptor is the JSON string ipc_export returned, not %s"
                        % type(descriptor).__name__)
    descriptor = bytes(descriptor)
    if b"\0" in descriptor:
        raise ValueError("ipc_open: the descriptor holds a NUL byte")
    try:
        d = json.loads(descriptor)
    except ValueError as e:
        raise ValueError("ipc_open: the descriptor is not JSON: %s" % e) from None
    if not isinstance(d, dict) or not isinstance(d.get("backend"), str) or \
            isinstance(d.get("device"), bool) or not isinstance(d.get("device"), int):
        raise ValueError("ipc_open: not a descriptor of ipc_export (no backend and device)")
    dev = _device_arg(device, "%s:%d" % (d["backend"], d["device"]))
    return Array(_handle(_lib.cuarray_ipc_open, dev._h, descriptor), dev)


# cuarray as CuPy's and PyTorch's allocator: python/cuarray_alloc.py, beside
# this file in the checkout and in the installed package.

def _alloc_module():
    import importlib
    import importlib.util
    import sys
    if "__path__" in globals():  # the installed package
        return importlib.import_module(__name__ + ".cuarray_alloc")
    if "cuarray_alloc" not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuarray_alloc.py")
        spec = importlib.util.spec_from_file_location("cuarray_alloc", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["cuarray_alloc"] = module
        spec.loader.exec_module(module)
    return sys.modules["cuarray_alloc"]


def cupy_allocator(device: Union[str, Device] = "cuda:0", pool: bool = False, limit: Any = None,
                   memory: str = "device"):
    """A CuPy allocator over a cuarray GPU device, for cupy.cuda.set_allocator:
    CuPy's allocations are then in the device's ledger and under its limit.
    See cuarray_alloc.cupy_allocator."""
    return _alloc_module().cupy_allocator(device, pool=pool, limit=limit, memory=memory)


def use_as_torch_allocator(device: Union[str, Device] = "cuda:0", pool: bool = False, limit: Any = None,
                           memory: str = "device"):
    """Makes cuarray PyTorch's CUDA allocator (CUDAPluggableAllocator over
    libcuarray's cuarray_torch_malloc/free). See cuarray_alloc.use_as_torch_allocator."""
    return _alloc_module().use_as_torch_allocator(device, pool=pool, limit=limit, memory=memory)


def last_allocator_error(clear: bool = False):
    """The message of the CuPy/PyTorch allocator's last error on the calling
    thread (each thread has its own), or None."""
    return _alloc_module().last_allocator_error(clear)


def allocator_stats() -> dict:
    """The CuPy/PyTorch allocator's counts, and its pools' figures."""
    return _alloc_module().allocator_stats()


__all__ += ["cupy_allocator", "use_as_torch_allocator", "last_allocator_error", "allocator_stats"]


def _submodule(name: str):
    """cuarray.NAME, from python/cuarray_NAME.py: a submodule of the
    installed package (setup.py copies the file in as NAME.py), loaded
    here from beside this file in a checkout, under the same name."""
    import importlib
    import importlib.util
    import sys
    full = __name__ + "." + name
    if "__path__" in globals():  # the installed package
        return importlib.import_module(full)
    if full not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuarray_%s.py" % name)
        spec = importlib.util.spec_from_file_location(full, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[full]
            raise
    return sys.modules[full]


# cuarray.plan: httomo's calc_max_slices by cuarray's planner (python/cuarray_plan.py);
# cuarray.testing: check_max_slices, httomo's estimator test (python/cuarray_testing.py).
plan = _submodule("plan")
testing = _submodule("testing")
__all__ += ["plan", "testing"]


# cuarray.pool: stream-ordered pool memory shared between processes (python/cuarray_pool.py).
pool = _submodule("pool")
__all__ += ["pool"]
