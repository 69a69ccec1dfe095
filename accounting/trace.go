package accounting

import (
	"encoding/json"
	"fmt"
	"io"
)

// traceEvent is one Chrome trace-event ("Trace Event Format", opened by
// Perfetto and chrome://tracing).
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // microseconds
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// Trace writes the event log as Chrome trace-event JSON: memory in use per
// kind as counters over time, every copy and memset as a slice on a
// track of its direction, and every kernel launch as an instant on the
// kernels track. It needs the event log (StartLog) and returns
// ErrLogOff without it.
func (l *Ledger) Trace(w io.Writer) error {
	if w == nil {
		return fmt.Errorf("accounting: trace: no writer: %w", ErrNil)
	}
	events, err := l.Events()
	if err != nil {
		return err
	}
	name := l.name
	if name == "" {
		name = "cuarray"
	}
	const memTrack, memsetTrack, kernelTrack = 0, 1 + int(NumDirections), 2 + int(NumDirections)
	out := []traceEvent{{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": name}}}
	out = append(out, traceEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: memTrack, Args: map[string]any{"name": "memory"}})
	for d := Direction(0); d < NumDirections; d++ {
		out = append(out, traceEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: 1 + int(d), Args: map[string]any{"name": "copy " + d.String()}})
	}
	out = append(out, traceEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: memsetTrack, Args: map[string]any{"name": "memset"}})
	out = append(out, traceEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: kernelTrack, Args: map[string]any{"name": "kernels"}})
	for _, e := range events {
		at := float64(e.At.Nanoseconds()) / 1e3
		switch e.Op {
		case OpAlloc, OpFree:
			out = append(out, traceEvent{Name: e.Kind.String() + " bytes", Cat: "memory", Ph: "C", Ts: at, Pid: 1, Tid: memTrack,
				Args: map[string]any{"bytes": e.Level}})
		case OpFailed:
			out = append(out, traceEvent{Name: "failed " + e.Kind.String() + " alloc", Cat: "memory", Ph: "i", Ts: at, Pid: 1, Tid: memTrack,
				Args: map[string]any{"bytes": e.Bytes}})
		case OpCopy, OpMemset:
			dur := float64(e.Dur.Nanoseconds()) / 1e3
			ev := traceEvent{Cat: "copy", Ph: "X", Ts: at - dur, Dur: dur, Pid: 1, Args: map[string]any{"bytes": e.Bytes}}
			if e.Op == OpCopy {
				ev.Name = fmt.Sprintf("%s %s %s", e.Dir, e.Path, FormatBytes(e.Bytes))
				ev.Tid = 1 + int(e.Dir)
				ev.Args["path"] = e.Path.String()
			} else {
				ev.Name, ev.Cat, ev.Tid = "memset "+FormatBytes(e.Bytes), "memset", memsetTrack
			}
			out = append(out, ev)
		case OpLaunch:
			out = append(out, traceEvent{Name: e.Name, Cat: "kernel", Ph: "i", Ts: at, Pid: 1, Tid: kernelTrack,
				Args: map[string]any{"read_bytes": e.Bytes, "written_bytes": e.Written}})
		}
	}
	enc := json.NewEncoder(w)
	return enc.Encode(map[string]any{"traceEvents": out, "displayTimeUnit": "ns"})
}
