package gorgonia

import "fmt"

// String describes the engine: "tensor engine on sim:0".
func (e *DeviceEngine) String() string {
	if e == nil || e.backend == nil {
		return "tensor engine <nil>"
	}
	return "tensor engine on " + e.backend.DeviceID().String()
}

// GoString is String in fmt's form of a pointer, for %#v.
func (e *DeviceEngine) GoString() string {
	if e == nil {
		return "(*gorgonia.DeviceEngine)(nil)"
	}
	return fmt.Sprintf("(*gorgonia.DeviceEngine)(%p) /* %s */", e, e.String())
}
