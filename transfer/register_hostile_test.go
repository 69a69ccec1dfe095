package transfer_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/transfer"
)

// Async registered copies of one Go buffer from several goroutines, each
// on a stream of its own: each copy guards the cached registration with
// its Op, and the next copy of the same memory asks the registration's
// guards whether they are done while an Op may still be queueing (its
// event not yet recorded). Every copy's bytes arrive, nothing panics, and
// Close leaves nothing registered.
func TestRegisteredAsyncShared(t *testing.T) {
	for name, dev := range registeredDevices(t) {
		t.Run(name, func(t *testing.T) {
			c, err := transfer.New(dev)
			require.NoError(t, err)
			const n, goroutines, iters = 1 << 12, 6, 20
			host := randomFloats(n)
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- func() error {
						s, err := dev.NewStream()
						if err != nil {
							return err
						}
						defer s.Close()
						d, err := devarray.Empty(dev, devarray.Float32, n)
						if err != nil {
							return err
						}
						defer d.Free()
						for range iters {
							op, err := c.CopyAsync(s, transfer.Dev(d), transfer.Host(host), transfer.Via(transfer.PathRegistered))
							if err != nil {
								return err
							}
							if err := op.Wait(); err != nil {
								return err
							}
							got, err := devarray.ToHost[float32](d)
							if err != nil {
								return err
							}
							if !assert.Equal(t, host, got) {
								return nil
							}
						}
						return nil
					}()
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, c.Close())
			assert.Zero(t, dev.Ledger().Current(accounting.Registered))
		})
	}
}
