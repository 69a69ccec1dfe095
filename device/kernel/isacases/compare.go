package isacases

import (
	"fmt"
	"math"
)

const (
	isaSetpInt   = "setp: Compares two values and combines the result with another predicate value by applying a Boolean operator. Integer comparisons: eq, ne, lt, le, gt, ge (signed); lo, ls, hi, hs (unsigned: lower, lower-or-same, higher, higher-or-same)."
	isaSetpOrd   = "Floating-point comparison operators eq, ne, lt, le, gt, ge: if either operand is NaN, the result is False."
	isaSetpUnord = "To aid comparison operations in the presence of NaN values, unordered versions are included: equ, neu, ltu, leu, gtu, geu. If both operands are numeric values (not NaN), then the comparison has the same result as its ordered counterpart. If either operand is NaN, then the result of the comparison is True. num returns True if both operands are numeric values (not NaN), and nan returns True if either operand is NaN."
	isaSetpBool  = "setp.CmpOp.BoolOp: p = BoolOp(t, c), q = BoolOp(!t, c), where t is the comparison's result."
	isaSet       = "set: Compares two numeric values and optionally combines the result with another predicate value by applying a Boolean operator. If this result is True, 1.0f is written for floating-point destination types, and 0xffffffff is written for integer destination types. Otherwise, 0x00000000 is written."
	isaSelp      = "selp: Conditional selection. If c is True, a is stored in d, b otherwise."
	isaSlct      = "slct: Conditional selection. If c >= 0, a is stored in d, otherwise b is stored in d. For .f32 comparisons, negative zero equals zero."
	isaTestp     = "testp: Test a floating-point value for a property: .finite (not infinity, not NaN), .infinite, .number (not NaN), .notanumber, .normal (a normal number, not zero), .subnormal."
)

// cmpFloat is PTX's comparison cmp of a and b.
func cmpFloat(cmp string, a, b float64) bool {
	nan := math.IsNaN(a) || math.IsNaN(b)
	switch cmp {
	case "num":
		return !nan
	case "nan":
		return nan
	}
	if nan {
		return len(cmp) == 3 && cmp[2] == 'u'
	}
	switch cmp[:2] {
	case "eq":
		return a == b
	case "ne":
		return a != b
	case "lt":
		return a < b
	case "le":
		return a <= b
	case "gt":
		return a > b
	}
	return a >= b
}

func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

func compareCases() []Case {
	var cs []Case
	fcmps := []string{"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}
	nan := math.NaN()
	for _, c := range fcmps {
		isa := isaSetpOrd
		if len(c) == 3 {
			isa = isaSetpUnord
		}
		for _, p := range [][2]float64{{1, 2}, {math.Copysign(0, -1), 0}, {nan, 1}} {
			cs = append(cs, ins("compare", fmt.Sprintf("setp.%s.f32 %v,%v", c, p[0], p[1]), isa,
				fmt.Sprintf("setp.%s.f32 %%d, %%a, %%b", c), "pred", []string{"f32", "f32"},
				[]uint64{b32(float32(p[0])), b32(float32(p[1]))}, b2u(cmpFloat(c, p[0], p[1]))))
		}
		for _, p := range [][2]float64{{math.Inf(-1), 1}, {2, nan}} {
			cs = append(cs, ins("compare", fmt.Sprintf("setp.%s.f64 %v,%v", c, p[0], p[1]), isa,
				fmt.Sprintf("setp.%s.f64 %%d, %%a, %%b", c), "pred", []string{"f64", "f64"},
				[]uint64{b64(p[0]), b64(p[1])}, b2u(cmpFloat(c, p[0], p[1]))))
		}
	}
	// integers: signed and unsigned readings of the same bits
	icmp := func(cmp string, a, b int64, ua, ub uint64) bool {
		switch cmp {
		case "eq":
			return a == b
		case "ne":
			return a != b
		case "lt":
			return a < b
		case "le":
			return a <= b
		case "gt":
			return a > b
		case "ge":
			return a >= b
		case "lo":
			return ua < ub
		case "ls":
			return ua <= ub
		case "hi":
			return ua > ub
		}
		return ua >= ub
	}
	for _, t := range []string{"s32", "u32", "s16", "u64", "s64", "b32"} {
		w := width(t)
		cmps := []string{"eq", "ne", "lt", "le", "gt", "ge"}
		switch t[0] {
		case 'u':
			cmps = []string{"lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"}
		case 'b':
			cmps = []string{"eq", "ne"}
		}
		a, b := mask(w), uint64(1) // -1 and 1
		for _, c := range cmps {
			sa, sb := int64(extend(a, w, true)), int64(b)
			if t[0] == 'u' {
				sa, sb = int64(a), 1 // unsigned lt..ge compare as unsigned too
				if w == 64 {
					sa = math.MaxInt64
				}
			}
			cs = append(cs, ins("compare", fmt.Sprintf("setp.%s.%s -1,1", c, t), isaSetpInt,
				fmt.Sprintf("setp.%s.%s %%d, %%a, %%b", c, t), "pred", []string{t, t}, []uint64{a, b}, b2u(icmp(c, sa, sb, a, b))))
		}
	}
	f2 := []string{"f32", "f32"}
	cs = append(cs,
		// the predicate combinations, and the complement predicate
		ins("compare", "setp.lt.and.s32 true and false", isaSetpBool, "setp.ne.s32 %q, 0, 0; setp.lt.and.s32 %d, %a, %b, %q", "pred", []string{"s32", "s32"}, []uint64{1, 2}, 0),
		ins("compare", "setp.lt.or.s32 false or true", isaSetpBool, "setp.eq.s32 %q, 0, 0; setp.lt.or.s32 %d, %a, %b, %q", "pred", []string{"s32", "s32"}, []uint64{3, 2}, 1),
		ins("compare", "setp.lt.xor.s32 true xor true", isaSetpBool, "setp.eq.s32 %q, 0, 0; setp.lt.xor.s32 %d, %a, %b, %q", "pred", []string{"s32", "s32"}, []uint64{1, 2}, 0),
		ins("compare", "setp.lt.and.s32 !c", isaSetpBool, "setp.eq.s32 %q, 0, 0; setp.lt.and.s32 %d, %a, %b, !%q", "pred", []string{"s32", "s32"}, []uint64{1, 2}, 0),
		ins("compare", "setp p|q second is the complement", isaSetpBool, "setp.eq.s32 %q, 0, 0; setp.lt.and.f32 %p|%d, %a, %b, %q", "pred", f2, []uint64{b32(1), b32(2)}, 0),
		ins("compare", "setp.gtu p|q with NaN", isaSetpBool, "setp.eq.s32 %q, 0, 0; setp.gtu.and.f32 %p|%d, %a, %b, %q", "pred", f2, []uint64{nan32, b32(2)}, 0),
		ins("compare", "setp.ltu.or.f32 NaN", isaSetpBool, "setp.eq.s32 %q, 0, 1; setp.ltu.or.f32 %d, %a, %b, %q", "pred", f2, []uint64{b32(3), nan32}, 1),
		// set
		ins("compare", "set.lt.u32.f32 true", isaSet, "set.lt.u32.f32 %d, %a, %b", "u32", f2, []uint64{b32(1), b32(2)}, 0xffffffff),
		ins("compare", "set.lt.u32.f32 NaN", isaSet, "set.lt.u32.f32 %d, %a, %b", "u32", f2, []uint64{nan32, b32(2)}, 0),
		ins("compare", "set.ltu.s32.f32 NaN", isaSet, "set.ltu.s32.f32 %d, %a, %b", "s32", f2, []uint64{nan32, b32(2)}, 0xffffffff),
		ins("compare", "set.gt.f32.s32 true", isaSet, "set.gt.f32.s32 %d, %a, %b", "f32", []string{"s32", "s32"}, []uint64{1, 0xffffffff}, b32(1)),
		ins("compare", "set.hi.f32.u32 false", isaSet, "set.hi.f32.u32 %d, %a, %b", "f32", []string{"u32", "u32"}, []uint64{1, 0xffffffff}, 0),
		ins("compare", "set.eq.u32.f64 -0,+0", isaSet, "set.eq.u32.f64 %d, %a, %b", "u32", []string{"f64", "f64"}, []uint64{neg64, 0}, 0xffffffff),
		ins("compare", "set.ne.and.u32.s32", isaSet, "setp.eq.s32 %q, 0, 1; set.ne.and.u32.s32 %d, %a, %b, %q", "u32", []string{"s32", "s32"}, []uint64{1, 2}, 0),
		ins("compare", "set.ne.or.u32.s32 !c", isaSet, "setp.eq.s32 %q, 0, 1; set.ne.or.u32.s32 %d, %a, %b, !%q", "u32", []string{"s32", "s32"}, []uint64{1, 1}, 0xffffffff),
		// selp, slct
		ins("compare", "selp.b32 true", isaSelp, "setp.eq.s32 %p, 0, 0; selp.b32 %d, %a, %b, %p", "b32", []string{"b32", "b32"}, []uint64{7, 9}, 7),
		ins("compare", "selp.f64 false", isaSelp, "setp.eq.s32 %p, 0, 1; selp.f64 %d, %a, %b, %p", "f64", []string{"f64", "f64"}, []uint64{b64(1), b64(2)}, b64(2)),
		ins("compare", "selp.u16 false", isaSelp, "setp.eq.s32 %p, 0, 1; selp.u16 %d, %a, %b, %p", "u16", []string{"u16", "u16"}, []uint64{7, 0xfffe}, 0xfffe),
		ins("compare", "slct.s32.s32 c=0", isaSlct, "slct.s32.s32 %d, %a, %b, %c", "s32", []string{"s32", "s32", "s32"}, []uint64{7, 9, 0}, 7),
		ins("compare", "slct.s32.s32 c=-1", isaSlct, "slct.s32.s32 %d, %a, %b, %c", "s32", []string{"s32", "s32", "s32"}, []uint64{7, 9, 0xffffffff}, 9),
		ins("compare", "slct.u32.f32 c=-0", isaSlct, "slct.u32.f32 %d, %a, %b, %c", "u32", []string{"u32", "u32", "f32"}, []uint64{7, 9, neg32}, 7),
		ins("compare", "slct.f32.f32 c=-1e-30", isaSlct, "slct.f32.f32 %d, %a, %b, %c", "f32", []string{"f32", "f32", "f32"}, []uint64{b32(1), b32(2), b32(-1e-30)}, b32(2)),
		ins("compare", "slct.ftz.f32.f32 c=-subnormal", isaSlct+" .ftz: subnormal c is flushed to sign-preserving zero (so -subnormal counts as zero).", "slct.ftz.f32.f32 %d, %a, %b, %c", "f32", []string{"f32", "f32", "f32"}, []uint64{b32(1), b32(2), 0x80000001}, b32(1)),
		ins("compare", "slct.f32.f32 c=-subnormal", isaSlct, "slct.f32.f32 %d, %a, %b, %c", "f32", []string{"f32", "f32", "f32"}, []uint64{b32(1), b32(2), 0x80000001}, b32(2)),
		ins("compare", "slct.s64.s32 c=MIN", isaSlct, "slct.s64.s32 %d, %a, %b, %c", "s64", []string{"s64", "s64", "s32"}, []uint64{1, 2, 0x80000000}, 2),
	)
	// testp
	type tp struct {
		x    uint64
		f    string
		desc string
	}
	props := []string{"finite", "infinite", "number", "notanumber", "normal", "subnormal"}
	for _, v := range []tp{{0, "f32", "+0"}, {0x00000001, "f32", "subnormal"}, {0x00800000, "f32", "min normal"}, {ninf32, "f32", "-Inf"}, {nan32, "f32", "NaN"},
		{neg64, "f64", "-0"}, {0x000fffffffffffff, "f64", "subnormal"}, {inf64, "f64", "+Inf"}} {
		for i, p := range props {
			var x float64
			if v.f == "f32" {
				x = float64(f32(v.x))
			} else {
				x = f64(v.x)
			}
			if (i+len(v.desc))%2 == 0 && v.desc != "NaN" && v.desc != "subnormal" {
				continue
			}
			sub := x != 0 && math.Abs(x) < map[string]float64{"f32": 0x1p-126, "f64": 0x1p-1022}[v.f]
			want := map[string]bool{
				"finite": !math.IsInf(x, 0) && !math.IsNaN(x), "infinite": math.IsInf(x, 0),
				"number": !math.IsNaN(x), "notanumber": math.IsNaN(x),
				"normal": !math.IsInf(x, 0) && !math.IsNaN(x) && x != 0 && !sub, "subnormal": sub,
			}[p]
			cs = append(cs, ins("compare", fmt.Sprintf("testp.%s.%s %s", p, v.f, v.desc), isaTestp,
				fmt.Sprintf("testp.%s.%s %%d, %%a", p, v.f), "pred", []string{v.f}, []uint64{v.x}, b2u(want)))
		}
	}
	return cs
}
