//go:build cgo

package main

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/transfer"
)

// errHandle: a handle that is not a live array or device of this library.
var errHandle = errors.New("libcuarray: not a live handle")

// handles is the table of everything handed to C: a handle is a number
// that is never reused, so a stale or foreign one is an error and never
// another object, and taking one out is atomic, so that two threads
// releasing the same handle at once release it once and the other gets
// errHandle (runtime/cgo.Handle would crash the process there).
var handles = struct {
	sync.Mutex
	next uint64
	m    map[uint64]any
}{m: map[uint64]any{}}

// register hands v to C.
func register(v any) uint64 {
	handles.Lock()
	defer handles.Unlock()
	handles.next++
	handles.m[handles.next] = v
	return handles.next
}

// take removes handle h and returns its value, if it is live.
func take(h uint64) (any, error) {
	handles.Lock()
	defer handles.Unlock()
	v, ok := handles.m[h]
	if !ok {
		return nil, fmt.Errorf("handle %d: %w", h, errHandle)
	}
	delete(handles.m, h)
	return v, nil
}

// entry is an array handed to C: the array and the device whose ledger
// counts it (nil for host memory imported without a device).
type entry struct {
	arr  *devarray.DevArray
	dev  device.Device
	keep keep // the allocation's, shared with its views (keep.go); none if C memory ran out
}

// devices are opened once per spec and live as long as the process, so that
// every array of "sim:0" shares one device and one ledger; each has one
// Copier, made on its first copy, that every copy on it reuses.
var devices = struct {
	sync.Mutex
	bySpec  map[string]device.Device
	handle  map[device.Device]uint64
	copiers map[device.Device]*transfer.Copier
}{bySpec: map[string]device.Device{}, handle: map[device.Device]uint64{}, copiers: map[device.Device]*transfer.Copier{}}

// openDevice returns the handle of the device for spec, opening it once.
func openDevice(spec string) (uint64, error) {
	devices.Lock()
	defer devices.Unlock()
	if d, ok := devices.bySpec[spec]; ok {
		return devices.handle[d], nil
	}
	d, err := device.Open(spec)
	if err != nil {
		return 0, err
	}
	h := register(d)
	devices.bySpec[spec] = d
	devices.handle[d] = h
	return h, nil
}

// deviceOf returns the device behind a handle; 0 is no device.
func deviceOf(h uint64) (device.Device, error) {
	if h == 0 {
		return nil, nil
	}
	v, err := valueOf(h)
	if err != nil {
		return nil, err
	}
	d, ok := v.(device.Device)
	if !ok {
		return nil, fmt.Errorf("handle %d is not a device: %w", h, errHandle)
	}
	return d, nil
}

// deviceHandle returns the handle of an opened device.
func deviceHandle(d device.Device) uint64 {
	devices.Lock()
	defer devices.Unlock()
	return devices.handle[d]
}

// copierOf returns the device's Copier, made once.
func copierOf(d device.Device) (*transfer.Copier, error) {
	devices.Lock()
	defer devices.Unlock()
	if c, ok := devices.copiers[d]; ok {
		return c, nil
	}
	c, err := transfer.New(d)
	if err != nil {
		return nil, err
	}
	devices.copiers[d] = c
	return c, nil
}

// newArray registers an array that owns its memory (allocated or
// borrowed) and returns its handle; the array gets a keep of its own.
// Without C memory for the keep the array has none, and its DLPack
// exports say so.
func newArray(a *devarray.DevArray, d device.Device) uint64 {
	kp, _ := newKeep()
	return register(&entry{arr: a, dev: d, keep: kp})
}

// newView registers a view of the array of entry e, sharing its keep.
func newView(v *devarray.DevArray, e *entry) uint64 {
	return register(&entry{arr: v, dev: e.dev, keep: e.keep})
}

// arrayOf returns the entry behind a handle.
func arrayOf(h uint64) (*entry, error) {
	v, err := valueOf(h)
	if err != nil {
		return nil, err
	}
	e, ok := v.(*entry)
	if !ok {
		return nil, fmt.Errorf("handle %d is not an array: %w", h, errHandle)
	}
	return e, nil
}

// releaseArray frees an array (a view only drops its handle) and forgets
// the handle, without waiting: an async copy still using the memory holds
// it (transfer.Op), so the memory goes back to the device once the copy has
// completed and the library has seen it done (any later call that checks
// the pending work, a stream's synchronize). The export token changes, so
// that no cached descriptor of the memory is exported without a check.
//
// A DLPack tensor of the array or of its views still alive keeps the
// memory until it is deleted (releaseKeep); the freed memory of arrays
// whose last tensor was deleted since is let go first (reapKeeps).
//
// A failure to free another array's memory there is not this call's (it
// was not reported by the tensor's deleter either, which returns nothing).
func releaseArray(h uint64) error {
	_ = reapKeeps()
	if _, err := arrayOf(h); err != nil {
		return err
	}
	v, err := take(h)
	if err != nil {
		return err // another thread released it first
	}
	e := v.(*entry)
	if e.arr.IsView() {
		return nil
	}
	defer freed()
	return errors.Join(releaseKeep(e.keep, e.arr), pending.Reap())
}

// valueOf returns the value of a live handle.
func valueOf(h uint64) (any, error) {
	handles.Lock()
	defer handles.Unlock()
	v, ok := handles.m[h]
	if !ok {
		return nil, fmt.Errorf("handle %d: %w", h, errHandle)
	}
	return v, nil
}
