// Package toolchain finds what some of cuarray's tests run besides their own
// binary: the go command, the C library libcuarray, and this repository's
// git history. The GPU machine runs the test binaries of a bundle (make
// gpu-bundle, .gpu/run.sh) in a copy of the tree that has no Go toolchain
// and no .git, with CUARRAY_LIB naming the bundle's libcuarray.so: there a
// test that needs the go command or the history skips and says why, and a
// test that loads libcuarray loads the bundle's. In a checkout with Go and
// git every such test runs, and fails as it would.
package toolchain

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// LibraryEnv names the environment variable that names a built libcuarray
// (a c-shared library); .gpu/run.sh sets it to the bundle's.
const LibraryEnv = "CUARRAY_LIB"

// FirstCommit is the project's first commit: a git history that holds it is
// this repository's, one that does not (another repository around a copy of
// the tree, a shallow clone) cannot answer for the project's commits.
const FirstCommit = "aa76a6a90f7813ca6ddbf5df0bc728ea6215ff90"

// goRoot is the Go tree the test binary was built with: where the go
// command is looked for when it is not on PATH (a test run by go test
// from a shell whose PATH lacks it). A variable, so that tests can move it.
var goRoot = runtime.GOROOT

// FindGo returns the go command: the one on PATH, else the one in the Go
// tree the test binary was built with; the error says where it looked.
func FindGo() (string, error) {
	return findGo(exec.LookPath, goRoot())
}

// findGo is FindGo with its places to look given.
func findGo(lookPath func(string) (string, error), root string) (string, error) {
	onPath, err := lookPath("go")
	if err == nil {
		return onPath, nil
	}
	where := "no go command on PATH"
	if root != "" {
		inRoot := filepath.Join(root, "bin", "go")
		if st, statErr := os.Stat(inRoot); statErr == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return inRoot, nil
		}
		where += " nor at " + inRoot
	}
	return "", fmt.Errorf("toolchain: %s (no Go toolchain on this machine)", where)
}

// Go returns the go command, or skips the test, saying what it needed the
// command for (why, as "to build the README's blocks") and where it looked.
func Go(t testing.TB, why string) string {
	t.Helper()
	goTool, err := FindGo()
	if err != nil {
		t.Skipf("needs the go command %s: %v", why, err)
	}
	return goTool
}

// Library returns the libcuarray a test is to load: the file $CUARRAY_LIB
// names (the test fails when that is no file), else one built from the
// package folder pkgDir (the test's own folder ".", or "../libcuarray")
// with the build tags tags into a temporary folder. Without either it
// skips, saying so.
func Library(t testing.TB, pkgDir, tags string) string {
	t.Helper()
	if lib := os.Getenv(LibraryEnv); lib != "" {
		st, err := os.Stat(lib)
		if err != nil || !st.Mode().IsRegular() {
			t.Fatalf("%s=%s names no library file: %v", LibraryEnv, lib, err)
		}
		t.Logf("libcuarray: %s (%s)", lib, LibraryEnv)
		return lib
	}
	goTool, err := FindGo()
	if err != nil {
		t.Skipf("needs libcuarray: %s names none, and it cannot be built: %v", LibraryEnv, err)
	}
	lib := filepath.Join(t.TempDir(), "libcuarray.so")
	args := []string{"build", "-buildmode=c-shared", "-o", lib}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(goTool, append(args, ".")...)
	cmd.Dir = pkgDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building libcuarray in %s (go %s .): %v\n%s", pkgDir, strings.Join(args, " "), err, out)
	}
	t.Logf("libcuarray: built from %s (tags %q)", pkgDir, tags)
	return lib
}

// FindHistory returns the git command when dir lies in a checkout of this
// repository with its history: git is on PATH, dir is in a git work tree,
// and its history holds FirstCommit. The error says which is missing.
func FindHistory(dir string) (string, error) {
	return findHistory(exec.LookPath, dir, FirstCommit)
}

// findHistory is FindHistory with the way to find git and the first commit given.
func findHistory(lookPath func(string) (string, error), dir, first string) (string, error) {
	git, err := lookPath("git")
	if err != nil {
		return "", fmt.Errorf("toolchain: no git on this machine: %w", err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // for the messages
	}
	top, err := exec.Command(git, "-C", dir, "rev-parse", "--show-toplevel").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("toolchain: %s is not in a git checkout (a copy of the tree without .git): git rev-parse: %s",
			dir, strings.TrimSpace(string(top)))
	}
	if err := exec.Command(git, "-C", dir, "cat-file", "-e", first+"^{commit}").Run(); err != nil {
		return "", fmt.Errorf("toolchain: the history of %s lacks the project's first commit %.7s: it is not this "+
			"repository's history (another repository around a copy of the tree, or a shallow clone)",
			strings.TrimSpace(string(top)), first)
	}
	return git, nil
}

// History returns the git command to read this repository's history from
// dir with, or skips the test, saying what it needed the history for (why,
// as "to look the docs' commits up") and what is missing.
func History(t testing.TB, dir, why string) string {
	t.Helper()
	git, err := FindHistory(dir)
	if err != nil {
		t.Skipf("needs this repository's git history %s: %v", why, err)
	}
	return git
}
