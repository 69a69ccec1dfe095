package transfer_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

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
				const goroutines = 6
				var wg sync.WaitGroup
				errs := make(chan error, goroutines)
				started := make(chan struct{}, goroutines)
				for g := range goroutines {
					wg.Add(1)
					go func() {
						defer wg.Done()
						hp := hostPaths[g%len(hostPaths)]
						d := deviceSide(t, dev, g%2 == 0)
						defer d.free()
						h := hostSide(t, dev, hp.host, false)
						defer h.free()
						var s driver.Stream
						if g >= len(hostPaths) {
							var err error
							if s, err = dev.NewStream(); err != nil {
								errs <- err
								return
							}
							defer s.Close()
						}
						for i := 0; ; i++ {
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
							if i == 0 {
								started <- struct{}{}
							}
							if errors.Is(err, transfer.ErrClosed) {
								return
							}
							if err != nil {
								errs <- fmt.Errorf("%v copy %d: %w", hp.path, i, err)
								return
							}
							if got := d.read(t); !assert.Equal(t, want, got, "%v copy %d", hp.path, i) {
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
					require.NoError(t, err, "round %d", round)
				}
				require.NoError(t, cerr, "round %d", round)
				for _, k := range []accounting.Kind{accounting.Pinned, accounting.Registered} {
					assert.Zero(t, dev.Ledger().Current(k), "round %d: %v left", round, k)
				}
			}
		})
	}
}
