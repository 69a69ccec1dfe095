package accounting

import (
	"fmt"
	"strings"
	"time"
)

// The String and GoString methods below describe ledgers, scopes,
// workspaces, recordings, snapshots and logs in a line. The ones of live
// objects read atomic counters and never wait for a lock: a ledger's
// counters are read without holding up recording, and a workspace or a
// recording whose lock is taken (a resize waiting for the device, a write
// to a slow writer) says "busy".

// String describes the ledger by the memory in use now: "ledger sim:0:
// device 12.00 MiB (peak 16.00 MiB), pinned 1.00 MiB (peak 1.00 MiB)",
// each kind that was ever used, with its limit where one is set.
func (l *Ledger) String() string {
	if l == nil {
		return "ledger <nil>"
	}
	var kinds []string
	for k := range NumKinds {
		lv := &l.levels[k]
		cur, peak, limit := lv.current.Load(), lv.peak.Load(), lv.limit.Load()
		if cur == 0 && peak == 0 && limit == 0 {
			continue
		}
		s := fmt.Sprintf("%v %s (peak %s", k, FormatBytes(cur), FormatBytes(peak))
		if limit > 0 {
			s += ", limit " + FormatBytes(limit)
		}
		kinds = append(kinds, s+")")
	}
	if len(kinds) == 0 {
		kinds = []string{"nothing allocated"}
	}
	name := l.name
	if name == "" {
		name = "(unnamed)"
	}
	return "ledger " + name + ": " + strings.Join(kinds, ", ")
}

// GoString is String in fmt's form of a pointer, for %#v:
// "(*accounting.Ledger)(0xc000123400) /* ledger sim:0: ... */".
func (l *Ledger) GoString() string { return goString("*accounting.Ledger", l, l.String()) }

// String describes the scope: `scope "fbp" of sim:0 (open 1.2s, device
// peak +16.00 MiB)`; a scope no longer on its ledger's stack is "popped".
func (s *Scope) String() string {
	if s == nil {
		return "scope <nil>"
	}
	if s.l == nil {
		return fmt.Sprintf("scope %q (no ledger)", s.name)
	}
	state := "popped"
	for t := s.l.top.Load(); t != nil; t = t.parent {
		if t == s {
			state = "open " + time.Since(s.start).Round(time.Millisecond).String()
			break
		}
	}
	peak := s.peak[Device].Load() - s.base[Device]
	return fmt.Sprintf("scope %q of %s (%s, device peak +%s)", s.name, s.l.name, state, FormatBytes(peak))
}

// GoString is String in fmt's form of a pointer, for %#v.
func (s *Scope) GoString() string { return goString("*accounting.Scope", s, s.String()) }

// String describes the workspace: "workspace 1.00 MiB at 0x7f3a00000000 on
// sim:0 (default, borrowed)", "empty" before its first allocation.
func (w *Workspace) String() string {
	if w == nil {
		return "workspace <nil>"
	}
	on := "no device"
	if w.b != nil {
		on = w.b.DeviceID().String()
	}
	if !w.mu.TryLock() {
		return "workspace on " + on + " (busy)"
	}
	size, ptr, scheme, borrowed, querying := w.size, w.ptr, w.scheme, w.borrowed, w.querying
	w.mu.Unlock()
	s := "workspace empty on " + on + " (" + scheme.String()
	if size > 0 {
		s = fmt.Sprintf("workspace %s at %v on %s (%v", FormatBytes(size), ptr, on, scheme)
	}
	if borrowed {
		s += ", borrowed"
	}
	if querying {
		s += ", querying"
	}
	return s + ")"
}

// GoString is String in fmt's form of a pointer, for %#v.
func (w *Workspace) GoString() string { return goString("*accounting.Workspace", w, w.String()) }

// String describes the recording: "recording of sim:0: 120 events, 1.05
// KiB written", "closed" after Close.
func (r *Recording) String() string {
	if r == nil || r.l == nil {
		return "recording <nil>"
	}
	s := "recording of " + r.l.name
	if r.l.rec.Load() != r {
		s += " (closed)"
	}
	if !r.mu.TryLock() { // held while writing to the caller's writer
		return s + ": busy"
	}
	events, n, err := r.events, r.cw.n, r.err
	r.mu.Unlock()
	s += fmt.Sprintf(": %d events, %s written", events, FormatBytes(n))
	if err != nil {
		s += fmt.Sprintf(", failed: %v", err)
	}
	return s
}

// GoString is String in fmt's form of a pointer, for %#v.
func (r *Recording) GoString() string { return goString("*accounting.Recording", r, r.String()) }

// String describes the snapshot in a line: the memory of each kind in use
// (and its peak), the bytes copied in each direction, memsets and kernel
// launches, "sim:0:
// device 12.00 MiB (peak 16.00 MiB); HtoD 1.00 MiB in 1 copy". Report
// writes the whole table.
func (s Snapshot) String() string {
	var parts []string
	for k, ks := range s.Kinds {
		if ks.Current != 0 || ks.Peak != 0 || ks.Allocs != 0 || ks.Failed != 0 {
			parts = append(parts, fmt.Sprintf("%v %s (peak %s)", Kind(k), FormatBytes(ks.Current), FormatBytes(ks.Peak)))
		}
	}
	mem := strings.Join(parts, ", ")
	parts = parts[:0]
	for d := range s.Copies {
		if c := s.CopyTotal(Direction(d)); c.Count != 0 {
			parts = append(parts, fmt.Sprintf("%v %s in %s", Direction(d), FormatBytes(c.Bytes), plural(c.Count, "copy", "copies")))
		}
	}
	if s.Memsets.Count != 0 {
		parts = append(parts, fmt.Sprintf("memset %s in %s", FormatBytes(s.Memsets.Bytes), plural(s.Memsets.Count, "call", "calls")))
	}
	var launches int64
	for _, k := range s.Kernels {
		launches += k.Launches
	}
	if launches != 0 {
		parts = append(parts, plural(launches, "kernel launch", "kernel launches"))
	}
	if mem == "" && len(parts) == 0 {
		mem = "nothing counted"
	}
	if len(parts) > 0 {
		if mem != "" {
			mem += "; "
		}
		mem += strings.Join(parts, ", ")
	}
	return s.Name + ": " + mem
}

// Totals is what a device's %+v adds to its name: "{ledger: device memory
// 12.00 MiB now, 16.00 MiB at peak, allocations 3, frees 1; copies HtoD
// 1.00 MiB in 1, DtoH 0 B in 0, DtoD 0 B in 0}".
func (s Snapshot) Totals() string {
	mem := s.Kinds[Device]
	copies := func(dir Direction) string {
		c := s.CopyTotal(dir)
		return fmt.Sprintf("%s in %d", FormatBytes(c.Bytes), c.Count)
	}
	return fmt.Sprintf("{ledger: device memory %s now, %s at peak, allocations %d, frees %d; copies HtoD %s, DtoH %s, DtoD %s}",
		FormatBytes(mem.Current), FormatBytes(mem.Peak), mem.Allocs, mem.Frees, copies(HtoD), copies(DtoH), copies(DtoD))
}

// GoString is %#v's Go syntax with the zero counters left out (an array
// literal keyed by index): a snapshot has over 60 of them.
func (s Snapshot) GoString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "accounting.Snapshot{Name:%q, Taken:%#v, Kinds:[%d]accounting.KindStats{", s.Name, s.Taken, NumKinds)
	sep := ""
	for k, ks := range s.Kinds {
		if ks != (KindStats{}) {
			fmt.Fprintf(&b, "%s%d:%#v", sep, k, ks)
			sep = ", "
		}
	}
	fmt.Fprintf(&b, "}, Copies:[%d][%d]accounting.CopyStats{", NumDirections, NumPaths)
	sep = ""
	for d := range s.Copies {
		if s.Copies[d] == ([NumPaths]CopyStats{}) {
			continue
		}
		fmt.Fprintf(&b, "%s%d:{", sep, d)
		sep2 := ""
		for p, c := range s.Copies[d] {
			if c != (CopyStats{}) {
				fmt.Fprintf(&b, "%s%d:%#v", sep2, p, c)
				sep2 = ", "
			}
		}
		b.WriteString("}")
		sep = ", "
	}
	fmt.Fprintf(&b, "}, Memsets:%#v", s.Memsets)
	if len(s.Kernels) > 0 {
		fmt.Fprintf(&b, ", Kernels:%#v", s.Kernels)
	}
	if len(s.Pools) > 0 {
		fmt.Fprintf(&b, ", Pools:%#v", s.Pools)
	}
	b.WriteString("}")
	return b.String()
}

// String describes the log: "log of sim:0 from 2026-01-02 15:04:05: 1200
// events, 3 scopes, 2 streams". Its events are its fields' to read.
func (g Log) String() string {
	return fmt.Sprintf("log of %s from %s: %s, %s, %s", g.Name, g.Start.Format(time.DateTime),
		plural(int64(len(g.Events)), "event", "events"), plural(int64(len(g.Scopes)), "scope", "scopes"),
		plural(int64(g.Streams), "stream", "streams"))
}

// GoString is %#v's Go syntax with the events and scopes, which may be
// millions, counted in a comment instead.
func (g Log) GoString() string {
	return fmt.Sprintf("accounting.Log{Version:%d, Name:%q, Start:%#v, Events:[]accounting.LogEvent{ /* %d events */ }, Scopes:[]accounting.LogScope{ /* %d scopes */ }, Streams:%d}",
		g.Version, g.Name, g.Start, len(g.Events), len(g.Scopes), g.Streams)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// goString writes p as fmt's %#v writes a pointer inside a value, with a
// description after it as a comment.
func goString(typ string, p any, desc string) string {
	addr := fmt.Sprintf("%p", p)
	if addr == "0x0" {
		return "(" + typ + ")(nil)"
	}
	return "(" + typ + ")(" + addr + ") /* " + desc + " */"
}
