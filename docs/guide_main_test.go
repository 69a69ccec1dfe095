package docs_test

import (
	"context"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/docs"
	"github.com/cuarray/cuarray/internal/toolchain"
)

// guideMain is a guide block as a user puts it in a program of their own:
// its imports above a main whose body is the block's code.
func guideMain(imports, code string) string {
	var b strings.Builder
	b.WriteString("package main\n\n" + imports + "\nfunc main() {\n")
	for _, l := range strings.Split(code, "\n") {
		if l != "" {
			b.WriteString("\t" + l)
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// TestGuideSamplesRunInYourOwnMain does what the guide's introduction
// says of every Go block (`<!-- example: NAME -->`): put in a main of
// one's own, under the imports it shows, it runs as shown. Each block
// becomes a main package of one module outside this one, in a temporary
// directory, pointed at this checkout with a replace directive as the
// guide's "Getting started" does; one go build makes them all, and each
// runs from that directory, not from docs/, on sim, and prints what the
// guide shows. Where the output names the function it runs in (the
// stream race's callers), the guide shows the Example's name and a
// program prints main.main. Like TestUserModule it needs the module cache
// that this module's own build fills.
func TestGuideSamplesRunInYourOwnMain(t *testing.T) {
	docs.UntaggedBuildsOnly(t)
	goTool := toolchain.Go(t, "to build the guide's samples as programs of their own")
	guide, err := os.ReadFile("guide.md")
	require.NoError(t, err)
	checkout, err := filepath.Abs("..")
	require.NoError(t, err)
	goSum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	require.NoError(t, err)
	goMod, err := os.ReadFile(filepath.Join(checkout, "go.mod"))
	require.NoError(t, err)
	goLine := regexp.MustCompile(`(?m)^go \S+$`).Find(goMod)
	require.NotNil(t, goLine, "cuarray's go.mod names its Go version")

	mod := t.TempDir()
	type sample struct{ name, want string }
	var samples []sample
	for _, m := range guideBlock.FindAllStringSubmatch(string(guide), -1) {
		name, imports, code, output := m[1], m[2], m[3], m[4]
		src := guideMain(imports, code)
		formatted, err := format.Source([]byte(src))
		require.NoError(t, err, "%s in a main of its own does not parse:\n%s", name, src)
		assert.Equal(t, string(formatted), src, "%s in a main of its own is not as gofmt writes it", name)
		dir := filepath.Join(mod, strings.TrimPrefix(name, "Example_"))
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
		want := strings.ReplaceAll(output, "github.com/cuarray/cuarray/docs_test."+name, "main.main")
		samples = append(samples, sample{name, want})
	}
	require.Len(t, samples, strings.Count(string(guide), "```go"), "every Go block of the guide is a sample")

	gomod := fmt.Sprintf("module example.com/guidesamples\n\n%s\n\nrequire github.com/cuarray/cuarray v0.0.0-00010101000000-000000000000\n\nreplace github.com/cuarray/cuarray => %s\n", goLine, checkout)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644))
	// The checkout's sums, so that no checksum database is asked.
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.sum"), goSum, 0o644))
	bin := t.TempDir()
	build := exec.Command(goTool, "build", "-o", bin+string(filepath.Separator), "./...")
	build.Dir = mod
	build.Env = docs.UserEnv(mod)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./... of the guide's samples, each in a main of its own:\n%s", out)

	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			run := exec.CommandContext(ctx, filepath.Join(bin, strings.TrimPrefix(s.name, "Example_")))
			run.Dir = mod
			run.Env = docs.SampleEnv()
			var stderr strings.Builder
			run.Stderr = &stderr
			got, err := run.Output()
			require.NoError(t, err, "%s as a program of its own; its stderr:\n%s", s.name, stderr.String())
			assert.Equal(t, s.want, strings.TrimRight(string(got), "\n"), "what %s prints as a program of its own", s.name)
		})
	}
}
