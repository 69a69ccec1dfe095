package sim

import (
	"fmt"
	"io"
)

// Format prints the device: String for %v and %s, GoString for %#v, and
// for %+v String followed by what its ledger has counted (device memory
// now, at its peak, allocations and frees; bytes and copies each way). Like
// String it reads counters only, never the device's memory or locks.
func (d *Device) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, d.GoString())
	case verb == 'v' && f.Flag('+'):
		io.WriteString(f, d.verbose())
	case verb == 'v' || verb == 's':
		io.WriteString(f, d.String())
	case verb == 'q':
		fmt.Fprintf(f, "%q", d.String())
	default:
		fmt.Fprintf(f, "%%!%c(*sim.Device=%s)", verb, d.String())
	}
}

// verbose is what %+v prints.
func (d *Device) verbose() string {
	if d == nil {
		return d.String()
	}
	return d.String() + " " + d.ledger.Snapshot().Totals()
}
