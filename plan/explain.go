package plan

import (
	"fmt"
	"strings"
)

// explainRaw is Explain of a raw plan: the chunks, then the arithmetic of
// MaxSlices from the terms, in httomo's words: input 800 + output 800 =
// 1600 bytes per slice; 14450 // 1600 = 9 slices.
func (p Plan) explainRaw() string {
	return fmt.Sprintf("%s on %v %v along axis %d, raw bytes (httomo's convention: unrounded, no overhead): %s of at most %s (%s)",
		p.Method, p.Shape, p.DType, p.SliceDim, count(len(p.Chunks), "chunk"), count(p.largest(), "slice"), p.Arithmetic())
}

// Arithmetic says how a raw plan's MaxSlices follows from its Terms and
// the memory available: "input 800 + output 800 = 1600 bytes per slice;
// 14450 // 1600 = 9 slices", with fixed bytes subtracted first when there
// are any. Without terms (a method whose allocations are not lines in
// the number of slices) it says only what fits.
func (p Plan) Arithmetic() string {
	per, fixed, ok := sums(p.Terms)
	if !ok || per <= 0 || len(p.Terms) == 0 || p.Available < fixed || (p.Available-fixed)/per != int64(p.MaxSlices) {
		return fmt.Sprintf("%d bytes available fit %s", p.Available, count(p.MaxSlices, "slice"))
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
		fmt.Fprintf(&b, "; %d // %d = %s", p.Available, per, count(p.MaxSlices, "slice"))
		return b.String()
	}
	b.WriteString(", " + strings.Join(fixedParts, " + "))
	if len(fixedParts) > 1 {
		fmt.Fprintf(&b, " = %d", fixed)
	}
	fmt.Fprintf(&b, " bytes fixed; (%d - %d) // %d = %s", p.Available, fixed, per, count(p.MaxSlices, "slice"))
	return b.String()
}

// count writes n things: "1 slice", "3 slices".
func count(n int, thing string) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d %s", n, thing)
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
