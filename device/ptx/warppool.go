package ptx

import "sync"

// warpPool keeps the warps of a program's finished launches for its next
// ones: a launch of a 1024-thread block with 40 registers has 320 KiB of
// them, and a program that launches small kernels many times over (a
// batch of 100,000 launches of 1,000 threads) spent a third of its time
// allocating and collecting them.
type warpPool struct{ pool sync.Pool }

// get returns n warps for a launch of p, each as a fresh one: registers
// zero but for the constants, local memory and parameter frames zero, no
// calls in progress. A launch's registers start so whether its warps are
// new or kept, so that no launch sees another's values.
func (wp *warpPool) get(p *program, n int) []*warp {
	var ws []*warp
	if v, ok := wp.pool.Get().(*[]*warp); ok {
		ws = *v
	}
	for i := len(ws); i < n; i++ {
		ws = append(ws, &warp{r: make([]uint64, p.nregs*32),
			local: make([]byte, 32*p.localBytes), frame: make([]byte, 32*p.frameBytes)})
	}
	ws = ws[:n]
	for i, w := range ws {
		w.reset(p, i)
	}
	return ws
}

// put keeps ws for the next launch.
func (wp *warpPool) put(ws []*warp) {
	wp.pool.Put(&ws)
}

// reset makes w warp id of a launch that has not started.
func (w *warp) reset(p *program, id int) {
	r, local, frame, stack := w.r, w.local, w.frame, w.stack
	*w = warp{id: id, r: r, local: local, frame: frame}
	for l := range stack {
		w.stack[l] = stack[l][:0]
	}
	clear(w.r)
	clear(w.local)
	clear(w.frame)
	for _, c := range p.consts {
		for l := 0; l < 32; l++ {
			w.r[int(c.reg)*32+l] = c.val
		}
	}
}
