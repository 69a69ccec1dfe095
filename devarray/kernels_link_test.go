package devarray_test

// The pack kernels, which DevArray's copies of strided views use
// (devarray.RegisterPacker), come from package kernels.
import _ "github.com/cuarray/cuarray/kernels"
