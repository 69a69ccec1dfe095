package ptx

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, whatever the source.
func FuzzParse(f *testing.F) {
	src, err := os.ReadFile("../../kernels/kernels.ptx")
	if err == nil {
		s := string(src)
		f.Add(s[:min(len(s), 4000)])
		if i := strings.Index(s, ".visible .entry trig_table_f32"); i > 0 {
			f.Add(ptxHeader + s[i:min(len(s), i+6000)])
		}
	}
	f.Add(ptxHeader + ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<2>;\nmov.u32 %r1, %tid.x;\nret;\n}\n")
	f.Add(ptxHeader + ".global .align 4 .b8 g[4] = {1, 2, 3, 4};\n")
	f.Add("{ [ ( .reg %r<")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := Parse(s)
		if err == nil && m == nil {
			t.Fatal("nil module without an error")
		}
	})
}
