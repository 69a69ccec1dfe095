package bench_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/device/sim"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/transfer"
)

// On sim at memory speed the events around a copy and the wall clock
// around a synchronous one time the same host memory copy, so their
// medians agree: within 2× (the goal), and the test allows 4× for a
// loaded machine's scheduling, each row's best of up to three runs (a
// bias, not noise, fails all three). A pageable copy HtoD on a stream
// was staged into a fresh buffer each time, its allocation and page
// faults between the events: 16 MiB read 0.94 GB/s by events against
// 10.98 by the wall clock, 1 MiB 3.04 against 23.22.
func TestEventAndWallClockAgreeOnSim(t *testing.T) {
	const maxRatio, runs = 4, 3
	dev, err := sim.New(sim.Config{Memory: 64 << 20})
	require.NoError(t, err)
	defer dev.Close()
	small, large := int64(rand.IntN(1<<20)+1<<20), int64(rand.IntN(4<<20)+8<<20)
	rows := []struct {
		path string
		dir  accounting.Direction
	}{
		{"direct", accounting.HtoD}, {"direct", accounting.DtoH},
		{"pinned", accounting.HtoD}, {"pinned", accounting.DtoH},
		{"d2d", accounting.DtoD},
	}
	type key struct {
		row  int
		size int64
	}
	best := map[key]float64{} // the ratio nearest 1 over the runs so far
	var tables []string
	for range runs {
		r, err := bench.Run(dev, bench.Config{Sizes: []int64{small, large}, Budget: 12 * large, MinRepeats: 9, MaxRepeats: 15,
			Paths: []transfer.Path{transfer.PathDirect, transfer.PathPinned, transfer.PathD2D}})
		require.NoError(t, err)
		tables = append(tables, r.Table())
		worst := 0.0
		for i, row := range rows {
			for _, size := range []int64{small, large} {
				q := find(t, r, row.path, row.dir.String(), size)
				require.Positive(t, q.EventGBps, "%s %s %d: timed by events", row.path, row.dir, size)
				ratio := max(q.EventGBps/q.GBps, q.GBps/q.EventGBps)
				if b, ok := best[key{i, size}]; !ok || ratio < b {
					best[key{i, size}] = ratio
				}
				worst = max(worst, best[key{i, size}])
			}
		}
		if worst <= maxRatio {
			break
		}
	}
	assert.Contains(t, tables[0], "ledger GB/s is the bytes over the time the ledger recorded for all the timed repeats, a mean",
		"the wide table says why the ledger's figure can differ from the medians")
	for i, row := range rows {
		for _, size := range []int64{small, large} {
			t.Run(row.path+" "+row.dir.String()+" "+accounting.FormatBytes(size), func(t *testing.T) {
				assert.LessOrEqual(t, best[key{i, size}], float64(maxRatio),
					"events against the wall clock, the best of %d runs:\n%s", len(tables), strings.Join(tables, "\n"))
			})
		}
	}
}
