package accounting_test

import (
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// TestRecordLaunchCountsPerKernel: launches add up per name, bytes only
// over the launches whose bytes are known, in Snapshot, Diff and Sum.
func TestRecordLaunchCountsPerKernel(t *testing.T) {
	type launch struct {
		name          string
		read, written int64
	}
	for _, tc := range []struct {
		name     string
		launches []launch
		want     []accounting.KernelStats
	}{
		{"none", nil, nil},
		{"one measured", []launch{{"saxpy", 800, 400}}, []accounting.KernelStats{{Name: "saxpy", Launches: 1, Measured: 1, Read: 800, Written: 400}}},
		{"unknown bytes", []launch{{"gemm", -1, -1}, {"gemm", -1, -1}}, []accounting.KernelStats{{Name: "gemm", Launches: 2}}},
		{"mixed, sorted by name", []launch{{"zeta", 8, 4}, {"alpha", -1, -1}, {"zeta", -1, 7}, {"zeta", 16, 8}},
			[]accounting.KernelStats{{Name: "alpha", Launches: 1}, {Name: "zeta", Launches: 3, Measured: 2, Read: 24, Written: 12}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := accounting.NewLedger("sim:0")
			before := l.Snapshot()
			for _, x := range tc.launches {
				l.RecordLaunch(x.name, x.read, x.written)
			}
			s := l.Snapshot()
			assert.Equal(t, tc.want, s.Kernels)
			assert.Equal(t, tc.want, accounting.Diff(before, s).Kernels)
			sum := accounting.Sum("job", s, s)
			for i, k := range sum.Kernels {
				w := tc.want[i]
				assert.Equal(t, accounting.KernelStats{Name: w.Name, Launches: 2 * w.Launches, Measured: 2 * w.Measured, Read: 2 * w.Read, Written: 2 * w.Written}, k)
			}
		})
	}
}

// TestRecordLaunchFromManyGoroutines: concurrent launches all count.
func TestRecordLaunchFromManyGoroutines(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	const workers, each = 8, 500
	read := rand.Int64N(1<<20) + 1
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				l.RecordLaunch(fmt.Sprintf("k%d", w%2), read, 2*read)
			}
		}()
	}
	wg.Wait()
	s := l.Snapshot()
	require.Len(t, s.Kernels, 2)
	for _, k := range s.Kernels {
		assert.Equal(t, int64(workers/2*each), k.Launches)
		assert.Equal(t, k.Launches*read, k.Read)
		assert.Equal(t, k.Launches*2*read, k.Written)
	}
}

// TestRecordLaunchReportJSONAndLog: the report has a line per kernel
// ("-" for unknown bytes, "(of N)" for some), the JSON a kernels list,
// the event log a launch event; a ledger without launches reports no
// kernel table, and a nil ledger records nothing.
func TestRecordLaunchReportJSONAndLog(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	assert.NotContains(t, l.Report(), "kernel")
	l.StartLog(accounting.LogConfig{})
	n := rand.Int64N(1000) + 1
	l.RecordLaunch("saxpy", 8*n, 4*n)
	l.RecordLaunch("cublas_gemm", -1, -1)
	l.RecordLaunch("mixed", 2048, 1024)
	l.RecordLaunch("mixed", -1, -1)
	rep := l.Report()
	assert.Contains(t, rep, "kernel  launches")
	assert.Regexp(t, `saxpy +1 +`+accounting.FormatBytes(8*n)+` +`+accounting.FormatBytes(4*n), rep)
	assert.Regexp(t, `cublas_gemm +1 +- +-`, rep)
	assert.Regexp(t, `mixed +2 +2.00 KiB \(of 1\) +1.00 KiB \(of 1\)`, rep)
	assert.Contains(t, l.Snapshot().String(), "4 kernel launches")

	b, err := json.Marshal(l.Snapshot())
	require.NoError(t, err)
	var j struct {
		Kernels []accounting.KernelStats `json:"kernels"`
	}
	require.NoError(t, json.Unmarshal(b, &j))
	assert.Equal(t, l.Snapshot().Kernels, j.Kernels)

	events, _, err := l.StopLog()
	require.NoError(t, err)
	require.Len(t, events, 4)
	assert.Equal(t, accounting.OpLaunch, events[0].Op)
	assert.Equal(t, "saxpy", events[0].Name)
	assert.Equal(t, [2]int64{8 * n, 4 * n}, [2]int64{events[0].Bytes, events[0].Written})
	assert.Equal(t, [2]int64{-1, -1}, [2]int64{events[1].Bytes, events[1].Written})
	assert.True(t, strings.Contains(fmt.Sprintf("%#v", l.Snapshot()), "Kernels:"))

	var nilLedger *accounting.Ledger
	nilLedger.RecordLaunch("x", 1, 1)
	assert.Empty(t, nilLedger.Snapshot().Kernels)
}

// ExampleLedger_RecordLaunch counts two launches of one kernel, whose
// bytes the backend knew, and one of a library's kernel it did not.
func ExampleLedger_RecordLaunch() {
	l := accounting.NewLedger("sim:0")
	l.RecordLaunch("saxpy", 8192, 4096)
	l.RecordLaunch("saxpy", 8192, 4096)
	l.RecordLaunch("cublas_sgemm", -1, -1)
	for _, k := range l.Snapshot().Kernels {
		fmt.Println(k.Name, k.Launches, k.Measured, k.Read, k.Written)
	}
	// Output:
	// cublas_sgemm 1 0 0 0
	// saxpy 2 2 16384 8192
}
