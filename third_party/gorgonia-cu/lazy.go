package cu

// cuarray's patch, not upstream's: the driver library is loaded by Init (lazy_linux.c).

// LoadError is a driver library that could not be loaded: on Linux, dlopen of libcuda.so.1
// failed (the CUDA driver is not installed). Init returns it; every driver call then returns
// NotInitialized.
type LoadError struct {
	Msg string // the dynamic linker's message
}

func (e *LoadError) Error() string { return "load the CUDA driver: " + e.Msg }

// ReplaceWithCuarraysThirdPartyCopy marks this copy: cuarray's device/cuda refers to it
// (cu_needs_replace.go), so a module that builds cuarray with -tags cuda against upstream
// gorgonia.org/cu, without the replace directive that points at this copy, fails with an
// error that names it first.
const ReplaceWithCuarraysThirdPartyCopy = true
