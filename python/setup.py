"""Builds the cuarray wheel: the package in cuarray_package/, the module
cuarray.py beside this file (as cuarray/_cuarray.py) with its submodules
(MODULES), and libcuarray.so.

The library is, in this order: the file $CUARRAY_LIB names; a fresh build
of ../libcuarray with the Go toolchain (go on PATH, $GO, or
/usr/local/go/bin/go: go build -buildmode=c-shared, with $CUARRAY_GO_TAGS
as -tags, e.g. cuda); else the prebuilt ../build/libcuarray.so that
`make libcuarray` writes. The wheel is tagged for this platform, as it
carries a native library.
"""

import os
import shutil
import subprocess
import sys

_VENV_HINT = ("with pip install --no-build-isolation the build uses this Python's own packages: make the "
              "venv with Debian's /usr/bin/python3 -m venv --system-site-packages (python3-setuptools, "
              "python3-wheel), or pip install setuptools wheel into it")

try:
    from setuptools import setup
    from setuptools.command.build_py import build_py
    from setuptools.dist import Distribution
except ImportError as e:  # say what is missing in one line, not a traceback
    raise SystemExit("cuarray: building the wheel needs setuptools, which %s lacks (%s): %s"
                     % (sys.executable, e, _VENV_HINT))


def _can_build_wheels():
    """bdist_wheel comes with setuptools >= 70.1, else from the wheel package."""
    for mod in ("setuptools.command.bdist_wheel", "wheel.bdist_wheel"):
        try:
            __import__(mod)
            return True
        except ImportError:
            pass
    return False


# pip runs dist_info (its metadata step needs bdist_wheel) and then bdist_wheel
if {"bdist_wheel", "dist_info", "editable_wheel"} & set(sys.argv) and not _can_build_wheels():
    # without this, setuptools says only "invalid command 'bdist_wheel'"
    raise SystemExit("cuarray: building the wheel needs the wheel package, which %s lacks: %s"
                     % (sys.executable, _VENV_HINT))

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _go():
    for cand in (os.environ.get("GO"), shutil.which("go"), "/usr/local/go/bin/go"):
        if cand and os.path.exists(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def _library(dest):
    """Puts libcuarray.so at dest; says where it came from."""
    given = os.environ.get("CUARRAY_LIB")
    if given:
        if not os.path.exists(given):
            raise SystemExit("cuarray: CUARRAY_LIB=%s: no such file" % given)
        shutil.copyfile(given, dest)
        return "CUARRAY_LIB=" + given
    go = _go()
    if go and os.path.isdir(os.path.join(ROOT, "libcuarray")):
        cmd = [go, "build", "-buildmode=c-shared", "-ldflags=-s -w", "-o", dest]
        if os.environ.get("CUARRAY_GO_TAGS"):
            cmd += ["-tags", os.environ["CUARRAY_GO_TAGS"]]
        cmd.append("./libcuarray")
        # pip shows this line with -v only; without it, "Building wheel ... started" stays
        # on screen while Go compiles (about a minute on two cores, seconds with a warm cache).
        print("cuarray: compiling the Go library (about a minute the first time): " + " ".join(cmd),
              file=sys.stderr, flush=True)
        subprocess.run(cmd, cwd=ROOT, check=True)
        header = os.path.splitext(dest)[0] + ".h"
        if os.path.exists(header):
            os.remove(header)
        return "built with " + " ".join(cmd)
    prebuilt = os.path.join(ROOT, "build", "libcuarray.so")
    if os.path.exists(prebuilt):
        shutil.copyfile(prebuilt, dest)
        return "prebuilt " + prebuilt
    raise SystemExit("cuarray: no libcuarray.so to put in the wheel: set CUARRAY_LIB to one, install Go "
                     "(go on PATH, or $GO) to build it from %s, or run `make libcuarray` there first"
                     % os.path.join(ROOT, "libcuarray"))


# MODULES are the files beside setup.py that the package carries, and their
# names in it: cuarray.py runs in the package's namespace (__init__.py);
# cuarray_NAME.py is the submodule cuarray.NAME; cuarray_alloc.py keeps its name.
MODULES = [
    ("cuarray.py", "_cuarray.py"),
    ("cuarray_plan.py", "plan.py"),
    ("cuarray_testing.py", "testing.py"),
    ("cuarray_alloc.py", "cuarray_alloc.py"),
    ("cuarray_pool.py", "pool.py"),
]


class BuildPy(build_py):
    """build_py that adds the module and the library to the package."""

    def run(self):
        super().run()
        pkg = os.path.join(self.build_lib, "cuarray")
        os.makedirs(pkg, exist_ok=True)
        # The module and its submodules are single files beside this one
        # (the checkout imports them from there): copied in, under the
        # names the package gives them.
        for src, dst in MODULES:
            shutil.copyfile(os.path.join(HERE, src), os.path.join(pkg, dst))
        source = _library(os.path.abspath(os.path.join(pkg, "libcuarray.so")))
        self.announce("cuarray: libcuarray.so: " + source, level=2)


class BinaryDistribution(Distribution):
    """A distribution with a native library: the wheel is platform-specific."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution)
