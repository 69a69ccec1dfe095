"""cuarray for Python, as pip installs it.

The package is the module python/cuarray.py of the cuarray checkout
(installed beside this file as _cuarray.py and run in this namespace, so
``cuarray.X`` is exactly what it is in the checkout), with the C library
libcuarray.so that the build put beside it. $CUARRAY_LIB, when set, still
names another library; otherwise it is set to the bundled one, which
processes started from this one inherit.
"""

import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
if _os.path.exists(_os.path.join(_here, "libcuarray.so")):
    _os.environ.setdefault("CUARRAY_LIB", _os.path.join(_here, "libcuarray.so"))
_impl = _os.path.join(_here, "_cuarray.py")
with open(_impl, encoding="utf-8") as _f:
    exec(compile(_f.read(), _impl, "exec"), globals())
del _f, _impl, _here
