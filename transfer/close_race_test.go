package transfer_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

// closeWhileCopying runs copy loops on goroutines goroutines and closes c
// once each has made its first copy. setup prepares goroutine g: the copy
// it makes again and again (i counts them) and what undoes setup. A loop
// ends at the first copy that fails with ErrClosed; any other error fails
// the test (with msg). It returns Close's error.
func closeWhileCopying(t *testing.T, c *transfer.Copier, goroutines int, msg string,
	setup func(g int) (copyOnce func(i int) error, cleanup func(), err error)) error {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	started := make(chan struct{}, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			signal := func() { once.Do(func() { started <- struct{}{} }) }
			defer signal() // a goroutine that fails before its first copy lets Close go on
			copyOnce, cleanup, err := setup(g)
			if err != nil {
				errs <- err
				return
			}
			defer cleanup()
			for i := 0; ; i++ {
				err := copyOnce(i)
				signal()
				if errors.Is(err, transfer.ErrClosed) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range goroutines {
		<-started
	}
	cerr := c.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, msg)
	}
	return cerr
}

// Close while other goroutines copy, sync and async, on every host path,
// with strided device sides (pack kernels), under sim latency and not:
// each copy either fails with ErrClosed or completes with its bytes right
// (an async one by the time its Op is waited for), Close reports no error,
// and no pinned or registered memory of the copier's is left in the ledger.
func TestCloseWhileCopying(t *testing.T) {
	for _, spec := range []string{"sim:6?mem=128MiB", "sim:6?mem=128MiB&latency=200us"} {
		t.Run(spec, func(t *testing.T) {
			dev := openSim(t, spec)
			for round := range 8 {
				c, err := transfer.New(dev)
				require.NoError(t, err)
				cerr := closeWhileCopying(t, c, 6, fmt.Sprintf("round %d", round), func(g int) (func(int) error, func(), error) {
					hp := hostPaths[g%len(hostPaths)]
					d := deviceSide(t, dev, g%2 == 0)
					h := hostSide(t, dev, hp.host, false)
					var s driver.Stream
					if g >= len(hostPaths) {
						var err error
						if s, err = dev.NewStream(); err != nil {
							d.free()
							h.free()
							return nil, nil, err
						}
					}
					cleanup := func() {
						if s != nil {
							s.Close()
						}
						h.free()
						d.free()
					}
					return func(i int) error {
						want := randomFloats(rows * cols)
						h.write(t, want)
						var err error
						if s == nil {
							err = c.Copy(d.ep, h.ep, transfer.Via(hp.path))
						} else {
							var op *transfer.Op
							if op, err = c.CopyAsync(s, d.ep, h.ep, transfer.Via(hp.path)); err == nil {
								err = op.Wait()
							}
						}
						if err != nil {
							return fmt.Errorf("%v copy %d: %w", hp.path, i, err)
						}
						if got := d.read(t); !slices.Equal(want, got) {
							return fmt.Errorf("%v copy %d: the bytes differ", hp.path, i)
						}
						return nil
					}, cleanup, nil
				})
				require.NoError(t, cerr, "round %d", round)
				for _, k := range []accounting.Kind{accounting.Pinned, accounting.Registered} {
					assert.Zero(t, dev.Ledger().Current(k), "round %d: %v left", round, k)
				}
			}
		})
	}
}
