package plan

import (
	"fmt"
	"strings"
)

// explainRaw is Explain of a raw plan: the chunks, then the arithmetic of
// MaxSlices from the terms, in httomo's words: input 800 + output 800 =
// 1600 bytes per slice; 14450 // 1600 = 9 slices.
func (p Plan) explainRaw() string {
	return fmt.Sprintf("%s on %v %v along axis %d, raw bytes (httomo's convention: unrounded, no overhead): %d chunks of at most %d slices (%s)",
		p.Method, p.Shape, p.DType, p.SliceDim, len(p.Chunks), p.largest(), p.Arithmetic())
}

// Arithmetic says how a raw plan's MaxSlices follows from its Terms and
// the memory available: "input 800 + output 800 = 1600 bytes per slice;
// 14450 // 1600 = 9 slices", with fixed bytes subtracted first when there
// are any. Without terms (a method whose allocations are not lines in
// the number of slices) it says only what fits.
func (p Plan) Arithmetic() string {
	per, fixed, ok := sums(p.Terms)
	if !ok || per <= 0 || len(p.Terms) == 0 || p.Available < fixed || (p.Available-fixed)/per != int64(p.MaxSlices) {
		return fmt.Sprintf("%d bytes available fit %d slices", p.Available, p.MaxSlices)
	}
	var perParts, fixedParts []string
	for _, t := range p.Terms {
		if t.PerSlice != 0 {
			perParts = append(perParts, fmt.Sprintf("%s %d", t.Name, t.PerSlice))
		}
		if t.Fixed != 0 {
			fixedParts = append(fixedParts, fmt.Sprintf("%s %d", t.Name, t.Fixed))
		}
	}
	var b strings.Builder
	b.WriteString(strings.Join(perParts, " + "))
	if len(perParts) > 1 {
		fmt.Fprintf(&b, " = %d", per)
	}
	b.WriteString(" bytes per slice")
	if fixed == 0 {
		fmt.Fprintf(&b, "; %d // %d = %d slices", p.Available, per, p.MaxSlices)
		return b.String()
	}
	b.WriteString(", " + strings.Join(fixedParts, " + "))
	if len(fixedParts) > 1 {
		fmt.Fprintf(&b, " = %d", fixed)
	}
	fmt.Fprintf(&b, " bytes fixed; (%d - %d) // %d = %d slices", p.Available, fixed, per, p.MaxSlices)
	return b.String()
}
