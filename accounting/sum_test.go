package accounting_test

import (
	"math/rand/v2"
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
			var want [accounting.NumDirections][accounting.NumPaths]int64
			var wantAlloc, wantPeak int64
			for i := range tt.ledgers {
				l := accounting.NewLedger("rank")
				for range 1 + rand.IntN(20) {
					d := accounting.Direction(rand.IntN(int(accounting.NumDirections)))
					p := accounting.Path(rand.IntN(int(accounting.NumPaths)))
					n := 1 + rand.Int64N(1<<20)
					l.RecordCopy(d, p, n, time.Microsecond)
					want[d][p] += n
				}
				n := 256 * (1 + rand.Int64N(100))
				require.NoError(t, l.Alloc(accounting.Device, uintptr(0x1000*(i+1)), n))
				l.Free(accounting.Device, uintptr(0x1000*(i+1)), n)
				wantAlloc += n
				wantPeak += n
				snaps = append(snaps, l.Snapshot())
			}
			sum := accounting.Sum("job", snaps...)
			assert.Equal(t, "job", sum.Name)
			for d := range want {
				for p := range want[d] {
					assert.Equal(t, want[d][p], sum.Copies[d][p].Bytes, "%v %v: the ranks' bytes sum to the total", accounting.Direction(d), accounting.Path(p))
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
