package docs

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/toolchain"
)

// samplePages are the pages whose command outputs TestSamplesAreCurrent
// checks: the README, the guide and the reference.
var samplePages = []string{"../README.md", "guide.md", "reference.md"}

// textBlock is a ```text block of a page, with the line before it.
var textBlock = regexp.MustCompile("(?s)([^\n]*)\n\n?```text\n(.*?)\n```")

// checkedBy is the marker of a sample another test checks:
// `<!-- checked by: DIR TestName -->`, DIR relative to the repository.
var checkedBy = regexp.MustCompile(`^<!-- checked by: (\S+) (\w+) -->$`)

// sampleBinaries are the programs a sample may run, by the name it runs
// them under, and the package each is built from.
var sampleBinaries = map[string]string{
	"cuarray":                      "./cmd/cuarray",
	"fbp":                          "./examples/fbp",
	"go run ./cmd/cuarray":         "./cmd/cuarray",
	"go run ./examples/fbp":        "./examples/fbp",
	"go run ./examples/ownkernels": "./examples/ownkernels",
}

// TestSamplesAreCurrent: no page shows a command's output that nothing
// checks. Every ```text block is one of: an Example's output (after "It
// prints:", which guide_test.go compares with the Example), a sample that
// starts with the command that printed it (`$ cuarray ...`), which this
// test runs from the repository's root and compares, durations aside; or
// a sample marked `<!-- checked by: DIR TestName -->`, where that test
// exists. So a sample cannot go stale: a change in what a command prints
// fails here until the page shows the new output.
func TestSamplesAreCurrent(t *testing.T) {
	untaggedBuildsOnly(t)
	goTool := toolchain.Go(t, "to build the commands the samples run")
	bins := map[string]string{}
	build := func(pkg string) string {
		if b, ok := bins[pkg]; ok {
			return b
		}
		out := filepath.Join(t.TempDir(), filepath.Base(pkg))
		c := exec.Command(goTool, "build", "-o", out, pkg)
		c.Dir = ".."
		msg, err := c.CombinedOutput()
		require.NoError(t, err, "go build %s:\n%s", pkg, msg)
		bins[pkg] = out
		return out
	}
	ran := 0
	for _, page := range samplePages {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		fences := regexp.MustCompile("(?m)^```(\\w*)$").FindAllStringSubmatchIndex(string(text), -1)
		for i := 0; i < len(fences); i += 2 { // opening fences name what they hold, so that output is ```text
			f := fences[i]
			assert.NotEqual(t, f[2], f[3], "%s:%d: a code block that names no language", page, 1+strings.Count(string(text[:f[0]]), "\n"))
		}
		for _, m := range textBlock.FindAllStringSubmatchIndex(string(text), -1) {
			before, sample := string(text[m[2]:m[3]]), string(text[m[4]:m[5]])
			line := 1 + strings.Count(string(text[:m[4]]), "\n")
			switch {
			case strings.TrimSpace(before) == "It prints:":
				continue // guide_test.go compares it with its Example
			case checkedBy.MatchString(before):
				c := checkedBy.FindStringSubmatch(before)
				assert.True(t, testExists(t, c[1], c[2]), "%s:%d: the sample names %s %s, which does not exist", page, line, c[1], c[2])
			case strings.HasPrefix(sample, "$ "):
				cmdLine, want, _ := strings.Cut(sample, "\n")
				args := shellWords(t, strings.TrimPrefix(cmdLine, "$ "))
				require.NotEmpty(t, args, "%s:%d", page, line)
				var bin string
				for name, pkg := range sampleBinaries {
					words := strings.Fields(name)
					if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == name && (bin == "" || len(words) > 1) {
						bin, args = build(pkg), args[len(words):]
					}
				}
				require.NotEmpty(t, bin, "%s:%d: the sample runs %q, which the test does not know", page, line, cmdLine)
				c := exec.Command(bin, args...)
				c.Dir = ".."
				c.Env = sampleEnv()
				got, err := c.Output()
				require.NoError(t, err, "%s:%d: %s", page, line, cmdLine)
				assert.Equal(t, vary(want), vary(strings.TrimRight(string(got), "\n")),
					"%s:%d: the sample of %q is not what the command prints now (durations aside): update the page", page, line, cmdLine)
				ran++
			default:
				assert.Fail(t, "a sample nothing checks", "%s:%d: a text block that is not an Example's output, does not start with its command ($ ...) and names no test that checks it (<!-- checked by: DIR TestName -->)", page, line)
			}
		}
	}
	assert.Positive(t, ran, "the pages show command samples to run")
}

// sampleEnv is this process's environment without the variables that
// pick another device or profile than a user's default.
func sampleEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "CUARRAY_DEVICE", "CUARRAY_TEST_DEVICE", "CUARRAY_SIM_CHECK", "CUARRAY_PROFILE", "CUARRAY_EMULATED_DRIVER":
		default:
			env = append(env, kv)
		}
	}
	return append(env, "CUARRAY_FALLBACK_NOTICE=off")
}

// shellWords splits a command line as a shell does for the samples'
// commands: words, and single- or double-quoted strings.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.Zero(t, quote, "an unterminated quote in %q", line)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

var (
	duration  = regexp.MustCompile(`[-+]?\d+(?:\.\d+)? ?(?:s|ms|µs)\b`)
	timeRatio = regexp.MustCompile(`\d+\.\d+× (the time|its kernels' time)`)
)

// vary masks what differs from run to run in a command's output: durations
// ("0.054 s", "+0.004 s"), ratios of durations ("1.01× the time"), and the
// figures of a table's "seconds" column.
func vary(s string) string {
	lines := strings.Split(s, "\n")
	col := -1 // the rune column where a "seconds" header ends, in the table being read
	for i, l := range lines {
		if j := strings.Index(l, " seconds "); j >= 0 && strings.HasPrefix(l, "mode") {
			col = utf8.RuneCountInString(l[:j+len(" seconds")])
			continue
		}
		if strings.TrimSpace(l) == "" {
			col = -1
		}
		if col > 0 {
			r := []rune(l)
			end := col
			if end <= len(r) {
				start := end
				for start > 0 && r[start-1] != ' ' {
					start--
				}
				if _, isNumber := parseFigure(string(r[start:end])); isNumber {
					l = strings.TrimRight(string(r[:start]), " ") + " ~" + string(r[end:])
				}
			}
		}
		l = duration.ReplaceAllString(l, "<duration>")
		lines[i] = timeRatio.ReplaceAllString(l, "<ratio>× $1")
	}
	return strings.Join(lines, "\n")
}

// parseFigure reports whether s is a decimal figure.
func parseFigure(s string) (string, bool) {
	return s, regexp.MustCompile(`^\d+\.\d+$`).MatchString(s)
}

// testExists reports whether a Go file of dir, relative to the
// repository's root, declares func name.
func testExists(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", dir, "*_test.go"))
	require.NoError(t, err)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(src), "\nfunc "+name+"(") {
			return true
		}
	}
	return false
}

// vary masks durations and the seconds column, and nothing else.
func TestVaryMasksDurationsOnly(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"durations", "34 events over 0.054 s; at 0.044471 s", "34 events over 1.250 s; at 0.900000 s"},
		{"signed durations", "0.40× the time (-0.779 s)", "1.44× the time (+0.325 s)"},
		{"seconds column", "mode       seconds  chunks\nresident     1.290       8", "mode       seconds  chunks\nresident    11.002       8"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, vary(tc.a), vary(tc.b)) })
	}
	for _, tc := range []struct{ name, a, b string }{
		{"bytes", "2.86 MiB", "1.91 MiB"},
		{"counts", "32 slices", "31 slices"},
		{"ratios of bytes", "1.00× the device peak", "1.50× the device peak"},
		{"other columns", "mode       seconds  chunks\nresident     1.290       8", "mode       seconds  chunks\nresident     1.290       3"},
		{"rmse", "rmse 0.1344", "rmse 0.1741"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.NotEqual(t, vary(tc.a), vary(tc.b)) })
	}
}

// sampleAfter is the ```text block of page that follows marker.
func sampleAfter(t *testing.T, page, marker string) string {
	t.Helper()
	text, err := os.ReadFile(page)
	require.NoError(t, err)
	i := strings.Index(string(text), marker)
	require.GreaterOrEqual(t, i, 0, "%s has %q", page, marker)
	m := regexp.MustCompile("(?s)```text\n(.*?)\n```").FindStringSubmatch(string(text[i:]))
	require.NotNil(t, m, "%s has a text block after %q", page, marker)
	return m[1]
}

// squeeze masks durations and GB/s figures and collapses runs of spaces,
// so that a table compares by its labels, bytes and counts.
func squeeze(s string) string {
	s = duration.ReplaceAllString(s, "<duration>")
	s = regexp.MustCompile(`(?m) \d+\.\d+$`).ReplaceAllString(s, " <GB/s>")
	return regexp.MustCompile(` +`).ReplaceAllString(s, " ")
}

// TestGuideLedgerSample: the ledger table the guide's Python section shows
// is what Ledger.Report() (which the Python module prints) writes for a
// 4×5 float32 array on a device of its own, copied up once and read back
// once; times and rates aside.
func TestGuideLedgerSample(t *testing.T) {
	want := sampleAfter(t, "guide.md", "<!-- checked by: docs TestGuideLedgerSample -->")
	dev, err := device.Open("sim:7")
	require.NoError(t, err)
	defer dev.Close()
	data := make([]float32, 20)
	for i := range data {
		data[i] = rand.Float32() + 0.5
	}
	a, err := devarray.FromHost(dev, data, 4, 5)
	require.NoError(t, err)
	got, err := devarray.ToHost[float32](a)
	require.NoError(t, err)
	require.Equal(t, data, got)
	assert.Equal(t, squeeze(want), squeeze(strings.TrimRight(dev.Ledger().Report(), "\n")))
	require.NoError(t, a.Free())
}

// TestGuideStreamRaceReport: the stream race report the guide shows is
// what sim's checker reports for the guide's Example_streamRace (a memset
// on one stream, a copy of the same bytes on another), addresses, stream
// handles, function names and line numbers aside.
func TestGuideStreamRaceReport(t *testing.T) {
	want := sampleAfter(t, "guide.md", "<!-- checked by: docs TestGuideStreamRaceReport -->")
	dev, err := device.Open("sim:0?check=streams")
	require.NoError(t, err)
	defer dev.Close()
	a, err := devarray.FromHost(dev, []float32{rand.Float32(), rand.Float32(), rand.Float32(), rand.Float32()})
	require.NoError(t, err)
	defer a.Free()
	fill, err := dev.NewStream()
	require.NoError(t, err)
	defer fill.Close()
	read, err := dev.NewStream()
	require.NoError(t, err)
	defer read.Close()
	require.NoError(t, fill.MemsetAsync(a.Ptr(), 0, a.NBytes()))
	raceErr := read.CopyDtoHAsync(make([]byte, a.NBytes()), a.Ptr())
	require.ErrorIs(t, raceErr, device.ErrStreamRace)
	mask := func(s string) string {
		s = regexp.MustCompile(`0x[0-9a-f]+`).ReplaceAllString(s, "0x…")
		s = regexp.MustCompile(`(?m)^(\s+)\S+\.go:\d+$`).ReplaceAllString(s, "${1}FILE:LINE")
		s = regexp.MustCompile(`(?m)^(\s+)github\.com/\S+$`).ReplaceAllString(s, "${1}FUNC")
		return s
	}
	assert.Equal(t, mask(want), mask(raceErr.Error()))
}
