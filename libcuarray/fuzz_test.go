package main

import (
	"fmt"
	"testing"

	"github.com/cuarray/cuarray/accounting"
)

// fuzzDevice opens the library's device for fuzzing and an array on it.
func fuzzDevice(f *testing.F) (dev, arr uint64) {
	dev, err := openDevice("sim:0?mem=64MiB")
	if err != nil {
		f.Fatal(err)
	}
	arr, err = empty(dev, "float32", []int{6, 8}, true)
	if err != nil {
		f.Fatal(err)
	}
	return dev, arr
}

// FuzzViewOp feeds the view operations that cuarray_view parses (JSON from
// C) with anything: each is a view of the array or an error, never a
// panic, and a view's handle releases cleanly.
func FuzzViewOp(f *testing.F) {
	_, arr := fuzzDevice(f)
	for _, seed := range []string{
		`{"op":"transpose"}`, `{"op":"permute","axes":[1,0]}`, `{"op":"reshape","shape":[8,6]}`,
		`{"op":"slice","axis":1,"start":1,"stop":7,"step":2}`, `{"op":"index","axis":0,"start":5}`,
		`{"op":"flip","axis":1}`, `{"op":"readonly"}`, `{"op":"reshape","shape":[-1]}`,
		`{"op":"slice","axis":9,"start":-3,"stop":99,"step":0}`, `{"op":"permute","axes":[0,0]}`, `[]`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, op []byte) {
		h, err := view(arr, op)
		if err != nil {
			return
		}
		if _, err := describe(h); err != nil {
			t.Fatalf("view %q: describe: %v", op, err)
		}
		if err := releaseArray(h); err != nil {
			t.Fatalf("view %q: release: %v", op, err)
		}
	})
}

// FuzzImportInterface feeds cuarray_import_interface with anything, around
// descriptors of the array's own memory: each import is an array inside
// the allocation or an error, never a panic or a view past it.
func FuzzImportInterface(f *testing.F) {
	dev, arr := fuzzDevice(f)
	e, err := arrayOf(arr)
	if err != nil {
		f.Fatal(err)
	}
	ptr := uint64(e.arr.Ptr())
	for _, seed := range []string{
		`{"data":[%d,false],"shape":[6,8],"typestr":"<f4","version":3}`,
		`{"data":[%d,false],"shape":[64],"typestr":"<f4","version":3}`,
		`{"data":[%d,false],"shape":[268435456],"typestr":"<f4","version":3}`,
		`{"data":[%d,true],"shape":[2,3],"strides":[-4,1024],"typestr":"<i2","version":2}`,
		`{"data":[%d,false],"shape":[],"typestr":"|b1","version":3,"stream":null}`,
	} {
		f.Add([]byte(fmt.Sprintf(seed, ptr)))
	}
	f.Add([]byte(`{"data":[1,false],"shape":[1],"typestr":"<f4","version":3}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		h, err := importCAI(dev, js)
		if err != nil {
			return
		}
		imp, err := arrayOf(h)
		if err != nil {
			t.Fatal(err)
		}
		if imp.arr.Size() > 0 {
			lo, hi := imp.arr.Extent()
			first := uint64(imp.arr.Ptr()) + uint64(lo)
			if first < ptr || first+uint64(hi-lo) > ptr+256 {
				t.Fatalf("import %s reaches [%#x, +%d), outside the allocation [%#x, +256)", js, first, hi-lo, ptr)
			}
		}
		if err := releaseArray(h); err != nil {
			t.Fatalf("release: %v", err)
		}
		d, _ := deviceOf(dev)
		if c := d.Ledger().Current(accounting.IPC); c != 0 {
			t.Fatalf("an import counted %d bytes", c)
		}
	})
}
