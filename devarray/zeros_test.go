package devarray_test

import (
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// Zeros is one counted memset of exactly the array's bytes, over memory
// that held other data before; an array with no elements needs no device
// work at all (no memset, which a driver may refuse for a zero size).
func TestZerosMemsets(t *testing.T) {
	dev := newDev(t)
	n := 1 + rand.IntN(500)
	tests := []struct {
		name  string
		shape []int
	}{
		{"1-D", []int{n}},
		{"2-D", []int{1 + rand.IntN(20), 1 + rand.IntN(20)}},
		{"empty", []int{0}},
		{"empty axis", []int{1 + rand.IntN(20), 0, 1 + rand.IntN(20)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Leave other data in the memory Zeros is likely to get.
			size := 1
			for _, s := range tt.shape {
				size *= s
			}
			if size > 0 {
				old, err := devarray.FromHost(dev, randomFloat32(size), tt.shape...)
				require.NoError(t, err)
				require.NoError(t, old.Free())
			}
			before := dev.Ledger().Snapshot().Memsets
			a, err := devarray.Zeros(dev, devarray.Float32, tt.shape...)
			require.NoError(t, err)
			defer a.Free()
			m := dev.Ledger().Snapshot().Memsets
			if size == 0 {
				assert.Equal(t, before, m, "an empty array needs no memset")
			} else {
				assert.Equal(t, before.Count+1, m.Count, "one memset")
				assert.Equal(t, before.Bytes+a.NBytes(), m.Bytes, "of the array's bytes")
			}
			got, err := devarray.ToHost[float32](a)
			require.NoError(t, err)
			assert.Equal(t, make([]float32, size), got)
		})
	}
}

// failingBackend is a device whose Memset always fails and whose Free
// fails while errFree is set, recording what it refused to free.
type failingBackend struct {
	devarray.Backend
	errMemset, errFree error
	refusedFree        []devarray.Ptr
}

func (b *failingBackend) Memset(devarray.Ptr, byte, int64) error { return b.errMemset }

func (b *failingBackend) Free(p devarray.Ptr) error {
	if b.errFree != nil {
		b.refusedFree = append(b.refusedFree, p)
		return b.errFree
	}
	return b.Backend.Free(p)
}

// When Zeros' memset fails, Zeros frees the array; when that free fails
// too, the error wraps the memset's failure and names the free's, so the
// caller learns that memory may still be held.
func TestZerosReportsAFailedFree(t *testing.T) {
	dev := newDev(t)
	tests := []struct {
		name    string
		errFree error
	}{
		{"free succeeds", nil},
		{"free fails", errors.New("free refused by the device")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &failingBackend{Backend: dev, errMemset: errors.New("memset refused by the device"), errFree: tt.errFree}
			a, err := devarray.Zeros(b, devarray.Int32, 1+rand.IntN(100))
			assert.Nil(t, a)
			require.ErrorIs(t, err, b.errMemset)
			if tt.errFree != nil {
				assert.Contains(t, err.Error(), tt.errFree.Error(), "the failed free is reported")
				require.Len(t, b.refusedFree, 1, "Zeros tried to free its array")
				require.NoError(t, dev.Free(b.refusedFree[0]))
			}
		})
	}
}
