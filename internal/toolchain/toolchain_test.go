package toolchain

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a test whose Skipf and Fatalf are recorded and end the
// goroutine that called them, as they end a test, without ending the real one.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Skipf(f string, a ...any)  { r.skipped = fmt.Sprintf(f, a...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...); runtime.Goexit() }

// call runs f with a recorder of t on a goroutine of its own, so that a
// skip or a fatal ends f alone; it returns what f returned ("" when it
// ended so) and the recorder.
func call(t *testing.T, f func(testing.TB) string) (string, *recorder) {
	r := &recorder{TB: t}
	var got string
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = f(r)
	}()
	<-done
	return got, r
}

// noTools makes PATH a folder with nothing in it and moves the Go tree the
// test binary was built with to root, as on the GPU machine.
func noTools(t *testing.T, root string) {
	t.Setenv("PATH", t.TempDir())
	saved := goRoot
	goRoot = func() string { return root }
	t.Cleanup(func() { goRoot = saved })
}

// goTree makes a Go tree whose bin/go has the permissions perm.
func goTree(t *testing.T, perm os.FileMode) string {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "bin", "go"), []byte("#!/bin/sh\n"), perm))
	return root
}

func TestFindGo(t *testing.T) {
	onPath := func(string) (string, error) { return "/path/to/go", nil }
	notOnPath := func(string) (string, error) { return "", exec.ErrNotFound }
	empty := t.TempDir()
	for _, tc := range []struct {
		name     string
		lookPath func(string) (string, error)
		root     string
		want     string // the command, or "" for an error
		err      string
	}{
		{name: "on PATH", lookPath: onPath, root: goTree(t, 0o755), want: "/path/to/go"},
		{name: "in the Go tree", lookPath: notOnPath, root: goTree(t, 0o755), want: "bin/go"},
		{name: "the Go tree's go is no program", lookPath: notOnPath, root: goTree(t, 0o644), err: "nor at "},
		{name: "neither", lookPath: notOnPath, root: empty, err: "no go command on PATH nor at " + filepath.Join(empty, "bin", "go") + " (no Go toolchain on this machine)"},
		{name: "no Go tree", lookPath: notOnPath, root: "", err: "no go command on PATH (no Go toolchain on this machine)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := findGo(tc.lookPath, tc.root)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			if tc.want == "bin/go" {
				tc.want = filepath.Join(tc.root, "bin", "go")
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestGo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		root    func(t *testing.T) string
		skipped string
	}{
		{name: "found", root: func(t *testing.T) string { return goTree(t, 0o755) }},
		{name: "missing", root: func(t *testing.T) string { return "" },
			skipped: "needs the go command to build X: toolchain: no go command on PATH (no Go toolchain on this machine)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root(t)
			noTools(t, root)
			got, r := call(t, func(tb testing.TB) string { return Go(tb, "to build X") })
			assert.Empty(t, r.failed)
			assert.Equal(t, tc.skipped, r.skipped)
			if tc.skipped == "" {
				assert.Equal(t, filepath.Join(root, "bin", "go"), got)
			}
		})
	}
}

// cgoLibrary is a package main that builds as a c-shared library with the
// tag answer (answer.go defines what main.go uses), and fails to build without it.
var cgoLibrary = map[string]string{
	"go.mod":    "module example.com/lib\n\ngo 1.21\n",
	"main.go":   "package main\n\nimport \"C\"\n\n//export answer\nfunc answer() C.int { return value }\n\nfunc main() {}\n",
	"answer.go": "//go:build answer\n\npackage main\n\nconst value = 42\n",
}

func TestLibrary(t *testing.T) {
	goTool, goErr := FindGo()
	pkg := t.TempDir()
	for name, text := range cgoLibrary {
		require.NoError(t, os.WriteFile(filepath.Join(pkg, name), []byte(text), 0o644))
	}
	file := filepath.Join(t.TempDir(), "libcuarray.so")
	require.NoError(t, os.WriteFile(file, []byte("a library"), 0o644))
	for _, tc := range []struct {
		name    string
		env     string
		noGo    bool   // PATH and the Go tree without a go command
		tags    string // to build pkg with
		needsGo bool
		want    string // the path returned; "built" for a library built into a temporary folder
		skipped string
		failed  string
	}{
		{name: "CUARRAY_LIB names a file", env: file, noGo: true, want: file},
		{name: "CUARRAY_LIB names no file", env: file + ".missing", noGo: true, failed: "CUARRAY_LIB=" + file + ".missing names no library file"},
		{name: "CUARRAY_LIB names a folder", env: pkg, noGo: true, failed: "CUARRAY_LIB=" + pkg + " names no library file"},
		{name: "neither CUARRAY_LIB nor go", noGo: true,
			skipped: "needs libcuarray: CUARRAY_LIB names none, and it cannot be built: toolchain: no go command on PATH (no Go toolchain on this machine)"},
		{name: "built with go and the tags", tags: "answer", needsGo: true, want: "built"},
		{name: "a build that fails", needsGo: true, failed: "building libcuarray in " + pkg + " (go build -buildmode=c-shared -o "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsGo {
				if goErr != nil {
					t.Skipf("builds a library with the go command: %v", goErr)
				}
				if testing.Short() {
					t.Skip("builds a c-shared library: not in -short")
				}
				t.Setenv("PATH", filepath.Dir(goTool)+string(os.PathListSeparator)+os.Getenv("PATH"))
				t.Setenv("GOFLAGS", "")
				t.Setenv("GOWORK", "off")
				t.Setenv("GOTOOLCHAIN", "local")
				t.Setenv("GOPROXY", "off")
			}
			if tc.noGo {
				noTools(t, "")
			}
			t.Setenv(LibraryEnv, tc.env)
			got, r := call(t, func(tb testing.TB) string { return Library(tb, pkg, tc.tags) })
			assert.Equal(t, tc.skipped, r.skipped)
			if tc.failed == "" {
				assert.Empty(t, r.failed)
			} else {
				assert.Contains(t, r.failed, tc.failed)
			}
			switch tc.want {
			case "built":
				assert.Equal(t, "libcuarray.so", filepath.Base(got))
				assert.NotEqual(t, pkg, filepath.Dir(got), "into a temporary folder")
				lib, err := os.ReadFile(got)
				require.NoError(t, err)
				assert.True(t, bytes.HasPrefix(lib, []byte("\x7fELF")) || runtime.GOOS != "linux", "a shared library")
				assert.Contains(t, string(lib), "answer", "with its exported function")
			default:
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func TestFindHistory(t *testing.T) {
	git, gitErr := exec.LookPath("git")
	realGit := func(string) (string, error) { return git, gitErr }
	noGit := func(string) (string, error) { return "", exec.ErrNotFound }
	// The module's root: a checkout where it has a .git (a folder, or a
	// worktree's file), a copy of the tree where not. (The GPU bundle
	// leaves this package out, GPU_SKIP_PKGS: its tests open no device.)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	_, statErr := os.Stat(filepath.Join(root, ".git"))
	checkout := statErr == nil

	// another makes a repository of one commit, not the project's, and
	// returns its folder and that commit.
	another := func(t *testing.T) (string, string) {
		dir := t.TempDir()
		t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
		for _, args := range [][]string{
			{"init", "-q"},
			{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "another project"},
		} {
			out, err := exec.Command(git, append([]string{"-C", dir}, args...)...).CombinedOutput()
			require.NoError(t, err, "git %v:\n%s", args, out)
		}
		out, err := exec.Command(git, "-C", dir, "rev-parse", "HEAD").Output()
		require.NoError(t, err)
		return dir, strings.TrimSpace(string(out))
	}
	for _, tc := range []struct {
		name     string
		lookPath func(string) (string, error)
		dir      func(t *testing.T) (dir, first string)
		needsGit bool
		err      string // "" when the history is the one whose first commit is first
	}{
		{name: "no git", lookPath: noGit, dir: func(*testing.T) (string, string) { return root, FirstCommit }, err: "no git on this machine"},
		{name: "not a checkout", lookPath: realGit, needsGit: true, dir: func(t *testing.T) (string, string) {
			dir := t.TempDir()
			t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir)) // no repository around the folder is looked for
			return dir, FirstCommit
		}, err: "is not in a git checkout (a copy of the tree without .git)"},
		{name: "another repository", lookPath: realGit, needsGit: true, dir: func(t *testing.T) (string, string) {
			dir, _ := another(t)
			return dir, FirstCommit
		}, err: "lacks the project's first commit " + FirstCommit[:7] + ": it is not this repository's history"},
		{name: "a repository whose first commit is given", lookPath: realGit, needsGit: true, dir: another},
		{name: "a folder inside it", lookPath: realGit, needsGit: true, dir: func(t *testing.T) (string, string) {
			dir, first := another(t)
			sub := filepath.Join(dir, "docs")
			require.NoError(t, os.Mkdir(sub, 0o755))
			return sub, first
		}},
		// The project's own checkout, which must be found: else the tests
		// that read its history would skip where they are meant to run.
		{name: "this checkout", lookPath: realGit, needsGit: true, dir: func(t *testing.T) (string, string) {
			if !checkout {
				t.Skipf("%s has no .git: a copy of the tree", root)
			}
			return filepath.Join(root, "docs"), FirstCommit
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsGit && gitErr != nil {
				t.Skipf("needs git: %v", gitErr)
			}
			dir, first := tc.dir(t)
			got, err := findHistory(tc.lookPath, dir, first)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, git, got)
		})
	}
}

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	for _, tc := range []struct {
		name     string
		path     string
		needsGit bool
		skipped  string
	}{
		{name: "no git", path: t.TempDir(), skipped: "needs this repository's git history to read it: toolchain: no git on this machine: "},
		{name: "no checkout", path: os.Getenv("PATH"), needsGit: true,
			skipped: "needs this repository's git history to read it: toolchain: " + dir + " is not in a git checkout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath("git"); tc.needsGit && err != nil {
				t.Skipf("needs git: %v", err)
			}
			t.Setenv("PATH", tc.path)
			got, r := call(t, func(tb testing.TB) string { return History(tb, dir, "to read it") })
			assert.Empty(t, got)
			assert.Empty(t, r.failed)
			assert.Contains(t, r.skipped, tc.skipped)
			assert.NotEmpty(t, r.skipped)
		})
	}
}
