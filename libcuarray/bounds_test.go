//go:build cgo

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// guarded maps n usable pages with an inaccessible page on each side, so
// that the usable ones are the only host memory around them, and returns
// the usable ones.
func guarded(t testing.TB, n int) []byte {
	t.Helper()
	page := os.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, (n+2)*page, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	usable := mem[page : (n+1)*page]
	require.NoError(t, syscall.Mprotect(usable, syscall.PROT_READ|syscall.PROT_WRITE))
	return usable
}

func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// cai is a CUDA Array Interface of float32 elements, as JSON.
func cai(ptr uint64, readonly bool, shape []int, strides []int64) []byte {
	m := map[string]any{"data": []any{ptr, readonly}, "shape": shape, "typestr": "<f4", "version": 3}
	if strides != nil {
		m["strides"] = strides
	}
	b, _ := json.Marshal(m)
	return b
}

func TestImportInterfaceBounds(t *testing.T) {
	dev, err := openDevice("sim:0?mem=64MiB")
	require.NoError(t, err)
	arr, err := empty(dev, "float32", []int{16}, true) // 64 bytes, in an allocation of 256
	require.NoError(t, err)
	e, err := arrayOf(arr)
	require.NoError(t, err)
	ptr := uint64(e.arr.Ptr())
	gone, err := empty(dev, "float32", []int{16}, true)
	require.NoError(t, err)
	ge, _ := arrayOf(gone)
	gonePtr := uint64(ge.arr.Ptr())
	require.NoError(t, releaseArray(gone))

	page := int64(os.Getpagesize())
	host := guarded(t, 1)
	hp := addr(host)
	require.NoError(t, syscall.Mprotect(guarded(t, 1), syscall.PROT_READ))
	ro := guarded(t, 1)
	require.NoError(t, syscall.Mprotect(ro, syscall.PROT_READ))

	for _, c := range []struct {
		name    string
		dev     uint64
		js      []byte
		refused bool
	}{
		{"device: the array", dev, cai(ptr, false, []int{16}, nil), false},
		{"device: the whole allocation", dev, cai(ptr, false, []int{64}, nil), false},
		{"device: one past the allocation", dev, cai(ptr, false, []int{65}, nil), true},
		{"device: from its middle to its end", dev, cai(ptr+128, false, []int{32}, nil), false},
		{"device: from its middle, one past its end", dev, cai(ptr+128, false, []int{33}, nil), true},
		{"device: from its middle, its size long", dev, cai(ptr+128, false, []int{64}, nil), true},
		{"device: 1 GiB over 64 bytes", dev, cai(ptr, false, []int{1 << 28}, nil), true},
		{"device: a stride past the end", dev, cai(ptr, false, []int{2}, []int64{1024}), true},
		{"device: backwards before the start", dev, cai(ptr+4, false, []int{2}, []int64{-8}), true},
		{"device: a freed allocation", dev, cai(gonePtr, false, []int{4}, nil), true},
		{"device: no allocation at all", dev, cai(4096, false, []int{4}, nil), true},
		{"host: the page", 0, cai(hp, false, []int{int(page / 4)}, nil), false},
		{"host: one past the page", 0, cai(hp, false, []int{int(page/4) + 1}, nil), true},
		{"host: from its middle to its end", 0, cai(hp+uint64(page/2), false, []int{int(page / 8)}, nil), false},
		{"host: from its middle, a page long", 0, cai(hp+uint64(page/2), false, []int{int(page / 4)}, nil), true},
		{"host: backwards into the guard page", 0, cai(hp+4, false, []int{2}, []int64{-8}), true},
		{"host: 1 GiB", 0, cai(hp, false, []int{1 << 28}, nil), true},
		{"host: page 1", 0, cai(4096, true, []int{4}, nil), true},
		{"host: read-only page, read-only import", 0, cai(addr(ro), true, []int{4}, nil), false},
		{"host: read-only page, writable import", 0, cai(addr(ro), false, []int{4}, nil), true},
		{"host: empty, anywhere", 0, cai(8, false, []int{0}, nil), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := importCAI(c.dev, c.js)
			if !c.refused {
				require.NoError(t, err, "%s", c.js)
				require.NoError(t, releaseArray(h))
				return
			}
			require.Error(t, err, "%s must be refused", c.js)
			require.ErrorIs(t, err, devarray.ErrBounds)
			require.Contains(t, err.Error(), "not inside")
		})
	}
}

// The host mappings are read again when an import does not fit the ones
// read before, so memory mapped since imports and memory unmapped since
// does not.
func TestHostMappingsReadAgain(t *testing.T) {
	page := os.Getpagesize()
	mem := guarded(t, 2)
	first, second := mem[:page], mem[page:]
	require.NoError(t, syscall.Mprotect(second, syscall.PROT_NONE))
	h, err := importCAI(0, cai(addr(first), false, []int{page / 4}, nil)) // the library reads the mappings
	require.NoError(t, err)
	require.NoError(t, releaseArray(h))

	require.NoError(t, syscall.Mprotect(second, syscall.PROT_READ|syscall.PROT_WRITE))
	h, err = importCAI(0, cai(addr(first), false, []int{page / 2}, nil))
	require.NoError(t, err, "a page made accessible since the mappings were read imports")
	require.NoError(t, releaseArray(h))

	_, _, errno := syscall.Syscall(syscall.SYS_MUNMAP, uintptr(addr(second)), uintptr(page), 0)
	require.Zero(t, errno)
	_, err = importCAI(0, cai(addr(first), false, []int{page / 2}, nil))
	require.ErrorIs(t, err, devarray.ErrBounds, "a page unmapped since the mappings were read does not import")
}

// The DLPack structs of dlpack.h, laid out as C lays them out.
type dlTensor struct {
	data                 uintptr
	deviceType, deviceID int32
	ndim                 int32
	code, bits           uint8
	lanes                uint16
	shape, strides       uintptr
	byteOffset           uint64
}

type dlVersioned struct {
	major, minor uint32
	managerCtx   uintptr
	deleter      uintptr
	flags        uint64
	t            dlTensor
}

type dlLegacy struct {
	t          dlTensor
	managerCtx uintptr
	deleter    uintptr
}

// tensor is a DLPack tensor in memory Go does not manage (the importer
// reads it from C's side), with no deleter.
type tensor struct {
	mem []byte
}

func newTensor(t testing.TB) *tensor { return &tensor{mem: guarded(t, 1)} }

// set writes a float32 tensor of shape and element strides (nil: none) at
// data+offset, and returns it.
func (tn *tensor) set(versioned, readonly bool, dl [2]int32, data uint64, offset uint64, shape, strides []int64) unsafe.Pointer {
	clear(tn.mem)
	dims := unsafe.Pointer(&tn.mem[1024])
	str := unsafe.Pointer(&tn.mem[2048])
	copy(unsafe.Slice((*int64)(dims), len(shape)), shape)
	dt := dlTensor{data: uintptr(data), deviceType: dl[0], deviceID: dl[1], ndim: int32(len(shape)),
		code: 2, bits: 32, lanes: 1, shape: uintptr(dims), byteOffset: offset}
	if strides != nil {
		copy(unsafe.Slice((*int64)(str), len(strides)), strides)
		dt.strides = uintptr(str)
	}
	p := unsafe.Pointer(&tn.mem[0])
	if versioned {
		v := dlVersioned{major: 1, minor: 1, t: dt}
		if readonly {
			v.flags = 1
		}
		*(*dlVersioned)(p) = v
	} else {
		*(*dlLegacy)(p) = dlLegacy{t: dt}
	}
	return p
}

func TestImportDLPackBounds(t *testing.T) {
	dev, err := openDevice("sim:0?mem=64MiB")
	require.NoError(t, err)
	arr, err := empty(dev, "float32", []int{16}, true)
	require.NoError(t, err)
	e, err := arrayOf(arr)
	require.NoError(t, err)
	ptr := uint64(e.arr.Ptr())
	simDL := [2]int32{1, 0} // sim memory is host memory
	if d, err := e.arr.Device().Kind.DLPack(); err == nil {
		simDL = [2]int32{d, int32(e.arr.Device().Ordinal)}
	}
	host := guarded(t, 1)
	hp := addr(host)
	page := int64(os.Getpagesize())
	ro := guarded(t, 1)
	require.NoError(t, syscall.Mprotect(ro, syscall.PROT_READ))
	cpu := [2]int32{1, 0}
	tn := newTensor(t)
	for _, versioned := range []bool{true, false} {
		for _, c := range []struct {
			name     string
			dev      uint64
			dl       [2]int32
			data     uint64
			offset   uint64
			shape    []int64
			strides  []int64
			readonly bool
			refused  bool
		}{
			{"device: the allocation", dev, simDL, ptr, 0, []int64{64}, nil, false, false},
			{"device: one past it", dev, simDL, ptr, 0, []int64{65}, nil, false, true},
			{"device: byte_offset past it", dev, simDL, ptr, 256, []int64{1}, nil, false, true},
			{"device: 1 GiB", dev, simDL, ptr, 0, []int64{1 << 28}, nil, false, true},
			{"device: a stride past it", dev, simDL, ptr, 0, []int64{2}, []int64{64}, false, true},
			{"device: backwards before it", dev, simDL, ptr, 4, []int64{2}, []int64{-2}, false, true},
			{"device: no allocation", dev, simDL, 4096, 0, []int64{4}, nil, false, true},
			{"device: empty", dev, simDL, 4096, 0, []int64{0}, nil, false, false},
			{"host: the page", 0, cpu, hp, 0, []int64{page / 4}, nil, false, false},
			{"host: one past it", 0, cpu, hp, 0, []int64{page/4 + 1}, nil, false, true},
			{"host: 1 GiB", 0, cpu, hp, 0, []int64{1 << 28}, nil, false, true},
			{"host: page 1", 0, cpu, 4096, 0, []int64{4}, nil, true, true},
			{"host: read-only page, read-only tensor", 0, cpu, addr(ro), 0, []int64{4}, nil, true, false},
			{"host: read-only page, writable tensor", 0, cpu, addr(ro), 0, []int64{4}, nil, false, true},
		} {
			if c.readonly && !versioned && !c.refused {
				continue // a legacy tensor has no read-only flag: it is writable
			}
			t.Run(fmt.Sprintf("%s, versioned %v", c.name, versioned), func(t *testing.T) {
				p := tn.set(versioned, c.readonly, c.dl, c.data, c.offset, c.shape, c.strides)
				h, err := fromDLPack(c.dev, p, versioned)
				if !c.refused {
					require.NoError(t, err)
					require.NoError(t, releaseArray(h))
					return
				}
				require.Error(t, err, "must be refused")
				require.True(t, errors.Is(err, devarray.ErrBounds), "%v", err)
				require.Contains(t, err.Error(), "not inside")
			})
		}
	}
}

// A fault copying host memory that was made inaccessible after its import
// is an error, not a crash.
func TestHostCopyFaultIsError(t *testing.T) {
	mem := guarded(t, 1)
	h, err := importCAI(0, cai(addr(mem), false, []int{4}, nil))
	require.NoError(t, err)
	defer func() { require.NoError(t, releaseArray(h)) }()
	buf := make([]byte, 16)
	require.NoError(t, copyHost(h, unsafe.Pointer(&buf[0]), 16, true))
	require.NoError(t, syscall.Mprotect(mem, syscall.PROT_READ))
	err = copyHost(h, unsafe.Pointer(&buf[0]), 16, true)
	require.ErrorIs(t, err, devarray.ErrBounds)
	require.Contains(t, err.Error(), "memory fault")
	require.NoError(t, syscall.Mprotect(mem, syscall.PROT_NONE))
	err = copyHost(h, unsafe.Pointer(&buf[0]), 16, false)
	require.ErrorIs(t, err, devarray.ErrBounds)
}
