"""cuarray.plan: httomo's ``calc_max_slices``, answered by cuarray's Go planner.

httomo asks every GPU method how many slices of a 3-D array fit in the
memory left on the device::

    max_slices, out_dtype = calc_max_slices(slice_dim, other_dims, dtype, available_memory, **kwargs)

cuarray's methods (``methods()``) answer the same question here, computed by
the planner in libcuarray::

    import numpy as np, cuarray
    cuarray.plan.calc_max_slices("identity", 0, (10, 20), np.float32, 14450, raw=True)   # (9, dtype('float32'))
    cuarray.plan.calc_max_slices("identity", 0, (10, 20), np.float32, 14450)             # (8, dtype('float32'))

``raw=True`` is httomo's convention: bytes as the arrays hold them,
14450 // (800 + 800) = 9. The default counts what the device takes: every
allocation rounded up to 256 bytes, so two slabs of 9 × 800 = 7200 bytes
take 2 × 7424 > 14450 and 8 slices fit. Neither divides by an overhead
factor: the caller passes the memory it means.

``estimator(name)`` is a method's estimator with httomo's exact signature,
and ``memory_model`` turns your own description of a method's memory (bytes
per slice and fixed bytes, from the same arguments) into one.
"""

from __future__ import annotations

import ctypes
import json
import operator
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import cuarray

__all__ = ["calc_max_slices", "estimator", "memory_model", "methods", "explain"]

_SIGNATURES = {
    "cuarray_plan_max_slices": [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)],
    "cuarray_plan_methods": [ctypes.POINTER(ctypes.c_void_p)],
}


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


def _ask(request: dict) -> dict:
    """Sends a plan request to the library and returns its answer; what the
    planner refuses as the caller's mistake is a ValueError."""
    try:
        return json.loads(cuarray._string(_entry("cuarray_plan_max_slices"), json.dumps(request).encode()))
    except cuarray.CuarrayError as e:
        msg = str(e)
        if msg.startswith("bad request: "):
            raise ValueError(msg[len("bad request: "):]) from None
        raise


def methods() -> List[str]:
    """The names of the methods the planner knows, sorted."""
    return json.loads(cuarray._string(_entry("cuarray_plan_methods")))


def _count(x: Any, what: str) -> int:
    """x as a non-negative int (Python or NumPy integers, not bool or float)."""
    if isinstance(x, bool):
        raise TypeError("%s must be an integer, not %r" % (what, x))
    try:
        v = operator.index(x)
    except TypeError:
        raise TypeError("%s must be an integer, not %r" % (what, x)) from None
    if v < 0:
        raise ValueError("%s must be at least 0, not %d" % (what, v))
    if v > (1 << 63) - 1:
        raise ValueError("%s %d is more than the planner counts (2**63 - 1)" % (what, v))
    return v


def _numpy_dtype(dtype: Any):
    """dtype as a numpy.dtype: a dtype, a scalar type (np.float32), a scalar
    (np.float32(), as httomo's documentation passes it) or a name."""
    import numpy
    if isinstance(dtype, (numpy.number, numpy.bool_)):
        return dtype.dtype
    return numpy.dtype(cuarray._dtype_name(dtype))


def _request(slice_dim: Any, other_dims: Any, dtype: Any, available_memory: Any, raw: bool) -> dict:
    sd = _count(slice_dim, "slice_dim")
    if sd > 2:
        raise ValueError("slice_dim %d: want 0, 1 or 2, an axis of a 3-D array" % sd)
    try:
        dims = list(other_dims)
    except TypeError:
        raise TypeError("other_dims must be the two other axes' sizes, as (10, 20), not %r" % (other_dims,)) from None
    if len(dims) != 2:
        raise ValueError("other_dims %r: want the two other axes' sizes, as (10, 20)" % (other_dims,))
    return {
        "slice_dim": sd,
        "other_dims": [_count(d, "other_dims[%d]" % i) for i, d in enumerate(dims)],
        "dtype": _numpy_dtype(dtype).name,
        "available_memory": _count(available_memory, "available_memory"),
        "raw": bool(raw),
    }


def _method_parameters(method: str, name: str) -> Optional[List[str]]:
    """None when the method takes a parameter called name (or the planner
    does not say), else the parameters it does take: the planner is asked
    about name alone, and its "unknown parameter" answer lists them."""
    try:
        _ask({"method": method, "slice_dim": 0, "other_dims": [1, 1], "dtype": "float32",
              "available_memory": 0, "raw": True, "params": {name: 1}})
    except ValueError as e:
        m = re.search(r'unknown parameter "%s" \(it takes (none|\[([^\]]*)\])\)' % re.escape(name), str(e))
        if m:
            return m.group(2).split() if m.group(2) is not None else []
    return None


def _params(kwargs: Mapping[str, Any], method: str, caller: str, own: Sequence[str] = ()) -> Dict[str, int]:
    """kwargs as the method's integer parameters. A keyword whose value is
    not an integer and that the method does not take is a TypeError naming
    it and the keywords caller does take: its own and the method's
    parameters (a misspelt raw=True, say)."""
    params = {}
    for k, v in kwargs.items():
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            takes = _method_parameters(method, k) if isinstance(method, str) else None
            if takes is not None:
                keywords = ", ".join(list(own) + takes) or "none"
                raise TypeError("%s: unknown keyword %s=%r: it takes %s (%s's parameters: %s)"
                                % (caller, k, v, keywords, method, ", ".join(takes) or "none"))
            raise TypeError("parameter %s=%r: cuarray's methods take integer parameters" % (k, v))
        params[k] = operator.index(v)
        if not -(1 << 63) <= params[k] < (1 << 63):
            raise ValueError("parameter %s=%d is past what the planner counts (64-bit integers)" % (k, params[k]))
    return params


def calc_max_slices(method: str, slice_dim: int, other_dims: Sequence[int], dtype: Any, available_memory: int,
                    raw: bool = False, **kwargs: int) -> Tuple[int, Any]:
    """The most slices along slice_dim (0, 1 or 2) that one run of the method
    fits in available_memory bytes of the device, given the sizes of the two
    other axes, in order, and the input dtype; and the dtype of the output.

    The signature and semantics are httomo's calc_max_slices, with the
    method's name first: kwargs are the method's parameters (integers, as
    fbp.backproject's size=512); 0 slices means not even one fits. raw=True
    counts bytes as httomo does (unrounded); the default counts each
    allocation as the device takes it (rounded up to 256 bytes). A method,
    axis, dtype or parameter the planner does not take is a ValueError.
    """
    import numpy
    if not isinstance(method, str):
        raise TypeError("method must be a method's name (cuarray.plan.methods()), not %r" % (method,))
    req = _request(slice_dim, other_dims, dtype, available_memory, raw)
    req["method"] = method
    req["params"] = _params(kwargs, method, "calc_max_slices", ["raw"])
    a = _ask(req)
    return a["max_slices"], numpy.dtype(a["out_dtype"])


def explain(method: str, slice_dim: int, other_dims: Sequence[int], dtype: Any, available_memory: int,
            **kwargs: int) -> str:
    """How the raw answer of calc_max_slices follows from the method's
    allocations: "input 800 + output 800 = 1600 bytes per slice; 14450 //
    1600 = 9 slices"."""
    req = _request(slice_dim, other_dims, dtype, available_memory, True)
    req["method"] = method
    req["params"] = _params(kwargs, method, "explain")
    a = _ask(req)
    return a.get("arithmetic") or "%d bytes available fit %d slices" % (req["available_memory"], a["max_slices"])


def estimator(method: str, raw: bool = False) -> Callable[..., Tuple[int, Any]]:
    """The estimator of a method the planner knows (a built-in one, or one a
    Go program registered in the library), with httomo's signature:
    ``estimator("fbp.filter")(0, (180, 256), np.float32, 2**30)``."""
    if method not in methods():
        raise ValueError("method %r: the planner knows %s" % (method, ", ".join(methods())))

    def calc(slice_dim: int, other_dims: Sequence[int], dtype: Any, available_memory: int, **kwargs: int) -> Tuple[int, Any]:
        return calc_max_slices(method, slice_dim, other_dims, dtype, available_memory, raw=raw, **kwargs)

    calc.__name__ = "calc_max_slices_" + method.replace(".", "_")
    calc.__doc__ = "httomo's calc_max_slices for cuarray's %s (%s bytes)." % (method, "raw" if raw else "device")
    return calc


_Model = Callable[..., Union[Tuple[int, int], Mapping[str, Union[int, Tuple[int, int]]]]]


def _terms(result: Any) -> List[dict]:
    """A memory model's result as the planner's terms."""
    if isinstance(result, Mapping):
        items = list(result.items())
    elif isinstance(result, tuple) and len(result) == 2:
        items = [("model", result)]
    else:
        raise TypeError("a memory model returns (bytes_per_slice, fixed_bytes) or a dict of allocations "
                        "{name: bytes_per_slice or (bytes_per_slice, fixed_bytes)}, not %r" % (result,))
    terms = []
    for name, v in items:
        per, fixed = (v, 0) if not isinstance(v, tuple) else v if len(v) == 2 else (None, None)
        if per is None:
            raise TypeError("allocation %r: want bytes_per_slice or (bytes_per_slice, fixed_bytes), not %r" % (name, v))
        terms.append({"name": str(name), "per_slice_bytes": _count(per, "%s: bytes per slice" % name),
                      "fixed_bytes": _count(fixed, "%s: fixed bytes" % name)})
    return terms


def memory_model(fn: Optional[_Model] = None, *, out_dtype: Any = None, raw: bool = False):
    """Turns a description of a method's memory into an estimator with
    httomo's signature, answered by cuarray's planner. Use it as a decorator:

        @cuarray.plan.memory_model(raw=True)
        def my_method_memory(slice_dim, other_dims, dtype, **kwargs):
            slab = other_dims[0] * other_dims[1] * np.dtype(dtype).itemsize
            return {"input": slab, "output": slab, "filter": (0, 4096)}

        my_method_memory(0, (10, 20), np.float32, 14450)   # (6, dtype('float32')): (14450 - 4096) // 1600

    The function gets httomo's arguments less the memory and returns the
    bytes of each allocation live at the method's peak: a dict of name ->
    bytes per slice, or name -> (bytes per slice, fixed bytes), or one pair
    (bytes_per_slice, fixed_bytes) for all of them. raw=True counts them
    as given; the default rounds each allocation up to 256 bytes, as the
    device does. out_dtype is the output's dtype: None (the input's), a
    dtype, or a function of (dtype, **kwargs).
    """
    def wrap(model: _Model):
        def calc(slice_dim: int, other_dims: Sequence[int], dtype: Any, available_memory: int, **kwargs: Any) -> Tuple[int, Any]:
            import numpy
            req = _request(slice_dim, other_dims, dtype, available_memory, raw)
            dt = _numpy_dtype(dtype)
            req["terms"] = _terms(model(req["slice_dim"], tuple(req["other_dims"]), dt, **kwargs))
            out = dt if out_dtype is None else out_dtype(dt, **kwargs) if callable(out_dtype) and not isinstance(out_dtype, type) else out_dtype
            req["out_dtype"] = _numpy_dtype(out).name
            a = _ask(req)
            return a["max_slices"], numpy.dtype(a["out_dtype"])

        calc.__name__ = getattr(model, "__name__", "calc_max_slices")
        calc.__doc__ = getattr(model, "__doc__", None)
        calc.__wrapped__ = model
        return calc

    return wrap if fn is None else wrap(fn)
