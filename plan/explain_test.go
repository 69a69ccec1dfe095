package plan_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/plan"
)

// A raw plan's Arithmetic shows how MaxSlices follows from its terms, as
// httomo's worked example does, with the sum shown only where there is
// something to add up and fixed bytes subtracted first; where the terms
// do not give MaxSlices (none, none per slice, less memory than the fixed
// bytes, a MaxSlices from elsewhere) it says only what fits.
func TestArithmetic(t *testing.T) {
	in, out := rand.Int64N(1000)+1, rand.Int64N(1000)+1 // bytes per slice
	scratch, table := rand.Int64N(5000)+1, rand.Int64N(5000)+1
	slices := rand.Int64N(50) + 1
	spare := rand.Int64N(in) // less than one more slice of input alone
	for _, tc := range []struct {
		name      string
		terms     []plan.Term
		available int64
		maxSlices int64
		want      string
	}{
		{"one term", []plan.Term{{"input", in, 0}}, slices*in + spare, slices,
			fmt.Sprintf("input %d bytes per slice; %d // %d = %s", in, slices*in+spare, in, slicesText(slices))},
		{"two terms", []plan.Term{{"input", in, 0}, {"output", out, 0}}, slices*(in+out) + spare, slices,
			fmt.Sprintf("input %d + output %d = %d bytes per slice; %d // %d = %s", in, out, in+out, slices*(in+out)+spare, in+out, slicesText(slices))},
		{"a fixed term", []plan.Term{{"input", in, 0}, {"scratch", 0, scratch}}, scratch + slices*in + spare, slices,
			fmt.Sprintf("input %d bytes per slice, scratch %d bytes fixed; (%d - %d) // %d = %s", in, scratch, scratch+slices*in+spare, scratch, in, slicesText(slices))},
		{"two fixed terms", []plan.Term{{"input", in, scratch}, {"table", 0, table}}, scratch + table + slices*in, slices,
			fmt.Sprintf("input %d bytes per slice, input %d + table %d = %d bytes fixed; (%d - %d) // %d = %s",
				in, scratch, table, scratch+table, scratch+table+slices*in, scratch+table, in, slicesText(slices))},
		{"exactly the fixed bytes", []plan.Term{{"input", in, 0}, {"scratch", 0, scratch}}, scratch, 0,
			fmt.Sprintf("input %d bytes per slice, scratch %d bytes fixed; (%d - %d) // %d = 0 slices", in, scratch, scratch, scratch, in)},
		{"less than the fixed bytes", []plan.Term{{"input", in, 0}, {"scratch", 0, scratch}}, scratch - 1, 0,
			fmt.Sprintf("%d bytes available fit 0 slices", scratch-1)},
		{"nothing per slice", []plan.Term{{"scratch", 0, scratch}}, scratch + spare, 0,
			fmt.Sprintf("%d bytes available fit 0 slices", scratch+spare)},
		{"MaxInt64 bytes per slice", []plan.Term{{"input", math.MaxInt64 - in, 0}, {"output", in, 0}}, slices, 0,
			fmt.Sprintf("input %d + output %d = %d bytes per slice; %d // %d = 0 slices", int64(math.MaxInt64)-in, in, int64(math.MaxInt64), slices, int64(math.MaxInt64))},
		{"MaxInt64 bytes fixed", []plan.Term{{"input", in, math.MaxInt64 - scratch}, {"scratch", 0, scratch}}, math.MaxInt64, 0,
			fmt.Sprintf("input %d bytes per slice, input %d + scratch %d = %d bytes fixed; (%d - %d) // %d = 0 slices",
				in, int64(math.MaxInt64)-scratch, scratch, int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), in)},
		{"no terms", nil, slices * in, slices, fmt.Sprintf("%d bytes available fit %s", slices*in, slicesText(slices))},
		{"a MaxSlices the terms do not give", []plan.Term{{"input", in, 0}}, slices * in, slices + 1,
			fmt.Sprintf("%d bytes available fit %s", slices*in, slicesText(slices+1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan.Plan{Raw: true, Terms: tc.terms, Available: tc.available, MaxSlices: int(tc.maxSlices)}
			assert.Equal(t, tc.want, p.Arithmetic())
			assert.Contains(t, p.Explain(), "("+tc.want+")", "Explain shows the arithmetic")
		})
	}
}

// slicesText is how the plan writes n slices: "1 slice", "7 slices".
func slicesText(n int64) string {
	if n == 1 {
		return "1 slice"
	}
	return fmt.Sprintf("%d slices", n)
}
