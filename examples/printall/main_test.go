package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// childEnv makes the test binary run the program instead of its tests.
const childEnv = "CUARRAY_PRINTALL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

// The program that prints every value a user can hold, on the default
// device of this build (sim:0 with its 4 GiB, or cuda:0 on the emulated
// driver in a cuda,cudaemu build), prints each in a bounded line and
// stays under 100 MB resident and a second of CPU time: what a first
// fmt.Println of a device must cost.
func TestPrintingEveryValueIsCheap(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "printall failed: %s", stderr.String())

	out := stdout.String()
	require.Less(t, len(out), 64<<10, "the whole printout is a few pages")
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		require.Less(t, len(line), 4<<10, "one value, one bounded line: %.200s…", line)
	}
	for _, name := range []string{"device", "stream", "event", "array", "view", "pinned", "pool", "copier",
		"async copy", "kernels", "plan", "array iface", "tensor engine", "workspace", "ledger", "snapshot", "out of memory"} {
		for _, verb := range []string{"%v", "%+v", "%#v"} {
			assert.Regexp(t, `(?m)^`+name+` +`+regexpQuote(verb)+` +\S`, out, "%s printed with %s", name, verb)
		}
	}
	assert.Contains(t, stderr.String(), "values,", "the closing line")

	usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("this system reports no rusage for a child process: its memory and CPU time cannot be read")
	}
	rss := usage.Maxrss * 1024 // kilobytes on Linux
	cpu := time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
	t.Logf("printall: %d bytes printed, %.1f MB resident at most, %v of CPU", len(out), float64(rss)/1e6, cpu)
	assert.Less(t, rss, int64(100e6), "under 100 MB resident")
	assert.Less(t, cpu, time.Second, "under a second of CPU time")
}

// regexpQuote escapes the verb's plus sign and hash for a regexp.
func regexpQuote(verb string) string {
	return strings.NewReplacer("+", `\+`, "#", `\#`).Replace(verb)
}
