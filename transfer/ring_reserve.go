package transfer

import (
	"fmt"
	"os"

	"github.com/cuarray/cuarray/device/driver"
)

// Reserve makes now the staging ring that staged copies with opts use (its
// pinned chunks, their events and its streams), unless the copier holds
// one of that shape already, and writes a zero into each page of its
// chunks, so that the first staged copy neither allocates nor maps them:
// code that times its copies reserves before its clock starts. Page-locked
// memory from the driver is resident once allocated; sim's and the
// emulated driver's are mapped on their first write, which the zeros do
// here. Close frees the ring, as it frees one a copy made; a copy with
// another ring shape replaces it. After Close began it returns ErrClosed.
func (c *Copier) Reserve(opts ...Option) error {
	if c == nil {
		return fmt.Errorf("transfer: reserve: nil Copier; make one with New: %w", driver.ErrInvalidValue)
	}
	o, err := apply(c.opt, opts)
	if err != nil {
		return err
	}
	if err := c.begin(); err != nil {
		return err
	}
	defer c.busy.Done()
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	r, err := c.getRing(o)
	if err != nil {
		return fmt.Errorf("transfer: reserve the staging ring: %w", err)
	}
	page := os.Getpagesize()
	for _, h := range r.slots {
		for i := 0; i < len(h.Bytes); i += page {
			h.Bytes[i] = 0
		}
	}
	return nil
}
