package main

import (
	"bytes"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cuarray/cuarray/accounting"
)

// runReplay is `cuarray replay LOG`: it replays the device allocations and
// frees of an allocation log (accounting.Ledger.Record) in order on a
// device, directly or through a caching pool (-pool=on), and says whether
// the run fits, its peak, the pool's fragmentation, and the first
// allocation that fails. A run that does not fit is an answer, not an
// error: it exits 0 like one that fits, and says "fits: no" (JSON
// "fits": false). A log it cannot read or a device it cannot open exits 1.
func runReplay(args []string, stdout, stderr io.Writer) error {
	var f commonFlags
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.device, "device", "", "device spec: sim:0?mem=24GiB (sim of that size), cuda:0; empty picks cuda:0 if present, else sim:0")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
	poolFlag := fs.String("pool", "off", "on: replay through a caching pool (package pool), off: straight on the device")
	path, err := parseReplayArgs(fs, args)
	if err != nil {
		return err
	}
	var withPool bool
	switch *poolFlag {
	case "on", "true":
		withPool = true
	case "off", "false":
	default:
		return usageError{fmt.Sprintf("-pool %q: want on or off", *poolFlag)}
	}
	g, err := readLogFile(path)
	if err != nil {
		return err
	}
	dev, _, err := openDeviceNoting(f.device, stderr)
	if err != nil {
		return err
	}
	defer dev.Close()
	res, err := replay(dev, g, withPool)
	if err != nil {
		return err
	}
	res.Log = path
	if f.json {
		return writeJSON(stdout, res)
	}
	_, err = io.WriteString(stdout, res.text(g))
	return err
}

// parseReplayArgs parses replay's flags, before or after the one log path.
func parseReplayArgs(fs *flag.FlagSet, args []string) (string, error) {
	var paths []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", helpRequest{fs}
			}
			return "", usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		paths = append(paths, args[0])
		args = args[1:]
	}
	switch len(paths) {
	case 0:
		return "", usageError{"no LOG: give the allocation log to replay (written by accounting.Ledger.Record)"}
	case 1:
		return paths[0], nil
	}
	return "", usageError{fmt.Sprintf("one LOG at a time, not %d (%s)", len(paths), strings.Join(paths, ", "))}
}

// exampleLog is the log of the FBP example's scan and both reconstructions
// (chunked under 200 KiB), which the binary carries so that replay can be
// tried from any directory: LOG "example:fbp".
//
//go:embed testdata/fbp.alloclog
var exampleLog []byte

// exampleLogName is the LOG argument that names exampleLog.
const exampleLogName = "example:fbp"

// readLogFile reads the allocation log at path, or the one the binary
// carries for exampleLogName.
func readLogFile(path string) (*accounting.Log, error) {
	var r io.Reader
	if path == exampleLogName {
		r = bytes.NewReader(exampleLog)
	} else {
		fh, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		r = fh
	}
	g, err := accounting.ReadLog(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

// text is the replay's report for people.
func (r *replayResult) text(g *accounting.Log) string {
	var b strings.Builder
	fb := accounting.FormatBytes
	var span float64
	if n := len(g.Events); n > 0 {
		span = g.Events[n-1].At.Seconds()
	}
	fmt.Fprintf(&b, "log            %s: recorded on %s, %d events over %.3f s; the recorded run peaked at %s of device memory\n",
		r.Log, r.Recorded, r.Events, span, fb(r.RecordedPeak))
	how := "straight on the device (-pool=off)"
	if r.Pool {
		how = "through a caching pool (-pool=on)"
	}
	fmt.Fprintf(&b, "replayed on    %s (%s), %s\n", r.Device, fb(r.Total), how)
	if r.Fits {
		fmt.Fprintf(&b, "fits           yes: all %s succeeded\n", plural(r.Allocs, "allocation"))
	} else {
		f := r.Failure
		scope := f.Scope
		if scope == "" {
			scope = "no scope"
		}
		fmt.Fprintf(&b, "fits           no: allocation %d (event %d) of %s at %.6f s in %s failed with %s in use",
			f.ID, f.Event, fb(f.Bytes), f.Seconds, scope, fb(f.InUse))
		if r.Pool {
			fmt.Fprintf(&b, " and %s reserved", fb(f.Reserved))
		}
		fmt.Fprintf(&b, "\n               %s\n", f.Error)
	}
	if f := r.Failure; f != nil && f.Fragmentation != nil {
		fmt.Fprintf(&b, "fragmentation  %.3f of the device's free memory at the failure (1 − largest free block %s / free %s)\n",
			*f.Fragmentation, fb(f.DeviceLargestFree), fb(f.DeviceFree))
	}
	upTo := ""
	if !r.Fits {
		upTo = " up to the failure"
	}
	if r.Pool {
		ratio := ""
		if r.PeakInUse > 0 {
			ratio = fmt.Sprintf(" (%.2f× in use)", r.ReservedOverInUse)
		}
		fmt.Fprintf(&b, "peak           %s in use, %s reserved from the device%s%s\n",
			fb(r.PeakInUse), fb(r.PeakReserved), ratio, upTo)
		fmt.Fprintf(&b, "fragmentation  %.3f of the pool's cache when reserved peaked (1 − largest free block / free bytes cached)\n", r.Fragmentation)
		if s := r.PoolStats; s != nil {
			fmt.Fprintf(&b, "pool           %d allocations from the cache, %d from the device, %d out-of-memory retries, %d segments given back\n",
				s.FromCache, s.FromDevice, s.OOMRetries, s.Released)
		}
	} else {
		fmt.Fprintf(&b, "peak           %s in use%s\n", fb(r.PeakInUse), upTo)
	}
	fmt.Fprintf(&b, "replayed       %s, %s", plural(r.Allocs, "allocation"), plural(r.Frees, "free"))
	s := r.Skipped
	var notes []string
	for _, n := range []struct {
		n    int
		what string
	}{
		{s.OtherKinds, "of host or other memory"},
		{s.Segments, "of the recorded pool's segments"},
		{s.Failed, "that failed in the recorded run"},
		{s.UnpairedFrees, "frees of allocations made before the recording"},
		{s.AfterFailure, "after the failure"},
	} {
		if n.n > 0 {
			notes = append(notes, fmt.Sprintf("%d %s", n.n, n.what))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, "; left out: %s", strings.Join(notes, ", "))
	}
	b.WriteString("\n")
	if r.NotFreed > 0 {
		fmt.Fprintf(&b, "not freed      %s the log never freed (freed by the replay)\n", plural(r.NotFreed, "allocation"))
	}
	return b.String()
}

// plural returns "1 allocation", "2 allocations".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
