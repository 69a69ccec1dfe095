package devarray_test

import (
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

func TestFreeIsIdempotentAndViewsSeeIt(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.FromHost(dev, randomFloat32(64), 8, 8)
	require.NoError(t, err)
	v, err := a.Slice(0, 2, 6)
	require.NoError(t, err)

	assert.ErrorIs(t, v.Free(), devarray.ErrNotOwner, "a view does not free")
	require.NoError(t, a.Err())
	require.NoError(t, a.Free())
	require.NoError(t, a.Free(), "a second Free is harmless")
	led := dev.Ledger().Snapshot().Kinds[accounting.Device]
	assert.Equal(t, int64(1), led.Frees, "freed once")
	assert.Zero(t, led.Current)

	for _, arr := range []*devarray.DevArray{a, v} {
		assert.ErrorIs(t, arr.Err(), devarray.ErrFreed)
		_, err = devarray.ToHost[float32](arr)
		assert.ErrorIs(t, err, devarray.ErrFreed)
		assert.ErrorIs(t, arr.CopyFrom(make([]byte, arr.NBytes())), devarray.ErrFreed)
		_, err = arr.Descriptor()
		assert.ErrorIs(t, err, devarray.ErrFreed)
		_, err = arr.Transpose()
		assert.ErrorIs(t, err, devarray.ErrFreed, "no new views of freed memory")
	}
	var nilArray *devarray.DevArray
	assert.NoError(t, nilArray.Free())
}

func TestFreeWaitsForCopies(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.FromHost(dev, randomFloat32(1<<16))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				_, err := devarray.ToHost[float32](a)
				if err != nil && !errors.Is(err, devarray.ErrFreed) {
					t.Errorf("copy racing with Free: %v", err)
					return
				}
			}
		}()
	}
	require.NoError(t, a.Free())
	wg.Wait()
}

func TestWrapBorrows(t *testing.T) {
	dev := newDev(t)
	owner, err := devarray.FromHost(dev, randomFloat32(100), 10, 10)
	require.NoError(t, err)
	defer owner.Free()
	host, err := devarray.ToHost[float32](owner)
	require.NoError(t, err)

	released := 0
	before := dev.Ledger().Snapshot()
	// Borrow column 3 of the owner: 10 elements, stride one row.
	b, err := devarray.Wrap(dev, devarray.Descriptor{
		Ptr: owner.Ptr() + 3*4, Shape: []int{10}, Strides: []int64{40}, DType: devarray.Float32, Device: dev.DeviceID(), ReadOnly: true,
	}, devarray.WithBounds(owner.Ptr(), owner.NBytes()), devarray.OnFree(func() error { released++; return nil }))
	require.NoError(t, err)
	assert.False(t, b.Owned())
	assert.True(t, b.ReadOnly())
	assert.Contains(t, b.String(), "borrowed")
	got, err := devarray.ToHost[float32](b)
	require.NoError(t, err)
	for i := range 10 {
		assert.Equal(t, host[i*10+3], got[i])
	}
	require.NoError(t, b.Free())
	require.NoError(t, b.Free())
	assert.Equal(t, 1, released, "release runs once")
	d := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Zero(t, d.Allocations(), "borrowing counts no allocation")
	assert.Zero(t, d.Kinds[accounting.Device].Frees, "and no free")
	require.NoError(t, owner.Err(), "the owner is untouched")
}

func TestWrapValidates(t *testing.T) {
	dev := newDev(t)
	base := devarray.Ptr(0x10000)
	id := dev.DeviceID()
	f32 := devarray.Float32
	// Another device whatever the test device is: the next ordinal of its
	// kind, and the same ordinal of another kind.
	otherOrdinal := devarray.DeviceID{Kind: id.Kind, Ordinal: id.Ordinal + 1}
	otherKind := devarray.DeviceID{Kind: devarray.CUDA, Ordinal: id.Ordinal}
	if id.Kind == devarray.CUDA {
		otherKind.Kind = devarray.Sim
	}
	tests := []struct {
		name string
		d    devarray.Descriptor
		opts []devarray.WrapOption
		want error
	}{
		{"bad dtype", devarray.Descriptor{Ptr: base, Shape: []int{4}, Device: id}, nil, devarray.ErrDType},
		{"other device", devarray.Descriptor{Ptr: base, Shape: []int{4}, DType: f32, Device: otherOrdinal}, nil, devarray.ErrDevice},
		{"other kind", devarray.Descriptor{Ptr: base, Shape: []int{4}, DType: f32, Device: otherKind}, nil, devarray.ErrDevice},
		{"negative shape", devarray.Descriptor{Ptr: base, Shape: []int{-4}, DType: f32, Device: id}, nil, devarray.ErrShape},
		{"stride count", devarray.Descriptor{Ptr: base, Shape: []int{4}, Strides: []int64{4, 4}, DType: f32, Device: id}, nil, devarray.ErrShape},
		{"null pointer", devarray.Descriptor{Shape: []int{4}, DType: f32, Device: id}, nil, devarray.ErrBounds},
		{"past the end", devarray.Descriptor{Ptr: base, Shape: []int{5}, DType: f32, Device: id}, []devarray.WrapOption{devarray.WithBounds(base, 16)}, devarray.ErrBounds},
		{"before the start", devarray.Descriptor{Ptr: base - 4, Shape: []int{2}, DType: f32, Device: id}, []devarray.WrapOption{devarray.WithBounds(base, 16)}, devarray.ErrBounds},
		{"negative stride below", devarray.Descriptor{Ptr: base, Shape: []int{2}, Strides: []int64{-4}, DType: f32, Device: id}, []devarray.WrapOption{devarray.WithBounds(base, 16)}, devarray.ErrBounds},
		{"negative allocation size", devarray.Descriptor{Ptr: base, Shape: []int{1}, DType: f32, Device: id}, []devarray.WrapOption{devarray.WithBounds(base, -14)}, devarray.ErrBounds},
		{"pointer far past its base", devarray.Descriptor{Ptr: devarray.Ptr(1<<63 + 8), Shape: []int{4}, DType: f32, Device: id}, []devarray.WrapOption{devarray.WithBounds(8, 1<<62)}, devarray.ErrBounds},
		{"extent past int64", devarray.Descriptor{Ptr: devarray.Ptr(1<<63 - 8), Shape: []int{4}, DType: f32, Device: id}, []devarray.WrapOption{devarray.WithBounds(0, 1<<62)}, devarray.ErrBounds},
		{"stride overflow", devarray.Descriptor{Ptr: base, Shape: []int{3}, Strides: []int64{1 << 62}, DType: f32, Device: id}, nil, devarray.ErrOverflow},
		{"size overflow", devarray.Descriptor{Ptr: base, Shape: []int{1 << 40, 1 << 40}, DType: f32, Device: id}, nil, devarray.ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := devarray.Wrap(dev, tt.d, tt.opts...)
			assert.Nil(t, a)
			assert.ErrorIs(t, err, tt.want)
		})
	}
	// Without a backend, a wrapped array describes memory but cannot move it.
	a, err := devarray.Wrap(nil, devarray.Descriptor{Ptr: base, Shape: []int{4}, DType: f32, Device: devarray.DeviceID{Kind: devarray.CUDA}})
	require.NoError(t, err)
	_, err = devarray.ToHost[float32](a)
	assert.ErrorIs(t, err, devarray.ErrNoBackend)
	assert.NoError(t, a.Free(), "nothing to release")
}

func TestReleaseErrorIsReported(t *testing.T) {
	boom := errors.New("deleter failed")
	a, err := devarray.Wrap(nil, devarray.Descriptor{Ptr: 0x100, Shape: []int{1}, DType: devarray.Uint8},
		devarray.OnFree(func() error { return boom }))
	require.NoError(t, err)
	assert.ErrorIs(t, a.Free(), boom)
	assert.NoError(t, a.Free(), "still freed once")
}

func TestFreeAfterDeviceClose(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.Empty(dev, devarray.Uint8, 10)
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	assert.ErrorIs(t, a.Free(), driver.ErrClosed, "the device is gone: an error, not a crash")
	assert.ErrorIs(t, a.Err(), devarray.ErrFreed)
}

func TestUseHoldsMemory(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.FromHost(dev, randomFloat32(64), 8, 8)
	require.NoError(t, err)
	tr, err := a.Transpose()
	require.NoError(t, err)
	b, err := devarray.FromHost(dev, randomFloat32(4))
	require.NoError(t, err)

	// Views of one array lock its memory once: no self-deadlock.
	ran := false
	require.NoError(t, devarray.Use(func() error { ran = true; return nil }, a, tr, b, a))
	assert.True(t, ran)

	// Free while f runs returns at once and marks the array freed; the
	// memory stays allocated until f returns, and f can still ask the array
	// its state (no lock is held while f runs).
	held := dev.Ledger().Current(accounting.Device)
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- devarray.Use(func() error {
			close(inside)
			<-release
			if tr.Err() == nil {
				return errors.New("Err inside Use did not see the Free")
			}
			return nil
		}, tr)
	}()
	<-inside
	freed := make(chan error)
	go func() { freed <- a.Free() }()
	select {
	case err := <-freed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Free blocked while Use held the memory")
	}
	assert.Equal(t, held, dev.Ledger().Current(accounting.Device), "memory freed while Use still runs")
	assert.ErrorIs(t, a.Err(), devarray.ErrFreed)
	close(release)
	require.NoError(t, <-done)
	assert.Equal(t, held-a.NBytes(), dev.Ledger().Current(accounting.Device), "memory not freed when Use returned")

	err = devarray.Use(func() error { t.Fatal("f ran on freed memory"); return nil }, b, tr)
	assert.ErrorIs(t, err, devarray.ErrFreed)
	require.NoError(t, b.Free())
}

// Use names the array it refuses by its place among the arrays given, so
// a caller passing many can tell which: a nil or zero one is ErrNil, a
// freed one ErrFreed, and the memory of the arrays before it is not held
// afterwards (their Free releases it at once).
func TestUseNamesTheArrayItRefuses(t *testing.T) {
	dev := newDev(t)
	for _, bad := range []string{"nil", "zero", "freed"} {
		t.Run(bad, func(t *testing.T) {
			n := 2 + rand.IntN(6)
			k := rand.IntN(n) // the refused array's index
			arrays := make([]*devarray.DevArray, n)
			for i := range arrays {
				a, err := devarray.FromHost(dev, randomFloat32(1+rand.IntN(64)))
				require.NoError(t, err)
				arrays[i] = a
			}
			refused := arrays[k]
			want := devarray.ErrFreed
			switch bad {
			case "nil":
				arrays[k], want = nil, devarray.ErrNil
			case "zero":
				arrays[k], want = &devarray.DevArray{}, devarray.ErrNil
			}
			require.NoError(t, refused.Free())
			err := devarray.Use(func() error { t.Fatal("f ran"); return nil }, arrays...)
			require.ErrorIs(t, err, want)
			assert.Contains(t, err.Error(), fmt.Sprintf("array %d of %d", k+1, n))
			for i, a := range arrays {
				if i != k {
					require.NoError(t, a.Free())
				}
			}
			assert.Zero(t, dev.Ledger().Current(accounting.Device), "no hold kept memory")
		})
	}
}
