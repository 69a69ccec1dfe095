package accounting

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Op is what an Event records.
type Op uint8

// The event operations.
const (
	OpAlloc  Op = iota + 1 // an allocation
	OpFree                 // a free
	OpFailed               // an allocation refused by a limit or the device
	OpCopy                 // a copy
	OpMemset               // a memset
	OpLaunch               // a kernel launch
)

var opNames = [...]string{"", "alloc", "free", "failed", "copy", "memset", "launch"}

// String returns the op's name.
func (o Op) String() string {
	if int(o) < len(opNames) && o > 0 {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Event is one entry of the event log.
type Event struct {
	At    time.Duration // when it was recorded, since StartLog
	Op    Op
	Kind  Kind      // allocations, frees and failures
	Dir   Direction // copies
	Path  Path      // copies
	Bytes int64     // the bytes allocated, freed, refused, copied or set; launches: the bytes read, -1 when not known
	Addr  uintptr
	Dur   time.Duration // copies and memsets: how long it took, ending at At
	Level int64         // allocations, frees and failures: bytes of Kind in use after it
	// Name and Written are a launch's: the kernel's name and the bytes it
	// wrote, -1 when not known.
	Name    string
	Written int64
}

// Allocation is a live allocation seen by the event log.
type Allocation struct {
	Kind  Kind
	Addr  uintptr
	Bytes int64
	At    time.Duration // since StartLog
	Stack string        // the allocating goroutine's stack, when LogConfig.Stacks is set
}

// LogConfig says what the event log keeps.
type LogConfig struct {
	// MaxEvents bounds the events kept; later ones are counted as dropped.
	// 0 means 1<<20.
	MaxEvents int
	// Stacks records the stack of every allocation, for leak reports. It is
	// slow: use it to find a leak, not in production.
	Stacks bool
}

type eventLog struct {
	cfg     LogConfig
	epoch   time.Time
	mu      sync.Mutex
	events  []Event
	dropped int64
	live    map[uintptr]Allocation
}

// StartLog turns the event log on: from now on every event is kept (up to
// cfg.MaxEvents) with its time, and live allocations are tracked so that
// Outstanding and LeakReport can list them. Recording then allocates. A
// second StartLog starts a fresh log.
func (l *Ledger) StartLog(cfg LogConfig) {
	if l == nil {
		return
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = 1 << 20
	}
	l.log.Store(&eventLog{cfg: cfg, epoch: time.Now(), live: make(map[uintptr]Allocation)})
}

// StopLog turns the event log off and returns the events it kept and how
// many it dropped. It returns ErrLogOff if the log was not on.
func (l *Ledger) StopLog() ([]Event, int64, error) {
	if l == nil {
		return nil, 0, fmt.Errorf("accounting: stop log: %w", ErrNil)
	}
	lg := l.log.Swap(nil)
	if lg == nil {
		return nil, 0, ErrLogOff
	}
	lg.mu.Lock()
	defer lg.mu.Unlock()
	return lg.events, lg.dropped, nil
}

// Events returns a copy of the events logged so far.
func (l *Ledger) Events() ([]Event, error) {
	if l == nil {
		return nil, fmt.Errorf("accounting: events: %w", ErrNil)
	}
	lg := l.log.Load()
	if lg == nil {
		return nil, ErrLogOff
	}
	lg.mu.Lock()
	defer lg.mu.Unlock()
	return append([]Event(nil), lg.events...), nil
}

func (lg *eventLog) add(e Event) {
	e.At = time.Since(lg.epoch)
	var stack string
	if e.Op == OpAlloc && lg.cfg.Stacks {
		stack = callers()
	}
	lg.mu.Lock()
	defer lg.mu.Unlock()
	switch e.Op {
	case OpAlloc:
		lg.live[e.Addr] = Allocation{Kind: e.Kind, Addr: e.Addr, Bytes: e.Bytes, At: e.At, Stack: stack}
	case OpFree:
		delete(lg.live, e.Addr)
	}
	if len(lg.events) >= lg.cfg.MaxEvents {
		lg.dropped++
		return
	}
	lg.events = append(lg.events, e)
}

// callers returns the stack above the ledger and device packages.
func callers() string {
	pc := make([]uintptr, 32)
	n := runtime.Callers(4, pc)
	frames := runtime.CallersFrames(pc[:n])
	var b strings.Builder
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			break
		}
	}
	return b.String()
}

// Outstanding returns the allocations made since StartLog that were not
// freed, oldest first. It returns ErrLogOff if the log is off.
func (l *Ledger) Outstanding() ([]Allocation, error) {
	if l == nil {
		return nil, fmt.Errorf("accounting: outstanding: %w", ErrNil)
	}
	lg := l.log.Load()
	if lg == nil {
		return nil, ErrLogOff
	}
	lg.mu.Lock()
	out := make([]Allocation, 0, len(lg.live))
	for _, a := range lg.live {
		out = append(out, a)
	}
	lg.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out, nil
}

// LeakReport writes the outstanding allocations, with their stacks when
// they were recorded, and returns how many there were.
func (l *Ledger) LeakReport(w io.Writer) (int, error) {
	if w == nil {
		return 0, fmt.Errorf("accounting: leak report: no writer: %w", ErrNil)
	}
	out, err := l.Outstanding()
	if err != nil {
		return 0, err
	}
	for _, a := range out {
		if _, err := fmt.Fprintf(w, "%s %s at 0x%x, allocated %v after the log started\n%s",
			FormatBytes(a.Bytes), a.Kind, a.Addr, a.At, a.Stack); err != nil {
			return 0, err
		}
	}
	return len(out), nil
}
