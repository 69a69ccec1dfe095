package accounting_test

import (
	"encoding/json"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

func TestDiff(t *testing.T) {
	var l accounting.Ledger
	require.NoError(t, l.Alloc(accounting.Device, 1, 100))
	l.RecordCopy(accounting.DtoH, accounting.PathDirect, 10, time.Second)
	a := l.Snapshot()
	require.NoError(t, l.Alloc(accounting.Device, 2, 50))
	l.Free(accounting.Device, 1, 100)
	l.RecordCopy(accounting.DtoH, accounting.PathDirect, 30, 2*time.Second)
	l.RecordMemset(7, time.Second)
	b := l.Snapshot()

	d := accounting.Diff(a, b)
	k := d.Kinds[accounting.Device]
	assert.Equal(t, int64(-50), k.Current)
	assert.Equal(t, int64(1), k.Allocs)
	assert.Equal(t, int64(1), k.Frees)
	assert.Equal(t, int64(150), k.Peak, "peak is b's")
	assert.Equal(t, int64(50), k.Allocated, "allocated between the two")
	assert.Equal(t, int64(100), k.Freed, "freed between the two")

	// Every count of every kind is b's less a's, with random counts on both sides.
	var m accounting.Ledger
	kinds := []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped}
	run := func() {
		for _, k := range kinds {
			for range 1 + rand.IntN(5) {
				n := rand.Int64N(1<<20) + 1
				require.NoError(t, m.Alloc(k, 1, n))
				m.Free(k, 1, n)
			}
			for range rand.IntN(3) {
				m.RecordFailure(k, 1)
			}
		}
	}
	run()
	x := m.Snapshot()
	run()
	y := m.Snapshot()
	for _, k := range kinds {
		got, a, b := accounting.Diff(x, y).Kinds[k], x.Kinds[k], y.Kinds[k]
		assert.Equal(t, accounting.KindStats{Current: b.Current - a.Current, Peak: b.Peak, Allocs: b.Allocs - a.Allocs,
			Frees: b.Frees - a.Frees, Allocated: b.Allocated - a.Allocated, Freed: b.Freed - a.Freed,
			Failed: b.Failed - a.Failed, Limit: b.Limit, Base: b.Base}, got, "%v", k)
		assert.Positive(t, got.Frees, "%v", k)
	}
	assert.Equal(t, accounting.CopyStats{Count: 1, Bytes: 30, Seconds: 2}, d.Copies[accounting.DtoH][accounting.PathDirect])
	assert.Equal(t, accounting.CopyStats{Count: 1, Bytes: 7, Seconds: 1}, d.Memsets)
}

func TestJSON(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	require.NoError(t, l.Alloc(accounting.Mapped, 1, 4096))
	l.RecordCopy(accounting.HtoD, accounting.PathStaged, 8192, time.Millisecond)
	raw, err := l.JSON()
	require.NoError(t, err)

	var got struct {
		Name   string
		Memory map[string]accounting.KindStats
		Copies map[string]map[string]accounting.CopyStats
		Totals map[string]accounting.CopyStats `json:"copy_totals"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.Equal(t, "sim:0", got.Name)
	assert.Len(t, got.Memory, int(accounting.NumKinds), "every kind is present")
	assert.Equal(t, int64(4096), got.Memory["mapped"].Current)
	assert.Equal(t, int64(8192), got.Copies["HtoD"]["staged"].Bytes)
	assert.NotContains(t, got.Copies, "DtoH", "directions without copies are left out of copies")
	assert.Equal(t, int64(0), got.Totals["DtoH"].Bytes, "but totals has every direction")

	// Copies in every direction: each in its total, and all in Copied.
	var all accounting.CopyStats
	for d := range accounting.NumDirections {
		n := rand.Int64N(1<<20) + 1
		l.RecordCopy(d, accounting.PathDirect, n, time.Millisecond)
		all.Count++
		all.Bytes += n
	}
	all.Count++ // the staged copy above
	all.Bytes += 8192
	s := l.Snapshot()
	assert.Equal(t, all.Count, s.Copied().Count)
	assert.Equal(t, all.Bytes, s.Copied().Bytes)
	raw, err = l.JSON()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.Len(t, got.Totals, int(accounting.NumDirections))
	for d := range accounting.NumDirections {
		assert.Equal(t, s.CopyTotal(d), got.Totals[d.String()], "%v", d)
		assert.Positive(t, got.Totals[d.String()].Count, "%v", d)
	}
}

func TestReport(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	empty := l.Report()
	assert.Contains(t, empty, "(no allocations)")
	assert.Contains(t, empty, "(no copies)")

	require.NoError(t, l.SetLimit(accounting.Pinned, 1<<30))
	require.NoError(t, l.Alloc(accounting.Device, 1, 3<<20))
	l.RecordCopy(accounting.HtoD, accounting.PathPinned, 2e9, time.Second)
	l.RecordCopy(accounting.DtoH, accounting.PathDirect, 10, 0)
	l.RecordMemset(100, 0)
	r := l.Report()
	lines := strings.Split(r, "\n")
	assert.Equal(t, "ledger sim:0", lines[0])
	l.AddCached(accounting.Device, 1<<20)
	l.AddCached(accounting.NumKinds, 1) // ignored
	r = l.Report()
	assert.Equal(t, int64(1<<20), l.Snapshot().Kinds[accounting.Device].Cached)
	assert.Regexp(t, `device\s+3\.00 MiB\s+1\.00 MiB\s+3\.00 MiB\s+1\s+0\s+3\.00 MiB\s+0\s+none`, r)
	assert.Regexp(t, `pinned\s+0 B\s+0 B\s+0 B\s+0\s+0\s+0 B\s+0\s+1\.00 GiB`, r, "a kind with only a limit is shown")
	assert.Regexp(t, `HtoD\s+pinned\s+1\s+1\.86 GiB\s+1\.000 s\s+2\.00`, r, "GB/s is bytes per second / 1e9")
	assert.Regexp(t, `DtoH\s+direct\s+1\s+10 B\s+-\s+-`, r, "no time, no rate")
	assert.Contains(t, r, "256-byte granules", "the device's rounding is explained")
	rated := accounting.NewLedger("x")
	rated.RecordCopy(accounting.DtoD, accounting.PathD2D, 3e9, 1500*time.Millisecond)
	assert.Regexp(t, `DtoD\s+\S+\s+1\s+2\.79 GiB\s+1\.500 s\s+2\.00\s`, rated.Report(), "3 GB in 1.5 s: 2 GB/s")
	for _, tc := range []struct {
		sec  float64
		want string
	}{{37e-6, "37.0 µs"}, {0.0123, "12.300 ms"}, {2.5, "2.500 s"}, {0, "-"}} {
		led := accounting.NewLedger("x")
		led.RecordCopy(accounting.HtoD, accounting.PathPinned, 1<<20, time.Duration(tc.sec*1e9))
		assert.Regexp(t, `HtoD\s+pinned\s+1\s+1\.00 MiB\s+`+regexp.QuoteMeta(tc.want)+`\s`, led.Report(), "%v s", tc.sec)
		assert.NotContains(t, led.Report(), "granules", "no device memory, no note")
	}
	assert.Regexp(t, `memset\s+-\s+1\s+100 B`, r)
	assert.NotContains(t, r, "managed")
}

// The report explains the device's 256-byte granules when it shows device
// memory (allocated, or reserved and not yet committed), and only then.
func TestReportNotesGranulesForDeviceMemory(t *testing.T) {
	n := rand.Int64N(1<<20) + 1
	for _, tc := range []struct {
		name string
		use  func(l *accounting.Ledger)
		note bool
	}{
		{"pinned memory only", func(l *accounting.Ledger) { require.NoError(t, l.Alloc(accounting.Pinned, 0x1000, n)) }, false},
		{"a failed device allocation only", func(l *accounting.Ledger) { l.RecordFailure(accounting.Device, n) }, false},
		{"a device allocation", func(l *accounting.Ledger) { require.NoError(t, l.Alloc(accounting.Device, 0x1000, n)) }, true},
		{"a device reservation", func(l *accounting.Ledger) { require.NoError(t, l.Reserve(accounting.Device, n)) }, true},
	} {
		l := accounting.NewLedger("sim:0")
		tc.use(l)
		r := l.Report()
		assert.NotContains(t, r, "(no allocations)", tc.name)
		if tc.note {
			assert.Contains(t, r, "256-byte granules", tc.name)
		} else {
			assert.NotContains(t, r, "granules", tc.name)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.00 KiB"}, {1536, "1.50 KiB"},
		{-2048, "-2.00 KiB"}, {5 << 30, "5.00 GiB"}, {1 << 62, "4.00 EiB"},
		// each unit from its first byte, negative sizes as positive ones
		{-1023, "-1023 B"}, {-1024, "-1.00 KiB"}, {1 << 20, "1.00 MiB"}, {-1 << 20, "-1.00 MiB"},
		{math.MaxInt64, "8.00 EiB"}, {math.MinInt64, "-8.00 EiB"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, accounting.FormatBytes(tt.n), "FormatBytes(%d)", tt.n)
	}
}
