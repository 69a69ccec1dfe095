package pool

import (
	"cmp"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// sortedIndex is the free index the pool had before the treap: a slice
// sorted by size, then address. Test-only, to hold the treap against and
// to measure it against.
type sortedIndex []*block

func cmpBlocks(a, b *block) int {
	if c := cmp.Compare(a.size, b.size); c != 0 {
		return c
	}
	return cmp.Compare(a.ptr, b.ptr)
}

func (x *sortedIndex) insert(b *block) {
	i, _ := slices.BinarySearchFunc(*x, b, cmpBlocks)
	*x = slices.Insert(*x, i, b)
}

func (x *sortedIndex) remove(b *block) {
	if i, ok := slices.BinarySearchFunc(*x, b, cmpBlocks); ok {
		*x = slices.Delete(*x, i, i+1)
	}
}

func (x sortedIndex) bestFit(size int64) *block {
	i, _ := slices.BinarySearchFunc(x, size, func(b *block, size int64) int { return cmp.Compare(b.size, size) })
	if i == len(x) {
		return nil
	}
	return x[i]
}

// randomBlocks returns n blocks of random sizes (many equal ones: sizes
// are drawn from a few hundred granules) at distinct addresses.
func randomBlocks(rng *rand.Rand, n int) []*block {
	bs := make([]*block, n)
	for i := range bs {
		bs[i] = &block{ptr: devarray.Ptr(0x10000000 + 256*(i*7919%n+1)<<4), size: 256 * (1 + rng.Int64N(300))}
	}
	return bs
}

// The treap gives what the sorted slice gives for every best-fit query,
// after random inserts and removes, and keeps its counts.
func TestFreeIndexMatchesSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, n := range []int{1, 2, 17, 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			bs := randomBlocks(rng, n)
			var tree freeIndex
			var ref sortedIndex
			in := make([]bool, n)
			for op := range 20 * n {
				i := rng.IntN(n)
				if in[i] {
					tree.remove(bs[i])
					ref.remove(bs[i])
				} else {
					tree.insert(bs[i])
					ref.insert(bs[i])
				}
				in[i] = !in[i]
				size := 256 * rng.Int64N(310)
				require.Same(t, ref.bestFit(size), tree.bestFit(size), "op %d: best fit for %d bytes", op, size)
				require.Equal(t, len(ref), tree.n, "op %d: blocks", op)
				var bytes, largest int64
				for _, b := range ref {
					bytes += b.size
					largest = max(largest, b.size)
				}
				require.Equal(t, bytes, tree.bytes, "op %d: bytes", op)
				require.Equal(t, largest, tree.largest(), "op %d: largest", op)
			}
			for i := range in {
				if in[i] {
					tree.remove(bs[i])
				}
			}
			require.Nil(t, tree.root)
			require.Zero(t, tree.n)
			tree.remove(bs[0]) // not in it: nothing happens
			require.Zero(t, tree.n)
		})
	}
}

// BenchmarkFreeIndex: one remove, one best-fit query and one insert with n
// free blocks, on the treap and on the sorted slice it replaced, in one run.
func BenchmarkFreeIndex(b *testing.B) {
	for _, n := range []int{16, 1024, 65536} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		bs := randomBlocks(rng, n)
		var tree freeIndex
		var ref sortedIndex
		for _, blk := range bs {
			tree.insert(blk)
			ref.insert(blk)
		}
		picks := make([]int, 4096)
		for i := range picks {
			picks[i] = rng.IntN(n)
		}
		b.Run(fmt.Sprintf("treap/%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				blk := bs[picks[i&4095]]
				tree.remove(blk)
				_ = tree.bestFit(blk.size)
				tree.insert(blk)
				i++
			}
		})
		b.Run(fmt.Sprintf("sorted-slice/%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				blk := bs[picks[i&4095]]
				ref.remove(blk)
				_ = ref.bestFit(blk.size)
				ref.insert(blk)
				i++
			}
		})
	}
}
