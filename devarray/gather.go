package devarray

import (
	"fmt"
	"sync"
	"unsafe"
)

// HostStrided is host memory holding an array's elements in any layout
// (byte strides of any sign, element 0 at Mem[Zero]), checked once to lie
// inside Mem, that Gather and Scatter copy to and from the packed C-order
// stream of its elements. It is what every host-side strided copy of the
// project goes through: package transfer's host endpoints and staged
// chunks, DevArray's copies of a strided host side, the kernels' Go
// references on sim and the C library's host memory.
//
// The copy loops are specialised: contiguous runs move with copy(), an
// axis whose elements are spread out moves in a loop for the element size
// (1, 2, 4, 8 or 16 bytes, else a copy per element), and a layout whose
// innermost axis is spread out while another is close in memory (a
// transposed matrix, a permuted volume) moves in cache-sized tiles of the
// two, so each cache line read is used whole.
type HostStrided struct {
	mem   []byte
	zero  int64
	item  int64
	n     int64   // bytes of the packed stream
	shape []int   // simplified: no axis of length 1, contiguous axes merged
	st    []int64 // byte strides of shape
	tile  int     // the axis tiled with the innermost one, -1 for none
	unit  int64   // the elements of a tile unit: of the axes from tile in
	// disjoint is whether no two elements share a byte (disjoint says
	// how it is proven); where they may, ScatterOn writes on one goroutine.
	disjoint bool
	// origShape and origStrides are the layout as given (strides nil
	// when C-contiguous).
	origShape   []int
	origStrides []int64
	// rowLen is the elements of the innermost axis.
	rowLen int64
}

// NewHostStrided describes the elements of a layout (shape, byte strides;
// nil strides mean C-contiguous) with element 0 at mem[zero]. Elements
// outside mem are ErrBounds; a bad layout ErrShape or ErrOverflow.
func NewHostStrided(mem []byte, zero int64, shape []int, strides []int64, itemsize int64) (*HostStrided, error) {
	if itemsize <= 0 {
		return nil, fmt.Errorf("devarray: host strided: item size %d: %w", itemsize, ErrShape)
	}
	lay, err := newLayout(shape, strides, itemsize)
	if err != nil {
		return nil, fmt.Errorf("devarray: host strided: %w", err)
	}
	if !lay.within(zero, int64(len(mem))) {
		return nil, fmt.Errorf("devarray: host strided: elements at bytes [%d, %d) of %d bytes of memory: %w",
			zero+lay.lo, zero+lay.hi, len(mem), ErrBounds)
	}
	h := &HostStrided{mem: mem, zero: zero, item: itemsize, n: lay.size * itemsize, tile: -1, origShape: lay.shape,
		disjoint: disjoint(lay.shape, lay.strides, itemsize)}
	if !isCContiguous(lay.shape, lay.strides, itemsize) {
		h.origStrides = lay.strides
	}
	if lay.size == 0 {
		return h, nil
	}
	h.shape, h.st = simplify(lay.shape, lay.strides)
	if nd := len(h.shape); nd == 1 && h.st[0] == itemsize {
		h.shape, h.st = nil, nil // contiguous
	}
	if nd := len(h.shape); nd > 0 {
		h.rowLen = int64(h.shape[nd-1])
		if inner := abs64(h.st[nd-1]); inner != uint64(itemsize) {
			// Tile with the closest other axis, if it is closer than the
			// innermost one.
			best, bestStride := -1, inner
			for ax := nd - 2; ax >= 0; ax-- {
				if s := abs64(h.st[ax]); s < bestStride {
					best, bestStride = ax, s
				}
			}
			// A tile pays where rows do not reuse each other's cache
			// lines: the tiled axis is not the next one out, or a row
			// touches more lines than L1 holds (512 of 64 bytes).
			if best == nd-2 && h.rowLen <= tileMaxRow {
				best = -1
			}
			h.tile = best
			if best >= 0 {
				h.unit = h.rowLen
				for ax := best; ax < nd-1; ax++ {
					h.unit *= int64(h.shape[ax])
				}
			}
		}
	}
	return h, nil
}

// Len returns the bytes of the packed stream of elements.
func (h *HostStrided) Len() int64 { return h.n }

// Contiguous reports whether the elements are C-contiguous in memory.
func (h *HostStrided) Contiguous() bool { return h.shape == nil }

// Gather copies bytes [lo, lo+len(dst)) of the packed C-order stream of
// the elements into dst, on the calling goroutine. A range outside the
// stream is ErrBounds.
//
// One goroutine, as NumPy copies: BenchmarkHostGather measured two on
// the 2-core development machine slower than one on every layout but a
// few (GatherOn offers more where they pay).
func (h *HostStrided) Gather(dst []byte, lo int64) error {
	return h.GatherOn(dst, lo, 1)
}

// Scatter copies src into bytes [lo, lo+len(src)) of the packed C-order
// stream of the elements, that is into the elements' memory, on the
// calling goroutine. Where elements overlap (a zero stride), the last in
// C order wins.
func (h *HostStrided) Scatter(src []byte, lo int64) error {
	return h.ScatterOn(src, lo, 1)
}

// GatherOn is Gather on at most workers goroutines (runtime.GOMAXPROCS(0)
// for all), each given an equal share of the range of at least
// ParallelMin bytes, its ends moved to whole rows or tiles.
func (h *HostStrided) GatherOn(dst []byte, lo int64, workers int) error {
	return h.parallel(dst, lo, workers, true)
}

// ScatterOn is Scatter on at most workers goroutines. Where the elements
// are not Disjoint (they may share memory), it writes on the calling
// goroutine alone, so that the last element in C order wins there too.
func (h *HostStrided) ScatterOn(src []byte, lo int64, workers int) error {
	if !h.disjoint {
		workers = 1
	}
	return h.parallel(src, lo, workers, false)
}

// ParallelMin is the fewest bytes a goroutine of Gather or Scatter moves:
// below it, starting one costs more than it saves.
const ParallelMin = 2 << 20

// parallel moves the range in pieces, one per goroutine.
func (h *HostStrided) parallel(packed []byte, lo int64, workers int, gather bool) error {
	n := int64(len(packed))
	if lo < 0 || n > h.n || lo > h.n-n {
		return fmt.Errorf("devarray: host strided: bytes [%d, %d) of a %d-byte stream: %w", lo, lo+n, h.n, ErrBounds)
	}
	var buf [8]int64 // on the stack: a copy on one goroutine allocates nothing
	ends := h.pieces(buf[:0], lo, n, workers)
	if len(ends) == 1 {
		h.move(packed, lo, gather)
		return nil
	}
	var wg sync.WaitGroup
	from := int64(0)
	for _, to := range ends {
		wg.Add(1)
		go func(from, to int64) {
			defer wg.Done()
			h.move(packed[from:to], lo+from, gather)
		}(from, to)
		from = to
	}
	wg.Wait()
	return nil
}

// pieces splits bytes [lo, lo+n) of the stream into at most workers
// pieces and appends to ends where each ends, relative to lo (the last at n).
// Each piece but the last ends on a multiple of pieceAlign in the stream,
// so that it moves whole tile units, and each is within a unit (the last
// also the remainder) of an equal share of the range, n/workers, at least
// ParallelMin: workers shrinks until it is. One piece when fewer than two
// workers would each get ParallelMin bytes, or when a unit is more than
// half the range; fewer than workers only when a unit is longer than a share.
func (h *HostStrided) pieces(ends []int64, lo, n int64, workers int) []int64 {
	workers = int(min(int64(max(workers, 1)), n/ParallelMin))
	align := h.pieceAlign()
	if workers < 2 || align > n/2 {
		return append(ends, n)
	}
	share := n / int64(workers)
	last := int64(0)
	for i := range int64(workers - 1) {
		// The end of the (i+1)th share, moved down to a unit's end.
		if end := (lo+(i+1)*share)/align*align - lo; end > last {
			ends = append(ends, end)
			last = end
		}
	}
	return append(ends, n)
}

// pieceAlign returns the bytes of the stream a parallel piece is a
// multiple of, so that each piece moves whole tile units: the tiled axes
// when the tile axis is not the next one out, a row when it is, else 64
// elements (the loops take any range; whole cache lines keep two pieces
// from writing one line).
func (h *HostStrided) pieceAlign() int64 {
	switch {
	case h.tile < 0:
		return 64 * h.item
	case h.tile < len(h.shape)-2:
		return h.unit * h.item
	}
	return h.rowLen * h.item
}

// move moves a range checked to lie in the stream, on this goroutine.
func (h *HostStrided) move(packed []byte, lo int64, gather bool) {
	n := int64(len(packed))
	if n == 0 {
		return
	}
	if h.shape == nil {
		mem := h.mem[h.zero+lo : h.zero+lo+n]
		if gather {
			copy(packed, mem)
		} else {
			copy(mem, packed)
		}
		return
	}
	// Partial elements at the ends move byte by byte; whole ones in the
	// loops. They move in C order (head, whole elements, tail), so that
	// where elements share memory (a zero stride) Scatter leaves the last
	// one's bytes.
	item := h.item
	e0, e1 := (lo+item-1)/item, (lo+n)/item
	if e0 > e1 { // inside one element
		h.partial(packed, lo/item, lo%item, n, gather)
		return
	}
	if head := e0*item - lo; head > 0 {
		h.partial(packed[:head], e0-1, item-head, head, gather)
	}
	h.elements(packed[e0*item-lo:e1*item-lo], e0, e1, gather)
	if tail := lo + n - e1*item; tail > 0 {
		h.partial(packed[n-tail:], e1, 0, tail, gather)
	}
}

// partial moves bytes [from, from+k) of element e.
func (h *HostStrided) partial(packed []byte, e, from, k int64, gather bool) {
	off := h.zero + h.offset(e) + from
	if gather {
		copy(packed[:k], h.mem[off:off+k])
	} else {
		copy(h.mem[off:off+k], packed[:k])
	}
}

// offset returns the byte offset from element 0 of element e in C order.
func (h *HostStrided) offset(e int64) int64 {
	var off int64
	for ax := len(h.shape) - 1; ax >= 0; ax-- {
		n := int64(h.shape[ax])
		off += (e % n) * h.st[ax]
		e /= n
	}
	return off
}

// elements moves whole elements [e0, e1) of the stream; packed holds them.
// Pointers are formed only to bytes that are moved (checkptr refuses one
// past the end of an object).
func (h *HostStrided) elements(packed []byte, e0, e1 int64, gather bool) {
	nd := len(h.shape)
	rowLen, item := h.rowLen, h.item
	base := unsafe.Pointer(unsafe.SliceData(h.mem))
	pk := unsafe.Pointer(unsafe.SliceData(packed))
	var at int64 // bytes of packed done
	for e := e0; e < e1; {
		c := e % rowLen
		if h.tile >= 0 && c == 0 {
			if done := h.tiled(unsafe.Add(pk, at), base, e, e1, gather); done > 0 {
				at += done * item
				e += done
				continue
			}
		}
		k := min(rowLen-c, e1-e)
		p, m := unsafe.Add(pk, at), unsafe.Add(base, h.zero+h.offset(e))
		if gather {
			stridedCopy(p, item, m, h.st[nd-1], k, item)
		} else {
			stridedCopy(m, h.st[nd-1], p, item, k, item)
		}
		at += k * item
		e += k
	}
}

// Tile sizes: tileRows elements of the tiled axis by tileCols of the
// innermost one, so a tile reads tileCols cache lines, each used for
// tileRows elements, and writes tileRows runs of tileCols elements.
const (
	tileRows   = 16
	tileCols   = 64
	tileMaxRow = 64 // rows of at most this many elements are not tiled with the next axis
)

// tiled moves, starting at element e (the start of a row), as many whole
// tile units as lie before e1 and returns how many elements it moved. A
// unit is every element of the axes from h.tile in; when h.tile is the
// second innermost axis, a run of whole rows of one unit is moved too.
func (h *HostStrided) tiled(pk, base unsafe.Pointer, e, e1 int64, gather bool) int64 {
	nd, item, rowLen := len(h.shape), h.item, h.rowLen
	unit := h.unit
	ti := int64(h.shape[h.tile])
	var rows int64 // rows of the tiled axis moved, from row r0 of the unit
	r0 := (e % unit) / rowLen
	switch {
	case h.tile == nd-2:
		rows = min(ti-r0, (e1-e)/rowLen)
	case e%unit == 0 && e1-e >= unit:
		rows = ti
	default:
		return 0
	}
	// The axes between the tiled one and the innermost: each combination
	// of their indices is one plane of rows × rowLen elements.
	mid := h.shape[h.tile+1 : nd-1]
	midSt := h.st[h.tile+1 : nd-1]
	// Packed strides: of the tiled axis, and of the middle axes.
	pkTile := unit / ti * item
	pkMid := make([]int64, len(mid))
	acc := rowLen * item
	for ax := len(mid) - 1; ax >= 0; ax-- {
		pkMid[ax] = acc
		acc *= int64(mid[ax])
	}
	start := h.zero + h.offset(e)
	sTile, sRow := h.st[h.tile], h.st[nd-1]
	idx := make([]int, len(mid))
	var midOff, midPk int64
	for {
		for ib := int64(0); ib < rows; ib += tileRows {
			ie := min(ib+tileRows, rows)
			for jb := int64(0); jb < rowLen; jb += tileCols {
				k := min(tileCols, rowLen-jb)
				for i := ib; i < ie; i++ {
					m := unsafe.Add(base, start+midOff+i*sTile+jb*sRow)
					p := unsafe.Add(pk, midPk+i*pkTile+jb*item)
					if gather {
						stridedCopy(p, item, m, sRow, k, item)
					} else {
						stridedCopy(m, sRow, p, item, k, item)
					}
				}
			}
		}
		ax := len(idx) - 1
		for ; ax >= 0; ax-- {
			idx[ax]++
			midOff += midSt[ax]
			midPk += pkMid[ax]
			if idx[ax] < mid[ax] {
				break
			}
			midOff -= int64(idx[ax]) * midSt[ax]
			midPk -= int64(idx[ax]) * pkMid[ax]
			idx[ax] = 0
		}
		if ax < 0 {
			break
		}
	}
	return rows * (unit / ti)
}

// stridedCopy copies n elements of item bytes from src (elements sstride
// bytes apart) to dst (dstride apart): one copy() when both are packed,
// else a loop for the element size, unrolled by four. The caller has
// checked every address; pointers are formed only to elements.
func stridedCopy(dst unsafe.Pointer, dstride int64, src unsafe.Pointer, sstride int64, n, item int64) {
	if dstride == item && sstride == item {
		copy(unsafe.Slice((*byte)(dst), n*item), unsafe.Slice((*byte)(src), n*item))
		return
	}
	switch item {
	case 4:
		copy4(dst, dstride, src, sstride, n)
	case 8:
		copy8(dst, dstride, src, sstride, n)
	case 2:
		var d, s int64
		for range n {
			*(*uint16)(unsafe.Add(dst, d)) = *(*uint16)(unsafe.Add(src, s))
			d, s = d+dstride, s+sstride
		}
	case 1:
		var d, s int64
		for range n {
			*(*uint8)(unsafe.Add(dst, d)) = *(*uint8)(unsafe.Add(src, s))
			d, s = d+dstride, s+sstride
		}
	case 16:
		var d, s int64
		for range n {
			*(*[2]uint64)(unsafe.Add(dst, d)) = *(*[2]uint64)(unsafe.Add(src, s))
			d, s = d+dstride, s+sstride
		}
	default:
		var d, s int64
		for range n {
			copy(unsafe.Slice((*byte)(unsafe.Add(dst, d)), item), unsafe.Slice((*byte)(unsafe.Add(src, s)), item))
			d, s = d+dstride, s+sstride
		}
	}
}

func copy4(dst unsafe.Pointer, ds int64, src unsafe.Pointer, ss int64, n int64) {
	var d, s int64
	// A reversed run moves two elements per 8-byte load and store, the
	// halves swapped.
	switch {
	case ss == -4 && ds == 4:
		for ; n >= 4; n -= 4 {
			a := *(*uint64)(unsafe.Add(src, s-4))
			b := *(*uint64)(unsafe.Add(src, s-12))
			*(*uint64)(unsafe.Add(dst, d)) = a>>32 | a<<32
			*(*uint64)(unsafe.Add(dst, d+8)) = b>>32 | b<<32
			d, s = d+16, s-16
		}
	case ds == -4 && ss == 4:
		for ; n >= 4; n -= 4 {
			a := *(*uint64)(unsafe.Add(src, s))
			b := *(*uint64)(unsafe.Add(src, s+8))
			*(*uint64)(unsafe.Add(dst, d-4)) = a>>32 | a<<32
			*(*uint64)(unsafe.Add(dst, d-12)) = b>>32 | b<<32
			d, s = d-16, s+16
		}
	case ds == 4:
		// A gather into packed memory stores two elements at a time.
		for ; n >= 4; n -= 4 {
			a0 := uint64(*(*uint32)(unsafe.Add(src, s)))
			a1 := uint64(*(*uint32)(unsafe.Add(src, s+ss)))
			a2 := uint64(*(*uint32)(unsafe.Add(src, s+2*ss)))
			a3 := uint64(*(*uint32)(unsafe.Add(src, s+3*ss)))
			*(*uint64)(unsafe.Add(dst, d)) = a0 | a1<<32
			*(*uint64)(unsafe.Add(dst, d+8)) = a2 | a3<<32
			d, s = d+16, s+4*ss
		}
	}
	for ; n >= 4; n -= 4 {
		a0 := *(*uint32)(unsafe.Add(src, s))
		a1 := *(*uint32)(unsafe.Add(src, s+ss))
		a2 := *(*uint32)(unsafe.Add(src, s+2*ss))
		a3 := *(*uint32)(unsafe.Add(src, s+3*ss))
		*(*uint32)(unsafe.Add(dst, d)) = a0
		*(*uint32)(unsafe.Add(dst, d+ds)) = a1
		*(*uint32)(unsafe.Add(dst, d+2*ds)) = a2
		*(*uint32)(unsafe.Add(dst, d+3*ds)) = a3
		d, s = d+4*ds, s+4*ss
	}
	for ; n > 0; n-- {
		*(*uint32)(unsafe.Add(dst, d)) = *(*uint32)(unsafe.Add(src, s))
		d, s = d+ds, s+ss
	}
}

func copy8(dst unsafe.Pointer, ds int64, src unsafe.Pointer, ss int64, n int64) {
	var d, s int64
	for ; n >= 4; n -= 4 {
		a0 := *(*uint64)(unsafe.Add(src, s))
		a1 := *(*uint64)(unsafe.Add(src, s+ss))
		a2 := *(*uint64)(unsafe.Add(src, s+2*ss))
		a3 := *(*uint64)(unsafe.Add(src, s+3*ss))
		*(*uint64)(unsafe.Add(dst, d)) = a0
		*(*uint64)(unsafe.Add(dst, d+ds)) = a1
		*(*uint64)(unsafe.Add(dst, d+2*ds)) = a2
		*(*uint64)(unsafe.Add(dst, d+3*ds)) = a3
		d, s = d+4*ds, s+4*ss
	}
	for ; n > 0; n-- {
		*(*uint64)(unsafe.Add(dst, d)) = *(*uint64)(unsafe.Add(src, s))
		d, s = d+ds, s+ss
	}
}
