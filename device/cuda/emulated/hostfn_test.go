//go:build cuda && cudaemu && linux

package emulated

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
)

// TestHostFuncMarksOnlyItsGoroutine: while a host function runs, the
// driver refuses calls from it alone. Here the host function parks its
// goroutine, as a host function's return to Go can; every other goroutine,
// on whatever thread the scheduler gives it, the host function's old one
// included, is still let through.
func TestHostFuncMarksOnlyItsGoroutine(t *testing.T) {
	lockedDriver(t)
	makeContext(t, cu.SchedAuto)
	c := drv.currentContext()
	require.NotNil(t, c)
	running, release, ran := make(chan bool), make(chan struct{}), make(chan struct{})
	defer func() { <-ran }()
	var once sync.Once
	defer once.Do(func() { close(release) })
	go func() {
		defer close(ran)
		c.runHostFunc(func() {
			running <- inHostFunc()
			<-release
		})
	}()
	require.True(t, <-running, "the host function's own calls are refused")
	var refused atomic.Int64
	var wg sync.WaitGroup
	for range 8 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				if inHostFunc() {
					refused.Add(1)
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	once.Do(func() { close(release) })
	assert.Zero(t, refused.Load(), "calls from goroutines other than the host function's refused")
}
