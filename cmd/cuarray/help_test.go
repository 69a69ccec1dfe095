package main

import (
	"flag"
	"io"
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
// line, every flag with its description, and examples, on stderr, and
// exit 0; cuarray -h lists the commands.
func TestHelpPrintsFlagsAndExamples(t *testing.T) {
	for cmd := range commands {
		names := flagNames(t, cmd)
		require.NotEmpty(t, names, cmd)
		for _, args := range [][]string{{cmd, "-h"}, {cmd, "-help"}, {cmd, "--help"}, {"help", cmd}} {
			code, out, stderr := runCmd(args...)
			assert.Equal(t, 0, code, "%v", args)
			assert.Empty(t, out, "%v: help goes to stderr", args)
			for _, name := range names {
				assert.Regexp(t, "\n  -"+name+"[ \t\n]", stderr, "%v shows -%s", args, name)
			}
			assert.Regexp(t, "Examples:\n  cuarray "+cmd+"[ \n]", stderr, "%v shows examples", args)
			assert.Contains(t, stderr, summaries[cmd], "%v says what %s does", args, cmd)
		}
	}
	for _, args := range [][]string{{"-h"}, {"help"}, {"--help"}} {
		code, out, stderr := runCmd(args...)
		assert.Equal(t, 0, code, "%v", args)
		assert.Empty(t, out)
		for cmd := range commands {
			assert.Contains(t, stderr, "  "+cmd+" ", "%v lists %s", args, cmd)
		}
	}
}

// Every example that -h prints runs and exits 0.
func TestHelpExamplesRun(t *testing.T) {
	progress = io.Discard
	for cmd, lines := range examples {
		_, ok := commands[cmd]
		require.True(t, ok, "examples for unknown command %q", cmd)
		for _, line := range lines {
			line, _, _ = strings.Cut(line, "#")
			args := strings.Fields(line)
			require.Equal(t, []string{"cuarray", cmd}, args[:2], "an example of %s: %q", cmd, line)
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
	code, out, stderr := runCmd("plan", "-method", "fbp.reconstruct", "-shape", "2048,1800,2048", "-mem", "16GiB")
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

	code, _, stderr = runCmd("plan", "-method", "kernels.scale", "-shape", "8,8,8", "-mem", "4GiB")
	assert.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr, "a limit the device has needs no note")
}

func TestCompactBytes(t *testing.T) {
	for n, want := range map[int64]string{16 << 30: "16GiB", 1536 << 20: "1536MiB", 1 << 50: "1PiB", 5000000000: "5000000000", 3 << 10: "3KiB"} {
		assert.Equal(t, want, compactBytes(n), "%d", n)
	}
}
