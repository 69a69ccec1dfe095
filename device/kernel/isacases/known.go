package isacases

// known marks the cases the interpreter gets wrong ("wrong: ...") or
// refuses ("refused: ...") today, by name. A mark goes when its case
// matches: the suite fails until it does.
var known = map[string]string{
	"int/mad.hi.sat.s32 overflow":           "refused: mad.sat is not supported",
	"int/mad.hi.sat.s32 in range":           "refused: mad.sat is not supported",
	"float/sqrt.rz.f64 1e-323":              "wrong: got 0x1e66a09e667f3bcd (rounded up, to nearest) for a subnormal input",
	"float/sqrt.rm.f64 1e-323":              "wrong: got 0x1e66a09e667f3bcd (rounded up, to nearest) for a subnormal input",
	"float/add.rn.sat.f32 -0":               "wrong: got 0x80000000: -0.0 is kept",
	"compare/set.ne.and.u32.s32":            "refused: set with a predicate operand",
	"compare/set.ne.or.u32.s32 !c":          "refused: set with a predicate operand",
	"compare/slct.ftz.f32.f32 c=-subnormal": "wrong: got b (2.0): .ftz does not flush c",
	"bit/lop3.b32 a&b&c":                    "refused: unsupported instruction lop3.b32",
	"bit/lop3.b32 a|b|c":                    "refused: unsupported instruction lop3.b32",
	"bit/lop3.b32 a^b^c":                    "refused: unsupported instruction lop3.b32",
	"bit/lop3.b32 (a&b)|(~a&c)":             "refused: unsupported instruction lop3.b32",
	"bit/lop3.b32 ~(a|b)&c":                 "refused: unsupported instruction lop3.b32",
	"bit/lop3.b32 0":                        "refused: unsupported instruction lop3.b32",
	"bit/lop3.b32 1":                        "refused: unsupported instruction lop3.b32",
	"bit/lop3.b32 b":                        "refused: unsupported instruction lop3.b32",
	"warp/match.any.sync.b32 groups of 4":   "refused: unsupported instruction match.any.sync.b32",
	"warp/match.all.sync.b32 all equal":     "refused: unsupported instruction match.all.sync.b32",
	"warp/match.all.sync.b32 differ":        "refused: unsupported instruction match.all.sync.b32",
	"warp/match.any.sync.b64 after exits":   "refused: unsupported instruction match.any.sync.b64",
	"warp/redux.sync.add.u32":               "refused: unsupported instruction redux.sync.add.u32",
	"warp/redux.sync.min.s32":               "refused: unsupported instruction redux.sync.min.s32",
	"warp/redux.sync.max.u32 after exits":   "refused: unsupported instruction redux.sync.max.u32",
	"warp/redux.sync.or.b32":                "refused: unsupported instruction redux.sync.or.b32",
	"warp/redux.sync.xor.b32 divergent":     "refused: unsupported instruction redux.sync.xor.b32",
}
