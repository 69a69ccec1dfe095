package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device"
)

// noticeRE is the one line a cuda build without a GPU writes on stderr.
// cuInit failed (CI: libcuda and no GPU), or libcuda.so.1 is not there at all.
const noticeRE = `^cuarray: cuda:0: no CUDA (GPU answered \(cuInit: CUDA_ERROR_[A-Z_]+ \(\d+\): [^\n]+\)|driver \([^\n]*libcuda[^\n]*\)); using sim:0\n$`

// TestInfoDefaultDevice runs `cuarray info` with no -device, text and JSON,
// in whatever build and on whatever machine the test runs: a cuda build
// with a GPU shows cuda:0 and no notice; a cuda build without one (CI:
// libcuda and no GPU) shows sim:0, exits 0 and says why in one line on
// stderr; the default build shows sim:0 quietly (-json says why).
func TestInfoDefaultDevice(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"text", []string{"info"}},
		{"json", []string{"info", "-json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runCmd(tt.args...)
			require.Equal(t, 0, code, stderr)
			t.Logf("stderr: %q", stderr)
			var name, fallback string
			if tt.name == "json" {
				var rep struct {
					Device   struct{ Name, Backend string }
					Fallback string `json:"fallback"`
				}
				require.NoError(t, json.Unmarshal([]byte(out), &rep), "stdout is only the JSON")
				name, fallback = rep.Device.Name, rep.Fallback
			} else {
				first, _, _ := strings.Cut(out, "\n")
				name = strings.Fields(strings.TrimPrefix(first, "device"))[0]
			}
			switch {
			case name == "cuda:0":
				assert.True(t, device.CUDABuilt)
				assert.Empty(t, stderr, "a GPU answered: nothing to say")
				assert.Empty(t, fallback)
			case device.CUDABuilt:
				assert.Equal(t, "sim:0", name)
				assert.Regexp(t, noticeRE, stderr, "one line saying why not cuda:0")
				if tt.name == "json" {
					assert.Equal(t, strings.TrimSuffix(strings.TrimPrefix(stderr, "cuarray: "), "; using sim:0\n"), fallback)
				}
			default:
				assert.Equal(t, "sim:0", name)
				assert.Empty(t, stderr, "the default build is meant to run on sim: no notice")
				if tt.name == "json" {
					assert.Contains(t, fallback, "the CUDA backend is not part of this build")
				}
			}
		})
	}
}

// TestInfoCUDASpecWithoutGPU: asking for cuda:0 where no GPU answers is a
// one-line error and exit status 1, in both builds, never a fallback.
func TestInfoCUDASpecWithoutGPU(t *testing.T) {
	dev, fallback, err := device.OpenDefault()
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	if fallback == nil {
		t.Skip("a GPU answered: cuda:0 opens")
	}
	code, out, stderr := runCmd("info", "-device", "cuda:0")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	assert.True(t, strings.HasPrefix(stderr, "cuarray info: "), stderr)
	if device.CUDABuilt {
		assert.Regexp(t, `^cuarray info: cuda:0: no CUDA (GPU answered \(cuInit: CUDA_ERROR_|driver \()`, stderr)
	} else {
		assert.Contains(t, stderr, "not part of this build")
	}
}
