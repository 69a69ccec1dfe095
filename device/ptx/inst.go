package ptx

// opcode is the decoded operation of an instruction.
type opcode uint8

const (
	opNop opcode = iota
	opALU1
	opALU2
	opALU3
	opALU4
	opSetp
	opSelp
	opCarry
	opMovPack   // mov.bN d, {a, b, ...}
	opMovUnpack // mov.bN {d, e, ...}, a
	opLd
	opSt
	opAtom
	opBra
	opCall
	opRet
	opExit
	opBar
	opBarArrive
	opWarpSync
	opShfl
	opVote
	opActivemask
	opTrap
	opClock
	opMatch // match.sync
	opRedux // redux.sync
)

// inst flags
const (
	flNegC       uint32 = 1 << iota // setp/selp: the predicate operand is negated
	flPair                          // setp/shfl: a second destination predicate
	flCarryIn                       // opCarry reads the carry flag
	flCarryOut                      // opCarry writes the carry flag
	flVolatile                      // ld/st: volatile, relaxed or acquire (all ordered alike here)
	flAtomRet                       // atom (returns the old value), not red
	flBarCount                      // bar: an explicit thread count operand
	flUni                           // bra.uni, call.uni
	flRaceExempt                    // shared access not race checked (atomics)
	flBarRed                        // bar.red: a barrier that reduces a predicate
)

// atomic operations
const (
	atAdd uint8 = iota
	atMin
	atMax
	atExch
	atCas
	atAnd
	atOr
	atXor
	atInc
	atDec
)

// bar.red reductions
const (
	redPopc uint8 = iota
	redAnd
	redOr
)

// shuffle and vote modes
const (
	shIdx uint8 = iota
	shUp
	shDown
	shBfly
	voAll
	voAny
	voUni
	voBallot
)

// inst is one decoded instruction. Every source operand is a register:
// immediates, symbol addresses and special registers are held in
// registers the launch fills before the first instruction.
type inst struct {
	op     opcode
	t, t2  typ
	sp     space
	nd     uint8
	na     uint8
	sub    uint8 // atomic op, shuffle or vote mode, special register
	flags  uint32
	guard  int32 // predicate register, -1 for none
	gneg   bool
	d      [4]int32 // destinations, -1 for a sink
	a      [4]int32 // sources
	ab     int32    // address base register, -1 for an absolute address
	off    int64    // address offset (resolved when the kernel is linked)
	sym    *symRef  // address symbol, resolved when the kernel is linked
	target int32    // branch target, or the call's index in the program
	line   int32

	f1   func(a uint64) uint64
	f2   func(a, b uint64) uint64
	f3   func(a, b, c uint64) uint64
	f4   func(a, b, c, d uint64) uint64
	fc   func(a, b, c, cin uint64) (uint64, uint64)
	cmp  func(a, b uint64) bool
	bop  func(x, y bool) bool
	call *callSite
}

// callSite is a call's arguments as decoded: the caller's .param
// variables and the callee's name; link resolves them into frame copies.
type callSite struct {
	callee string
	args   []*symRef
	rets   []*symRef
	// resolved by link
	fn      int // index of the callee in the program
	copyIn  []frameCopy
	copyOut []frameCopy
}

// frameCopy copies n bytes of a lane's parameter frames.
type frameCopy struct{ from, to, n int }
