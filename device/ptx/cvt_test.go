package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An insnCase runs one instruction (or a few) on operands loaded from
// memory and checks the bits its destination register holds, stored with
// the register's own width. The PTX ISA sentence it checks is in isa.
type insnCase struct {
	name string
	isa  string   // the sentence of the PTX ISA the case checks
	insn string   // PTX: %d is the destination, %a, %b, %c the sources, %p, %q predicates
	dt   string   // the destination register's type: b16, b32, b64 ...
	st   []string // the sources' register types
	in   []uint64 // the sources' bits
	want uint64
	err  string // a refusal at load time: a part of its message
}

// ptxHeader90 is the header of runInsn's kernels: sm_90, so that every
// form the cases try (.relu, .NaN, .xorsign, bf16 arithmetic) is allowed.
const ptxHeader90 = ".version 7.8\n.target sm_90\n.address_size 64\n"

// runInsn parses and runs c's instruction in one thread and returns the
// destination register's bits, or the error Parse gave.
func runInsn(t *testing.T, c insnCase) (uint64, error) {
	t.Helper()
	var src strings.Builder
	src.WriteString(ptxHeader90)
	src.WriteString(".visible .entry k(.param .u64 out)\n{\n\t.reg .b64 %rd1;\n\t.reg .pred %p, %q;\n")
	fmt.Fprintf(&src, "\t.reg .%s %%d;\n", c.dt)
	names := []string{"%a", "%b", "%c"}
	for i, st := range c.st {
		fmt.Fprintf(&src, "\t.reg .%s %s;\n", st, names[i])
	}
	src.WriteString("\tld.param.u64 %rd1, [out];\n")
	for i, st := range c.st {
		fmt.Fprintf(&src, "\tld.global.%s %s, [%%rd1+%d];\n", bitType(st), names[i], 8+8*i)
	}
	end := ";"
	if strings.HasSuffix(c.insn, "}") {
		end = ""
	}
	fmt.Fprintf(&src, "\t%s%s\n\tst.global.%s [%%rd1], %%d;\n\tret;\n}\n", c.insn, end, bitType(c.dt))
	text := src.String()
	if testing.Verbose() {
		t.Log(text)
	}
	m, err := Parse(text)
	if err != nil {
		return 0, err
	}
	k, ok := m.Kernel("k")
	require.True(t, ok)
	out := make([]byte, 8+8*len(c.st))
	for i, v := range c.in {
		binary.LittleEndian.PutUint64(out[8+8*i:], v)
	}
	h := &hostMem{bufs: [][]byte{out}}
	_, err = k.Run(Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1},
		Params: binary.LittleEndian.AppendUint64(nil, addr(out)), Global: h})
	require.NoError(t, err, "%s", text)
	return binary.LittleEndian.Uint64(out), nil
}

// bitType is the bit-size type of a register type's width.
func bitType(t string) string {
	switch t {
	case "b16", "u16", "s16", "f16", "bf16":
		return "b16"
	case "b32", "u32", "s32", "f32", "f16x2", "bf16x2":
		return "b32"
	case "b8", "u8", "s8":
		return "b8"
	}
	return "b64"
}

// runInsnCases runs the cases, each as a subtest.
func runInsnCases(t *testing.T, cases []insnCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := runInsn(t, c)
			if c.err != "" {
				require.Error(t, err, "%s should be refused", c.insn)
				require.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err, "ISA: %s", c.isa)
			require.Equal(t, fmt.Sprintf("%#x", c.want), fmt.Sprintf("%#x", got), "%s on %#x\nISA: %s", c.insn, c.in, c.isa)
		})
	}
}

func f32b(f float32) uint64 { return uint64(math.Float32bits(f)) }
func f64b(f float64) uint64 { return math.Float64bits(f) }

const (
	isaSext   = "The result of conversion is sign-extended to the destination register width for signed integers, and is zero-extended to the destination register width for unsigned, bit-size, and floating-point types."
	isaNaNInt = "In float-to-integer conversions, depending upon conversion types, NaN input results in following value: 1. Zero if source is not .f64 and destination is not .s64, .u64. 2. Otherwise 1 << (BitWidth(dst) - 1) corresponding to the value of (MAXINT >> 1) + 1 for unsigned type or MININT for signed type."
	isaRelu   = ".relu: For .f16, .f16x2, .bf16, .bf16x2 ... destination types, .relu clamps the result to 0 if negative. NaN results are converted to canonical NaN."
	isaSatFin = ".satfinite: For .f16, .f16x2, .bf16, .bf16x2 ... destination formats, if the input value is NaN, then the result is NaN in the specified destination format. If the absolute value of input (ignoring sign) is greater than MAX_NORM of the specified destination format, then the result is sign-preserved MAX_NORM of the destination format"
	isaSat    = ".sat: For floating-point destination types, .sat limits the result to the range [0.0, 1.0]. NaN results are flushed to positive zero. Applies to .f16, .f32, and .f64 types."
	isaPacked = "For .f16x2 and .bf16x2 instruction type, two inputs a and b of .f32 type are converted into .f16 or .bf16 type and the converted values are packed in the destination register d, such that the value converted from input a is stored in the upper half of d and the value converted from input b is stored in the lower half of d"
	isaRn     = ".rn: rounding to nearest, with ties to even"
	isaRz     = ".rz: rounding toward zero"
	isaIntSat = ".sat: For integer destination types, .sat limits the result to MININT..MAXINT for the size of the operation."
)

// Bit patterns, from the formats' definitions: binary16 is 1 sign, 5
// exponent (bias 15) and 10 mantissa bits; bfloat16 is the upper half of
// a binary32.
const (
	h1      = 0x3c00 // 1.0
	h2      = 0x4000 // 2.0
	hHalf   = 0x3800 // 0.5
	hMax    = 0x7bff // 65504, MAX_NORM
	hInf    = 0x7c00
	hNaN    = 0x7fff // canonical
	bf1     = 0x3f80 // 1.0
	bfMax   = 0x7f7f
	bfInf   = 0x7f80
	bfNaN   = 0x7fff
	f32NaN  = 0x7fc00000
	f64NaN  = 0x7ff8000000000000
	negF32  = 0x80000000
	hNegOne = 0xbc00
)

func TestCvtISA(t *testing.T) {
	cases := []insnCase{
		// sign and zero extension into a wider register
		{name: "s8.s32 -1 into b32", isa: isaSext, insn: "cvt.s8.s32 %d, %a", dt: "b32", st: []string{"b32"}, in: []uint64{0xffffffff}, want: 0xffffffff},
		{name: "s8.s32 0x180 into b32", isa: isaSext, insn: "cvt.s8.s32 %d, %a", dt: "b32", st: []string{"b32"}, in: []uint64{0x180}, want: 0xffffff80},
		{name: "s8.s32 0x17f into b32", isa: isaSext, insn: "cvt.s8.s32 %d, %a", dt: "b32", st: []string{"b32"}, in: []uint64{0x17f}, want: 0x7f},
		{name: "u8.s32 -1 into b32", isa: isaSext, insn: "cvt.u8.s32 %d, %a", dt: "b32", st: []string{"b32"}, in: []uint64{0xffffffff}, want: 0xff},
		{name: "s8.s32 into b16", isa: isaSext, insn: "cvt.s8.s32 %d, %a", dt: "b16", st: []string{"b32"}, in: []uint64{0x80}, want: 0xff80},
		{name: "s16.s32 into b64", isa: isaSext, insn: "cvt.s16.s32 %d, %a", dt: "b64", st: []string{"b32"}, in: []uint64{0x8000}, want: 0xffffffffffff8000},
		{name: "s16.s64 into s32 register", isa: isaSext, insn: "cvt.s16.s64 %d, %a", dt: "s32", st: []string{"b64"}, in: []uint64{0x1234fffe}, want: 0xfffffffe},
		{name: "sat.s8.s32 -1000 into b32", isa: isaIntSat + " " + isaSext, insn: "cvt.sat.s8.s32 %d, %a", dt: "b32", st: []string{"b32"}, in: []uint64{uint64(uint32(0xfffffc18))}, want: 0xffffff80},
		{name: "rzi.s8.f32 -3.75 into b32", isa: isaSext, insn: "cvt.rzi.s8.f32 %d, %a", dt: "b32", st: []string{"f32"}, in: []uint64{f32b(-3.75)}, want: 0xfffffffd},
		{name: "rzi.s16.f32 -1e9 into b32 saturates", isa: "For float-to-integer conversions, the result is clamped to the destination range by default. " + isaSext, insn: "cvt.rzi.s16.f32 %d, %a", dt: "b32", st: []string{"f32"}, in: []uint64{f32b(-1e9)}, want: 0xffff8000},

		// NaN to integer
		{name: "NaN rzi.s32.f32", isa: isaNaNInt, insn: "cvt.rzi.s32.f32 %d, %a", dt: "b32", st: []string{"f32"}, in: []uint64{f32NaN}, want: 0},
		{name: "NaN rzi.u16.f32", isa: isaNaNInt, insn: "cvt.rzi.u16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32NaN}, want: 0},
		{name: "NaN rzi.s64.f32", isa: isaNaNInt, insn: "cvt.rzi.s64.f32 %d, %a", dt: "b64", st: []string{"f32"}, in: []uint64{f32NaN}, want: 1 << 63},
		{name: "NaN rzi.u64.f32", isa: isaNaNInt, insn: "cvt.rzi.u64.f32 %d, %a", dt: "b64", st: []string{"f32"}, in: []uint64{f32NaN}, want: 1 << 63},
		{name: "NaN rzi.s32.f64", isa: isaNaNInt, insn: "cvt.rzi.s32.f64 %d, %a", dt: "b32", st: []string{"f64"}, in: []uint64{f64NaN}, want: 0x80000000},
		{name: "NaN rni.u32.f64", isa: isaNaNInt, insn: "cvt.rni.u32.f64 %d, %a", dt: "b32", st: []string{"f64"}, in: []uint64{f64NaN}, want: 0x80000000},
		{name: "NaN rni.s64.f64", isa: isaNaNInt, insn: "cvt.rni.s64.f64 %d, %a", dt: "b64", st: []string{"f64"}, in: []uint64{f64NaN}, want: 1 << 63},
		{name: "NaN rni.s32.f16", isa: isaNaNInt, insn: "cvt.rni.s32.f16 %d, %a", dt: "b32", st: []string{"b16"}, in: []uint64{hNaN}, want: 0},
		{name: "NaN rni.s64.f16", isa: isaNaNInt, insn: "cvt.rni.s64.f16 %d, %a", dt: "b64", st: []string{"b16"}, in: []uint64{hNaN}, want: 1 << 63},

		// f64 to f16 rounds once: 1 + 2^-11 + 2^-40 lies above the midpoint
		// of 1 and 1 + 2^-10 (through f32 it would be the midpoint, and go to 1)
		{name: "rn.f16.f64 once", isa: isaRn, insn: "cvt.rn.f16.f64 %d, %a", dt: "b16", st: []string{"f64"}, in: []uint64{f64b(1 + 0x1p-11 + 0x1p-40)}, want: 0x3c01},
		{name: "rn.f16.f64 tie to even", isa: isaRn, insn: "cvt.rn.f16.f64 %d, %a", dt: "b16", st: []string{"f64"}, in: []uint64{f64b(1 + 0x1p-11)}, want: h1},
		{name: "rz.f16.f64 below 1+2^-10", isa: isaRz, insn: "cvt.rz.f16.f64 %d, %a", dt: "b16", st: []string{"f64"}, in: []uint64{f64b(1 + 0x1p-10 - 0x1p-50)}, want: h1},
		{name: "rn.bf16.f64 once", isa: isaRn, insn: "cvt.rn.bf16.f64 %d, %a", dt: "b16", st: []string{"f64"}, in: []uint64{f64b(1 + 0x1p-8 + 0x1p-40)}, want: 0x3f81},
		{name: "rn.f16.f64 subnormal", isa: isaRn, insn: "cvt.rn.f16.f64 %d, %a", dt: "b16", st: []string{"f64"}, in: []uint64{f64b(0x1p-25 + 0x1p-60)}, want: 0x0001},
		{name: "rn.f16.f64 half the least subnormal", isa: isaRn, insn: "cvt.rn.f16.f64 %d, %a", dt: "b16", st: []string{"f64"}, in: []uint64{f64b(-0x1p-25)}, want: 0x8000},

		// bf16 rounding modes
		{name: "rz.bf16.f32", isa: isaRz, insn: "cvt.rz.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0x3f80ffff}, want: 0x3f80},
		{name: "rn.bf16.f32", isa: isaRn, insn: "cvt.rn.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0x3f80ffff}, want: 0x3f81},
		{name: "rz.bf16.f32 negative", isa: isaRz, insn: "cvt.rz.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0xbf80ffff}, want: 0xbf80},
		{name: "rz.bf16.f32 overflow stays finite", isa: isaRz, insn: "cvt.rz.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0x7f7fffff}, want: bfMax},
		{name: "rn.bf16.f32 overflow", isa: isaRn, insn: "cvt.rn.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0x7f7fffff}, want: bfInf},
		{name: "rm.bf16.f32", isa: ".rm: rounding toward negative infinity", insn: "cvt.rm.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0xbf800001}, want: 0xbf81},
		{name: "rp.f16.f32", isa: ".rp: rounding toward positive infinity", insn: "cvt.rp.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0x3f800001}, want: 0x3c01},
		{name: "rn.bf16.f32 NaN", isa: "Half-precision instructions return an unspecified NaN (the interpreter: canonical 0x7fff)", insn: "cvt.rn.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0xffc00001}, want: bfNaN},

		// .relu, .satfinite and .sat on f16/bf16 destinations
		{name: "rn.relu.f16.f32 negative", isa: isaRelu, insn: "cvt.rn.relu.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32b(-2)}, want: 0},
		{name: "rn.relu.f16.f32 positive", isa: isaRelu, insn: "cvt.rn.relu.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32b(3)}, want: 0x4200},
		{name: "rn.relu.f16.f32 NaN", isa: isaRelu, insn: "cvt.rn.relu.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0xffc00000}, want: hNaN},
		{name: "rz.relu.bf16.f32 negative", isa: isaRelu, insn: "cvt.rz.relu.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32b(-0.25)}, want: 0},
		{name: "rn.satfinite.f16.f32 overflow", isa: isaSatFin, insn: "cvt.rn.satfinite.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32b(1e6)}, want: hMax},
		{name: "rn.satfinite.f16.f32 -inf", isa: isaSatFin, insn: "cvt.rn.satfinite.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0xff800000}, want: 0x8000 | hMax},
		{name: "rn.satfinite.f16.f32 NaN", isa: isaSatFin, insn: "cvt.rn.satfinite.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32NaN}, want: hNaN},
		{name: "rn.f16.f32 overflow without satfinite", isa: isaRn, insn: "cvt.rn.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32b(1e6)}, want: hInf},
		{name: "rn.f16.f32 65520 ties to inf", isa: isaRn, insn: "cvt.rn.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32b(65520)}, want: hInf},
		{name: "rn.f16.f32 65519 to max", isa: isaRn, insn: "cvt.rn.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32b(65519)}, want: hMax},
		{name: "rn.relu.satfinite.bf16.f32 -inf", isa: isaRelu + " " + isaSatFin, insn: "cvt.rn.relu.satfinite.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0xff800000}, want: 0},
		{name: "rn.satfinite.bf16.f32 inf", isa: isaSatFin, insn: "cvt.rn.satfinite.bf16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{0x7f800000}, want: bfMax},
		{name: "rn.sat.f16.f32 2.5", isa: isaSat, insn: "cvt.rn.sat.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32b(2.5)}, want: h1},
		{name: "rn.sat.f16.f32 -1", isa: isaSat, insn: "cvt.rn.sat.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32b(-1)}, want: 0},
		{name: "rn.sat.f16.f32 NaN", isa: isaSat, insn: "cvt.rn.sat.f16.f32 %d, %a", dt: "b16", st: []string{"f32"}, in: []uint64{f32NaN}, want: 0},

		// integers to half precision
		{name: "rn.f16.s32 65520", isa: isaRn, insn: "cvt.rn.f16.s32 %d, %a", dt: "b16", st: []string{"b32"}, in: []uint64{65520}, want: hInf},
		{name: "rz.f16.s32 65520", isa: isaRz, insn: "cvt.rz.f16.s32 %d, %a", dt: "b16", st: []string{"b32"}, in: []uint64{65520}, want: hMax},
		{name: "rn.f16.s32 -3", isa: isaRn, insn: "cvt.rn.f16.s32 %d, %a", dt: "b16", st: []string{"b32"}, in: []uint64{0xfffffffd}, want: 0xc200},
		{name: "rn.bf16.s32", isa: isaRn, insn: "cvt.rn.bf16.s32 %d, %a", dt: "b16", st: []string{"b32"}, in: []uint64{0x01010101}, want: 0x4b81},
		{name: "rz.bf16.s32", isa: isaRz, insn: "cvt.rz.bf16.s32 %d, %a", dt: "b16", st: []string{"b32"}, in: []uint64{0x01010101}, want: 0x4b80},
		// 2^63 + 2^55 + 1: above the midpoint of 2^63 and 2^63 + 2^56
		// (float64 of it is the midpoint)
		{name: "rn.bf16.u64 sticky bit", isa: isaRn, insn: "cvt.rn.bf16.u64 %d, %a", dt: "b16", st: []string{"b64"}, in: []uint64{1<<63 + 1<<55 + 1}, want: 0x5f01},
		{name: "rn.f16.u64 max", isa: isaRn, insn: "cvt.rn.f16.u64 %d, %a", dt: "b16", st: []string{"b64"}, in: []uint64{math.MaxUint64}, want: hInf},

		// half to other types
		{name: "f32.f16 subnormal", isa: "Convert between different types and sizes (f16 to f32 is exact).", insn: "cvt.f32.f16 %d, %a", dt: "f32", st: []string{"b16"}, in: []uint64{0x8001}, want: f32b(-0x1p-24)},
		{name: "f32.bf16", isa: "Convert between different types and sizes (bf16 to f32 is exact).", insn: "cvt.f32.bf16 %d, %a", dt: "f32", st: []string{"b16"}, in: []uint64{0xc0a1}, want: 0xc0a10000},
		{name: "f64.f16 max", isa: "Convert between different types and sizes (f16 to f64 is exact).", insn: "cvt.f64.f16 %d, %a", dt: "f64", st: []string{"b16"}, in: []uint64{hMax}, want: f64b(65504)},
		{name: "rn.f16.bf16", isa: isaRn, insn: "cvt.rn.f16.bf16 %d, %a", dt: "b16", st: []string{"b16"}, in: []uint64{0x4780}, want: hInf},
		{name: "rn.bf16.f16", isa: isaRn, insn: "cvt.rn.bf16.f16 %d, %a", dt: "b16", st: []string{"b16"}, in: []uint64{0x3c01}, want: bf1},
		{name: "rni.f16.f16", isa: "A floating-point value may be rounded to an integral value using the integer rounding modifiers", insn: "cvt.rni.f16.f16 %d, %a", dt: "b16", st: []string{"b16"}, in: []uint64{0x4100}, want: h2},
		{name: "rzi.s32.bf16", isa: ".rzi: round to nearest integer in the direction of zero", insn: "cvt.rzi.s32.bf16 %d, %a", dt: "b32", st: []string{"b16"}, in: []uint64{0xc0a1}, want: 0xfffffffb},

		// packed
		{name: "rn.f16x2.f32", isa: isaPacked, insn: "cvt.rn.f16x2.f32 %d, %a, %b", dt: "b32", st: []string{"f32", "f32"}, in: []uint64{f32b(1), f32b(2)}, want: h1<<16 | h2},
		{name: "rz.f16x2.f32", isa: isaPacked + " " + isaRz, insn: "cvt.rz.f16x2.f32 %d, %a, %b", dt: "b32", st: []string{"f32", "f32"}, in: []uint64{f32b(1e6), 0x3f800001}, want: hMax<<16 | h1},
		{name: "rn.relu.f16x2.f32", isa: isaPacked + " " + isaRelu, insn: "cvt.rn.relu.f16x2.f32 %d, %a, %b", dt: "b32", st: []string{"f32", "f32"}, in: []uint64{f32b(-1), f32b(0.5)}, want: hHalf},
		{name: "rn.relu.satfinite.f16x2.f32", isa: isaPacked + " " + isaSatFin, insn: "cvt.rn.relu.satfinite.f16x2.f32 %d, %a, %b", dt: "b32", st: []string{"f32", "f32"}, in: []uint64{f32b(1e9), f32NaN}, want: hMax<<16 | hNaN},
		{name: "rn.bf16x2.f32", isa: isaPacked, insn: "cvt.rn.bf16x2.f32 %d, %a, %b", dt: "b32", st: []string{"f32", "f32"}, in: []uint64{f32b(1), f32b(-2)}, want: bf1<<16 | 0xc000},
		{name: "rz.satfinite.bf16x2.f32", isa: isaPacked + " " + isaSatFin, insn: "cvt.rz.satfinite.bf16x2.f32 %d, %a, %b", dt: "b32", st: []string{"f32", "f32"}, in: []uint64{0xff800000, 0x3f80ffff}, want: (0x8000|bfMax)<<16 | bf1},
		{name: "rn.relu.bf16x2.f32", isa: isaPacked + " " + isaRelu, insn: "cvt.rn.relu.bf16x2.f32 %d, %a, %b", dt: "b32", st: []string{"f32", "f32"}, in: []uint64{f32b(3), f32b(-3)}, want: 0x4040 << 16},
		{name: "packed needs f32 sources", isa: isaPacked, insn: "cvt.rn.f16x2.f64 %d, %a, %b", dt: "b32", st: []string{"f64", "f64"}, in: []uint64{0, 0}, err: "packed cvt converts two .f32 sources"},
		{name: "packed needs a rounding mode", isa: "Rounding modifier is mandatory in all of the following cases: ... All conversions involving .f16x2 ... .bf16x2", insn: "cvt.f16x2.f32 %d, %a, %b", dt: "b32", st: []string{"f32", "f32"}, in: []uint64{0, 0}, err: "packed cvt needs .rn or .rz"},
	}
	runInsnCases(t, cases)
}
