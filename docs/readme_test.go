package docs

import (
	"fmt"
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

// givens are the declarations a README block may ask for in its
// `<!-- given: ... -->` line, by name.
var givens = map[string]string{
	"nothing": "", // a block that opens its own device
	"dev": `dev, err := device.Open("sim:0?mem=512MiB")
	if err != nil {
		return err
	}
	defer dev.Close()`,
	"a": `a, err := devarray.Empty(dev, devarray.Float32, 4096, 4096)
	if err != nil {
		return err
	}
	defer a.Free()`,
	"goSlice": `goSlice := make([]float32, 4096*4096)
	for i := range goSlice {
		goSlice[i] = float32(i % 251)
	}`,
	"stream": `stream, err := dev.NewStream()
	if err != nil {
		return err
	}
	defer stream.Close()`,
}

// readmeDocs are the pages whose Go blocks readme_test.go runs: the
// README and the reference it links to.
var readmeDocs = []string{"../README.md", "reference.md"}

// The README's and the reference's Go blocks are real code: each is the
// body of a function returning an error, with the declarations its
// `<!-- given: ... -->` line names; the test builds each as a program and
// runs it on sim. The one complete program, the outside module's main.go
// (`<!-- usermodule: main.go -->`), is built and run by TestUserModule. A
// line that ends in a comment "// prints: X" must print the line X.
func TestReadmeBlocksCompileAndRun(t *testing.T) {
	untaggedBuildsOnly(t)
	goTool := toolchain.Go(t, "to build the README's blocks")
	seen := 0
	for _, file := range readmeDocs {
		text, err := os.ReadFile(file)
		require.NoError(t, err)
		blocks := regexp.MustCompile("(?s)<!-- given: ([^>]*?) -->\n```go\n(.*?)```").FindAllSubmatch(text, -1)
		programs := len(regexp.MustCompile("<!-- usermodule: main.go -->\n```go").FindAll(text, -1))
		require.Len(t, blocks, len(regexp.MustCompile("```go").FindAll(text, -1))-programs, "every Go block of %s but the outside module's main.go has a given line", file)
		seen += len(blocks)
		for i, b := range blocks {
			t.Run(fmt.Sprintf("%s/block%d", filepath.Base(file), i+1), func(t *testing.T) {
				src := program(t, string(b[1]), string(b[2]))
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				dir, err := os.MkdirTemp("testdata", "readme") // inside the module, so its imports resolve
				require.NoError(t, err)
				defer os.RemoveAll(dir)
				require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
				out, err := exec.Command(goTool, "run", "./"+dir).CombinedOutput()
				require.NoError(t, err, "%s block %d:\n%s\n---\n%s", file, i+1, src, out)
				for _, m := range regexp.MustCompile(`// prints: (.*)`).FindAllStringSubmatch(string(b[2]), -1) {
					require.Contains(t, string(out), strings.TrimSpace(m[1])+"\n", "%s block %d prints what its comment says", file, i+1)
				}
			})
		}
	}
	require.Positive(t, seen, "the reference has Go blocks to run")
}

// TestReadmeFirstScreen: a newcomer reads the README in five minutes. Its
// first 40 lines say what cuarray is, for whom, and the two commands that
// run it and test it; the GPU runs' provenance is in docs/gpu-results.md,
// not there; and it links to every page of docs/.
func TestReadmeFirstScreen(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	lines := strings.Split(string(readme), "\n")
	assert.LessOrEqual(t, len(lines), 200, "the README is read in five minutes")
	first := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, want := range []string{"cuarray is a Go library", "It is for ", "make run ", "make test ", "sim"} {
		assert.Contains(t, first, want, "the README's first 40 lines")
	}
	assert.NotRegexp(t, `tests=\d+/\d+|failed=\d+`, string(readme), "GPU-run provenance is in docs/gpu-results.md")
	pages, err := filepath.Glob("*.md")
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	for _, page := range pages {
		assert.Contains(t, string(readme), "](docs/"+page+")", "the README links to docs/%s", page)
	}
}

// program wraps a README block into a main package.
func program(t *testing.T, given, body string) string {
	var decls []string
	if strings.Contains(given, ":=") {
		decls = append(decls, given) // a declaration written out
	} else {
		if i := strings.Index(given, " ("); i >= 0 {
			given = given[:i] // "dev, a (a device, an array on it)": the names, then what they are
		}
		for _, g := range strings.Split(given, ",") {
			decl, ok := givens[strings.TrimSpace(g)]
			if !ok {
				t.Fatalf("the README asks for %q, which the test does not know", g)
			}
			decls = append(decls, decl)
		}
	}
	code := strings.Join(decls, "\n\t") + "\n\t" + body
	imports := []string{`"os"`}
	for pkg, path := range map[string]string{"fmt": "fmt", "device": "github.com/cuarray/cuarray/device",
		"devarray": "github.com/cuarray/cuarray/devarray", "accounting": "github.com/cuarray/cuarray/accounting",
		"pinned": "github.com/cuarray/cuarray/pinned", "transfer": "github.com/cuarray/cuarray/transfer",
		"interop": "github.com/cuarray/cuarray/interop", "gorgonia": "github.com/cuarray/cuarray/interop/gorgonia"} {
		if pkg == "fmt" || regexp.MustCompile(`\b`+pkg+`\.`).MatchString(code) {
			imports = append(imports, fmt.Sprintf("%q", path))
		}
	}
	tail := "\n\treturn nil\n"
	if lines := strings.Split(strings.TrimSpace(body), "\n"); strings.HasPrefix(strings.TrimSpace(lines[len(lines)-1]), "return ") {
		tail = "\n"
	}
	return "package main\n\nimport (\n\t" + strings.Join(imports, "\n\t") + "\n)\n\n" +
		"func main() {\n\tif err := run(); err != nil {\n\t\tfmt.Fprintln(os.Stderr, err)\n\t\tos.Exit(1)\n\t}\n}\n\n" +
		"func run() error {\n\t" + code + tail + "}\n"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
