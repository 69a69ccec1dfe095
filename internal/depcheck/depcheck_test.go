//go:build !cuda

// The cuda build links gorgonia.org/cu through device/cuda by design.

package depcheck

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/internal/toolchain"
)

const module = "github.com/cuarray/cuarray"

// nonStandard lists the packages outside the standard library that the
// given packages link (the default build).
func nonStandard(t *testing.T, pkgs ...string) []string {
	t.Helper()
	return nonStandardTagged(t, "", pkgs...)
}

// nonStandardTagged is nonStandard for the build with the given tags.
func nonStandardTagged(t *testing.T, tags string, pkgs ...string) []string {
	t.Helper()
	goTool := toolchain.Go(t, "to list the packages' dependencies")
	args := []string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, pkgs...)
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
	// The check can fail: the gorgonia interop does link gorgonia.org/tensor and its modules.
	var foreign []string
	for _, dep := range nonStandard(t, module+"/interop/gorgonia") {
		if !strings.HasPrefix(dep, module+"/") {
			foreign = append(foreign, dep)
		}
	}
	assert.Contains(t, foreign, "gorgonia.org/tensor")
}

// TestInteropLinksNoTensorLibrary: a program that imports interop for the
// descriptor protocols (CAI, DLPack, IPC) links the standard library and
// cuarray's own packages only; gorgonia.org/tensor and the modules it
// brings in (arrow, protobuf, gonum) come with interop/gorgonia alone.
func TestInteropLinksNoTensorLibrary(t *testing.T) {
	deps := nonStandard(t, module+"/interop")
	require.Contains(t, deps, module+"/interop")
	for _, dep := range deps {
		assert.True(t, strings.HasPrefix(dep, module+"/"), "interop links %s", dep)
		assert.NotEqual(t, module+"/interop/gorgonia", dep, "interop links its gorgonia package")
	}
}

// MPI stays outside the core: with the mpi tag the core packages still link
// neither package mpi nor anything outside the module and the standard
// library, and package mpi links only those (its C side is Open MPI's).
func TestMPIIsOutsideTheCore(t *testing.T) {
	core := []string{module + "/devarray", module + "/device", module + "/transfer", module + "/accounting", module + "/pinned"}
	for _, dep := range nonStandardTagged(t, "mpi", core...) {
		assert.NotEqual(t, module+"/mpi", dep, "a core package links package mpi")
		assert.True(t, strings.HasPrefix(dep, module+"/"), "the core packages link %s", dep)
	}
	deps := nonStandardTagged(t, "mpi", module+"/mpi")
	assert.Contains(t, deps, module+"/mpi")
	for _, dep := range deps {
		assert.True(t, strings.HasPrefix(dep, module+"/"), "package mpi links %s", dep)
	}
}
