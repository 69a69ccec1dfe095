package device_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
)

// TestOpenDefault checks the default device in every build and on every
// machine: cuda:0 with no fallback where the cuda build finds a GPU, else
// sim:0 and why. CI covers two of the three cases: the default build, and
// the cuda build on a machine with libcuda and no GPU (cuInit fails there).
func TestOpenDefault(t *testing.T) {
	dev, fallback, err := device.OpenDefault()
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()
	info := dev.Info()
	t.Logf("default device %s (%s), fallback: %v", info.Name, info.Backend, fallback)

	if info.Backend == "cuda" {
		require.True(t, device.CUDABuilt)
		assert.NoError(t, fallback)
		assert.Equal(t, "cuda:0", info.Name)
		return
	}
	assert.Equal(t, "sim:0", info.Name)
	assert.Equal(t, int64(4<<30), info.TotalMemory, "the default sim has 4 GiB")
	require.Error(t, fallback, "sim:0 is the default only for a reason")
	assert.ErrorIs(t, fallback, device.ErrNoDevice)
	if device.CUDABuilt {
		// cuInit failed (CI), or libcuda.so.1 could not be loaded (CI's check without it).
		assert.Regexp(t, `^cuda:0: no CUDA (GPU answered \(cuInit: CUDA_ERROR_[A-Z_]+ \(\d+\): .+\)|driver \(.*libcuda.*\))$`, fallback.Error())
	} else {
		assert.Contains(t, fallback.Error(), "the CUDA backend is not part of this build")
	}

	// Open("") is the same choice.
	again, err := device.Open("")
	require.NoError(t, err)
	assert.Equal(t, info.Name, again.Info().Name)
	require.NoError(t, again.Close())

	// An explicit cuda spec with no GPU is an error, not a fallback and not an exit.
	for _, spec := range []string{"cuda:0", "cuda", "cuda:1"} {
		d, err := device.Open(spec)
		assert.Nil(t, d, spec)
		assert.ErrorIs(t, err, device.ErrNoDevice, spec)
	}
	assert.Zero(t, dev.Ledger().Snapshot().Kinds[accounting.Device].Current)
}

// noticeChildEnv marks the test binary run as a child by
// TestOpenFallbackNoticeOncePerProcess.
const noticeChildEnv = "CUARRAY_TEST_NOTICE_CHILD"

// TestOpenFallbackNoticeOncePerProcess runs this test binary again as a
// process that opens the default device four times (Open("") three times,
// OpenDefault once) and sim:0 explicitly, and reads its stderr: a cuda
// build that falls back says why in exactly one line, "cuarray: cuda:0:
// ...; using sim:0"; a GPU that answered, the default build (meant to run
// on sim), and CUARRAY_FALLBACK_NOTICE=off say nothing.
func TestOpenFallbackNoticeOncePerProcess(t *testing.T) {
	if os.Getenv(noticeChildEnv) != "" {
		t.Skip("the child's own run of this test")
	}
	dev, fallback, err := device.OpenDefault()
	require.NoError(t, err)
	name := dev.Info().Name
	require.NoError(t, dev.Close())
	notice := ""
	if device.CUDABuilt && fallback != nil {
		notice = "cuarray: " + fallback.Error() + "; using " + name + "\n"
	}
	tests := []struct {
		name string
		env  string // CUARRAY_FALLBACK_NOTICE
		want string
	}{
		{"default", "", notice},
		{"off", "off", ""},
		{"on", "on", notice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestOpenFallbackNoticeChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), noticeChildEnv+"=1", device.NoticeEnv+"="+tt.env)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "child: %s%s", stdout.String(), stderr.String())
			require.Contains(t, stdout.String(), "PASS", "the child ran its test")
			assert.Equal(t, tt.want, stderr.String(), "the child's stderr (fallback: %v)", fallback)
		})
	}
}

// TestOpenFallbackNoticeChild is the child of
// TestOpenFallbackNoticeOncePerProcess: it opens the default device as a
// program would, several times.
func TestOpenFallbackNoticeChild(t *testing.T) {
	if os.Getenv(noticeChildEnv) == "" {
		t.Skip("run by TestOpenFallbackNoticeOncePerProcess as its child")
	}
	for _, spec := range []string{"", "sim:0", "", ""} {
		dev, err := device.Open(spec)
		require.NoError(t, err, spec)
		require.NoError(t, dev.Close())
	}
	dev, _, err := device.OpenDefault()
	require.NoError(t, err)
	require.NoError(t, dev.Close())
}
