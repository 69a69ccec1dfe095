package docs

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

// usermoduleBlock is a README block that TestUserModule runs: the shell
// steps of one way ("replace", "workspace") or the program ("main.go").
var usermoduleBlock = regexp.MustCompile("(?s)<!-- usermodule: (\\S+) -->\n```(?:sh|go)\n(.*?)```")

// TestUserModule does what the README's "Using cuarray from your own
// module" says, both ways, as a user would: in a temporary directory it
// makes a module outside this one, points it at this checkout (the
// `git clone` step is a link to it), writes the README's main.go and runs
// it on sim. It needs the module cache that this module's own build
// fills (CI runs go mod download), and no network but the Go module proxy.
//
// Both ways use one directory, the second after the first's module is
// removed: the go command keys its build cache by each package's
// directory, so cuarray's packages, reached through the same link, are
// compiled once for both.
func TestUserModule(t *testing.T) {
	if cudaBuild {
		t.Skip("the outside module's builds name their tags themselves (none, cuda, cuda,cudaemu), whatever this binary's: make test runs them all, a -tags cuda run of the docs tests would only repeat them")
	}
	goTool := toolchain.Go(t, "to build an outside module")
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	blocks := map[string]string{}
	for _, m := range usermoduleBlock.FindAllSubmatch(readme, -1) {
		blocks[string(m[1])] = string(m[2])
	}
	mainGo := blocks["main.go"]
	require.NotEmpty(t, mainGo, "the README shows the outside module's main.go")
	_, want, found := strings.Cut(mainGo, "// Output: ")
	require.True(t, found, "main.go says what it prints")
	want, _, _ = strings.Cut(want, "\n")
	checkout, err := filepath.Abs("..")
	require.NoError(t, err)
	goSum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	require.NoError(t, err)

	top := t.TempDir()
	for _, way := range []string{"replace", "workspace"} {
		t.Run(way, func(t *testing.T) {
			steps := blocks[way]
			require.NotEmpty(t, steps, "the README shows the %s way", way)
			entries, err := os.ReadDir(top)
			require.NoError(t, err)
			for _, e := range entries {
				require.NoError(t, os.RemoveAll(filepath.Join(top, e.Name())), "the way before's files")
			}
			dir := top
			ran := ""
			for _, line := range strings.Split(steps, "\n") {
				line, _, _ = strings.Cut(line, "#")
				for _, cmd := range strings.Split(line, "&&") {
					args := strings.Fields(cmd)
					switch {
					case len(args) == 0:
					case args[0] == "git" && len(args) > 1 && args[1] == "clone":
						// The clone is this checkout.
						require.NoError(t, os.Symlink(checkout, filepath.Join(dir, args[len(args)-1])))
					case args[0] == "mkdir" && len(args) == 2:
						require.NoError(t, os.Mkdir(filepath.Join(dir, args[1]), 0o755))
					case args[0] == "cd" && len(args) == 2:
						dir = filepath.Join(dir, args[1])
						// The program is written first; the README writes it after go mod init.
						require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(mainGo), 0o644))
					case args[0] == "go":
						if args[1] == "mod" && args[2] == "tidy" {
							// The checkout's sums, so that tidy needs no checksum database.
							require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), goSum, 0o644))
						}
						c := exec.Command(goTool, args[1:]...)
						c.Dir = dir
						c.Env = userEnv(dir)
						out, err := c.CombinedOutput()
						require.NoError(t, err, "%s in %s:\n%s", strings.Join(args, " "), dir, out)
						ran = strings.Join(withoutDownloads(strings.Split(string(out), "\n")), "\n")
					default:
						t.Fatalf("the README's %s steps say %q, which the test does not know how to do", way, strings.TrimSpace(cmd))
					}
				}
			}
			assert.Equal(t, want, strings.TrimSpace(ran), "what go run . printed")
			gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			require.NoError(t, err)
			if way == "replace" {
				assert.Contains(t, string(gomod), "replace github.com/cuarray/cuarray => ../cuarray")
				assert.Contains(t, string(gomod), "replace gorgonia.org/cu v0.9.6 => ../cuarray/third_party/gorgonia-cu")
				assert.Contains(t, string(gomod), "require github.com/cuarray/cuarray ")
			} else {
				assert.NotContains(t, string(gomod), "github.com/cuarray/cuarray", "a workspace leaves go.mod alone")
			}
			t.Run("cuda", func(t *testing.T) { userModuleCUDA(t, goTool, dir, way, want, goSum) })
		})
	}
}

// userModuleCUDA builds the outside module in dir with -tags cuda, as the
// README's steps left it: that builds. In the replace way it then drops the
// gorgonia.org/cu replace, and the build must fail with a first error whose
// name says what to add, in the file whose comment gives the missing line.
func userModuleCUDA(t *testing.T, goTool, dir, way, want string, goSum []byte) {
	if !fileExists("/usr/include/cuda.h") && !fileExists("/usr/local/cuda/include/cuda.h") {
		t.Skip("no cuda.h (make cuda-deps installs it): the -tags cuda build cannot be compiled here")
	}
	goCmd := func(args ...string) (string, error) {
		c := exec.Command(goTool, args...)
		c.Dir = dir
		c.Env = userEnv(dir)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	bin := filepath.Join(t.TempDir(), "myprog")
	out, err := goCmd("build", "-tags", "cuda", "-o", bin, ".")
	require.NoError(t, err, "the README's %s way builds with -tags cuda:\n%s", way, out)
	if way != "replace" {
		// The guide's "Running your program on the emulated CUDA driver":
		// the same program, built with -tags cuda,cudaemu, runs on cuda:0.
		out, err = goCmd("build", "-tags", "cuda,cudaemu", "-o", bin, ".")
		require.NoError(t, err, "the README's %s way builds with -tags cuda,cudaemu:\n%s", way, out)
		run := exec.Command(bin)
		run.Env = append(userEnv(dir), "CUARRAY_EMULATED_DRIVER=devices=2&mem=1GiB&latency=1ms&check=streams")
		got, err := run.CombinedOutput()
		require.NoError(t, err, "the program on the emulated driver:\n%s", got)
		assert.Equal(t, want, strings.TrimSpace(string(got)), "what the program printed on the emulated driver, with no fallback notice")
		return
	}
	out, err = goCmd("mod", "edit", "-dropreplace", "gorgonia.org/cu@v0.9.6")
	require.NoError(t, err, out)
	// Upstream's sums, which cuarray's go.sum keeps, so that no checksum database is asked.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), goSum, 0o644))
	out, err = goCmd("build", "-tags", "cuda", "-o", bin, ".")
	require.Error(t, err, "a cuda build against upstream gorgonia.org/cu must not compile:\n%s", out)
	lines := withoutDownloads(strings.Split(strings.TrimSpace(out), "\n"))
	require.GreaterOrEqual(t, len(lines), 2, out)
	assert.Equal(t, "# github.com/cuarray/cuarray/device/cuda", lines[0], out)
	assert.Regexp(t, `^\S*device/cuda/cu_needs_replace\.go:\d+:\d+: undefined: cu\.YourGoModNeeds_replace_gorgonia_org_cu_v0_9_6_with_cuarray_third_party_gorgonia_cu$`, lines[1],
		"the first error says what to add, in the file that gives the line")
	src, err := os.ReadFile("../device/cuda/cu_needs_replace.go")
	require.NoError(t, err)
	assert.Contains(t, string(src), "//\treplace gorgonia.org/cu v0.9.6 => ../cuarray/third_party/gorgonia-cu\n", "the file gives the line")

	// The emulated driver's build stops earlier, in the package that plugs
	// into the patched copy, with the error the guide quotes.
	out, err = goCmd("build", "-tags", "cuda,cudaemu", "-o", bin, ".")
	require.Error(t, err, "a cudaemu build against upstream gorgonia.org/cu must not compile:\n%s", out)
	assert.Regexp(t, `device/cuda/emulated/\S+\.go:\d+:\d+: undefined: cu\.UseDriver`, out, "the error the guide quotes")
	guide, err := os.ReadFile("guide.md")
	require.NoError(t, err)
	assert.Contains(t, string(guide), "`device/cuda/emulated` with `undefined: cu.UseDriver`")
}

// withoutDownloads drops the lines in which the go command says it fetches
// a module ("go: downloading gorgonia.org/cu v0.9.6"): a machine whose
// module cache lacks upstream gorgonia.org/cu prints one before the
// compiler's errors, a machine that has it prints none.
func withoutDownloads(lines []string) []string {
	var kept []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "go: downloading ") && !strings.HasPrefix(l, "go: finding ") && !strings.HasPrefix(l, "go: extracting ") {
			kept = append(kept, l)
		}
	}
	return kept
}

// userEnv is the environment of a go command in the outside module dir:
// this process's, with no GOWORK of its own, and -mod=mod outside a
// workspace, so that missing requirements are added from the module cache.
func userEnv(dir string) []string {
	var env []string
	flags := ""
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "GOWORK="):
		case strings.HasPrefix(kv, "GOFLAGS="):
			flags = strings.TrimPrefix(kv, "GOFLAGS=")
		default:
			env = append(env, kv)
		}
	}
	if !fileExists(filepath.Join(dir, "go.work")) {
		flags = strings.TrimSpace(flags + " -mod=mod")
	}
	return append(env, "GOFLAGS="+flags)
}
