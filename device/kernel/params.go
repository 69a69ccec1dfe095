package kernel

import (
	"fmt"
	"strings"
	"sync"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/fatbin"
	"github.com/cuarray/cuarray/device/ptx/entry"
)

// ArgumentError is a launch refused, before any driver call, because its
// arguments do not fit the kernel's parameters as the kernel's PTX
// declares them: an argument missing or one too many, a scalar of
// another width than its parameter's type (I64 for a .u32), an array or
// Memory where the parameter is not an 8-byte integer (.u64, .s64,
// .b64), or a Struct whose alignment places it elsewhere than the kernel
// reads its parameter. It wraps driver.ErrInvalidValue.
type ArgumentError struct {
	// Kernel is the kernel's name.
	Kernel string
	// Position is the argument's position in the launch, counting from 1,
	// as the message does.
	Position int
	// Param is the parameter's PTX type as its declaration writes it
	// (".u32", ".align 8 .b8[24]"); empty for an argument no parameter
	// takes.
	Param string
	// Given is the argument as it prints ("I64(1961)"); empty for a
	// missing one.
	Given string
	// Args is how many arguments the launch gives, Params how many
	// parameters the kernel takes.
	Args, Params int
	// Reason says what does not fit, where Param and Given do not say it
	// alone ("8 bytes for a 4-byte parameter").
	Reason string
}

// Error names the kernel, the argument (counting from 1), the parameter's
// PTX type and what was given.
func (e *ArgumentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel: launch %s: argument %d (counting from 1)", e.Kernel, e.Position)
	switch {
	case e.Given == "":
		fmt.Fprintf(&b, " is missing: the kernel's parameter %d is %s", e.Position, e.Param)
	case e.Param == "":
		fmt.Fprintf(&b, ", %s, has no parameter", e.Given)
	default:
		fmt.Fprintf(&b, " is %s where the kernel's parameter is %s", e.Given, e.Param)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Args != e.Params {
		fmt.Fprintf(&b, " (%s takes %d arguments, the launch gives %d)", e.Kernel, e.Params, e.Args)
	}
	b.WriteString(": ")
	b.WriteString(driver.ErrInvalidValue.Error())
	return b.String()
}

// Unwrap returns driver.ErrInvalidValue.
func (e *ArgumentError) Unwrap() error { return driver.ErrInvalidValue }

// checkParams checks the launch's arguments against the kernel's
// parameters, in number, in kind (an array only for an 8-byte integer
// parameter) and in width; the zero Arg is left to prepare, which
// refuses it. It allocates nothing unless it refuses.
func (k *Kernel) checkParams(args []Arg) error {
	ps := k.params
	for i := range max(len(args), len(ps)) {
		if i >= len(args) || i >= len(ps) {
			return k.argError(args, i, "")
		}
		a := &args[i]
		switch {
		case a.isArray || a.isMemory:
			if !takesAddress(ps[i]) {
				return k.argError(args, i, "an array or Memory is passed as its 8-byte device address, which stands only where a .u64, .s64 or .b64 parameter is")
			}
		case a.size > 0 && a.size != ps[i].Size:
			return k.argError(args, i, fmt.Sprintf("%d %s for a %d-byte parameter", a.size, plural(a.size, "byte"), ps[i].Size))
		}
	}
	return nil
}

// checkOffsets checks that each packed argument starts where the kernel
// reads its parameter: a Struct of a parameter's size but a smaller
// alignment would not (checkParams has checked number and widths).
func (k *Kernel) checkOffsets(args []Arg, p *driver.KernelArgs) error {
	_, offsets := p.Bytes()
	for i, param := range k.params {
		if i < len(offsets) && offsets[i] != param.Offset {
			return k.argError(args, i, fmt.Sprintf("its alignment, %d, places it at byte %d of the parameters, and the kernel reads the parameter at byte %d (aligned to %d)",
				max(args[i].align, 1), offsets[i], param.Offset, param.Align))
		}
	}
	return nil
}

// argError is the ArgumentError of argument i (from 0) of a launch with
// args.
func (k *Kernel) argError(args []Arg, i int, reason string) *ArgumentError {
	e := &ArgumentError{Kernel: k.name, Position: i + 1, Args: len(args), Params: len(k.params), Reason: reason}
	if i < len(k.params) {
		e.Param = k.params[i].Decl()
	}
	if i < len(args) {
		e.Given = args[i].String()
	}
	return e
}

// takesAddress reports whether a device address fits parameter p: an
// 8-byte integer, as nvcc declares a pointer.
func takesAddress(p entry.Param) bool {
	if p.Elems > 0 || p.Vector > 1 {
		return false
	}
	switch p.Type {
	case "u64", "s64", "b64":
		return true
	}
	return false
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// kernelParams returns the parameters of each kernel of a module image,
// read from its PTX: the PTX text itself, or a fatbin's PTX entry (of its
// highest architecture, as sim and the emulated driver run it). nil: the
// image has no PTX that can be read (a cubin, a fatbin of machine code
// alone), and its kernels launch unchecked. The answer for an image
// loaded recently is kept (package kernels loads its embedded fatbin for
// every Kernels).
func kernelParams(image string) map[string][]entry.Param {
	paramCache.mu.Lock()
	for i, c := range paramCache.images {
		if c.image == image { // the same string's bytes compare at once
			copy(paramCache.images[1:i+1], paramCache.images[:i])
			paramCache.images[0] = c
			paramCache.mu.Unlock()
			return c.params
		}
	}
	paramCache.mu.Unlock()
	params := readParams(image)
	paramCache.mu.Lock()
	defer paramCache.mu.Unlock()
	if len(paramCache.images) == paramCacheSize {
		paramCache.images = paramCache.images[:paramCacheSize-1]
	}
	paramCache.images = append([]cachedParams{{image, params}}, paramCache.images...)
	return params
}

// paramCacheSize is how many images' parameters are kept.
const paramCacheSize = 8

// paramCache is the parameters of the images loaded last, most recent
// first. An entry keeps its image's string, so another image cannot
// reuse its bytes while it is kept.
var paramCache struct {
	mu     sync.Mutex
	images []cachedParams
}

type cachedParams struct {
	image  string
	params map[string][]entry.Param
}

// readParams reads the kernels' parameters from the image's PTX.
func readParams(image string) map[string][]entry.Param {
	text := image
	switch {
	case strings.HasPrefix(image, "\x7fELF"): // a cubin: machine code alone
		return nil
	case fatbin.Is([]byte(image[:min(len(image), 16)])):
		t, _, err := fatbin.PTX([]byte(image))
		if err != nil {
			return nil
		}
		text = t
	}
	params, err := entry.Params(text)
	if err != nil {
		return nil // the driver loaded what cuarray cannot read: unchecked
	}
	return params
}
