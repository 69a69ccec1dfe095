//go:build !linux

package devarray_test

// benchAlloc returns n bytes of Go memory (huge pages are advised on Linux only).
func benchAlloc(n int) (b []byte, free func()) { return make([]byte, n), func() {} }
