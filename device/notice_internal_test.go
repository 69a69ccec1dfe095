package device

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFallbackNotice: the line Open("") writes, and when it writes none,
// in every build (the cuda build's case is a parameter here, so the
// default build tests it too).
func TestFallbackNotice(t *testing.T) {
	why := fmt.Errorf("cuda:0: no CUDA GPU answered (cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected): %w", ErrNoDevice)
	line := "cuarray: " + why.Error() + "; using sim:0\n"
	tests := []struct {
		name      string
		cudaBuilt bool
		env       string
		fallback  error
		want      string
	}{
		{"cuda build, no GPU", true, "", why, line},
		{"cuda build, no GPU, notice on", true, "on", why, line},
		{"cuda build, no GPU, notice off", true, "off", why, ""},
		{"cuda build, no GPU, notice OFF", true, " OFF ", why, ""},
		{"cuda build, no GPU, notice 0", true, "0", why, ""},
		{"cuda build, no GPU, notice false", true, "false", why, ""},
		{"cuda build, a GPU answered", true, "", nil, ""},
		{"default build: meant to run on sim", false, "", why, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, fallbackNotice(tt.cudaBuilt, tt.env, tt.fallback, "sim:0"))
		})
	}
}

// TestNotifierOnce: however many goroutines open the default device, the
// notice is written once; an empty line (a silenced notice) uses up nothing.
func TestNotifierOnce(t *testing.T) {
	var b strings.Builder
	n := &notifier{w: &b}
	n.note("")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.note(fmt.Sprintf("line %d\n", i))
		}()
	}
	wg.Wait()
	n.note("later\n")
	assert.Equal(t, 1, strings.Count(b.String(), "\n"), "one line in all: %q", b.String())
	assert.Regexp(t, `^line \d+\n$`, b.String())
}
