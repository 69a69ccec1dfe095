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

// emuSamePkgs reads the Makefile's EMU_SAME_PKGS: the packages that make
// cuda-emu-test leaves out as ones it would run exactly as make test does.
func emuSamePkgs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^EMU_SAME_PKGS\s*:=((?:[^\n]*\\\n)*[^\n]*)`).FindSubmatch(b)
	require.NotNil(t, m, "the Makefile sets EMU_SAME_PKGS")
	return strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " "))
}

// repeatedByEmulatedPass says why the emulated driver's passes would not
// run pkg's tests as make test does, or "" where they would: its files
// differ between the builds, or a test file of its opens the test device.
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
	plain, tagged := list(), list("-tags", "cuda,cudaemu")
	if plain != tagged {
		return "its files differ with -tags cuda,cudaemu"
	}
	lines := strings.SplitN(plain, "\n", 3)
	for _, f := range strings.Fields(lines[2]) {
		src, err := os.ReadFile(filepath.Join(lines[0], f))
		require.NoError(t, err)
		for _, mark := range deviceMarks {
			if strings.Contains(string(src), mark) {
				return f + " says " + mark
			}
		}
	}
	return ""
}

// TestEmulatedPassesLeaveOutOnlyRepeats: every package make cuda-emu-test
// leaves out (EMU_SAME_PKGS) has the same files in the cuda,cudaemu build
// as in the default one, and no test of it opens the test device or reads
// the emulated driver's settings, so the emulated passes would repeat
// make test's run of it. The check can fail: pool's tests open the test
// device, and package kernel has tests of the emulated build.
func TestEmulatedPassesLeaveOutOnlyRepeats(t *testing.T) {
	goTool := toolchain.Go(t, "to list the packages' files in both builds")
	pkgs := emuSamePkgs(t)
	require.NotEmpty(t, pkgs)
	for _, pkg := range pkgs {
		assert.Empty(t, repeatedByEmulatedPass(t, goTool, pkg), "%s is in EMU_SAME_PKGS", pkg)
	}
	assert.Contains(t, repeatedByEmulatedPass(t, goTool, "pool"), "testdev.Open", "the check finds a package that opens the test device")
	assert.Contains(t, repeatedByEmulatedPass(t, goTool, "device/kernel"), "files differ", "the check finds a package with files of the emulated build")
}
