package sim

// spans.go: the ranges of an arena as nodes of two treaps (binary search
// trees kept balanced by random priorities, as pool/block.go's free index):
// every range, free or live, by offset (the ranges tile the arena, so a
// range's neighbours are its predecessor and successor), and the free
// ranges by (size, offset) for best fit. Each operation is O(log n)
// expected.

// Treaps a node can be in.
const (
	byOff  = 0 // every range, by offset
	bySize = 1 // free ranges, by size, then offset
)

// node is one range of the arena.
type node struct {
	span
	free bool
	prio uint64
	kid  [2][2]*node // kid[treap][0] left, kid[treap][1] right
}

// before reports whether a sorts before b in treap t.
func before(t int, a, b *node) bool {
	if t == bySize && a.size != b.size {
		return a.size < b.size
	}
	return a.off < b.off
}

func treapInsert(t int, root, n *node) *node {
	if root == nil {
		return n
	}
	if n.prio > root.prio {
		n.kid[t][0], n.kid[t][1] = treapSplit(t, root, n)
		return n
	}
	if before(t, n, root) {
		root.kid[t][0] = treapInsert(t, root.kid[t][0], n)
	} else {
		root.kid[t][1] = treapInsert(t, root.kid[t][1], n)
	}
	return root
}

// treapSplit splits root into the nodes before n and the others.
func treapSplit(t int, root, n *node) (lo, hi *node) {
	if root == nil {
		return nil, nil
	}
	if before(t, root, n) {
		root.kid[t][1], hi = treapSplit(t, root.kid[t][1], n)
		return root, hi
	}
	lo, root.kid[t][0] = treapSplit(t, root.kid[t][0], n)
	return lo, root
}

// treapMerge joins two treaps, every node of lo before every node of hi.
func treapMerge(t int, lo, hi *node) *node {
	switch {
	case lo == nil:
		return hi
	case hi == nil:
		return lo
	case lo.prio > hi.prio:
		lo.kid[t][1] = treapMerge(t, lo.kid[t][1], hi)
		return lo
	}
	hi.kid[t][0] = treapMerge(t, lo, hi.kid[t][0])
	return hi
}

// treapRemove takes n, which must be in treap t under *root with the key it
// was inserted with, out of it.
func treapRemove(t int, root **node, n *node) {
	link := root
	for x := *link; x != nil && x != n; x = *link {
		if before(t, n, x) {
			link = &x.kid[t][0]
		} else {
			link = &x.kid[t][1]
		}
	}
	if *link != n {
		return // not in the treap
	}
	*link = treapMerge(t, n.kid[t][0], n.kid[t][1])
	n.kid[t] = [2]*node{}
}

// floor returns the range of the offset treap that starts at or before off
// (strictly before when strict), or nil.
func floor(root *node, off int64, strict bool) *node {
	var fl *node
	for x := root; x != nil; {
		if x.off < off || !strict && x.off == off {
			fl, x = x, x.kid[byOff][1]
		} else {
			x = x.kid[byOff][0]
		}
	}
	return fl
}

// bestFit returns the smallest free range of at least size bytes, the
// lowest offset among equals, or nil.
func bestFit(root *node, size int64) *node {
	var fit *node
	for x := root; x != nil; {
		if x.size >= size {
			fit, x = x, x.kid[bySize][0]
		} else {
			x = x.kid[bySize][1]
		}
	}
	return fit
}

// walk calls yield for the nodes of the offset treap under root in order,
// until it returns false; it reports whether it got to the end.
func walk(root *node, yield func(*node) bool) bool {
	for x := root; x != nil; x = x.kid[byOff][1] {
		if !walk(x.kid[byOff][0], yield) || !yield(x) {
			return false
		}
	}
	return true
}

// splitmix64 hashes a node's sequence number into its priority.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
