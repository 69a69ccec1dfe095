package devarray_test

import (
	"github.com/cuarray/cuarray/internal/hostile"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
)

// Every exported function and method of devarray, given nil, zero,
// negative, overflowing, freed and closed inputs, returns a typed error (or
// a zero value where it returns none) and leaks nothing (testdev checks the
// ledger when the test ends).
func TestHostileInputs(t *testing.T) {
	dev := newDev(t)
	var nilArr *devarray.DevArray
	zero := new(devarray.DevArray)
	freed, err := devarray.Empty(dev, devarray.Float32, 4, 4)
	require.NoError(t, err)
	freedView, err := freed.Slice(0, 0, 2)
	require.NoError(t, err)
	require.NoError(t, freed.Free())
	live, err := devarray.Zeros(dev, devarray.Float32, 4, 4)
	require.NoError(t, err)
	defer live.Free()
	ro, err := live.AsReadOnly()
	require.NoError(t, err)
	host := make([]byte, 64)

	// A device closed under its arrays: their memory went with it.
	closedDev, err := device.Open("sim:0?mem=1MiB")
	require.NoError(t, err)
	onClosed, err := devarray.Empty(closedDev, devarray.Float32, 4)
	require.NoError(t, err)
	managedOnClosed, err := devarray.EmptyManaged(closedDev, devarray.AttachGlobal, devarray.Float32, 4)
	require.NoError(t, err)
	require.NoError(t, closedDev.Close())

	big := math.MaxInt64
	var cases []hostile.Case
	// Nil and zero arrays, through every method.
	for _, bad := range []struct {
		name string
		a    *devarray.DevArray
	}{{"nil", nilArr}, {"zero", zero}} {
		a := bad.a
		add := func(name string, want error, call func() error) {
			cases = append(cases, hostile.Case{bad.name + " " + name, call, want})
		}
		add("Err", devarray.ErrNil, a.Err)
		add("Slice", devarray.ErrNil, func() error { return hostile.Second(a.Slice(0, 0, 1)) })
		add("Index", devarray.ErrNil, func() error { return hostile.Second(a.Index(0, 0)) })
		add("Flip", devarray.ErrNil, func() error { return hostile.Second(a.Flip(0)) })
		add("Permute", devarray.ErrNil, func() error { return hostile.Second(a.Permute()) })
		add("Transpose", devarray.ErrNil, func() error { return hostile.Second(a.Transpose()) })
		add("Squeeze", devarray.ErrNil, func() error { return hostile.Second(a.Squeeze()) })
		add("ExpandDims", devarray.ErrNil, func() error { return hostile.Second(a.ExpandDims(0)) })
		add("Broadcast", devarray.ErrNil, func() error { return hostile.Second(a.Broadcast(1)) })
		add("AsReadOnly", devarray.ErrNil, func() error { return hostile.Second(a.AsReadOnly()) })
		add("Reshape", devarray.ErrNil, func() error { return hostile.Second(a.Reshape(1)) })
		add("Descriptor", devarray.ErrNil, func() error { return hostile.Second(a.Descriptor()) })
		add("ByteOffset", devarray.ErrNil, func() error { return hostile.Second(a.ByteOffset()) })
		add("CopyTo", devarray.ErrNil, func() error { return a.CopyTo(nil) })
		add("CopyFrom", devarray.ErrNil, func() error { return a.CopyFrom(nil) })
		add("ToHost", devarray.ErrNil, func() error { return hostile.Second(devarray.ToHost[float32](a)) })
		add("Hold", devarray.ErrNil, func() error { return hostile.Second(a.Hold()) })
		add("HostView", devarray.ErrNil, func() error { return hostile.Second(a.HostView(true)) })
		add("Use", devarray.ErrNil, func() error { return devarray.Use(func() error { return nil }, live, a) })
		add("accessors", nil, func() error {
			assert.Nil(t, a.Shape())
			assert.Nil(t, a.Strides())
			assert.Zero(t, a.NDim())
			assert.Zero(t, a.Size())
			assert.Zero(t, a.NBytes())
			assert.Equal(t, devarray.Invalid, a.DType())
			assert.Zero(t, a.Device())
			assert.Nil(t, a.Backend())
			assert.Zero(t, a.Ptr())
			assert.False(t, a.ReadOnly())
			assert.False(t, a.Owned())
			assert.False(t, a.IsView())
			assert.False(t, a.IsContiguous())
			assert.False(t, a.IsFContiguous())
			lo, hi := a.Extent()
			assert.Zero(t, lo)
			assert.Zero(t, hi)
			assert.Zero(t, a.Holds())
			assert.Zero(t, a.Uintptr())
			assert.Zero(t, a.MemSize())
			assert.Equal(t, "DevArray(nil)", a.String())
			return nil
		})
	}
	cases = append(cases,
		hostile.Case{"nil Free", nilArr.Free, nil},
		hostile.Case{"zero Free", zero.Free, devarray.ErrNil},

		// Constructors.
		hostile.Case{"Empty no backend", func() error { return hostile.Second(devarray.Empty(nil, devarray.Float32, 1)) }, devarray.ErrNoBackend},
		hostile.Case{"Empty invalid dtype", func() error { return hostile.Second(devarray.Empty(dev, devarray.Invalid, 1)) }, devarray.ErrDType},
		hostile.Case{"Empty dtype past the table", func() error { return hostile.Second(devarray.Empty(dev, devarray.DType(200), 1)) }, devarray.ErrDType},
		hostile.Case{"Empty negative", func() error { return hostile.Second(devarray.Empty(dev, devarray.Float32, -1)) }, devarray.ErrShape},
		hostile.Case{"Empty MaxInt64 elements", func() error { return hostile.Second(devarray.Empty(dev, devarray.Float32, big)) }, devarray.ErrOverflow},
		hostile.Case{"Empty shape product overflows", func() error { return hostile.Second(devarray.Empty(dev, devarray.Uint8, 1<<32, 1<<32)) }, devarray.ErrOverflow},
		hostile.Case{"Empty more than the device", func() error { return hostile.Second(devarray.Empty(dev, devarray.Uint8, 1<<40)) }, device.ErrOutOfMemory},
		hostile.Case{"Zeros negative", func() error { return hostile.Second(devarray.Zeros(dev, devarray.Float32, 2, -2)) }, devarray.ErrShape},
		hostile.Case{"Zeros no backend", func() error { return hostile.Second(devarray.Zeros(nil, devarray.Float32, 2)) }, devarray.ErrNoBackend},
		hostile.Case{"FromHost nil data", func() error { return hostile.Second(devarray.FromHost[float32](dev, nil, 4)) }, devarray.ErrHostSize},
		hostile.Case{"FromHost shape mismatch", func() error { return hostile.Second(devarray.FromHost(dev, []float32{1, 2}, 3)) }, devarray.ErrHostSize},
		hostile.Case{"FromHost no backend", func() error { return hostile.Second(devarray.FromHost(nil, []float32{1})) }, devarray.ErrNoBackend},
		hostile.Case{"FromBytes overflow", func() error { return hostile.Second(devarray.FromBytes(dev, host, devarray.Float64, big/4, 8)) }, devarray.ErrOverflow},
		hostile.Case{"FromBytes invalid dtype", func() error { return hostile.Second(devarray.FromBytes(dev, host, devarray.Invalid)) }, devarray.ErrDType},
		hostile.Case{"Wrap zero descriptor", func() error { return hostile.Second(devarray.Wrap(nil, devarray.Descriptor{})) }, devarray.ErrDType},
		hostile.Case{"Wrap null pointer", func() error {
			return hostile.Second(devarray.Wrap(nil, devarray.Descriptor{Shape: []int{4}, DType: devarray.Float32}))
		}, devarray.ErrBounds},
		hostile.Case{"Wrap nil option", func() error {
			a, err := devarray.Wrap(nil, devarray.Descriptor{Ptr: 4096, Shape: []int{4}, DType: devarray.Float32}, nil)
			if err == nil {
				err = a.Free()
			}
			return err
		}, nil},
		hostile.Case{"Wrap negative bounds", func() error {
			return hostile.Second(devarray.Wrap(nil, devarray.Descriptor{Ptr: 4096, Shape: []int{4}, DType: devarray.Float32}, devarray.WithBounds(4096, -1)))
		}, devarray.ErrBounds},
		hostile.Case{"Wrap past its bounds", func() error {
			return hostile.Second(devarray.Wrap(nil, devarray.Descriptor{Ptr: 4096, Shape: []int{4}, DType: devarray.Float32}, devarray.WithBounds(4096, 15)))
		}, devarray.ErrBounds},
		hostile.Case{"Wrap strides overflow", func() error {
			return hostile.Second(devarray.Wrap(nil, devarray.Descriptor{Ptr: 4096, Shape: []int{3, 3}, Strides: []int64{math.MaxInt64, 4}, DType: devarray.Float32}))
		}, devarray.ErrOverflow},
		hostile.Case{"Wrap strides length", func() error {
			return hostile.Second(devarray.Wrap(nil, devarray.Descriptor{Ptr: 4096, Shape: []int{3}, Strides: []int64{4, 4}, DType: devarray.Float32}))
		}, devarray.ErrShape},
		hostile.Case{"Wrap other device", func() error {
			return hostile.Second(devarray.Wrap(dev, devarray.Descriptor{Ptr: 4096, Shape: []int{3}, DType: devarray.Float32, Device: devarray.DeviceID{Kind: devarray.CUDA, Ordinal: 9}}))
		}, devarray.ErrDevice},

		// Views out of range, negative, overflowing.
		hostile.Case{"Slice axis -1", func() error { return hostile.Second(live.Slice(-1, 0, 1)) }, devarray.ErrShape},
		hostile.Case{"Slice axis past", func() error { return hostile.Second(live.Slice(2, 0, 1)) }, devarray.ErrShape},
		hostile.Case{"Slice negative start past its stop", func() error { return hostile.Second(live.Slice(0, -1, 0)) }, devarray.ErrShape},
		hostile.Case{"Slice start MinInt", func() error { return hostile.Second(live.Slice(0, math.MinInt, 1)) }, devarray.ErrShape},
		hostile.Case{"Slice stop MinInt", func() error { return hostile.Second(live.Slice(0, 0, math.MinInt)) }, devarray.ErrShape},
		hostile.Case{"Slice stop past", func() error { return hostile.Second(live.Slice(0, 0, big)) }, devarray.ErrShape},
		hostile.Case{"Slice step 0", func() error { return hostile.Second(live.Slice(0, 0, 1, 0)) }, devarray.ErrShape},
		hostile.Case{"Slice step -1", func() error { return hostile.Second(live.Slice(0, 0, 1, -1)) }, devarray.ErrShape},
		hostile.Case{"Slice huge step", func() error { return hostile.Second(live.Slice(0, 0, 4, big)) }, devarray.ErrOverflow},
		hostile.Case{"Slice two steps", func() error { return hostile.Second(live.Slice(0, 0, 1, 1, 1)) }, devarray.ErrShape},
		hostile.Case{"Index MinInt", func() error { return hostile.Second(live.Index(0, math.MinInt)) }, devarray.ErrShape},
		hostile.Case{"Index MaxInt", func() error { return hostile.Second(live.Index(0, big)) }, devarray.ErrShape},
		hostile.Case{"Flip axis", func() error { return hostile.Second(live.Flip(7)) }, devarray.ErrShape},
		hostile.Case{"Permute repeated", func() error { return hostile.Second(live.Permute(0, 0)) }, devarray.ErrShape},
		hostile.Case{"Permute negative", func() error { return hostile.Second(live.Permute(-1, 0)) }, devarray.ErrShape},
		hostile.Case{"Squeeze axis past", func() error { return hostile.Second(live.Squeeze(5)) }, devarray.ErrShape},
		hostile.Case{"Squeeze negative", func() error { return hostile.Second(live.Squeeze(-1)) }, devarray.ErrShape},
		hostile.Case{"ExpandDims negative", func() error { return hostile.Second(live.ExpandDims(-1)) }, devarray.ErrShape},
		hostile.Case{"Broadcast negative", func() error { return hostile.Second(live.Broadcast(-4, 4)) }, devarray.ErrShape},
		hostile.Case{"Broadcast fewer dims", func() error { return hostile.Second(live.Broadcast(4)) }, devarray.ErrShape},
		hostile.Case{"Broadcast overflow", func() error { return hostile.Second(live.Broadcast(big, big, 4, 4)) }, devarray.ErrOverflow},
		hostile.Case{"Reshape two -1", func() error { return hostile.Second(live.Reshape(-1, -1)) }, devarray.ErrShape},
		hostile.Case{"Reshape overflow", func() error { return hostile.Second(live.Reshape(big, big)) }, devarray.ErrOverflow},
		hostile.Case{"Reshape negative", func() error { return hostile.Second(live.Reshape(-4, -4)) }, devarray.ErrShape},
		hostile.Case{"ByteOffset too few", func() error { return hostile.Second(live.ByteOffset(1)) }, devarray.ErrShape},
		hostile.Case{"ByteOffset negative", func() error { return hostile.Second(live.ByteOffset(-1, 0)) }, devarray.ErrShape},

		// Host copies of the wrong size, read-only, freed.
		hostile.Case{"CopyTo short", func() error { return live.CopyTo(host[:3]) }, devarray.ErrHostSize},
		hostile.Case{"CopyTo nil", func() error { return live.CopyTo(nil) }, devarray.ErrHostSize},
		hostile.Case{"CopyFrom long", func() error { return live.CopyFrom(make([]byte, 65)) }, devarray.ErrHostSize},
		hostile.Case{"CopyFrom read-only", func() error { return ro.CopyFrom(host) }, devarray.ErrReadOnly},
		hostile.Case{"ToHost wrong type", func() error { return hostile.Second(devarray.ToHost[int8](live)) }, devarray.ErrDType},
		hostile.Case{"CopyTo no backend", func() error {
			a, err := devarray.Wrap(nil, devarray.Descriptor{Ptr: 4096, Shape: []int{4}, DType: devarray.Float32})
			require.NoError(t, err)
			return a.CopyTo(make([]byte, 16))
		}, devarray.ErrNoBackend},

		// Freed arrays and their views.
		hostile.Case{"freed Free", freed.Free, nil},
		hostile.Case{"freed view Free", freedView.Free, devarray.ErrNotOwner},
		hostile.Case{"freed Err", freed.Err, devarray.ErrFreed},
		hostile.Case{"freed CopyTo", func() error { return freed.CopyTo(host) }, devarray.ErrFreed},
		hostile.Case{"freed view CopyFrom", func() error { return freedView.CopyFrom(make([]byte, 32)) }, devarray.ErrFreed},
		hostile.Case{"freed Slice", func() error { return hostile.Second(freed.Slice(0, 0, 1)) }, devarray.ErrFreed},
		hostile.Case{"freed Reshape", func() error { return hostile.Second(freed.Reshape(16)) }, devarray.ErrFreed},
		hostile.Case{"freed Descriptor", func() error { return hostile.Second(freedView.Descriptor()) }, devarray.ErrFreed},
		hostile.Case{"freed Hold", func() error { return hostile.Second(freed.Hold()) }, devarray.ErrFreed},
		hostile.Case{"freed Use", func() error { return devarray.Use(func() error { return nil }, live, freedView) }, devarray.ErrFreed},
		hostile.Case{"freed ToHost", func() error { return hostile.Second(devarray.ToHost[float32](freed)) }, devarray.ErrFreed},

		// Arrays of a closed device.
		hostile.Case{"closed CopyTo", func() error { return onClosed.CopyTo(make([]byte, 16)) }, device.ErrClosed},
		hostile.Case{"closed CopyFrom", func() error { return onClosed.CopyFrom(make([]byte, 16)) }, device.ErrClosed},
		hostile.Case{"closed Free", onClosed.Free, device.ErrClosed},
		hostile.Case{"closed Empty", func() error { return hostile.Second(devarray.Empty(closedDev, devarray.Float32, 1)) }, device.ErrClosed},
		hostile.Case{"closed EmptyManaged", func() error {
			return hostile.Second(devarray.EmptyManaged(closedDev, devarray.AttachGlobal, devarray.Float32, 1))
		}, device.ErrClosed},
		hostile.Case{"closed managed HostView", func() error { return hostile.Second(managedOnClosed.HostView(false)) }, device.ErrClosed},
		hostile.Case{"EmptyManaged negative", func() error {
			return hostile.Second(devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.Float32, -1))
		}, devarray.ErrShape},
		hostile.Case{"EmptyManaged overflowing", func() error {
			return hostile.Second(devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.Float64, big, big))
		}, devarray.ErrOverflow},
		hostile.Case{"device memory HostView", func() error { return hostile.Second(live.HostView(false)) }, devarray.ErrNotManaged},
		hostile.Case{"closed Zeros", func() error { return hostile.Second(devarray.Zeros(closedDev, devarray.Float32, 1)) }, device.ErrClosed},

		// Functions of the package that take no array.
		hostile.Case{"Use nil function", func() error { return devarray.Use(nil, live) }, devarray.ErrNil},
		hostile.Case{"Use no arrays", func() error { return devarray.Use(func() error { return nil }) }, nil},
		hostile.Case{"Blocks nil function", func() error { return devarray.Blocks([]int{2}, []int64{4}, 4, nil) }, devarray.ErrNil},
		hostile.Case{"Blocks strides length", func() error {
			return devarray.Blocks([]int{2, 2}, []int64{4}, 4, func(devarray.Block) error { return nil })
		}, devarray.ErrShape},
		hostile.Case{"Blocks nil strides", func() error { return devarray.Blocks([]int{2, 2}, nil, 4, func(devarray.Block) error { return nil }) }, nil},
		hostile.Case{"Blocks negative", func() error {
			return devarray.Blocks([]int{-2}, []int64{4}, 4, func(devarray.Block) error { return nil })
		}, devarray.ErrShape},
		hostile.Case{"Blocks item size 0", func() error {
			return devarray.Blocks([]int{2}, []int64{4}, 0, func(devarray.Block) error { return nil })
		}, devarray.ErrShape},
		hostile.Case{"Blocks overflow", func() error {
			return devarray.Blocks([]int{big, big}, []int64{4, 4}, 4, func(devarray.Block) error { return nil })
		}, devarray.ErrOverflow},
		hostile.Case{"ParseDType empty", func() error { return hostile.Second(devarray.ParseDType("")) }, devarray.ErrDType},
		hostile.Case{"ParseTypestr junk", func() error { return hostile.Second(devarray.ParseTypestr("<f\x00")) }, devarray.ErrDType},
		hostile.Case{"ParseDLPack lanes", func() error { return hostile.Second(devarray.ParseDLPack(devarray.DLFloat, 32, 4)) }, devarray.ErrDType},
		hostile.Case{"KindFromDLPack negative", func() error { return hostile.Second(devarray.KindFromDLPack(-1)) }, devarray.ErrDevice},
		hostile.Case{"DeviceKind DLPack past the table", func() error { return hostile.Second(devarray.DeviceKind(250).DLPack()) }, devarray.ErrDevice},
		hostile.Case{"DType DLPack invalid", func() error { _, _, _, err := devarray.DType(99).DLPack(); return err }, devarray.ErrDType},
		hostile.Case{"DType MarshalText invalid", func() error { return hostile.Second(devarray.Invalid.MarshalText()) }, devarray.ErrDType},
		hostile.Case{"DType UnmarshalText nil", func() error { return (*devarray.DType)(nil).UnmarshalText([]byte("float32")) }, devarray.ErrNil},
		hostile.Case{"values of bad enums", func() error {
			assert.Zero(t, devarray.DType(99).Size())
			assert.Empty(t, devarray.DType(99).Typestr())
			assert.NotEmpty(t, devarray.DType(99).String())
			assert.NotEmpty(t, devarray.DeviceKind(99).String())
			assert.False(t, devarray.DeviceKind(99).HostAccessible())
			assert.NotEmpty(t, devarray.DeviceID{Kind: 99, Ordinal: -1}.String())
			assert.Nil(t, devarray.AsBytes[float32](nil))
			assert.False(t, devarray.Place{}.OnHost())
			return nil
		}, nil},
	)
	hostile.Run(t, cases)
}

// Concurrent hostile use of one array: Free, Hold, Use, views and copies
// from many goroutines at once. Nothing panics, the race detector finds
// nothing, every call returns nil or ErrFreed, and the memory is freed
// exactly once (testdev checks the ledger).
func TestHostileConcurrentFree(t *testing.T) {
	dev := newDev(t)
	for range 20 {
		a, err := devarray.Zeros(dev, devarray.Float32, 64)
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch g % 4 {
				case 0:
					errs <- a.Free()
				case 1:
					release, err := a.Hold()
					if err == nil {
						err = release()
					}
					errs <- err
				case 2:
					errs <- devarray.Use(func() error { return nil }, a)
				case 3:
					v, err := a.Slice(0, 0, 32)
					if err == nil {
						err = v.CopyTo(make([]byte, 128))
					}
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				assert.ErrorIs(t, err, devarray.ErrFreed)
			}
		}
		assert.ErrorIs(t, a.Err(), devarray.ErrFreed)
	}
}
