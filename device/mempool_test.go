package device_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
)

// The stream-ordered allocator's rules, one test each, on the test device:
// sim, or the cuda backend on the emulated CUDA driver (-tags
// cuda,cudaemu), whose pools are sim's. Each quotes the sentence of the
// CUDA Driver API it checks. Sizes are whole MiB blocks: a pool here hands
// out and gives back whole blocks (a GPU's granularity is its own).

const mib = 1 << 20

// exactPools reports whether the device's pools are sim's (sim, or the
// emulated CUDA driver): whole blocks of the size asked for, reused by the
// first rule that allows it. A GPU's driver keeps the same rules with a
// granularity and choices of its own, so there the tests hold it to what
// the rules require (no reuse where none is allowed), not to sim's bytes.
func exactPools(dev device.Device) bool { return testdev.IsSim(dev) || dev.Info().Emulated() }

// requireExactPools skips a test of sim's exact figures on a GPU.
func requireExactPools(t *testing.T, dev device.Device) {
	t.Helper()
	if !exactPools(dev) {
		t.Skipf("%s: the driver's pools reserve in granules of their own; the figures checked here are sim's", dev.Info().Name)
	}
}

// newStreams returns n streams closed at the end of the test.
func newStreams(t *testing.T, dev device.Device, n int) []device.Stream {
	t.Helper()
	out := make([]device.Stream, n)
	for i := range out {
		s, err := dev.NewStream()
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out
}

// newPool makes a pool that keeps what it reserves (release threshold 1
// GiB) and allows only the reuse policies given.
func newPool(t *testing.T, dev device.Device, allow ...device.ReusePolicy) device.MemPool {
	t.Helper()
	p, err := dev.NewMemPool()
	require.NoError(t, err)
	t.Cleanup(func() { p.Destroy() })
	require.NoError(t, p.SetReleaseThreshold(1<<30))
	for r := range device.NumReusePolicies {
		require.NoError(t, p.SetReuse(r, false))
	}
	for _, r := range allow {
		require.NoError(t, p.SetReuse(r, true))
	}
	return p
}

func poolUsage(t *testing.T, p device.MemPool) device.PoolUsage {
	t.Helper()
	u, err := p.Usage()
	require.NoError(t, err)
	return u
}

// roundTrip writes fresh random bytes to [p, p+n) on s and reads them back.
func roundTrip(t *testing.T, s device.Stream, p devarray.Ptr, n int) {
	t.Helper()
	want := testdev.RandomBytes(n)
	require.NoError(t, s.CopyHtoDAsync(p, want))
	got := make([]byte, n)
	require.NoError(t, s.CopyDtoHAsync(got, p))
	require.NoError(t, s.Synchronize())
	require.Equal(t, want, got, "stream-ordered memory holds what was written")
}

// "The allocator may refer to internal stream ordering [...] when
// establishing the temporal guarantee." (Stream Ordered Memory Allocator,
// overview): memory freed on a stream is reused by a later allocation on
// that stream, with every reuse policy off.
func TestStreamOrderedSameStreamReuse(t *testing.T) {
	dev := testdev.Open(t)
	t.Logf("on %s (%s)", dev.Info().Name, dev.Info().Model)
	s := newStreams(t, dev, 1)[0]
	pool := newPool(t, dev)
	before := dev.Ledger().Snapshot()

	p, err := s.MallocFromPoolAsync(mib, pool)
	require.NoError(t, err)
	roundTrip(t, s, p, mib)
	require.NoError(t, s.FreeAsync(p))
	q, err := s.MallocFromPoolAsync(mib, pool)
	require.NoError(t, err)
	roundTrip(t, s, q, mib)
	if exactPools(dev) {
		assert.Equal(t, p, q, "the block freed on the stream is reused on it")
		assert.Equal(t, device.PoolUsage{Reserved: mib, ReservedHigh: mib, Used: mib, UsedHigh: mib}, poolUsage(t, pool),
			"one block reserved and in use, never two")
	} else {
		u := poolUsage(t, pool)
		assert.GreaterOrEqual(t, u.Used, int64(mib))
		assert.GreaterOrEqual(t, u.Reserved, u.Used)
	}
	d := accounting.Diff(before, dev.Ledger().Snapshot()).Kinds[accounting.StreamOrdered]
	assert.Equal(t, int64(2), d.Allocs, "two stream-ordered allocations")
	assert.Equal(t, int64(1), d.Frees, "one stream-ordered free")
	assert.Equal(t, int64(mib), d.Current, "one MiB handed out now")
	require.NoError(t, s.FreeAsync(q))
	assert.Zero(t, dev.Ledger().Current(accounting.StreamOrdered))
}

// "Allow cuMemAllocAsync to use memory asynchronously freed in another
// stream as long as a stream ordering dependency of the allocating stream
// on the free action exists. CUDA events and null stream interactions can
// create the required stream ordered dependencies."
// (CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
func TestStreamOrderedFollowEventDependencies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		follow bool
		wait   bool
		reused bool
	}{
		{"waited on an event after the free", true, true, true},
		{"no dependency", true, false, false},
		{"policy off", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := testdev.Open(t)
			ss := newStreams(t, dev, 2)
			var allow []device.ReusePolicy
			if tc.follow {
				allow = append(allow, device.ReuseFollowEventDependencies)
			}
			pool := newPool(t, dev, allow...)
			p, err := ss[0].MallocFromPoolAsync(mib, pool)
			require.NoError(t, err)
			resume := testdev.Hold(t, ss[0]) // the free stays queued: it has not run when s2 allocates
			defer resume()
			require.NoError(t, ss[0].FreeAsync(p))
			ev, err := dev.NewEvent()
			require.NoError(t, err)
			defer ev.Close()
			require.NoError(t, ss[0].Record(ev))
			if tc.wait {
				require.NoError(t, ss[1].WaitEvent(ev))
			}
			q, err := ss[1].MallocFromPoolAsync(mib, pool)
			require.NoError(t, err)
			resume()
			switch {
			case !tc.reused:
				assert.NotEqual(t, p, q, "without the dependency (or the policy) the block is not reused")
				if exactPools(dev) {
					assert.Equal(t, int64(2*mib), poolUsage(t, pool).Reserved, "a second block was reserved")
				}
			case exactPools(dev): // a GPU's driver may reuse, or not
				assert.Equal(t, p, q, "the stream that waited for the free reuses its block")
				assert.Equal(t, int64(mib), poolUsage(t, pool).Reserved)
			}
			roundTrip(t, ss[1], q, 4096)
			require.NoError(t, ss[1].FreeAsync(q))
			require.NoError(t, dev.Synchronize())
		})
	}
}

// "Allow reuse of already completed frees when there is no dependency
// between the free and allocation." (CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
func TestStreamOrderedOpportunisticReuse(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allowed", false: "forbidden"}[allow], func(t *testing.T) {
			dev := testdev.Open(t)
			ss := newStreams(t, dev, 2)
			var policies []device.ReusePolicy
			if allow {
				policies = append(policies, device.ReuseAllowOpportunistic)
			}
			pool := newPool(t, dev, policies...)
			p, err := ss[0].MallocFromPoolAsync(mib, pool)
			require.NoError(t, err)
			require.NoError(t, ss[0].FreeAsync(p))
			require.NoError(t, ss[0].Synchronize(), "the free has completed")
			q, err := ss[1].MallocFromPoolAsync(mib, pool)
			require.NoError(t, err)
			if !allow {
				assert.NotEqual(t, p, q, "no policy allows the reuse")
			} else if exactPools(dev) {
				assert.Equal(t, p, q, "a completed free's block is reused by any stream")
			}
			roundTrip(t, ss[1], q, 4096)
			require.NoError(t, ss[1].FreeAsync(q))
		})
	}
}

// "Allow cuMemAllocAsync to insert new stream dependencies in order to
// establish the stream ordering required to reuse a piece of memory
// released by cuMemFreeAsync" (CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES):
// the allocating stream then waits for the free.
func TestStreamOrderedInternalDependencies(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allowed", false: "forbidden"}[allow], func(t *testing.T) {
			dev := testdev.Open(t)
			ss := newStreams(t, dev, 2)
			var policies []device.ReusePolicy
			if allow {
				policies = append(policies, device.ReuseAllowInternalDependencies)
			}
			pool := newPool(t, dev, policies...)
			p, err := ss[0].MallocFromPoolAsync(mib, pool)
			require.NoError(t, err)
			resume := testdev.Hold(t, ss[0])
			defer resume()
			require.NoError(t, ss[0].FreeAsync(p))
			q, err := ss[1].MallocFromPoolAsync(mib, pool)
			require.NoError(t, err)
			after, err := dev.NewEvent()
			require.NoError(t, err)
			defer after.Close()
			require.NoError(t, ss[1].Record(after))
			done, err := after.Query()
			require.NoError(t, err)
			if !allow {
				assert.NotEqual(t, p, q, "no dependency is inserted: a new block")
			} else if exactPools(dev) || p == q {
				assert.Equal(t, p, q, "the block is reused")
				assert.False(t, done, "the allocating stream waits for the free, held on the other stream")
			}
			resume()
			require.NoError(t, after.Synchronize())
			roundTrip(t, ss[1], q, 4096)
			require.NoError(t, ss[1].FreeAsync(q))
		})
	}
}

// "When more than the release threshold bytes of memory are held by the
// memory pool, the allocator will try to release memory back to the OS on
// the next call to stream, event or context synchronize. (default 0)"
// (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
func TestStreamOrderedReleaseThreshold(t *testing.T) {
	for _, sync := range []string{"stream", "event", "context"} {
		for _, threshold := range []int64{0, 2 * mib} {
			t.Run(sync+"/"+accounting.FormatBytes(threshold), func(t *testing.T) {
				dev := testdev.Open(t)
				requireExactPools(t, dev)
				s := newStreams(t, dev, 1)[0]
				pool, err := dev.NewMemPool()
				require.NoError(t, err)
				defer pool.Destroy()
				got, err := pool.ReleaseThreshold()
				require.NoError(t, err)
				assert.Zero(t, got, "the default threshold is 0")
				require.NoError(t, pool.SetReleaseThreshold(threshold))
				var ps []devarray.Ptr
				for range 3 {
					p, err := s.MallocFromPoolAsync(mib, pool)
					require.NoError(t, err)
					ps = append(ps, p)
				}
				for _, p := range ps {
					require.NoError(t, s.FreeAsync(p))
				}
				u := poolUsage(t, pool)
				assert.Equal(t, int64(3*mib), u.Reserved, "nothing goes back before a synchronize")
				assert.Zero(t, u.Used)
				switch sync {
				case "stream":
					require.NoError(t, s.Synchronize())
				case "event":
					ev, err := dev.NewEvent()
					require.NoError(t, err)
					defer ev.Close()
					require.NoError(t, s.Record(ev))
					require.NoError(t, ev.Synchronize())
				case "context":
					require.NoError(t, dev.Synchronize())
				}
				u = poolUsage(t, pool)
				assert.Equal(t, threshold, u.Reserved, "the pool keeps its threshold, no more")
				assert.Equal(t, int64(3*mib), u.ReservedHigh)
			})
		}
	}
}

// cuMemPoolTrimTo: "Releases memory back to the OS until the pool
// contains fewer than minBytesToKeep reserved bytes, or there is no more
// memory that the allocator can safely release." "Otherwise the pool will
// be guaranteed to have at least minBytesToKeep bytes reserved after the
// operation." "Allocations that have not been freed count as outstanding."
func TestStreamOrderedTrimTo(t *testing.T) {
	dev := testdev.Open(t)
	requireExactPools(t, dev)
	s := newStreams(t, dev, 1)[0]
	pool := newPool(t, dev)
	var ps []devarray.Ptr
	for range 5 {
		p, err := s.MallocFromPoolAsync(mib, pool)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	for _, p := range ps[:4] {
		require.NoError(t, s.FreeAsync(p))
	}
	require.NoError(t, s.Synchronize())
	require.Equal(t, int64(5*mib), poolUsage(t, pool).Reserved, "the threshold keeps all")

	require.NoError(t, pool.TrimTo(3*mib+mib/2))
	assert.Equal(t, int64(4*mib), poolUsage(t, pool).Reserved, "at least the bytes to keep stay")
	require.NoError(t, pool.TrimTo(0))
	u := poolUsage(t, pool)
	assert.Equal(t, int64(mib), u.Reserved, "the live allocation's block stays")
	assert.Equal(t, int64(mib), u.Used)
	require.NoError(t, s.FreeAsync(ps[4]))
	require.NoError(t, s.Synchronize())
	require.NoError(t, pool.TrimTo(0))
	assert.Zero(t, poolUsage(t, pool).Reserved)
	assert.ErrorIs(t, pool.TrimTo(-1), device.ErrInvalidValue)
}

// CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH and USED_MEM_HIGH: "Reset the high
// watermark [...] It is illegal to set this attribute to a non-zero value."
func TestStreamOrderedHighFigures(t *testing.T) {
	dev := testdev.Open(t)
	requireExactPools(t, dev)
	s := newStreams(t, dev, 1)[0]
	pool := newPool(t, dev)
	a, err := s.MallocFromPoolAsync(2*mib, pool)
	require.NoError(t, err)
	b, err := s.MallocFromPoolAsync(mib, pool)
	require.NoError(t, err)
	require.NoError(t, s.FreeAsync(a))
	assert.Equal(t, device.PoolUsage{Reserved: 3 * mib, ReservedHigh: 3 * mib, Used: mib, UsedHigh: 3 * mib}, poolUsage(t, pool))
	require.NoError(t, pool.ResetHigh())
	assert.Equal(t, device.PoolUsage{Reserved: 3 * mib, ReservedHigh: 3 * mib, Used: mib, UsedHigh: mib}, poolUsage(t, pool))
	require.NoError(t, s.FreeAsync(b))
}

// cuMemPoolDestroy: "If any pointers obtained from this pool haven't been
// freed or the pool has free operations that haven't completed when
// cuMemPoolDestroy is invoked, the function will return immediately and
// the resources associated with the pool will be released automatically
// once there are no more outstanding allocations."
func TestStreamOrderedDestroy(t *testing.T) {
	dev := testdev.Open(t)
	s := newStreams(t, dev, 1)[0]
	pool, err := dev.NewMemPool()
	require.NoError(t, err)
	p, err := s.MallocFromPoolAsync(mib, pool)
	require.NoError(t, err)
	require.NoError(t, pool.Destroy(), "returns at once with an allocation outstanding")
	_, err = s.MallocFromPoolAsync(mib, pool)
	assert.ErrorIs(t, err, device.ErrInvalidValue, "a destroyed pool allocates nothing")
	roundTrip(t, s, p, 4096)
	require.NoError(t, s.FreeAsync(p), "the outstanding allocation is freed as before")
	require.NoError(t, s.Synchronize())
	for _, ps := range dev.Ledger().Snapshot().Pools {
		assert.NotEqual(t, pool.Name(), ps.Name, "the destroyed pool is gone from the ledger")
	}
	assert.NoError(t, pool.Destroy(), "a second Destroy is harmless")

	def, err := dev.DefaultMemPool()
	require.NoError(t, err)
	assert.ErrorIs(t, def.Destroy(), device.ErrInvalidValue, "the default pool cannot be destroyed")
}

// The ledger counts stream-ordered allocations under their own kind, and
// carries each pool's reserved and used bytes and their peaks, in the
// report and the JSON; a limit on the kind refuses allocations.
func TestStreamOrderedLedger(t *testing.T) {
	dev := testdev.Open(t)
	s := newStreams(t, dev, 1)[0]
	def, err := dev.DefaultMemPool()
	require.NoError(t, err)
	require.NoError(t, def.SetReleaseThreshold(math.MaxInt64/2))
	defer def.SetReleaseThreshold(0)
	led := dev.Ledger()
	before := led.Snapshot()
	a, err := s.MallocAsync(3*mib + 100) // counted rounded up to 256 bytes
	require.NoError(t, err)
	b, err := s.MallocAsync(mib)
	require.NoError(t, err)
	roundTrip(t, s, a, 3*mib+100)
	require.NoError(t, s.FreeAsync(b))

	snap := led.Snapshot()
	k := accounting.Diff(before, snap).Kinds[accounting.StreamOrdered]
	assert.Equal(t, int64(2), k.Allocs)
	assert.Equal(t, int64(1), k.Frees)
	assert.Equal(t, int64(3*mib+256), k.Current)
	assert.Equal(t, int64(4*mib+256), k.Allocated)
	assert.Equal(t, int64(4*mib+256), snap.Kinds[accounting.StreamOrdered].Peak)
	require.Len(t, snap.Pools, 1, "the default pool, once used")
	if exactPools(dev) {
		assert.Equal(t, accounting.PoolStats{Name: "default", Reserved: 4*mib + 256, ReservedHigh: 4*mib + 256,
			Used: 3*mib + 256, UsedHigh: 4*mib + 256, ReleaseThreshold: math.MaxInt64 / 2}, snap.Pools[0])
	} else {
		assert.Equal(t, "default", snap.Pools[0].Name)
		assert.GreaterOrEqual(t, snap.Pools[0].Used, int64(3*mib+256), "the pool's used bytes cover what cuarray counts")
	}

	report := snap.Report()
	assert.Contains(t, report, "stream-ordered pool")
	assert.Contains(t, report, "stream-ordered ")
	js, err := json.Marshal(snap)
	require.NoError(t, err)
	var parsed struct {
		Memory map[string]accounting.KindStats `json:"memory"`
		Pools  []accounting.PoolStats          `json:"pools"`
	}
	require.NoError(t, json.Unmarshal(js, &parsed))
	assert.Equal(t, snap.Pools, parsed.Pools)
	assert.Equal(t, int64(3*mib+256), parsed.Memory["stream-ordered"].Current)

	require.NoError(t, led.SetLimit(accounting.StreamOrdered, 4*mib))
	defer led.SetLimit(accounting.StreamOrdered, 0)
	_, err = s.MallocAsync(2 * mib)
	var oom *accounting.OutOfMemoryError
	require.ErrorAs(t, err, &oom, "the ledger's limit refuses the allocation")
	assert.Equal(t, accounting.StreamOrdered, oom.Kind)
	require.NoError(t, s.FreeAsync(a))
	require.NoError(t, s.Synchronize())
	require.NoError(t, def.TrimTo(0))
}

// Misuse is refused with clear errors, and nothing is counted for it.
func TestStreamOrderedErrors(t *testing.T) {
	dev := testdev.Open(t)
	s := newStreams(t, dev, 1)[0]
	plain, err := dev.Malloc(256)
	require.NoError(t, err)
	defer dev.Free(plain)
	assert.ErrorIs(t, s.FreeAsync(plain), device.ErrInvalidValue, "cuMemAlloc's memory is not a pool's")
	_, err = s.MallocAsync(-1)
	assert.ErrorIs(t, err, device.ErrInvalidValue)
	p, err := s.MallocAsync(100)
	require.NoError(t, err)
	assert.ErrorIs(t, dev.Free(p), device.ErrInvalidPointer, "Free takes Malloc's memory only")
	require.NoError(t, s.FreeAsync(p))
	assert.ErrorIs(t, s.FreeAsync(p), device.ErrInvalidValue, "a second free is refused")
	pool, err := dev.NewMemPool()
	require.NoError(t, err)
	defer pool.Destroy()
	assert.ErrorIs(t, pool.SetReuse(device.NumReusePolicies, true), device.ErrInvalidValue)
	assert.ErrorIs(t, pool.SetReleaseThreshold(-1), device.ErrInvalidValue)
	require.NoError(t, s.Synchronize())
}

// BenchmarkStreamOrderedAlloc compares cuMemAlloc+cuMemFree with
// cuMemAllocAsync+cuMemFreeAsync from the warm default pool, with the
// default release threshold (0: the pool gives its memory back at each
// synchronize) and with one that keeps it, each iteration ending with a
// stream synchronize, as cuMemFree synchronizes; and without the
// synchronize, as a stream-ordered program runs.
func BenchmarkStreamOrderedAlloc(b *testing.B) {
	dev := testdev.Open(b)
	s, err := dev.NewStream()
	require.NoError(b, err)
	defer s.Close()
	def, err := dev.DefaultMemPool()
	require.NoError(b, err)
	for _, size := range []int64{4 << 10, 4 * mib} {
		name := accounting.FormatBytes(size)
		b.Run("malloc+free/"+name, func(b *testing.B) {
			for b.Loop() {
				p, err := dev.Malloc(size)
				if err != nil {
					b.Fatal(err)
				}
				if err := dev.Free(p); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, threshold := range []int64{0, math.MaxInt64 / 2} {
			label := "threshold=0"
			if threshold > 0 {
				label = "threshold=max"
			}
			b.Run("async/"+label+"/"+name, func(b *testing.B) {
				require.NoError(b, def.SetReleaseThreshold(threshold))
				defer def.SetReleaseThreshold(0)
				require.NoError(b, s.Synchronize())
				require.NoError(b, def.TrimTo(0))
				require.NoError(b, def.ResetHigh())
				p, err := s.MallocAsync(size) // warm the pool
				require.NoError(b, err)
				require.NoError(b, s.FreeAsync(p))
				for b.Loop() {
					p, err := s.MallocAsync(size)
					if err != nil {
						b.Fatal(err)
					}
					if err := s.FreeAsync(p); err != nil {
						b.Fatal(err)
					}
					if err := s.Synchronize(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if u, err := def.Usage(); err == nil {
					b.ReportMetric(float64(u.ReservedHigh), "reserved-high-bytes")
				}
			})
		}
		// As a program uses it between synchronizes: each free's block is
		// reused by the next allocation on the stream, nothing waits.
		b.Run("async/no-sync/"+name, func(b *testing.B) {
			for b.Loop() {
				p, err := s.MallocAsync(size)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.FreeAsync(p); err != nil {
					b.Fatal(err)
				}
			}
			require.NoError(b, s.Synchronize())
		})
	}
	require.NoError(b, def.TrimTo(0))
}
