package kernels

import "fmt"

// String describes the kernels' device and stream: "kernels on sim:0 (Go
// references, default stream)", "kernels on cuda:0 (async on stream
// 0x5a5a00)". It does not call the device.
func (k *Kernels) String() string {
	if k == nil || k.dev == nil {
		return "kernels <nil>"
	}
	how := "Go references, "
	if k.gpu != nil {
		how = ""
	}
	switch {
	case k.stream == nil:
		how += "default stream"
	case k.async:
		how += fmt.Sprintf("async on stream %#x", k.stream.Handle())
	default:
		how += fmt.Sprintf("on stream %#x", k.stream.Handle())
	}
	return fmt.Sprintf("kernels on %v (%s)", k.dev.DeviceID(), how)
}

// GoString is String in fmt's form of a pointer, for %#v:
// "(*kernels.Kernels)(0xc000123400) /* kernels on sim:0 (...) */".
func (k *Kernels) GoString() string {
	if k == nil {
		return "(*kernels.Kernels)(nil)"
	}
	return fmt.Sprintf("(*kernels.Kernels)(%p) /* %s */", k, k.String())
}
