package ptx

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Load-time validation: what ptxas refuses, the interpreter refuses too,
// naming the line, rather than running it some way of its own. It checks
// an instruction's modifiers against the forms the PTX ISA gives for it
// (validMods and checkForm), and the forms that need a later target or
// PTX version than the module's .target and .version (targetReqs). It runs
// once per instruction at load, never per lane.

// parseVersion reads a .version directive's number: 7.8 gives 78.
func parseVersion(s string) int {
	maj, min, ok := strings.Cut(s, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil || b > 9 {
		return 0
	}
	return 10*a + b
}

// parseTarget reads a .target directive's architecture: sm_70 gives 70,
// sm_90a 90.
func parseTarget(s string) int {
	d, ok := strings.CutPrefix(s, "sm_")
	if !ok {
		return 0
	}
	d = strings.TrimRight(d, "af")
	n, err := strconv.Atoi(d)
	if err != nil {
		return 0
	}
	return n
}

// pairElem is one half of a d|p destination pair: "_" is a sink.
func pairElem(name string, line int) rawOp {
	if name == "_" {
		return rawOp{kind: roSink, line: line}
	}
	return rawOp{kind: roName, name: name, line: line}
}

const (
	modRnd   = "rn rz rm rp "
	modIRnd  = "rni rzi rmi rpi "
	modScope = "cta cluster gpu sys "
	modCache = "ca cg cs lu cv wb wt nc volatile weak mmio relaxed acquire release " +
		"L1::evict_normal L1::evict_unchanged L1::evict_first L1::evict_last L1::no_allocate " +
		"L2::evict_normal L2::evict_first L2::evict_last L2::64B L2::128B L2::256B "
	modCmp = "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan "
)

// validMods lists, for each instruction the interpreter decodes, the
// modifiers (type names aside) the PTX ISA gives it, the no-ops membar,
// fence, prefetch and prefetchu included. Instructions not listed here
// (the other no-ops) are not checked.
var validMods = map[string]string{
	"bra": "uni", "call": "uni", "ret": "uni", "exit": "", "trap": "",
	"bar":        "sync arrive red popc and or warp cta aligned",
	"barrier":    "sync arrive red popc and or cta aligned",
	"activemask": "",
	"shfl":       "sync idx up down bfly",
	"vote":       "sync all any uni ballot",
	"match":      "sync any all",
	"redux":      "sync add min max and or xor",
	"ld":         "global shared local param const v2 v4 " + modCache + modScope,
	"ldu":        "global v2 v4",
	"st":         "global shared local param v2 v4 " + modCache + modScope,
	"atom":       "global shared add min max exch cas and or xor inc dec relaxed acquire release acq_rel noftz " + modScope,
	"red":        "global shared add min max and or xor inc dec relaxed release noftz " + modScope,
	"mov":        "",
	"setp":       modCmp + "and or xor ftz",
	"set":        modCmp + "and or xor ftz",
	"selp":       "",
	"slct":       "ftz",
	"cvta":       "to global shared local const param",
	"isspacep":   "global shared local const param shared::cta shared::cluster param::entry",
	"addc":       "cc", "subc": "cc", "madc": "cc hi lo",
	"add": modRnd + "ftz sat cc", "sub": modRnd + "ftz sat cc",
	"mul": modRnd + "ftz sat hi lo wide", "mad": modRnd + "ftz sat hi lo wide cc",
	"mul24": "hi lo", "mad24": "hi lo sat",
	"div": modRnd + "ftz approx full", "rem": "",
	"abs": "ftz", "neg": "ftz",
	"min": "ftz NaN xorsign abs relu", "max": "ftz NaN xorsign abs relu",
	"and": "", "or": "", "xor": "", "not": "", "cnot": "",
	"shl": "", "shr": "", "popc": "", "clz": "", "brev": "", "bfind": "shiftamt",
	"bfe": "", "bfi": "", "sad": "", "fns": "",
	"prmt": "f4e b4e rc8 ecl ecr rc16",
	"shf":  "l r wrap clamp",
	"bmsk": "clamp wrap", "szext": "clamp wrap",
	"dp4a": "", "dp2a": "lo hi",
	"lop3":  "or and",
	"cvt":   modRnd + modIRnd + "ftz sat satfinite relu pack u2 s2 u4 s4",
	"fma":   modRnd + "ftz sat relu oob",
	"rcp":   modRnd + "approx ftz",
	"sqrt":  modRnd + "approx ftz",
	"rsqrt": "approx ftz",
	"ex2":   "approx ftz", "lg2": "approx ftz", "sin": "approx ftz", "cos": "approx ftz",
	"tanh":     "approx",
	"copysign": "",
	"testp":    "finite infinite number notanumber normal subnormal",
	"membar":   "cta gl sys proxy alias",
	"fence": "sc acq_rel acquire release cta cluster gpu sys proxy alias async global shared::cta shared::cluster " +
		"async::generic tensormap::generic mbarrier_init sync_restrict::shared::cta sync_restrict::shared::cluster",
	"prefetch":  "global local L1 L2 L2::evict_last L2::evict_normal tensormap const param",
	"prefetchu": "L1",
	"vadd":      "sat add min max", "vsub": "sat add min max", "vabsdiff": "sat add min max",
	"vmin": "sat add min max", "vmax": "sat add min max",
}

// validTypes lists, for the integer and bit instructions (and the
// arithmetic ones that have integer forms), the instruction types the PTX
// ISA's syntax gives them: ptxas refuses others ("Unexpected instruction
// types specified"). Instructions not listed here are not checked.
var validTypes = map[string]string{
	"add": intTypes + "f32 f64 f16 f16x2 bf16 bf16x2", "sub": intTypes + "f32 f64 f16 f16x2 bf16 bf16x2",
	"mul": intTypes + "f32 f64 f16 f16x2 bf16 bf16x2", "mad": intTypes + "f32 f64",
	"div": intTypes + "f32 f64", "rem": intTypes, "sad": intTypes,
	"min": intTypes + "f32 f64 f16 f16x2 bf16 bf16x2", "max": intTypes + "f32 f64 f16 f16x2 bf16 bf16x2",
	"abs": "s16 s32 s64 f32 f64 f16 f16x2 bf16 bf16x2", "neg": "s16 s32 s64 f32 f64 f16 f16x2 bf16 bf16x2",
	"and": "pred b16 b32 b64", "or": "pred b16 b32 b64", "xor": "pred b16 b32 b64", "not": "pred b16 b32 b64",
	"cnot": "b16 b32 b64", "shl": "b16 b32 b64", "shr": "b16 b32 b64 " + intTypes,
	"popc": "b32 b64", "clz": "b32 b64", "brev": "b32 b64", "bfi": "b32 b64",
	"bfind": "u32 u64 s32 s64", "bfe": "u32 u64 s32 s64",
	"prmt": "b32", "shf": "b32", "activemask": "b32",
	"selp": "b16 b32 b64 " + intTypes + "f32 f64", "slct": "b16 b32 b64 " + intTypes + "f32 f64",
}

// intTypes are the signed and unsigned integer types of arithmetic.
const intTypes = "u16 u32 u64 s16 s32 s64 "

// unsupportedMods are modifiers of the ISA the interpreter does not run
// on the instructions that take them (a cache-policy operand, cluster
// state spaces, vectors of eight).
var unsupportedMods = map[string]bool{"L2::cache_hint": true, "shared::cta": true, "shared::cluster": true,
	"v8": true, "unified": true, "multimem": true, "async": true, "bulk": true}

// validModSets and knownMods are validMods as sets, and every modifier
// any instruction takes.
var validModSets, knownMods = func() (map[string]map[string]bool, map[string]bool) {
	sets, known := map[string]map[string]bool{}, map[string]bool{}
	for base, list := range validMods {
		s := map[string]bool{}
		for _, m := range strings.Fields(list) {
			s[m], known[m] = true, true
		}
		sets[base] = s
	}
	return sets, known
}()

// targetReq is an instruction form that needs at least .target sm_<sm>
// and .version <ptx/10>.<ptx%10>: the ISA's "Target ISA Notes" and "PTX
// ISA Notes" for the form.
type targetReq struct {
	base string
	with []string // modifiers or types the form has (all of them)
	sm   int
	ptx  int
}

// targetReqs lists the forms the interpreter runs that need a later target
// than sm_70 or a later PTX version than 6.0 (and a few that need those).
// To add one: its base opcode, the modifiers or types that make the form,
// and the ISA's minimum target and PTX version.
var targetReqs = []targetReq{
	{"min", []string{"NaN"}, 80, 70},                  // "min.NaN requires sm_80 or higher", PTX ISA 7.0
	{"max", []string{"NaN"}, 80, 70},                  // "max.NaN requires sm_80 or higher", PTX ISA 7.0
	{"min", []string{"xorsign"}, 86, 72},              // "min.xorsign.abs requires sm_86 or higher", PTX ISA 7.2
	{"max", []string{"xorsign"}, 86, 72},              // "max.xorsign.abs requires sm_86 or higher", PTX ISA 7.2
	{"min", []string{"relu"}, 80, 70},                 // min.relu (f16, bf16) requires sm_80, PTX ISA 7.0
	{"max", []string{"relu"}, 80, 70},                 // max.relu (f16, bf16) requires sm_80, PTX ISA 7.0
	{"fma", []string{"relu"}, 80, 70},                 // fma.relu requires sm_80, PTX ISA 7.0
	{"cvt", []string{"relu"}, 80, 70},                 // cvt .relu requires sm_80, PTX ISA 7.0
	{"redux", nil, 80, 70},                            // "redux.sync requires sm_80 or higher", PTX ISA 7.0
	{"match", nil, 70, 60},                            // match.sync "Requires sm_70 or higher", PTX ISA 6.0
	{"activemask", nil, 30, 62},                       // activemask "Requires sm_30 or higher", PTX ISA 6.2
	{"fns", nil, 30, 60},                              // fns "requires sm_30 or higher", PTX ISA 6.0
	{"lop3", nil, 50, 43},                             // lop3 "requires sm_50 or higher", PTX ISA 4.3
	{"lop3", []string{"or"}, 70, 82},                  // lop3 with .BoolOp requires sm_70, PTX ISA 8.2
	{"lop3", []string{"and"}, 70, 82},                 // lop3 with .BoolOp requires sm_70, PTX ISA 8.2
	{"atom", []string{"cas", "b16"}, 70, 63},          // "atom.cas.b16 requires sm_70 or higher", PTX ISA 6.3
	{"dp4a", nil, 61, 50},                             // dp4a "Requires sm_61 or higher", PTX ISA 5.0
	{"dp2a", nil, 61, 50},                             // dp2a "Requires sm_61 or higher", PTX ISA 5.0
	{"bmsk", nil, 70, 76},                             // bmsk requires sm_70, PTX ISA 7.6
	{"szext", nil, 70, 76},                            // szext requires sm_70, PTX ISA 7.6
	{"cvt", []string{"pack"}, 72, 65},                 // cvt.pack "requires sm_72 or higher", PTX ISA 6.5
	{"tanh", nil, 75, 70},                             // tanh.approx.f32 requires sm_75, PTX ISA 7.0
	{"shfl", nil, 30, 60},                             // shfl.sync requires sm_30, PTX ISA 6.0
	{"vote", nil, 30, 60},                             // vote.sync requires sm_30, PTX ISA 6.0
	{"bar", []string{"warp"}, 30, 60},                 // bar.warp.sync requires sm_30, PTX ISA 6.0
	{"barrier", nil, 30, 60},                          // barrier requires sm_30, PTX ISA 6.0
	{"isspacep", []string{"shared::cta"}, 30, 78},     // .shared::cta qualifier: PTX ISA 7.8
	{"isspacep", []string{"shared::cluster"}, 90, 78}, // .shared::cluster requires sm_90, PTX ISA 7.8
	{"isspacep", []string{"param"}, 70, 77},           // isspacep.param requires sm_70, PTX ISA 7.7
	{"isspacep", []string{"param::entry"}, 70, 77},    // isspacep.param::entry requires sm_70, PTX ISA 7.7
	{"ld", []string{"relaxed"}, 70, 60},               // memory-consistency qualifiers: sm_70, PTX ISA 6.0
	{"ld", []string{"acquire"}, 70, 60},               //
	{"st", []string{"relaxed"}, 70, 60},               //
	{"st", []string{"release"}, 70, 60},               //
	{"ld", []string{"L2::256B"}, 80, 74},              // .L2::256B prefetch size requires sm_80, PTX ISA 7.4
	{"ld", []string{"L2::64B"}, 75, 74},               // .L2::64B requires sm_75, PTX ISA 7.4
	{"ld", []string{"L2::128B"}, 75, 74},              // .L2::128B requires sm_75, PTX ISA 7.4
	{"fence", nil, 70, 60},                            // fence requires sm_70, PTX ISA 6.0
	{"fence", []string{"proxy", "alias"}, 70, 75},     // fence.proxy.alias requires sm_70, PTX ISA 7.5
	{"membar", []string{"proxy"}, 70, 75},             // membar.proxy requires sm_70, PTX ISA 7.5
	{"fence", []string{"cluster"}, 90, 78},            // the .cluster scope requires sm_90, PTX ISA 7.8
	{"fence", []string{"async"}, 90, 80},              // fence.proxy.async requires sm_90, PTX ISA 8.0
	{"fence", []string{"mbarrier_init"}, 90, 80},      // fence.mbarrier_init requires sm_90, PTX ISA 8.0
	{"fence", []string{"tensormap::generic"}, 90, 83}, // fence.proxy.tensormap::generic requires sm_90, PTX ISA 8.3
	{"prefetch", []string{"L2::evict_last"}, 80, 74},  // prefetch's .L2::evict_* require sm_80, PTX ISA 7.4
	{"prefetch", []string{"L2::evict_normal"}, 80, 74},
	{"prefetch", []string{"tensormap"}, 90, 80}, // prefetch.tensormap requires sm_90, PTX ISA 8.0
	{"nanosleep", nil, 70, 63},                  // nanosleep requires sm_70, PTX ISA 6.3
	{"griddepcontrol", nil, 90, 78},             // griddepcontrol requires sm_90, PTX ISA 7.8
}

// validate checks an instruction's modifiers, its form and its target
// before it is decoded.
func (b *builder) validate(ri rawInst, base string, parts []string, m mods) error {
	if set, ok := validModSets[base]; ok {
		for _, p := range parts {
			if _, isType := typNames[p]; isType || set[p] {
				continue
			}
			if unsupportedMods[p] {
				return errf(ri.line, "%s: .%s is not supported on %s", ri.opcode, p, base)
			}
			if !knownMods[p] && !ignoredMods[p] {
				return errf(ri.line, "%s: unknown modifier .%s", ri.opcode, p)
			}
			return errf(ri.line, "%s: .%s does not apply to %s", ri.opcode, p, base)
		}
		if err := checkForm(base, parts, m); err != nil {
			return errf(ri.line, "%s: %v", ri.opcode, err)
		}
	}
	return b.checkTarget(ri, base, parts)
}

// checkTarget refuses a form that needs a later .target or .version than
// the module's (a module without them is not checked).
func (b *builder) checkTarget(ri rawInst, base string, parts []string) error {
	sm, ver := b.m.sm, b.m.ptxVersion
	for _, r := range targetReqs {
		if r.base != base || !hasAll(parts, r.with) {
			continue
		}
		form := strings.Join(append([]string{base}, r.with...), ".")
		if sm != 0 && sm < r.sm {
			return errf(ri.line, "%s: %s requires .target sm_%d or higher (the module's is sm_%d)", ri.opcode, form, r.sm, sm)
		}
		if ver != 0 && ver < r.ptx {
			return errf(ri.line, "%s: %s requires .version %d.%d or higher (the module's is %d.%d)", ri.opcode, form, r.ptx/10, r.ptx%10, ver/10, ver%10)
		}
	}
	return nil
}

func hasAll(parts, with []string) bool {
	for _, w := range with {
		found := false
		for _, p := range parts {
			if p == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// checkForm checks the modifiers against the instruction's types: the
// forms of the PTX ISA's syntax for it.
func checkForm(base string, parts []string, m mods) error {
	t := tNone
	if len(m.types) > 0 {
		t = m.types[0]
	}
	has := func(s string) bool { return hasAll(parts, []string{s}) }
	if list, ok := validTypes[base]; ok && t != tNone && !slices.Contains(strings.Fields(list), typName(t)) {
		return fmt.Errorf("%s takes .%s, not .%s", base, strings.Join(strings.Fields(list), ", ."), typName(t))
	}
	isF32 := t == tF32
	half := t == tF16 || t == tF16x2 || t == tBF16 || t == tBF16x2
	fl := t.float() || half
	switch base {
	case "add", "sub", "mul", "mad", "fma", "div", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "abs", "neg", "min", "max":
		if m.rnd != rnDefault && !m.intRnd && !fl {
			return fmt.Errorf("a rounding modifier needs a floating-point type")
		}
		if m.ftz && !isF32 && !half {
			// rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 are the f64 forms with .ftz
			if !(t == tF64 && m.approx && (base == "rcp" || base == "rsqrt")) {
				return fmt.Errorf(".ftz needs .f32")
			}
		}
		if m.sat {
			switch {
			case base == "add" || base == "sub":
				if t != tS32 && !isF32 && !half {
					return fmt.Errorf(".sat needs .s32 or .f32")
				}
			case base == "mad":
				if !isF32 && !(t == tS32 && has("hi")) {
					return fmt.Errorf(".sat needs .f32, or .hi with .s32")
				}
			case base == "mul" || base == "fma":
				if !isF32 && !half {
					return fmt.Errorf(".sat needs .f32")
				}
			default:
				return fmt.Errorf(".sat does not apply")
			}
		}
	}
	switch base {
	case "fma":
		if fl && m.rnd == rnDefault {
			return fmt.Errorf("fma needs a rounding modifier")
		}
	case "mad":
		if t == tF64 && m.rnd == rnDefault {
			return fmt.Errorf("mad.f64 needs a rounding modifier")
		}
	case "div":
		if (m.approx || m.full) && !isF32 {
			return fmt.Errorf(".approx and .full need .f32")
		}
		if t == tF64 && m.rnd == rnDefault {
			return fmt.Errorf("div.f64 needs a rounding modifier")
		}
	case "rcp", "sqrt":
		switch {
		case m.approx && m.rnd != rnDefault:
			return fmt.Errorf(".approx with a rounding modifier")
		case t == tF64 && m.approx && !(base == "rcp" && m.ftz):
			return fmt.Errorf("%s.approx needs .f32 (rcp.approx.ftz.f64 aside)", base)
		case fl && !m.approx && m.rnd == rnDefault:
			return fmt.Errorf("%s needs .approx or a rounding modifier", base)
		}
	case "rsqrt", "ex2", "lg2", "sin", "cos", "tanh":
		if !m.approx {
			return fmt.Errorf("%s needs .approx", base)
		}
		if t == tF64 && base != "rsqrt" {
			return fmt.Errorf("%s.approx needs .f32", base)
		}
	case "min", "max":
		switch {
		case has("NaN") && !isF32 && !half:
			return fmt.Errorf(".NaN needs .f32")
		case has("xorsign") && (!has("abs") || !(isF32 || half)):
			return fmt.Errorf(".xorsign needs .abs and .f32, .f16, .f16x2, .bf16 or .bf16x2")
		case has("abs") && !has("xorsign"):
			return fmt.Errorf(".abs without .xorsign (the three-operand form) is not supported")
		case has("relu") && !half:
			return fmt.Errorf(".relu with .%s is not supported", typName(t))
		}
	case "setp", "set":
		st := t
		if base == "set" {
			if len(m.types) != 2 {
				return fmt.Errorf("set needs a destination and a source type")
			}
			src := m.types[1]
			switch {
			case halfType(src):
				// the ISA's half-precision set: .dtype .u16, .s16, .u32, .s32, .f16 or .bf16 for a
				// scalar source; .u32, .s32, .f16x2 or .bf16x2 for a packed one
				ok := t == tU32 || t == tS32
				if src == tF16 || src == tBF16 {
					ok = ok || t == tU16 || t == tS16 || t == tF16 || t == tBF16
				} else {
					ok = ok || t == tF16x2 || t == tBF16x2
				}
				if !ok {
					return fmt.Errorf("set's destination type for a .%s source is not .%s", typName(src), typName(t))
				}
			case t != tU32 && t != tS32 && t != tF32:
				return fmt.Errorf("set's destination type is .u32, .s32 or .f32")
			}
			st = m.types[1]
		}
		if m.ftz && st != tF32 && st != tF16 && st != tF16x2 {
			return fmt.Errorf(".ftz needs .f32 operands")
		}
		switch m.cmp {
		case "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs":
			if st == tB16 || st == tB32 || st == tB64 || st == tB8 {
				return fmt.Errorf("ordered comparison .%s of bit-size type .%s: it needs a signed, unsigned or floating-point type", m.cmp, typName(st))
			}
		case "":
			return fmt.Errorf("needs a comparison")
		}
	case "slct":
		// "slct.dtype.s32 d, a, b, c", "slct{.ftz}.dtype.f32 d, a, b, c"
		if len(m.types) != 2 || m.types[1] != tS32 && m.types[1] != tF32 {
			return fmt.Errorf("slct's selector c is .s32 or .f32")
		}
	case "shf":
		// "shf.l.mode.b32", "shf.r.mode.b32": the direction and the mode are required
		if has("l") == has("r") || has("clamp") == has("wrap") {
			return fmt.Errorf("shf needs one of .l and .r and one of .clamp and .wrap")
		}
	case "membar":
		// "membar.level", .level = { .cta, .gl, .sys }; "membar.proxy.proxykind"
		if n := len(parts); n == 0 || n == 1 && !has("cta") && !has("gl") && !has("sys") || n == 2 && !(has("proxy") && has("alias")) || n > 2 {
			return fmt.Errorf("membar needs one level of .cta, .gl and .sys, or .proxy.alias")
		}
	case "prefetch", "prefetchu":
		// "prefetch{.space}.level [a]", "prefetchu.L1 [a]": the level is required
		if !has("L1") && !has("L2") && !has("L2::evict_last") && !has("L2::evict_normal") && !has("tensormap") {
			return fmt.Errorf("%s needs a level (.L1 or .L2)", base)
		}
	case "bmsk", "szext":
		// "bmsk.mode.b32", "szext.mode.type": the mode is required
		if has("clamp") == has("wrap") {
			return fmt.Errorf("%s needs one of .clamp and .wrap", base)
		}
	case "dp2a":
		// "dp2a.mode.atype.btype": the mode is required
		if has("lo") == has("hi") {
			return fmt.Errorf("dp2a needs one of .lo and .hi")
		}
	case "mad24", "mul24":
		if has("lo") == has("hi") {
			return fmt.Errorf("%s needs one of .lo and .hi", base)
		}
	case "cvt":
		if has("relu") && (len(m.types) == 0 || !halfType(m.types[0])) {
			// the ISA's cvt: ".relu ... applies to .f16, .f16x2, .bf16, .bf16x2" destinations
			return fmt.Errorf(".relu on cvt needs a .f16, .f16x2, .bf16 or .bf16x2 destination")
		}
		if len(m.types) == 2 {
			dt, st := m.types[0], m.types[1]
			dF, sF := dt.float() || dt == tF16x2 || dt == tBF16x2, st.float()
			switch {
			case m.intRnd && !sF:
				return fmt.Errorf("integer rounding .%s of an integer source: the ISA allows it for float-to-integer and float-to-float conversions only", rndName(m.rnd, true))
			case m.intRnd && dF && dt.size() != st.size():
				return fmt.Errorf("integer rounding .%s between floating-point types of different sizes", rndName(m.rnd, true))
			case !m.intRnd && m.rnd != rnDefault && !dF:
				return fmt.Errorf("floating-point rounding .%s to an integer type: it needs .rni, .rzi, .rmi or .rpi", rndName(m.rnd, false))
			}
		}
	}
	return nil
}

func rndName(r uint8, integer bool) string {
	s := map[uint8]string{rnNear: "rn", rnZero: "rz", rnDown: "rm", rnUp: "rp"}[r]
	if integer {
		s += "i"
	}
	return s
}

// halfType reports whether t is a half-precision type, scalar or packed.
func halfType(t typ) bool { return t == tF16 || t == tF16x2 || t == tBF16 || t == tBF16x2 }
