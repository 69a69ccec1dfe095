// cuarray's patch, not upstream's: load libcuda.so.1 when Init is called, not when the program
// starts, so that a program built with this package starts on a machine without the CUDA driver.
//
// The package is linked without -lcuda. For every driver function in lazy_names.h this file
// defines the function's symbol (cuMemAlloc_v2, as cuda.h names it) as a one-instruction
// stub that jumps through a slot. The slots start at notLoaded, which returns
// CUDA_ERROR_NOT_INITIALIZED; cuarray_cu_load (from Init) dlopens libcuda.so.1 and points
// every slot at the driver's function (or at its notFound function, CUDA_ERROR_NOT_FOUND, for one
// this driver lacks). A stub only jumps: the arguments are the caller's, untouched, whatever the function's
// signature, so the stubs need no prototypes. The symbols are hidden: a shared library built
// with this package (libcuarray.so) does not export them over the driver's.

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

#include "lazy_names.h"

#define CUARRAY_STR_(x) #x
#define CUARRAY_STR(x) CUARRAY_STR_(x)

static CUresult notLoaded(void) { return CUDA_ERROR_NOT_INITIALIZED; }

// A function the driver lacks answers CUDA_ERROR_NOT_FOUND through a slot of its own, which
// notes the function on the calling thread first, so the caller can tell it from the
// driver's own CUDA_ERROR_NOT_FOUND (a kernel name a module lacks) and name it
// (cuarray_cu_take_missing).
static __thread int missing; // index + 1 of the last missing function this thread called

#define CUARRAY_MISSING(i, fn) \
	static CUresult notFound##i(void) { missing = (i) + 1; return CUDA_ERROR_NOT_FOUND; }
CUARRAY_LAZY_FUNCS(CUARRAY_MISSING)
#define CUARRAY_MISSING_ADDR(i, fn) (void *)notFound##i,
static void *const notFound[CUARRAY_LAZY_COUNT] = {CUARRAY_LAZY_FUNCS(CUARRAY_MISSING_ADDR)};

// A function that a driver linked into the program (UseDriver) knows but does not implement
// answers CUDA_ERROR_NOT_SUPPORTED through a slot of its own, which notes the function on the
// calling thread as notFound's do, so that TakeMissing names it too.
#define CUARRAY_UNIMPLEMENTED(i, fn) \
	static CUresult unimplemented##i(void) { missing = (i) + 1; return CUDA_ERROR_NOT_SUPPORTED; }
CUARRAY_LAZY_FUNCS(CUARRAY_UNIMPLEMENTED)
#define CUARRAY_UNIMPLEMENTED_ADDR(i, fn) (void *)unimplemented##i,
static void *const unimplemented[CUARRAY_LAZY_COUNT] = {CUARRAY_LAZY_FUNCS(CUARRAY_UNIMPLEMENTED_ADDR)};

__attribute__((visibility("hidden"))) void *cuarray_cu_slots[CUARRAY_LAZY_COUNT] = {
	[0 ... CUARRAY_LAZY_COUNT - 1] = (void *)notLoaded,
};

#define CUARRAY_NAME(i, fn) CUARRAY_STR(fn),
static const char *const names[CUARRAY_LAZY_COUNT] = {CUARRAY_LAZY_FUNCS(CUARRAY_NAME)};

#if defined(__x86_64__)
#define CUARRAY_STUB(i, fn)                                                   \
	__asm__(".text\n.globl " CUARRAY_STR(fn) "\n.hidden " CUARRAY_STR(fn) "\n" \
		".type " CUARRAY_STR(fn) ", @function\n" CUARRAY_STR(fn) ":\n"          \
		"\tjmp *cuarray_cu_slots+" #i "*8(%rip)\n"                               \
		".size " CUARRAY_STR(fn) ", .-" CUARRAY_STR(fn) "\n");
#elif defined(__aarch64__)
#define CUARRAY_STUB(i, fn)                                                   \
	__asm__(".text\n.globl " CUARRAY_STR(fn) "\n.hidden " CUARRAY_STR(fn) "\n" \
		".type " CUARRAY_STR(fn) ", %function\n" CUARRAY_STR(fn) ":\n"          \
		"\tadrp x16, cuarray_cu_slots+" #i "*8\n"                                \
		"\tldr x16, [x16, :lo12:cuarray_cu_slots+" #i "*8]\n"                    \
		"\tbr x16\n"                                                             \
		".size " CUARRAY_STR(fn) ", .-" CUARRAY_STR(fn) "\n");
#else
#error "gorgonia.org/cu (cuarray's copy): lazy loading of libcuda has stubs for amd64 and arm64 only"
#endif

CUARRAY_LAZY_FUNCS(CUARRAY_STUB)

// cuarray_cu_count, cuarray_cu_name, cuarray_cu_fill and cuarray_cu_fill_unimplemented let Init
// take the slots' functions from a driver linked into the program (UseDriver) instead of
// libcuda.so.1.
int cuarray_cu_count(void) { return CUARRAY_LAZY_COUNT; }
const char *cuarray_cu_name(int i) { return names[i]; }
void cuarray_cu_fill(int i, void *f) {
	__atomic_store_n(&cuarray_cu_slots[i], f ? f : notFound[i], __ATOMIC_RELEASE);
}
void cuarray_cu_fill_unimplemented(int i) {
	__atomic_store_n(&cuarray_cu_slots[i], unimplemented[i], __ATOMIC_RELEASE);
}

// cuarray_cu_take_missing returns the name of the function the driver lacks or does not
// implement that this thread called last, or NULL, and forgets it.
const char *cuarray_cu_take_missing(void) {
	int i = missing;
	missing = 0;
	return i > 0 ? names[i - 1] : NULL;
}

// cuarray_cu_load opens libcuda.so.1 and fills the slots. It returns 0, or -1 with the dynamic
// linker's message in err. Init calls it once, before cuInit.
int cuarray_cu_load(char *err, size_t n) {
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, n, "%s", e ? e : "dlopen libcuda.so.1 failed");
		return -1;
	}
	for (int i = 0; i < CUARRAY_LAZY_COUNT; i++) {
		void *f = dlsym(h, names[i]);
		__atomic_store_n(&cuarray_cu_slots[i], f ? f : notFound[i], __ATOMIC_RELEASE);
	}
	return 0;
}
