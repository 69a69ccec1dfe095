//go:build cuda && cudaemu && linux

package emulated

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
)

// ptxInstr is one instruction of a straight-line PTX kernel the emulated
// driver runs itself: mov of an immediate into a register, st.global of a
// register or immediate to the address in a register, ret/exit. Such
// kernels are what tests load as PTX text (a kernel that does nothing, one
// that stores to a bad address); the project's kernels run their Go
// references instead.
type ptxInstr struct {
	op    string // "mov", "st", "ret"
	size  int    // bytes stored
	dst   string // register written by mov, or holding the store's address
	src   string // register or immediate
	value uint64 // mov's immediate
}

// parsePTXBody reads the body that follows an .entry's parameter list.
// It returns nil unless every instruction is one ptxInstr can run.
func parsePTXBody(text string) []ptxInstr {
	open := strings.Index(text, "{")
	if open < 0 {
		return nil
	}
	var body []ptxInstr
	for _, line := range strings.Split(text[open+1:], "\n") {
		l := strings.TrimSpace(line)
		if c := strings.Index(l, "//"); c >= 0 {
			l = strings.TrimSpace(l[:c])
		}
		if strings.HasPrefix(l, "}") {
			return body
		}
		if l == "" || strings.HasPrefix(l, ".reg") {
			continue
		}
		l = strings.TrimSuffix(l, ";")
		fields := strings.Fields(strings.ReplaceAll(l, ",", " "))
		if len(fields) == 0 {
			continue
		}
		op := strings.Split(fields[0], ".")
		switch {
		case op[0] == "ret" || op[0] == "exit":
			body = append(body, ptxInstr{op: "ret"})
		case op[0] == "mov" && len(fields) == 3:
			v, err := strconv.ParseUint(fields[2], 0, 64)
			if err != nil {
				return nil
			}
			body = append(body, ptxInstr{op: "mov", dst: fields[1], value: v})
		case op[0] == "st" && len(op) == 3 && op[1] == "global" && len(fields) == 3:
			bits, err := strconv.Atoi(op[2][1:])
			if err != nil || bits%8 != 0 || bits > 64 {
				return nil
			}
			body = append(body, ptxInstr{op: "st", size: bits / 8, dst: strings.Trim(fields[1], "[]"), src: fields[2]})
		default:
			return nil
		}
	}
	return nil
}

// emulatePTX turns a straight-line PTX kernel into its stores.
func emulatePTX(name string, body []ptxInstr) (kernels.Emulation, error) {
	if body == nil {
		return kernels.Emulation{}, fmt.Errorf("kernel %s: the emulated driver runs the project's kernels and straight-line PTX only: %w", name, driver.ErrInvalidValue)
	}
	regs := map[string]uint64{}
	value := func(s string) uint64 {
		if v, ok := regs[s]; ok {
			return v
		}
		v, _ := strconv.ParseUint(s, 0, 64)
		return v
	}
	type store struct {
		addr uint64
		b    []byte
	}
	var stores []store
	var em kernels.Emulation
	for _, in := range body {
		switch in.op {
		case "mov":
			regs[in.dst] = in.value
		case "st":
			addr := value(in.dst)
			b := binary.LittleEndian.AppendUint64(nil, value(in.src))[:in.size]
			stores = append(stores, store{addr, b})
			em.Ranges = append(em.Ranges, driver.Range{Ptr: devarray.Ptr(addr), N: int64(in.size)})
			if addr%uint64(in.size) != 0 {
				em.Misaligned = fmt.Sprintf("store of %d bytes at %#x", in.size, addr)
			}
		}
	}
	em.Run = func(mem [][]byte) error {
		for i, s := range stores {
			copy(mem[i], s.b)
		}
		return nil
	}
	return em, nil
}
