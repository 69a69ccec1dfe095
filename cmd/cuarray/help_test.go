package main

import (
	"flag"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flagNames returns the flags a command defines, by asking it for help.
func flagNames(t *testing.T, cmd string) []string {
	t.Helper()
	err := commands[cmd]([]string{"-h"}, io.Discard, io.Discard)
	var help helpRequest
	require.ErrorAs(t, err, &help, "%s -h", cmd)
	var names []string
	help.fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// Every command's -h, -help and `cuarray help COMMAND` print its usage
// line, every flag with its description, and examples, on stdout (so that
// `cuarray bench -h | less` shows them), and exit 0; cuarray -h lists the
// commands.
func TestHelpPrintsFlagsAndExamples(t *testing.T) {
	for cmd := range commands {
		names := flagNames(t, cmd)
		require.NotEmpty(t, names, cmd)
		for _, args := range [][]string{{cmd, "-h"}, {cmd, "-help"}, {cmd, "--help"}, {"help", cmd}} {
			code, out, stderr := runCmd(args...)
			assert.Equal(t, 0, code, "%v", args)
			assert.Empty(t, stderr, "%v: help asked for goes to stdout", args)
			for _, name := range names {
				assert.Regexp(t, "\n  -"+name+"[ \t\n]", out, "%v shows -%s", args, name)
			}
			assert.Regexp(t, "Examples:\n  cuarray "+cmd+"[ \n]", out, "%v shows examples", args)
			assert.Contains(t, out, summaries[cmd], "%v says what %s does", args, cmd)
		}
	}
	for _, args := range [][]string{{"-h"}, {"help"}, {"--help"}} {
		code, out, stderr := runCmd(args...)
		assert.Equal(t, 0, code, "%v", args)
		assert.Empty(t, stderr)
		for cmd := range commands {
			assert.Contains(t, out, "  "+cmd+" ", "%v lists %s", args, cmd)
		}
	}
}

// A help topic that is no command, no command at all, or a command's bad
// flag are usage errors: status 2, the message and the usage line on
// stderr, nothing on stdout.
func TestUsageErrorsGoToStderr(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "bogus"}, `"bogus" is not a command`},
		{[]string{"help", "plan", "extra"}, `"plan extra" is not a command`},
		{nil, usages[""]},
		{[]string{"bench", "-frobnicate"}, "frobnicate"},
		{[]string{"plan", "-method", "identity", "-shape", "0,10,10"}, "not a positive integer"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, stderr := runCmd(tc.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.Contains(t, stderr, tc.want)
			assert.Contains(t, stderr, "usage: cuarray")
		})
	}
}

// shellWords splits an example line as a POSIX shell would for the
// examples' quoting: words apart at blanks, '...' kept whole.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "an unterminated quote in %q", line)
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// Every example that -h prints runs as written from the repository's
// root, in a temporary directory standing in for it (so that what an
// example writes stays there), and exits 0. A ? in an example is quoted.
func TestHelpExamplesRun(t *testing.T) {
	progress = io.Discard
	pkgDir, err := os.Getwd()
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	for _, cmd := range slices.Sorted(maps.Keys(examples)) { // bench's calibrate example writes the profile the next one reads
		lines := examples[cmd]
		_, ok := commands[cmd]
		require.True(t, ok, "examples for unknown command %q", cmd)
		for _, line := range lines {
			line, _, _ = strings.Cut(line, "#")
			args := shellWords(t, line)
			require.Equal(t, []string{"cuarray", cmd}, args[:2], "an example of %s: %q", cmd, line)
			for i, a := range args {
				assert.False(t, strings.ContainsAny(a, "?*[") && !strings.Contains(line, "'"+a+"'"), "%q: quote %s, a shell pattern", line, a)
				if rest, ok := strings.CutPrefix(a, "cmd/cuarray/"); ok {
					args[i] = filepath.Join(pkgDir, rest) // the repository's file, from its root
				}
			}
			t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
				code, out, stderr := runCmd(args[1:]...)
				assert.Equal(t, 0, code, "stderr: %s", stderr)
				assert.NotEmpty(t, out)
			})
		}
	}
}

// A -mem larger than the device: sim at its default size is made that
// large, with a note on stderr; a device whose size was given says that
// the plan asks for memory it does not have.
func TestPlanMemAboveDevice(t *testing.T) {
	code, out, stderr := runCmd("plan", "-device", "sim:0", "-method", "fbp.reconstruct", "-shape", "2048,1800,2048", "-mem", "16GiB")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "16.00 GiB available", "planned against 16 GiB, not sim's default 4 GiB")
	assert.Contains(t, out, "on sim:0")
	assert.Equal(t, "cuarray plan: -mem 16.00 GiB is more than sim:0's default 4.00 GiB: planning on sim:0?mem=16GiB\n", stderr)

	code, out, stderr = runCmd("plan", "-device", "sim:1?latency=1ms", "-method", "kernels.scale", "-shape", "8,8,8", "-mem", "5GiB", "-json")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, `"device": "sim:1"`)
	assert.Contains(t, stderr, "planning on sim:1?latency=1ms&mem=5GiB")

	code, out, stderr = runCmd("plan", "-device", "sim:0?mem=64MiB", "-method", "kernels.scale", "-shape", "8,8,8", "-mem", "1GiB")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, stderr, "-mem 1.00 GiB is more than sim:0's 64.00 MiB: a plan cannot use memory the device does not have")

	code, _, stderr = runCmd("plan", "-device", "sim:0", "-method", "kernels.scale", "-shape", "8,8,8", "-mem", "4GiB")
	assert.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr, "a limit the device has needs no note")
}

func TestCompactBytes(t *testing.T) {
	for n, want := range map[int64]string{16 << 30: "16GiB", 1536 << 20: "1536MiB", 1 << 50: "1PiB", 5000000000: "5000000000", 3 << 10: "3KiB"} {
		assert.Equal(t, want, compactBytes(n), "%d", n)
	}
}
