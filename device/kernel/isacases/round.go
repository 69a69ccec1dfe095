package isacases

import (
	"math"
	"math/big"
)

// A format is an IEEE 754 binary format.
type format struct {
	prec int // significand bits, the hidden one included
	emin int // exponent of the least normal number
	emax int // exponent of the greatest finite number
	bits int
}

var (
	fmt16 = format{11, -14, 15, 16}
	fmtBF = format{8, -126, 127, 16}
	fmt32 = format{24, -126, 127, 32}
	fmt64 = format{53, -1022, 1023, 64}
)

// ratOf is the exact value of a finite float64.
func ratOf(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }

// roundRat rounds the exact value r (nonzero) to f in mode ("rn", "rz",
// "rm", "rp"), subnormals and overflow included, as IEEE 754 defines it,
// and returns its bits. neg gives the sign of a zero r.
func roundRat(r *big.Rat, f format, mode string, negZero bool) uint64 {
	sign := uint64(0)
	if r.Sign() < 0 || (r.Sign() == 0 && negZero) {
		sign = 1 << (f.bits - 1)
	}
	if r.Sign() == 0 {
		return sign
	}
	a := new(big.Rat).Abs(r)
	// e: 2^e <= a < 2^(e+1)
	e := a.Num().BitLen() - a.Denom().BitLen()
	if cmpPow2(a, e) < 0 {
		e--
	}
	q := max(e, f.emin) - (f.prec - 1) // the quantum
	scaled := mulPow2(a, -q)
	n := new(big.Int).Quo(scaled.Num(), scaled.Denom())
	rem := new(big.Rat).Sub(scaled, new(big.Rat).SetInt(n))
	up := false
	switch mode {
	case "rn":
		c := rem.Cmp(big.NewRat(1, 2))
		up = c > 0 || (c == 0 && n.Bit(0) == 1)
	case "rz":
	case "rm":
		up = sign != 0 && rem.Sign() != 0
	case "rp":
		up = sign == 0 && rem.Sign() != 0
	}
	if up {
		n.Add(n, big.NewInt(1))
	}
	// n * 2^q; renormalize when n carried to prec+1 bits
	if n.BitLen() > f.prec {
		n.Rsh(n, 1)
		q++
	}
	if n.Sign() == 0 {
		return sign
	}
	top := q + n.BitLen() - 1 // exponent of the result
	if top > f.emax {
		toInf := mode == "rn" || (mode == "rp" && sign == 0) || (mode == "rm" && sign != 0)
		if toInf {
			return sign | infBits(f)
		}
		return sign | maxBits(f)
	}
	var m uint64
	var expField uint64
	if n.BitLen() < f.prec { // subnormal
		m = n.Uint64()
	} else {
		m = n.Uint64() &^ (1 << (f.prec - 1))
		expField = uint64(top - f.emin + 1)
	}
	return sign | expField<<(f.prec-1) | m
}

func infBits(f format) uint64 {
	return uint64(f.emax-f.emin+2) << (f.prec - 1)
}

func maxBits(f format) uint64 { return infBits(f) - 1 }

// cmpPow2 compares a with 2^e.
func cmpPow2(a *big.Rat, e int) int { return a.Cmp(mulPow2(big.NewRat(1, 1), e)) }

// mulPow2 is a·2^e.
func mulPow2(a *big.Rat, e int) *big.Rat {
	p := new(big.Int).Lsh(big.NewInt(1), uint(abs(e)))
	r := new(big.Rat).Set(a)
	if e >= 0 {
		return r.Mul(r, new(big.Rat).SetInt(p))
	}
	return r.Quo(r, new(big.Rat).SetInt(p))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Bit patterns and values.
func b32(f float32) uint64 { return uint64(math.Float32bits(f)) }
func b64(f float64) uint64 { return math.Float64bits(f) }
func f32(b uint64) float32 { return math.Float32frombits(uint32(b)) }
func f64(b uint64) float64 { return math.Float64frombits(b) }

// ratOfBits is the exact value of finite bits in format f.
func ratOfBits(b uint64, f format) *big.Rat {
	switch f {
	case fmt32:
		return ratOf(float64(f32(b)))
	case fmt64:
		return ratOf(f64(b))
	case fmtBF:
		return ratOf(float64(f32(b << 16)))
	}
	// binary16
	s, e, m := b>>15&1, int(b>>10&31), int64(b&1023)
	var r *big.Rat
	if e == 0 {
		r = mulPow2(big.NewRat(m, 1), -24)
	} else {
		r = mulPow2(big.NewRat(m|1024, 1), e-25)
	}
	if s == 1 {
		r.Neg(r)
	}
	return r
}

// Canonical NaNs: the interpreter's (and NVIDIA GPUs') NaN results.
const (
	nan32  = 0x7fffffff
	nan64  = 0x7fffffffffffffff
	nan16  = 0x7fff
	inf32  = 0x7f800000
	ninf32 = 0xff800000
	inf64  = 0x7ff0000000000000
	ninf64 = 0xfff0000000000000
	neg32  = 0x80000000
	neg64  = 0x8000000000000000
)
