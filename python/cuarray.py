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
"""

import ctypes
import json
import os

__all__ = ["Array", "Device", "device", "empty", "zeros", "asarray", "from_dlpack", "ipc_open", "CuarrayError"]

# DLPack device types (dlpack.h)
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_CAPSULE = b"dltensor"
_CAPSULE_VERSIONED = b"dltensor_versioned"
_CAPSULE_USED = b"used_dltensor"
_CAPSULE_USED_VERSIONED = b"used_dltensor_versioned"
_DLPACK_VERSION = (1, 1)


class CuarrayError(RuntimeError):
    """An error the cuarray library returned."""


def _find_library():
    path = os.environ.get("CUARRAY_LIB")
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    local = os.path.join(here, os.pardir, "build", "libcuarray.so")
    if os.path.exists(local):
        return local
    return "libcuarray.so"


def _load():
    lib = ctypes.CDLL(_find_library())
    u64, p_u64 = ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)
    p_str = ctypes.POINTER(ctypes.c_void_p)
    sig = {
        "cuarray_device": [ctypes.c_char_p, p_u64],
        "cuarray_empty": [u64, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int, p_u64],
        "cuarray_view": [u64, ctypes.c_char_p, p_u64],
        "cuarray_release": [u64],
        "cuarray_copy": [u64, u64],
        "cuarray_to_host": [u64, ctypes.c_void_p, ctypes.c_int64],
        "cuarray_from_host": [u64, ctypes.c_void_p, ctypes.c_int64],
        "cuarray_info": [u64, p_str],
        "cuarray_interface": [u64, ctypes.c_size_t, ctypes.c_int, p_str],
        "cuarray_import_interface": [u64, ctypes.c_char_p, p_u64],
        "cuarray_to_dlpack": [u64, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)],
        "cuarray_from_dlpack": [u64, ctypes.c_void_p, ctypes.c_int, p_u64],
        "cuarray_ledger": [u64, p_str],
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
    return lib


_lib = _load()

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


def _check(err):
    if err:
        msg = ctypes.string_at(err).decode()
        _lib.cuarray_free_string(err)
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


class Device:
    """A cuarray device: "sim:N" (emulated, host memory) or "cuda:N"."""

    def __init__(self, handle, spec):
        self._h = handle
        self.spec = spec

    def ledger(self):
        """The device's ledger as a dict: memory per kind, copies per direction and path."""
        return json.loads(_string(_lib.cuarray_ledger, self._h))

    def __repr__(self):
        return "cuarray.Device(%r)" % self.spec


_devices = {}


def device(spec=""):
    """Opens (once) and returns the device for spec; "" is cuda:0 when a GPU answers, else sim:0."""
    if spec not in _devices:
        _devices[spec] = Device(_handle(_lib.cuarray_device, spec.encode()), spec)
    return _devices[spec]


def _device_of_handle(h):
    for d in _devices.values():
        if d._h == h:
            return d
    return None


class Array:
    """A cuarray DevArray: a pointer, shape, byte strides, dtype and device."""

    def __init__(self, handle, device=None, keep=None):
        self._h = handle
        self._device = device
        self._keep = keep  # what must outlive the array: its base array, a foreign object
        self._info = json.loads(_string(_lib.cuarray_info, handle))

    def __del__(self):
        h, self._h = getattr(self, "_h", 0), 0
        if h and _lib is not None:
            _check(_lib.cuarray_release(h))

    # --- description ---
    shape = property(lambda self: tuple(self._info["shape"]))
    strides = property(lambda self: tuple(self._info["strides"]))
    dtype = property(lambda self: self._info["dtype"])
    typestr = property(lambda self: self._info["typestr"])
    itemsize = property(lambda self: self._info["itemsize"])
    ndim = property(lambda self: len(self._info["shape"]))
    ptr = property(lambda self: self._info["ptr"])
    readonly = property(lambda self: self._info["readonly"])
    device = property(lambda self: self._info["device"])

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self):
        return self.size * self.itemsize

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self):
        return "cuarray.Array(shape=%s, dtype=%s, device=%s, strides=%s)" % (self.shape, self.dtype, self.device, self.strides)

    def ledger(self):
        """The ledger of the array's device (an empty dict for host memory with no device)."""
        return self._device.ledger() if self._device else {}

    # --- views: no copy, no allocation ---
    def _view(self, **op):
        return Array(_handle(_lib.cuarray_view, self._h, json.dumps(op).encode()), self._device, keep=self)

    @property
    def T(self):
        return self._view(op="transpose")

    def transpose(self, *axes):
        if not axes:
            return self.T
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return self._view(op="permute", axes=list(axes))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return self._view(op="reshape", shape=list(shape))

    def as_readonly(self):
        return self._view(op="readonly")

    def __getitem__(self, key):
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
            elif isinstance(k, int):
                if k < 0:
                    k += n
                if not 0 <= k < n:
                    raise IndexError("index %d out of range for axis %d of length %d" % (k, axis, n))
                out = out._view(op="index", axis=axis, start=k)
            else:
                raise TypeError("cuarray indices are ints, slices and ..., not %r" % (k,))
        return out

    # --- data: counted copies ---
    def to_bytes(self):
        """The elements, packed in C order, copied to a new bytes object."""
        buf = ctypes.create_string_buffer(self.nbytes)
        _check(_lib.cuarray_to_host(self._h, buf, self.nbytes))
        return buf.raw

    def copy_from(self, data):
        """Copies the elements from a bytes-like object packed in C order."""
        mv = memoryview(data).cast("B")
        if len(mv) != self.nbytes:
            raise ValueError("%d bytes for an array of %d" % (len(mv), self.nbytes))
        buf = (ctypes.c_char * len(mv)).from_buffer_copy(mv) if mv.readonly else (ctypes.c_char * len(mv)).from_buffer(mv)
        _check(_lib.cuarray_from_host(self._h, buf, self.nbytes))

    def copy_(self, src):
        """Copies src (a cuarray Array of the same shape) into this array on the device."""
        _check(_lib.cuarray_copy(self._h, src._h))

    def ipc_export(self):
        """A JSON descriptor (IPC handle, offset, layout) that another process
        opens with cuarray.ipc_open. Keep this array alive while it is used."""
        return _string(_lib.cuarray_ipc_export, self._h)

    # --- interchange: no copy ---
    @property
    def __array_interface__(self):
        if not self._info["host_accessible"]:
            raise AttributeError("__array_interface__: %s memory is not host memory (use __cuda_array_interface__)" % self.device)
        return _interface(json.loads(_string(_lib.cuarray_interface, self._h, 0, 1)))

    @property
    def __cuda_array_interface__(self):
        if self._info["kind"] != "cuda":
            raise AttributeError("__cuda_array_interface__: %s memory is not CUDA device memory (use __array_interface__)" % self.device)
        return _interface(json.loads(_string(_lib.cuarray_interface, self._h, 0, 0)))

    def __dlpack_device__(self):
        t, i = self._info["dl_device"]
        return (t, i)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the array: versioned when the consumer asks for
        max_version >= (1, 0), else the legacy "dltensor" one. The memory
        stays alive until the consumer calls the tensor's deleter."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("__dlpack__: the array is on %s, not DLPack device %s" % (self.__dlpack_device__(), dl_device))
        # The library synchronizes the device before every export, so there
        # is no pending producer work for the consumer's stream to wait on.
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        p = ctypes.c_void_p()
        try:
            _check(_lib.cuarray_to_dlpack(self._h, int(versioned), int(bool(copy)), ctypes.byref(p)))
        except CuarrayError as e:
            raise BufferError(str(e)) from None
        return _api.PyCapsule_New(p.value, _CAPSULE_VERSIONED if versioned else _CAPSULE, _capsule_destructor)


def _interface(d):
    """JSON lists back to the tuples the interfaces use."""
    d["shape"] = tuple(d["shape"])
    d["data"] = tuple(d["data"])
    if d.get("strides") is not None:
        d["strides"] = tuple(d["strides"])
    d["descr"] = [tuple(x) for x in d["descr"]]
    return d


def _shape(shape):
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(n) for n in shape)


def empty(shape, dtype="float32", device="sim:0"):
    """A new uninitialised C-contiguous array on the device (counted in its ledger)."""
    return _alloc(shape, dtype, device, zero=False)


def zeros(shape, dtype="float32", device="sim:0"):
    """A new zero-filled C-contiguous array on the device."""
    return _alloc(shape, dtype, device, zero=True)


def _alloc(shape, dtype, spec, zero):
    dev = spec if isinstance(spec, Device) else globals()["device"](spec)
    shape = _shape(shape)
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    try:
        h = _handle(_lib.cuarray_empty, dev._h, str(dtype).encode(), len(shape), dims, int(zero))
    except CuarrayError as e:
        raise ValueError(str(e)) from None
    return Array(h, dev)


def _jsonable(d):
    out = {}
    for k, v in d.items():
        if k in ("shape", "strides", "data") and v is not None:
            v = [int(x) if not isinstance(x, bool) else x for x in v]
        out[k] = v
    return out


def asarray(obj, device=None):
    """An Array over obj's memory, without copying: obj may be a cuarray
    Array, or have __cuda_array_interface__ (CuPy, PyTorch CUDA tensors,
    Numba), __array_interface__ (NumPy) or __dlpack__. The array keeps obj
    alive. CUDA memory is imported on device (default "cuda:N" of the
    memory), after waiting for the producer's stream as the interface asks."""
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
    return device(dev if dev is not None else default)


def from_dlpack(obj, device=None):
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


def ipc_open(descriptor, device=None):
    """Opens an array another process exported with Array.ipc_export, on
    device (default: the exporter's backend and ordinal). No copy; the
    mapping is counted in the device's ledger as kind "ipc" and closed when
    the array is freed."""
    d = json.loads(descriptor)
    dev = _device_arg(device, "%s:%d" % (d["backend"], d["device"]))
    return Array(_handle(_lib.cuarray_ipc_open, dev._h, descriptor.encode() if isinstance(descriptor, str) else descriptor), dev)
