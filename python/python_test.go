// Package python_test runs the Python module's tests (test_cuarray.py)
// against a freshly built libcuarray (or the one $CUARRAY_LIB names), from
// go test, so that `make test` runs them wherever /usr/bin/python3 has NumPy.
package python_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/internal/toolchain"
)

// python returns an interpreter that has NumPy, or skips the test (fails
// it when CUARRAY_REQUIRE_PYTHON is set, as CI does, so it cannot pass by
// skipping).
func python(t *testing.T) string {
	candidates := []string{os.Getenv("CUARRAY_PYTHON"), "/usr/bin/python3", "python3"}
	for _, py := range candidates {
		if py == "" {
			continue
		}
		if err := exec.Command(py, "-c", "import numpy").Run(); err == nil {
			return py
		}
	}
	msg := "no Python with NumPy (install it: make python-deps, or set CUARRAY_PYTHON)"
	if os.Getenv("CUARRAY_REQUIRE_PYTHON") != "" {
		t.Fatal(msg + "; CUARRAY_REQUIRE_PYTHON is set")
	}
	t.Skip(msg)
	return ""
}

// library returns the libcuarray the Python tests load: the one
// $CUARRAY_LIB names (the bundle's on the GPU machine, which has no go
// command), else a fresh build of ../libcuarray with libTags; without
// either the test skips.
func library(t *testing.T) string {
	return toolchain.Library(t, "../libcuarray", libTags)
}

func TestPythonModule(t *testing.T) {
	py := python(t)
	lib := library(t)
	t.Run("unittest", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hung test fails, it does not hang CI
		defer cancel()
		cmd := exec.CommandContext(ctx, py, "-m", "unittest", "-v", "test_cuarray", "test_hostile", "test_alloc", "test_plan", "test_alloc_hostile", "test_pool_ipc")
		cmd.Env = append(os.Environ(), "CUARRAY_LIB="+lib)
		if os.Getenv("CUARRAY_DEVICE") == "" {
			// sim with the stream race checker: a race in the module's own
			// stream handling fails the tests (StreamRaceError)
			cmd.Env = append(cmd.Env, "CUARRAY_DEVICE=sim:0?check=streams")
		}
		out, err := cmd.CombinedOutput()
		t.Logf("%s", out)
		require.NoError(t, err, "the Python tests failed")
		ran := regexp.MustCompile(`Ran (\d+) tests?`).FindSubmatch(out)
		require.NotNil(t, ran, "unittest printed no summary")
		n, _ := strconv.Atoi(string(ran[1]))
		require.Positive(t, n, "no Python test ran")
		require.NotRegexp(t, `skipped=`, string(out), "no Python test may skip")
	})
	// On the emulated CUDA driver, the cuda-built library's cuda devices: the
	// allocator entry points as PyTorch and CuPy call them, from many threads
	// (48 GPUs, a device for each test), and the exports of GPU arrays with
	// the stream handoff (each stream operation completing 500 ms after it
	// is queued, so the work is pending when an export asks).
	if libTags == "cuda,cudaemu" {
		t.Run("cuda", func(t *testing.T) {
			for _, run := range []struct {
				module, emulation string
				skips             int
			}{
				{"test_alloc", "devices=48", 4},
				{"test_cuda", "latency=500ms", 0},
				{"test_pool_ipc", "devices=1", 0},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				cmd := exec.CommandContext(ctx, py, "-m", "unittest", "-v", run.module)
				cmd.Env = append(os.Environ(), "CUARRAY_LIB="+lib, "CUARRAY_DEVICE=cuda:0", "CUARRAY_EMULATED_DRIVER="+run.emulation)
				out, err := cmd.CombinedOutput()
				cancel()
				t.Logf("%s", out)
				require.NoError(t, err, "%s on the emulated driver failed", run.module)
				require.Regexp(t, `Ran [1-9]\d* tests?`, string(out), "%s ran no test", run.module)
				skipped := regexp.MustCompile(`skipped=(\d+)`).FindSubmatch(out)
				n := 0
				if skipped != nil {
					n, _ = strconv.Atoi(string(skipped[1]))
				}
				require.Equal(t, run.skips, n, "%s: only the tests that need a sim device skip", run.module)
			}
		})
	}
	// cuarray.plan.calc_max_slices answers what the Go planner answers (plan_test.go).
	t.Run("calc_max_slices", func(t *testing.T) { checkCalcMaxSlices(t, py, lib) })
	// The README's Python block runs as it is shown and prints the ledger.
	t.Run("readme", func(t *testing.T) {
		readme, err := os.ReadFile("../README.md")
		require.NoError(t, err)
		blocks := regexp.MustCompile("(?s)<!-- python: readme -->\n```python\n(.*?)```").FindAllSubmatch(readme, -1)
		require.Len(t, blocks, 1, "the README has one Python block to run")
		cmd := exec.Command(py, "-c", string(blocks[0][1]))
		cmd.Env = append(os.Environ(), "CUARRAY_LIB="+lib)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the README's Python block failed:\n%s", out)
		require.Contains(t, string(out), "ledger sim:0\n", "it prints the ledger")
	})
	// The user guide's Python block (docs/guide.md, "Interop from Python")
	// runs as it is shown.
	t.Run("guide", func(t *testing.T) {
		guide, err := os.ReadFile("../docs/guide.md")
		require.NoError(t, err)
		blocks := regexp.MustCompile("(?s)<!-- python: run -->\n```python\n(.*?)```").FindAllSubmatch(guide, -1)
		require.Len(t, blocks, 1, "the guide has one Python block to run")
		cmd := exec.Command(py, "-c", string(blocks[0][1]))
		cmd.Env = append(os.Environ(), "CUARRAY_LIB="+lib)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the guide's Python block failed:\n%s", out)
		require.Equal(t, "ok\n", string(out))
	})
}
