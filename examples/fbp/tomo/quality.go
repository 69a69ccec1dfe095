package tomo

import (
	"fmt"
	"math"

	"github.com/cuarray/cuarray/devarray"
)

// RelativeRMSE returns ‖got − want‖ / ‖want‖ (Euclidean norms, in float64):
// the root-mean-square error relative to the root-mean-square of want.
func RelativeRMSE(got, want []float32) (float64, error) {
	if len(got) != len(want) {
		return 0, fmt.Errorf("tomo: rmse of %d values against %d: %w", len(got), len(want), devarray.ErrShape)
	}
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - float64(w)
		num += d * d
		den += float64(w) * float64(w)
	}
	if den == 0 {
		return 0, fmt.Errorf("tomo: rmse against an all-zero volume: %w", devarray.ErrShape)
	}
	return math.Sqrt(num / den), nil
}
