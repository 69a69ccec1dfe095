// Command fbp reconstructs a 3-D Shepp–Logan phantom by filtered
// backprojection on a cuarray device, and shows with the ledger what
// keeping the data on the device saves over staging every step through the
// host:
//
//	go run ./examples/fbp [-device SPEC] [-size N] [-angles A] [-slices S]
//	                      [-mode resident|staged|both] [-memory device|managed] [-streams K] [-mem LIMIT]
//	                      [-json] [-png FILE] [-save PREFIX] [-record FILE] [-summary] [-q]
//
// It makes the phantom and its sinograms on the device (package tomo's
// Acquire), then reconstructs the sinograms in each mode asked for, in the
// chunks the planner picks for the device's free memory (or -mem), and
// prints per mode the relative RMSE against the phantom, the time, the
// bytes moved host↔device per transfer path, and the device's peak; a
// resident run keeps -streams chunks in flight (default 2: one chunk's
// upload and another's download overlap a third's kernels; 1: one after
// the other) and says how its time compares with its kernels'; with
// -mode both, the two side by side and their ratios. -memory managed keeps
// the resident run's whole sinogram stack and volume in managed (unified)
// memory, the chunks' kernels running in place on views of them, each
// chunk prefetched to the device on its stream and its images back to the
// host: no copy call moves them, and they may be larger than the device's
// memory (the driver evicts pages to make room); the report then shows
// the ledger's managed figures (bytes prefetched and migrated each way,
// page faults, evictions, read duplicates). The staged mode takes no
// managed memory (it shows the copies through the host, by design): with
// -mode both, the resident run takes it and the staged run device memory. -png writes the middle
// slice: the phantom, the reconstruction and their difference, side by
// side. -save writes the scan for a peer to reconstruct the same data
// (bench/peers/torch_fbp.py). Bad flags and values exit with status 2, a
// one-line message and the usage line; a failed run with status 1 and a
// one-line message.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/errline"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is the command line.
type config struct {
	device  string
	geom    tomo.Geometry
	modes   []tomo.Mode
	memory  tomo.Memory // the resident run's
	streams int
	mem     int64
	json    bool
	png     string
	save    string
	record  string
	summary bool
	quiet   bool
	verbose io.Writer // progress lines, or nil
}

// usage is the command's usage line, printed after a usage error and for -h.
const usage = "usage: fbp [-device SPEC] [-size N] [-angles A] [-slices S] [-mode resident|staged|both] [-memory device|managed] [-streams K] [-mem LIMIT] [-json] [-png FILE] [-save PREFIX] [-record FILE] [-summary] [-q]"

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func parse(args []string, stdout, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("fbp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.device, "device", "", "device spec: sim:0, sim:0?mem=1GiB, cuda:0; empty picks cuda:0 if present, else sim:0")
	fs.IntVar(&c.geom.Size, "size", 128, "image size N: N×N pixels a slice, N detector bins")
	fs.IntVar(&c.geom.Angles, "angles", 180, "projection angles over [0, π)")
	fs.IntVar(&c.geom.Slices, "slices", 32, "slices in the stack (N: the whole phantom)")
	mode := fs.String("mode", "resident", "resident, staged, or both (run both on the same data and compare)")
	memory := fs.String("memory", string(tomo.DeviceMemory), "where the resident run keeps the sinograms and the volume: device (each chunk copied to device buffers and back) or managed (managed memory, processed in place; may be larger than the device)")
	fs.IntVar(&c.streams, "streams", tomo.DefaultStreams, fmt.Sprintf("chunks of a resident run in flight at once, on as many streams (1 to %d; 1: one after the other)", tomo.MaxStreams))
	mem := fs.String("mem", "", "a device memory limit, as 64MiB: the plan fits each chunk under it (default: the device's free memory)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of text")
	fs.StringVar(&c.png, "png", "", "write the middle slice (phantom, reconstruction, difference) to this PNG file")
	fs.StringVar(&c.save, "save", "", "also write the scan as PREFIX.sino.f32, PREFIX.phantom.f32 and PREFIX.json, for a peer to reconstruct")
	fs.StringVar(&c.record, "record", "", "write every device allocation and free of the run to FILE (an allocation log: cuarray replay FILE asks whether the run fits another device)")
	fs.BoolVar(&c.summary, "summary", false, "end with three summary lines: what was shown, the headline ratio, where to read on (make run)")
	fs.BoolVar(&c.quiet, "q", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage) // help asked for: stdout
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return c, err
		}
		return c, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if err := c.geom.Check(); err != nil {
		return c, usageError{err.Error()}
	}
	if *mode == "both" {
		c.modes = slices.Clone(tomo.Modes)
	} else {
		m, err := tomo.ParseMode(*mode)
		if err != nil {
			return c, usageError{err.Error() + " (or both)"}
		}
		c.modes = []tomo.Mode{m}
	}
	where, err := tomo.ParseMemory(*memory)
	if err != nil {
		return c, usageError{err.Error()}
	}
	c.memory = where
	if c.memory == tomo.ManagedMemory && !slices.Contains(c.modes, tomo.Resident) {
		return c, usageError{"-memory managed is for the resident mode (-mode resident or both): the staged mode moves each step's data through the host by copies, which is what it shows"}
	}
	if c.streams < 1 || c.streams > tomo.MaxStreams {
		return c, usageError{fmt.Sprintf("streams %d: want 1 to %d", c.streams, tomo.MaxStreams)}
	}
	if *mem != "" {
		n, err := accounting.ParseBytes(*mem)
		if err != nil || n <= 0 {
			why := "zero"
			if err != nil {
				why = err.Error()
			}
			return c, usageError{fmt.Sprintf("mem %q: want a positive size, as 64MiB (%s)", *mem, why)}
		}
		c.mem = n
	}
	if !c.quiet {
		c.verbose = stderr
	}
	return c, nil
}

// run executes the command and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stdout, stderr)
	var ue usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "fbp: %v\n%s\n", err, usage)
		return 2
	}
	if err := execute(c, stdout); err != nil {
		fmt.Fprintf(stderr, "fbp: %s\n", errline.Of(err))
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, usage)
			return 2
		}
		return 1
	}
	return 0
}

// opened is told of the device execute opens (tests watch its fault and
// ledger through it).
var opened = func(device.Device) {}

// execute runs the scan and the reconstructions c asks for, and prints them.
func execute(c config, stdout io.Writer) (err error) {
	dev, err := device.Open(c.device)
	if errors.Is(err, device.ErrBadSpec) {
		return usageError{err.Error()}
	}
	if err != nil {
		return err
	}
	opened(dev)
	defer dev.Close()
	if c.mem > 0 {
		if err := dev.Ledger().SetLimit(accounting.Device, c.mem); err != nil {
			return usageError{err.Error()}
		}
	}
	if c.record != "" {
		f, err := os.Create(c.record)
		if err != nil {
			return fmt.Errorf("record: %w", err)
		}
		rec, err := dev.Ledger().Record(f)
		if err != nil {
			f.Close()
			return fmt.Errorf("record %s: %w", c.record, err)
		}
		defer func() { // before the device's Close: the log holds the run, not the teardown
			cerr := rec.Close()
			if ferr := f.Close(); cerr == nil {
				cerr = ferr
			}
			if err == nil && cerr != nil {
				err = fmt.Errorf("record %s: %w", c.record, cerr)
			}
		}()
	}
	progress := func(stage string, done, total int) {
		if c.verbose != nil {
			fmt.Fprintf(c.verbose, "fbp: %-8s %d/%d slices\n", stage, done, total)
		}
	}
	scan, err := tomo.Acquire(dev, c.geom, progress)
	if err != nil {
		return err
	}
	if c.save != "" {
		if err := saveScan(c.save, scan); err != nil {
			return err
		}
	}
	rep := report{Device: dev.Info().Name, Geometry: c.geom, Acquire: scan, Summary: c.summary}
	for _, m := range c.modes {
		opt := tomo.Options{Streams: c.streams, Progress: progress}
		if m == tomo.Resident {
			opt.Memory = c.memory
		}
		res, err := tomo.ReconstructWith(dev, c.geom, scan.Sinograms, m, opt)
		if err != nil {
			return err
		}
		r, err := newRun(res, scan)
		if err != nil {
			return err
		}
		rep.Runs = append(rep.Runs, r)
	}
	if len(rep.Runs) == 2 {
		rep.Comparison = compare(rep.Runs[0], rep.Runs[1])
	}
	if c.png != "" {
		if err := writeSlicePNG(c.png, scan, rep.Runs[0].result); err != nil {
			return err
		}
		rep.PNG = c.png
	}
	for _, k := range []accounting.Kind{accounting.Device, accounting.Managed} {
		if leaked := dev.Ledger().Current(k); leaked != 0 {
			return fmt.Errorf("%s of %v memory still allocated after the runs", accounting.FormatBytes(leaked), k)
		}
	}
	if c.json {
		return rep.writeJSON(stdout)
	}
	_, err = io.WriteString(stdout, rep.text())
	return err
}
