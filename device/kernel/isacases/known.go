package isacases

// known marks the cases the interpreter gets wrong ("wrong: ...") or
// refuses ("refused: ...") today, by name. A mark goes when its case
// matches: the suite fails until it does.
var known = map[string]string{
	// the scalar video instructions (their operand selectors, secondary
	// operations and merges) are not run
	"int/vadd.s32.s32.s32.sat": "refused: vadd is not supported",
	"int/vabsdiff.u32.u32.u32": "refused: vabsdiff is not supported",
}
