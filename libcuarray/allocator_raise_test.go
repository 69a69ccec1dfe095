//go:build cgo

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/internal/toolchain"
)

// harness calls the library as PyTorch's CUDAPluggableAllocator does: it
// loads it, takes the two functions' addresses, casts them to PyTorch's
// prototypes (size_t, not ssize_t) inside std::function and calls them; a
// failed malloc must throw an exception it can catch, with cuarray's message.
const harness = `#include <dlfcn.h>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <new>

int main(int argc, char** argv) {
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!h) { std::printf("dlopen: %s\n", dlerror()); return 1; }
  auto open_device = reinterpret_cast<char* (*)(const char*, uint64_t*)>(dlsym(h, "cuarray_device"));
  auto use = reinterpret_cast<char* (*)(uint64_t, int, int64_t, int*)>(dlsym(h, "cuarray_allocator_use"));
  std::function<void*(size_t, int, void*)> alloc_fn =
      reinterpret_cast<void* (*)(size_t, int, void*)>(dlsym(h, "cuarray_torch_malloc_raise"));
  std::function<void(void*, size_t, int, void*)> free_fn =
      reinterpret_cast<void (*)(void*, size_t, int, void*)>(dlsym(h, "cuarray_torch_free"));
  uint64_t dev = 0;
  int index = -1;
  if (open_device(argv[2], &dev) || use(dev, 1, 1 << 20, &index)) { std::printf("setup failed\n"); return 1; }
  void* p = alloc_fn(1000, index, nullptr);
  std::printf("alloc %d\n", p != nullptr);
  free_fn(p, 1000, index, nullptr);
  std::printf("zero %d\n", alloc_fn(0, index, nullptr) == nullptr);
  try {
    alloc_fn(2 << 20, index, nullptr);
    std::printf("no exception\n");
  } catch (const std::bad_alloc& e) {
    std::printf("bad_alloc: %s\n", e.what());
  }
  std::function<void*(size_t, int, void*)> alloc_null =
      reinterpret_cast<void* (*)(size_t, int, void*)>(dlsym(h, "cuarray_torch_malloc"));
  std::printf("null %d\n", alloc_null(2 << 20, index, nullptr) == nullptr);
  void* q = alloc_fn(1000, index, nullptr);
  std::printf("after %d\n", q != nullptr);
  free_fn(q, 1000, index, nullptr);
  return 0;
}
`

// TestTorchMallocRaise builds the library (or takes the one $CUARRAY_LIB
// names: the bundle's on the GPU machine, which has no go command), and a
// C++ program that calls cuarray_torch_malloc_raise as PyTorch does: a
// malloc past the limit throws a std::bad_alloc whose what() is cuarray's
// message; the rest works.
func TestTorchMallocRaise(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C library and a C++ program: not in -short")
	}
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ to build the C++ caller: " + err.Error())
	}
	lib := toolchain.Library(t, ".", "")
	dir := t.TempDir()
	src := filepath.Join(dir, "harness.cc")
	require.NoError(t, os.WriteFile(src, []byte(harness), 0o644))
	bin := filepath.Join(dir, "harness")
	out, err := exec.Command(cxx, "-std=c++17", "-o", bin, src, "-ldl").CombinedOutput()
	require.NoError(t, err, "building the C++ caller:\n%s", out)
	out, err = exec.Command(bin, lib, "sim:51?mem=64MiB").CombinedOutput()
	require.NoError(t, err, "the C++ caller:\n%s", out)
	got := string(out)
	t.Logf("%s", got)
	assert.Contains(t, got, "alloc 1\n")
	assert.Contains(t, got, "zero 1\n", "0 bytes: NULL, no exception")
	assert.Contains(t, got, "bad_alloc: libcuarray allocator: malloc 2097152 bytes on sim:51", "the exception carries cuarray's message")
	assert.Contains(t, got, "limit is 1.00 MiB", "with the limit")
	assert.Contains(t, got, "null 1\n", "cuarray_torch_malloc returns NULL instead")
	assert.Contains(t, got, "after 1\n", "the allocator works on after the exception")
}
