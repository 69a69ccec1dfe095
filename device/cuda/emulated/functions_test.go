//go:build cuda && cudaemu && linux

package emulated

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
)

var updateFunctions = flag.Bool("update-functions", false, "rewrite functions.md's table from the driver")

const functionsDoc = "functions.md"

// The table's rows in functions.md: "| `cuMemAlloc_v2` | runs |".
var functionRow = regexp.MustCompile("(?m)^\\| `(cu\\w+)` \\| (runs|refuses) \\|$")

// functionsTable writes the table of the driver functions gorgonia.org/cu
// calls through, each with whether the emulated driver runs it.
func functionsTable(symbols []string) string {
	var b strings.Builder
	b.WriteString("| driver function | emulated driver |\n| --- | --- |\n")
	for _, s := range symbols {
		verdict := "refuses"
		if Implements(s) {
			verdict = "runs"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", s, verdict)
	}
	return b.String()
}

// TestFunctionsDocumented holds functions.md to the driver: its table lists
// every function gorgonia.org/cu's stubs resolve (cu.Init asks the driver
// for each), once, with "runs" exactly for those the emulated driver
// implements. go test -run TestFunctionsDocumented -update-functions
// rewrites it.
func TestFunctionsDocumented(t *testing.T) {
	require.NoError(t, cu.Init())
	symbols := Asked()
	slices.Sort(symbols)
	require.NotEmpty(t, symbols, "cu.Init resolves every stubbed driver function")
	doc, err := os.ReadFile(functionsDoc)
	require.NoError(t, err)
	begin, end := "<!-- table: begin -->\n", "<!-- table: end -->"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	require.True(t, i >= 0 && j > i, "%s marks its table with %q and %q", functionsDoc, begin, end)
	want := functionsTable(symbols)
	if *updateFunctions {
		out := string(doc[:i+len(begin)]) + want + string(doc[j:])
		require.NoError(t, os.WriteFile(functionsDoc, []byte(out), 0o644))
		return
	}
	got := string(doc[i+len(begin) : j])
	rows := functionRow.FindAllStringSubmatch(got, -1)
	seen := make(map[string]string)
	for _, r := range rows {
		assert.NotContains(t, seen, r[1], "%s lists %s twice", functionsDoc, r[1])
		seen[r[1]] = r[2]
	}
	for _, s := range symbols {
		verdict := "refuses"
		if Implements(s) {
			verdict = "runs"
		}
		assert.Equal(t, verdict, seen[s], "%s: %s (go test -run TestFunctionsDocumented -update-functions rewrites the table)", functionsDoc, s)
	}
	assert.Len(t, seen, len(symbols), "%s lists only the functions gorgonia.org/cu calls through", functionsDoc)
	assert.Equal(t, want, got, "%s's table (go test -run TestFunctionsDocumented -update-functions rewrites it)", functionsDoc)

	// The counts in the prose above the table.
	runs := strings.Count(want, "| runs |")
	assert.Contains(t, string(doc[:i]), fmt.Sprintf("runs %d of the %d", runs, len(symbols)), "%s's summary line", functionsDoc)
}

// TestUnimplementedFunctionsNameThemselves calls driver functions the
// emulated driver does not implement: each answers
// CUDA_ERROR_NOT_SUPPORTED, and cu.TakeMissing, on the calling thread,
// names it once, so a caller tells it from a NOT_SUPPORTED the driver
// means. One it implements leaves nothing to take.
func TestUnimplementedFunctionsNameThemselves(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, cu.Init())
	ctx, err := cu.Device(0).MakeContext(cu.SchedAuto)
	require.NoError(t, err)
	defer ctx.Destroy()
	for _, tc := range []struct {
		symbol string
		call   func() error
	}{
		{"cuMemAllocPitch_v2", func() error { _, _, err := cu.MemAllocPitch(64, 64, 4); return err }},
		{"cuCtxGetStreamPriorityRange", func() error { _, _, err := cu.StreamPriorityRange(); return err }},
		{"cuStreamCreateWithPriority", func() error { _, err := cu.MakeStreamWithPriority(0, cu.DefaultStream); return err }},
		{"cuMemcpy", func() error { return cu.Memcpy(0, 0, 0) }},
	} {
		t.Run(tc.symbol, func(t *testing.T) {
			require.False(t, Implements(tc.symbol), "the emulated driver implements %s: pick another", tc.symbol)
			cu.TakeMissing() // nothing left over from before
			err := tc.call()
			assert.Equal(t, cu.NotSupported, err, "%s answers CUDA_ERROR_NOT_SUPPORTED", tc.symbol)
			assert.Equal(t, tc.symbol, cu.TakeMissing(), "cu.TakeMissing names %s", tc.symbol)
			assert.Empty(t, cu.TakeMissing(), "cu.TakeMissing forgets %s once taken", tc.symbol)
		})
	}
	_, err = cu.MemAlloc(256)
	require.NoError(t, err)
	assert.Empty(t, cu.TakeMissing(), "an implemented function leaves nothing to take")
}
