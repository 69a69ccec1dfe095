package sim

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/cuarray/cuarray/device/driver"
)

// StreamRaceError is the stream race checker's report (check=streams): two
// operations touch overlapping bytes, at least one writes, and neither is
// ordered before the other by CUDA's rules; or an operation uses
// stream-ordered memory outside its life (Rule: before its allocation,
// after its free, or freed while in use). It wraps driver.ErrStreamRace.
// The racing call returns it, and does nothing.
type StreamRaceError struct {
	// Lo and Hi bound the bytes both operations touch, [Lo, Hi).
	Lo, Hi uintptr
	// Op is the operation being queued; Prev the earlier one it races with.
	Op, Prev RaceOp
	// Rule is the stream-ordered lifetime rule the two break, when one of
	// them is a stream-ordered allocation or free (MallocAsync, FreeAsync).
	Rule Lifetime
}

// RaceOp is one side of a race.
type RaceOp struct {
	Kind   string   // "copy HtoD", "memset", "kernel", "free", "malloc async", "free async", "host write", ...
	Stream string   // "stream 0x100", "the legacy default stream", "the host", ...
	Write  bool     // it writes the bytes, else reads them
	Lo, Hi uintptr  // the range of this operation's argument that overlaps, [Lo, Hi)
	Stack  []string // where it was queued: "function\n\tfile:line", the program's frames
}

func (o RaceOp) verb() string {
	if o.Write {
		return "write"
	}
	return "read"
}

func (o RaceOp) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of [%#x, %#x) by %s on %s, queued at", o.verb(), o.Lo, o.Hi, o.Kind, o.Stream)
	if len(o.Stack) == 0 {
		b.WriteString(" (no frames of the program)")
	}
	for _, f := range o.Stack {
		b.WriteString("\n      ")
		b.WriteString(strings.ReplaceAll(f, "\n", "\n      "))
	}
	return b.String()
}

func (e *StreamRaceError) Error() string {
	return fmt.Sprintf("device: stream race on %d bytes at [%#x, %#x) (%s):\n  %v\n  previous %v",
		e.Hi-e.Lo, e.Lo, e.Hi, e.Rule.why(), e.Op, e.Prev)
}

// Unwrap returns driver.ErrStreamRace.
func (e *StreamRaceError) Unwrap() error { return driver.ErrStreamRace }

func newStreamRaceError(cur, prev *accessRec, lo, hi uintptr) *StreamRaceError {
	return &StreamRaceError{Lo: lo, Hi: hi, Op: raceOp(cur), Prev: raceOp(prev), Rule: lifetimeRule(cur.op, prev.op)}
}

func raceOp(a *accessRec) RaceOp {
	return RaceOp{Kind: a.op.kind, Stream: a.op.stream, Write: a.write, Lo: a.lo, Hi: a.hi, Stack: programFrames(a.op.pcs)}
}

// skippedFrames are the packages whose frames a report leaves out: the
// runtime's and the test runner's, and sim's own and the emulated
// driver's, below the program's call.
var skippedFrames = []string{
	"runtime.", "testing.",
	"github.com/cuarray/cuarray/device/sim.",
	"github.com/cuarray/cuarray/device/cuda/emulated.",
	"_cgoexp_",
}

// programFrames symbolizes pcs, keeping the program's frames, as the race
// detector's report does.
func programFrames(pcs []uintptr) []string {
	var out []string
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		keep := f.Function != "" && !strings.HasSuffix(f.File, "_testmain.go")
		for _, p := range skippedFrames {
			if strings.HasPrefix(f.Function, p) || strings.Contains(f.Function, p) && p == "_cgoexp_" {
				keep = false
			}
		}
		if keep {
			out = append(out, fmt.Sprintf("%s\n\t%s:%d", f.Function, f.File, f.Line))
		}
		if !more {
			break
		}
	}
	return out
}
