//go:build cuda && cudaemu && linux

package main

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/cuda/conformance"
	"github.com/cuarray/cuarray/device/cuda/emulated"
)

// driverCalls returns the driver calls f makes, by function.
func driverCalls(f func()) map[string]int64 {
	before := emulated.Calls()
	f()
	diff := map[string]int64{}
	for name, n := range emulated.Calls() {
		if d := n - before[name]; d > 0 {
			diff[name] = d
		}
	}
	return diff
}

// A DLPack tensor of a CUDA array, built in C from the description the
// Python module keeps and deleted by its consumer, on any thread, makes no
// driver call: no context is saved, switched or restored, none is needed.
// A copy (copy=True), made through the driver, is counted: the counter
// sees what the export would make.
func TestKeepExportMakesNoDriverCall(t *testing.T) {
	h, err := openDevice("cuda:0")
	require.NoError(t, err)
	a, _ := randomArray(t, h)
	defer releaseArray(a)
	d, err := describe(a)
	require.NoError(t, err)
	cd := newCDesc(d)
	defer freeCDesc(cd)
	n := 1 + rand.IntN(64)
	calls := driverCalls(func() {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					versioned := rand.IntN(2) == 0
					p, err := exportFrom(cd, versioned)
					if !assert.NoError(t, err) {
						return
					}
					if versioned {
						deleteDLPack(p)
					} else {
						deleteDLPackLegacy(p)
					}
				}
			}()
		}
		wg.Wait()
	})
	assert.Empty(t, calls, "%d tensors made and deleted on 4 goroutines", 4*n)

	calls = driverCalls(func() {
		p, err := toDLPack(a, true, true, consumerHost)
		require.NoError(t, err)
		deleteDLPack(p)
	})
	assert.NotEmpty(t, calls, "a copy for export goes through the driver")
}

// The ledger call that lets go of a freed array's memory after its last
// tensor was deleted frees it with a driver call, and leaves the calling
// thread's current context as it was: none, or another library's.
func TestKeepReapRestoresTheCallersContext(t *testing.T) {
	defer onOneThread()()
	h, led := keepDevice(t)
	require.NoError(t, conformance.Init())
	ctx, c := conformance.PrimaryRetain(0)
	require.Equal(t, conformance.Success, c, conformance.ErrorName(c))
	defer conformance.PrimaryRelease(0)
	for _, tc := range []struct {
		name string
		ctx  uintptr
	}{
		{"no context", 0},
		{"another library's", ctx},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := led.Current(accounting.Device)
			a, _ := randomArray(t, h)
			p, err := toDLPack(a, true, false, consumerNoSync)
			require.NoError(t, err)
			require.NoError(t, releaseArray(a))
			deleteDLPack(p)
			require.Equal(t, conformance.Success, conformance.CtxSetCurrent(tc.ctx))
			frees := driverCalls(func() {
				_, err = ledgerJSON(h)
				require.NoError(t, err)
			})
			assert.Positive(t, frees["cuMemFree_v2"]+frees["cuMemFree"]+frees["cuMemFreeAsync"], "the memory is freed there: %v", frees)
			assert.Equal(t, start, led.Current(accounting.Device), "and counted free")
			cur, c := conformance.CtxGetCurrent()
			require.Equal(t, conformance.Success, c, conformance.ErrorName(c))
			assert.Equal(t, tc.ctx, cur, "the caller's current context after the ledger call")
		})
	}
}
