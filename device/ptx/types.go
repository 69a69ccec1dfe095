package ptx

// typ is a PTX scalar type.
type typ uint8

const (
	tNone typ = iota
	tB8
	tB16
	tB32
	tB64
	tB128
	tU8
	tU16
	tU32
	tU64
	tS8
	tS16
	tS32
	tS64
	tF16
	tF16x2
	tBF16
	tBF16x2
	tF32
	tF64
	tPred
)

var typNames = map[string]typ{
	"b8": tB8, "b16": tB16, "b32": tB32, "b64": tB64, "b128": tB128,
	"u8": tU8, "u16": tU16, "u32": tU32, "u64": tU64,
	"s8": tS8, "s16": tS16, "s32": tS32, "s64": tS64,
	"f16": tF16, "f16x2": tF16x2, "bf16": tBF16, "bf16x2": tBF16x2,
	"f32": tF32, "f64": tF64, "pred": tPred,
}

// typeNames names each type as typNames does.
var typeNames = func() map[typ]string {
	m := make(map[typ]string, len(typNames))
	for n, t := range typNames {
		m[t] = n
	}
	return m
}()

// size returns the type's width in bytes (a predicate counts as 1).
func (t typ) size() int {
	switch t {
	case tB8, tU8, tS8, tPred:
		return 1
	case tB16, tU16, tS16, tF16, tBF16:
		return 2
	case tB32, tU32, tS32, tF32, tF16x2, tBF16x2:
		return 4
	case tB64, tU64, tS64, tF64:
		return 8
	case tB128:
		return 16
	}
	return 0
}

func (t typ) signed() bool { return t == tS8 || t == tS16 || t == tS32 || t == tS64 }
func (t typ) float() bool  { return t == tF32 || t == tF64 || t == tF16 || t == tBF16 }
func (t typ) bits() uint   { return uint(8 * t.size()) }

// shiftOf is 64 minus each type's width in bits, for trunc and ext.
var shiftOf = func() (s [32]uint8) {
	for t := typ(0); t < 32; t++ {
		if n := t.size(); n > 0 && n <= 8 {
			s[t] = uint8(64 - 8*n)
		}
	}
	return
}()

var signedOf = func() (s [32]bool) {
	for t := typ(0); t < 32; t++ {
		s[t] = t.signed()
	}
	return
}()

// ext returns v's low t.size() bytes, sign- or zero-extended to 64 bits as
// t says.
func (t typ) ext(v uint64) uint64 {
	sh := shiftOf[t&31]
	if signedOf[t&31] {
		return uint64(int64(v<<sh) >> sh)
	}
	return v << sh >> sh
}

// trunc returns v's low t.size() bytes, zero-extended.
func (t typ) trunc(v uint64) uint64 {
	sh := shiftOf[t&31]
	return v << sh >> sh
}

// space is a PTX state space.
type space uint8

const (
	spGeneric space = iota
	spGlobal
	spShared
	spLocal
	spParam  // a kernel's parameters, or a function's parameter frame
	spConst  // module constants (they live with the globals)
	spKParam // a kernel's parameters, addressed through a register
)

var spaceNames = map[string]space{"global": spGlobal, "shared": spShared, "local": spLocal, "param": spParam, "const": spConst}

func (s space) String() string {
	switch s {
	case spGlobal:
		return "global"
	case spShared:
		return "shared"
	case spLocal:
		return "local"
	case spParam, spKParam:
		return "param"
	case spConst:
		return "const"
	}
	return "generic"
}

// Windows of the generic address space: generic addresses of shared,
// local and kernel-parameter memory sit far above any host address (user
// addresses of 64-bit hosts are below 2^48), so one 64-bit generic pointer
// tells the state space it points into, as on a GPU.
const (
	sharedWindow uint64 = 1 << 60
	localWindow  uint64 = 2 << 60
	paramWindow  uint64 = 3 << 60
	frameWindow  uint64 = 4 << 60 // a lane's .func parameter frames
	windowSize   uint64 = 1 << 40
)

// rounding modes
const (
	rnDefault uint8 = iota
	rnNear
	rnZero
	rnDown
	rnUp
)
