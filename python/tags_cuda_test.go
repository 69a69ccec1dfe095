//go:build cuda && !cudaemu

package python_test

// libTags are the build tags the library is built with for the Python
// tests: the tests' own, so a cuda build tests the cuda-built library.
const libTags = "cuda"
