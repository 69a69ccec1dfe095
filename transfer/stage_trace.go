package transfer

import (
	"errors"

	"github.com/cuarray/cuarray/device/driver"
)

// stageStep is a moment in the life of one chunk of a staged copy.
type stageStep int

const (
	// stepHostStart: the first part of the chunk's host copy (its gather
	// into the slot, or its scatter from it) began.
	stepHostStart stageStep = iota
	// stepHostEnd: the chunk's last part was copied.
	stepHostEnd
	// stepDMAQueued: the chunk's DMA and the slot's event after it were queued.
	stepDMAQueued
	// stepDMADone: an event recorded right after the chunk's DMA had completed.
	stepDMADone
)

func (s stageStep) String() string {
	switch s {
	case stepHostStart:
		return "host copy began"
	case stepHostEnd:
		return "host copy ended"
	case stepDMAQueued:
		return "DMA queued"
	case stepDMADone:
		return "DMA completed"
	}
	return "unknown step"
}

// stageTrace, when a Copier has one (set before its first copy; tests
// do), is told each step of each chunk of the Copier's staged copies, on
// the goroutine that takes it, as it happens: it must be safe for
// concurrent use. Without one the staged path pays a nil check a step.
type stageTrace func(chunk int, step stageStep)

// traceDone records a fresh event on st right after chunk ci's DMA and
// reports stepDMADone once it completes, on a goroutine of its own that
// p.traced counts. Only a traced copy calls it: the event is made and
// freed per chunk.
func (p *pipeline) traceDone(ci int, st driver.Stream) error {
	ev, err := p.dev.NewEvent()
	if err != nil {
		return err
	}
	if err := st.Record(ev); err != nil {
		return errors.Join(err, ev.Close())
	}
	p.traced.Add(1)
	go func() {
		defer p.traced.Done()
		if err := ev.Synchronize(); err == nil {
			p.trace(ci, stepDMADone)
		}
		if err := ev.Close(); err != nil {
			p.fail(err)
		}
	}()
	return nil
}
