// Package isacases is a PTX ISA conformance suite: several hundred small
// kernels, each written by hand from the PTX ISA's instruction pages and
// launched through package kernel, with the value the ISA's text gives
// for its inputs. Its test runs every case on the test device: on sim and
// the emulated CUDA driver (both run PTX through the interpreter) it
// asserts; on a GPU it logs every result and writes the disagreements as
// JSON, asserting nothing, so that a GPU run settles the cases where the
// ISA's reading and the hardware differ.
//
// A case's expected bits come from the ISA's definition (exact rounding
// with math/big), never from running the interpreter. Where the ISA leaves
// the value open (an unspecified NaN, division by zero, a shuffle from an
// inactive lane), Open is set and Want is the interpreter's documented
// choice (device/ptx's package doc). Known marks a case the interpreter
// gets wrong or refuses today; the suite fails when a marked case starts
// to match, so marks go as fixes land.
package isacases

import (
	"fmt"
	"strings"
)

// Sentinel fills the output words before a launch (unless a case gives
// Init): bytes a case does not write must still hold it.
const Sentinel = 0xa5a5a5a5a5a5a5a5

// A Case is one kernel and the output the ISA gives for its input.
type Case struct {
	Name  string // class/what, unique
	Class string // cvt, int, float, approx, compare, bit, warp, barrier, atomic, memory
	ISA   string // the sentence of the PTX ISA the case checks
	Open  bool   // the ISA leaves the value open: Want is the interpreter's documented choice
	Known string // how the interpreter fails the case today ("wrong: ...", "refused: ..."), "" if it passes

	// A one-thread instruction case: Insn names its destination %d, its
	// sources %a, %b, %c (loaded from In's words), predicates %p and %q.
	// D is the destination register's type ("pred" stores 1 or 0 as a
	// .b32), S the sources' register types.
	Insn string
	D    string
	S    []string

	// Or a whole kernel body (Insn empty): between the prologue, which
	// sets %in and %out (the global addresses of the input and output
	// words), %t (%tid.x, .b32) and %oa (%out + 8*%t), and a final ret.
	// Registers %p0..7 (.pred), %h0..7 (.b16), %r0..15 (.b32) and
	// %rd0..15 (.b64) are declared.
	Body    string
	Decls   string // module-scope declarations (.shared, .global)
	Threads int    // threads of the one block (1 if 0)

	In   []uint64 // the input words
	Init []uint64 // the output words before the launch (all Sentinel if nil)
	Size int      // bytes written at the start of each output word (8 if 0)
	Want []uint64 // the output words' written bytes (little-endian, the low Size bytes)
}

// Kernel is the name of every case's .entry.
const Kernel = "isa"

// regType is the register type of an instruction type's width.
func regType(t string) string {
	switch t {
	case "b8", "u8", "s8":
		return "b16"
	case "b16", "u16", "s16", "f16", "bf16":
		return "b16"
	case "b32", "u32", "s32", "f32", "f16x2", "bf16x2":
		return "b32"
	case "pred":
		return "pred"
	}
	return "b64"
}

// Bytes is the width in bytes of a register type.
func Bytes(t string) int {
	switch regType(t) {
	case "b16":
		return 2
	case "b32", "pred":
		return 4
	}
	return 8
}

// Threads returns the block size the case runs with.
func (c Case) threads() int { return max(c.Threads, 1) }

// OutWords is the number of output words.
func (c Case) OutWords() int { return max(len(c.Want), len(c.Init), 1) }

// WordSize is the bytes written at the start of each output word.
func (c Case) WordSize() int {
	if c.Size == 0 {
		return 8
	}
	return c.Size
}

// BlockSize is the number of threads of the case's one block.
func (c Case) BlockSize() int { return c.threads() }

// PTX is the case's whole module.
func (c Case) PTX() string {
	var b strings.Builder
	b.WriteString(".version 7.8\n.target sm_80\n.address_size 64\n\n")
	if c.Decls != "" {
		b.WriteString(c.Decls + "\n\n")
	}
	fmt.Fprintf(&b, ".visible .entry %s(\n\t.param .u64 pin,\n\t.param .u64 pout\n)\n{\n", Kernel)
	b.WriteString("\t.reg .pred %p<8>;\n\t.reg .b16 %h<8>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n")
	b.WriteString("\t.reg .b64 %in, %out, %oa;\n\t.reg .b32 %t;\n")
	if c.Insn != "" {
		fmt.Fprintf(&b, "\t.reg .%s %%d;\n", regType(c.D))
		for i, s := range c.S {
			fmt.Fprintf(&b, "\t.reg .%s %%%c;\n", regType(s), 'a'+i)
		}
		b.WriteString("\t.reg .pred %p, %q;\n")
	}
	b.WriteString("\tld.param.u64 %in, [pin];\n\tld.param.u64 %out, [pout];\n")
	b.WriteString("\tcvta.to.global.u64 %in, %in;\n\tcvta.to.global.u64 %out, %out;\n")
	b.WriteString("\tmov.u32 %t, %tid.x;\n\tmul.wide.u32 %oa, %t, 8;\n\tadd.s64 %oa, %out, %oa;\n")
	if c.Insn != "" {
		for i, s := range c.S {
			fmt.Fprintf(&b, "\tld.global.%s %%%c, [%%in+%d];\n", regType(s), 'a'+i, 8*i)
		}
		fmt.Fprintf(&b, "\t%s;\n", strings.TrimSuffix(c.Insn, ";"))
		if c.D == "pred" {
			b.WriteString("\tselp.b32 %r0, 1, 0, %d;\n\tst.global.b32 [%out], %r0;\n")
		} else {
			fmt.Fprintf(&b, "\tst.global.%s [%%out], %%d;\n", regType(c.D))
		}
	} else {
		for _, l := range strings.Split(strings.Trim(c.Body, "\n"), "\n") {
			b.WriteString("\t" + strings.TrimSpace(l) + "\n")
		}
	}
	b.WriteString("\tret;\n}\n")
	return b.String()
}

// Expected returns the output words the case should leave: Want's bytes
// over Init's (or Sentinel's) upper bytes.
func (c Case) Expected() []uint64 {
	out := c.Initial()
	mask := ^uint64(0)
	if s := c.WordSize(); s < 8 {
		mask = 1<<(8*s) - 1
	}
	for i, w := range c.Want {
		out[i] = out[i]&^mask | w&mask
	}
	return out
}

// Initial returns the output words before the launch.
func (c Case) Initial() []uint64 {
	out := make([]uint64, c.OutWords())
	for i := range out {
		out[i] = Sentinel
		if i < len(c.Init) {
			out[i] = c.Init[i]
		}
	}
	return out
}

// Input returns the input words (one zero word where the case has none).
func (c Case) Input() []uint64 {
	if len(c.In) == 0 {
		return []uint64{0}
	}
	return c.In
}

// ins is a one-thread instruction case.
func ins(class, name, isa, insn, d string, s []string, in []uint64, want uint64) Case {
	return Case{Name: class + "/" + name, Class: class, ISA: isa, Insn: insn, D: d, S: s, In: in,
		Size: Bytes(d), Want: []uint64{want}}
}

// open marks c as a case whose value the ISA leaves open.
func open(c Case) Case { c.Open = true; return c }

var all []Case

// Cases returns every case, with its Known mark.
func Cases() []Case {
	out := make([]Case, len(all))
	copy(out, all)
	for i := range out {
		out[i].Known = known[out[i].Name]
	}
	return out
}

func add(cs ...Case) { all = append(all, cs...) }

func init() {
	add(cvtCases()...)
	add(intCases()...)
	add(floatCases()...)
	add(approxCases()...)
	add(compareCases()...)
	add(bitCases()...)
	add(warpCases()...)
	add(barrierCases()...)
	add(atomicCases()...)
	add(memoryCases()...)
	add(formCases()...)
}
