// The destructor of the DLPack capsules the Python module makes. A capsule
// still named "dltensor" or "dltensor_versioned" when it is destroyed was
// never consumed, so its tensor is deleted here; a consumer renames it
// ("used_dltensor...") and deletes the tensor itself. The Python C API is
// found in the running interpreter with dlsym, so the library does not
// link against any one Python.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#include "../interop/dlpack.h"

typedef int (*is_valid_fn)(void *capsule, const char *name);
typedef void *(*get_pointer_fn)(void *capsule, const char *name);

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
