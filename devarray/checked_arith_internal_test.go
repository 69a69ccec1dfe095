package devarray

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The overflow-checked arithmetic every layout's extent rests on is exact:
// mul64, add64 and sub64 give the true result with ok where it fits in an
// int64 (math.MinInt64 included) and ok false where it does not, never a
// wrapped value. Checked against math/big on the edges of int64 and on
// fresh random operands of every magnitude. abs64 gives the magnitude,
// 2^63 for math.MinInt64 included.
func TestCheckedArithmetic(t *testing.T) {
	edges := []int64{0, 1, -1, 2, -2, 3, 1 << 31, -1 << 31, 1 << 32, 1<<62 - 1, 1 << 62, -1 << 62, -1<<62 - 1,
		math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1, 3037000499, 3037000500, -3037000500}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	operands := append([]int64(nil), edges...)
	for range 200 {
		v := int64(rng.Uint64() >> rng.IntN(64)) // every magnitude
		if rng.IntN(2) == 0 {
			v = -v
		}
		operands = append(operands, v)
	}
	ops := []struct {
		name string
		fn   func(a, b int64) (int64, bool)
		ref  func(z, a, b *big.Int) *big.Int
	}{
		{"mul64", mul64, (*big.Int).Mul},
		{"add64", add64, (*big.Int).Add},
		{"sub64", sub64, (*big.Int).Sub},
	}
	lo, hi := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			for _, a := range operands {
				for _, b := range operands {
					want := op.ref(new(big.Int), big.NewInt(a), big.NewInt(b))
					fits := want.Cmp(lo) >= 0 && want.Cmp(hi) <= 0
					got, ok := op.fn(a, b)
					if !assert.Equal(t, fits, ok, "%s(%d, %d) = %v: ok", op.name, a, b, want) {
						return
					}
					if fits && !assert.Equal(t, want.Int64(), got, "%s(%d, %d)", op.name, a, b) {
						return
					}
				}
			}
		})
	}
	t.Run("abs64", func(t *testing.T) {
		for _, a := range operands {
			require.Equal(t, new(big.Int).Abs(big.NewInt(a)).String(), new(big.Int).SetUint64(abs64(a)).String(), "abs64(%d)", a)
		}
	})
}
