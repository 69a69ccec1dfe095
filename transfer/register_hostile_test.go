package transfer_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
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

// A planner's registered copy whose registration the driver refuses for a
// reason other than a copy of this Copier holding the pages: the ledger's
// limit on registered memory, or the pages registered by someone else
// (another Copier of the device, pinned.Register). The copy takes the path
// the planner picks without registering, its bytes right and counted
// there, no registration recorded; one that asked for the registered path
// still fails and moves nothing. Before, the planner's copy failed too,
// though direct or staged would have moved it.
func TestRegisteredRefusedFallsBack(t *testing.T) {
	if !testdev.IsSim(testdev.Open(t)) {
		t.Skip("sets its own sim device's ledger limit")
	}
	cheap := transfer.DefaultProfile(driver.Info{Model: "NVIDIA H100 80GB HBM3", Backend: "cuda"})
	require.NoError(t, cheap.SetRegistrationCost(transfer.Cost{Latency: 5e3, GBps: 500})) // registering pays for one copy
	const n = 16 << 20
	for _, tc := range []struct {
		name   string
		refuse func(t *testing.T, dev device.Device, mem []byte) func()
	}{
		{"ledger limit", func(t *testing.T, dev device.Device, mem []byte) func() {
			require.NoError(t, dev.Ledger().SetLimit(accounting.Registered, n/2))
			return func() {}
		}},
		{"another copier's registration", func(t *testing.T, dev device.Device, mem []byte) func() {
			other, err := transfer.New(dev)
			require.NoError(t, err)
			d, err := devarray.Empty(dev, devarray.Uint8, len(mem))
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Free()) }()
			require.NoError(t, other.Copy(transfer.Dev(d), transfer.HostBytes(mem, devarray.Uint8), transfer.Via(transfer.PathRegistered)))
			return func() { require.NoError(t, other.Close()) }
		}},
		{"registered by the caller", func(t *testing.T, dev device.Device, mem []byte) func() {
			b, err := pinned.Register(dev, mem[100:200], 0)
			require.NoError(t, err)
			return func() { require.NoError(t, b.Unregister()) }
		}},
	} {
		for _, toDevice := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/HtoD", false: "/DtoH"}[toDevice], func(t *testing.T) {
				dev := openSim(t, "sim:3?mem=64MiB")
				c, err := transfer.New(dev, transfer.WithProfile(cheap))
				require.NoError(t, err)
				mem := testdev.RandomBytes(n)
				d, err := devarray.Empty(dev, devarray.Uint8, n)
				require.NoError(t, err)
				defer func() { require.NoError(t, d.Free()) }()
				undo := tc.refuse(t, dev, mem)
				h := transfer.HostBytes(mem, devarray.Uint8)
				dst, src := transfer.Dev(d), h
				dir := accounting.HtoD
				if !toDevice {
					dst, src, dir = h, transfer.Dev(d), accounting.DtoH
				}
				ch, err := c.Plan(dst, src)
				require.NoError(t, err)
				require.Equal(t, transfer.PathRegistered, ch.Path, ch.Reason)

				for _, asked := range []bool{false, true} {
					want := testdev.RandomBytes(n)
					if toDevice {
						copy(mem, want)
						require.NoError(t, d.CopyFrom(testdev.RandomBytes(n)))
					} else {
						require.NoError(t, d.CopyFrom(want))
						copy(mem, testdev.RandomBytes(n))
					}
					var opts []transfer.Option
					if asked {
						opts = append(opts, transfer.Via(transfer.PathRegistered))
					}
					before := dev.Ledger().Snapshot()
					err := c.Copy(dst, src, opts...)
					diff := accounting.Diff(before, dev.Ledger().Snapshot())
					assert.Zero(t, diff.Kinds[accounting.Registered].Allocs, "no registration made")
					assert.Zero(t, diff.Copies[dir][accounting.PathRegistered].Count, "no registration recorded")
					if asked {
						require.Error(t, err)
						assert.Zero(t, diff.CopyTotal(dir).Bytes, "nothing moved")
						continue
					}
					require.NoError(t, err)
					got := mem
					if toDevice {
						got, err = devarray.ToHost[uint8](d)
						require.NoError(t, err)
					}
					assert.True(t, string(want) == string(got), "the bytes arrived")
					moved := diff.Copies[dir][accounting.PathStaged].Bytes + diff.Copies[dir][accounting.PathDirect].Bytes
					assert.Equal(t, int64(n), moved, "counted once, on the path taken instead")
					assert.Equal(t, int64(n), diff.CopyTotal(dir).Bytes)
				}
				require.NoError(t, c.Close())
				undo()
			})
		}
	}
}

// A planner's copy whose registration is refused and whose path instead
// fails: one error, which names both paths and the failure; nothing is
// left registered or staged.
func TestRegisteredFallbackFails(t *testing.T) {
	if !testdev.IsSim(testdev.Open(t)) {
		t.Skip("failure injection is sim's")
	}
	cheap := transfer.DefaultProfile(driver.Info{Model: "NVIDIA H100 80GB HBM3", Backend: "cuda"})
	require.NoError(t, cheap.SetRegistrationCost(transfer.Cost{Latency: 5e3, GBps: 500}))
	const n = 16 << 20
	dev := openSim(t, "sim:4?mem=64MiB&fail-copy=1")
	require.NoError(t, dev.Ledger().SetLimit(accounting.Registered, n/2))
	c, err := transfer.New(dev, transfer.WithProfile(cheap))
	require.NoError(t, err)
	d, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Free()) }()
	h := transfer.HostBytes(testdev.RandomBytes(n), devarray.Uint8)
	dear := transfer.DefaultProfile(driver.Info{Model: "NVIDIA H100 80GB HBM3", Backend: "cuda"})
	require.NoError(t, dear.SetRegistrationCost(transfer.Cost{Latency: 1e9, GBps: 1e-3})) // the same figures, registering never pays
	instead, err := c.Plan(transfer.Dev(d), h, transfer.WithProfile(dear))
	require.NoError(t, err)
	err = c.Copy(transfer.Dev(d), h)
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "injected fault")
	assert.Contains(t, msg, "registered copy")
	assert.Contains(t, msg, "registering it was refused")
	assert.Contains(t, msg, "so by the "+instead.Path.String()+" path", "the path taken instead: %s", instead.Reason)
	assert.Equal(t, 1, strings.Count(msg, "transfer:"), "wrapped once: %s", msg)
	var oom *accounting.OutOfMemoryError
	assert.False(t, errors.As(err, &oom), "the refusal is named, not wrapped: the error is the fallback's")
	require.NoError(t, c.Close())
	assert.Zero(t, dev.Ledger().Current(accounting.Registered))
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "no staging chunk left")
}

// Close while registered copies run in other goroutines, each of a buffer
// of its own, fresh each time: once every copy has returned (the later
// ones with ErrClosed), nothing is left registered: no copy keeps a
// registration past Close, and one that held a registration while Close
// ran lets it go when done. Before, a copy that registered after Close
// had released the cache kept its registration (and pinned its Go memory)
// for good.
func TestRegisteredCloseWhileCopying(t *testing.T) {
	for _, spec := range []string{"sim:5?mem=64MiB", "sim:5?mem=64MiB&latency=200us"} {
		t.Run(spec, func(t *testing.T) {
			dev := openSim(t, spec)
			for round := range 10 {
				c, err := transfer.New(dev)
				require.NoError(t, err)
				const n = 1 << 12
				cerr := closeWhileCopying(t, c, 4, fmt.Sprintf("round %d", round), func(g int) (func(int) error, func(), error) {
					d, err := devarray.Empty(dev, devarray.Float32, n)
					if err != nil {
						return nil, nil, err
					}
					var s driver.Stream
					if g%2 == 1 {
						if s, err = dev.NewStream(); err != nil {
							d.Free()
							return nil, nil, err
						}
					}
					cleanup := func() {
						if s != nil {
							s.Close()
						}
						d.Free()
					}
					return func(int) error {
						host := randomFloats(n)
						if s == nil {
							return c.Copy(transfer.Dev(d), transfer.Host(host), transfer.Via(transfer.PathRegistered))
						}
						op, err := c.CopyAsync(s, transfer.Dev(d), transfer.Host(host), transfer.Via(transfer.PathRegistered))
						if err == nil {
							err = op.Wait()
						}
						return err
					}, cleanup, nil
				})
				assert.NoError(t, cerr, "round %d: the copies that ran let their registrations go", round)
				bytes, count := c.Registered()
				assert.Zero(t, bytes+int64(count), "round %d: nothing cached", round)
				require.Zero(t, dev.Ledger().Current(accounting.Registered), "round %d: nothing left registered", round)
			}
		})
	}
}

// Planner's copies, sync and async, from several goroutines, of Go
// buffers that share pages: neighbours cut inside a page, one holding
// another, the same one; with a cache bound that leaves some registrations
// loose and evicts others. A copy whose pages a running copy holds takes
// another path; every copy's bytes arrive, each copy's bytes are counted
// once, and Close leaves nothing registered.
func TestRegisteredSharedPagesConcurrent(t *testing.T) {
	cheap := transfer.DefaultProfile(driver.Info{Model: "NVIDIA H100 80GB HBM3", Backend: "cuda"})
	require.NoError(t, cheap.SetRegistrationCost(transfer.Cost{Latency: 0, GBps: 1e5})) // registering pays
	for name, dev := range registeredDevices(t) {
		for _, bound := range []int64{1, 64 << 10, 1 << 30} {
			t.Run(fmt.Sprintf("%s/bound %d", name, bound), func(t *testing.T) {
				c, err := transfer.New(dev, transfer.WithProfile(cheap), transfer.WithRegisterCache(bound))
				require.NoError(t, err)
				page := os.Getpagesize()
				mem := testdev.RandomBytes(8 * page)
				cut := 3*page + page/3
				views := [][]byte{mem[:cut], mem[cut:], mem[cut+100 : cut+2*page], mem, mem[:cut]}
				d0, err := devarray.Empty(dev, devarray.Uint8, len(views[2]))
				require.NoError(t, err)
				defer func() { require.NoError(t, d0.Free()) }()
				for _, h := range views {
					ch, err := c.Plan(transfer.Dev(d0), transfer.HostBytes(h[:len(views[2])], devarray.Uint8))
					require.NoError(t, err)
					require.Equal(t, transfer.PathRegistered, ch.Path, ch.Reason)
				}
				before := dev.Ledger().Snapshot()
				const goroutines, iters = 5, 12
				var wg sync.WaitGroup
				errs := make(chan error, goroutines)
				var moved atomic.Int64
				for g := range goroutines {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs <- func() error {
							h := views[g%len(views)]
							d, err := devarray.Empty(dev, devarray.Uint8, len(h))
							if err != nil {
								return err
							}
							defer d.Free()
							s, err := dev.NewStream()
							if err != nil {
								return err
							}
							defer s.Close()
							for i := range iters {
								ep := transfer.HostBytes(h, devarray.Uint8)
								if i%2 == 0 {
									err = c.Copy(transfer.Dev(d), ep)
								} else {
									var op *transfer.Op
									if op, err = c.CopyAsync(s, transfer.Dev(d), ep); err == nil {
										err = op.Wait()
									}
								}
								if err != nil {
									return err
								}
								moved.Add(int64(len(h)))
								got, err := devarray.ToHost[uint8](d)
								if err != nil {
									return err
								}
								if !bytes.Equal(h, got) {
									return fmt.Errorf("goroutine %d copy %d: wrong bytes", g, i)
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
				diff := accounting.Diff(before, dev.Ledger().Snapshot())
				assert.Equal(t, moved.Load(), diff.CopyTotal(accounting.HtoD).Bytes, "each copy counted once")
				t.Logf("registrations %d; bytes by DMA from page-locked memory %d, direct %d, staged %d",
					diff.Copies[accounting.HtoD][accounting.PathRegistered].Count, diff.Copies[accounting.HtoD][accounting.PathPinned].Bytes,
					diff.Copies[accounting.HtoD][accounting.PathDirect].Bytes, diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes)
				require.NoError(t, c.Close())
				k := accounting.Diff(before, dev.Ledger().Snapshot()).Kinds[accounting.Registered]
				assert.Zero(t, k.Current, "nothing left registered")
				assert.Equal(t, k.Allocs, diff.Copies[accounting.HtoD][accounting.PathRegistered].Count, "a registration record for each registration made")
			})
		}
	}
}
