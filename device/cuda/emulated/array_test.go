//go:build cuda && cudaemu && linux

package emulated

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
)

// TestArrays makes CUDA arrays of every kind cuArray3DCreate's page lists,
// reads their descriptors back, sees their memory counted, and destroys
// them; descriptors the page rules out are refused.
func TestArrays(t *testing.T) {
	lockedDriver(t)
	makeContext(t, cu.SchedAuto)
	w, h := uint(1+rand.IntN(512)), uint(1+rand.IntN(512))
	for _, tc := range []struct {
		name  string
		desc  cu.Array3Desc
		bytes uint
		err   error
	}{
		{"1D", cu.Array3Desc{Width: w, Format: cu.Uint8, NumChannels: 1}, w, nil},
		{"2D", cu.Array3Desc{Width: w, Height: h, Format: cu.Float32, NumChannels: 4}, w * h * 16, nil},
		{"3D", cu.Array3Desc{Width: w, Height: h, Depth: 3, Format: cu.Float16, NumChannels: 2}, w * h * 3 * 4, nil},
		{"1D layered", cu.Array3Desc{Width: w, Depth: 5, Format: cu.Int16, NumChannels: 1, Flags: arrayLayered}, w * 5 * 2, nil},
		{"cubemap", cu.Array3Desc{Width: 64, Height: 64, Depth: 6, Format: cu.Int32, NumChannels: 1, Flags: arrayCubemap}, 64 * 64 * 6 * 4, nil},
		{"cubemap layered", cu.Array3Desc{Width: 8, Height: 8, Depth: 12, Format: cu.Int8, NumChannels: 1, Flags: arrayCubemap | arrayLayered}, 8 * 8 * 12, nil},
		{"2D for texture gather", cu.Array3Desc{Width: w, Height: h, Format: cu.Uint16, NumChannels: 1, Flags: arrayTextureGather}, w * h * 2, nil},
		{"no width", cu.Array3Desc{Height: h, Format: cu.Uint8, NumChannels: 1}, 0, cu.InvalidValue},
		{"depth without height", cu.Array3Desc{Width: w, Depth: 2, Format: cu.Uint8, NumChannels: 1}, 0, cu.InvalidValue},
		{"three channels", cu.Array3Desc{Width: w, Format: cu.Uint8, NumChannels: 3}, 0, cu.InvalidValue},
		{"no format", cu.Array3Desc{Width: w, Format: 0x42, NumChannels: 1}, 0, cu.InvalidValue},
		{"NV12", cu.Array3Desc{Width: w, Height: h, Format: 0xb0, NumChannels: 3}, 0, cu.NotSupported},
		{"cubemap not square", cu.Array3Desc{Width: 64, Height: 32, Depth: 6, Format: cu.Uint8, NumChannels: 1, Flags: arrayCubemap}, 0, cu.InvalidValue},
		{"cubemap of five faces", cu.Array3Desc{Width: 64, Height: 64, Depth: 5, Format: cu.Uint8, NumChannels: 1, Flags: arrayCubemap}, 0, cu.InvalidValue},
		{"3D gather", cu.Array3Desc{Width: w, Height: h, Depth: 2, Format: cu.Uint8, NumChannels: 1, Flags: arrayTextureGather}, 0, cu.InvalidValue},
		{"1D too wide", cu.Array3Desc{Width: maxArrayWidth + 1, Format: cu.Uint8, NumChannels: 1}, 0, cu.InvalidValue},
		{"sparse", cu.Array3Desc{Width: w, Height: h, Format: cu.Uint8, NumChannels: 1, Flags: arraySparse}, 0, cu.NotSupported},
		{"unknown flag", cu.Array3Desc{Width: w, Format: cu.Uint8, NumChannels: 1, Flags: 0x100}, 0, cu.InvalidValue},
	} {
		free0, _, err := cu.MemInfo()
		require.NoError(t, err)
		arr, err := cu.Make3DArray(tc.desc)
		if tc.err != nil {
			assert.Equal(t, tc.err, err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		free1, _, err := cu.MemInfo()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, free0-free1, int64(tc.bytes), "%s: its memory is counted", tc.name)
		got, err := arr.Descriptor3()
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.desc, got, tc.name)
		d2, err := arr.Descriptor()
		if tc.desc.Depth != 0 {
			assert.Equal(t, cu.InvalidValue, err, "%s: cuArrayGetDescriptor of an array with a depth", tc.name)
		} else {
			require.NoError(t, err, tc.name)
			assert.Equal(t, cu.ArrayDesc{Width: tc.desc.Width, Height: tc.desc.Height, Format: tc.desc.Format, NumChannels: tc.desc.NumChannels}, d2, tc.name)
		}
		require.NoError(t, arr.Destroy(), tc.name)
		free2, _, err := cu.MemInfo()
		require.NoError(t, err)
		assert.Equal(t, free0, free2, "%s: cuArrayDestroy frees its memory", tc.name)
		_, err = arr.Descriptor3()
		assert.Equal(t, cu.InvalidHandle, err, "%s: a destroyed array", tc.name)
	}

	arr, err := cu.MakeArray(cu.ArrayDesc{Width: w, Height: h, Format: cu.Float32, NumChannels: 1})
	require.NoError(t, err, "cuArrayCreate")
	d, err := arr.Descriptor()
	require.NoError(t, err)
	assert.Equal(t, cu.ArrayDesc{Width: w, Height: h, Format: cu.Float32, NumChannels: 1}, d)
	require.NoError(t, arr.Destroy())
}
