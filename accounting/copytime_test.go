package accounting_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/accounting"
)

// A staged copy's DMA chunks count their bytes but not their time; the
// whole copy's wall time, added once it is done, is the path's time.
func TestStagedTimeIsTheWallTime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dir       accounting.Direction
		path      accounting.Path
		chunkTime bool // whether the chunks' own times count
	}{
		{"staged HtoD", accounting.HtoD, accounting.PathStaged, false},
		{"staged DtoH", accounting.DtoH, accounting.PathStaged, false},
		{"staged host copies", accounting.HtoH, accounting.PathStaged, true},
		{"pinned HtoD", accounting.HtoD, accounting.PathPinned, true},
		{"d2d", accounting.DtoD, accounting.PathD2D, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := accounting.NewLedger("sim:0")
			s := l.Push("scope")
			chunks := rand.IntN(8) + 2
			n := rand.Int64N(1<<20) + 1
			for range chunks {
				l.RecordCopy(tc.dir, tc.path, n, time.Millisecond)
			}
			wall := time.Duration(rand.Int64N(int64(time.Second))) + time.Microsecond
			l.RecordCopyTime(tc.dir, tc.path, wall)
			want := wall
			if tc.chunkTime {
				want += time.Duration(chunks) * time.Millisecond
			}
			got := l.Snapshot().Copies[tc.dir][tc.path]
			assert.Equal(t, int64(chunks), got.Count, "RecordCopyTime counts no copy")
			assert.Equal(t, int64(chunks)*n, got.Bytes, "RecordCopyTime counts no bytes")
			assert.InDelta(t, want.Seconds(), got.Seconds, 1e-9, "the path's seconds")
			inScope, err := s.Pop()
			assert.NoError(t, err)
			assert.Equal(t, got, inScope.Copies[tc.dir][tc.path], "the scope sees the same")
		})
	}
	var l accounting.Ledger
	l.RecordCopyTime(accounting.NumDirections, accounting.PathStaged, time.Second) // ignored
	l.RecordCopyTime(accounting.HtoD, accounting.NumPaths, time.Second)            // ignored
	assert.Zero(t, l.Snapshot().Copied())
}
