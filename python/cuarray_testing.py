"""cuarray.testing: httomo's memory-estimator test, for any method, in one line.

httomo checks every estimator the same way: run the method, record the
peak of device memory, ask the estimator how many slices fit in exactly
that much, and require 80-100 % of the slices that were run::

    cuarray.testing.check_max_slices(my_method, my_calc_max_slices, (40, 180, 256), 0, np.float32)

The peak is read from a scope of the device's ledger, which counts every
allocation on the device while the method runs: cuarray's own arrays, and
CuPy's or PyTorch's when cuarray is their allocator.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any, Callable, NamedTuple, Optional, Sequence, Union

import cuarray

__all__ = ["check_max_slices", "measure", "Measurement", "MaxSlicesCheck"]

_SIGNATURES = {
    "cuarray_scope_push": [ctypes.c_uint64, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)],
    "cuarray_scope_pop": [ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p)],
}


def _entry(name: str):
    f = getattr(cuarray._lib, name, None)
    if f is None:
        raise cuarray.CuarrayError("the cuarray library has no %s: rebuild it (make libcuarray)" % name)
    if f.argtypes is None:
        f.argtypes = _SIGNATURES[name]
        f.restype = ctypes.c_void_p
    return f


def _device(device: Union[str, "cuarray.Device"]) -> "cuarray.Device":
    return device if isinstance(device, cuarray.Device) else cuarray.device(device)


class Measurement:
    """What a ledger scope counted: ``peak`` (the most device bytes in use
    above where the scope began), ``allocs``, and the whole ``snapshot``
    (the ledger's JSON) once the scope has ended."""

    def __init__(self, device: "cuarray.Device", name: str) -> None:
        if not isinstance(name, str):
            raise TypeError("measure: name must be a string, not %r" % (name,))
        self.device = device
        self.name = name
        self.snapshot: Optional[dict] = None
        self._h = 0

    @property
    def peak(self) -> int:
        return self._device_stats()["peak"]

    @property
    def allocs(self) -> int:
        return self._device_stats()["allocs"]

    def _device_stats(self) -> dict:
        if self.snapshot is None:
            raise RuntimeError("measure %r: the scope has not ended yet" % self.name)
        return self.snapshot["memory"]["device"]

    def __enter__(self) -> "Measurement":
        if self._h:
            raise RuntimeError("measure %r: already running" % self.name)
        self.snapshot = None
        self._h = cuarray._handle(_entry("cuarray_scope_push"), self.device._h, self.name.encode())
        return self

    def __exit__(self, *exc: Any) -> None:
        # The handle is kept when the pop fails (an inner scope still open):
        # ending the inner one and then this one again still ends it, and
        # the ledger is not left inside a scope nobody can end.
        self.snapshot = json.loads(cuarray._string(_entry("cuarray_scope_pop"), self._h))
        self._h = 0


def measure(device: Union[str, "cuarray.Device"] = "sim:0", name: str = "measure") -> Measurement:
    """A ledger scope on the device, as a context manager::

        with cuarray.testing.measure("sim:0") as m:
            run_the_method()
        m.peak      # the most device bytes in use above the start

    Scopes are the device's, not the thread's: everything allocated on the
    device while it is open counts in it. Nested scopes end inner first."""
    return Measurement(_device(device), name)


class MaxSlicesCheck(NamedTuple):
    """The figures of a check_max_slices that passed."""
    slices: int       # slices the method ran on (shape[slice_dim])
    peak: int         # device bytes the run took at its peak, the input included
    estimate: int     # what the estimator said fits in peak bytes
    ratio: float      # estimate / slices
    out_dtype: Any    # the estimator's output dtype


def _random(shape, dtype):
    """Fresh random data: floats in [0, 1), integers over their range."""
    import numpy
    rng = numpy.random.default_rng()
    dt = numpy.dtype(dtype)
    if dt.kind == "f":
        return rng.random(shape).astype(dt)
    if dt.kind == "c":
        return (rng.random(shape) + 1j * rng.random(shape)).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dt)
    info = numpy.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


def _dtype_of(x: Any) -> Any:
    """The NumPy dtype of an array of cuarray, NumPy, CuPy or PyTorch
    (torch.float32 is float32), or None when it has none NumPy knows."""
    import numpy
    dt = getattr(x, "dtype", None)
    if dt is None:
        return None
    for cand in (dt, str(dt).replace("torch.", "")):
        try:
            return numpy.dtype(cand)
        except (TypeError, ValueError):
            continue
    return None


def _release(x: Any) -> None:
    free = getattr(x, "free", None)
    if callable(free):
        free()


def check_max_slices(method_fn: Callable[..., Any], estimator: Callable[..., Any], shape: Sequence[int], slice_dim: int,
                     dtype: Any, *, device: Union[str, "cuarray.Device"] = "sim:0",
                     make_input: Optional[Callable[[Any], Any]] = None, min_ratio: float = 0.8, max_ratio: float = 1.0,
                     **kwargs: Any) -> MaxSlicesCheck:
    """httomo's estimator test. Makes fresh random input of shape (3-D) and
    dtype on the device, runs method_fn(input, **kwargs) inside a scope of
    the device's ledger, takes the scope's peak of device bytes (input
    included), asks estimator(slice_dim, other_dims, dtype, peak, **kwargs)
    and asserts min_ratio <= estimate / shape[slice_dim] <= max_ratio
    (httomo's 80-100 %), with a message that gives both numbers. The
    output dtype must be the estimator's too.

    make_input turns the NumPy input into the method's array: by default a
    cuarray array on device; for a CuPy method with cuarray as CuPy's
    allocator, cupy.asarray (its allocation then counts on the device's
    ledger). device, make_input, min_ratio and max_ratio are this
    function's; every other keyword goes to the method and the estimator.
    Returns the figures; raises AssertionError when the estimate is out of
    bounds.
    """
    import numpy
    dev = _device(device)
    shape = tuple(_index(n, "shape") for n in shape)
    if len(shape) != 3:
        raise ValueError("shape %r: want a 3-D shape" % (shape,))
    if min(shape) < 1:
        raise ValueError("shape %r: want sizes of at least 1 (the method runs on real data)" % (shape,))
    sd = _index(slice_dim, "slice_dim")
    if not 0 <= sd <= 2:
        raise ValueError("slice_dim %d: want 0, 1 or 2" % sd)
    dt = numpy.dtype(cuarray._dtype_name(dtype))
    data = _random(shape, dt)
    slices = shape[sd]
    out_dtype = None
    with measure(dev, "check_max_slices") as m:
        if make_input is None:
            inp = cuarray.empty(shape, dt, device=dev)
            inp.copy_from(data)
        else:
            inp = make_input(data)
        out = method_fn(inp, **kwargs)
        out_dtype = _dtype_of(out)
        if out is not inp:
            _release(out)
        _release(inp)
        out = inp = None
    peak = m.peak
    other = tuple(n for i, n in enumerate(shape) if i != sd)
    estimate, est_dtype = estimator(sd, other, dt, peak, **kwargs)
    ratio = estimate / slices if slices else float("inf")
    figures = ("estimate %d slices in %d bytes (the run's peak on %s), actual %d slices: estimate/actual = %.3f"
               % (estimate, peak, dev.spec or "the default device", slices, ratio))
    if ratio > max_ratio:
        raise AssertionError("check_max_slices: %s, want at most %.2f: the estimator over-estimates (the method "
                             "takes more memory than it counts)" % (figures, max_ratio))
    if ratio < min_ratio:
        raise AssertionError("check_max_slices: %s, want at least %.2f: the estimator under-estimates (it counts "
                             "more memory than the method takes)" % (figures, min_ratio))
    if out_dtype is not None and numpy.dtype(est_dtype) != out_dtype:
        raise AssertionError("check_max_slices: the estimator says the output is %s, the method made %s"
                             % (numpy.dtype(est_dtype), out_dtype))
    return MaxSlicesCheck(slices, peak, estimate, ratio, numpy.dtype(est_dtype))


def _index(x: Any, what: str) -> int:
    """x as an int (Python or NumPy integer), else a TypeError naming what."""
    import operator
    if isinstance(x, bool):
        raise TypeError("%s: want integers, not %r" % (what, x))
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError("%s: want integers, not %r" % (what, x)) from None
