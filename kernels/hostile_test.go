package kernels_test

import (
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/hostile"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
)

// The kernels' exported functions and the plan methods they register,
// given nil, zero, negative, overflowing, freed and closed inputs, return
// typed errors and leak nothing (testdev checks the ledger).
func TestHostileInputs(t *testing.T) {
	dev, k := setup(t)
	var nilArr *devarray.DevArray
	a, err := devarray.Zeros(dev, devarray.Float32, 8, 8)
	require.NoError(t, err)
	defer a.Free()
	freed, err := devarray.Zeros(dev, devarray.Float32, 8, 8)
	require.NoError(t, err)
	require.NoError(t, freed.Free())
	ints, err := devarray.Zeros(dev, devarray.Int32, 8, 8)
	require.NoError(t, err)
	defer ints.Free()
	ro, err := a.AsReadOnly()
	require.NoError(t, err)
	closedDev, err := device.Open("sim:0?mem=1MiB")
	require.NoError(t, err)
	onClosed, err := devarray.Zeros(closedDev, devarray.Float32, 4)
	require.NoError(t, err)
	require.NoError(t, closedDev.Close())
	ws := accounting.NewWorkspace(dev)
	defer ws.Free()

	cases := []hostile.Case{
		{"New nil device", func() error { return hostile.Second(kernels.New(nil)) }, device.ErrInvalidValue},
		{"New closed device", func() error {
			// sim's ExternalStream says ErrInvalidValue, not ErrClosed, on a closed device.
			_, err := kernels.New(closedDev)
			assert.Error(t, err)
			return nil
		}, nil},

		// Nil, freed, read-only, wrong-dtype and closed arrays.
		{"Fill nil", func() error { return k.Fill(nilArr, 1) }, devarray.ErrNil},
		{"Scale nil", func() error { return k.Scale(nilArr, 1) }, devarray.ErrNil},
		{"Axpy nil y", func() error { return k.Axpy(nilArr, 1, a) }, devarray.ErrNil},
		{"Axpy nil x", func() error { return k.Axpy(a, 1, nilArr) }, devarray.ErrNil},
		{"Sum nil", func() error { return hostile.Second(k.Sum(nilArr)) }, devarray.ErrNil},
		{"Checksum nil", func() error { return hostile.Second(k.Checksum(nilArr)) }, devarray.ErrNil},
		{"Pack nil dst", func() error { return k.Pack(nilArr, a) }, devarray.ErrNil},
		{"Pack nil src", func() error { return k.Pack(a, nilArr) }, devarray.ErrNil},
		{"Unpack nil", func() error { return k.Unpack(nilArr, nilArr) }, devarray.ErrNil},
		{"RampFilter nil", func() error { return k.RampFilter(nilArr, ws) }, devarray.ErrNil},
		{"Backproject nil", func() error { return k.Backproject(nilArr, nilArr, ws) }, devarray.ErrNil},
		{"Project nil", func() error { return k.Project(nilArr, nilArr, ws) }, devarray.ErrNil},
		{"Phantom nil", func() error { return k.Phantom(nilArr, nil, 0, 1) }, devarray.ErrNil},
		{"Fill zero array", func() error { return k.Fill(new(devarray.DevArray), 1) }, devarray.ErrNil},
		{"Fill freed", func() error { return k.Fill(freed, 1) }, devarray.ErrFreed},
		{"Sum freed", func() error { return hostile.Second(k.Sum(freed)) }, devarray.ErrFreed},
		{"Fill read-only", func() error { return k.Fill(ro, 1) }, devarray.ErrReadOnly},
		{"Scale int32", func() error { return k.Scale(ints, 2) }, devarray.ErrDType},
		{"Pack shape mismatch", func() error {
			b, err := devarray.Zeros(dev, devarray.Float32, 4)
			require.NoError(t, err)
			defer b.Free()
			return k.Pack(b, a)
		}, devarray.ErrShape},
		{"Phantom negative first", func() error { return k.Phantom(a, nil, -1, 1) }, devarray.ErrShape},
		{"Phantom MaxInt total", func() error { return k.Phantom(a, nil, 0, math.MaxInt) }, devarray.ErrShape},
		{"RampFilter of strided rows", func() error {
			v, err := a.Slice(1, 0, 8, 2)
			require.NoError(t, err)
			return k.RampFilter(v, ws)
		}, devarray.ErrNotViewable},
		{"nil Kernels WithStream, Async, Device", func() error {
			var nk *kernels.Kernels
			assert.Nil(t, nk.WithStream(nil))
			assert.Nil(t, nk.Async(nil))
			assert.Nil(t, nk.Device())
			return nk.Async(nil).Scale(a, 2)
		}, device.ErrInvalidValue},
		{"RampFilter nil workspace", func() error {
			s, err := devarray.Zeros(dev, devarray.Float32, 1, 4, 8)
			require.NoError(t, err)
			defer s.Free()
			return k.RampFilter(s, nil)
		}, nil},

		// Nil kernels.
		{"nil Kernels Fill", func() error { return (*kernels.Kernels)(nil).Fill(a, 1) }, device.ErrInvalidValue},
		{"nil Kernels Close", func() error { return (*kernels.Kernels)(nil).Close() }, nil},
		{"zero Kernels Sum", func() error { return hostile.Second(new(kernels.Kernels).Sum(a)) }, device.ErrInvalidValue},

		// Workspace sizes of bad geometry are not a panic (negative: nothing fits).
		{"workspace sizes", func() error {
			_ = kernels.RampFilterWorkspace(-1, -1, -1)
			_ = kernels.RampFilterWorkspace(math.MaxInt64, math.MaxInt, 8)
			_ = kernels.BackprojectWorkspace(-1, 8)
			_ = kernels.ProjectWorkspace(math.MaxInt, 8)
			_ = kernels.Checksum(nil)
			return nil
		}, nil},
	}

	// The registered methods: unknown parameters, values out of range, nil
	// arrays and environments.
	for _, name := range []string{"kernels.scale", "kernels.transpose", "fbp.filter", "fbp.backproject", "fbp.reconstruct", "fbp.project"} {
		m, err := plan.Default.Lookup(name)
		require.NoError(t, err)
		add := func(what string, want error, call func() error) {
			cases = append(cases, hostile.Case{name + " " + what, call, want})
		}
		add("unknown parameter", plan.ErrParam, func() error {
			_, _, err := m.MaxSlices(0, [2]int{4, 4}, devarray.Float32, 1<<20, plan.Params{"nosuch": 1})
			return err
		})
		add("Run nil array", devarray.ErrNil, func() error { return hostile.Second(m.Run(plan.Env{Dev: dev, Workspace: ws}, nil, 0, nil)) })
		add("Run nil device", device.ErrInvalidValue, func() error { return hostile.Second(m.Run(plan.Env{}, a, 0, nil)) })
		add("MaxSlices overflowing slab", nil, func() error {
			s, _, err := m.MaxSlices(0, [2]int{math.MaxInt, math.MaxInt}, devarray.Float32, 1<<20, nil)
			if err == nil {
				assert.Zero(t, s, "a slab past int64 bytes fits nowhere")
			}
			return nil
		})
	}
	for _, tc := range []struct {
		method string
		params plan.Params
	}{
		{"fbp.backproject", plan.Params{"size": 0}},
		{"fbp.backproject", plan.Params{"size": -5}},
		{"fbp.reconstruct", plan.Params{"size": -1}},
		{"fbp.project", plan.Params{"angles": -1}},
		{"fbp.project", plan.Params{"detectors": 0}},
		{"fbp.filter", plan.Params{"angles": -1}},
		{"kernels.transpose", plan.Params{"factor": 2}},
	} {
		m, err := plan.Default.Lookup(tc.method)
		require.NoError(t, err)
		cases = append(cases, hostile.Case{tc.method + " " + "bad parameter", func() error {
			_, _, err := m.MaxSlices(0, [2]int{4, 4}, devarray.Float32, 1<<20, tc.params)
			return err
		}, plan.ErrParam})
	}
	if testdev.IsSim(dev) {
		// The closed device is sim:0 too: the array passes the device check
		// and its memory is no live allocation of these kernels' device,
		// which sim checks at every kernel's access (a GPU would run the
		// kernel on whatever memory is there, or fault).
		// Where sim runs the PTX (kernels=ptx), the kernel itself meets the
		// dead memory: an illegal address, sticky, as on a GPU, so the case
		// runs on a device of its own, which the fault leaves unusable.
		fill := func() error { return k.Fill(onClosed, 1) }
		want := device.ErrInvalidPointer
		if driver.RunsModules(dev) {
			want = device.ErrContextFailed
			fill = func() error {
				own, err := device.Open("sim:0?mem=1MiB&kernels=ptx")
				require.NoError(t, err)
				defer own.Close()
				ko, err := kernels.New(own)
				require.NoError(t, err)
				return ko.Fill(onClosed, 1)
			}
		}
		cases = append(cases, hostile.Case{"Fill on a closed device", fill, want})
	}
	hostile.Run(t, cases)
}

// Concurrent hostile use of one Kernels: kernels on arrays that other
// goroutines free. Nothing panics, the race detector finds nothing, and
// every error says the array was freed.
func TestHostileConcurrentFree(t *testing.T) {
	dev, k := setup(t)
	for range 10 {
		a, err := devarray.Zeros(dev, devarray.Float32, 64, 64)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				switch g % 4 {
				case 0:
					err = a.Free()
				case 1:
					err = k.Fill(a, 1)
				case 2:
					_, err = k.Sum(a)
				case 3:
					err = k.Scale(a, 2)
				}
				if err != nil {
					assert.ErrorIs(t, err, devarray.ErrFreed)
				}
			}()
		}
		wg.Wait()
		require.NoError(t, a.Free())
	}
}
