package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/internal/testdev"
)

// Bad flags and values exit 2 with a one-line message and the usage line;
// runtime failures exit 1 with a one-line message; nothing hangs.
func TestHostileCommandLines(t *testing.T) {
	tiny := []string{"-size", "16", "-angles", "8", "-slices", "2", "-q"}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-size", "-1"}, 2, "at least 1"},
		{[]string{"-size", "3000000000"}, 2, "at most 32768 pixels"},
		{[]string{"-size", "99999999999999999999"}, 2, "invalid value"},
		{[]string{"-angles", "0"}, 2, "at least 1"},
		{[]string{"-angles", "2000000"}, 2, "2^20 angles"},
		{[]string{"-slices", "-1"}, 2, "at least 1"},
		{[]string{"-mode", ""}, 2, "want resident or staged"},
		{[]string{"-mem", "-1"}, 2, "negative"},
		{[]string{"-mem", "0"}, 2, "want a positive size"},
		{[]string{"-mem", "8EiB"}, 2, "does not fit in 64 bits"},
		{[]string{"-mem", "1ZiB"}, 2, `unknown unit "ZiB"`},
		{[]string{"-json=maybe"}, 2, "invalid boolean value"},
		{[]string{"-memory", ""}, 2, "want device or managed"},
		{[]string{"-memory", "Managed"}, 2, "want device or managed"},
		{[]string{"-memory"}, 2, "flag needs an argument"},
		{[]string{"-memory", "managed", "-mode", "staged"}, 2, "the staged mode moves each step's data through the host by copies"},
		{[]string{"-device", "sim:0?mem=64KiB", "-memory", "managed", "-size", "64", "-angles", "90", "-slices", "4", "-q"}, 1,
			"each chunk in flight needs its sinograms, images and workspace on the device at once (the arrays need not fit)"},
		{[]string{"-device"}, 2, "flag needs an argument"},
		{[]string{"-device", "sim:0?mem=-1"}, 2, "bad device spec"},
		{[]string{"-device", "cuda:99"}, 1, "no such device"},
		{[]string{"-device", "sim:0?mem=1EiB", "-q"}, 1, "1.00 EiB"},
		{append([]string{"-device", "sim:0?mem=1KiB"}, tiny...), 1, "not even one slice fits"},
		{append([]string{"-mem", "100"}, tiny...), 1, "not even one slice fits"},
		{append([]string{"-png", "/nonexistent/dir/x.png"}, tiny...), 1, "no such file or directory"},
		{append([]string{"-save", "/nonexistent/dir/x"}, tiny...), 1, "no such file or directory"},
		{append([]string{"-mem", "1EiB"}, tiny...), 0, ""}, // a limit above the device's memory: the device decides
	} {
		name := strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- run(tc.args, &out, &errb) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("fbp %s did not exit within 60 s", name)
			}
			stderr := errb.String()
			assert.Equal(t, tc.code, code, "exit status; stderr: %s", stderr)
			if tc.msg == "no such device" {
				assert.Regexp(t, testdev.NoDevice, stderr) // or why no GPU answered, in a cuda build without one
			} else {
				assert.Contains(t, stderr, tc.msg)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			switch tc.code {
			case 2:
				assert.Len(t, lines, 2, "a one-line message and the usage line: %q", stderr)
				assert.Equal(t, usage, lines[len(lines)-1])
				assert.Empty(t, out.String())
			case 1:
				assert.Len(t, lines, 1, "a one-line message, no usage line: %q", stderr)
				assert.NotContains(t, stderr, "usage:")
			}
		})
	}
}
