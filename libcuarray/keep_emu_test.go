//go:build cuda && cudaemu && linux

package main

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
