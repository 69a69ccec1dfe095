package pool

import "github.com/cuarray/cuarray/devarray"

// liveTable maps the address of every block handed out to the block: an
// open-addressing hash table with linear probing, at most half full,
// whose removals shift later entries back (no tombstones). The pool's hot
// path does one insert per allocation and one lookup and removal per free;
// Go's map cost three to four times as much here (and reseeds its hash
// whenever it empties, which a loop of one allocation and its free does
// every time).
type liveTable struct {
	slots []*block // nil: empty; len is a power of two
	n     int
	shift uint // 64 - log2(len(slots))
}

// slot returns the home slot of ptr: Fibonacci hashing of the address.
func (t *liveTable) slot(ptr devarray.Ptr) int {
	return int(uint64(ptr) * 0x9e3779b97f4a7c15 >> t.shift)
}

// get returns the live block at ptr, or nil.
func (t *liveTable) get(ptr devarray.Ptr) *block {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.slot(ptr); ; i = (i + 1) & mask {
		b := t.slots[i]
		if b == nil || b.ptr == ptr {
			return b
		}
	}
}

// put adds b, whose address is not in the table.
func (t *liveTable) put(b *block) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := t.slot(b.ptr)
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = b
	t.n++
}

// remove takes out the block at ptr and returns it, or nil when there is none.
func (t *liveTable) remove(ptr devarray.Ptr) *block {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	i := t.slot(ptr)
	for {
		b := t.slots[i]
		if b == nil {
			return nil
		}
		if b.ptr == ptr {
			break
		}
		i = (i + 1) & mask
	}
	b := t.slots[i]
	// Shift back the entries after i whose home is not between i and them.
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		home := t.slot(t.slots[j].ptr)
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i], i = t.slots[j], j
		}
	}
	t.slots[i] = nil
	t.n--
	return b
}

func (t *liveTable) grow() {
	old := t.slots
	size := max(16, 2*len(old))
	t.slots = make([]*block, size)
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	t.n = 0
	for _, b := range old {
		if b != nil {
			t.put(b)
		}
	}
}
