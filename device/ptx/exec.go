package ptx

import (
	"fmt"
	"math/bits"
	"runtime/debug"
	"time"
)

// Memory is the device memory a launch reads and writes.
type Memory interface {
	// Lookup returns the live allocation holding addr: its base address and
	// its bytes (a slice over the real memory: device pointers are host
	// addresses). ok=false: no live allocation holds addr.
	Lookup(addr uint64) (base uint64, mem []byte, ok bool)
}

// Launch is one launch of a kernel.
type Launch struct {
	// Grid and Block are the launch's dimensions.
	Grid, Block [3]uint32
	// DynamicShared is the bytes of dynamic shared memory.
	DynamicShared uint32
	// Params is the parameter buffer, laid out per Kernel.Params.
	Params []byte
	// Global is the device memory; the module's own variables are found
	// without it.
	Global Memory
	// NoRaceCheck turns the shared-memory race check off.
	NoRaceCheck bool
	// MaxInstructions, when positive, stops a run (a Trap fault) after that
	// many warp instructions: a guard against kernels that never end.
	MaxInstructions int64
	// Watches are ranges of global memory the run stops at (a Fault of the
	// watch's Kind) when a thread writes them, or reads them too where the
	// watch says so: an array a launch declared read-only, or the bytes a
	// race was found on, to name the PTX line that touches them.
	Watches []Watch
	// Arrays are the array arguments the launch declares: an access in
	// their allocations outside each of them is an OutsideExtent fault, and
	// a read of a WriteArray array's bytes before the launch writes them
	// an UnwrittenRead fault.
	Arrays []Array
}

// Watch is a range of global memory, [Addr, Addr+N), that a run stops at.
type Watch struct {
	Addr, N uint64
	// Reads says that a read stops the run too; else only a write does.
	Reads bool
	// Kind is the fault the run stops with: ReadOnlyWrite or Watched.
	Kind FaultKind
	// Name says what the range is ("argument 2 (x, In)"), for the report.
	Name string
}

// Stats are what a run did.
type Stats struct {
	// LaneInstructions counts instructions times the lanes that ran them;
	// WarpInstructions the instructions issued per warp.
	LaneInstructions, WarpInstructions int64
	// Blocks and Warps are the blocks and warps run.
	Blocks, Warps int64
	// Read and Written are the bytes of global memory read and written,
	// per allocation base address (atomics count as both).
	Read, Written map[uint64]int64
}

// Limits of the GPUs the interpreter stands in for (compute capability 7.0 to 9.0).
const (
	maxThreadsPerBlock = 1024
	maxSharedPerBlock  = 227 * 1024
	maxGridY, maxGridZ = 65535, 65535
	maxLocalPerThread  = 512 * 1024
)

// Run runs the kernel to completion over all blocks, one block at a time,
// and returns what it did, or the first fault.
func (k *Kernel) Run(l Launch) (st Stats, err error) {
	st.Read, st.Written = map[uint64]int64{}, map[uint64]int64{}
	if f := k.checkLaunch(&l); f != nil {
		return st, f
	}
	x := newExec(k, &l, &st)
	defer func() {
		if r := recover(); r != nil {
			err = &Fault{Kind: Trap, Kernel: k.Name, Detail: fmt.Sprintf("internal error: %v\n%s", r, debug.Stack())}
		}
		x.flushCache()
		x.p.warps.put(x.warps)
	}()
	for bz := uint32(0); bz < l.Grid[2]; bz++ {
		for by := uint32(0); by < l.Grid[1]; by++ {
			for bx := uint32(0); bx < l.Grid[0]; bx++ {
				if err := x.runBlock([3]uint32{bx, by, bz}); err != nil {
					return st, err
				}
			}
		}
	}
	return st, nil
}

func (k *Kernel) checkLaunch(l *Launch) *Fault {
	bad := func(kind FaultKind, format string, args ...any) *Fault {
		return &Fault{Kind: kind, Kernel: k.Name, Detail: fmt.Sprintf(format, args...)}
	}
	for i := 0; i < 3; i++ {
		if l.Grid[i] == 0 || l.Block[i] == 0 {
			return bad(InvalidValue, "grid %v and block %v must not have a zero dimension", l.Grid, l.Block)
		}
	}
	if l.Grid[1] > maxGridY || l.Grid[2] > maxGridZ || l.Grid[0] > 1<<31-1 {
		return bad(InvalidValue, "grid %v is larger than a GPU allows", l.Grid)
	}
	if l.Block[0] > 1024 || l.Block[1] > 1024 || l.Block[2] > 64 {
		return bad(InvalidValue, "block %v is larger than a GPU allows", l.Block)
	}
	n := uint64(l.Block[0]) * uint64(l.Block[1]) * uint64(l.Block[2])
	if n > maxThreadsPerBlock {
		return bad(InvalidValue, "block %v has %d threads; at most %d", l.Block, n, maxThreadsPerBlock)
	}
	if k.MaxNTID[0] > 0 && n > uint64(k.MaxNTID[0]*k.MaxNTID[1]*k.MaxNTID[2]) {
		return bad(LaunchOutOfResources, "block %v has more threads than .maxntid %v", l.Block, k.MaxNTID)
	}
	if k.ReqNTID[0] > 0 && (int(l.Block[0]) != k.ReqNTID[0] || int(l.Block[1]) != k.ReqNTID[1] || int(l.Block[2]) != k.ReqNTID[2]) {
		return bad(InvalidValue, "block %v is not .reqntid %v", l.Block, k.ReqNTID)
	}
	if k.StaticShared+int(l.DynamicShared) > maxSharedPerBlock {
		return bad(LaunchOutOfResources, "%d bytes of shared memory; at most %d", k.StaticShared+int(l.DynamicShared), maxSharedPerBlock)
	}
	if k.LocalBytes > maxLocalPerThread {
		return bad(LaunchOutOfResources, "%d bytes of local memory per thread; at most %d", k.LocalBytes, maxLocalPerThread)
	}
	if len(l.Params) < k.ParamBytes {
		return bad(InvalidValue, "%d bytes of parameters; the kernel's need %d", len(l.Params), k.ParamBytes)
	}
	return nil
}

// callFrame is a lane's call in progress.
type callFrame struct {
	ret    int32 // return address
	callPC int32
	fn     int
	site   *callSite
}

// warp is 32 lanes' state.
type warp struct {
	id     int
	r      []uint64 // register r of lane l at r*32+l
	pc     int32
	mask   uint32 // lanes at pc, running
	live   uint32 // lanes not exited
	valid  uint32 // lanes that are threads of the block
	parked uint32 // lanes waiting at a barrier
	syncp  uint32 // lanes waiting at a warp-synchronous instruction
	others uint32 // runnable lanes not in mask
	next   uint64 // least key of others
	lanePC [32]int32
	barID  [32]int8
	redDst [32]int32 // bar.red: the register a waiting lane's result goes to, or -1
	redOp  [32]uint8
	stack  [32][]callFrame
	local  []byte
	frame  []byte
	tid    [32][3]uint32
}

// allocEntry is a cached global allocation and the bytes read and
// written in it since it was cached.
type allocEntry struct {
	base   uint64
	mem    []byte
	ok     bool
	rd, wr int64
	decl   []int32 // the declared arrays in the allocation (exec.arrays)
	raw    bool    // RawMemory lies in it: no declared array is checked there
	pages  []byte  // the allocation's page marks (PageMarker), nil when not followed
	shift  uint    // log2 of the marks' page size
}

// block barriers
type barrier struct {
	count    int
	expected int
	counted  bool // the barrier instruction gave its thread count
	popc     int  // bar.red: threads whose predicate is true
	all      bool // bar.red: every arrived thread's predicate is true
}

// exec is one launch in progress.
type exec struct {
	k      *Kernel
	p      *program
	l      *Launch
	st     *Stats
	block  [3]uint32
	nthr   int
	exited int // the block's threads that have exited
	warps  []*warp
	shared []byte
	bars   [16]barrier
	race   *raceShadow
	epoch  uint32
	start  time.Time
	// the global allocations last used, and their byte counts
	cache [4]allocEntry
	cNext int
	last  *allocEntry // the entry last used (an empty one at first)
	// the launch's declared arrays (Launch.Arrays)
	arrays []declArray
	marker PageMarker // Launch.Global, when it follows pages
}

func newExec(k *Kernel, l *Launch, st *Stats) *exec {
	x := &exec{k: k, p: k.prog, l: l, st: st, start: time.Now()}
	x.last = &x.cache[0]
	x.marker, _ = l.Global.(PageMarker)
	x.nthr = int(l.Block[0] * l.Block[1] * l.Block[2])
	nw := (x.nthr + 31) / 32
	x.shared = make([]byte, x.p.static+int(l.DynamicShared))
	if !l.NoRaceCheck && len(x.shared) > 0 {
		x.race = newRaceShadow(len(x.shared))
	}
	x.warps = x.p.warps.get(x.p, nw)
	if len(l.Arrays) != 0 {
		x.declare(l.Arrays)
	}
	return x
}

//go:norace
func (x *exec) special(w *warp, k special, l int) uint64 {
	t := w.tid[l]
	lane := uint64(l)
	switch k {
	case spTidX, spTidY, spTidZ:
		return uint64(t[k-spTidX])
	case spNtidX, spNtidY, spNtidZ:
		return uint64(x.l.Block[k-spNtidX])
	case spCtaidX, spCtaidY, spCtaidZ:
		return uint64(x.block[k-spCtaidX])
	case spNctaidX, spNctaidY, spNctaidZ:
		return uint64(x.l.Grid[k-spNctaidX])
	case spLaneid:
		return lane
	case spWarpid:
		return uint64(w.id)
	case spNwarpid:
		return 64
	case spSmid, spGridid:
		return 0
	case spNsmid:
		return 1
	case spLanemaskEq:
		return 1 << lane
	case spLanemaskLt:
		return 1<<lane - 1
	case spLanemaskLe:
		return uint64(uint32(1<<(lane+1) - 1))
	case spLanemaskGt:
		return uint64(^uint32(1<<(lane+1) - 1))
	case spLanemaskGe:
		return uint64(^uint32(1<<lane - 1))
	case spDynSmem:
		return uint64(x.l.DynamicShared)
	case spTotalSmem:
		return uint64(len(x.shared))
	}
	return 0
}

// runBlock runs one block to completion.
//
//go:norace
func (x *exec) runBlock(b [3]uint32) error {
	x.block = b
	x.st.Blocks++
	clear(x.shared)
	x.epoch++
	if x.race != nil {
		x.epoch = x.race.newBlock()
	}
	for i := range x.bars {
		x.bars[i] = barrier{}
	}
	x.exited = 0
	for _, w := range x.warps {
		x.st.Warps++
		w.live = 0
		for l := 0; l < 32; l++ {
			t := w.id*32 + l
			if t >= x.nthr {
				break
			}
			w.live |= 1 << l
			bx, by := int(x.l.Block[0]), int(x.l.Block[1])
			w.tid[l] = [3]uint32{uint32(t % bx), uint32(t / bx % by), uint32(t / (bx * by))}
			w.stack[l] = w.stack[l][:0]
		}
		for _, s := range x.p.special {
			for l := 0; l < 32; l++ {
				w.r[int(s.reg)*32+l] = x.special(w, s.kind, l)
			}
		}
		w.valid = w.live
		w.pc, w.mask, w.parked, w.syncp, w.others, w.next = 0, w.live, 0, 0, 0, ^uint64(0)
		clear(w.local)
	}
	for {
		progress, alive := false, false
		for _, w := range x.warps {
			if w.live == 0 {
				continue
			}
			alive = true
			if w.mask == 0 {
				x.schedule(w)
				if w.mask == 0 {
					continue
				}
			}
			progress = true
			if err := x.runWarp(w); err != nil {
				return err
			}
		}
		if !alive {
			return nil
		}
		if !progress {
			return x.hang()
		}
	}
}

// hang reports a block whose live threads all wait at barriers that
// cannot complete.
func (x *exec) hang() error {
	waiting, exited := 0, 0
	var first *warp
	var lane int
	for _, w := range x.warps {
		waiting += bits.OnesCount32(w.parked)
		for l := 0; l < 32 && w.id*32+l < x.nthr; l++ {
			if w.live&(1<<l) == 0 {
				exited++
			}
		}
		if first == nil && w.parked != 0 {
			first, lane = w, bits.TrailingZeros32(w.parked)
		}
	}
	f := &Fault{Kind: BarrierHang, Kernel: x.k.Name}
	if first != nil {
		id := first.barID[lane]
		pc := first.lanePC[lane] - 1
		f.Line = int(x.p.code[pc].line)
		f.Thread = Thread{x.block, first.tid[lane]}
		f.Detail = fmt.Sprintf("%d of the block's %d threads wait at barrier %d, which expects %d; %d threads have exited without reaching it",
			waiting, x.nthr, id, x.bars[id].expected, exited)
	} else {
		f.Detail = "no thread can proceed"
	}
	return f
}

// key orders lanes for scheduling: the lane with the least key runs
// first, so divergent paths reconverge at the least program counter, and a
// lane inside a call runs before lanes waiting after the call site.
//
//go:norace
func (w *warp) key(l int, pc int32) uint64 {
	if n := len(w.stack[l]); n > 0 {
		return uint64(w.stack[l][0].callPC)<<32 | 1<<31 | uint64(pc)
	}
	return uint64(pc) << 32
}

// schedule picks the lanes to run next: those with the least key among
// the runnable ones.
//
//go:norace
func (x *exec) schedule(w *warp) {
	for m := w.mask; m != 0; m &= m - 1 {
		w.lanePC[bits.TrailingZeros32(m)] = w.pc
	}
	run := w.live &^ w.parked &^ w.syncp
	if run == 0 && w.syncp != 0 {
		// every runnable lane waits at a warp-synchronous instruction:
		// let them all try again together
		run, w.syncp = w.syncp, 0
	}
	best := ^uint64(0)
	for m := run; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		if k := w.key(l, w.lanePC[l]); k < best {
			best = k
		}
	}
	w.mask, w.others, w.next = 0, 0, ^uint64(0)
	for m := run; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		k := w.key(l, w.lanePC[l])
		if k == best {
			w.mask |= 1 << l
			w.pc = w.lanePC[l]
		} else {
			w.others |= 1 << l
			if k < w.next {
				w.next = k
			}
		}
	}
}

// advance moves the running lanes to pc and reschedules if another group
// of lanes comes first or joins them.
//
//go:norace
func (x *exec) advance(w *warp, pc int32) {
	w.pc = pc
	if w.others != 0 {
		l := bits.TrailingZeros32(w.mask)
		if w.key(l, pc) >= w.next {
			x.schedule(w)
		}
	}
}

//go:norace
func (x *exec) thread(w *warp, l int) Thread { return Thread{x.block, w.tid[l]} }

func (x *exec) trap(w *warp, l int, in *inst, detail string) *Fault {
	return &Fault{Kind: Trap, Kernel: x.k.Name, Line: int(in.line), Thread: x.thread(w, l), Detail: detail}
}
