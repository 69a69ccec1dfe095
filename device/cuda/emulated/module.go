//go:build cuda && cudaemu && linux

package emulated

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// fatbinMagic starts a fatbin (nvcc -fatbin), cubinKind and ptxKind are
// its entries' kinds, and compressedEntry the flag of a compressed entry.
const (
	fatbinMagic     = 0xBA55ED50
	ptxKind         = 1
	cubinKind       = 2
	compressedEntry = 0x2000
)

// maxParamBytes is the most bytes a kernel's parameters take (CUDA's 4 KiB).
const maxParamBytes = 4096

// param is one kernel parameter: where it sits in the parameter buffer.
type param struct {
	offset, size int
}

// kernelInfo is a kernel of a module image: its parameters in order and,
// for a PTX kernel the emulated driver can run itself, its body.
type kernelInfo struct {
	params []param
	body   []ptxInstr // for PTX kernels: nil when not runnable here
	ptx    bool
}

// imageError is a module image the driver refuses, with its JIT log.
type imageError struct {
	result cuResult
	log    string
}

// parseImage reads a module image's kernels: a fatbin (its uncompressed
// cubin), a cubin (ELF), or PTX text. image is at most n bytes from its
// start; a fatbin and an ELF say their own size.
func parseImage(image []byte) (map[string]*kernelInfo, *imageError) {
	switch {
	case len(image) >= 16 && binary.LittleEndian.Uint32(image) == fatbinMagic:
		return parseFatbin(image)
	case bytes.HasPrefix(image, []byte("\x7fELF")):
		return parseCubin(image)
	}
	text := image
	if i := bytes.IndexByte(text, 0); i >= 0 {
		text = text[:i]
	}
	if bytes.Contains(text, []byte(".version")) || bytes.Contains(text, []byte(".entry")) {
		return parsePTX(string(text))
	}
	return nil, &imageError{result: errInvalidImage}
}

// fatbinSize returns the size of a fatbin from its header.
func fatbinSize(header []byte) int {
	return int(binary.LittleEndian.Uint16(header[6:])) + int(binary.LittleEndian.Uint64(header[8:]))
}

// parseFatbin finds the fatbin's uncompressed cubin, the machine code a
// GPU of its architecture runs without JIT, and reads its kernels.
func parseFatbin(b []byte) (map[string]*kernelInfo, *imageError) {
	end := uint64(fatbinSize(b))
	if end > uint64(len(b)) {
		return nil, &imageError{result: errInvalidImage, log: "fatbin: shorter than its header says"}
	}
	for off := uint64(binary.LittleEndian.Uint16(b[6:])); off+32 <= end; {
		e := b[off:]
		kind := binary.LittleEndian.Uint16(e)
		eh := uint64(binary.LittleEndian.Uint32(e[4:]))
		size := binary.LittleEndian.Uint64(e[8:])
		flags := binary.LittleEndian.Uint64(e[16:])
		if eh > end-off || size > end-off-eh {
			break
		}
		if kind == cubinKind && flags&compressedEntry == 0 {
			return parseCubin(e[eh : eh+size])
		}
		off += eh + size
	}
	return nil, &imageError{result: errNoBinaryForGPU, log: "fatbin: no uncompressed cubin"}
}

// eiattrKParamInfo is the .nv.info attribute that describes one kernel
// parameter: its ordinal, offset and size.
const eiattrKParamInfo = 0x17

// elfSection is a section of an ELF64 file.
type elfSection struct {
	name string
	data []byte
}

// elfSections reads the sections of a little-endian ELF64 file, as far as
// a cubin needs: debug/elf refuses cubins, whose header's version field
// holds the CUDA ABI version.
func elfSections(b []byte) ([]elfSection, error) {
	if len(b) < 64 || b[4] != 2 || b[5] != 1 {
		return nil, fmt.Errorf("not a little-endian ELF64 file")
	}
	shoff := binary.LittleEndian.Uint64(b[0x28:])
	entsize, num, strndx := int(binary.LittleEndian.Uint16(b[0x3a:])), int(binary.LittleEndian.Uint16(b[0x3c:])), int(binary.LittleEndian.Uint16(b[0x3e:]))
	if entsize < 64 || strndx >= num || shoff > uint64(len(b)) || uint64(num*entsize) > uint64(len(b))-shoff {
		return nil, fmt.Errorf("section headers outside the file")
	}
	type header struct {
		name      uint32
		off, size uint64
	}
	hs := make([]header, num)
	for i := range hs {
		h := b[shoff+uint64(i*entsize):]
		hs[i] = header{binary.LittleEndian.Uint32(h), binary.LittleEndian.Uint64(h[24:]), binary.LittleEndian.Uint64(h[32:])}
		if binary.LittleEndian.Uint32(h[4:]) == 8 { // SHT_NOBITS: no bytes in the file
			hs[i].size = 0
		}
		if hs[i].off > uint64(len(b)) || hs[i].size > uint64(len(b))-hs[i].off {
			return nil, fmt.Errorf("section %d outside the file", i)
		}
	}
	names := b[hs[strndx].off : hs[strndx].off+hs[strndx].size]
	out := make([]elfSection, num)
	for i, h := range hs {
		if int(h.name) < len(names) {
			n := names[h.name:]
			if j := bytes.IndexByte(n, 0); j >= 0 {
				out[i].name = string(n[:j])
			}
		}
		out[i].data = b[h.off : h.off+h.size]
	}
	return out, nil
}

// parseCubin reads the kernels of a cubin: each has a .nv.info.NAME
// section whose KPARAM_INFO attributes give its parameters.
func parseCubin(b []byte) (map[string]*kernelInfo, *imageError) {
	sections, err := elfSections(b)
	if err != nil {
		return nil, &imageError{result: errInvalidImage, log: fmt.Sprintf("cubin: %v", err)}
	}
	kernels := make(map[string]*kernelInfo)
	for _, s := range sections {
		name, ok := strings.CutPrefix(s.name, ".nv.info.")
		if !ok {
			continue
		}
		data := s.data
		k := &kernelInfo{}
		byOrdinal := map[int]param{}
		for p := 0; p+4 <= len(data); {
			format, attr := data[p], data[p+1]
			if format != 4 { // values inline: no payload
				p += 4
				continue
			}
			n := int(binary.LittleEndian.Uint16(data[p+2:]))
			if p+4+n > len(data) {
				break
			}
			if attr == eiattrKParamInfo && n >= 12 {
				pay := data[p+4:]
				ord := int(binary.LittleEndian.Uint16(pay[4:]))
				byOrdinal[ord] = param{offset: int(binary.LittleEndian.Uint16(pay[6:])), size: int(binary.LittleEndian.Uint32(pay[8:])>>18) & 0x3fff}
			}
			p += 4 + n
		}
		for i := range len(byOrdinal) {
			p, ok := byOrdinal[i]
			if !ok {
				return nil, &imageError{result: errInvalidImage, log: fmt.Sprintf("cubin: kernel %s: parameter %d missing", name, i)}
			}
			k.params = append(k.params, p)
		}
		kernels[name] = k
	}
	if len(kernels) == 0 {
		return nil, &imageError{result: errInvalidImage, log: "cubin: no kernels"}
	}
	return kernels, nil
}

var (
	ptxEntry = regexp.MustCompile(`\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)`)
	ptxParam = regexp.MustCompile(`\.param\s+(?:\.align\s+(\d+)\s+)?\.([a-z]+)(\d+)\s+[\w$]+(?:\[(\d+)\])?`)
)

// ptxOpcodes are the PTX instructions the emulated JIT accepts.
var ptxOpcodes = map[string]bool{}

func init() {
	for _, op := range strings.Fields(`abs add and atom bar bfe bfi bra brev brkpt call clz cnot cos cvt cvta div ex2 exit
		fma ld ldu lg2 mad max membar min mov mul neg not or popc prmt rcp red rem ret rsqrt sad selp set setp shf shfl shl
		shr sin slct sqrt st sub suld sust tex tld4 trap vote xor`) {
		ptxOpcodes[op] = true
	}
}

// parsePTX reads the entries of PTX text and their parameters, and checks
// every instruction's opcode, as the JIT would: an unknown one is
// CUDA_ERROR_INVALID_PTX with a log that names its line.
func parsePTX(text string) (map[string]*kernelInfo, *imageError) {
	for i, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if c := strings.Index(l, "//"); c >= 0 {
			l = strings.TrimSpace(l[:c])
		}
		if l == "" || strings.HasPrefix(l, ".") || strings.HasPrefix(l, "{") || strings.HasPrefix(l, "}") ||
			strings.HasPrefix(l, "@") || strings.HasSuffix(l, ":") || strings.HasPrefix(l, ")") || strings.HasPrefix(l, "(") {
			continue
		}
		op := l
		if j := strings.IndexAny(op, ". \t;"); j >= 0 {
			op = op[:j]
		}
		if !ptxOpcodes[op] {
			return nil, &imageError{result: errInvalidPTX, log: fmt.Sprintf("ptxas application ptx input, line %d; error   : Not a name of any known instruction: '%s'", i+1, op)}
		}
	}
	kernels := make(map[string]*kernelInfo)
	for _, m := range ptxEntry.FindAllStringSubmatchIndex(text, -1) {
		name, params := text[m[2]:m[3]], text[m[4]:m[5]]
		k := &kernelInfo{ptx: true}
		off := 0
		for _, p := range ptxParam.FindAllStringSubmatch(params, -1) {
			bits, _ := strconv.Atoi(p[3])
			size, align := bits/8, bits/8
			if p[4] != "" {
				n, _ := strconv.Atoi(p[4])
				size *= n
			}
			if p[1] != "" {
				align, _ = strconv.Atoi(p[1])
			}
			align = max(align, 1)
			if size <= 0 || size > maxParamBytes || align > maxParamBytes || off > maxParamBytes {
				return nil, &imageError{result: errInvalidPTX, log: fmt.Sprintf("ptxas application ptx input: entry %s: a parameter of %d bytes aligned to %d: the parameters take at most %d bytes", name, size, align, maxParamBytes)}
			}
			off = (off + align - 1) / align * align
			k.params = append(k.params, param{offset: off, size: size})
			off += size
		}
		k.body = parsePTXBody(text[m[1]:])
		kernels[name] = k
	}
	if len(kernels) == 0 {
		return nil, &imageError{result: errInvalidPTX, log: "ptxas application ptx input, line 1; error   : no .entry"}
	}
	return kernels, nil
}
