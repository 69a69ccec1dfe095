package accounting_test

import (
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// randKernel returns launch counts of a kernel called name with random,
// never zero, numbers; measured of them with known bytes.
func randKernel(name string, measured bool) accounting.KernelStats {
	k := accounting.KernelStats{Name: name, Launches: rand.Int64N(100) + 1}
	if measured {
		k.Measured = rand.Int64N(k.Launches) + 1
		k.Read, k.Written = rand.Int64N(1<<30)+1, rand.Int64N(1<<30)+1
	}
	return k
}

// TestDiffKernels: Diff subtracts launches per name, keeps a name only in
// b whole, leaves out names whose launches did not change and gives a
// name only in a negative counts.
func TestDiffKernels(t *testing.T) {
	x, y, z := randKernel("x", true), randKernel("y", false), randKernel("z", true)
	more := y
	more.Launches += rand.Int64N(10) + 1
	for _, tc := range []struct {
		name string
		a, b []accounting.KernelStats
		want []accounting.KernelStats
	}{
		{"both empty", nil, nil, nil},
		{"only in b: whole", nil, []accounting.KernelStats{x, z}, []accounting.KernelStats{x, z}},
		{"unchanged: left out", []accounting.KernelStats{x}, []accounting.KernelStats{x}, nil},
		{"subtracted per name", []accounting.KernelStats{x, y}, []accounting.KernelStats{x, more, z},
			[]accounting.KernelStats{{Name: "y", Launches: more.Launches - y.Launches}, z}},
		{"only in a: negative", []accounting.KernelStats{z}, nil,
			[]accounting.KernelStats{{Name: "z", Launches: -z.Launches, Measured: -z.Measured, Read: -z.Read, Written: -z.Written}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := accounting.Diff(accounting.Snapshot{Kernels: tc.a}, accounting.Snapshot{Kernels: tc.b}).Kernels
			assert.Equal(t, tc.want, got, "b less a per name, sorted, changed names only")
		})
	}
}

// TestKernelsJSONRoundTrip: the kernels field of a snapshot's JSON reads
// back as the snapshot's Kernels, and is absent when none was launched.
func TestKernelsJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kernels []accounting.KernelStats
	}{
		{"none", nil},
		{"one measured", []accounting.KernelStats{randKernel("saxpy", true)}},
		{"measured and not", []accounting.KernelStats{randKernel("a", false), randKernel("b", true), randKernel("c", true)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(accounting.Snapshot{Name: "sim:0", Kernels: tc.kernels})
			require.NoError(t, err)
			var j map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(raw, &j))
			k, ok := j["kernels"]
			if len(tc.kernels) == 0 {
				assert.False(t, ok, "no kernels field without launches: %s", raw)
				return
			}
			require.True(t, ok, "a kernels field: %s", raw)
			var got []accounting.KernelStats
			require.NoError(t, json.Unmarshal(k, &got))
			assert.Equal(t, tc.kernels, got, "kernels read back as written")
			assert.Contains(t, string(k), `"read_bytes":`)
			assert.Contains(t, string(k), `"written_bytes":`)
		})
	}
}

// reportLedger records a fixed set of allocations, copies and memsets.
func reportLedger(t *testing.T) *accounting.Ledger {
	t.Helper()
	l := accounting.NewLedger("sim:0")
	require.NoError(t, l.Alloc(accounting.Device, 1, 1<<20))
	require.NoError(t, l.Alloc(accounting.Pinned, 2, 4096))
	l.Free(accounting.Pinned, 2, 4096)
	l.RecordCopy(accounting.HtoD, accounting.PathDirect, 1<<20, 2*time.Millisecond)
	l.RecordMemset(512, 3*time.Microsecond)
	return l
}

// TestReportKernelTable: without launches the report is what it was before
// launches were counted (byte for byte, no kernel table); with them a
// third table follows, one row per kernel.
func TestReportKernelTable(t *testing.T) {
	const before = "ledger sim:0\n" +
		"  memory   current  cached      peak  allocs  frees  allocated  failed  limit\n" +
		"  device  1.00 MiB     0 B  1.00 MiB       1      0   1.00 MiB       0   none\n" +
		"  pinned       0 B     0 B  4.00 KiB       1      1   4.00 KiB       0   none\n" +
		"  (bytes as the device allocated them: whole 256-byte granules on sim and CUDA, so a 48-byte array takes 256 B)\n" +
		"\n" +
		"    copy    path  count     bytes      time  GB/s\n" +
		"    HtoD  direct      1  1.00 MiB  2.000 ms  0.52\n" +
		"  memset       -      1     512 B    3.0 µs  0.17\n"
	const empty = "ledger ledger\n" +
		"  memory  current  cached  peak  allocs  frees  allocated  failed  limit\n" +
		"  (no allocations)\n" +
		"\n" +
		"  copy  path  count  bytes  time  GB/s\n" +
		"  (no copies)\n"
	const kernels = "\n" +
		"        kernel  launches             read          written\n" +
		"  cublas_sgemm         1                -                -\n" +
		"         mixed         2  2.00 KiB (of 1)  1.00 KiB (of 1)\n" +
		"         saxpy         2        16.00 KiB         8.00 KiB\n"

	l := reportLedger(t)
	assert.Equal(t, before, l.Report(), "no launches: the report as before, no kernel table")
	assert.Equal(t, empty, accounting.NewLedger("").Report(), "an empty ledger's report as before")

	l.RecordLaunch("saxpy", 8192, 4096)
	l.RecordLaunch("saxpy", 8192, 4096)
	l.RecordLaunch("cublas_sgemm", -1, -1)
	l.RecordLaunch("mixed", 2048, 1024)
	l.RecordLaunch("mixed", 2048, -1)
	assert.Equal(t, before+kernels, l.Report(), "the kernel table after the copy table")
}

// TestLaunchEvents: each launch logs an OpLaunch event with its name, the
// bytes read in Bytes and written in Written, each -1 when not known.
func TestLaunchEvents(t *testing.T) {
	read, written := rand.Int64N(1<<20)+1, rand.Int64N(1<<20)+1
	for _, tc := range []struct {
		name          string
		read, written int64
		wantR, wantW  int64
	}{
		{"known", read, written, read, written},
		{"unknown", -1, -1, -1, -1},
		{"read known", read, -1, read, -1},
		{"written known", -7, written, -1, written},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := accounting.NewLedger("sim:0")
			l.RecordLaunch("before the log", 1, 1)
			l.StartLog(accounting.LogConfig{})
			l.RecordLaunch(tc.name, tc.read, tc.written)
			events, dropped, err := l.StopLog()
			require.NoError(t, err)
			assert.Zero(t, dropped)
			require.Len(t, events, 1, "one event, the launch after StartLog")
			e := events[0]
			assert.Equal(t, accounting.OpLaunch, e.Op)
			assert.Equal(t, "launch", e.Op.String())
			assert.Equal(t, tc.name, e.Name)
			assert.Equal(t, tc.wantR, e.Bytes, "bytes read")
			assert.Equal(t, tc.wantW, e.Written, "bytes written")
		})
	}
}

// TestLaunchesInScopes: a scope counts the launches recorded while it was
// the innermost one, and its parent those too once it is popped; the
// ledger counts them all.
func TestLaunchesInScopes(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	r := rand.Int64N(1<<20) + 1
	l.RecordLaunch("before", r, r)
	outer := l.Push("outer")
	l.RecordLaunch("saxpy", r, 2*r)
	inner := l.Push("inner")
	l.RecordLaunch("saxpy", 3*r, 4*r)
	l.RecordLaunch("gemm", -1, -1)
	in, err := inner.Pop()
	require.NoError(t, err)
	assert.Equal(t, []accounting.KernelStats{{Name: "gemm", Launches: 1}, {Name: "saxpy", Launches: 1, Measured: 1, Read: 3 * r, Written: 4 * r}},
		in.Kernels, "inner: its own launches")
	m, err := l.Measure("measured", func() error { l.RecordLaunch("gemm", -1, -1); return nil })
	require.NoError(t, err)
	assert.Equal(t, []accounting.KernelStats{{Name: "gemm", Launches: 1}}, m.Kernels, "Measure's scope")
	out, err := outer.Pop()
	require.NoError(t, err)
	assert.Equal(t, []accounting.KernelStats{{Name: "gemm", Launches: 2}, {Name: "saxpy", Launches: 2, Measured: 2, Read: 4 * r, Written: 6 * r}},
		out.Kernels, "outer: its own and its popped scopes' launches")
	l.RecordLaunch("after", r, r)
	e, err := l.Measure("empty", func() error { return nil })
	require.NoError(t, err)
	assert.Nil(t, e.Kernels, "a scope without launches has none")
	assert.Equal(t, []accounting.KernelStats{
		{Name: "after", Launches: 1, Measured: 1, Read: r, Written: r},
		{Name: "before", Launches: 1, Measured: 1, Read: r, Written: r},
		{Name: "gemm", Launches: 2},
		{Name: "saxpy", Launches: 2, Measured: 2, Read: 4 * r, Written: 6 * r},
	}, l.Snapshot().Kernels, "the ledger: every launch")
}

// TestLaunchesWhileScopesComeAndGo: 8 goroutines launch while another
// pushes and pops scopes; every launch is counted once in the ledger and,
// through the inner scopes popped into it, once in the scope around them.
func TestLaunchesWhileScopesComeAndGo(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	outer := l.Push("outer")
	const workers, each = 8, 300
	read := rand.Int64N(1<<20) + 1
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var scoped int64
	var scopes sync.WaitGroup
	scopes.Add(1)
	go func() {
		defer scopes.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := l.Push("inner")
			snap, err := s.Pop()
			assert.NoError(t, err)
			for _, k := range snap.Kernels {
				scoped += k.Launches
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if i%3 == 0 {
					l.RecordLaunch(fmt.Sprintf("k%d", w%2), -1, -1)
				} else {
					l.RecordLaunch(fmt.Sprintf("k%d", w%2), read, 2*read)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	scopes.Wait()
	out, err := outer.Pop()
	require.NoError(t, err)
	s := l.Snapshot()
	require.Len(t, s.Kernels, 2)
	measured := int64(workers / 2 * (each - (each+2)/3))
	for _, k := range s.Kernels {
		assert.Equal(t, int64(workers/2*each), k.Launches, "%s launches", k.Name)
		assert.Equal(t, measured, k.Measured, "%s measured", k.Name)
		assert.Equal(t, measured*read, k.Read, "%s read", k.Name)
		assert.Equal(t, 2*measured*read, k.Written, "%s written", k.Name)
	}
	assert.Equal(t, s.Kernels, out.Kernels, "the outer scope saw every launch, none lost in an inner one")
	assert.LessOrEqual(t, scoped, int64(workers*each), "inner scopes saw no more than were launched")
}

// TestNilLedgerLaunch: a nil ledger records no launch and does not panic.
func TestNilLedgerLaunch(t *testing.T) {
	var l *accounting.Ledger
	assert.NotPanics(t, func() { l.RecordLaunch("saxpy", rand.Int64N(100)+1, -1) })
	assert.Nil(t, l.Snapshot().Kernels)
	_, err := l.Push("s").Pop()
	assert.ErrorIs(t, err, accounting.ErrNil)
}
