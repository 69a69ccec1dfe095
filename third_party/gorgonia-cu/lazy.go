package cu

// cuarray's patch, not upstream's: the driver library is loaded by Init (lazy_linux.c).

// LoadError is a driver library that could not be loaded: on Linux, dlopen of libcuda.so.1
// failed (the CUDA driver is not installed). Init returns it; every driver call then returns
// NotInitialized.
type LoadError struct {
	Msg string // the dynamic linker's message
}

func (e *LoadError) Error() string { return "load the CUDA driver: " + e.Msg }

// YourGoModNeeds_replace_gorgonia_org_cu_v0_9_6_with_cuarray_third_party_gorgonia_cu marks
// this copy: cuarray's device/cuda refers to it (cu_needs_replace.go), so a module that builds
// cuarray with -tags cuda against upstream gorgonia.org/cu, without the replace directive that
// points at this copy, fails with this name, which says what to add, as its first error.
const YourGoModNeeds_replace_gorgonia_org_cu_v0_9_6_with_cuarray_third_party_gorgonia_cu = true
