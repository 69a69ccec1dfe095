//go:build cuda && cudaemu && linux

// Package upstream runs gorgonia.org/cu v0.9.6's own tests, unchanged, on
// the emulated CUDA driver: the tests of the module's root package, from
// the Go module cache, beside the sources of cuarray's copy in
// third_party/gorgonia-cu, in a module of their own made in a temporary
// directory, with a TestMain that binds the copy to the emulated driver
// (built with the tag cudaemu_nobind, so that it does not bind the copy
// cuarray's build uses) and calls cu.Init.
//
// CUARRAY_UPSTREAM_DIR names a directory to build the module in and keep
// (cu.test there reruns a test: ./cu.test -test.run TestArray -test.v).
//
// It builds a test binary with the race detector, and one without it for
// the tests in withoutRace, and runs each upstream test in a process of its
// own, so that one that hangs or crashes fails alone. It takes minutes, so
// it runs only when CUARRAY_UPSTREAM_CU=1, as make cuda-emu-test and make
// cuda-emu-upstream set it:
//
//	CUARRAY_UPSTREAM_CU=1 go test -tags cuda,cudaemu -race -run TestUpstreamGorgoniaCu ./device/cuda/emulated/upstream/
package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// upstreamVersion is the gorgonia.org/cu version cuarray's copy is of.
const upstreamVersion = "gorgonia.org/cu@v0.9.6"

// knownFailures are the upstream tests that fail on the emulated driver,
// each with why. A test that starts to pass fails the harness until it is
// taken off this list, so the list cannot go stale.
var knownFailures = map[string]string{
	"TestMultipleContextSingleHostThread": "expects cuMemcpyDtoH with one context current to copy from another context's memory (cucontext_test.go:237), " +
		"and a kernel of one context to run on another's memory (:259): the emulated driver refuses the copy (CUDA_ERROR_INVALID_VALUE) and the kernel faults " +
		"(CUDA_ERROR_ILLEGAL_ADDRESS), as the CUDA C++ Programming Guide's driver API chapter says: \"each context has its own distinct address space. " +
		"As a result, CUdeviceptr values from different contexts reference different memory locations\"; the test relies on what the guide does not promise. " +
		"A conformance row (device/cuda/conformance, observe_other_context_test.go) logs what a GPU does there",
}

// withoutRace are the upstream tests that run in a binary built without
// the race detector, each with why; every other test runs with it.
var withoutRace = map[string]string{
	"TestLargeBatch": "its 104,729 launches of a 1,000-thread block took 150 s of a fresh clone's CI run with the race detector " +
		"and 29 s without it run alone (docs/perf.md, \"The upstream harness's largest test\"); TestBatchContext runs the same " +
		"batched driver calls with the race detector",
}

// lostContextReruns is how many times the harness reruns an upstream test
// that failed only because its context was not current. Upstream's tests
// make a context current (cuCtxCreate "creates a new CUDA context and
// associates it with the calling thread", the Driver API says) from a
// goroutine that has not called runtime.LockOSThread, and Go may move that
// goroutine to another thread between two driver calls: "The calling
// goroutine will always execute in that thread" is promised only to a
// goroutine that has called LockOSThread.
// The emulated driver keeps the current context per thread, as the real
// one does, so such a test fails now and then with CUDA_ERROR_INVALID_CONTEXT
// on either (about 2 runs in 60 of TestMemset alone with the race detector
// on a 2-core machine). A test that loses its context on every run still
// fails.
const lostContextReruns = 2

// lostContext reports whether a failed upstream test's output shows a
// driver call made with no current context: gorgonia.org/cu's text of
// CUDA_ERROR_INVALID_CONTEXT.
func lostContext(log string) bool {
	return strings.Contains(log, "InvalidContext")
}

// The harness's two test binaries, in its module directory.
const (
	raceBinary  = "cu.test"        // built with the race detector
	plainBinary = "cu-norace.test" // built without it, for the tests in withoutRace
)

// build builds upstream's tests in the harness module dir into binary,
// with the extra go test flags given.
func build(t *testing.T, goTool, dir, binary string, flags ...string) {
	t.Helper()
	args := append([]string{"test", "-c", "-vet=off"}, flags...)
	args = append(args, "-tags", "cuda,cudaemu,cudaemu_nobind", "-o", binary, ".")
	cmd := exec.Command(goTool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build upstream's tests (%s) against third_party/gorgonia-cu:\n%s", binary, out)
}

// harnessMain is the TestMain of the harness, in package cu.
const harnessMain = `//go:build cuda && cudaemu && linux

package cu

import (
	"fmt"
	"os"
	"testing"
	"unsafe"

	"github.com/cuarray/cuarray/device/cuda/emulated"
)

// TestMain binds this copy of the package to cuarray's emulated CUDA
// driver, as package emulated binds cuarray's own copy, and initializes it.
func TestMain(m *testing.M) {
	UseDriver(func(symbol string) unsafe.Pointer {
		if f, ok := emulated.Resolve(symbol); ok {
			return f
		}
		return Unimplemented()
	})
	if err := Init(); err != nil {
		fmt.Fprintf(os.Stderr, "cu.Init on the emulated driver: %v\n", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
`

func TestUpstreamGorgoniaCu(t *testing.T) {
	if os.Getenv("CUARRAY_UPSTREAM_CU") != "1" {
		t.Skip("builds and runs gorgonia.org/cu v0.9.6's tests in a module of their own (minutes): CUARRAY_UPSTREAM_CU=1 runs it, as make cuda-emu-test does")
	}
	goTool := goCommand(t)
	root := repoRoot(t)
	up := upstreamDir(t, goTool, root)
	dir := os.Getenv("CUARRAY_UPSTREAM_DIR") // to keep the harness module, to rerun a test by hand
	if dir == "" {
		dir = t.TempDir()
	}
	names := assemble(t, root, up, dir)
	require.Len(t, names, 20, "gorgonia.org/cu v0.9.6 has 20 tests in its root package")

	// Upstream's tests are as upstream wrote them: -vet=off, as go vet
	// finds what it would in them. Checkptr is off in package cu, which
	// the race detector turns on: BatchedContext.DoWork turns a
	// C.uintptr_t back into a Go pointer (batch.go), and checkptr stops
	// the process there ("fatal error: checkptr: pointer arithmetic
	// result points to invalid allocation") on any driver. The PTX
	// interpreter is built without the race detector's instrumentation, as
	// make cuda-emu-test builds it (EMU_RACE in the Makefile).
	build(t, goTool, dir, raceBinary, "-race", "-gcflags=gorgonia.org/cu=-d=checkptr=0",
		"-gcflags=github.com/cuarray/cuarray/device/ptx=-race=false")
	build(t, goTool, dir, plainBinary)

	var passed atomic.Int32
	t.Run("upstream", func(t *testing.T) {
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				reason, known := knownFailures[name]
				binary := raceBinary
				if _, plain := withoutRace[name]; plain {
					binary = plainBinary
				}
				ok, log := runOne(t, dir, binary, name, "", known)
				for rerun := 1; !ok && !known && rerun <= lostContextReruns && lostContext(log); rerun++ {
					t.Logf("%s lost its context (run %d of %d): Go moved its goroutine to another thread; rerunning it\n%s",
						name, rerun, lostContextReruns+1, excerpt(log, 600))
					ok, log = runOne(t, dir, binary, name, "", known)
				}
				if ok {
					passed.Add(1)
				}
				switch {
				case ok && known:
					t.Errorf("%s passes now: take it off knownFailures (%s)", name, reason)
				case ok:
				case known:
					t.Logf("%s fails, as expected: %s\n%s", name, reason, excerpt(log, 1500))
				default:
					t.Errorf("%s failed on the emulated driver:\n%s", name, excerpt(log, 6000))
				}
			})
		}
	})
	t.Logf("gorgonia.org/cu v0.9.6's tests on the emulated driver: %d of %d pass", passed.Load(), len(names))
	for _, name := range names {
		if reason, ok := knownFailures[name]; ok {
			t.Logf("  fails: %s: %s", name, reason)
		}
	}
}

// runOne runs upstream test name in a process of its own, from the harness
// binary given, and reports
// whether it passed, with its output. config, unless empty, is the
// emulated driver's configuration (CUARRAY_EMULATED_DRIVER); else the
// test's own, or devices=2. A test expected to fail gets a minute: upstream's
// batch tests, once a launch fails, call t.Fatalf from a goroutine of their
// own and spin until the timeout, waiting for a signal that goroutine was to
// send.
func runOne(t *testing.T, dir, binary, name, config string, expectFailure bool) (bool, string) {
	t.Helper()
	timeout := 7 * time.Minute
	if expectFailure {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, binary), "-test.run", "^"+name+"$", "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
	cmd.Dir = dir
	env := os.Environ()
	switch {
	case config != "":
		env = append(env, "CUARRAY_EMULATED_DRIVER="+config)
	case os.Getenv("CUARRAY_EMULATED_DRIVER") == "":
		env = append(env, "CUARRAY_EMULATED_DRIVER=devices=2")
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return err == nil && bytes.Contains(out, []byte("--- PASS: "+name)), string(out)
}

// goCommand returns the go command of the toolchain running the test.
func goCommand(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	_, err := os.Stat(p)
	require.NoError(t, err, "no go command on PATH or in GOROOT")
	return p
}

// repoRoot returns the directory of cuarray's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/cuarray/cuarray\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no cuarray go.mod above the test's directory")
		dir = parent
	}
}

// upstreamDir returns upstream's module directory in the module cache,
// downloading it when absent (go mod download).
func upstreamDir(t *testing.T, goTool, root string) string {
	t.Helper()
	cmd := exec.Command(goTool, "mod", "download", "-json", upstreamVersion)
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go mod download %s", upstreamVersion)
	var m struct{ Dir, Error string }
	require.NoError(t, json.Unmarshal(out, &m), "go mod download -json: %s", out)
	require.Empty(t, m.Error, "go mod download %s", upstreamVersion)
	return m.Dir
}

var testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)

// assemble writes the harness module into dir: the sources of
// third_party/gorgonia-cu, upstream's tests and testdata, the TestMain, and
// a go.mod that requires cuarray (replaced by root) with cuarray's own
// requirements. It returns the names of upstream's tests.
func assemble(t *testing.T, root, up, dir string) []string {
	t.Helper()
	fork := filepath.Join(root, "third_party", "gorgonia-cu")
	for _, pattern := range []string{"*.go", "*.c", "*.h"} {
		files, err := filepath.Glob(filepath.Join(fork, pattern))
		require.NoError(t, err)
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				copyFile(t, f, filepath.Join(dir, filepath.Base(f)))
			}
		}
	}
	tests, err := filepath.Glob(filepath.Join(up, "*_test.go"))
	require.NoError(t, err)
	var names []string
	for _, f := range tests {
		b := copyFile(t, f, filepath.Join(dir, filepath.Base(f)))
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			names = append(names, string(m[1]))
		}
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "testdata"), 0o755))
	data, err := os.ReadDir(filepath.Join(up, "testdata"))
	require.NoError(t, err)
	for _, e := range data {
		if e.Type().IsRegular() {
			copyFile(t, filepath.Join(up, "testdata", e.Name()), filepath.Join(dir, "testdata", e.Name()))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "zz_harness_main_test.go"), []byte(harnessMain), 0o644))

	goVersion, requires := modRequirements(t, filepath.Join(root, "go.mod"))
	mod := fmt.Sprintf("module gorgonia.org/cu\n\ngo %s\n\nrequire github.com/cuarray/cuarray v0.0.0-00010101000000-000000000000\n\nrequire (\n%s)\n\nreplace github.com/cuarray/cuarray => %s\n",
		goVersion, requires, root)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644))
	var sum []string
	for _, f := range []string{filepath.Join(root, "go.sum"), filepath.Join(up, "go.sum")} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		sum = append(sum, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	slices.Sort(sum)
	sum = slices.Compact(sum)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), []byte(strings.Join(sum, "\n")+"\n"), 0o644))
	slices.Sort(names)
	return names
}

// modRequirements returns the go version of a go.mod and its requirements,
// one "path version" line each, without gorgonia.org/cu (the harness module
// is that module).
func modRequirements(t *testing.T, gomod string) (string, string) {
	t.Helper()
	f, err := os.Open(gomod)
	require.NoError(t, err)
	defer f.Close()
	var goVersion, requires string
	inBlock := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		fields := strings.Fields(line)
		switch {
		case len(fields) == 2 && fields[0] == "go":
			goVersion = fields[1]
		case line == "require (":
			inBlock = true
		case line == ")":
			inBlock = false
		case inBlock && len(fields) >= 2 && fields[0] != "gorgonia.org/cu":
			requires += "\t" + fields[0] + " " + fields[1] + "\n"
		case len(fields) >= 3 && fields[0] == "require" && fields[1] != "gorgonia.org/cu":
			requires += "\t" + fields[1] + " " + fields[2] + "\n"
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, goVersion, "no go line in %s", gomod)
	return goVersion, requires
}

func copyFile(t *testing.T, from, to string) []byte {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o644))
	return b
}

// excerpt returns s, or its first and last n/2 bytes when longer than n:
// a crash's message comes first, and a test's verdict last.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n/2] + "\n...\n" + s[len(s)-n/2:]
}

func TestLostContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  string
		want bool
	}{
		{"no current context", "=== RUN   TestMemset\n    memory_test.go:224: InvalidContext\n--- FAIL: TestMemset (0.00s)\nFAIL\n", true},
		{"wrong values", "=== RUN   TestMemset\n--- FAIL: TestMemset (0.07s)\nFAIL\n", false},
		{"another error", "=== RUN   TestMalloc\n    memory_test.go:30: OutOfMemory\n--- FAIL: TestMalloc (0.01s)\nFAIL\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, lostContext(tc.log))
		})
	}
}
