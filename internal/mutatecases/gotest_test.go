package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func exitError(t *testing.T, code string) error {
	t.Helper()
	err := exec.Command("sh", "-c", "exit "+code).Run()
	require.Error(t, err)
	return err
}

func TestTestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name     string
		out      string
		timedOut bool
		err      error
		want     string
	}{
		{"tests pass", "ok  \texample.com/m\t0.01s\n", false, nil, StatusLived},
		{"a test fails", "--- FAIL: TestX\nFAIL\texample.com/m\t0.01s\n", false, exitError(t, "1"), StatusKilled},
		{"does not compile", "# example.com/m\n./a.go:3:9: invalid\nFAIL\texample.com/m [build failed]\n", false, exitError(t, "1"), StatusNotViable},
		{"setup failed", "FAIL\texample.com/m [setup failed]\n", false, exitError(t, "1"), StatusNotViable},
		{"exit status 2", "flag provided but not defined\n", false, exitError(t, "2"), StatusNotViable},
		{"another exit status", "", false, exitError(t, "3"), StatusLived},
		{"timed out", "", true, exitError(t, "1"), StatusTimedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := testOutcome([]byte(tc.out), tc.timedOut, tc.err)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := testOutcome(nil, false, os.ErrNotExist)
	assert.ErrorIs(t, err, os.ErrNotExist, "a go command that did not run is an error, not an outcome")
}

// tinyModule writes a module with no dependencies into a new folder.
func tinyModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/tiny\n\ngo 1.21\n"
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

// offline skips a test that runs the go command where PATH has none
// (goTest runs the one on PATH; the GPU machine, which runs the bundle's
// test binaries, has no Go toolchain), and keeps the go command of a test
// off the network and away from whatever GOFLAGS the caller has.
func offline(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("runs the go command on PATH, and PATH has none: %v", err)
	}
	t.Setenv("GOFLAGS", "")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	t.Setenv("GOWORK", "off")
}

func TestGoTestTimesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a test binary")
	}
	offline(t)
	dir := tinyModule(t, map[string]string{
		"slow/slow.go":      "package slow\n",
		"slow/slow_test.go": "package slow\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlow(t *testing.T) { time.Sleep(5 * time.Minute) }\n",
	})
	start := time.Now()
	_, timedOut, err := goTest(context.Background(), dir, 3*time.Second, nil, "./slow")
	assert.NoError(t, err)
	assert.True(t, timedOut, "a test that sleeps five minutes times out after three seconds")
	assert.Less(t, time.Since(start), time.Minute, "the go command and its test binary are killed")
}

func TestGoTestStopsWithItsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a test binary")
	}
	offline(t)
	dir := tinyModule(t, map[string]string{
		"slow/slow.go":      "package slow\n",
		"slow/slow_test.go": "package slow\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlow(t *testing.T) { time.Sleep(5 * time.Minute) }\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, timedOut, err := goTest(ctx, dir, time.Hour, nil, "./slow")
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the caller's end is an error, not a mutant's timeout")
	assert.False(t, timedOut)
	assert.Less(t, time.Since(start), time.Minute)
}
