//go:build cgo

// cuarray_torch_malloc_raise: cuarray_torch_malloc for C++ callers that do
// not check the pointer they get, PyTorch's CUDAPluggableAllocator among
// them (its allocate() makes a tensor of whatever malloc returned, NULL
// included). A failure throws, as RAPIDS RMM's allocator does: an exception
// derived from std::bad_alloc whose what() is cuarray's message (the
// figures included), which PyTorch raises in Python as a RuntimeError.
// The message is the calling thread's last error too. Only C++ may call it: an
// exception must not unwind through C, Go or ctypes frames.

#include <cstdint>
#include <new>
#include <string>
#include <sys/types.h>

extern "C" {
// libcuarray's Go entry points (allocator.go, main.go).
char* cuarray_allocator_malloc(int64_t size, int device, uintptr_t stream, uintptr_t* out);
void cuarray_free_string(char* s);
}

namespace {

class cuarray_bad_alloc : public std::bad_alloc {
 public:
  explicit cuarray_bad_alloc(const char* msg) : msg_(msg) {}
  const char* what() const noexcept override { return msg_.c_str(); }

 private:
  std::string msg_;
};

}  // namespace

extern "C" void* cuarray_torch_malloc_raise(ssize_t size, int device, void* stream) {
  uintptr_t p = 0;
  char* err = cuarray_allocator_malloc(static_cast<int64_t>(size), device, reinterpret_cast<uintptr_t>(stream), &p);
  if (err != nullptr) {
    cuarray_bad_alloc e(err);
    cuarray_free_string(err);
    throw e;
  }
  return reinterpret_cast<void*>(p);
}
