package devarray

import (
	"fmt"
	"io"
)

// Format prints the array: String for %v and %s, GoString for %#v, and for
// %+v String followed by the descriptor another library would be handed
// (pointer, shape, byte strides, dtype and its typestr, device, read-only),
// the bytes its elements take and whether they are C-contiguous. None of it
// touches the array's memory.
func (a *DevArray) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, a.GoString())
	case verb == 'v' && f.Flag('+'):
		io.WriteString(f, a.verbose())
	case verb == 'v' || verb == 's':
		io.WriteString(f, a.String())
	case verb == 'q':
		fmt.Fprintf(f, "%q", a.String())
	default:
		fmt.Fprintf(f, "%%!%c(*devarray.DevArray=%s)", verb, a.String())
	}
}

// verbose is what %+v prints.
func (a *DevArray) verbose() string {
	if a.check() != nil {
		return a.String()
	}
	return fmt.Sprintf("%s {descriptor: ptr %v, shape %v, strides %v bytes, dtype %v (typestr %s), device %v, readonly %t; %d elements in %d bytes, C-contiguous %t}",
		a.String(), a.Ptr(), a.lay.shape, a.lay.strides, a.dtype, a.dtype.Typestr(), a.buf.device, a.readonly, a.Size(), a.NBytes(), a.IsContiguous())
}
