package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options are what Run needs: gremlins' output, the package, the module and
// how to test the mutants.
type Options struct {
	JSON               string // gremlins' JSON output for the package
	Pkg                string // the package as gremlins was given it, relative to Root ("./plan")
	Root               string // the module's root folder (where go.mod is)
	TimeoutCoefficient int    // a mutant's tests time out after this many times the cover run's time
	Workers            int    // mutants tested at once
	ListOnly           bool   // list the mutants that would run, run nothing
	TempParent         string // where the copies of the module go; "" is os.TempDir()
}

// candidate is a NOT COVERED mutant in a case condition or a constant.
type candidate struct {
	Mutant
	site    Site
	src     []byte         // the file's source as gremlins saw it
	fset    *token.FileSet // the parsed file's
	sw      *ast.SwitchStmt
	pkgPath string // the file's folder, relative to the module root, slash-separated
}

// Run runs the case and const mutants of one package that gremlins left
// NOT COVERED, and writes one line per mutant and the figures to w.
func Run(ctx context.Context, opts Options, w io.Writer) error {
	if opts.TimeoutCoefficient < 1 || opts.Workers < 1 {
		return fmt.Errorf("mutatecases: the timeout coefficient (%d) and the workers (%d) must be at least 1",
			opts.TimeoutCoefficient, opts.Workers)
	}
	pkgDir, err := packageDir(opts.Pkg)
	if err != nil {
		return err
	}
	f, err := os.Open(opts.JSON)
	if err != nil {
		return fmt.Errorf("mutatecases: %w", err)
	}
	rep, err := ParseReport(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%w (%s)", err, opts.JSON)
	}
	modPath, err := modulePath(opts.Root)
	if err != nil {
		return err
	}
	cands, err := candidates(opts.Root, pkgDir, rep)
	if err != nil {
		return err
	}
	nCase := 0
	for _, c := range cands {
		if c.site == SiteCase {
			nCase++
		}
	}
	fmt.Fprintf(w, "mutatecases: %s: %d of gremlins' %d NOT COVERED mutants lie in a case condition (%d) or a constant (%d)\n",
		opts.Pkg, len(cands), rep.NotCovered, nCase, len(cands)-nCase)
	if opts.ListOnly {
		for _, c := range cands {
			fmt.Fprintf(w, "%s %v (mutatecases: %s)\n", pad(StatusNotCovered), c.Mutant, c.site)
		}
		return nil
	}
	counts := Counts{NotCoveredLeft: rep.NotCovered}
	if len(cands) > 0 {
		if counts, err = runCandidates(ctx, opts, pkgDir, modPath, rep.NotCovered, cands, w); err != nil {
			return err
		}
	}
	printFigures(w, rep, counts)
	return nil
}

// runCandidates copies the module, finds which candidates the tests reach,
// runs those, and returns the counts.
func runCandidates(ctx context.Context, opts Options, pkgDir, modPath string, notCovered int, cands []candidate, w io.Writer) (Counts, error) {
	tmp, err := os.MkdirTemp(opts.TempParent, "mutatecases-")
	if err != nil {
		return Counts{}, fmt.Errorf("mutatecases: %w", err)
	}
	defer os.RemoveAll(tmp)
	first := filepath.Join(tmp, "w0")
	if err := copyInto(opts.Root, first); err != nil {
		return Counts{}, err
	}
	prof, elapsed, err := coverRun(ctx, first, pkgDir, filepath.Join(tmp, "cover.out"))
	if err != nil {
		return Counts{}, err
	}
	timeout := elapsed * time.Duration(opts.TimeoutCoefficient)
	fmt.Fprintf(w, "mutatecases: the package's cover run took %s: a mutant's tests time out after %s\n",
		elapsed.Round(time.Millisecond), timeout.Round(time.Millisecond))

	counts := Counts{NotCoveredLeft: notCovered}
	var reached []candidate
	for _, c := range cands {
		if c.site == SiteCase && !SwitchReached(c.fset, prof[modPath+"/"+path.Join(c.pkgPath, path.Base(c.File))], c.sw) {
			fmt.Fprintf(w, "%s %v (mutatecases: case of a switch the tests never reached; left not covered)\n",
				pad(StatusNotCovered), c.Mutant)
			continue
		}
		reached = append(reached, c)
	}

	workers := min(opts.Workers, len(reached))
	dirs := []string{first}
	for i := 1; i < workers; i++ {
		d := filepath.Join(tmp, fmt.Sprintf("w%d", i))
		if err := copyInto(opts.Root, d); err != nil {
			return Counts{}, err
		}
		dirs = append(dirs, d)
	}
	jobs := make(chan candidate)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, dir := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				status, err := testMutant(ctx, dir, c, timeout)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					cancel()
				} else {
					fmt.Fprintf(w, "%s %v (mutatecases: %s)\n", pad(status), c.Mutant, c.site)
					counts.add(status)
				}
				mu.Unlock()
			}
		}()
	}
	for _, c := range reached {
		if ctx.Err() != nil {
			break
		}
		jobs <- c
	}
	close(jobs)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("mutatecases: %w", ctx.Err())
	}
	return counts, firstErr
}

// add counts one mutant's outcome: a mutant that ran is no longer not covered.
func (c *Counts) add(status string) {
	c.NotCoveredLeft--
	switch status {
	case StatusKilled:
		c.Killed++
	case StatusLived:
		c.Lived++
	case StatusTimedOut:
		c.TimedOut++
	case StatusNotViable:
		c.NotViable++
	}
}

// testMutant applies c to the copy of the module in dir, runs the tests of
// its package there, and puts the file back as it was.
func testMutant(ctx context.Context, dir string, c candidate, timeout time.Duration) (status string, err error) {
	file := filepath.Join(dir, filepath.FromSlash(c.pkgPath), path.Base(c.File))
	mutated, err := Mutate(c.src, path.Join(c.pkgPath, path.Base(c.File)), c.Line, c.Column, c.Type)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(file, mutated, 0o644); err != nil {
		return "", fmt.Errorf("mutatecases: %w", err)
	}
	defer func() {
		if rerr := os.WriteFile(file, c.src, 0o644); rerr != nil && err == nil {
			err = fmt.Errorf("mutatecases: put %s back: %w", file, rerr)
		}
	}()
	out, timedOut, err := goTest(ctx, dir, timeout, nil, "./"+c.pkgPath)
	if ctx.Err() != nil {
		return "", fmt.Errorf("mutatecases: %v: %w", c.Mutant, ctx.Err())
	}
	return testOutcome(out, timedOut, err)
}

// coverRun builds the package's tests with coverage once, then runs them
// with a cover profile and times that run, as gremlins times its own cover
// run to set the mutants' timeout.
func coverRun(ctx context.Context, dir, pkgDir, profile string) (Profile, time.Duration, error) {
	pattern := "./" + path.Join(pkgDir, "...")
	if pkgDir == "." {
		pattern = "./..."
	}
	if out, _, err := goTest(ctx, dir, 0, []string{"-cover", "-run", "^$"}, pattern); err != nil {
		return nil, 0, fmt.Errorf("mutatecases: building %s's tests: %w\n%s", pattern, err, out)
	}
	start := time.Now()
	out, _, err := goTest(ctx, dir, 0, []string{"-cover", "-coverprofile", profile}, pattern)
	elapsed := time.Since(start)
	if err != nil {
		return nil, 0, fmt.Errorf("mutatecases: %s's tests fail without a mutant: %w\n%s", pattern, err, out)
	}
	f, err := os.Open(profile)
	if err != nil {
		return nil, 0, fmt.Errorf("mutatecases: %w", err)
	}
	defer f.Close()
	prof, err := ParseProfile(f)
	return prof, elapsed, err
}

// candidates returns the NOT COVERED mutants of rep that lie in a case
// condition or a constant, reading the package's files from the module at root.
func candidates(root, pkgDir string, rep Report) ([]candidate, error) {
	type parsed struct {
		src  []byte
		fset *token.FileSet
		file *ast.File
	}
	files := map[string]parsed{}
	var out []candidate
	for _, m := range rep.Mutants {
		if m.Status != StatusNotCovered {
			continue
		}
		p, ok := files[m.File]
		if !ok {
			name := filepath.Join(root, filepath.FromSlash(pkgDir), filepath.FromSlash(m.File))
			src, err := os.ReadFile(name)
			if err != nil {
				return nil, fmt.Errorf("mutatecases: %w", err)
			}
			p = parsed{src: src, fset: token.NewFileSet()}
			if p.file, err = parser.ParseFile(p.fset, name, src, parser.SkipObjectResolution); err != nil {
				return nil, fmt.Errorf("mutatecases: %w", err)
			}
			files[m.File] = p
		}
		pos, err := position(p.fset.File(p.file.Pos()), m.Line, m.Column)
		if err != nil {
			return nil, fmt.Errorf("%w (gremlins' %v; has the source changed since gremlins ran?)", err, m)
		}
		site, sw := Classify(p.file, pos)
		if site == SiteOther {
			continue
		}
		out = append(out, candidate{
			Mutant: m, site: site, src: p.src, fset: p.fset, sw: sw,
			pkgPath: path.Join(filepath.ToSlash(pkgDir), path.Dir(m.File)),
		})
	}
	return out, nil
}

// packageDir returns pkg (as gremlins was given it: ./plan, plan, .) as a
// clean slash-separated path inside the module.
func packageDir(pkg string) (string, error) {
	d := path.Clean(filepath.ToSlash(pkg))
	if d != "." && !filepath.IsLocal(filepath.FromSlash(d)) {
		return "", fmt.Errorf("mutatecases: package %q is not a folder inside the module", pkg)
	}
	return d, nil
}

// moduleRoot returns the folder at or above dir that holds go.mod.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if fi, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !fi.IsDir() {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("mutatecases: no go.mod at or above %s", dir)
		}
		d = up
	}
}

// modulePath returns the module path that root's go.mod declares.
func modulePath(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("mutatecases: %w", err)
	}
	return parseModulePath(data)
}

// parseModulePath returns the path of a go.mod's module line (module P,
// module "P", with a comment after it or not).
func parseModulePath(data []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			if i := strings.Index(rest, "//"); i >= 0 {
				rest = rest[:i]
			}
			if p := strings.Trim(strings.TrimSpace(rest), `"`+"`"); p != "" && !strings.ContainsAny(p, " \t\"`") {
				return p, nil
			}
		}
	}
	return "", errors.New("mutatecases: go.mod declares no module path")
}

// copyInto makes dst and copies the module at root into it.
func copyInto(root, dst string) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return fmt.Errorf("mutatecases: %w", err)
	}
	if err := CopyModule(root, dst); err != nil {
		return fmt.Errorf("mutatecases: copy the module: %w", err)
	}
	return nil
}

// pad right-aligns a status in 12 columns, as gremlins' log does.
func pad(status string) string {
	return fmt.Sprintf("%12s", status)
}

// printFigures writes the counts of mutatecases' mutants, gremlins' own
// figures and the combined ones.
func printFigures(w io.Writer, rep Report, c Counts) {
	fmt.Fprintf(w, "mutatecases: case and const mutants: Killed: %d, Lived: %d, Timed out: %d, Not viable: %d\n",
		c.Killed, c.Lived, c.TimedOut, c.NotViable)
	fmt.Fprintf(w, "mutatecases: gremlins alone:           test efficacy %.2f%%, mutator coverage %.2f%% (killed %d, lived %d, not covered %d)\n",
		rep.Efficacy, rep.Coverage, rep.Killed, rep.Lived, rep.NotCovered)
	comb := Combined(rep, c)
	fmt.Fprintf(w, "mutatecases: gremlins + case and const: test efficacy %.2f%%, mutator coverage %.2f%% (killed %d, lived %d, not covered %d)\n",
		comb.Efficacy, comb.Coverage, comb.Killed, comb.Lived, comb.NotCovered)
}
