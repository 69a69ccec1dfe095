package kernels_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/kernels"
)

// These tests hold both backends to one ledger: they run on sim by
// default and on the cuda backend (the emulated driver, a GPU) with the
// cuda tags, on the device testdev picks.

// failedFreeChildEnv marks the process TestFailedFreeKeepsTheMemoryCounted
// starts to take the sticky fault: after one, a CUDA device is of no use
// to the process, so the parent's other tests must not share it.
const failedFreeChildEnv = "CUARRAY_FAILED_FREE_CHILD"

// faultPTX is a kernel that stores to address 8: an illegal address.
const faultPTX = ".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry fault()\n{\n" +
	"\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<2>;\n\tmov.u64 %rd1, 8;\n\tmov.u32 %r1, 1;\n" +
	"\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n"

// A free that fails gives nothing back, on every backend: after a kernel's
// sticky fault each Free returns the fault and the ledger keeps the
// allocations live (current, no free counted), as the context keeps the
// memory; the device's Close releases them and counts their frees. sim
// kept them and the cuda backend counted them freed ("current 0 B, frees
// 3" while Free returned errors). The fault runs in a child process.
func TestFailedFreeKeepsTheMemoryCounted(t *testing.T) {
	if os.Getenv(failedFreeChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestFailedFreeKeepsTheMemoryCounted$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), failedFreeChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		require.NoError(t, err, "the child that took the fault failed")
		if strings.Contains(string(out), "--- SKIP") {
			// a cuda build with no GPU: the child had no device to fault
			t.Skip("the child skipped: it had no device to fault (its log above says why)")
		}
		require.Contains(t, string(out), "--- PASS", "the child ran the test")
		return
	}
	dev := testdev.OpenOwned(t)
	runner, ok := dev.(driver.KernelRunner)
	if !ok {
		dev.Close()
		t.Skipf("%s runs no PTX: no kernel to fault it", dev.Info().Name)
	}
	type freer struct {
		kind  accounting.Kind
		bytes int64
		free  func() error
	}
	var held []freer
	for _, kind := range []accounting.Kind{accounting.Device, accounting.Device, accounting.Device, accounting.Pinned} {
		n := int64(256 * (1 + rand.IntN(64)))
		switch kind {
		case accounting.Device:
			p, err := dev.Malloc(n)
			require.NoError(t, err)
			held = append(held, freer{kind, n, func() error { return dev.Free(p) }})
		default:
			h, err := dev.HostAlloc(n, 0)
			require.NoError(t, err)
			n = int64(len(h.Bytes))
			held = append(held, freer{kind, n, func() error { return dev.HostFree(h) }})
		}
	}
	before := dev.Ledger().Snapshot()

	m, err := runner.LoadModule(faultPTX)
	require.NoError(t, err)
	f, err := m.Function("fault")
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, f.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, s, &driver.KernelArgs{}), "a launch returns when queued")
	require.ErrorIs(t, s.Synchronize(), device.ErrContextFailed, "the kernel's illegal address")

	for i, h := range held {
		assert.ErrorIs(t, h.free(), device.ErrContextFailed, "free %d after the fault", i)
		assert.ErrorIs(t, h.free(), device.ErrContextFailed, "free %d again: still live, still refused", i)
	}
	after := dev.Ledger().Snapshot()
	for _, tc := range []struct {
		name string
		kind accounting.Kind
	}{{"device memory", accounting.Device}, {"page-locked host memory", accounting.Pinned}} {
		t.Run(tc.name, func(t *testing.T) {
			var want int64
			n := int64(0)
			for _, h := range held {
				if h.kind == tc.kind {
					want += h.bytes
					n++
				}
			}
			k0, k1 := before.Kinds[tc.kind], after.Kinds[tc.kind]
			assert.Equal(t, want, k1.Current, "the failed frees left the memory counted")
			assert.Equal(t, k0.Frees, k1.Frees, "no free counted for a free that failed")
			assert.Equal(t, k0.Allocs, k1.Allocs)
		})
	}
	t.Logf("Close after the fault: %v", dev.Close())
	end := dev.Ledger().Snapshot()
	for _, kind := range []accounting.Kind{accounting.Device, accounting.Pinned} {
		k := end.Kinds[kind]
		assert.Zero(t, k.Current, "%v: Close released what the failed frees kept", kind)
		assert.Equal(t, k.Allocs, k.Frees, "%v: Close counted their frees", kind)
	}
}

// The ledger counts the bytes a pack or unpack kernel reads and writes on
// every backend: sim runs the Go reference and counts each element's bytes
// once read and once written, which is what the PTX interpreter counts
// where the kernel runs from PTX (the emulated driver). sim counted the
// launch without bytes ("-"), the emulated driver 96 B / 96 B.
//
// The emulated driver configured to run the project's kernels as their Go
// references (kernels=go, the configuration of make cuda-emu-test's
// latency pass) measures nothing, as a GPU without a profiler would not:
// there the test has nothing to compare.
func TestPackBytesInTheLedger(t *testing.T) {
	if dev := testdev.Spec(); strings.HasPrefix(dev, "cuda") && strings.Contains(os.Getenv("CUARRAY_EMULATED_DRIVER"), "kernels=go") {
		t.Skip("the emulated driver runs the kernels as their Go references (kernels=go): no interpreter counts their bytes")
	}
	dev := testdev.Open(t)
	k, err := kernels.New(dev)
	require.NoError(t, err)
	defer k.Close()
	for _, tc := range []struct {
		name  string
		dtype devarray.DType
		pack  bool
	}{
		{"pack_4", devarray.Float32, true},
		{"unpack_4", devarray.Float32, false},
		{"pack_8", devarray.Float64, true},
		{"pack_2", devarray.Int16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 2 + rand.IntN(200)
			step := 2 + rand.IntN(3)
			item := int64(tc.dtype.Size())
			whole, err := devarray.Empty(dev, tc.dtype, n*step)
			require.NoError(t, err)
			defer whole.Free()
			require.NoError(t, whole.CopyFrom(testdev.RandomBytes(n*step*int(item))))
			strided, err := whole.Slice(0, 0, n*step, step)
			require.NoError(t, err)
			flat, err := devarray.Empty(dev, tc.dtype, n)
			require.NoError(t, err)
			defer flat.Free()
			before := dev.Ledger().Snapshot()
			if tc.pack {
				require.NoError(t, k.Pack(flat, strided))
			} else {
				require.NoError(t, k.Unpack(strided, flat))
			}
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			require.Len(t, diff.Kernels, 1, "one launch: %+v", diff.Kernels)
			got := diff.Kernels[0]
			assert.Equal(t, accounting.KernelStats{Name: tc.name, Launches: 1, Measured: 1, Read: int64(n) * item, Written: int64(n) * item}, got,
				"%d elements of %d bytes, each read once and written once", n, item)
		})
	}
}
