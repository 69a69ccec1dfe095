package accounting_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

func TestSumAddsEveryCounter(t *testing.T) {
	tests := []struct {
		name    string
		ledgers int
	}{
		{"none", 0},
		{"one", 1},
		{"three ranks", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var snaps []accounting.Snapshot
			var want, wantCount [accounting.NumDirections][accounting.NumPaths]int64
			var wantSec [accounting.NumDirections][accounting.NumPaths]float64
			var wantAlloc, wantPeak int64
			for i := range tt.ledgers {
				l := accounting.NewLedger("rank")
				for range 1 + rand.IntN(20) {
					d := accounting.Direction(rand.IntN(int(accounting.NumDirections)))
					p := accounting.Path(rand.IntN(int(accounting.NumPaths)))
					n := 1 + rand.Int64N(1<<20)
					took := time.Duration(1+rand.IntN(1000)) * time.Microsecond
					l.RecordCopy(d, p, n, took)
					want[d][p] += n
					wantCount[d][p]++
				}
				n := 256 * (1 + rand.Int64N(100))
				require.NoError(t, l.Alloc(accounting.Device, uintptr(0x1000*(i+1)), n))
				l.Free(accounting.Device, uintptr(0x1000*(i+1)), n)
				wantAlloc += n
				wantPeak += n
				snap := l.Snapshot()
				for d := range snap.Copies {
					for p := range snap.Copies[d] {
						wantSec[d][p] += snap.Copies[d][p].Seconds // the staged DMA's time is the copy's wall time, recorded apart
					}
				}
				snaps = append(snaps, snap)
			}
			sum := accounting.Sum("job", snaps...)
			assert.Equal(t, "job", sum.Name)
			for d := range want {
				for p := range want[d] {
					assert.Equal(t, want[d][p], sum.Copies[d][p].Bytes, "%v %v: the ranks' bytes sum to the total", accounting.Direction(d), accounting.Path(p))
					assert.Equal(t, wantCount[d][p], sum.Copies[d][p].Count, "%v %v: and their copies", accounting.Direction(d), accounting.Path(p))
					assert.InDelta(t, wantSec[d][p], sum.Copies[d][p].Seconds, 1e-9, "%v %v: and their seconds", accounting.Direction(d), accounting.Path(p))
				}
			}
			dev := sum.Kinds[accounting.Device]
			assert.Equal(t, wantAlloc, dev.Allocated)
			assert.Equal(t, wantPeak, dev.Peak)
			assert.Equal(t, int64(tt.ledgers), dev.Allocs)
			assert.Zero(t, dev.Current)
		})
	}
}
