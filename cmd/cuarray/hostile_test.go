package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// Bad flags and values on every command exit 2 with a one-line message and
// the command's usage line; runtime failures exit 1 with a one-line
// message and no usage line; nothing hangs.
func TestHostileCommandLines(t *testing.T) {
	const small = "sim:0?mem=1MiB"
	logs := hostileLogs(t)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		// The command itself.
		{nil, 2, "usage: cuarray"},
		{[]string{""}, 2, `unknown command ""`},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"-json"}, 2, `unknown command "-json"`},

		// info
		{[]string{"info", "-json=maybe"}, 2, "invalid boolean value"},
		{[]string{"info", "-device"}, 2, "flag needs an argument"},
		{[]string{"info", "-device", "bogus"}, 2, "bad device spec"},
		{[]string{"info", "-device", "sim:-1"}, 2, "not a non-negative number"},
		{[]string{"info", "-device", "sim:0?mem=-1"}, 2, "negative"},
		{[]string{"info", "-device", "sim:0?mem=1ZiB"}, 2, `unknown unit "ZiB"`},
		{[]string{"info", "-device", "sim:0?mem=8EiB"}, 2, "does not fit in 64 bits"},
		{[]string{"info", "-device", "sim:0?latency=abc"}, 2, "invalid duration"},
		{[]string{"info", "-device", "sim:0?bogus=1"}, 2, `unknown option "bogus"`},
		{[]string{"info", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"info", "-device", "cuda:99"}, 1, "no such device"},
		{[]string{"info", "-device", "sim:0?mem=1EiB"}, 1, "1.00 EiB"}, // parses; no machine maps it

		// demo
		{[]string{"demo", "-nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"demo", "-device", "sim:0?fail-alloc=x"}, 2, "fail-alloc"},
		{[]string{"demo", "-device", "sim:0?mem=1KiB"}, 1, "out of memory"},
		{[]string{"demo", "-device", "sim:0?fail-copy=1"}, 1, "injected fault"},

		// plan: values the command line cannot take.
		{[]string{"plan", "-device", small, "-method", "fbp.reconstruct", "-shape", "4,90,64", "-param", "angles=-1"}, 2, `takes no parameter "angles"`},
		{[]string{"plan", "-device", small, "-method", "fbp.filter", "-shape", "4,90,64", "-param", "angles=-1"}, 2, `takes no parameter "angles"`},
		{[]string{"plan", "-device", small, "-method", "fbp.project", "-shape", "4,64,64", "-param", "angles=-1"}, 2, "angles=-1: want at least 1"},
		{[]string{"plan", "-device", small, "-method", "fbp.project", "-shape", "4,64,64", "-param", "detectors=0"}, 2, "want at least 1"},
		{[]string{"plan", "-device", small, "-method", "fbp.backproject", "-shape", "4,90,64", "-param", "size=-5"}, 2, "size=-5"},
		{[]string{"plan", "-device", small, "-method", "fbp.reconstruct", "-shape", "4,90,64", "-param", "size=0"}, 2, "size=0"},
		{[]string{"plan", "-device", small, "-method", "kernels.transpose", "-shape", "4,4,4", "-param", "factor=2"}, 2, `takes no parameter "factor"`},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-param", "size=99999999999999999999"}, 2, "not an integer"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-param", "=3"}, 2, "want name=integer"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-axis", "5"}, 2, "axis 5: want 0, 1 or 2"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-axis", "-1"}, 2, "axis -1"},
		{[]string{"plan", "-device", small, "-method", "fbp.filter", "-shape", "1,2,3", "-axis", "2"}, 2, "axis 0"},
		{[]string{"plan", "-device", small, "-method", "kernels.scale", "-shape", "1,2,3", "-dtype", "bool"}, 2, "want float32 or float64"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-dtype", ""}, 2, "dtype"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-mem", "8EiB"}, 2, "does not fit in 64 bits"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-mem", "1ZiB"}, 2, `unknown unit "ZiB"`},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-mem", "-5MiB"}, 2, "negative"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-mem", "0.5"}, 2, "whole number of bytes"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-overhead", "NaN"}, 2, "overhead NaN"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-overhead", "+Inf"}, 2, "overhead +Inf"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-overhead", "0.99"}, 2, "at least 1"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-overhead", "x"}, 2, "invalid value"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "4611686018427387904,4,1"}, 2, "overflows"}, // hung before
		{[]string{"plan", "-method", "kernels.scale", "-shape", "9223372036854775807,9223372036854775807,1"}, 2, "overflows"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3,4"}, 2, "want three sizes"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "a,b,c"}, 2, "not a positive integer"},
		{[]string{"plan", "-method", "kernels.scale"}, 2, "want three sizes"},
		{[]string{"plan", "-method", ""}, 2, "want -method NAME"},
		{[]string{"plan", "-method", "list", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-device", "nonsense:0"}, 2, "bad device spec"},

		{[]string{"plan", "-method", "identity,kernels.scale", "-shape", "1,2,3", "-paths"}, 2, "-paths compares the transfers of one method's job"},
		{[]string{"plan", "-method", "all", "-shape", "1,2,3", "-paths"}, 2, "give one -method"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-profile", logs["missing"]}, 2, "give -paths too"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-paths=maybe"}, 2, "invalid boolean value"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-paths", "-profile"}, 2, "flag needs an argument"},

		// plan: runtime failures.
		{[]string{"plan", "-device", small, "-method", "kernels.scale", "-shape", "1,2,3", "-paths", "-profile", logs["missing"]}, 1, "no such file"},
		{[]string{"plan", "-device", small, "-method", "kernels.scale", "-shape", "1,2,3", "-paths", "-profile", logs["dir"]}, 1, "is a directory"},
		{[]string{"plan", "-device", small, "-method", "kernels.scale", "-shape", "1,2,3", "-paths", "-profile", logs["garbage"]}, 1, "bad transfer profile"},
		{[]string{"plan", "-device", small, "-method", "fbp.reconstruct", "-shape", "4,720,2048"}, 1, "not even one slice fits"},
		{[]string{"plan", "-device", small, "-method", "kernels.scale", "-shape", "1099511627776,1,1", "-mem", "1KiB"}, 1, "chunks, more than"},
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-device", "cuda:99"}, 1, "no such device"},

		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-mem", "0"}, 2, "-mem 0: want a size of at least 1 byte"}, // planned for the whole device before
		{[]string{"plan", "-method", "kernels.scale", "-shape", "1,2,3", "-mem", "0B", "-raw"}, 2, "-mem 0B"},

		// replay: logs and devices it cannot take.
		{[]string{"replay", logs["empty"], "-pool", "maybe"}, 2, `-pool "maybe": want on or off`},
		{[]string{"replay", logs["empty"], logs["empty"]}, 2, "one LOG at a time"},
		{[]string{"replay"}, 2, "no LOG"},
		{[]string{"replay", logs["empty"], "-device", "sim:0?mem=-1"}, 2, "negative"},
		{[]string{"replay", logs["empty"], "-device", "nonsense:0"}, 2, "bad device spec"},
		{[]string{"replay", logs["empty"], "-device", "cuda:99"}, 1, "no such device"},
		{[]string{"replay", logs["empty"], "-device", "sim:0?mem=1EiB"}, 1, "1.00 EiB"},
		{[]string{"replay", logs["missing"]}, 1, "no such file"},
		{[]string{"replay", logs["dir"]}, 1, "is a directory"},
		{[]string{"replay", logs["garbage"]}, 1, "not a valid allocation log"},
		{[]string{"replay", logs["truncated"]}, 1, "unexpected EOF"},
		{[]string{"replay", logs["future"]}, 1, "past the 1 allocations so far"},
		{[]string{"replay", logs["twice"]}, 1, "freed twice"},
		{[]string{"replay", logs["streams"], "-pool=on", "-device", small}, 1, "names 1025 streams; a replay through the pool opens at most 1024"},

		// bench: its own checks (bench.go), through the same exit path.
		{[]string{"bench", "-pcie", "-3"}, 2, "pcie -3"},
		{[]string{"bench", "-sizes", "0"}, 2, ""},
		{[]string{"bench", "-budget", "1ZiB"}, 2, "budget"},
		{[]string{"bench", "-device", "cuda:99", "-q"}, 1, "no such device"},
		{[]string{"bench", "-device", small, "-sizes", "1TiB", "-q"}, 2, "sizes: 1.00 TiB is more than sim:0's 1.00 MiB"}, // a fatal out of memory before
		{[]string{"bench", "-device", small, "-sizes", "4KiB,4EiB", "-calibrate", "-profile", logs["missing"]}, 2, "sizes: 4.00 EiB"},
		{[]string{"bench", "-calibrate", "-device", "sim:0", "-profile", logs["dir"]}, 2, "is not a regular file"}, // saved over it after measuring before
	} {
		name := strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errs := runCmd(tc.args...)
				done <- result{code, out, errs}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("cuarray %s did not exit within 30 s", name)
			}
			assert.Equal(t, tc.code, r.code, "exit status; stderr: %s", r.stderr)
			assertStderr(t, r.stderr, tc.msg)
			assert.Empty(t, r.stdout, "nothing on stdout")
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			switch tc.code {
			case 2:
				assert.LessOrEqual(t, len(lines), 2, "a one-line message and the usage line: %q", r.stderr)
				cmd := ""
				if len(tc.args) > 0 {
					if _, ok := commands[tc.args[0]]; ok {
						cmd = tc.args[0]
					}
				}
				assert.Equal(t, usages[cmd], lines[len(lines)-1], "the usage line last")
			case 1:
				assert.Len(t, lines, 1, "a one-line message, no usage line: %q", r.stderr)
				assert.NotContains(t, r.stderr, "usage:")
			}
		})
	}
}

// -h on every command prints its usage line first and exits 0 (its flags
// and examples follow: TestHelpPrintsFlagsAndExamples).
func TestHelpPrintsUsage(t *testing.T) {
	for cmd := range commands {
		code, out, stderr := runCmd(cmd, "-h")
		assert.Equal(t, 0, code, cmd)
		assert.Empty(t, stderr, "%s -h: help asked for goes to stdout", cmd)
		assert.True(t, strings.HasPrefix(out, usages[cmd]+"\n"), "%s -h starts with its usage line: %q", cmd, out)
	}
}

// hostileLogs writes the allocation logs TestHostileCommandLines replays,
// by name: an empty log, garbage, a truncated one, a free of an allocation
// not yet made, a double free, one naming 1025 streams, and paths that
// are missing or a directory.
func hostileLogs(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	head := logHeader("sim:0")
	logs := map[string][]byte{
		"empty":     head,
		"garbage":   []byte("CUALLOX\x01 not a log at all"),
		"truncated": append(logAlloc(head, 1<<20, 0, false), 0x02, 0x01),          // a free cut after its time
		"future":    append(logAlloc(head, 64, 0, false), 0x02, 0x00, 0x02, 0x00), // frees 2 back of 1
		"twice":     logFree(logFree(logAlloc(head, 64, 0, false), 1, 0, false), 1, 0, false),
	}
	var many []byte = head
	for s := 1; s <= maxReplayStreams+1; s++ {
		many = logFree(logAlloc(many, 256, s, true), 1, s, true)
	}
	logs["streams"] = many
	paths := map[string]string{"missing": filepath.Join(dir, "missing.alloclog"), "dir": dir}
	for name, b := range logs {
		paths[name] = filepath.Join(dir, name+".alloclog")
		require.NoError(t, os.WriteFile(paths[name], b, 0o644))
	}
	return paths
}

// logHeader is an allocation log's header (accounting's format, version 1).
func logHeader(name string) []byte {
	b := append([]byte("CUALLOG"), accounting.LogVersion)
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	return binary.AppendVarint(b, 0)
}

// logAlloc appends a device allocation of n bytes, 1 ns after the event
// before it, on stream s (0: none), a caching allocator's block if block.
func logAlloc(b []byte, n uint64, s int, block bool) []byte {
	return logRecord(b, 1, n, s, block)
}

// logFree appends the free of the allocation ref back (1: the latest).
func logFree(b []byte, ref uint64, s int, block bool) []byte {
	return logRecord(b, 2, ref, s, block)
}

func logRecord(b []byte, op byte, x uint64, s int, block bool) []byte {
	tag := op
	if s > 0 {
		tag |= 0x40
	}
	if block {
		tag |= 0x80
	}
	b = append(b, tag, 1)
	b = binary.AppendUvarint(b, x)
	b = append(b, 0) // scope
	if s > 0 {
		b = binary.AppendUvarint(b, uint64(s))
	}
	return b
}
