//go:build cuda && cudaemu && linux

package emulated

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/cuarray/cuarray/device/fatbin"
	"github.com/cuarray/cuarray/device/ptx"
)

// maxParamBytes is the most bytes a kernel's parameters take (CUDA's 4 KiB).
const maxParamBytes = 4096

// param is one kernel parameter: where it sits in the parameter buffer.
type param struct {
	offset, size int
}

// kernelInfo is a kernel of a module image: its parameters in order and,
// where the image has PTX, the kernel as the PTX interpreter runs it.
type kernelInfo struct {
	params []param
	prog   *ptx.Kernel // nil: machine code only, which runs the kernel's Go reference
}

// moduleImage is what a module image holds: its kernels and, where it has
// PTX, the interpreter's module (its variables, for cuModuleGetGlobal).
type moduleImage struct {
	kernels map[string]*kernelInfo
	ptx     *ptx.Module
}

// imageError is a module image the driver refuses, with its JIT log.
type imageError struct {
	result cuResult
	log    string
}

// parseImage reads a module image: a fatbin (its PTX, which the
// interpreter runs as a GPU's JIT compiles a fatbin's PTX for a GPU it has
// no machine code for; its uncompressed cubin where it has no PTX), a
// cubin (ELF), or PTX text. A fatbin and an ELF say their own size.
func parseImage(image []byte) (*moduleImage, *imageError) {
	switch {
	case fatbin.Is(image):
		return parseFatbin(image)
	case bytes.HasPrefix(image, []byte("\x7fELF")):
		ks, ierr := parseCubin(image)
		return &moduleImage{kernels: ks}, ierr
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

// parseFatbin reads a fatbin: its PTX of the highest architecture,
// decompressed (nvcc compresses it), which the interpreter runs; without
// PTX, its uncompressed cubin's kernels, which run their Go references.
// With kernels=go the cubin's kernels run their Go references even where
// there is PTX.
func parseFatbin(b []byte) (*moduleImage, *imageError) {
	entries, err := fatbin.Entries(b)
	if err != nil {
		return nil, &imageError{result: errInvalidImage, log: err.Error()}
	}
	if !drv.cfg.goKernels {
		text, _, err := fatbin.PTX(b)
		switch {
		case err == nil:
			return parsePTX(text)
		case !errors.Is(err, fatbin.ErrNoPTX):
			return nil, &imageError{result: errInvalidImage, log: err.Error()}
		}
	}
	for _, e := range entries {
		if e.Kind == fatbin.KindCubin && !e.Compressed {
			cubin, err := e.Bytes()
			if err != nil {
				return nil, &imageError{result: errInvalidImage, log: err.Error()}
			}
			ks, ierr := parseCubin(cubin)
			return &moduleImage{kernels: ks}, ierr
		}
	}
	return nil, &imageError{result: errNoBinaryForGPU, log: "fatbin: no PTX and no uncompressed cubin"}
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

// parsePTX reads PTX text as the driver's JIT does, with the PTX
// interpreter's parser: malformed PTX, or an instruction the interpreter
// cannot run, is CUDA_ERROR_INVALID_PTX with a log that names its line
// (the interpreter refuses at load what it cannot run, never running it
// wrongly). A kernel's parameters may take at most 4 KiB.
func parsePTX(text string) (*moduleImage, *imageError) {
	m, err := ptx.Parse(text)
	if err != nil {
		return nil, &imageError{result: errInvalidPTX, log: "ptxas application ptx input: " + err.Error()}
	}
	img := &moduleImage{kernels: make(map[string]*kernelInfo), ptx: m}
	for _, name := range m.Kernels() {
		k, _ := m.Kernel(name)
		if k.ParamBytes > maxParamBytes {
			return nil, &imageError{result: errInvalidPTX, log: fmt.Sprintf("ptxas application ptx input: entry %s: its parameters take %d bytes, more than %d", name, k.ParamBytes, maxParamBytes)}
		}
		info := &kernelInfo{prog: k}
		for _, p := range k.Params {
			info.params = append(info.params, param{offset: p.Offset, size: p.Size})
		}
		img.kernels[name] = info
	}
	if len(img.kernels) == 0 {
		return nil, &imageError{result: errInvalidPTX, log: "ptxas application ptx input, line 1; error   : no .entry"}
	}
	return img, nil
}
