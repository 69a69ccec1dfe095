package pool

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math/bits"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// treapDepth checks the heap order of the treap under t (no block's
// priority is below a child's) and returns its depth.
func treapDepth(t *testing.T, b *block) int {
	if b == nil {
		return 0
	}
	for _, c := range []*block{b.left, b.right} {
		if c != nil {
			require.GreaterOrEqual(t, b.prio, c.prio, "block %v sits above %v, whose priority is higher", b.ptr, c.ptr)
		}
	}
	return 1 + max(treapDepth(t, b.left), treapDepth(t, b.right))
}

// The free index keeps its promise of O(log n) steps whatever order the
// blocks come in: a segment cut from its start frees its blocks in address
// order, and a sorted binary tree without the treap's priorities would be
// a list n deep. After inserts in address order, in reverse and at random,
// and after random removes, the treap's heap order holds and its depth
// stays within 4·log2(n) (a random treap's expected depth is about
// 1.4·log2(n)).
func TestFreeIndexStaysShallow(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	const n = 4096
	orders := map[string]func([]*block){
		"ascending":  func([]*block) {},
		"descending": slices.Reverse[[]*block],
		"random":     func(bs []*block) { rng.Shuffle(len(bs), func(i, j int) { bs[i], bs[j] = bs[j], bs[i] }) },
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			bs := make([]*block, n)
			base := devarray.Ptr(1+rng.IntN(1<<20)) << 8
			for i := range bs {
				// Equal sizes: the order is the addresses'.
				bs[i] = &block{ptr: base + devarray.Ptr(i)<<8, size: 256}
			}
			order(bs)
			var x freeIndex
			for _, b := range bs {
				x.insert(b)
			}
			bound := 4 * bits.Len(uint(n))
			require.LessOrEqual(t, treapDepth(t, x.root), bound, "after %d inserts", n)
			rng.Shuffle(len(bs), func(i, j int) { bs[i], bs[j] = bs[j], bs[i] })
			for _, b := range bs[:n/2] {
				x.remove(b)
			}
			require.Equal(t, n/2, x.n)
			require.LessOrEqual(t, treapDepth(t, x.root), bound, "after %d removes", n/2)
		})
	}
}

// The live table's home slots spread the addresses a pool hands out
// (multiples of the 256-byte granule, often consecutive) over the table:
// at every size the table grows to, half full with consecutive granules,
// at least half the addresses have a home slot of their own, so that a
// lookup probes a slot or two, not a run as long as the table.
func TestLiveTableSpreadsAddresses(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	var tab liveTable
	for tab.grow(); len(tab.slots) <= 1<<16; tab.grow() {
		t.Run(fmt.Sprint(len(tab.slots)), func(t *testing.T) {
			require.Equal(t, len(tab.slots), 1<<(64-tab.shift), "shift")
			homes := make(map[int]bool)
			base := devarray.Ptr(1+rng.IntN(1<<30)) << 8
			n := len(tab.slots) / 2
			for i := range n {
				s := tab.slot(base + devarray.Ptr(i)<<8)
				require.True(t, s >= 0 && s < len(tab.slots), "slot %d of %d", s, len(tab.slots))
				homes[s] = true
			}
			require.GreaterOrEqual(t, len(homes), n/2, "distinct home slots of %d addresses", n)
		})
	}
}

// A pool that allocates and frees for a long time with few blocks live at
// once keeps its bookkeeping that small: the live table's count is the
// blocks handed out and parked, its size stays within a few times the most
// it held at once (it does not shrink), and the
// parked count is the blocks on the parked stacks. (A count that drifted
// would grow the table with every allocation, or send every slow-path
// allocation walking the empty parked stacks.)
func TestBookkeepingStaysExactUnderChurn(t *testing.T) {
	dev := testdev.Open(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	p := New(dev)
	defer func() { require.NoError(t, p.Release()) }()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()

	var held []devarray.Ptr
	most := 0 // the live table's largest count so far
	for op := range 20_000 {
		if len(held) < 8 && (len(held) == 0 || rng.IntN(2) == 0) {
			size := int64(1 + rng.IntN(8<<10))
			var ptr devarray.Ptr
			if rng.IntN(4) == 0 {
				ptr, err = p.AllocAsync(size, s)
			} else {
				ptr, err = p.Alloc(size)
			}
			require.NoError(t, err, "op %d", op)
			held = append(held, ptr)
		} else {
			i := rng.IntN(len(held))
			require.NoError(t, p.Free(held[i]), "op %d", op)
			held = slices.Delete(held, i, i+1)
		}
		onStacks, parkedN, liveN, slots := p.bookkeeping()
		require.Equal(t, onStacks, parkedN, "op %d: the parked count", op)
		require.Equal(t, len(held)+onStacks, liveN, "op %d: the live table's count", op)
		most = max(most, liveN)
		require.LessOrEqual(t, slots, 4*max(16, most), "op %d: the live table's size for at most %d blocks", op, most)
	}
	for _, ptr := range held {
		require.NoError(t, p.Free(ptr))
	}
}

// bookkeeping returns the blocks on the parked stacks, the parked count,
// the live table's count and its size.
func (p *Pool) bookkeeping() (onStacks, parkedN, liveN, slots int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.parked.tops {
		for ; b != nil; b = b.nextParked {
			onStacks++
		}
	}
	return onStacks, p.parked.n, p.live.n, len(p.live.slots)
}
