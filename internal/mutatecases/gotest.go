package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// timeoutGrace is what gremlins adds to a mutant's timeout for go test's own
// -timeout, so that the timeout that ends a run is the caller's, not the test binary's.
const timeoutGrace = 2 * time.Second

// goTest runs `go test -count=1 -failfast` (and -timeout, when timeout is not
// zero) on the packages in the module folder dir, with extra arguments before
// them, and the go command and the test binaries it starts in a process group
// of their own, killed whole when ctx ends or the timeout passes. It returns
// the command's combined output, whether it timed out, and the error of the
// run (nil when the tests passed; an *exec.ExitError when they failed).
func goTest(ctx context.Context, dir string, timeout time.Duration, extra []string, pkgs ...string) (out []byte, timedOut bool, err error) {
	args := []string{"test", "-count=1", "-failfast"}
	runCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
		args = append(args, "-timeout", (timeout + timeoutGrace).String())
	}
	args = append(args, extra...)
	args = append(args, pkgs...)
	cmd := exec.CommandContext(runCtx, "go", args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	ownProcessGroup(cmd)
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return buf.Bytes(), false, fmt.Errorf("mutatecases: go test %s: %w", strings.Join(pkgs, " "), ctx.Err())
	}
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		return buf.Bytes(), true, nil
	}
	return buf.Bytes(), false, err
}

// testOutcome is the status of a mutant from its go test run, as gremlins
// gives it (internal/engine/executor.go), but for a build failure: the go
// command exits with status 1 both when a test fails and when the package
// does not compile, and gremlins, which reads only the status, calls both
// KILLED. Here a mutant the go command reports as "[build failed]" or
// "[setup failed]" is NOT VIABLE, as gremlins means it to be (status 2).
func testOutcome(out []byte, timedOut bool, err error) (string, error) {
	if timedOut {
		return StatusTimedOut, nil
	}
	if err == nil {
		return StatusLived, nil
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return "", fmt.Errorf("mutatecases: go test: %w", err)
	}
	switch exit.ExitCode() {
	case 1:
		if bytes.Contains(out, []byte(" [build failed]")) || bytes.Contains(out, []byte(" [setup failed]")) {
			return StatusNotViable, nil
		}
		return StatusKilled, nil
	case 2:
		return StatusNotViable, nil
	default:
		return StatusLived, nil
	}
}
