package device

import (
	"fmt"
	"strings"

	"github.com/cuarray/cuarray/accounting"
)

// Describe returns what `cuarray info` prints of a device before its
// ledger, a line a fact: the device and its backend, the model, the driver
// where there is one, the free and total memory, the allocation alignment,
// whether host memory can be mapped, and the context's flags. Python's
// `python -m cuarray info` prints the same lines.
func Describe(d Device) (string, error) {
	free, total, err := d.MemInfo()
	if err != nil {
		return "", err
	}
	i := d.Info()
	var b strings.Builder
	fmt.Fprintf(&b, "device      %s (%s backend)\n", i.Name, i.Backend)
	fmt.Fprintf(&b, "model       %s\n", i.Model)
	if i.Driver != "" {
		fmt.Fprintf(&b, "driver      %s\n", i.Driver)
	}
	fmt.Fprintf(&b, "memory      %s free of %s\n", accounting.FormatBytes(free), accounting.FormatBytes(total))
	fmt.Fprintf(&b, "alignment   %d bytes\n", i.Alignment)
	fmt.Fprintf(&b, "map host    %v\n", i.CanMapHost)
	if i.ContextFlags != "" {
		fmt.Fprintf(&b, "context     %s\n", i.ContextFlags)
	}
	return b.String(), nil
}
