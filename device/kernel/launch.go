package kernel

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/ptx/entry"
)

// Kernel is one kernel of a loaded module. It is safe for concurrent use.
type Kernel struct {
	m        *Module
	name     string
	fn       driver.Function
	declared driver.DeclaredLauncher // fn's, when the backend takes declarations
	params   []entry.Param           // as the module's PTX declares them
	checked  bool                    // params are known: launches are checked against them
}

// Name returns the kernel's name.
func (k *Kernel) Name() string { return k.name }

// Launch runs the kernel on the device's default stream, after the work
// queued there, and returns when it is done: the kernel's own error (a
// fault, a write into an In array on sim) is returned here. Every form of
// launch checks its arguments first, against the kernel's parameters
// where its PTX declares them (an *ArgumentError; see the package doc).
func (k *Kernel) Launch(cfg Config, args ...Arg) error { return k.LaunchOn(nil, cfg, args...) }

// LaunchOn runs the kernel on stream s (nil: the default stream), after
// the work queued there, and returns when s has done it.
func (k *Kernel) LaunchOn(s driver.Stream, cfg Config, args ...Arg) error {
	l, err := k.prepare(cfg, args)
	if err != nil {
		return err
	}
	return devarray.Use(func() error {
		if err := k.queue(k.m.stream(s), cfg, l); err != nil {
			return err
		}
		if err := k.m.stream(s).Synchronize(); err != nil {
			return fmt.Errorf("kernel: %s: %w", k.name, err)
		}
		return nil
	}, l.arrays...)
}

// LaunchAsync queues the kernel on stream s (nil: the default stream) and
// returns at once with the Op that tracks it: the arrays stay allocated
// until the kernel is done (a Free meanwhile takes effect then), as an
// async copy keeps its buffers. Wait for the Op, poll its Done, or
// synchronize s before reading what the kernel writes. An Op no one waits
// for lets its arrays go once the module sees it done: every 64th launch
// on a stream records an event after it, and asks whether the one
// recorded 64 launches before is done (then every launch before it on
// the stream is); Close waits for the rest. A launch thus costs the
// driver the launch and its context switch, and 1/32 of a call more.
func (k *Kernel) LaunchAsync(s driver.Stream, cfg Config, args ...Arg) (*Op, error) {
	l, err := k.prepare(cfg, args)
	if err != nil {
		return nil, err
	}
	st := k.m.stream(s)
	op := &Op{m: k.m, s: st}
	for _, a := range l.arrays {
		release, err := a.Hold()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("kernel: launch %s: %w", k.name, err), op.release())
		}
		op.holds = append(op.holds, release)
	}
	var ev driver.Event
	if k.m.marks(st) {
		if ev, err = k.m.event(); err != nil {
			return nil, errors.Join(fmt.Errorf("kernel: launch %s: %w", k.name, err), op.release())
		}
	}
	err = batch(st, func(bs driver.Stream) error {
		if err := k.queue(bs, cfg, l); err != nil {
			return err
		}
		if ev != nil {
			return bs.Record(ev)
		}
		return nil
	})
	if err != nil {
		// Wait for what was queued before letting the arrays go.
		if ev != nil {
			ev.Close()
		}
		return nil, errors.Join(err, st.Synchronize(), op.release())
	}
	op.ev = ev
	if err := k.m.track(op); err != nil {
		return nil, errors.Join(err, op.Wait())
	}
	return op, nil
}

// Queue queues the kernel on stream s (nil: the default stream) and
// returns at once, as cuLaunchKernel does, with the same checks as the
// other forms but no Op: nothing keeps the arrays allocated, so the caller
// keeps them until the kernel is done (synchronize s, or record an event
// after it), as it keeps the memory of its other async work. The cheapest
// launch: the driver's launch and its context switch.
func (k *Kernel) Queue(s driver.Stream, cfg Config, args ...Arg) error {
	l, err := k.prepare(cfg, args)
	if err != nil {
		return err
	}
	return devarray.Use(func() error { return k.queue(k.m.stream(s), cfg, l) }, l.arrays...)
}

// batch runs f with a view of s whose calls share one switch of the
// calling thread's context, where the backend offers it (driver.Batcher).
func batch(s driver.Stream, f func(driver.Stream) error) error {
	if b, ok := s.(driver.Batcher); ok {
		return b.Batch(f)
	}
	return f(s)
}

// launchArgs is a checked launch: the parameter bytes, the memory the
// arrays declare, and the arrays.
type launchArgs struct {
	params driver.KernelArgs
	ranges []driver.Range
	arrays []*devarray.DevArray
}

// prepare checks the launch and its arguments and packs them.
func (k *Kernel) prepare(cfg Config, args []Arg) (*launchArgs, error) {
	if k == nil || k.m == nil {
		return nil, fmt.Errorf("kernel: launch: nil Kernel: %w", driver.ErrInvalidValue)
	}
	if err := cfg.check(k.name); err != nil {
		return nil, err
	}
	l := &launchArgs{}
	n, bytes := 0, 0
	for i := range args {
		if args[i].isArray || args[i].isMemory {
			n++
		}
		bytes += max(args[i].size, 8) + max(args[i].align, 8) // the argument and its padding, at most
	}
	l.params.Grow(bytes, len(args))
	if n > 0 {
		l.ranges = make([]driver.Range, 0, n)
		l.arrays = make([]*devarray.DevArray, 0, n)
	}
	for i := range args {
		a := &args[i]
		switch {
		case a.isArray:
			r, err := a.check(k.name, i, k.m.id)
			if err != nil {
				return nil, err
			}
			l.ranges = append(l.ranges, r)
			l.arrays = append(l.arrays, a.arr)
		case a.isMemory:
			if a.mem.N < 0 || a.access < Read || a.access > ReadWrite {
				return nil, fmt.Errorf("kernel: launch %s: argument %d: %d bytes of memory, access %v: %w", k.name, i+1, a.mem.N, a.access, driver.ErrInvalidValue)
			}
			r, _ := a.Range(i)
			l.ranges = append(l.ranges, r)
		case a.size == 0:
			return nil, fmt.Errorf("kernel: launch %s: argument %d is empty (the zero Arg): %w", k.name, i+1, driver.ErrInvalidValue)
		case a.align <= 0 || a.align&(a.align-1) != 0:
			return nil, fmt.Errorf("kernel: launch %s: argument %d: alignment %d is not a power of two: %w", k.name, i+1, a.align, driver.ErrInvalidValue)
		}
		a.pack(&l.params)
	}
	if k.checked {
		if err := k.checkParams(args); err != nil {
			return nil, err
		}
		if err := k.checkOffsets(args, &l.params); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// queue launches the kernel on s (not nil) with the checked arguments, and
// counts it in the ledger where the backend does not.
func (k *Kernel) queue(s driver.Stream, cfg Config, l *launchArgs) error {
	if cfg.empty() {
		return nil
	}
	grid, block := cfg.Grid.Dims(), cfg.Block.Dims()
	if k.declared != nil {
		return k.declared.LaunchDeclared(grid, block, cfg.SharedBytes, s, &l.params, l.ranges)
	}
	if err := k.fn.Launch(grid, block, cfg.SharedBytes, s, &l.params); err != nil {
		return err
	}
	k.m.dev.Ledger().RecordLaunch(k.name, -1, -1)
	return nil
}
