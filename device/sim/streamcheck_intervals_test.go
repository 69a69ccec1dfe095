package sim

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// byteHistory is the model of one byte's history: what intervals keeps
// per segment, kept per byte.
type byteHistory struct {
	write *accessRec
	reads []*accessRec
}

// TestIntervalsMatchAByteModel drives the interval structure and a model
// that keeps each byte's history on its own with the same random accesses,
// frees and clocks: every conflict the model sees is found (and only
// those), and afterwards each byte's history is the model's. Small ranges
// over a few pages make thousands of segments, so chunks split and merge.
func TestIntervalsMatchAByteModel(t *testing.T) {
	mostChunks := 0
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, seed*7+1))
		const size = 1 << 13
		const base = uintptr(1 << 20)
		model := make([]byteHistory, size)
		var m intervals
		lanes := []*lane{{id: 0}, {id: 1}, {id: 2}}
		ticks := make([]uint32, len(lanes))
		for step := range 4000 {
			if rng.IntN(20) == 0 { // a free
				lo := rng.IntN(size)
				hi := min(size, lo+1+rng.IntN(2048))
				m.forget(base+uintptr(lo), base+uintptr(hi))
				for b := lo; b < hi; b++ {
					model[b] = byteHistory{}
				}
				checkIntervals(t, &m, model, base, step)
				continue
			}
			l := lanes[rng.IntN(len(lanes))]
			ticks[l.id]++
			c := make(vclock, len(lanes))
			for i := range c {
				if ticks[i] > 0 {
					c[i] = uint32(rng.IntN(int(ticks[i]) + 1)) // what this operation knows of each lane
				}
			}
			c[l.id] = ticks[l.id]
			lo := rng.IntN(size)
			hi := min(size, lo+1+rng.IntN(64))
			if rng.IntN(10) == 0 {
				hi = min(size, lo+1+rng.IntN(size/2))
			}
			op := &opRecord{kind: "op", lane: l, tick: ticks[l.id]}
			if rng.IntN(5) == 0 { // the rows of a pitched copy, recorded in one pass
				width, pitch, rows := 1+rng.IntN(16), 0, 2+rng.IntN(20)
				pitch = width + rng.IntN(33)
				write := rng.IntN(3) == 0
				var run []*accessRec
				for r := range rows {
					rlo := lo + r*pitch
					if rlo+width > size {
						break
					}
					run = append(run, &accessRec{op: op, lo: base + uintptr(rlo), hi: base + uintptr(rlo+width), write: write})
				}
				racy := false
				for _, a := range run {
					want := false
					for b := a.lo - base; b < a.hi-base; b++ {
						want = want || racesWith(model[b], a, c)
					}
					prev, _, _ := m.conflict(a, c)
					require.Equal(t, want, prev != nil, "seed %d step %d: a row's conflict", seed, step)
					racy = racy || want
				}
				if racy || len(run) == 0 {
					continue
				}
				m.recordRun(run, c)
				for _, a := range run {
					for b := a.lo - base; b < a.hi-base; b++ {
						applyToModel(&model[b], a, c)
					}
				}
				checkIntervals(t, &m, model, base, step)
				continue
			}
			a := &accessRec{op: op, lo: base + uintptr(lo), hi: base + uintptr(hi), write: rng.IntN(3) == 0}
			want := false
			for b := lo; b < hi; b++ {
				if racesWith(model[b], a, c) {
					want = true
				}
			}
			prev, plo, phi := m.conflict(a, c)
			require.Equal(t, want, prev != nil, "seed %d step %d: a conflict is found exactly when the model has one", seed, step)
			if prev != nil {
				require.True(t, a.lo <= plo && plo < phi && phi <= a.hi, "the overlap lies in the access")
				found := false
				for b := plo - base; b < phi-base; b++ {
					h := model[b]
					found = found || h.write == prev || slices.Contains(h.reads, prev)
				}
				require.True(t, found, "seed %d step %d: the earlier access named touched the bytes named", seed, step)
				continue
			}
			m.record(a, c)
			for b := lo; b < hi; b++ {
				applyToModel(&model[b], a, c)
			}
			if step%50 == 0 {
				checkIntervals(t, &m, model, base, step)
			}
			mostChunks = max(mostChunks, len(m.chunks))
		}
		checkIntervals(t, &m, model, base, -1)
	}
	require.Greater(t, mostChunks, 2, "the accesses split the segments into several chunks")
	t.Logf("at most %d chunks", mostChunks)
}

// applyToModel updates a byte's history with access a by an operation
// that knows c.
func applyToModel(h *byteHistory, a *accessRec, c vclock) {
	if a.write {
		*h = byteHistory{write: a}
		return
	}
	var reads []*accessRec
	for _, r := range h.reads {
		if !r.before(c) {
			reads = append(reads, r)
		}
	}
	h.reads = append(reads, a)
}

// racesWith reports whether access a, by an operation that knows c, races
// with the history h of a byte.
func racesWith(h byteHistory, a *accessRec, c vclock) bool {
	if h.write != nil && !h.write.before(c) {
		return true
	}
	if a.write {
		for _, r := range h.reads {
			if !r.before(c) {
				return true
			}
		}
	}
	return false
}

// checkIntervals checks the structure (chunks not empty nor too large,
// segments sorted, disjoint and not empty) and that every byte's history
// is the model's.
func checkIntervals(t *testing.T, m *intervals, model []byteHistory, base uintptr, step int) {
	t.Helper()
	got := make([]byteHistory, len(model))
	last := uintptr(0)
	for _, ch := range m.chunks {
		require.NotEmpty(t, ch.segs, "step %d: an empty chunk", step)
		require.LessOrEqual(t, len(ch.segs), maxChunk, "step %d: a chunk too large", step)
		for _, s := range ch.segs {
			require.Less(t, s.lo, s.hi, "step %d: an empty segment", step)
			require.GreaterOrEqual(t, s.lo, last, "step %d: segments sorted and disjoint", step)
			last = s.hi
			for b := s.lo; b < s.hi; b++ {
				got[b-base] = byteHistory{write: s.write, reads: s.reads}
			}
		}
	}
	for b := range model {
		if sameHistory(model[b], got[b]) {
			continue // testify's reflection below only for a difference: 8192 bytes a check, thousands of checks
		}
		require.Equal(t, model[b].write, got[b].write, "step %d: byte %d's last write", step, b)
		require.ElementsMatch(t, model[b].reads, got[b].reads, "step %d: byte %d's reads", step, b)
	}
}

// sameHistory reports whether two histories name the same last write and
// the same reads, in any order.
func sameHistory(a, b byteHistory) bool {
	if a.write != b.write || len(a.reads) != len(b.reads) {
		return false
	}
	for _, r := range a.reads {
		if countOf(a.reads, r) != countOf(b.reads, r) {
			return false
		}
	}
	return true
}

// countOf counts r in reads.
func countOf(reads []*accessRec, r *accessRec) int {
	n := 0
	for _, x := range reads {
		if x == r {
			n++
		}
	}
	return n
}
