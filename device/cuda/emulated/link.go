//go:build cuda && cudaemu && linux

package emulated

import (
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/cuarray/cuarray/device/fatbin"
	"github.com/cuarray/cuarray/device/ptx"
)

// linkState is a CUlinkState: the PTX given to cuLinkAddData and
// cuLinkAddFile, and, once cuLinkComplete has run, the image it made.
type linkState struct {
	mu     sync.Mutex
	inputs []string // PTX text, in the order added
	errLog func(string)
	image  []byte         // the completed image, NUL-terminated PTX
	cImage unsafe.Pointer // its copy in C memory, handed out; freed by cuLinkDestroy
}

// linkKeep records the C copy of a link's image, freeing an earlier one.
func linkKeep(h uintptr, p unsafe.Pointer) {
	l, ok := lookup[*linkState](h)
	if !ok {
		return
	}
	l.mu.Lock()
	old := l.cImage
	l.cImage = p
	l.mu.Unlock()
	if old != nil {
		freeC(old)
	}
}

// readInput reads a link input from a file: CUDA_ERROR_FILE_NOT_FOUND
// where it cannot be read.
func readInput(path string) ([]byte, cuResult) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errFileNotFound
	}
	return b, success
}

// JIT input types (cuda.h's CUjitInputType).
const (
	jitInputCubin   = 0
	jitInputPTX     = 1
	jitInputFatbin  = 2
	jitInputObject  = 3
	jitInputLibrary = 4
	jitInputNVVM    = 5
)

// linkAdd adds one input to a link. PTX and a fatbin's PTX are what the
// emulated linker takes: the interpreter runs PTX, never machine code, so
// a cubin, an object or a library is CUDA_ERROR_NOT_SUPPORTED (the
// driver's linker takes them; this one cannot run them). PTX that does not
// parse is CUDA_ERROR_INVALID_PTX, with the error in the log buffer given
// to cuLinkCreate, as the driver's JIT writes it there.
func linkAdd(h uintptr, typ int, data []byte) cuResult {
	l, ok := lookup[*linkState](h)
	if !ok {
		return errInvalidHandle
	}
	var text string
	switch typ {
	case jitInputPTX:
		text = string(data)
		if i := strings.IndexByte(text, 0); i >= 0 {
			text = text[:i]
		}
	case jitInputFatbin:
		t, _, err := fatbin.PTX(data)
		if err != nil {
			l.log("ptxas fatal   : " + err.Error())
			return errInvalidImage
		}
		text = t
	case jitInputCubin, jitInputObject, jitInputLibrary, jitInputNVVM:
		l.log("the emulated driver links PTX only: it interprets PTX, and cannot run machine code")
		return errNotSupported
	default:
		return errInvalidValue
	}
	if _, err := ptx.Parse(text); err != nil {
		l.log("ptxas application ptx input: " + err.Error())
		return errInvalidPTX
	}
	l.mu.Lock()
	l.inputs = append(l.inputs, text)
	l.mu.Unlock()
	return success
}

func (l *linkState) log(s string) {
	if l.errLog != nil {
		l.errLog(s)
	}
}

// linkComplete makes the link's image: its PTX, one module. A GPU's driver
// makes a cubin; the emulated one makes PTX text, which cuModuleLoadData
// takes as it takes any PTX. Several inputs are joined into one module,
// the later ones without their .version, .target and .address_size
// directives; a module that then does not parse (two definitions of one
// name) is CUDA_ERROR_INVALID_IMAGE. No input is CUDA_ERROR_INVALID_VALUE.
func linkComplete(h uintptr) ([]byte, cuResult) {
	l, ok := lookup[*linkState](h)
	if !ok {
		return nil, errInvalidHandle
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.inputs) == 0 {
		return nil, errInvalidValue
	}
	var b strings.Builder
	for i, in := range l.inputs {
		if i == 0 {
			b.WriteString(in)
			continue
		}
		for _, line := range strings.Split(in, "\n") {
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, ".version") || strings.HasPrefix(t, ".target") || strings.HasPrefix(t, ".address_size") {
				continue
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	text := b.String()
	if _, err := ptx.Parse(text); err != nil {
		l.log("nvlink error   : " + err.Error())
		return nil, errInvalidImage
	}
	l.image = append([]byte(text), 0)
	return l.image, success
}

// linkDestroy forgets a link state and its image.
func linkDestroy(h uintptr) cuResult {
	if _, ok := lookup[*linkState](h); !ok {
		return errInvalidHandle
	}
	drv.forget(h)
	return success
}

// moduleLoadFile is cuModuleLoad: the file's bytes, as cuModuleLoadData
// takes them (PTX, a fatbin or a cubin). A file that cannot be read is
// CUDA_ERROR_FILE_NOT_FOUND.
func moduleLoadFile(path string) (uintptr, cuResult) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, errFileNotFound
	}
	h, _, r := moduleLoad(append(b, 0))
	return h, r
}

// moduleGetGlobal is cuModuleGetGlobal: a .global or .const variable of a
// module's PTX, its address and size. The module owns the variable's
// memory, and its kernels read and write it there; it is not an
// allocation of the context's device memory, so cuMemcpy to or from it is
// refused (the emulator's limit: a GPU copies to it).
func moduleGetGlobal(h uintptr, name string) (uint64, int, cuResult) {
	if _, _, r := current(); r != success {
		return 0, 0, r
	}
	m, ok := lookup[*module](h)
	if !ok {
		return 0, 0, errInvalidHandle
	}
	if m.ptx == nil {
		return 0, 0, errNotFound
	}
	g, ok := m.ptx.Global(name)
	if !ok {
		return 0, 0, errNotFound
	}
	return g.Addr, g.Size, success
}

// Function attributes (cuda.h's CUfunction_attribute) the emulator answers.
const (
	funcAttrMaxThreadsPerBlock   = 0
	funcAttrSharedSizeBytes      = 1
	funcAttrConstSizeBytes       = 2
	funcAttrLocalSizeBytes       = 3
	funcAttrNumRegs              = 4
	funcAttrPTXVersion           = 5
	funcAttrBinaryVersion        = 6
	funcAttrCacheModeCA          = 7
	funcAttrMaxDynamicShared     = 8
	funcAttrPreferredCarveout    = 9
	funcAttrClusterSizeMustBeSet = 10
)

// funcGetAttribute is cuFuncGetAttribute, read from the kernel's PTX:
// MAX_THREADS_PER_BLOCK from .maxntid or .reqntid (else 1024),
// SHARED_SIZE_BYTES from its .shared declarations, LOCAL_SIZE_BYTES from
// its .local ones, NUM_REGS the registers the interpreter gives it (a GPU's
// ptxas allocates fewer), PTX_VERSION and BINARY_VERSION as 90 (the
// emulated H100's compute capability, ×10), the dynamic shared memory a
// block may take beside its static (48 KiB in all, without opting in).
// A kernel of machine code alone answers for its launch limits only.
func funcGetAttribute(h uintptr, attr int) (int, cuResult) {
	if _, _, r := current(); r != success {
		return 0, r
	}
	f, ok := lookup[*function](h)
	if !ok {
		return 0, errInvalidHandle
	}
	k := f.info.prog
	switch attr {
	case funcAttrMaxThreadsPerBlock:
		if k == nil {
			return maxThreadsPerBlock, success
		}
		return maxThreads(k), success
	case funcAttrSharedSizeBytes:
		if k == nil {
			return 0, success
		}
		return k.StaticShared, success
	case funcAttrLocalSizeBytes:
		if k == nil {
			return 0, success
		}
		return k.LocalBytes, success
	case funcAttrNumRegs:
		if k == nil {
			return 0, success
		}
		return min(k.Registers, 255), success
	case funcAttrConstSizeBytes, funcAttrCacheModeCA, funcAttrClusterSizeMustBeSet:
		return 0, success
	case funcAttrPTXVersion, funcAttrBinaryVersion:
		return 90, success
	case funcAttrMaxDynamicShared:
		static := 0
		if k != nil {
			static = k.StaticShared
		}
		return maxSharedPerBlock - static, success
	case funcAttrPreferredCarveout:
		return -1, success
	}
	return 0, errInvalidValue
}
