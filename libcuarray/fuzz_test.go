//go:build cgo

package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
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
// descriptors of the array's own memory on the sim device and of a page of
// host memory between two inaccessible ones (device 0): each import is an
// array inside the allocation, or inside the page (or clear of the pages
// around it), or an error; never a panic or a view past it.
func FuzzImportInterface(f *testing.F) {
	dev, arr := fuzzDevice(f)
	e, err := arrayOf(arr)
	if err != nil {
		f.Fatal(err)
	}
	ptr := uint64(e.arr.Ptr())
	host := guarded(f, 1)
	hp, page := addr(host), uint64(len(host))
	for _, seed := range []string{
		`{"data":[%d,false],"shape":[6,8],"typestr":"<f4","version":3}`,
		`{"data":[%d,false],"shape":[64],"typestr":"<f4","version":3}`,
		`{"data":[%d,false],"shape":[268435456],"typestr":"<f4","version":3}`,
		`{"data":[%d,true],"shape":[2,3],"strides":[-4,1024],"typestr":"<i2","version":2}`,
		`{"data":[%d,false],"shape":[],"typestr":"|b1","version":3,"stream":null}`,
	} {
		f.Add([]byte(fmt.Sprintf(seed, ptr)), false)
		f.Add([]byte(fmt.Sprintf(seed, hp)), true)
	}
	f.Add([]byte(`{"data":[1,false],"shape":[1],"typestr":"<f4","version":3}`), false)
	f.Add([]byte(fmt.Sprintf(`{"data":[%d,true],"shape":[1024],"typestr":"<f4","version":3}`, hp-page)), true)
	d, _ := deviceOf(dev)
	f.Fuzz(func(t *testing.T, js []byte, onHost bool) {
		on := dev
		if onHost {
			on = 0
		}
		h, err := importCAI(on, js)
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
			end := first + uint64(hi-lo)
			switch {
			case onHost && end > hp-page && first < hp+2*page && (first < hp || end > hp+page):
				t.Fatalf("host import %s reaches [%#x, %#x), outside the page [%#x, +%d)", js, first, end, hp, page)
			case !onHost && (first < ptr || end > ptr+256):
				t.Fatalf("import %s reaches [%#x, +%d), outside the allocation [%#x, +256)", js, first, hi-lo, ptr)
			}
		}
		if err := releaseArray(h); err != nil {
			t.Fatalf("release: %v", err)
		}
		if c := d.Ledger().Current(accounting.IPC); c != 0 {
			t.Fatalf("an import counted %d bytes", c)
		}
	})
}

// FuzzImportDLPack feeds cuarray_from_dlpack tensors with any layout, any
// dtype and any offset, whose data lies around an array of the sim device
// or around a page of host memory between two inaccessible ones: each
// import lies inside one live allocation of the device, or inside the
// page, or is an error; an accepted import reads back without a fault;
// nothing panics, and a refused tensor's ownership stays with the caller.
func FuzzImportDLPack(f *testing.F) {
	dev, arr := fuzzDevice(f)
	e, err := arrayOf(arr)
	if err != nil {
		f.Fatal(err)
	}
	d, err := deviceOf(dev)
	if err != nil {
		f.Fatal(err)
	}
	finder, ok := d.(allocationFinder)
	if !ok {
		f.Fatal("sim knows its allocations")
	}
	simDL, err := e.arr.Device().Kind.DLPack()
	if err != nil {
		f.Fatal(err)
	}
	ptr := uint64(e.arr.Ptr())
	host := guarded(f, 1)
	hp := addr(host)
	page := int64(len(host))
	tn := newTensor(f)
	f.Add(true, false, false, uint8(2), []byte{6, 8}, []byte{}, int32(0), uint32(0), uint8(2), uint8(32))
	f.Add(false, false, true, uint8(1), []byte{127}, []byte{1}, int32(0), uint32(0), uint8(2), uint8(32))
	f.Add(true, true, true, uint8(2), []byte{3, 5}, []byte{255, 1}, int32(64), uint32(8), uint8(0), uint8(16))
	f.Add(true, false, false, uint8(1), []byte{65}, []byte{}, int32(0), uint32(0), uint8(2), uint8(32))
	f.Add(true, false, true, uint8(3), []byte{2, 2, 2}, []byte{4, 2, 1}, int32(-4096), uint32(4096), uint8(1), uint8(8))
	f.Fuzz(func(t *testing.T, versioned, readonly, onHost bool, ndim uint8, shape, strides []byte,
		delta int32, offset uint32, code, nbits uint8) {
		n := int(ndim % 9)
		var sh, st []int64
		if len(shape) > 0 {
			sh = make([]int64, n)
			for i := range n {
				sh[i] = int64(int8(shape[i%len(shape)]))
			}
		} else {
			sh = make([]int64, n)
		}
		if len(strides) > 0 {
			st = make([]int64, n)
			for i := range n {
				st[i] = int64(int8(strides[i%len(strides)]))
			}
		}
		devHandle, dl, data := dev, [2]int32{simDL, int32(e.arr.Device().Ordinal)}, uint64(int64(ptr)+int64(delta%1024))
		if onHost {
			devHandle, dl, data = 0, [2]int32{1, 0}, uint64(int64(hp)+int64(delta)%(2*page))
		}
		p := tn.set(versioned, readonly, dl, data, uint64(offset%8192), sh, st)
		dt := (*dlTensor)(unsafe.Add(p, 32))
		if !versioned {
			dt = (*dlTensor)(p)
		}
		dt.code, dt.bits = code%6, nbits
		h, err := fromDLPack(devHandle, p, versioned)
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
			if onHost {
				if first < hp || first+uint64(hi-lo) > hp+uint64(page) {
					t.Fatalf("host import reaches [%#x, +%d), outside the page [%#x, +%d)", first, hi-lo, hp, page)
				}
			} else {
				base, size, ok := finder.Allocation(devarray.Ptr(first))
				if !ok || first+uint64(hi-lo) > uint64(base)+uint64(size) {
					t.Fatalf("device import reaches [%#x, +%d), outside every live allocation", first, hi-lo)
				}
			}
			// read it back (overlapping strides can make many elements of a small extent)
			if n := imp.arr.NBytes(); n <= 1<<20 {
				buf := make([]byte, n)
				if err := copyHost(h, unsafe.Pointer(&buf[0]), n, false); err != nil {
					t.Fatalf("reading an accepted import: %v", err)
				}
			}
		}
		if err := releaseArray(h); err != nil {
			t.Fatalf("release: %v", err)
		}
	})
}

// FuzzIPCOpen feeds cuarray_ipc_open descriptors with anything, around a
// real one of the fuzz array: each is an error or an array inside the
// allocation it opens, and nothing stays mapped.
func FuzzIPCOpen(f *testing.F) {
	dev, arr := fuzzDevice(f)
	desc, err := ipcExport(arr)
	if errors.Is(err, errors.ErrUnsupported) {
		f.Skipf("IPC is not available here: %v", err) // sim without memfd (macOS)
	}
	if err != nil {
		f.Fatal(err)
	}
	f.Add(desc)
	f.Add([]byte(`{"backend":"sim","device":0,"handle":"` + strings.Repeat("00", 64) + `","offset":0,"size":256,"shape":[4],"dtype":"float32"}`))
	f.Add([]byte(`{"backend":"cuda","device":0,"handle":"zz","offset":-1,"size":1,"shape":[-4],"dtype":"float99"}`))
	f.Add([]byte(`{"offset":9223372036854775807,"size":9223372036854775807,"strides":[1,2],"shape":[1]}`))
	d, err := deviceOf(dev)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		h, err := ipcOpen(dev, js)
		if err == nil {
			if err := releaseArray(h); err != nil {
				t.Fatalf("release: %v", err)
			}
		}
		if c := d.Ledger().Current(accounting.IPC); c != 0 {
			t.Fatalf("%d bytes stay mapped after %s", c, js)
		}
	})
}
