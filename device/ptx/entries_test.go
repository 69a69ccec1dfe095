package ptx

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/ptx/entry"
)

// TestEntryParamsAgreeWithParse: on modules the interpreter runs, the
// parameters package entry reads from the declarations alone are those
// Parse lays out.
func TestEntryParamsAgreeWithParse(t *testing.T) {
	for _, path := range []string{"testdata/samples.ptx", "../../kernels/kernels.ptx", "../../examples/ownkernels/saxpy.ptx"} {
		t.Run(path, func(t *testing.T) {
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			m, err := Parse(string(src))
			require.NoError(t, err)
			got, err := entry.Params(string(src))
			require.NoError(t, err)
			require.Len(t, got, len(m.Kernels()), "one entry per kernel")
			for _, name := range m.Kernels() {
				k, _ := m.Kernel(name)
				assert.Equal(t, k.Params, got[name], "kernel %s", name)
			}
		})
	}
}

// TestEntryParamsTypes: each parameter's type, vector width and array
// length, and its declaration written back.
func TestEntryParamsTypes(t *testing.T) {
	src := ptxHeader + `
.visible .entry k(
	.param .u64 k_p,
	.param .u32 k_n,
	.param .f32 k_a,
	.param .u8 k_c,
	.param .align 8 .b8 k_s[24],
	.param .v2 .f32 k_v,
	.param .s16 k_h
)
{
	tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [t, {%f5, %f6}];
	{ ret; }
}
.visible .entry none()
{
	ret;
}
.func (.param .b32 r) f(.param .b64 x)
{
	ret;
}
`
	_, err := Parse(src)
	require.Error(t, err, "the interpreter refuses tex")
	got, err := entry.Params(src)
	require.NoError(t, err)
	require.Contains(t, got, "none")
	assert.Empty(t, got["none"])
	require.NotContains(t, got, "f", "a .func is not a kernel")
	want := []struct {
		decl             string
		off, size, align int
	}{
		{".u64", 0, 8, 8}, {".u32", 8, 4, 4}, {".f32", 12, 4, 4}, {".u8", 16, 1, 1},
		{".align 8 .b8[24]", 24, 24, 8}, {".v2 .f32", 48, 8, 8}, {".s16", 56, 2, 2},
	}
	require.Len(t, got["k"], len(want))
	for i, w := range want {
		p := got["k"][i]
		assert.Equal(t, w.decl, p.Decl(), "parameter %d", i)
		assert.Equal(t, [3]int{w.off, w.size, w.align}, [3]int{p.Offset, p.Size, p.Align}, "parameter %d: offset, size, alignment", i)
	}
}

// TestEntryParamsRefuses: a declaration that does not parse, or braces
// that do not balance, name their line.
func TestEntryParamsRefuses(t *testing.T) {
	for _, tc := range []struct{ name, src, says string }{
		{"no type", ".visible .entry k(.param k_p)\n{\nret;\n}\n", "line 1"},
		{"unterminated list", ".visible .entry k(.param .u32 a,\n{\nret;\n}\n", "unterminated parameter list"},
		{"no end", "\n.visible .entry k(.param .u32 a)\n", "line 2: the declaration of an .entry does not end"},
		{"open body", ".visible .entry k()\n{\nret;\n", "unbalanced {"},
		{"stray brace", "}\n", "unbalanced }"},
		{"no name", ".entry (\n) {}", "expected a name"},
		{"unterminated comment", ".entry k() /* {", "unterminated comment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := entry.Params(tc.src)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

// FuzzEntryParams: any text gives parameters or an error, never a panic,
// and where Parse accepts it the two agree.
func FuzzEntryParams(f *testing.F) {
	if src, err := os.ReadFile("../../examples/ownkernels/saxpy.ptx"); err == nil {
		f.Add(string(src))
	}
	f.Add(ptxHeader + ".visible .entry k(.param .align 8 .b8 s[12], .param .v4 .u32 v)\n{\nret;\n}\n")
	f.Add(".entry k(.param .u32 a[0x10], .param .u64 b){}}")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := entry.Params(s)
		if err != nil {
			if got != nil {
				t.Fatal("parameters with an error")
			}
			return
		}
		m, err := Parse(s)
		if err != nil {
			return
		}
		for _, name := range m.Kernels() {
			k, _ := m.Kernel(name)
			if !assert.ObjectsAreEqual(k.Params, got[name]) {
				t.Fatalf("kernel %s: Parse lays out %v, EntryParams %v", name, k.Params, got[name])
			}
		}
	})
}
