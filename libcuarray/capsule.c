// The DLPack capsules of the Python module: cuarray_dlpack_capsule makes
// one, cuarray_capsule_destructor is its destructor. The Python C API is
// found in the running interpreter with dlsym, so the library does not
// link against any one Python.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#include "../interop/dlpack.h"
#include "desc.h"
#include "keep.h"

extern int64_t cuarray_export_token;

typedef int (*is_valid_fn)(void *capsule, const char *name);
typedef void *(*get_pointer_fn)(void *capsule, const char *name);
typedef void *(*capsule_new_fn)(void *pointer, const char *name, void (*destructor)(void *));
typedef void (*incref_fn)(void *object);

// cuarray_capsule_destructor deletes the tensor of a capsule still named
// "dltensor" or "dltensor_versioned" when it is destroyed: it was never
// consumed. A consumer renames it ("used_dltensor...") and deletes the
// tensor itself.
void cuarray_capsule_destructor(void *capsule) {
	static is_valid_fn is_valid;
	static get_pointer_fn get_pointer;
	if (is_valid == NULL || get_pointer == NULL) {
		is_valid = (is_valid_fn)dlsym(RTLD_DEFAULT, "PyCapsule_IsValid");
		get_pointer = (get_pointer_fn)dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer");
		if (is_valid == NULL || get_pointer == NULL) {
			return; // not in a Python process: nothing to do
		}
	}
	if (is_valid(capsule, "dltensor_versioned")) {
		DLManagedTensorVersioned *t = get_pointer(capsule, "dltensor_versioned");
		if (t != NULL && t->deleter != NULL) {
			t->deleter(t);
		}
	} else if (is_valid(capsule, "dltensor")) {
		DLManagedTensor *t = get_pointer(capsule, "dltensor");
		if (t != NULL && t->deleter != NULL) {
			t->deleter(t);
		}
	}
}

// cuarray_dlpack_capsule is Array.__dlpack__ without a call into Go: the
// capsule of a new DLPack tensor (keep.c) of the array d describes, for a
// consumer (a stream handle, -1 for no synchronization, 0 for the host).
// The tensor needs no synchronization while the export token is even (no
// async work pending) or the consumer asks for none. Anything else (work
// pending, the array freed, a layout DLPack cannot say, a read-only array
// for the legacy ABI, no memory) returns None: the caller asks the library
// (cuarray_export_dlpack), which waits as the stream rules say or says what
// is wrong. It must be called with the GIL held (ctypes.PyDLL); it returns
// a new reference, or NULL with the Python error set when PyCapsule_New
// failed (the tensor is deleted then).
void *cuarray_dlpack_capsule(const cuarray_desc *d, int versioned, int64_t consumer) {
	static capsule_new_fn capsule_new;
	static incref_fn incref;
	static void *none;
	if (capsule_new == NULL || incref == NULL || none == NULL) {
		capsule_new = (capsule_new_fn)dlsym(RTLD_DEFAULT, "PyCapsule_New");
		incref = (incref_fn)dlsym(RTLD_DEFAULT, "Py_IncRef");
		none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
		if (capsule_new == NULL || incref == NULL || none == NULL) {
			return NULL; // not in a Python process
		}
	}
	int64_t token = __atomic_load_n(&cuarray_export_token, __ATOMIC_ACQUIRE);
	void *t = NULL;
	if (d == NULL || consumer < -1 || ((token & 1) != 0 && consumer != -1) ||
	    cuarray_keep_export(d, versioned, &t) != CUARRAY_KEEP_OK) {
		incref(none);
		return none;
	}
	void *capsule = capsule_new(t, versioned ? "dltensor_versioned" : "dltensor", cuarray_capsule_destructor);
	if (capsule == NULL) {
		if (versioned) {
			((DLManagedTensorVersioned *)t)->deleter(t);
		} else {
			((DLManagedTensor *)t)->deleter(t);
		}
	}
	return capsule;
}
