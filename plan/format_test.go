package plan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
	"github.com/cuarray/cuarray/plan"
)

// A plan prints in a line however many chunks it has (up to a million);
// its GoString writes the first few and counts the rest.
func TestFormatBounded(t *testing.T) {
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory, "the default sim device")
	defer dev.Close()
	method, err := plan.Default.Lookup("identity")
	require.NoError(t, err)
	onDevice, err := plan.ForDevice(dev, method, [3]int{1800, 2560, 2560}, 0, devarray.Float32, nil)
	require.NoError(t, err)
	// One slice of 64×64 float32 (16 KiB in, 16 KiB out) at a time: 100000 chunks.
	many, err := plan.ChunksRaw(method, [3]int{100000, 64, 64}, 0, devarray.Float32, nil, 40<<10)
	require.NoError(t, err)
	require.Len(t, many.Chunks, 100000)
	res := plan.Result{Method: "identity", Shape: [3]int{8, 8, 8}, DType: devarray.Float32, Slices: 8, Peak: 4096, Estimated: 8, Ratio: 1}

	tests := []struct {
		name string
		v    any
		want []string // in %v
	}{
		{"plan for the device", onDevice, []string{"identity on [1800 2560 2560] float32 along axis 0:", "chunks of at most"}},
		{"plan of 100000 chunks", many, []string{"100000 chunks of at most 1 slice", "32768 bytes per slice"}},
		{"zero plan", plan.Plan{}, []string{"0 chunks"}},
		{"chunk", many.Chunks[7], []string{"7 1"}},
		{"result", res, []string{"identity"}},
		{"case", plan.Case{Method: method, Shape: [3]int{8, 8, 8}, DType: devarray.Float32}, nil},
		{"env", plan.Env{Dev: dev, Workspace: accounting.NewWorkspace(dev)}, []string{"sim:0 (4.00 GiB", "workspace empty on sim:0"}},
		{"registry", plan.Default, []string{"plan registry: ", "identity"}},
		{"empty registry", &plan.Registry{}, []string{"plan registry: no methods"}},
		{"terms", many.Terms, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := fmtcheck.Bounded(t, tc.v)
			for _, w := range tc.want {
				assert.Contains(t, out["%v"], w)
			}
		})
	}

	g := many.GoString()
	assert.Contains(t, g, `plan.Plan{Method:"identity", Shape:[3]int{100000, 64, 64}, SliceDim:0, DType:0xc,`)
	assert.Contains(t, g, "Chunks:[]plan.Chunk{{Start:0, Len:1}, {Start:1, Len:1}, {Start:2, Len:1}, {Start:3, Len:1}, /* 99996 more, 100000 in all */}")
	assert.Contains(t, g, `Raw:true, Terms:[]plan.Term{plan.Term{Name:"input"`)
	assert.Contains(t, plan.Plan{}.GoString(), "Chunks:[]plan.Chunk(nil)")
}
