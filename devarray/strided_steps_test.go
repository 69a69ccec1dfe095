package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// recordingSteps are StridedSteps on the test device that record which
// operations a strided copy asked for. Pitched and contiguous copies go
// to the device; Pack and Unpack move the elements through host memory
// (the layout is StridedCopy's concern here, not the kernel's).
type recordingSteps struct {
	t     *testing.T
	dev   devarray.Backend
	no3D  bool // the steps have no 3-D copy
	calls []string
	temps []*devarray.DevArray
}

func (s *recordingSteps) record(c string) { s.calls = append(s.calls, c) }

func (s *recordingSteps) CopyHtoD(dst devarray.Ptr, src []byte) error {
	s.record("htod")
	return s.dev.CopyHtoD(dst, src)
}

func (s *recordingSteps) CopyDtoH(dst []byte, src devarray.Ptr) error {
	s.record("dtoh")
	return s.dev.CopyDtoH(dst, src)
}

func (s *recordingSteps) Memcpy2D(p devarray.Memcpy2D) error {
	s.record("2d")
	return s.dev.Memcpy2D(p)
}

func (s *recordingSteps) Memcpy3D(p devarray.Memcpy3D) (bool, error) {
	d3, ok := s.dev.(interface{ Memcpy3D(devarray.Memcpy3D) error })
	if s.no3D || !ok {
		s.record("no 3d")
		return false, nil
	}
	s.record("3d")
	return true, d3.Memcpy3D(p)
}

func (s *recordingSteps) Temp(a *devarray.DevArray) (*devarray.DevArray, error) {
	s.record("temp")
	t, err := devarray.Empty(s.dev, a.DType(), a.Shape()...)
	if err == nil {
		s.temps = append(s.temps, t)
	}
	return t, err
}

func (s *recordingSteps) Pack(dst, src *devarray.DevArray) error {
	s.record("pack")
	b := make([]byte, src.NBytes())
	if err := src.CopyTo(b); err != nil {
		return err
	}
	return dst.CopyFrom(b)
}

func (s *recordingSteps) Unpack(dst, src *devarray.DevArray) error {
	s.record("unpack")
	b := make([]byte, src.NBytes())
	if err := src.CopyTo(b); err != nil {
		return err
	}
	return dst.CopyFrom(b)
}

func (s *recordingSteps) HostTemp(n int64) ([]byte, error) {
	s.record("host temp")
	return make([]byte, n), nil
}

func (s *recordingSteps) Scatter(h *devarray.HostStrided, packed []byte) error {
	s.record("scatter")
	return h.Scatter(packed, 0)
}

func (s *recordingSteps) free() {
	for _, t := range s.temps {
		require.NoError(s.t, t.Free())
	}
}

// StridedCopy picks its steps by the layouts: one pitched copy when rows
// are at least MinPitchedWidth bytes wide or there are at most
// MaxNarrowRows of them (rows × slices for a 3-D copy), else a pack (or
// unpack) on the device; a 3-D layout on steps without a 3-D copy is
// packed; a strided host side is gathered or scattered in host memory.
// Either way the elements land where the reference says, both directions.
func TestStridedCopySteps(t *testing.T) {
	dev := newDev(t)
	if _, ok := dev.(interface{ Memcpy3D(devarray.Memcpy3D) error }); !ok {
		t.Skip("the test device has no 3-D copy; the 3-D cases need one")
	}
	packDown, packUp := []string{"temp", "pack", "dtoh"}, []string{"temp", "htod", "unpack"}
	type view struct {
		parent []int
		rows   [2]int // of axis len(parent)-2
		cols   [2]int // of the last axis
	}
	tests := []struct {
		name     string
		v        view
		hostPad  int64 // bytes of padding after each host row; 0: a C-contiguous host side
		no3D     bool
		down, up []string
	}{
		{"rows of MinPitchedWidth bytes, many of them", view{[]int{devarray.MaxNarrowRows + 76, 128}, [2]int{0, devarray.MaxNarrowRows + 76}, [2]int{0, devarray.MinPitchedWidth / 4}},
			0, false, []string{"2d"}, []string{"2d"}},
		{"rows just narrower, many of them", view{[]int{devarray.MaxNarrowRows + 76, 128}, [2]int{0, devarray.MaxNarrowRows + 76}, [2]int{1, devarray.MinPitchedWidth / 4}},
			0, false, packDown, packUp},
		{"MaxNarrowRows narrow rows", view{[]int{devarray.MaxNarrowRows, 8}, [2]int{0, devarray.MaxNarrowRows}, [2]int{3, 4}},
			0, false, []string{"2d"}, []string{"2d"}},
		{"one narrow row more", view{[]int{devarray.MaxNarrowRows + 1, 8}, [2]int{0, devarray.MaxNarrowRows + 1}, [2]int{3, 4}},
			0, false, packDown, packUp},
		{"3-D, narrow rows, more rows than MaxNarrowRows in all", view{[]int{2, 601, 8}, [2]int{0, 600}, [2]int{5, 6}},
			0, false, packDown, packUp},
		{"3-D, narrow rows, few in all", view{[]int{2, 301, 8}, [2]int{0, 300}, [2]int{5, 6}},
			0, false, []string{"3d"}, []string{"3d"}},
		{"3-D, wide rows", view{[]int{2, 10, 80}, [2]int{0, 9}, [2]int{0, 64}},
			0, false, []string{"3d"}, []string{"3d"}},
		{"3-D, wide rows, as many rows as slices", view{[]int{3, 4, 80}, [2]int{0, 3}, [2]int{0, 64}},
			0, false, []string{"3d"}, []string{"3d"}},
		{"3-D, wide rows, steps without a 3-D copy", view{[]int{2, 10, 80}, [2]int{0, 9}, [2]int{0, 64}},
			0, true, append([]string{"no 3d"}, packDown...), append([]string{"no 3d"}, packUp...)},
		{"a padded host side of a narrow view", view{[]int{devarray.MaxNarrowRows + 5, 8}, [2]int{0, devarray.MaxNarrowRows + 5}, [2]int{2, 5}},
			8, false, []string{"temp", "pack", "host temp", "dtoh", "scatter"}, []string{"temp", "host temp", "htod", "unpack"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 1
			for _, d := range tt.v.parent {
				n *= d
			}
			data := randomFloat32(n)
			parent, err := devarray.FromHost(dev, data, tt.v.parent...)
			require.NoError(t, err)
			defer parent.Free()
			nd := len(tt.v.parent)
			v, err := parent.Slice(nd-2, tt.v.rows[0], tt.v.rows[1])
			require.NoError(t, err)
			v, err = v.Slice(nd-1, tt.v.cols[0], tt.v.cols[1])
			require.NoError(t, err)
			r := identity(tt.v.parent).slice(nd-2, tt.v.rows[0], tt.v.rows[1], 1).slice(nd-1, tt.v.cols[0], tt.v.cols[1], 1)
			want := r.expect(data, tt.v.parent)

			// The host side: C-contiguous, or rows padded by hostPad bytes.
			shape := v.Shape()
			strides := contiguousStrides(shape, 4)
			if tt.hostPad > 0 {
				row := strides[nd-2] + tt.hostPad
				for ax := nd - 2; ax >= 0; ax-- {
					strides[ax] = row
					row *= int64(shape[ax])
				}
			} else {
				strides = nil
			}
			mem := make([]byte, 4*v.Size()+tt.hostPad*int64(v.Size()))
			for i := range mem {
				mem[i] = byte(rand.Uint32())
			}
			h, err := devarray.NewHostStrided(mem, 0, shape, strides, 4)
			require.NoError(t, err)

			steps := &recordingSteps{t: t, dev: dev, no3D: tt.no3D}
			require.NoError(t, devarray.StridedCopy(steps, v, h, false))
			steps.free()
			assert.Equal(t, tt.down, steps.calls, "download steps")
			got := make([]byte, h.Len())
			require.NoError(t, h.Gather(got, 0))
			assert.Equal(t, devarray.AsBytes(want), got, "downloaded elements")

			fresh := randomFloat32(int(v.Size()))
			require.NoError(t, h.Scatter(devarray.AsBytes(fresh), 0))
			steps = &recordingSteps{t: t, dev: dev, no3D: tt.no3D}
			require.NoError(t, devarray.StridedCopy(steps, v, h, true))
			steps.free()
			assert.Equal(t, tt.up, steps.calls, "upload steps")
			back, err := devarray.ToHost[float32](v)
			require.NoError(t, err)
			assert.Equal(t, fresh, back, "uploaded elements")
		})
	}
}
