package transfer

import (
	"sort"

	"github.com/cuarray/cuarray/devarray"
)

// hostLayout copies between host memory in any layout and ranges of its
// packed C-order bytes, for the staged path's chunks and host-to-host copies.
type hostLayout struct {
	e      Endpoint
	blocks []devarray.Block // nil when the memory is C-contiguous
}

func newHostLayout(e Endpoint) hostLayout {
	l := hostLayout{e: e}
	if !e.contiguous() {
		_ = devarray.Blocks(e.arr.Shape(), e.arr.Strides(), e.arr.DType().Size(), func(b devarray.Block) error {
			l.blocks = append(l.blocks, b)
			return nil
		})
	}
	return l
}

// gather copies packed bytes [lo, lo+len(dst)) of the elements into dst.
func (l hostLayout) gather(dst []byte, lo int64) {
	l.each(lo, int64(len(dst)), func(host []byte, at int64) { copy(dst[at:], host) })
}

// scatter copies src into packed bytes [lo, lo+len(src)) of the elements.
func (l hostLayout) scatter(src []byte, lo int64) {
	l.each(lo, int64(len(src)), func(host []byte, at int64) { copy(host, src[at:at+int64(len(host))]) })
}

// each calls f with every run of host memory holding packed bytes
// [lo, lo+n), and where that run starts relative to lo.
func (l hostLayout) each(lo, n int64, f func(host []byte, at int64)) {
	if l.blocks == nil {
		f(l.e.hostAt(lo)[:n], 0)
		return
	}
	hi := lo + n
	i := sort.Search(len(l.blocks), func(i int) bool {
		b := l.blocks[i]
		return b.Packed+b.Width*b.Height > lo
	})
	for ; i < len(l.blocks) && l.blocks[i].Packed < hi; i++ {
		b := l.blocks[i]
		for r := max(0, (lo-b.Packed)/b.Width); r < b.Height; r++ {
			row := b.Packed + r*b.Width
			if row >= hi {
				break
			}
			from, to := max(row, lo), min(row+b.Width, hi)
			f(l.e.hostAt(b.Offset + r*b.Pitch + from - row)[:to-from], from-lo)
		}
	}
}
