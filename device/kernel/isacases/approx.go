package isacases

const (
	isaRcpApprox   = "rcp.approx.f32: Input -Inf gives -0.0, -0.0 gives -Inf, +0.0 gives +Inf, +Inf gives +0.0, NaN gives NaN; .ftz flushes subnormal inputs to sign-preserving zero."
	isaRcpApproxD  = "rcp.approx.ftz.f64: d = 1/a (approximate); the special values are those of rcp: ±0 gives ±Inf, ±Inf gives ±0, NaN gives NaN."
	isaSqrtApprox  = "sqrt.approx.f32: Input -Inf gives NaN, -normal gives NaN, -0.0 gives -0.0, +0.0 gives +0.0, +Inf gives +Inf, NaN gives NaN; .ftz flushes subnormal inputs to sign-preserving zero."
	isaRsqrtApprox = "rsqrt.approx: d = 1/sqrt(a). Input -Inf gives NaN, -normal gives NaN, -0.0 gives -Inf, +0.0 gives +Inf, +Inf gives +0.0, NaN gives NaN."
	isaSinApprox   = "sin.approx.f32: Input -Inf gives NaN, -0.0 gives -0.0, +0.0 gives +0.0, +Inf gives NaN, NaN gives NaN."
	isaCosApprox   = "cos.approx.f32: Input -Inf gives NaN, -0.0 gives +1.0, +0.0 gives +1.0, +Inf gives NaN, NaN gives NaN."
	isaLg2Approx   = "lg2.approx.f32: Input -Inf gives NaN, -normal gives NaN, -0.0 gives -Inf, +0.0 gives -Inf, +Inf gives +Inf, NaN gives NaN."
	isaEx2Approx   = "ex2.approx.f32: Input -Inf gives +0.0, -0.0 gives +1.0, +0.0 gives +1.0, +Inf gives +Inf, NaN gives NaN."
	isaDivApprox   = "div.approx.f32 implements a fast approximation to divide, computed as d = a * (1/b); div.full.f32 implements a relatively fast, full-range approximation that scales operands to achieve better accuracy. (IEEE special values: x/±0 is ±Inf for finite nonzero x, 0/0 and Inf/Inf are NaN, finite/Inf is ±0.)"
	isaApproxNaN   = " (The NaN's bits the ISA leaves open: the interpreter gives the canonical NaN.)"
)

func approxCases() []Case {
	var cs []Case
	type sv struct {
		name string
		in   uint64
		want uint64
	}
	run := func(insn, isa string, ty string, vals []sv) {
		for _, v := range vals {
			c := ins("approx", insn+" "+v.name, isa, insn+" %d, %a", ty, []string{ty}, []uint64{v.in}, v.want)
			if v.want == nan32 || v.want == nan64 {
				c.ISA += isaApproxNaN
				c = open(c)
			}
			cs = append(cs, c)
		}
	}
	sub, nsub := uint64(0x00000001), uint64(0x80000001)
	one32 := b32(1)
	run("rcp.approx.f32", isaRcpApprox, "f32", []sv{{"+0", 0, inf32}, {"-0", neg32, ninf32}, {"+Inf", inf32, 0}, {"-Inf", ninf32, neg32}, {"NaN", 0x7fc00000, nan32}, {"least subnormal", sub, inf32}})
	run("rcp.approx.ftz.f32", isaRcpApprox, "f32", []sv{{"subnormal", 0x00400000, inf32}, {"-subnormal", nsub, ninf32}, {"-0", neg32, ninf32}})
	run("rcp.approx.ftz.f64", isaRcpApproxD, "f64", []sv{{"+0", 0, inf64}, {"-0", neg64, ninf64}, {"+Inf", inf64, 0}, {"-Inf", ninf64, neg64}, {"NaN", 0x7ff8000000000000, 0x7fffffff00000000}})
	run("sqrt.approx.f32", isaSqrtApprox, "f32", []sv{{"+0", 0, 0}, {"-0", neg32, neg32}, {"+Inf", inf32, inf32}, {"-Inf", ninf32, nan32}, {"-1", b32(-1), nan32}, {"NaN", 0xffc00000, nan32}})
	run("sqrt.approx.ftz.f32", isaSqrtApprox, "f32", []sv{{"-subnormal", nsub, neg32}, {"subnormal", 0x007fffff, 0}})
	run("rsqrt.approx.f32", isaRsqrtApprox, "f32", []sv{{"+0", 0, inf32}, {"-0", neg32, ninf32}, {"+Inf", inf32, 0}, {"-Inf", ninf32, nan32}, {"-4", b32(-4), nan32}, {"NaN", nan32, nan32}})
	run("rsqrt.approx.ftz.f32", isaRsqrtApprox, "f32", []sv{{"subnormal", sub, inf32}, {"-subnormal", nsub, ninf32}})
	run("rsqrt.approx.f64", isaRsqrtApprox, "f64", []sv{{"+0", 0, inf64}, {"-0", neg64, ninf64}, {"+Inf", inf64, 0}, {"-1", b64(-1), nan64}})
	run("sin.approx.f32", isaSinApprox, "f32", []sv{{"+0", 0, 0}, {"-0", neg32, neg32}, {"+Inf", inf32, nan32}, {"-Inf", ninf32, nan32}, {"NaN", nan32, nan32}})
	run("sin.approx.ftz.f32", isaSinApprox, "f32", []sv{{"-subnormal", nsub, neg32}})
	run("cos.approx.f32", isaCosApprox, "f32", []sv{{"+0", 0, one32}, {"-0", neg32, one32}, {"+Inf", inf32, nan32}, {"-Inf", ninf32, nan32}, {"NaN", nan32, nan32}})
	run("cos.approx.ftz.f32", isaCosApprox, "f32", []sv{{"subnormal", sub, one32}})
	run("lg2.approx.f32", isaLg2Approx, "f32", []sv{{"+0", 0, ninf32}, {"-0", neg32, ninf32}, {"+Inf", inf32, inf32}, {"-Inf", ninf32, nan32}, {"-1", b32(-1), nan32}, {"NaN", nan32, nan32}})
	run("lg2.approx.ftz.f32", isaLg2Approx, "f32", []sv{{"subnormal", sub, ninf32}, {"-subnormal", nsub, ninf32}})
	run("ex2.approx.f32", isaEx2Approx, "f32", []sv{{"+0", 0, one32}, {"-0", neg32, one32}, {"+Inf", inf32, inf32}, {"-Inf", ninf32, 0}, {"NaN", nan32, nan32}})
	run("ex2.approx.ftz.f32", isaEx2Approx, "f32", []sv{{"-subnormal", nsub, one32}, {"subnormal", sub, one32}})
	f2 := []string{"f32", "f32"}
	for _, op := range []string{"div.approx.f32", "div.full.f32", "div.approx.ftz.f32", "div.full.ftz.f32"} {
		for _, v := range []struct {
			name string
			a, b uint64
			want uint64
		}{{"1/+0", one32, 0, inf32}, {"-1/+0", b32(-1), 0, ninf32}, {"0/0", 0, 0, nan32}, {"Inf/Inf", inf32, inf32, nan32}, {"-3/Inf", b32(-3), inf32, neg32}} {
			c := ins("approx", op+" "+v.name, isaDivApprox, op+" %d, %a, %b", "f32", f2, []uint64{v.a, v.b}, v.want)
			if v.want == nan32 {
				c.ISA += isaApproxNaN
				c = open(c)
			}
			cs = append(cs, c)
		}
	}
	cs = append(cs,
		ins("approx", "div.approx.ftz.f32 subnormal/1", isaDivApprox+" .ftz flushes subnormal inputs and results to sign-preserving zero.", "div.approx.ftz.f32 %d, %a, %b", "f32", f2, []uint64{nsub, one32}, neg32),
		ins("approx", "div.full.ftz.f32 subnormal/1", isaDivApprox+" .ftz flushes subnormal inputs and results to sign-preserving zero.", "div.full.ftz.f32 %d, %a, %b", "f32", f2, []uint64{sub, one32}, 0),
	)
	return cs
}
