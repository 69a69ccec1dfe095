// Command cuarray shows what the library sees and does:
//
//	cuarray info [-device SPEC] [-json]   the device, its memory and its ledger
//	cuarray demo [-device SPEC] [-json]   allocate, make views, copy both ways, print the ledger
//	cuarray plan -method NAME|all -shape A,B,C [-axis N] [-dtype T] [-param k=v] [-mem LIMIT] [-overhead F|-raw] [-paths [-profile FILE]] [-device SPEC] [-json]
//	                                      how many slices of a job fit, and the chunks to run it in; -paths: the
//	                                      transfer paths of a chunk's input and output and the planner's pick
//	cuarray bench [-device SPEC] [-sizes 4KiB,1MiB,64MiB(,1GiB on a GPU)] [-paths direct,pinned,staged,mapped,d2d] [-managed all] [-pageable] [-bidir] [-pcie GB/s] [-calibrate] [-profile FILE] [-record FILE] [-json] [-wide] [-svg FILE]
//	                                      bandwidth of every transfer path, with ratios, the ledger's counts and the
//	                                      planner's pick (a table of 120 columns; -wide: every column); -calibrate
//	                                      measures and saves the planner's cost model;
//	                                      -record writes the run's allocation log for replay
//	cuarray replay LOG|example:fbp [-device SPEC] [-pool=on|off] [-json]
//	                                      would a recorded run (accounting.Ledger.Record) fit on this device, with or without the pool
//
// Help asked for (cuarray -h, cuarray help [COMMAND], cuarray COMMAND -h)
// goes to stdout and exits 0. Bad flags or arguments, and values a command
// cannot take (a slice axis past the shape, a parameter the method does not
// have, a help topic that is no command), exit with status 2, a one-line
// message and the command's usage line on stderr; a failure while running
// (no such device, out of memory, nothing fits) exits with status 1 and a
// one-line message.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cuarray/cuarray/internal/errline"
)

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// commands run with their arguments; they write results on stdout and
// notes (progress, a -mem past the device's size) on stderr.
var commands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"info":   runInfo,
	"demo":   runDemo,
	"plan":   runPlan,
	"bench":  runBench,
	"replay": runReplay,
}

// usages are the commands' usage lines, printed after a usage error and for -h.
var usages = map[string]string{
	"":       "usage: cuarray info|demo|plan|bench|replay [-device SPEC] [-json] (cuarray COMMAND -h for its flags and examples)",
	"info":   "usage: cuarray info [-device SPEC] [-json]",
	"demo":   "usage: cuarray demo [-device SPEC] [-json]",
	"plan":   "usage: cuarray plan -method NAME|NAME,NAME|all|list -shape A,B,C [-axis 0|1|2] [-dtype T] [-param name=integer]... [-mem LIMIT] [-overhead F>=1 | -raw] [-paths [-profile FILE]] [-device SPEC] [-json] [-q]",
	"bench":  "usage: cuarray bench [-device SPEC] [-sizes 4KiB,1MiB,64MiB(,1GiB on a GPU)] [-paths direct,pinned,staged,mapped,d2d] [-bidir] [-budget SIZE] [-pcie GB/s] [-calibrate] [-profile FILE] [-record FILE] [-json] [-wide] [-svg FILE] [-q]",
	"replay": "usage: cuarray replay LOG|example:fbp [-device SPEC] [-pool=on|off] [-json]",
}

// summaries say what each command does, for cuarray -h.
var summaries = map[string]string{
	"info":   "the device, its memory and its ledger",
	"demo":   "allocate, make views, copy both ways, print the ledger",
	"plan":   "how many slices of a job fit in the device's memory, and the chunks to run it in",
	"bench":  "bandwidth of every transfer path, with ratios and the ledger's counts",
	"replay": "replay a recorded run's allocations on a device: does it fit, its peak, fragmentation, the first allocation that fails",
}

// examples are each command's example lines, printed by -h after its
// flags. TestHelpExamplesRun runs every one of them.
var examples = map[string][]string{
	"info": {
		"cuarray info                                   # the default device: cuda:0 in a cuda build with a GPU, else sim:0",
		"cuarray info -json",
		"cuarray info -device 'sim:0?mem=16GiB'           # quoted: ? is a shell wildcard",
	},
	"demo": {
		"cuarray demo",
		"cuarray demo -device 'sim:0?latency=1ms' -json   # sim whose work completes after the call, as on a GPU",
	},
	"plan": {
		"cuarray plan -method list                      # the methods it can plan",
		"cuarray plan -method fbp.reconstruct -shape 512,720,512",
		"cuarray plan -method fbp.reconstruct -shape 2048,1800,2048 -mem 16GiB   # a 16 GiB device (sim is made that large)",
		"cuarray plan -method identity -shape 1000,10,20 -dtype float32 -mem 14450B -raw   # httomo's worked example: 14450 // (800 + 800) = 9",
		"cuarray plan -method all -shape 512,720,512 -raw   # every method, one line each",
		"cuarray plan -method kernels.scale -shape 64,1024,1024 -axis 1 -dtype float64 -param factor=2 -json",
		"cuarray plan -method fbp.reconstruct -shape 512,720,512 -paths   # the transfer paths of the largest chunk's input and output, and the planner's pick",
	},
	"bench": {
		"cuarray bench -sizes 4KiB,1MiB -paths pinned,staged -budget 8MiB",
		"cuarray bench -sizes 1MiB -paths direct,d2d -budget 4MiB -json -q",
		"cuarray bench -sizes 4KiB,1MiB -paths pinned -bidir -budget 4MiB -wide -q   # event-timed GB/s, µs at small sizes, both directions at once",
		"cuarray bench -device 'sim:0?pageable-access=hmm' -sizes 1MiB -paths pinned -pageable -budget 4MiB -q   # a kernel using a Go slice in place, where the device can (HMM, ATS)",
		"cuarray bench -calibrate -sizes 4KiB,4MiB -paths direct,staged -profile my-profile.json -q   # measure and save the planner's cost model",
		"cuarray bench -profile my-profile.json -sizes 4KiB,1MiB -paths direct,staged -budget 8MiB -q   # plan with it (or CUARRAY_PROFILE=FILE)",
		"cuarray bench -device sim:0 -calibrate -pcie 0.1 -sizes 4KiB,4MiB -paths direct,pinned -profile slow-link.json -q   # sim models a 0.1 GB/s link: about 0.1 GB/s",
		"cuarray bench -sizes 4KiB,1MiB -paths pinned,staged -budget 8MiB -record bench.alloclog -q   # and its allocation log, for cuarray replay",
	},
	"replay": {
		"cuarray replay example:fbp -device 'sim:0?mem=64MiB'            # the FBP example's log, which the binary carries (fbp -record FILE writes yours)",
		"cuarray replay example:fbp -device 'sim:0?mem=64KiB' -pool=on   # too small: the first allocation that fails",
		"cuarray replay example:fbp -device 'sim:0?mem=24GiB' -pool=on -json",
		"cuarray replay bench.alloclog -device 'sim:0?mem=64MiB'   # the log bench -record FILE wrote",
	},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) >= 2 && args[0] == "help" {
		if _, ok := commands[args[1]]; !ok || len(args) > 2 {
			fmt.Fprintf(stderr, "cuarray help: %q is not a command (want cuarray help info, demo, plan, bench or replay)\n", strings.Join(args[1:], " "))
			fmt.Fprintln(stderr, usages[""])
			return 2
		}
		return run([]string{args[1], "-h"}, stdout, stderr) // cuarray help plan
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, usages[""])
		return 2
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "help" || args[0] == "--help" {
		fmt.Fprintln(stdout, usages[""])
		printOverview(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "cuarray: unknown command %q (want info, demo, plan, bench or replay)\n", args[0])
		fmt.Fprintln(stderr, usages[""])
		return 2
	}
	err := cmd(args[1:], stdout, stderr)
	var ue usageError
	var help helpRequest
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		printHelp(stdout, args[0], help.fs)
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stdout, usages[args[0]])
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "cuarray %s: %v\n", args[0], ue.msg)
		fmt.Fprintln(stderr, usages[args[0]])
		return 2
	default:
		fmt.Fprintf(stderr, "cuarray %s: %s\n", args[0], errline.Of(err))
		return 1
	}
}

// commonFlags are the flags every command takes.
type commonFlags struct {
	device string
	json   bool
}

// parseFlags parses a command's flags; mistakes become a usageError.
func parseFlags(name string, args []string, c *commonFlags) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.device, "device", "", "device spec: sim:0, sim:0?mem=256MiB, cuda:0; empty picks cuda:0 if present, else sim:0")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of text")
	return parseSet(fs, args)
}

// helpRequest is -h or -help on a command: run prints the command's usage
// line, its flags and its examples, and exits 0.
type helpRequest struct{ fs *flag.FlagSet }

func (h helpRequest) Error() string { return "help requested" }
func (h helpRequest) Unwrap() error { return flag.ErrHelp }

// printHelp prints a command's usage line, its flags with their defaults
// and its examples.
func printHelp(w io.Writer, cmd string, fs *flag.FlagSet) {
	fmt.Fprintln(w, usages[cmd])
	fmt.Fprintf(w, "\n%s: %s.\n\nFlags:\n", cmd, summaries[cmd])
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprintf(w, "\nExamples:\n")
	for _, e := range examples[cmd] {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

// printOverview lists the commands and a few examples, for cuarray -h.
func printOverview(w io.Writer) {
	fmt.Fprintf(w, "\nCommands:\n")
	for _, c := range []string{"info", "demo", "plan", "bench", "replay"} {
		fmt.Fprintf(w, "  %-6s %s\n", c, summaries[c])
	}
	fmt.Fprintf(w, "\nEach command's -h (or cuarray help COMMAND) prints its flags and examples. Examples:\n")
	for _, c := range []string{"info", "plan", "bench"} {
		fmt.Fprintf(w, "  %s\n", examples[c][len(examples[c])-1])
	}
}

// parseSet parses args with fs; mistakes and stray arguments become a
// usageError, -h a helpRequest (which wraps flag.ErrHelp).
func parseSet(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helpRequest{fs}
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}
