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

// userDocs are the files a user reads: the README and docs/*.md.
func userDocs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.md")
	require.NoError(t, err)
	files = append(files, "../README.md")
	docs := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		docs[f] = string(b)
	}
	require.Contains(t, docs, "perf.md")
	return docs
}

// The docs speak of the project: its features and goals, never of how
// the work on it was organised (tracker numbers, sessions, reviews, a GPU
// machine being lent).
func TestDocsSpeakOfTheProject(t *testing.T) {
	banned := regexp.MustCompile(`(?i)\bissues? \d+|\bissue's\b|\blent\b|\bthis session\b|\bnext session\b|\bthe review\b|\bsessions?\b`)
	for f, text := range userDocs(t) {
		for _, m := range banned.FindAllStringIndex(text, -1) {
			line := 1 + strings.Count(text[:m[0]], "\n")
			assert.Fail(t, "a doc speaks of the work, not the project", "%s:%d: %q", f, line, text[m[0]:m[1]])
		}
	}
}

// commitRef is a short or full commit hash as the docs cite one: "commit
// 317bee6", "(317bee6)", "at 57b5727".
var commitRef = regexp.MustCompile(`\b(?:commits?|at|and|then|,|\()\s*([0-9a-f]{7,40})\b`)

// TestCitedCommitsExist: every commit the docs cite exists in this
// repository's history, so a figure's commit can be checked out and its
// command run again. Without git or this repository's history (the
// bundle's copy of the tree on a GPU machine, which has no .git) the test
// skips, saying which is missing.
func TestCitedCommitsExist(t *testing.T) {
	gitTool := toolchain.History(t, "..", "to look the docs' commits up")
	seen := 0
	for f, text := range userDocs(t) {
		for _, m := range commitRef.FindAllStringSubmatch(text, -1) {
			c := m[1]
			if strings.Trim(c, "0123456789") == "" {
				continue // a number, not a hash
			}
			seen++
			err := exec.Command(gitTool, "cat-file", "-e", c+"^{commit}").Run()
			assert.NoError(t, err, "%s cites commit %s, which is not in the history", f, c)
		}
	}
	assert.Positive(t, seen, "the docs cite commits (perf.md, gpu-results.md)")
}

// TestTablesHoldFigures: a table cell in the docs holds a figure, a goal
// or a short note, not a paragraph; the how goes below the table.
func TestTablesHoldFigures(t *testing.T) {
	const most = 400 // characters in a cell
	for f, text := range userDocs(t) {
		if f == "gpu-results.md" {
			continue // the record of each GPU run, as it was written then
		}
		for i, line := range strings.Split(text, "\n") {
			if !strings.HasPrefix(line, "|") {
				continue
			}
			for _, cell := range strings.Split(strings.Trim(line, "|"), " | ") {
				assert.LessOrEqual(t, len([]rune(strings.TrimSpace(cell))), most, "%s:%d: a table cell of %d characters: put the how below the table", f, i+1, len([]rune(cell)))
			}
		}
	}
}
