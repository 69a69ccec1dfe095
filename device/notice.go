package device

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// NoticeEnv names the environment variable that silences the line Open("")
// writes on stderr when a cuda build falls back to sim:0: set it to "off"
// (or "0", "false"). OpenDefault never writes it; it returns the reason.
const NoticeEnv = "CUARRAY_FALLBACK_NOTICE"

// fallbackNotice is the line Open("") writes when the default device is
// name rather than cuda:0 for the reason fallback, or "" when it says
// nothing: the build has no CUDA backend (built without -tags cuda, the
// program is meant to run on sim), cuda:0 opened (fallback is nil), or env,
// NoticeEnv's value, turns the notice off.
func fallbackNotice(cudaBuilt bool, env string, fallback error, name string) string {
	if !cudaBuilt || fallback == nil {
		return ""
	}
	switch strings.ToLower(strings.TrimSpace(env)) {
	case "off", "0", "false", "no":
		return ""
	}
	return fmt.Sprintf("cuarray: %v; using %s\n", fallback, name)
}

// notifier writes a line to w once: the first non-empty line it is given.
type notifier struct {
	once sync.Once
	w    io.Writer
}

// note writes line unless it is empty or a line was written before.
func (n *notifier) note(line string) {
	if line == "" {
		return
	}
	n.once.Do(func() { fmt.Fprint(n.w, line) })
}

// defaultNotifier says once per process, on stderr, that Open("") fell back.
var defaultNotifier = &notifier{w: os.Stderr}

// noteFallback tells stderr, once per process, why Open("") opened dev
// and not cuda:0 (see fallbackNotice for when it says nothing).
func noteFallback(dev Device, fallback error) {
	if fallback == nil {
		return
	}
	defaultNotifier.note(fallbackNotice(CUDABuilt, os.Getenv(NoticeEnv), fallback, dev.Info().Name))
}
