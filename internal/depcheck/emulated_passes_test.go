package depcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/internal/toolchain"
)

// deviceMarks are what a test that opens the test device, or reads the
// emulated driver's settings, says in its source.
var deviceMarks = []string{"testdev.Open", "device.Open(", "CUARRAY_EMULATED_DRIVER", "CUARRAY_TEST_DEVICE", "device.CUDABuilt"}

// makefileList reads the Makefile's list variable name (NAME := a b \
// c), as make cuda-emu-test and make test-latency take it.
func makefileList(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + name + `\s*:=((?:[^\n]*\\\n)*[^\n]*)`).FindSubmatch(b)
	require.NotNil(t, m, "the Makefile sets %s", name)
	pkgs := strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " "))
	require.NotEmpty(t, pkgs, name)
	return pkgs
}

// repeatedByEmulatedPass says why the emulated driver's passes or make
// cuda-test would not run pkg's tests as make test does, or "" where they
// would: its files differ with -tags cuda,cudaemu or -tags cuda, or a test
// file of its opens the test device.
func repeatedByEmulatedPass(t *testing.T, goTool, pkg string) string {
	t.Helper()
	list := func(tags ...string) string {
		args := append([]string{"list"}, tags...)
		args = append(args, "-f", "{{.Dir}}\n{{.GoFiles}} {{.CgoFiles}}\n{{join .TestGoFiles \" \"}} {{join .XTestGoFiles \" \"}}", "./"+pkg)
		c := exec.Command(goTool, args...)
		c.Dir = filepath.Join("..", "..")
		out, err := c.CombinedOutput()
		require.NoError(t, err, "go list %s:\n%s", pkg, out)
		return string(out)
	}
	plain := list()
	for _, tags := range []string{"cuda,cudaemu", "cuda"} {
		if list("-tags", tags) != plain {
			return "its files differ with -tags " + tags
		}
	}
	lines := strings.SplitN(plain, "\n", 3)
	for _, f := range strings.Fields(lines[2]) {
		if mark := fileSays(t, filepath.Join(lines[0], f), deviceMarks); mark != "" {
			return f + " says " + mark
		}
	}
	return ""
}

// fileSays returns the first of marks that the file at path contains, or "".
func fileSays(t *testing.T, path string, marks []string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, mark := range marks {
		if strings.Contains(string(src), mark) {
			return mark
		}
	}
	return ""
}

// TestEmulatedPassesLeaveOutOnlyRepeats: every package make cuda-emu-test
// and make cuda-test leave out (EMU_SAME_PKGS) has the same files in the
// cuda,cudaemu and cuda builds as in the default one, and no test of it
// opens the test device or reads the emulated driver's settings, so those
// passes would repeat make test's run of it. The check can fail: pool's tests open the test
// device, and package kernel has tests of the emulated build.
func TestEmulatedPassesLeaveOutOnlyRepeats(t *testing.T) {
	goTool := toolchain.Go(t, "to list the packages' files in both builds")
	for _, pkg := range makefileList(t, "EMU_SAME_PKGS") {
		assert.Empty(t, repeatedByEmulatedPass(t, goTool, pkg), "%s is in EMU_SAME_PKGS", pkg)
	}
	assert.Contains(t, repeatedByEmulatedPass(t, goTool, "pool"), "testdev.Open", "the check finds a package that opens the test device")
	assert.Contains(t, repeatedByEmulatedPass(t, goTool, "device/kernel"), "files differ", "the check finds a package with files of the emulated build")
}

// settingReads are what code that reads a setting or starts a process
// (which may read one) says.
var settingReads = []string{"os.Getenv", "os.LookupEnv", "os.Environ", "exec.Command"}

// latencyPassChanges says why make test-latency's settings (a test
// device with latency, sim's stream checker on for every sim device)
// could change what pkg's tests do, or "" where they cannot: its test
// binary links package device or device/sim, or its code or its tests
// read the environment or start a process.
func latencyPassChanges(t *testing.T, goTool, pkg string) string {
	t.Helper()
	c := exec.Command(goTool, "list", "-test", "-deps", "-f", "{{.ImportPath}}", "./"+pkg)
	c.Dir = filepath.Join("..", "..")
	out, err := c.CombinedOutput()
	require.NoError(t, err, "go list %s:\n%s", pkg, out)
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/cuarray/cuarray/device" || dep == "github.com/cuarray/cuarray/device/sim" {
			return "its tests link " + dep
		}
	}
	files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
	require.NoError(t, err)
	for _, f := range files {
		if read := fileSays(t, f, settingReads); read != "" {
			return filepath.Base(f) + " says " + read
		}
	}
	return ""
}

// TestLatencyPassLeavesOutOnlyRepeats: no package make test-latency leaves
// out (LATENCY_SAME_PKGS) makes a device or reads a setting, so the pass
// would repeat make test's run of it. The check can fail: package
// kernel's tests link sim, and internal/toolchain reads the environment.
func TestLatencyPassLeavesOutOnlyRepeats(t *testing.T) {
	goTool := toolchain.Go(t, "to list the packages' dependencies")
	for _, pkg := range makefileList(t, "LATENCY_SAME_PKGS") {
		assert.Empty(t, latencyPassChanges(t, goTool, pkg), "%s is in LATENCY_SAME_PKGS", pkg)
	}
	assert.Contains(t, latencyPassChanges(t, goTool, "device/kernel"), "link", "the check finds a package whose tests make devices")
	assert.Contains(t, latencyPassChanges(t, goTool, "internal/toolchain"), "says", "the check finds a package that reads the environment")
}
