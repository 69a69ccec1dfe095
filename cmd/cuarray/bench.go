package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

// progress gets a line per measurement of `cuarray bench` (stderr; tests silence it).
var progress io.Writer = os.Stderr

// simBenchSizes and gpuBenchSizes are bench's default sizes. On sim every
// size is host memory several times over (the source, each path's buffer,
// the device arrays), so its default stops at 64 MiB, about 1.1 GB at the
// peak (1 GiB peaks at about 6.3 GB: docs/reference.md); a GPU's adds 1 GiB.
const (
	simBenchSizes = "4KiB,1MiB,64MiB"
	gpuBenchSizes = "4KiB,1MiB,64MiB,1GiB"
)

// runBench measures the transfer paths: bandwidth per path, direction and
// size, with ratios to its peers and the ledger's counts.
func runBench(args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.String("device", "", "device spec: sim:0, cuda:0; empty picks cuda:0 if present, else sim:0")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	wide := fs.Bool("wide", false, "print every column of the table (events GB/s, µs, vs copy(), vs memcpy, ledger GB/s too), not the narrow table that fits 120 columns")
	sizesArg := fs.String("sizes", "", "copy sizes, comma-separated (default "+simBenchSizes+" on sim, where each size is host memory several times over: 1GiB peaks at about 6.3 GB; "+gpuBenchSizes+" on a GPU)")
	pathsArg := fs.String("paths", "direct,pinned,staged,mapped,d2d", "paths to measure, comma-separated (also: registered, peer)")
	managedArg := fs.String("managed", "", "managed-memory paths to measure beside -paths, comma-separated: managed (on demand: page faults), managed-prefetch, managed-read-mostly (HtoD), or all (default none)")
	pageable := fs.Bool("pageable", false, "also measure "+bench.PageableInPlace+": a kernel reading (HtoD) and writing (DtoH) a Go slice in place, no copy call, where the device has pageable memory access (HMM, ATS); elsewhere the report says it is not supported")
	svg := fs.String("svg", "", "also write an SVG chart of bandwidth against size to this file")
	budget := fs.String("budget", "256MiB", "about how many bytes each measurement moves (repeats = budget/size, 3 to 50)")
	pcie := fs.Float64("pcie", 0, "the host link's GB/s per direction, the ceiling of the host-device figures (default: the device's, else known GPU models); on sim also the link sim models, unless the spec gives link=")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	bidir := fs.Bool("bidir", false, "also measure, per size, an HtoD and a DtoH along the pinned path at once on two streams (both copy engines), against the sum of the one-way pinned figures")
	calibrate := fs.Bool("calibrate", false, "measure this machine's cost model (latency and GB/s per path and direction, the host's memcpy, the fastest staging ring; the -managed paths too) and save it as the planner's profile (-sizes default 4KiB,64KiB,1MiB,8MiB,64MiB)")
	record := fs.String("record", "", "write every device allocation and free of the run to FILE (an allocation log: cuarray replay FILE asks whether the run fits another device)")
	profile := fs.String("profile", "", "the planner's profile: the file -calibrate saves, or the one the planner uses (default: $"+transfer.ProfileEnv+", else profile-MODEL.json in the user config dir; sim reads only $"+transfer.ProfileEnv+")")
	if err := parseSet(fs, args); err != nil {
		return err
	}
	pcieSet, sizesSet, pathsSet := false, false, false
	fs.Visit(func(f *flag.Flag) {
		pcieSet = pcieSet || f.Name == "pcie"
		sizesSet = sizesSet || f.Name == "sizes"
		pathsSet = pathsSet || f.Name == "paths"
	})
	if pcieSet && !(*pcie > 0 && !math.IsInf(*pcie, 0)) {
		return usageError{fmt.Sprintf("pcie %v: want the host link's GB/s per direction, a positive figure, as 64", *pcie)}
	}
	cfg := bench.Config{PCIe: *pcie, Progress: progress, Bidir: *bidir, Pageable: *pageable}
	if *quiet {
		cfg.Progress = nil
	}
	if sizesSet {
		if cfg.Sizes, err = parseSizes(*sizesArg); err != nil {
			return usageError{err.Error()}
		}
	}
	if cfg.Paths, err = parsePaths(*pathsArg); err != nil {
		return usageError{err.Error()}
	}
	if cfg.Managed, err = parseManaged(*managedArg); err != nil {
		return usageError{err.Error()}
	}
	if cfg.Budget, err = accounting.ParseBytes(*budget); err != nil || cfg.Budget <= 0 {
		return usageError{fmt.Sprintf("budget %q: want a positive size, as 256MiB", *budget)}
	}
	d, err := openBenchDevice(*dev, *pcie)
	if err != nil {
		return err
	}
	defer d.Close()
	if *record != "" {
		stop, rerr := recordLog(d, *record)
		if rerr != nil {
			return rerr
		}
		// before the device's Close: the log holds the run, not the teardown; its error is
		// the run's (runBench's named result), so that a log not written whole fails the run
		defer func() { err = errors.Join(err, stop()) }()
	}
	if !sizesSet {
		def := gpuBenchSizes
		if d.Info().Backend == "sim" {
			def = simBenchSizes
		}
		if cfg.Sizes, err = parseSizes(def); err != nil {
			return err
		}
	}
	if _, total, err := d.MemInfo(); err == nil {
		for _, n := range cfg.Sizes { // each size is made on the host first: -sizes 1TiB was a fatal out of memory
			if n > total && (sizesSet || !*calibrate) {
				return usageError{fmt.Sprintf("sizes: %s is more than %s's %s of memory", accounting.FormatBytes(n), d.Info().Name, accounting.FormatBytes(total))}
			}
		}
	}
	if *calibrate {
		cc := bench.CalibrateConfig{Progress: cfg.Progress, PCIe: *pcie}
		if sizesSet {
			cc.Sizes = cfg.Sizes
		}
		if pathsSet {
			cc.Paths = cfg.Paths
		}
		cc.Managed = cfg.Managed
		return runCalibrate(d, cc, *profile, *asJSON, stdout)
	}
	if *profile != "" {
		p, err := transfer.LoadProfile(*profile)
		if err == nil {
			err = p.Matches(d.Info())
		}
		if err != nil {
			return fmt.Errorf("-profile: %w", err)
		}
		cfg.Copier = append(cfg.Copier, transfer.WithProfile(p))
	}
	r, err := bench.Run(d, cfg)
	if r == nil {
		return err
	}
	impossible := err // a report with figures above their ceilings: shown, then refused
	if r.ProfileNotice != "" {
		fmt.Fprintf(stderr, "cuarray bench: notice: %s\n", r.ProfileNotice)
	}
	if *svg != "" {
		if err := os.WriteFile(*svg, r.SVG(), 0o644); err != nil {
			return err
		}
	}
	if *asJSON {
		err = writeJSON(stdout, r)
	} else if *wide {
		_, err = fmt.Fprint(stdout, r.Table())
	} else {
		_, err = fmt.Fprint(stdout, r.NarrowTable())
	}
	if err == nil && !r.CountsOK() {
		err = errors.New("the ledger's counts differ from the bytes requested (see the ledger column)")
	}
	return errors.Join(impossible, err)
}

// recordLog writes every allocation and free of dev's ledger from now to
// the allocation log at path (accounting.Ledger.Record), until stop.
func recordLog(dev device.Device, path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	rec, err := dev.Ledger().Record(f)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("record %s: %w", path, err), f.Close())
	}
	return func() error {
		if err := errors.Join(rec.Close(), f.Close()); err != nil {
			return fmt.Errorf("record %s: %w", path, err)
		}
		return nil
	}, nil
}

// openBenchDevice opens the device of spec for the bench. With pcie > 0
// (-pcie) a sim device models a host link of that many GB/s, both pinned
// and pageable (link=, see device.Open), unless its spec gives one: the
// figures are then those of such a link, and -pcie their ceiling as on a
// GPU.
func openBenchDevice(spec string, pcie float64) (device.Device, error) {
	if pcie <= 0 {
		return openDevice(spec)
	}
	if spec == "" {
		d, err := openDevice(spec)
		if err != nil || d.Info().Backend != "sim" {
			return d, err
		}
		spec = d.Info().Name // the default fell back to sim: open it again with the link
		if err := d.Close(); err != nil {
			return nil, err
		}
	}
	s, err := device.ParseSpec(spec)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	if s.Kind == "sim" && !s.Options.Has("link") {
		if s.Options == nil {
			s.Options = url.Values{}
		}
		s.Options.Set("link", strconv.FormatFloat(pcie, 'g', -1, 64))
		spec = s.String()
	}
	return openDevice(spec)
}

// parseSizes parses "4KiB,1MiB" into positive byte counts.
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, part := range strings.Split(s, ",") {
		n, err := accounting.ParseBytes(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("sizes %q: %v", s, err)
		}
		if n <= 0 {
			return nil, fmt.Errorf("sizes %q: %q is not a positive size", s, part)
		}
		out = append(out, n)
	}
	return out, nil
}

// parsePaths parses "direct,pinned" into paths; auto and peer are not benchmarked.
func parsePaths(s string) ([]transfer.Path, error) {
	var out []transfer.Path
	for _, part := range strings.Split(s, ",") {
		p, err := transfer.ParsePath(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		if p == transfer.PathAuto || p == transfer.PathPeer {
			return nil, fmt.Errorf("paths %q: %v is not measured by bench (want direct, pinned, staged, mapped or d2d)", s, p)
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("paths %q: %q given twice", s, p.String())
		}
		out = append(out, p)
	}
	return out, nil
}

// parseManaged parses "managed,managed-prefetch" into managed paths; "all"
// is every one, "" none.
func parseManaged(s string) ([]bench.ManagedPath, error) {
	switch s {
	case "":
		return nil, nil
	case "all":
		return bench.ManagedPaths, nil
	}
	var out []bench.ManagedPath
	for _, part := range strings.Split(s, ",") {
		p, err := bench.ParseManagedPath(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("managed %q: %w", s, err)
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("managed %q: %q given twice", s, string(p))
		}
		out = append(out, p)
	}
	return out, nil
}

// runCalibrate measures dev's cost model, saves it at path (default:
// transfer.ProfilePath) and prints it.
func runCalibrate(dev driver.Device, cfg bench.CalibrateConfig, path string, asJSON bool, stdout io.Writer) error {
	if path == "" && dev.Info().Backend == "sim" && os.Getenv(transfer.ProfileEnv) == "" {
		return usageError{"-calibrate on sim: give -profile FILE (sim plans with its defaults unless " + transfer.ProfileEnv + " names a profile)"}
	}
	if path == "" {
		var err error
		if path, err = transfer.ProfilePath(dev.Info()); err != nil {
			return err
		}
		if path == "" {
			return fmt.Errorf("%s=off: give -profile FILE to say where to save the profile", transfer.ProfileEnv)
		}
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() { // before seconds of measuring, not after
		return usageError{fmt.Sprintf("-profile %s is not a regular file (%v): the profile would replace it", path, st.Mode().Type())}
	}
	p, err := bench.Calibrate(dev, cfg)
	if err != nil {
		return fmt.Errorf("nothing saved to %s: %w", path, err)
	}
	if err := p.Save(path); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, p)
	}
	_, err = fmt.Fprintf(stdout, "%ssaved to %s\n", bench.ProfileText(p), path)
	return err
}
