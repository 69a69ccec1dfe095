//go:build cgo

package main

import (
	"testing"
	"unsafe"

	"github.com/cuarray/cuarray/interop"
)

// BenchmarkExportDLPack times a DLPack tensor made and deleted three ways,
// in one run: "keep", built in C from a kept description (what
// cuarray_dlpack_capsule does for __dlpack__), its deleter in C; "interop",
// interop.ExportDLPack's tensor, whose deleter calls Go (the library's
// export before the keep); "library", the library's export entered from C
// (toDLPack: the checks, a description, the C-built tensor).
func BenchmarkExportDLPack(b *testing.B) {
	dev, err := openDevice("sim:0")
	if err != nil {
		b.Fatal(err)
	}
	h, err := empty(dev, "float32", []int{1024, 1024}, false)
	if err != nil {
		b.Fatal(err)
	}
	defer releaseArray(h)
	d, err := describe(h)
	if err != nil {
		b.Fatal(err)
	}
	e, err := arrayOf(h)
	if err != nil {
		b.Fatal(err)
	}
	cd := newCDesc(d) // the description the Python module keeps
	defer freeCDesc(cd)
	for _, c := range []struct {
		name   string
		export func() (unsafe.Pointer, error)
	}{
		{"keep", func() (unsafe.Pointer, error) { return exportFrom(cd, true) }},
		{"interop", func() (unsafe.Pointer, error) { return interop.ExportDLPack(e.arr) }},
		{"library", func() (unsafe.Pointer, error) { return toDLPack(h, true, false, consumerHost) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				t, err := c.export()
				if err != nil {
					b.Fatal(err)
				}
				deleteDLPack(t)
			}
		})
	}
}
