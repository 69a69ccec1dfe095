package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"runtime"
	"strings"
	"testing"

	rand "github.com/cuarray/cuarray/internal/testrand"

	"github.com/stretchr/testify/require"
)

// A conformance suite for floating-point corners, each row held to a
// sentence of the PTX ISA (9.7.3, 9.7.6.4, 9.7.13.5/6), bit for bit. The
// expected bits come from the ISA's definition: exact results rounded with
// refRound below (rational arithmetic on big.Int and big.Rat, the format's
// exponent range emulated, independent of the interpreter's own rounding),
// or the value an ISA table names. A row marked choice is one where the ISA
// leaves the value open (an approximation's exact bits, an unspecified
// NaN): the interpreter gives the strictest plausible answer, which doc.go
// names. NaN results of arithmetic are the canonical NaN (0x7fffffff,
// 0x7fffffffffffffff), the interpreter's documented choice.

// ISA sentences quoted by the rows.
const (
	isaRnd         = "rounding modifiers: .rn mantissa LSB rounds to nearest even, .rz towards zero, .rm towards negative infinity, .rp towards positive infinity"
	isaFma32       = "fma.f32 computes the product of a and b to infinite precision and then adds c to this product, again in infinite precision. The resulting value is then rounded to single precision using the rounding mode specified by .rnd."
	isaDivIEEE     = "div.rnd.f64 d, a, b; // IEEE 754 compliant rounding (.rz, .rm, .rp; sm_1x: div.f64 supports subnormal numbers)"
	isaSqrtIEEE    = "sqrt.rnd.f64 d, a; // IEEE 754 compliant rounding"
	isaFtz         = "sm_20+: By default, subnormal numbers are supported. .ftz flushes subnormal inputs and results to sign-preserving zero."
	isaDivApprox   = "div.approx.f32 implements a fast approximation to divide, computed as d = a * (1/b). For |b| in [2^-126, 2^126], the maximum ulp error is 2. For 2^126 < |b| < 2^128, if a is infinity, div.approx.f32 returns NaN, otherwise it returns a sign-preserving zero."
	isaDivFull     = "div.full.f32 implements a relatively fast, full-range approximation that scales operands to achieve better accuracy ... The maximum ulp error is 2 across the full range of inputs."
	isaRcpF64      = "rcp.approx.ftz.f64: tmp = a[63:32]; // upper word of a, 1.11.20 format; d[63:32] = 1.0 / tmp; d[31:0] = 0x00000000; table -Inf -0.0, -subnormal -Inf, -0.0 -Inf, +0.0 +Inf, +subnormal +Inf, +Inf +0.0, NaN NaN. Input NaNs map to a canonical NaN with encoding 0x7fffffff00000000. Subnormal inputs and results are flushed to sign-preserving zero."
	isaRsqrtF64    = "rsqrt.approx.ftz.f64: tmp = a[63:32]; d[63:32] = 1.0 / sqrt(tmp); d[31:0] = 0x00000000; table -Inf NaN, -subnormal -Inf, -0.0 -Inf, +0.0 +Inf, +subnormal +Inf, +Inf +0.0, NaN NaN. Input NaNs map to a canonical NaN with encoding 0x7fffffff00000000. Subnormal inputs and results are flushed to sign-preserving zero."
	isaTestp       = "testp.finite: True if the input is not infinite or NaN; .infinite: positive or negative infinity; .number: not NaN; .notanumber: NaN; .normal: a normal number (not NaN, not infinity); .subnormal: a subnormal number (not NaN, not infinity). As a special case, positive and negative zero are considered normal numbers."
	isaAbs         = "For abs.f32, NaN input yields unspecified NaN. For abs.f64, NaN input is passed through unchanged. Future implementations may comply with the IEEE 754 standard by preserving payload and modifying only the sign bit."
	isaNeg         = "NaN inputs yield an unspecified NaN. Future implementations may comply with the IEEE 754 standard by preserving payload and modifying only the sign bit."
	isaSlct        = "If c >= 0, a is stored in d, otherwise b is stored in d. For .f32 comparisons, negative zero equals zero. slct.ftz.dtype.f32 flushes subnormal values of operand c to sign-preserving zero, and operand a is selected. If operand c is NaN, the comparison is ordered and operand b is selected."
	isaSin         = "sin.approx.f32: -Inf NaN, -0.0 -0.0, +0.0 +0.0, +Inf NaN, NaN NaN; sin.ftz.f32 flushes subnormal inputs and results to sign-preserving zero"
	isaCos         = "cos.approx.f32: -Inf NaN, -0.0 +1.0, +0.0 +1.0, +Inf NaN, NaN NaN; cos.ftz.f32 flushes subnormal inputs and results to sign-preserving zero"
	isaLg2         = "lg2.approx.f32: -Inf NaN, -normal NaN, -0.0 -Inf, +0.0 -Inf, +Inf +Inf, NaN NaN; lg2.ftz.f32 flushes subnormal inputs and results to sign-preserving zero"
	isaEx2         = "ex2.approx.f32: -Inf +0.0, -0.0 +1.0, +0.0 +1.0, +Inf +Inf, NaN NaN; maximum ulp error is 2 ulp from correctly rounded result; ex2.ftz.f32 flushes subnormal inputs and results to sign-preserving zero"
	isaRsqrt       = "rsqrt.approx: -Inf NaN, -normal NaN, -0.0 -Inf, +0.0 +Inf, +Inf +0.0, NaN NaN; rsqrt.ftz.f32 flushes subnormal inputs and results to sign-preserving zero"
	isaSqrtApprox  = "sqrt: -Inf NaN, -normal NaN, -0.0 -0.0, +0.0 +0.0, +Inf +Inf, NaN NaN; sqrt.ftz.f32 flushes subnormal inputs and results to sign-preserving zero"
	isaRcpApprox   = "rcp.approx.f32: -Inf -0.0, -0.0 -Inf, +0.0 +Inf, +Inf +0.0, NaN NaN; the maximum ulp error is 1 across the full range of inputs"
	isaTanh        = "tanh.approx.f32: -Inf -1.0, -0.0 -0.0, +0.0 +0.0, +Inf 1.0, NaN NaN. The subnormal inputs gets passed through to the output"
	isaAtomGlobal  = "The floating-point operation .add operation rounds to nearest even. Current implementation of atom.add.f32 on global memory flushes subnormal inputs and results to sign-preserving zero; whereas atom.add.f32 on shared memory supports subnormal inputs and results and doesn't flush them to zero."
	isaRedGlobal   = "Current implementation of red.add.f32 on global memory flushes subnormal inputs and results to sign-preserving zero; whereas red.add.f32 on shared memory supports subnormal inputs and results and doesn't flush them to zero."
	isaAtomF64     = "The floating-point operation .add operation rounds to nearest even (atom.add.f64: no flush is named; subnormal numbers are supported)"
	canonNaNApprox = 0x7fffffff00000000
)

// exactFmt is a binary floating-point format: prec significant bits, emin
// the exponent of the least normal power of two, emax of the greatest.
type exactFmt struct{ prec, emin, emax int }

var (
	fmt32 = exactFmt{24, -126, 127}
	fmt64 = exactFmt{53, -1022, 1023}
	// fmt21 is the 1.11.20 format of rcp/rsqrt.approx.ftz.f64 with an
	// unbounded exponent below (their subnormal results flush to zero).
	fmt21 = exactFmt{21, -100000, 1023}
)

// pow2 returns 2^e as a rational.
func pow2(e int) *big.Rat {
	if e >= 0 {
		return new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(e)))
	}
	return new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), uint(-e)))
}

// ratOf is the exact value of a finite float64.
func ratOf(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }

// refRound rounds v (or its square root when sqrt) to format f in mode,
// subnormals and overflow included, as IEEE 754 defines it: the result is
// n·2^q with q the quantum of v's binade (never below emin-prec+1). It
// returns the value as a float64 (exact: prec <= 53 and the value fits).
func refRound(v *big.Rat, f exactFmt, mode uint8, sqrt bool) float64 {
	if v.Sign() == 0 {
		return 0
	}
	neg := v.Sign() < 0
	x := new(big.Rat).Abs(v)
	// e = floor(log2 x)
	e := x.Num().BitLen() - x.Denom().BitLen()
	if x.Cmp(pow2(e)) < 0 {
		e--
	}
	if sqrt {
		if neg {
			return math.NaN()
		}
		e = int(math.Floor(float64(e) / 2))
	}
	q := max(e, f.emin) - (f.prec - 1)
	var n *big.Int
	var exact bool
	var half int // sign of (exact value / 2^q - n) - 1/2
	if sqrt {
		// y = sqrt(x)/2^q = sqrt(x/2^(2q)); n = isqrt(floor(x/2^(2q)))
		s := new(big.Rat).Mul(x, pow2(-2*q))
		fl := new(big.Int).Quo(s.Num(), s.Denom())
		n = new(big.Int).Sqrt(fl)
		n2 := new(big.Rat).SetInt(new(big.Int).Mul(n, n))
		exact = n2.Cmp(s) == 0
		// compare s with (n+1/2)^2 = n^2 + n + 1/4
		mid := new(big.Rat).Add(n2, new(big.Rat).SetInt(n))
		mid.Add(mid, big.NewRat(1, 4))
		half = s.Cmp(mid)
	} else {
		s := new(big.Rat).Mul(x, pow2(-q))
		n = new(big.Int).Quo(s.Num(), s.Denom())
		rem := new(big.Rat).Sub(s, new(big.Rat).SetInt(n))
		exact = rem.Sign() == 0
		half = rem.Cmp(big.NewRat(1, 2))
	}
	up := false
	if !exact {
		switch mode {
		case rnZero:
		case rnUp:
			up = !neg
		case rnDown:
			up = neg
		default:
			up = half > 0 || half == 0 && n.Bit(0) == 1
		}
	}
	if up {
		n.Add(n, big.NewInt(1))
	}
	nf, _ := new(big.Float).SetInt(n).Float64()
	r := math.Ldexp(nf, q)
	if e2 := n.BitLen() - 1 + q; e2 > f.emax {
		maxF := math.Ldexp(2-math.Ldexp(1, 1-f.prec), f.emax)
		r = math.Inf(1)
		switch {
		case mode == rnZero, mode == rnUp && neg, mode == rnDown && !neg:
			r = maxF
		}
	}
	if neg {
		r = -r
	}
	return r
}

// Exact results in a rounding mode, as bits.
func refDiv64(a, b float64, mode uint8) uint64 {
	if a == 0 {
		return math.Float64bits(math.Copysign(0, a) * math.Copysign(1, b))
	}
	return math.Float64bits(refRound(new(big.Rat).Quo(ratOf(a), ratOf(b)), fmt64, mode, false))
}

func refSqrt64(a float64, mode uint8) uint64 {
	return math.Float64bits(refRound(ratOf(a), fmt64, mode, true))
}

func ref32(v *big.Rat, mode uint8) uint64 {
	return uint64(math.Float32bits(float32(refRound(v, fmt32, mode, false))))
}

// refSum32 rounds the exact sum x + y, where x and y have the signs sx
// and sy; an exact zero sum is IEEE 754's: the sign of like-signed
// addends, otherwise +0 (-0 rounding towards negative infinity).
func refSum32(x, y *big.Rat, sx, sy bool, mode uint8) uint64 {
	s := new(big.Rat).Add(x, y)
	if s.Sign() == 0 {
		if sx == sy && sx || sx != sy && mode == rnDown {
			return 1 << 31
		}
		return 0
	}
	return ref32(s, mode)
}

func refFma32(a, b, c float32, mode uint8) uint64 {
	p := new(big.Rat).Mul(ratOf(float64(a)), ratOf(float64(b)))
	return refSum32(p, ratOf(float64(c)), math.Signbit(float64(a)) != math.Signbit(float64(b)), math.Signbit(float64(c)), mode)
}

func refAdd32(a, b float32, mode uint8) uint64 {
	return refSum32(ratOf(float64(a)), ratOf(float64(b)), math.Signbit(float64(a)), math.Signbit(float64(b)), mode)
}

func refMul32(a, b float32, mode uint8) uint64 {
	if a == 0 || b == 0 {
		return b32(float32(math.Copysign(0, float64(a))) * float32(math.Copysign(1, float64(b))))
	}
	return ref32(new(big.Rat).Mul(ratOf(float64(a)), ratOf(float64(b))), mode)
}

func refDiv32(a, b float32, mode uint8) uint64 {
	if a == 0 {
		return b32(float32(math.Copysign(0, float64(a))) * float32(math.Copysign(1, float64(b))))
	}
	return ref32(new(big.Rat).Quo(ratOf(float64(a)), ratOf(float64(b))), mode)
}

// refApprox64 is rcp/rsqrt.approx.ftz.f64 of a finite positive normal
// upper word: the exact 1/tmp or 1/sqrt(tmp) rounded to nearest in 1.11.20
// format, zero below 2^-1022, the low word zero.
func refApprox64(a uint64, rsqrt bool) uint64 {
	tmp := math.Float64frombits(a &^ 0xffffffff)
	inv := new(big.Rat).Inv(ratOf(math.Abs(tmp)))
	r := refRound(inv, fmt21, rnNear, rsqrt)
	if r < 0x1p-1022 {
		r = 0
	}
	return math.Float64bits(math.Copysign(r, tmp))
}

var modeName = map[uint8]string{rnNear: "rn", rnZero: "rz", rnDown: "rm", rnUp: "rp"}

func b32(f float32) uint64 { return uint64(math.Float32bits(f)) }
func b64(f float64) uint64 { return math.Float64bits(f) }

func f32From(f float64) float32 {
	r := float32(f)
	if float64(r) != f {
		panic(fmt.Sprintf("%v is not an f32", f))
	}
	return r
}

// isaRow is one instruction on constant operands.
type isaRow struct {
	inst   string   // the opcode with its modifiers, e.g. fma.rn.f32
	in     []uint64 // operand bits
	want   uint64   // the result's bits (a predicate: 0 or 1)
	isa    string   // the sentence the row checks
	choice bool     // the ISA leaves the value open: the strictest plausible answer
}

// isaRun runs one instruction on operand bits in a one-thread kernel and
// returns the result's bits.
func isaRun(t *testing.T, inst string, in []uint64) uint64 {
	t.Helper()
	parts := strings.Split(inst, ".")
	base, last := parts[0], parts[len(parts)-1]
	type cls struct{ reg, ld string }
	clsOf := func(ty string) cls {
		switch ty {
		case "f32":
			return cls{"%f", "f32"}
		case "f64":
			return cls{"%fd", "f64"}
		case "b64", "u64", "s64":
			return cls{"%rd", "b64"}
		}
		return cls{"%r", "b32"}
	}
	src := make([]cls, len(in))
	for i := range src {
		src[i] = clsOf(last)
	}
	dst := clsOf(last)
	switch base {
	case "testp":
		dst = cls{"%p", "pred"}
	case "slct":
		dst = clsOf(parts[len(parts)-2])
		src[0], src[1] = dst, dst
	}
	var b strings.Builder
	b.WriteString(`.visible .entry isa(.param .u64 out)
{
	.reg .f32 %f<8>; .reg .f64 %fd<8>; .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<4>;
	ld.param.u64 %rd7, [out];
	cvta.to.global.u64 %rd7, %rd7;
`)
	ops := []string{dst.reg + "0"}
	for i, s := range src {
		fmt.Fprintf(&b, "\tld.global.%s %s%d, [%%rd7+%d];\n", s.ld, s.reg, i+1, 8*i)
		ops = append(ops, fmt.Sprintf("%s%d", s.reg, i+1))
	}
	fmt.Fprintf(&b, "\t%s %s;\n", inst, strings.Join(ops, ", "))
	switch dst.ld {
	case "pred":
		b.WriteString("\tselp.u32 %r7, 1, 0, %p0;\n\tst.global.u32 [%rd7+32], %r7;\n")
	default:
		fmt.Fprintf(&b, "\tst.global.%s [%%rd7+32], %s0;\n", dst.ld, dst.reg)
	}
	b.WriteString("\tret;\n}\n")
	buf := make([]byte, 48)
	for i, v := range in {
		binary.LittleEndian.PutUint64(buf[8*i:], v)
	}
	m, err := Parse(ptxHeader90 + b.String())
	require.NoError(t, err, "%s", b.String())
	k, ok := m.Kernel("isa")
	require.True(t, ok)
	h := &hostMem{bufs: [][]byte{buf}}
	_, err = k.Run(Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1},
		Params: binary.LittleEndian.AppendUint64(nil, addr(buf)), Global: h})
	runtime.KeepAlive(buf)
	require.NoError(t, err)
	if dst.ld == "f64" || dst.ld == "b64" {
		return binary.LittleEndian.Uint64(buf[32:])
	}
	return uint64(binary.LittleEndian.Uint32(buf[32:]))
}

func runISARows(t *testing.T, rows []isaRow) {
	t.Helper()
	for i, r := range rows {
		name := fmt.Sprintf("%03d_%s", i, r.inst)
		if r.choice {
			name += "_choice"
		}
		t.Run(name, func(t *testing.T) {
			got := isaRun(t, r.inst, r.in)
			require.Equal(t, fmt.Sprintf("%#x", r.want), fmt.Sprintf("%#x", got),
				"%s %#x\nISA: %s", r.inst, r.in, r.isa)
		})
	}
}

var allModes = []uint8{rnNear, rnZero, rnDown, rnUp}

// TestISADirectedF64Tiny: f64 div and sqrt in directed modes whose operands
// or results are tiny (subnormal results, results by the underflow
// threshold, remainders below the subnormal range).
func TestISADirectedF64Tiny(t *testing.T) {
	sub := math.SmallestNonzeroFloat64
	divs := [][2]float64{
		{5 * sub, 3},                     // subnormal quotient
		{5 * sub, 3 * 0x1p-200},          // normal quotient, subnormal dividend
		{-7 * sub, 3 * 0x1p-60},          // the same, negative
		{0x1p-1022, 1 + 0x1p-52},         // just below the least normal
		{-0x1p-1022, 1 + 0x1p-52},        // the same, negative
		{0x1.8p-1022, 1.5 + 0x1p-52},     // by the threshold, inexact
		{0x1p-1000 + 0x1p-1052, 3},       // small normal dividend, normal quotient
		{1, 3 * 0x1p1021},                // a subnormal reciprocal-like quotient
		{0x1.fffffffffffffp-1, 0x1p1022}, // just below the least normal
		{3 * sub, -0x1p52},               // below half the smallest subnormal
	}
	var rows []isaRow
	for _, d := range divs {
		for _, m := range allModes[1:] {
			rows = append(rows, isaRow{inst: "div." + modeName[m] + ".f64", in: []uint64{b64(d[0]), b64(d[1])},
				want: refDiv64(d[0], d[1], m), isa: isaDivIEEE + "; " + isaRnd})
		}
	}
	for _, a := range []float64{3 * sub, 2 * sub, 0x000fffffffffffff * sub, 0x1p-1000 + 0x1p-1052, 5 * 0x1p-990, 7 * sub} {
		for _, m := range allModes {
			rows = append(rows, isaRow{inst: "sqrt." + modeName[m] + ".f64", in: []uint64{b64(a)},
				want: refSqrt64(a, m), isa: isaSqrtIEEE + "; " + isaRnd})
		}
	}
	for _, a := range []float64{3 * 0x1p1021, -3 * 0x1p1021, 0x1.0000000000001p1023} {
		for _, m := range allModes[1:] {
			rows = append(rows, isaRow{inst: "rcp." + modeName[m] + ".f64", in: []uint64{b64(a)},
				want: refDiv64(1, a, m), isa: "rcp.rnd.f64 d, a; // IEEE 754 compliant rounding; " + isaRnd})
		}
	}
	runISARows(t, rows)
}

// TestISAF32Thresholds: f32 fma, add, mul and div in every mode by the
// overflow and underflow thresholds.
func TestISAF32Thresholds(t *testing.T) {
	maxF := float32(math.MaxFloat32)
	sub := float32(math.SmallestNonzeroFloat32)
	// a·b is exactly 2^128 - 2^103, the midpoint of MaxFloat32 and 2^128:
	// 18631·1801 = 2^25 - 1.
	ma, mb := f32From(18631*0x1p60), f32From(1801*0x1p43)
	x63 := f32From(0x1p-63 - 0x1p-87) // 2^-63·(1 - 2^-24)
	type fma struct{ a, b, c float32 }
	fmas := []fma{
		{ma, mb, -sub},              // just below the overflow midpoint
		{ma, mb, sub},               // just above it
		{ma, mb, 0},                 // on it
		{-ma, mb, sub},              // just above the negative midpoint
		{maxF, 1, f32From(0x1p103)}, // on it, from the addend
		{maxF, 1, f32From(0x1p102)}, // between MaxFloat32 and the midpoint
		{x63, x63, 0},               // 2^-126 - 2^-149 + 2^-174: just above the greatest subnormal
		{x63, x63, sub},             // 2^-126 + 2^-174: just above the least normal
		{x63, -x63, sub},            // -2^-126 + 2^-148 - 2^-174
		{f32From(0x1p-63), f32From(0x1p-63), -f32From(0x1p-149)}, // 2^-126 - 2^-149
		{f32From(0x1p-76), f32From(0x1p-74), -f32From(0x1p-149)}, // 2^-150 - 2^-149 = -2^-150: a tie at zero
		{f32From(0x1p-75), f32From(0x1p-75 + 0x1p-98), 0},        // just above half the smallest subnormal
		{f32From(0x1p-80), f32From(0x1p-80), sub},                // the smallest subnormal plus 2^-160
		{f32From(0x1p-80), -f32From(0x1p-80), sub},               // minus 2^-160
	}
	var rows []isaRow
	for _, f := range fmas {
		for _, m := range allModes {
			rows = append(rows, isaRow{inst: "fma." + modeName[m] + ".f32", in: []uint64{b32(f.a), b32(f.b), b32(f.c)},
				want: refFma32(f.a, f.b, f.c, m), isa: isaFma32})
		}
	}
	adds := [][2]float32{{maxF, f32From(0x1p103)}, {maxF, f32From(0x1p103 - 0x1p79)}, {maxF, maxF}, {-maxF, -maxF},
		{f32From(0x1p-126), -sub}, {sub, -sub}, {f32From(0x1p-126), f32From(-0x1p-126 + 0x1p-149)}}
	for _, a := range adds {
		for _, m := range allModes {
			rows = append(rows, isaRow{inst: "add." + modeName[m] + ".f32", in: []uint64{b32(a[0]), b32(a[1])},
				want: refAdd32(a[0], a[1], m), isa: "d = a + b; " + isaRnd})
		}
	}
	muls := [][2]float32{{f32From(0x1p127), 2}, {f32From(0x1p64), f32From(0x1p64 - 0x1p40)}, {-maxF, 1.5},
		{f32From(0x1p-100), f32From(0x1p-60)}, {f32From(0x1p-75), f32From(0x1p-75)}, {f32From(0x1p-75), -f32From(0x1p-75 + 0x1p-98)},
		{f32From(0x1p-63), f32From(0x1p-63 - 0x1p-87)}}
	for _, a := range muls {
		for _, m := range allModes {
			rows = append(rows, isaRow{inst: "mul." + modeName[m] + ".f32", in: []uint64{b32(a[0]), b32(a[1])},
				want: refMul32(a[0], a[1], m), isa: "d = a * b; " + isaRnd})
		}
	}
	divs := [][2]float32{{maxF, 0.5}, {sub, 3}, {sub, 2}, {3 * sub, 2}, {f32From(0x1p-126), f32From(1 + 0x1p-23)}}
	for _, a := range divs {
		for _, m := range allModes {
			rows = append(rows, isaRow{inst: "div." + modeName[m] + ".f32", in: []uint64{b32(a[0]), b32(a[1])},
				want: refDiv32(a[0], a[1], m), isa: "div.rnd.f32: IEEE 754 compliant rounding; " + isaRnd})
		}
	}
	// .ftz: a subnormal result of the rounding flushes to a zero of its sign
	rows = append(rows,
		isaRow{inst: "fma.rz.ftz.f32", in: []uint64{b32(x63), b32(x63), 0}, want: 0, isa: isaFtz},
		isaRow{inst: "fma.rz.ftz.f32", in: []uint64{b32(-x63), b32(x63), 0}, want: 1 << 31, isa: isaFtz},
		isaRow{inst: "fma.rn.ftz.f32", in: []uint64{b32(f32From(0x1p-63)), b32(f32From(0x1p-63)), b32(-sub)}, want: b32(0x1p-126), isa: isaFtz + " (the subnormal c flushes: 2^-126 - 0)"},
		isaRow{inst: "mul.rp.ftz.f32", in: []uint64{b32(f32From(0x1p-100)), b32(-f32From(0x1p-60))}, want: 1 << 31, isa: isaFtz},
		isaRow{inst: "fma.rp.ftz.f32", in: []uint64{b32(x63), b32(x63), 0}, want: b32(0x1p-126), isa: isaFtz + " (a result rounded up to the least normal is not subnormal)"},
		isaRow{inst: "add.rn.ftz.f32", in: []uint64{b32(sub), b32(f32From(0x1p-126))}, want: b32(0x1p-126), isa: isaFtz},
	)
	runISARows(t, rows)
}

// TestISADivApprox: div.approx.f32 and div.full.f32 by their ranges.
func TestISADivApprox(t *testing.T) {
	p127 := b32(0x1p127)
	rows := []isaRow{
		{inst: "div.approx.f32", in: []uint64{b32(1), p127}, want: 0, isa: isaDivApprox},
		{inst: "div.approx.f32", in: []uint64{b32(-3), p127}, want: 1 << 31, isa: isaDivApprox},
		{inst: "div.approx.f32", in: []uint64{b32(0x1p120), b32(-0x1.8p127)}, want: 1 << 31, isa: isaDivApprox},
		{inst: "div.approx.f32", in: []uint64{b32(math.MaxFloat32), b32(math.MaxFloat32)}, want: 0, isa: isaDivApprox},
		{inst: "div.approx.f32", in: []uint64{b32(-math.MaxFloat32), b32(math.MaxFloat32)}, want: 1 << 31, isa: isaDivApprox},
		{inst: "div.approx.f32", in: []uint64{b32(float32(math.Inf(1))), p127}, want: canonNaN32, isa: isaDivApprox},
		{inst: "div.approx.f32", in: []uint64{b32(float32(math.Inf(-1))), b32(-0x1p127)}, want: canonNaN32, isa: isaDivApprox},
		{inst: "div.approx.ftz.f32", in: []uint64{b32(7), b32(0x1.0p127)}, want: 0, isa: isaDivApprox},
		{inst: "div.approx.f32", in: []uint64{b32(float32(math.Copysign(0, -1))), b32(0x1.fffffep127)}, want: 1 << 31, isa: isaDivApprox},
		// the NaN a: computed as a * (1/b), NaN * 0 is NaN
		{inst: "div.approx.f32", in: []uint64{0x7fc00000, p127}, want: canonNaN32, isa: isaDivApprox, choice: true},
		// |b| = 2^126 is inside the 2-ulp range: the correctly rounded quotient
		{inst: "div.approx.f32", in: []uint64{b32(0x1p100), b32(0x1p126)}, want: b32(0x1p-26), isa: isaDivApprox, choice: true},
		{inst: "div.approx.f32", in: []uint64{b32(1), b32(3)}, want: ref32(big.NewRat(1, 3), rnNear), isa: isaDivApprox, choice: true},
		// div.full: full range, the correctly rounded quotient
		{inst: "div.full.f32", in: []uint64{b32(0x1p100), p127}, want: b32(0x1p-27), isa: isaDivFull, choice: true},
		{inst: "div.full.f32", in: []uint64{b32(3), b32(0x1.8p127)}, want: ref32(new(big.Rat).Quo(ratOf(3), ratOf(0x1.8p127)), rnNear), isa: isaDivFull, choice: true},
		{inst: "div.full.ftz.f32", in: []uint64{b32(1), b32(0x1.8p126)}, want: 0, isa: isaDivFull + "; " + isaFtz},
		{inst: "div.full.f32", in: []uint64{b32(float32(math.Inf(1))), p127}, want: b32(float32(math.Inf(1))), isa: isaDivFull, choice: true},
	}
	runISARows(t, rows)
}

// TestISAApproxF64: rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 read the
// upper word of a and write the upper word of d.
func TestISAApproxF64(t *testing.T) {
	inf, ninf := b64(math.Inf(1)), b64(math.Inf(-1))
	var rows []isaRow
	special := func(inst, isa string, in, want uint64) {
		rows = append(rows, isaRow{inst: inst, in: []uint64{in}, want: want, isa: isa})
	}
	rcp, rsq := "rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64"
	for _, c := range [][3]uint64{
		{ninf, 1 << 63, ninf}, // rcp(-Inf) = -0; rsqrt(-Inf) below
		{0x800fffffffffffff, ninf, ninf},
		{0x8000000000000001, ninf, ninf},
		{1 << 63, ninf, ninf},
		{0, inf, inf},
		{1, inf, inf},
		{0x000fffffffffffff, inf, inf},
		{0x0000000100000000, inf, inf},
		{inf, 0, 0},
		{0x7ff8000000000000, canonNaNApprox, canonNaNApprox},
		{0xfff8000000000001, canonNaNApprox, canonNaNApprox},
		{0x7fffffffffffffff, canonNaNApprox, canonNaNApprox},
	} {
		special(rcp, isaRcpF64, c[0], c[1])
		if c[0] != ninf {
			special(rsq, isaRsqrtF64, c[0], c[2])
		}
	}
	// the upper word decides: a NaN whose upper word is an infinity
	special(rcp, isaRcpF64, 0x7ff0000000000001, 0)
	special(rsq, isaRsqrtF64, 0x7ff0000000000001, 0)
	// results below 2^-1022 flush to zero
	special(rcp, isaRcpF64, b64(0x1p1023), 0)
	special(rcp, isaRcpF64, b64(-0x1.8p1022), 1<<63)
	special(rcp, isaRcpF64, b64(0x1p1022), b64(0x1p-1022))
	// negative inputs of rsqrt: NaN; which NaN the ISA leaves open
	rows = append(rows,
		isaRow{inst: rsq, in: []uint64{ninf}, want: canonNaNApprox, isa: isaRsqrtF64, choice: true},
		isaRow{inst: rsq, in: []uint64{b64(-4)}, want: canonNaNApprox, isa: isaRsqrtF64, choice: true})
	// finite values: the ISA names the bits computed (the upper word, the
	// low word zero) but not the rounding of the upper word: correctly
	// rounded to nearest
	for _, a := range []uint64{b64(3), 0x4008000012345678, b64(1.5), b64(-7), b64(0x1.fffffp-1022), b64(0x1.00001p0),
		b64(math.MaxFloat64), b64(0x1.55555p-3), b64(0x1.6a09ep0), b64(0x1p-1022), b64(10)} {
		rows = append(rows, isaRow{inst: rcp, in: []uint64{a}, want: refApprox64(a, false), isa: isaRcpF64, choice: true})
		if math.Float64frombits(a) > 0 {
			rows = append(rows, isaRow{inst: rsq, in: []uint64{a}, want: refApprox64(a, true), isa: isaRsqrtF64, choice: true})
		}
	}
	// rsqrt near rounding midpoints of 1.11.20 (where float64 1/sqrt may
	// round the wrong way): upper words just around 2, 3, 5, 7 and 10
	for _, m := range []uint64{0x40000001, 0x40000003, 0x40080001, 0x4014000f, 0x401c0005, 0x40240007, 0x3ff00003, 0x3ff7ffff} {
		a := m << 32
		rows = append(rows, isaRow{inst: rsq, in: []uint64{a}, want: refApprox64(a, true), isa: isaRsqrtF64, choice: true})
	}
	runISARows(t, rows)
}

// TestISARsqrtMidpoints holds rsqrt.approx.ftz.f64 against the exact
// rounding over a dense range of upper words, where a float64 1/sqrt
// rounded again to 21 bits would cross a midpoint.
func TestISARsqrtMidpoints(t *testing.T) {
	g, _, _, _ := floatFunc("rsqrt", mods{approx: true, ftz: true}, tF64)
	g2, _, _, _ := floatFunc("rcp", mods{approx: true, ftz: true}, tF64)
	for hi := uint64(0x3ff00000); hi < 0x3ff00000+1<<20; hi += 97 {
		for _, h := range []uint64{hi, hi + 0x00100000} {
			a := h << 32
			require.Equal(t, refApprox64(a, true), g.f1(a), "rsqrt %#x", a)
			require.Equal(t, refApprox64(a, false), g2.f1(a), "rcp %#x", a)
		}
	}
}

// TestISATestp: every property of every class, f32 and f64.
func TestISATestp(t *testing.T) {
	type class struct {
		name          string
		v32, v64      uint64
		nan, inf, sub bool
	}
	classes := []class{
		{"+0", 0, 0, false, false, false},
		{"-0", 1 << 31, 1 << 63, false, false, false},
		{"+sub", 1, 1, false, false, true},
		{"-maxsub", 0x807fffff, 0x800fffffffffffff, false, false, true},
		{"+minnormal", 0x00800000, 0x0010000000000000, false, false, false},
		{"-normal", b32(-1.5), b64(-1.5), false, false, false},
		{"+max", 0x7f7fffff, 0x7fefffffffffffff, false, false, false},
		{"+inf", 0x7f800000, 0x7ff0000000000000, false, true, false},
		{"-inf", 0xff800000, 0xfff0000000000000, false, true, false},
		{"qnan", 0x7fc00000, 0x7ff8000000000000, true, false, false},
		{"-snan", 0xff800001, 0xfff0000000000001, true, false, false},
	}
	var rows []isaRow
	for _, c := range classes {
		want := map[string]bool{
			"finite":     !c.nan && !c.inf,
			"infinite":   c.inf,
			"number":     !c.nan,
			"notanumber": c.nan,
			"normal":     !c.nan && !c.inf && !c.sub, // zero included: "As a special case, positive and negative zero are considered normal numbers."
			"subnormal":  c.sub,
		}
		for _, op := range []string{"finite", "infinite", "number", "notanumber", "normal", "subnormal"} {
			w := uint64(0)
			if want[op] {
				w = 1
			}
			rows = append(rows,
				isaRow{inst: "testp." + op + ".f32", in: []uint64{c.v32}, want: w, isa: isaTestp + " (" + c.name + ")"},
				isaRow{inst: "testp." + op + ".f64", in: []uint64{c.v64}, want: w, isa: isaTestp + " (" + c.name + ")"})
		}
	}
	runISARows(t, rows)
}

// TestISASignOps: abs and neg of NaNs and subnormals, slct's comparison.
func TestISASignOps(t *testing.T) {
	a, b := uint64(0x11111111), uint64(0x22222222)
	fa, fb := b32(1.25), b32(-2.5)
	rows := []isaRow{
		{inst: "abs.f64", in: []uint64{0xfff8000000000001}, want: 0xfff8000000000001, isa: isaAbs},
		{inst: "abs.f64", in: []uint64{0xfff4000000000abc}, want: 0xfff4000000000abc, isa: isaAbs},
		{inst: "abs.f64", in: []uint64{0x7ff8000000000000}, want: 0x7ff8000000000000, isa: isaAbs},
		{inst: "abs.f64", in: []uint64{0x800fffffffffffff}, want: 0x000fffffffffffff, isa: "d = |a|; abs.f64 supports subnormal numbers"},
		{inst: "abs.f64", in: []uint64{b64(math.Inf(-1))}, want: b64(math.Inf(1)), isa: "d = |a|"},
		{inst: "abs.f32", in: []uint64{0xffc00001}, want: 0x7fc00001, isa: isaAbs, choice: true},
		{inst: "abs.f32", in: []uint64{0x80000001}, want: 0x00000001, isa: "d = |a|; " + isaFtz},
		{inst: "abs.ftz.f32", in: []uint64{0x80000001}, want: 0, isa: "abs.ftz.f32 flushes subnormal inputs and results to sign-preserving zero"},
		{inst: "neg.f32", in: []uint64{0x7fc00001}, want: 0xffc00001, isa: isaNeg, choice: true},
		{inst: "neg.f64", in: []uint64{0x7ff8000000000001}, want: 0xfff8000000000001, isa: isaNeg, choice: true},
		{inst: "neg.ftz.f32", in: []uint64{0x00000001}, want: 1 << 31, isa: "neg.ftz.f32 flushes subnormal inputs and results to sign-preserving zero"},
		{inst: "neg.ftz.f32", in: []uint64{0x80400000}, want: 0, isa: "neg.ftz.f32 flushes subnormal inputs and results to sign-preserving zero"},
		{inst: "neg.f32", in: []uint64{0x00000001}, want: 0x80000001, isa: "d = -a; " + isaFtz},
		{inst: "neg.f64", in: []uint64{0}, want: 1 << 63, isa: "d = -a"},
	}
	for _, c := range []struct {
		c        uint64
		ftz, pos bool
	}{
		{0x80000001, false, false}, // -subnormal < 0: b
		{0x80000001, true, true},   // flushed to -0: a
		{0x807fffff, true, true},
		{0x00000001, true, true},
		{0x00000001, false, true},
		{1 << 31, false, true},     // -0 equals 0: a
		{0x7fc00000, false, false}, // NaN: b
		{0xffc00000, true, false},
		{0x7f800000, false, true},
		{0xff800000, true, false},
		{b32(-0x1p-126), true, false}, // the least normal is not flushed
	} {
		inst := "slct.b32.f32"
		if c.ftz {
			inst = "slct.ftz.b32.f32"
		}
		w, wf := b, fb
		if c.pos {
			w, wf = a, fa
		}
		rows = append(rows, isaRow{inst: inst, in: []uint64{a, b, c.c}, want: w, isa: isaSlct},
			isaRow{inst: strings.Replace(inst, "b32", "f32", 1), in: []uint64{fa, fb, c.c}, want: wf, isa: isaSlct})
	}
	runISARows(t, rows)
}

// TestISAApproxSpecials: the approximate functions' special inputs.
func TestISAApproxSpecials(t *testing.T) {
	pinf, ninf := b32(float32(math.Inf(1))), b32(float32(math.Inf(-1)))
	nz, one := uint64(1<<31), b32(1)
	nan := uint64(0x7fc00000)
	sub, nsub := uint64(0x00000003), uint64(0x80000003)
	type c struct{ in, want uint64 }
	table := map[string][]c{
		"sin.approx.f32":       {{ninf, canonNaN32}, {nz, nz}, {0, 0}, {pinf, canonNaN32}, {nan, canonNaN32}},
		"sin.approx.ftz.f32":   {{nsub, nz}, {sub, 0}},
		"cos.approx.f32":       {{ninf, canonNaN32}, {nz, one}, {0, one}, {pinf, canonNaN32}, {nan, canonNaN32}},
		"cos.approx.ftz.f32":   {{nsub, one}},
		"lg2.approx.f32":       {{ninf, canonNaN32}, {b32(-2), canonNaN32}, {nz, ninf}, {0, ninf}, {pinf, pinf}, {nan, canonNaN32}, {b32(0.25), b32(-2)}, {nsub, canonNaN32}},
		"lg2.approx.ftz.f32":   {{sub, ninf}, {nsub, ninf}},
		"ex2.approx.f32":       {{ninf, 0}, {nz, one}, {0, one}, {pinf, pinf}, {nan, canonNaN32}, {b32(128), pinf}, {b32(-3), b32(0.125)}},
		"ex2.approx.ftz.f32":   {{b32(-130), 0}, {sub, one}, {nsub, one}, {b32(-126), b32(0x1p-126)}},
		"rsqrt.approx.f32":     {{ninf, canonNaN32}, {b32(-4), canonNaN32}, {nz, ninf}, {0, pinf}, {pinf, 0}, {nan, canonNaN32}, {b32(4), b32(0.5)}, {nsub, canonNaN32}},
		"rsqrt.approx.ftz.f32": {{sub, pinf}, {nsub, ninf}},
		"sqrt.approx.f32":      {{ninf, canonNaN32}, {b32(-4), canonNaN32}, {nz, nz}, {0, 0}, {pinf, pinf}, {nan, canonNaN32}, {b32(0.25), b32(0.5)}, {nsub, canonNaN32}},
		"sqrt.approx.ftz.f32":  {{nsub, nz}, {sub, 0}},
		"rcp.approx.f32":       {{ninf, nz}, {nz, ninf}, {0, pinf}, {pinf, 0}, {nan, canonNaN32}},
		"rcp.approx.ftz.f32":   {{nsub, ninf}, {b32(0x1.8p126), 0}},
		"tanh.approx.f32":      {{ninf, b32(-1)}, {nz, nz}, {0, 0}, {pinf, one}, {nan, canonNaN32}, {sub, sub}, {nsub, nsub}},
	}
	// a finite value from a normal input is an approximation: the
	// correctly rounded value, within the ISA's bound
	normal := func(v uint64) bool { e := v >> 23 & 0xff; return e != 0 && e != 0xff }
	isa := map[string]string{"sin": isaSin, "cos": isaCos, "lg2": isaLg2, "ex2": isaEx2, "rsqrt": isaRsqrt, "sqrt": isaSqrtApprox, "rcp": isaRcpApprox, "tanh": isaTanh}
	var rows []isaRow
	for _, inst := range []string{"sin.approx.f32", "sin.approx.ftz.f32", "cos.approx.f32", "cos.approx.ftz.f32",
		"lg2.approx.f32", "lg2.approx.ftz.f32", "ex2.approx.f32", "ex2.approx.ftz.f32", "rsqrt.approx.f32",
		"rsqrt.approx.ftz.f32", "sqrt.approx.f32", "sqrt.approx.ftz.f32", "rcp.approx.f32", "rcp.approx.ftz.f32", "tanh.approx.f32"} {
		for _, x := range table[inst] {
			rows = append(rows, isaRow{inst: inst, in: []uint64{x.in}, want: x.want, isa: isa[strings.Split(inst, ".")[0]], choice: normal(x.in) && normal(x.want)})
		}
	}
	// subnormal values without .ftz: exact where the function is the
	// identity or a power of two to f32's precision (within the ISA's bounds)
	rows = append(rows,
		isaRow{inst: "sin.approx.f32", in: []uint64{sub}, want: sub, isa: isaSin + "; subnormal numbers are supported", choice: true},
		isaRow{inst: "ex2.approx.f32", in: []uint64{b32(-130)}, want: b32(0x1p-130), isa: isaEx2, choice: true},
		isaRow{inst: "lg2.approx.f32", in: []uint64{1}, want: b32(-149), isa: isaLg2 + "; subnormal numbers are supported", choice: true},
		isaRow{inst: "sqrt.approx.f32", in: []uint64{2}, want: b32(0x1p-74), isa: isaSqrtApprox + "; subnormal numbers are supported", choice: true},
		// rsqrt.approx.f64 (no .ftz): a subnormal is a number; 1/sqrt(2^-1074) = 2^537
		isaRow{inst: "rsqrt.approx.f64", in: []uint64{1}, want: b64(0x1p537), isa: isaRsqrt + "; rsqrt.f64 supports subnormal numbers"},
		isaRow{inst: "rsqrt.approx.f64", in: []uint64{1 << 63}, want: b64(math.Inf(-1)), isa: isaRsqrt},
		isaRow{inst: "rsqrt.approx.f64", in: []uint64{b64(-4)}, want: canonNaN64, isa: isaRsqrt},
		isaRow{inst: "rsqrt.approx.f64", in: []uint64{b64(math.Inf(1))}, want: 0, isa: isaRsqrt},
	)
	runISARows(t, rows)
}

// TestISAAtomicAddFlush: atom.add.f32 and red.add.f32 flush subnormals on
// global memory and not on shared memory; atom.add.f64 never does.
func TestISAAtomicAddFlush(t *testing.T) {
	type row struct {
		name    string
		op      string // the instruction; [p] is the address
		shared  bool
		old, v  uint64
		want    uint64 // memory after
		wantOld bool   // d holds the old memory
		is64    bool
		isa     string
	}
	sub := uint64(0x00400000) // 2^-127
	rows := []row{
		{"global inputs", "atom.global.add.f32 %f0, [p], %f1;", false, sub, sub, 0, true, false, isaAtomGlobal},
		{"global result", "atom.global.add.f32 %f0, [p], %f1;", false, b32(0x1.8p-126), b32(-0x1p-126), 0, true, false, isaAtomGlobal},
		{"global result negative", "atom.global.add.f32 %f0, [p], %f1;", false, b32(-0x1.8p-126), b32(0x1p-126), 1 << 31, true, false, isaAtomGlobal},
		{"global input b", "atom.global.add.f32 %f0, [p], %f1;", false, b32(0x1p-126), 0x80400000, b32(0x1p-126), true, false, isaAtomGlobal},
		{"generic to global", "atom.add.f32 %f0, [p], %f1;", false, sub, sub, 0, true, false, isaAtomGlobal},
		{"red global", "red.global.add.f32 [p], %f1;", false, sub, sub, 0, false, false, isaRedGlobal},
		{"red generic to global", "red.add.f32 [p], %f1;", false, b32(0x1.8p-126), b32(-0x1p-126), 0, false, false, isaRedGlobal},
		{"shared inputs", "atom.shared.add.f32 %f0, [p], %f1;", true, sub, sub, b32(0x1p-126), true, false, isaAtomGlobal},
		{"shared result", "atom.shared.add.f32 %f0, [p], %f1;", true, b32(0x1.8p-126), b32(-0x1p-126), b32(0x1p-127), true, false, isaAtomGlobal},
		{"generic to shared", "atom.add.f32 %f0, [p], %f1;", true, sub, sub, b32(0x1p-126), true, false, isaAtomGlobal},
		{"red shared", "red.shared.add.f32 [p], %f1;", true, sub, sub, b32(0x1p-126), false, false, isaRedGlobal},
		{"global f32 normal", "atom.global.add.f32 %f0, [p], %f1;", false, b32(1), b32(0x1p-24), b32(1), true, false, isaAtomGlobal},
		{"global f32 tie up", "atom.global.add.f32 %f0, [p], %f1;", false, b32(1 + 0x1p-23), b32(0x1p-24), b32(1 + 0x1p-22), true, false, isaAtomGlobal},
		{"global f64 subnormal", "atom.global.add.f64 %fd0, [p], %fd1;", false, 1, 1, 2, true, true, isaAtomF64},
		{"red global f64 subnormal", "red.global.add.f64 [p], %fd1;", false, 0x000fffffffffffff, 1, 0x0010000000000000, false, true, isaAtomF64},
		{"shared f64 subnormal", "atom.shared.add.f64 %fd0, [p], %fd1;", true, 3, 0x8000000000000001, 2, true, true, isaAtomF64},
	}
	for i, r := range rows {
		t.Run(fmt.Sprintf("%02d_%s", i, strings.ReplaceAll(r.name, " ", "_")), func(t *testing.T) {
			ld, reg, vreg := "f32", "%f", "%f1"
			if r.is64 {
				ld, reg, vreg = "f64", "%fd", "%fd1"
			}
			var b strings.Builder
			b.WriteString(".visible .entry atomk(.param .u64 out)\n{\n")
			b.WriteString("\t.reg .f32 %f<4>; .reg .f64 %fd<4>; .reg .b64 %rd<8>; .reg .b32 %r<4>;\n")
			b.WriteString("\t.shared .align 8 .b8 sh[16];\n")
			b.WriteString("\tld.param.u64 %rd7, [out];\n\tcvta.to.global.u64 %rd7, %rd7;\n")
			fmt.Fprintf(&b, "\tld.global.%s %s, [%%rd7+8];\n", ld, vreg)
			addrOp := "[%rd7]"
			if r.shared {
				fmt.Fprintf(&b, "\tld.global.%s %s2, [%%rd7];\n", ld, reg)
				fmt.Fprintf(&b, "\tst.shared.%s [sh], %s2;\n", ld, reg)
				if strings.Contains(r.op, ".shared.") {
					addrOp = "[sh]"
				} else {
					b.WriteString("\tmov.u64 %rd1, sh;\n\tcvta.shared.u64 %rd1, %rd1;\n")
					addrOp = "[%rd1]"
				}
			} else if !strings.Contains(r.op, ".global.") {
				b.WriteString("\tcvta.global.u64 %rd1, %rd7;\n")
				addrOp = "[%rd1]"
			}
			op := strings.Replace(r.op, "[p]", addrOp, 1)
			if !r.wantOld {
				fmt.Fprintf(&b, "\t%s\n", op)
			} else {
				fmt.Fprintf(&b, "\t%s\n\tst.global.%s [%%rd7+16], %s0;\n", op, ld, reg)
			}
			if r.shared {
				fmt.Fprintf(&b, "\tld.shared.%s %s3, [sh];\n\tst.global.%s [%%rd7], %s3;\n", ld, reg, ld, reg)
			}
			b.WriteString("\tret;\n}\n")
			buf := make([]byte, 24)
			binary.LittleEndian.PutUint64(buf, r.old)
			binary.LittleEndian.PutUint64(buf[8:], r.v)
			m, err := Parse(ptxHeader90 + b.String())
			require.NoError(t, err, "%s", b.String())
			k, _ := m.Kernel("atomk")
			h := &hostMem{bufs: [][]byte{buf}}
			_, err = k.Run(Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1},
				Params: binary.LittleEndian.AppendUint64(nil, addr(buf)), Global: h})
			runtime.KeepAlive(buf)
			require.NoError(t, err)
			got := binary.LittleEndian.Uint64(buf)
			if !r.is64 {
				got &= 0xffffffff
			}
			require.Equal(t, fmt.Sprintf("%#x", r.want), fmt.Sprintf("%#x", got), "%s\nISA: %s", r.op, r.isa)
			if r.wantOld {
				// d is the memory's old value as it was (the flush applies to
				// the addition's inputs, not to the value returned): a choice
				gotOld := binary.LittleEndian.Uint64(buf[16:])
				if !r.is64 {
					gotOld &= 0xffffffff
				}
				require.Equal(t, fmt.Sprintf("%#x", r.old), fmt.Sprintf("%#x", gotOld), "the old value returned")
			}
		})
	}
}

// TestISARsqrtApproxExhaustive: rsqrt.approx.ftz.f64 rounds a float64
// 1/sqrt (within 2 ulps of the exact value) to 1.11.20. Over every upper
// word of [1, 4) (every 21-bit mantissa, both exponent parities; other
// binades scale by powers of two) that float64 lies more than 16 ulps from
// a 1.11.20 midpoint, so its rounding is the exact value's; and the
// interpreter gives it. rcp.approx.ftz.f64 likewise over [1, 2), its
// float64 quotient correctly rounded.
func TestISARsqrtApproxExhaustive(t *testing.T) {
	rs, _, _, _ := floatFunc("rsqrt", mods{approx: true, ftz: true}, tF64)
	rc, _, _, _ := floatFunc("rcp", mods{approx: true, ftz: true}, tF64)
	far := func(r float64) bool {
		lo := int64(math.Float64bits(r) & 0xffffffff)
		return lo-0x80000000 > 16 || 0x80000000-lo > 16
	}
	nearest21 := func(r float64) uint64 {
		// round half to even on the upper word, by adding half an ulp of
		// 1.11.20 and truncating (no ties: r is far from a midpoint)
		u := math.Float64bits(r)
		return (u + 0x80000000) &^ 0xffffffff
	}
	for hi := uint64(0x3ff00000); hi < 0x40100000; hi++ {
		a := hi<<32 | 0x9abcdef0
		r := 1 / math.Sqrt(math.Float64frombits(hi<<32))
		if !far(r) {
			t.Fatalf("rsqrt of %#x lies by a midpoint", a)
		}
		if got := rs.f1(a); got != nearest21(r) {
			t.Fatalf("rsqrt.approx.ftz.f64 %#x = %#x, want %#x", a, got, nearest21(r))
		}
		if hi < 0x40000000 {
			q := 1 / math.Float64frombits(hi<<32)
			if !far(q) {
				t.Fatalf("rcp of %#x lies by a midpoint", a)
			}
			if got := rc.f1(a); got != nearest21(q) {
				t.Fatalf("rcp.approx.ftz.f64 %#x = %#x, want %#x", a, got, nearest21(q))
			}
		}
	}
}

// TestISADirectedF64TinyRandom holds f64 div and sqrt in directed modes
// against the exact rounding, operands drawn across the subnormal and
// small normal range.
func TestISADirectedF64TinyRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
	draw := func() float64 {
		x := math.Ldexp(1+rng.Float64(), -rng.IntN(62)-960) // small normal
		if rng.IntN(2) == 0 {
			x = math.Float64frombits(1 + rng.Uint64N(1<<52-1)) // subnormal
		}
		if rng.IntN(2) == 0 {
			x = -x
		}
		return x
	}
	for i := 0; i < 3000; i++ {
		a, b := draw(), math.Ldexp(1+rng.Float64(), rng.IntN(400)-200)
		if rng.IntN(4) == 0 {
			b = draw()
		}
		for _, m := range allModes[1:] {
			require.Equal(t, fmt.Sprintf("%#x", refDiv64(a, b, m)), fmt.Sprintf("%#x", math.Float64bits(f64div(a, b, m))), "div.%s %g %g", modeName[m], a, b)
			s := math.Abs(a)
			require.Equal(t, fmt.Sprintf("%#x", refSqrt64(s, m)), fmt.Sprintf("%#x", math.Float64bits(f64sqrt(s, m))), "sqrt.%s %g", modeName[m], s)
			c := math.Ldexp(1+float64(i%7)/7, -(i % 90))
			want := math.Float64bits(refRound(new(big.Rat).Mul(ratOf(a), ratOf(c)), fmt64, m, false))
			if want&^(1<<63) == 0 {
				want = math.Float64bits(math.Copysign(0, a*c)) // an inexact zero keeps the product's sign
			}
			require.Equal(t, fmt.Sprintf("%#x", want), fmt.Sprintf("%#x", math.Float64bits(f64mul(a, c, m))), "mul.%s %g %g", modeName[m], a, c)
		}
	}
}

// TestISAF32ThresholdsRandom holds f32 fma, add, mul and div in every mode
// against the exact rounding, results drawn by the overflow and underflow
// thresholds.
func TestISAF32ThresholdsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 4))
	f := func(e int) float32 {
		x := float32(math.Ldexp(1+rng.Float64(), e))
		if rng.IntN(2) == 0 {
			x = -x
		}
		return x
	}
	for i := 0; i < 4000; i++ {
		var a, b, c float32
		if i%2 == 0 { // products by 2^128
			a, b = f(64+rng.IntN(3)-1), f(63)
			c = f(127 - rng.IntN(60))
		} else { // products by 2^-126
			a, b = f(-63-rng.IntN(3)), f(-63)
			c = f(-126 - rng.IntN(30))
		}
		for _, m := range allModes {
			require.Equal(t, refFma32(a, b, c, m), b32(f32fma(a, b, c, m)), "fma.%s %g %g %g", modeName[m], a, b, c)
			require.Equal(t, refAdd32(a, c, m), b32(f32add(a, c, m)), "add.%s %g %g", modeName[m], a, c)
			require.Equal(t, refMul32(a, b, m), b32(f32mul(a, b, m)), "mul.%s %g %g", modeName[m], a, b)
			require.Equal(t, refDiv32(c, b, m), b32(f32div(c, b, m)), "div.%s %g %g", modeName[m], c, b)
		}
	}
}
