package ptx

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
)

var bigModes = map[uint8]big.RoundingMode{rnNear: big.ToNearestEven, rnZero: big.ToZero, rnDown: big.ToNegativeInf, rnUp: big.ToPositiveInf}

// bigF32 rounds an exact big value to float32 in mode (normal range).
func bigF32(z *big.Float, mode uint8) float32 {
	r := new(big.Float).SetMode(bigModes[mode]).SetPrec(24).Set(z)
	f, _ := r.Float32()
	return f
}

func randF32(rng *rand.Rand) float32 {
	return float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))
}

// TestF32RoundingModes holds f32 add, mul, fma, div and sqrt in the four
// rounding modes against math/big.
func TestF32RoundingModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	ex := func(f float32) *big.Float { return new(big.Float).SetPrec(2000).SetFloat64(float64(f)) }
	for i := 0; i < 20000; i++ {
		a, b, c := randF32(rng), randF32(rng), randF32(rng)
		if i%4 == 0 {
			c = -a * b // cancellation
		}
		for mode := range bigModes {
			sum := new(big.Float).SetPrec(2000).Add(ex(a), ex(b))
			require.Equal(t, bigF32(sum, mode), f32add(a, b, mode), "add %v %v mode %d", a, b, mode)
			prod := new(big.Float).SetPrec(2000).Mul(ex(a), ex(b))
			require.Equal(t, bigF32(prod, mode), f32mul(a, b, mode), "mul %v %v mode %d", a, b, mode)
			fma := new(big.Float).SetPrec(2000).Add(prod, ex(c))
			if fma.Sign() != 0 {
				require.Equal(t, bigF32(fma, mode), f32fma(a, b, c, mode), "fma %v %v %v mode %d", a, b, c, mode)
			}
			q := new(big.Float).SetPrec(2000).Quo(ex(a), ex(b))
			require.Equal(t, bigF32(q, mode), f32div(a, b, mode), "div %v %v mode %d", a, b, mode)
			aa := float32(math.Abs(float64(a)))
			s := new(big.Float).SetPrec(2000).Sqrt(ex(aa))
			require.Equal(t, bigF32(s, mode), f32sqrt(aa, mode), "sqrt %v mode %d", aa, mode)
		}
	}
}

// TestF64RoundingModes holds f64 add, mul, div and fma in directed modes against math/big.
func TestF64RoundingModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
	ex := func(f float64) *big.Float { return new(big.Float).SetPrec(4000).SetFloat64(f) }
	r64 := func(z *big.Float, mode uint8) float64 {
		f, _ := new(big.Float).SetMode(bigModes[mode]).SetPrec(53).Set(z).Float64()
		return f
	}
	for i := 0; i < 5000; i++ {
		a, b, c := rng.NormFloat64(), rng.NormFloat64()*1e3, rng.NormFloat64()
		for mode := range bigModes {
			require.Equal(t, r64(new(big.Float).SetPrec(4000).Add(ex(a), ex(b)), mode), f64add(a, b, mode))
			require.Equal(t, r64(new(big.Float).SetPrec(4000).Mul(ex(a), ex(b)), mode), f64mul(a, b, mode))
			require.Equal(t, r64(new(big.Float).SetPrec(4000).Quo(ex(a), ex(b)), mode), f64div(a, b, mode), "div %v %v mode %d", a, b, mode)
			p := new(big.Float).SetPrec(4000).Mul(ex(a), ex(b))
			require.Equal(t, r64(p.Add(p, ex(c)), mode), f64fma(a, b, c, mode))
		}
	}
}

func TestHalfConversions(t *testing.T) {
	cases := []struct {
		f    float32
		mode uint8
		h    uint16
	}{
		{1, rnNear, 0x3c00}, {65504, rnNear, 0x7bff}, {65520, rnNear, 0x7c00}, {65520, rnZero, 0x7bff},
		{1e-7, rnNear, 0x0002}, {0.1, rnNear, 0x2e66}, {0.1, rnUp, 0x2e67}, {-2.5, rnNear, 0xc100},
		{float32(math.Inf(-1)), rnNear, 0xfc00}, {float32(math.Copysign(0, -1)), rnNear, 0x8000},
	}
	for _, c := range cases {
		require.Equal(t, c.h, f32ToF16(c.f, c.mode), "%v in mode %d", c.f, c.mode)
		if c.h&0x7c00 != 0x7c00 && c.mode == rnNear && c.f != 0.1 && c.f != 1e-7 {
			require.Equal(t, c.f, f16ToF32(c.h), "%#04x back to f32", c.h)
		}
	}
	// every half converts to f32 and back unchanged
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaNs
		}
		require.Equal(t, uint16(h), f32ToF16(f16ToF32(uint16(h)), rnNear), "%#04x", h)
	}
}
