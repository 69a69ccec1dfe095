//go:build cuda

package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The observations that need a second process: what another process's
// open of a stale IPC handle maps once the exporter has reallocated the
// freed address, and what cuEventRecord does with a destroyed stream's
// handle, which killed the process on the H100 (driver 580.159.04,
// 2026-11-27: SIGSEGV in cuEventRecord, python/test_gpu_alloc.py's
// test_frees_on_a_stream). Each runs TestObservations again in a child
// process (childEnv names the row) that prints what it saw on a line
// beginning observedPrefix; the parent writes the row from that line and
// from how the child ended.

// observedPrefix begins the line on which a child says what it saw.
const observedPrefix = "conformance observed: "

// childTime bounds a child's run: one that is still running then counts
// as hung, and the row says so.
const childTime = 20 * time.Second

// Child rows, by the value of childEnv.
const (
	childStaleIPC        = "observe-stale-ipc"
	childDestroyedStream = "observe-destroyed-stream"
	// staleIPCEnv passes the stale handle and the first bytes of the freed
	// and of the new allocation: HANDLE:OLD:NEW, in hex.
	staleIPCEnv = "CUARRAY_CONFORMANCE_STALE_IPC"
)

// observeInChild does the child's part of a row and reports whether this
// process is such a child.
func observeInChild(t *testing.T) bool {
	switch os.Getenv(childEnv) {
	case childStaleIPC:
		fmt.Println(observedPrefix + staleIPCChild(t, os.Getenv(staleIPCEnv)))
	case childDestroyedStream:
		destroyedStreamChild(t)
	case childFaultThenHostFn:
		fmt.Println(observedPrefix + faultThenHostFnChild(t))
	case childOtherContext:
		fmt.Println(observedPrefix + otherContextChild(t))
	case childPoolIPC:
		fmt.Println(observedPrefix + poolIPCChild(t)) // observe_pool_ipc_test.go
	case childPoolContext:
		fmt.Println(observedPrefix + poolContextChild(t)) // observe_pools_test.go
	default:
		return false
	}
	return true
}

// observeInChildren adds the rows that need a child process.
func observeInChildren(t *testing.T, add func(name, got string)) {
	add("another process's cuIpcOpenMemHandle of a stale handle after its exporter freed and reallocated the same address",
		observeStaleIPC(t))
	add("cuEventRecord on a destroyed stream's handle, in a child process", childOutcome(t, childDestroyedStream))
	add("a host function behind a kernel that faults, then cuStreamDestroy, cuEventDestroy, cuPointerGetAttributes, cuDevicePrimaryCtxReset, retain and cuMemAlloc, in a child process",
		childOutcome(t, childFaultThenHostFn))
	add("a second context of device 0 (cuCtxCreate) copying and writing memory the primary context allocated, in a child process",
		childOutcome(t, childOtherContext))
	observePoolIPC(t, add) // observe_pool_ipc_test.go
}

// reallocTries bounds how many allocations observeStaleIPC makes to get
// the freed address back.
const reallocTries = 8

// observeStaleIPC exports an allocation, frees it, allocates again until
// the driver hands the same address back, fills the new allocation with
// other bytes, and has a child process open the old handle and read.
func observeStaleIPC(t *testing.T) string {
	const n = 1 << 12
	host := CMalloc(n)
	defer CFree(host)
	p, c := MemAlloc(n)
	ok(t, c, "cuMemAlloc")
	old, fresh := randomBytes(n), randomBytes(n)
	copy(host.Bytes(), old)
	ok(t, MemcpyHtoD(p, host), "cuMemcpyHtoD")
	h, c := IPCGetMemHandle(p)
	ok(t, c, "cuIpcGetMemHandle")
	ok(t, MemFree(p), "cuMemFree")
	var held []uintptr
	defer func() {
		for _, q := range held {
			ok(t, MemFree(q), "cuMemFree")
		}
	}()
	for range reallocTries {
		q, c := MemAlloc(n)
		ok(t, c, "cuMemAlloc")
		held = append(held, q)
		if q == p {
			break
		}
	}
	if held[len(held)-1] != p {
		return fmt.Sprintf("not observed: %d allocations of the same size never returned the freed address", reallocTries)
	}
	copy(host.Bytes(), fresh)
	ok(t, MemcpyHtoD(p, host), "cuMemcpyHtoD")
	return childOutcome(t, childStaleIPC, staleIPCEnv+"="+hex(h)+":"+hex(old[:64])+":"+hex(fresh[:64]))
}

// staleIPCChild opens the stale handle and says what it reads.
func staleIPCChild(t *testing.T, arg string) string {
	parts := strings.Split(arg, ":")
	require.Len(t, parts, 3, "%s=%q", staleIPCEnv, arg)
	p, c := IPCOpenMemHandle(unhex(parts[0]))
	if c != Success {
		return "the open answered " + ErrorName(c)
	}
	defer IPCCloseMemHandle(p)
	got := CMalloc(64)
	defer CFree(got)
	if c := MemcpyDtoH(got, p); c != Success {
		return "opened (CUDA_SUCCESS); reading it answered " + ErrorName(c)
	}
	switch b := got.Bytes(); {
	case bytes.Equal(b, unhex(parts[2])):
		return "opened (CUDA_SUCCESS); it reads the new allocation's bytes"
	case bytes.Equal(b, unhex(parts[1])):
		return "opened (CUDA_SUCCESS); it reads the freed allocation's bytes"
	}
	return "opened (CUDA_SUCCESS); it reads bytes of neither allocation"
}

// destroyedStreamChild records an event on the handle of a stream it has
// destroyed, saying before and after: a crash leaves only the first line.
func destroyedStreamChild(t *testing.T) {
	s, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	e, c := EventCreate(0)
	ok(t, c, "cuEventCreate")
	defer EventDestroy(e)
	ok(t, StreamDestroy(s), "cuStreamDestroy")
	fmt.Println(observedPrefix + "calling cuEventRecord")
	c = EventRecord(e, s)
	fmt.Println(observedPrefix + "cuEventRecord answered " + ErrorName(c) + "; the process went on")
}

// signalLine is how Go's runtime names the signal that killed a process
// inside C code (it prints the fault and exits with status 2).
var signalLine = regexp.MustCompile(`\[signal (SIG[A-Z]+)|^(SIG[A-Z]+): `)

// childOutcome runs the child of row name and returns what it said last,
// and how it ended when it did not end well.
func childOutcome(t *testing.T, name string, env ...string) string {
	return childOutcomeWith(t, name, nil, env...)
}

// childOutcomeWith is childOutcome with files the child inherits, as its
// descriptors 3, 4, ...
func childOutcomeWith(t *testing.T, name string, files []*os.File, env ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), childTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestObservations$", "-test.v", "-test.count=1")
	// The race detector's runtime sleeps a second before a process exits;
	// a row's child need not.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(append(os.Environ(), childEnv+"="+name, "GORACE="+gorace), env...)
	cmd.ExtraFiles = files
	out, err := cmd.CombinedOutput()
	t.Logf("child %s:\n%s", name, out)
	said := ""
	var signal string
	for _, line := range strings.Split(string(out), "\n") {
		if s, found := strings.CutPrefix(line, observedPrefix); found {
			said = s
		}
		if m := signalLine.FindStringSubmatch(line); m != nil && signal == "" {
			signal = m[1] + m[2]
		}
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return fmt.Sprintf("the process was still running after %v (last said: %q)", childTime, said)
	case err == nil:
		return said
	case !errors.As(err, &exit):
		require.NoError(t, err, "run the child")
	}
	ended := fmt.Sprintf("the process exited with status %d", exit.ExitCode())
	if ws, isWait := exit.Sys().(syscall.WaitStatus); isWait && ws.Signaled() {
		ended = "the process was killed by " + sigName(ws.Signal())
	} else if signal != "" {
		ended = "the process died of " + signal
	}
	if said != "" {
		ended += " after: " + said
	}
	return ended
}

// sigName names the usual fatal signals as C does.
func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return fmt.Sprintf("signal %d (%v)", int(s), s)
}
