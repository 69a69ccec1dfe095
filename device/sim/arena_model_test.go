package sim

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/require"
)

// arenaPair drives the arena and its oracle, sliceArena, with the same
// operations and fails at the first result on which they differ.
type arenaPair struct {
	t      testing.TB
	a      *arena
	o      *sliceArena
	offs   []int64 // live offsets, as the oracle hands them out
	checks int
}

func newArenaPair(t testing.TB, size int64) *arenaPair {
	return &arenaPair{t: t, a: newArena(size), o: newSliceArena(size)}
}

func (p *arenaPair) alloc(size int64) {
	p.t.Helper()
	off, ok := p.a.alloc(size)
	wantOff, wantOK := p.o.alloc(size)
	require.Equal(p.t, [2]any{wantOff, wantOK}, [2]any{off, ok}, "alloc(%d)", size)
	if ok {
		p.offs = append(p.offs, off)
	}
	p.same("alloc(%d)", size)
}

// release frees the i-th live allocation (taking it from the list), or
// the offset off when i is negative.
func (p *arenaPair) release(i int, off int64) {
	p.t.Helper()
	if i >= 0 {
		off = p.offs[i]
		p.offs[i] = p.offs[len(p.offs)-1]
		p.offs = p.offs[:len(p.offs)-1]
	}
	size, ok := p.a.release(off)
	wantSize, wantOK := p.o.release(off)
	require.Equal(p.t, [2]any{wantSize, wantOK}, [2]any{size, ok}, "release(%d)", off)
	p.same("release(%d)", off)
}

func (p *arenaPair) find(off, n int64) {
	p.t.Helper()
	s, ok := p.a.find(off, n)
	want, wantOK := p.o.find(off, n)
	require.Equal(p.t, [2]any{want, wantOK}, [2]any{s, ok}, "find(%d, %d)", off, n)
}

// same checks used and the largest free range after every step, and the
// whole free and live lists while they are short (every 64th step after).
func (p *arenaPair) same(format string, args ...any) {
	p.t.Helper()
	what := fmt.Sprintf(format, args...)
	require.Equal(p.t, p.o.used, p.a.used, "used after %s", what)
	require.Equal(p.t, p.o.largestFree(), p.a.largestFree(), "largest free range after %s", what)
	p.checks++
	if len(p.o.live)+len(p.o.free) > 64 && p.checks%64 != 0 {
		return
	}
	var live []span
	for _, s := range p.a.live {
		live = append(live, s)
	}
	require.Equal(p.t, orNil(p.o.live), live, "live allocations after %s", what)
	require.Equal(p.t, orNil(p.o.free), p.a.freeSpans(), "free ranges after %s", what)
}

// orNil returns s, or nil when it is empty.
func orNil(s []span) []span {
	if len(s) == 0 {
		return nil
	}
	return s
}

// probe is an offset at, inside, just past or just before a live
// allocation, or anywhere in (and around) the arena, and a length that may
// be negative, zero, exactly to the allocation's end, or one over.
func (p *arenaPair) probe(r *rand.Rand) (off, n int64) {
	if len(p.o.live) == 0 || r.IntN(4) == 0 {
		return r.Int64N(p.a.size+2*Alignment) - Alignment, int64(r.IntN(4*Alignment)) - 2
	}
	s := p.o.live[r.IntN(len(p.o.live))]
	switch r.IntN(5) {
	case 0:
		off = s.off
	case 1:
		off = s.end()
	case 2:
		off = s.off + r.Int64N(s.size)
	case 3:
		off = s.off - 1 - r.Int64N(Alignment)
	default:
		off = s.end() + r.Int64N(Alignment)
	}
	switch r.IntN(5) {
	case 0:
		n = int64(r.IntN(3)) - 1
	case 1:
		n = s.end() - off
	case 2:
		n = s.end() - off + 1
	default:
		n = r.Int64N(s.size + 1)
	}
	return off, n
}

// TestArenaMatchesOracle allocates sizes of 1 to 64 alignment units (a few
// of them much larger), frees in random order, releases offsets that are
// not allocation starts, and looks up random ranges; the arena and the
// sorted-slice oracle agree on every result.
func TestArenaMatchesOracle(t *testing.T) {
	tests := []struct {
		name      string
		size      int64
		steps     int
		allocBias int // out of 8: how often a step allocates
	}{
		{"small arena, full often", 64 * Alignment, 4000, 5},
		{"growing", 1 << 22, 6000, 6},
		{"churn", 1 << 20, 6000, 4},
		{"odd size", 1<<20 + 3*Alignment, 3000, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			r := rand.New(rand.NewPCG(seed, seed^0x5eed))
			p := newArenaPair(t, tt.size)
			for range tt.steps {
				switch k := r.IntN(8); {
				case k < tt.allocBias || len(p.offs) == 0:
					units := int64(1 + r.IntN(64))
					if r.IntN(32) == 0 {
						units *= int64(1 + r.IntN(256))
					}
					p.alloc(alignUp(max(units*Alignment-int64(r.IntN(Alignment)), 1)))
				case k == 7:
					off, _ := p.probe(r)
					p.release(-1, off)
				default:
					p.release(r.IntN(len(p.offs)), 0)
				}
				for range 2 {
					p.find(p.probe(r))
				}
			}
			for len(p.offs) > 0 {
				p.release(r.IntN(len(p.offs)), 0)
			}
			require.Equal(t, []span{{0, tt.size}}, p.a.freeSpans(), "everything coalesces back")
		})
	}
}

// FuzzArena runs the arena and the oracle on an operation sequence read
// from the input: each byte pair is an operation (alloc, release of a live
// allocation, release of an arbitrary offset, find) and its argument.
func FuzzArena(f *testing.F) {
	f.Add([]byte{0, 3, 0, 1, 0, 7, 1, 1, 3, 200, 0, 2, 1, 0, 2, 9})
	f.Add([]byte{0, 255, 0, 255, 0, 1, 1, 0, 0, 1, 1, 1, 3, 0, 3, 255})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, ops []byte) {
		p := newArenaPair(t, 64*Alignment)
		for i := 0; i+1 < len(ops); i += 2 {
			arg := int64(ops[i+1])
			switch ops[i] % 4 {
			case 0:
				p.alloc(alignUp(max(arg*Alignment/8, 1)))
			case 1:
				if len(p.offs) > 0 {
					p.release(int(arg)%len(p.offs), 0)
				}
			case 2:
				p.release(-1, arg*Alignment/4)
			case 3:
				p.find(arg*Alignment/4-Alignment, int64(ops[i]/4)*Alignment/8-2)
			}
		}
	})
}

// BenchmarkArenaFIFO allocates N ranges of mixed sizes and frees them in
// the order they were allocated (a replayed log's pattern), on the arena
// and on the sorted-slice arena it replaced, in the same run.
func BenchmarkArenaFIFO(b *testing.B) {
	type allocator interface {
		alloc(int64) (int64, bool)
		release(int64) (int64, bool)
	}
	for _, n := range []int{1e3, 1e4, 1e5} {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		sizes := make([]int64, n)
		var total int64
		for i := range sizes {
			sizes[i] = int64(1+r.IntN(64)) * Alignment
			total += sizes[i]
		}
		for _, impl := range []struct {
			name string
			new  func() allocator
		}{
			{"slices", func() allocator { return newSliceArena(total) }},
			{"treaps", func() allocator { return newArena(total) }},
		} {
			b.Run(fmt.Sprintf("N=%d/%s", n, impl.name), func(b *testing.B) {
				offs := make([]int64, n)
				for b.Loop() {
					a := impl.new()
					for i, s := range sizes {
						off, ok := a.alloc(s)
						if !ok {
							b.Fatalf("alloc %d of %d bytes failed", i, s)
						}
						offs[i] = off
					}
					for _, off := range offs {
						if _, ok := a.release(off); !ok {
							b.Fatalf("release %d failed", off)
						}
					}
				}
			})
		}
	}
}
