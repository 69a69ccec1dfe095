package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

func roundTrip[T devarray.Element](t *testing.T, dev devarray.Backend, data []T) {
	t.Helper()
	a, err := devarray.FromHost(dev, data, 2, len(data)/2)
	require.NoError(t, err)
	defer a.Free()
	assert.Equal(t, devarray.DTypeOf[T](), a.DType())
	got, err := devarray.ToHost[T](a)
	require.NoError(t, err)
	assert.Equal(t, data, got, "%v round trip", a.DType())
}

func TestRoundTripEveryGoType(t *testing.T) {
	dev := newDev(t)
	const n = 10
	roundTrip(t, dev, func() []bool {
		s := make([]bool, n)
		for i := range s {
			s[i] = rand.IntN(2) == 1
		}
		return s
	}())
	roundTrip(t, dev, randomInts[int8](n))
	roundTrip(t, dev, randomInts[int16](n))
	roundTrip(t, dev, randomInts[int32](n))
	roundTrip(t, dev, randomInts[int64](n))
	roundTrip(t, dev, randomInts[uint8](n))
	roundTrip(t, dev, randomInts[uint16](n))
	roundTrip(t, dev, randomInts[uint32](n))
	roundTrip(t, dev, randomInts[uint64](n))
	roundTrip(t, dev, randomFloat32(n))
	roundTrip(t, dev, func() []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = rand.NormFloat64()
		}
		return s
	}())
	roundTrip(t, dev, func() []complex64 {
		s := make([]complex64, n)
		for i := range s {
			s[i] = complex(rand.Float32(), rand.Float32())
		}
		return s
	}())
	roundTrip(t, dev, func() []complex128 {
		s := make([]complex128, n)
		for i := range s {
			s[i] = complex(rand.Float64(), rand.Float64())
		}
		return s
	}())
	type celsius float32 // named types work through ~float32
	roundTrip(t, dev, []celsius{1.5, -3, 7, 21})
}

func randomInts[T ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64](n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(rand.Uint64())
	}
	return s
}

func TestFromBytesHalfPrecision(t *testing.T) {
	dev := newDev(t)
	raw := make([]byte, 2*6)
	for i := range raw {
		raw[i] = byte(rand.Uint32())
	}
	for _, dt := range []devarray.DType{devarray.Float16, devarray.BFloat16} {
		a, err := devarray.FromBytes(dev, raw, dt, 2, 3)
		require.NoError(t, err)
		got := make([]byte, a.NBytes())
		require.NoError(t, a.CopyTo(got))
		assert.Equal(t, raw, got, dt.String())
		require.NoError(t, a.Free())
	}
}

func TestHostCopyCounts(t *testing.T) {
	dev := newDev(t)
	host := randomFloat32(1000)
	a, err := devarray.FromHost(dev, host)
	require.NoError(t, err)
	defer a.Free()
	s := dev.Ledger().Snapshot()
	assert.Equal(t, accounting.CopyStats{Count: 1, Bytes: 4000, Seconds: s.Copies[accounting.HtoD][accounting.PathDirect].Seconds},
		s.Copies[accounting.HtoD][accounting.PathDirect], "FromHost is one pageable host-to-device copy")
	assert.Equal(t, int64(4096), s.Kinds[accounting.Device].Current, "the device counts 256-byte aligned sizes")

	_, err = devarray.ToHost[float32](a)
	require.NoError(t, err)
	assert.Equal(t, int64(4000), dev.Ledger().Snapshot().CopyTotal(accounting.DtoH).Bytes)
}

func TestHostSizeAndTypeErrors(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.FromHost(dev, randomFloat32(6), 2, 3)
	require.NoError(t, err)
	defer a.Free()
	assert.ErrorIs(t, a.CopyTo(make([]byte, 23)), devarray.ErrHostSize)
	assert.ErrorIs(t, a.CopyFrom(make([]byte, 25)), devarray.ErrHostSize)
	_, err = devarray.ToHost[float64](a)
	assert.ErrorIs(t, err, devarray.ErrDType)

	_, err = devarray.FromHost(dev, randomFloat32(6), 4, 2)
	assert.ErrorIs(t, err, devarray.ErrHostSize)
	_, err = devarray.FromBytes(dev, nil, devarray.Invalid, 0)
	assert.ErrorIs(t, err, devarray.ErrDType)
	_, err = devarray.FromBytes(dev, nil, devarray.Float32, -1)
	assert.ErrorIs(t, err, devarray.ErrShape)
	_, err = devarray.Empty(dev, devarray.DType(77), 3)
	assert.ErrorIs(t, err, devarray.ErrDType)
	_, err = devarray.Empty(nil, devarray.Float32, 3)
	assert.ErrorIs(t, err, devarray.ErrNoBackend)
	_, err = devarray.Empty(dev, devarray.Float64, 1<<31, 1<<31)
	assert.ErrorIs(t, err, devarray.ErrOverflow)
	assert.Zero(t, dev.Ledger().Snapshot().Kinds[accounting.Device].Failed, "refused before reaching the device")
}

func TestFailureHalfWayFreesEverything(t *testing.T) {
	tests := []struct {
		name string
		cfg  sim.Config
		make func(dev *sim.Device) (*devarray.DevArray, error)
		want error
	}{
		{"FromHost copy fails", sim.Config{FailCopy: 1}, func(dev *sim.Device) (*devarray.DevArray, error) {
			return devarray.FromHost(dev, randomFloat32(512), 16, 32)
		}, driver.ErrInjected},
		{"FromBytes copy fails", sim.Config{FailCopy: 1}, func(dev *sim.Device) (*devarray.DevArray, error) {
			return devarray.FromBytes(dev, make([]byte, 64), devarray.Uint8, 8, 8)
		}, driver.ErrInjected},
		{"Zeros memset fails", sim.Config{FailCopy: 1}, func(dev *sim.Device) (*devarray.DevArray, error) {
			return devarray.Zeros(dev, devarray.Int16, 100)
		}, driver.ErrInjected},
		{"allocation fails", sim.Config{FailAlloc: 1}, func(dev *sim.Device) (*devarray.DevArray, error) {
			return devarray.FromHost(dev, randomFloat32(8))
		}, accounting.ErrOutOfMemory},
		{"device too small", sim.Config{Memory: 4096}, func(dev *sim.Device) (*devarray.DevArray, error) {
			return devarray.Empty(dev, devarray.Float64, 1024)
		}, accounting.ErrOutOfMemory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.Memory == 0 {
				tt.cfg.Memory = 1 << 20
			}
			dev, err := sim.New(tt.cfg)
			require.NoError(t, err)
			defer dev.Close()
			a, err := tt.make(dev)
			assert.Nil(t, a)
			assert.ErrorIs(t, err, tt.want)
			s := dev.Ledger().Snapshot().Kinds[accounting.Device]
			assert.Zero(t, s.Current, "nothing stays allocated")
			assert.Equal(t, s.Allocs, s.Frees)
			free, total, err := dev.MemInfo()
			require.NoError(t, err)
			assert.Equal(t, total, free, "the device has all its memory back")
		})
	}
}

// CopyFromHost is the typed upload beside ToHost: into a whole array or a
// strided view, one counted host-to-device copy of exactly the elements'
// bytes; a wrong type, a wrong length, a read-only or freed array is an
// error that moves nothing.
func TestCopyFromHost(t *testing.T) {
	dev := newDev(t)
	for _, tc := range []struct {
		name  string
		view  func(a *devarray.DevArray) (*devarray.DevArray, error)
		check func(t *testing.T, whole, data []float32)
	}{
		{"whole", func(a *devarray.DevArray) (*devarray.DevArray, error) { return a, nil },
			func(t *testing.T, whole, data []float32) { assert.Equal(t, data, whole) }},
		{"transposed view", func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Transpose() },
			func(t *testing.T, whole, data []float32) {
				for i := range 4 {
					for j := range 6 {
						assert.Equal(t, data[j*4+i], whole[i*6+j], "[%d,%d]", i, j)
					}
				}
			}},
		{"every other column", func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Slice(1, 0, 6, 2) },
			func(t *testing.T, whole, data []float32) {
				for i := range 4 {
					for j := range 3 {
						assert.Equal(t, data[i*3+j], whole[i*6+2*j], "[%d,%d]", i, 2*j)
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := devarray.FromHost(dev, randomFloat32(24), 4, 6)
			require.NoError(t, err)
			defer a.Free()
			v, err := tc.view(a)
			require.NoError(t, err)
			data := randomFloat32(int(v.Size()))
			before := dev.Ledger().Snapshot()
			require.NoError(t, devarray.CopyFromHost(v, data))
			up := accounting.Diff(before, dev.Ledger().Snapshot()).CopyTotal(accounting.HtoD)
			assert.Equal(t, int64(4*len(data)), up.Bytes, "only the view's elements go up")
			got, err := devarray.ToHost[float32](v)
			require.NoError(t, err)
			assert.Equal(t, data, got, "read back through the same view")
			whole, err := devarray.ToHost[float32](a)
			require.NoError(t, err)
			tc.check(t, whole, data)
		})
	}

	a, err := devarray.FromHost(dev, randomFloat32(24), 4, 6)
	require.NoError(t, err)
	ro, err := devarray.Wrap(dev, func() devarray.Descriptor { d, _ := a.Descriptor(); d.ReadOnly = true; return d }())
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		err  func() error
		want error
	}{
		{"wrong type", func() error { return devarray.CopyFromHost(a, make([]float64, 24)) }, devarray.ErrDType},
		{"too short", func() error { return devarray.CopyFromHost(a, randomFloat32(23)) }, devarray.ErrHostSize},
		{"too long", func() error { return devarray.CopyFromHost(a, randomFloat32(25)) }, devarray.ErrHostSize},
		{"read-only", func() error { return devarray.CopyFromHost(ro, randomFloat32(24)) }, devarray.ErrReadOnly},
		{"nil array", func() error { return devarray.CopyFromHost[float32](nil, randomFloat32(24)) }, devarray.ErrNil},
		{"freed", func() error { require.NoError(t, a.Free()); return devarray.CopyFromHost(a, randomFloat32(24)) }, devarray.ErrFreed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dev.Ledger().Snapshot()
			assert.ErrorIs(t, tc.err(), tc.want)
			assert.Zero(t, accounting.Diff(before, dev.Ledger().Snapshot()).Copied().Count, "nothing moved")
		})
	}
}
