package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/internal/testdev"
)

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDemoJSONViewsCopyNothing(t *testing.T) {
	code, out, stderr := runCmd("demo", "-device", "sim:0?mem=64MiB", "-json")
	require.Equal(t, 0, code, stderr)
	var rep struct {
		Device string
		Steps  []demoStep
		Ledger struct {
			Memory map[string]struct{ Current, Allocs, Frees int64 }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, "sim:0", rep.Device)
	require.Len(t, rep.Steps, 4)

	up, views, down := rep.Steps[0], rep.Steps[1], rep.Steps[2]
	assert.Equal(t, int64(1), up.Allocations)
	assert.Equal(t, int64(demoN*demoN*4), up.HtoDBytes, "the upload moves the array once")
	assert.Zero(t, views.Allocations, "views allocate nothing")
	assert.Zero(t, views.CopyBytes, "views copy nothing")
	assert.Zero(t, views.Copies)
	assert.Equal(t, int64(1), down.Allocations, "the pack kernel's temporary, freed at once")
	assert.Equal(t, int64(2), down.Copies, "the transposed view: one pack kernel and one copy down")
	assert.Equal(t, int64(demoN*demoN/2*4), down.DtoHBytes, "only the view's bytes come down")
	dev := rep.Ledger.Memory["device"]
	assert.Zero(t, dev.Current, "everything freed at the end")
	assert.Equal(t, dev.Allocs, dev.Frees)
}

func TestDemoText(t *testing.T) {
	code, out, stderr := runCmd("demo", "-device", "sim:0?mem=64MiB")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "views: slice, permute, reshape, broadcast    allocs 0  copies 0 (0 B up, 0 B down, 0 B on the device)")
	assert.Contains(t, out, "download the strided view                    allocs 1  copies 2 (0 B up, 512.00 KiB down, 512.00 KiB on the device)",
		"the view's 512 KiB come down once, after the pack kernel's copy on the device")
	assert.Contains(t, out, "ledger sim:0")
}

func TestInfo(t *testing.T) {
	code, out, stderr := runCmd("info", "-device", "sim:1?mem=128MiB")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "sim:1 (sim backend)")
	assert.Contains(t, out, "128.00 MiB free of 128.00 MiB")

	code, out, stderr = runCmd("info", "-json", "-device", "sim:0?mem=1MiB")
	require.Equal(t, 0, code, stderr)
	var rep struct {
		Device struct{ Name, Backend string }
		Free   int64 `json:"free_bytes"`
		Total  int64 `json:"total_bytes"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, "sim:0", rep.Device.Name)
	var keys struct{ Device map[string]any }
	require.NoError(t, json.Unmarshal([]byte(out), &keys))
	for key := range keys.Device {
		assert.Regexp(t, `^[a-z]+(_[a-z]+)*$`, key, "snake_case keys, as the rest of the JSON")
	}
	assert.Contains(t, keys.Device, "total_memory")
	assert.Equal(t, int64(1<<20), rep.Total)
	assert.Equal(t, rep.Total, rep.Free)
}

func TestBadInvocations(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "usage: cuarray"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"demo", "-nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"info", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"info", "-device", "tpu:0"}, 2, `kind "tpu" is not sim or cuda`},
		{[]string{"info", "-device", "cuda:99"}, 1, "no such device"},
		{[]string{"demo", "-device", "sim:0?mem=1KiB"}, 1, "out of memory"},
		{[]string{"help", "bogus"}, 2, `"bogus" is not a command`},
	}
	for _, tt := range tests {
		code, out, stderr := runCmd(tt.args...)
		assert.Equal(t, tt.code, code, "%v: %s", tt.args, stderr)
		assertStderr(t, stderr, tt.msg, "%v", tt.args)
		assert.Empty(t, out, "%v prints nothing on stdout", tt.args)
		switch tt.code {
		case 1:
			assert.Equal(t, 1, bytes.Count([]byte(stderr), []byte("\n")), "%v: a one-line message", tt.args)
		case 2:
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			assert.LessOrEqual(t, len(lines), 2, "%v: a one-line message and the usage line", tt.args)
			assert.True(t, strings.HasPrefix(lines[len(lines)-1], "usage: cuarray"), "%v: ends with the usage line: %q", tt.args, stderr)
		}
	}
}

// assertStderr checks that stderr holds want; "no such device" (a device
// that is not there) matches testdev.NoDevice, which a cuda build's
// message without a GPU matches too.
func assertStderr(t *testing.T, stderr, want string, msgAndArgs ...any) {
	t.Helper()
	if want == "no such device" {
		assert.Regexp(t, testdev.NoDevice, stderr, msgAndArgs...)
		return
	}
	assert.Contains(t, stderr, want, msgAndArgs...)
}
