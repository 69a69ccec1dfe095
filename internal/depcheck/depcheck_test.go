//go:build !cuda

// The cuda build links gorgonia.org/cu through device/cuda by design.

package depcheck

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/cuarray/cuarray"

// nonStandard lists the packages outside the standard library that the
// given packages link (the default build).
func nonStandard(t *testing.T, pkgs ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, pkgs...)
	out, err := exec.Command(goTool, args...).CombinedOutput()
	require.NoError(t, err, "go list:\n%s", out)
	var deps []string
	for _, line := range strings.Fields(string(out)) {
		deps = append(deps, line)
	}
	return deps
}

func TestCoreLinksOnlyTheStandardLibrary(t *testing.T) {
	core := []string{module + "/devarray", module + "/device", module + "/transfer", module + "/accounting"}
	for _, dep := range nonStandard(t, core...) {
		assert.True(t, strings.HasPrefix(dep, module+"/"), "the core packages link %s", dep)
	}
	// The check can fail: interop does link gorgonia.org/tensor and its modules.
	var foreign []string
	for _, dep := range nonStandard(t, module+"/interop") {
		if !strings.HasPrefix(dep, module+"/") {
			foreign = append(foreign, dep)
		}
	}
	assert.Contains(t, foreign, "gorgonia.org/tensor")
}
