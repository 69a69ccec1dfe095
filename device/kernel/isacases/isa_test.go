package isacases_test

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/kernel"
	"github.com/cuarray/cuarray/device/kernel/isacases"
	"github.com/cuarray/cuarray/internal/testdev"
)

// JSONEnv names the file a GPU run writes its disagreements to.
const JSONEnv = "CUARRAY_ISA_JSON"

// outcome is what one case did on the device.
type outcome struct {
	kind string   // "match", "wrong", "refused"
	got  []uint64 // the output words, when it ran
	err  error    // why it was refused (at load, or at launch)
}

// run loads c's module and launches it on dev with its input and output
// words.
func run(dev device.Device, c isacases.Case) outcome {
	mod, err := kernel.Load(dev, c.PTX())
	if err != nil {
		return outcome{kind: "refused", err: err}
	}
	defer mod.Close()
	k, err := mod.Kernel(isacases.Kernel)
	if err != nil {
		return outcome{kind: "refused", err: err}
	}
	in, err := devarray.FromHost(dev, c.Input())
	if err != nil {
		return outcome{kind: "refused", err: fmt.Errorf("input: %w", err)}
	}
	defer in.Free()
	out, err := devarray.FromHost(dev, c.Initial())
	if err != nil {
		return outcome{kind: "refused", err: fmt.Errorf("output: %w", err)}
	}
	defer out.Free()
	cfg := kernel.Config{Grid: kernel.Dim3{1}, Block: kernel.Dim3{uint32(c.BlockSize())}}
	if err := k.Launch(cfg, kernel.In(in), kernel.InOut(out)); err != nil {
		return outcome{kind: "refused", err: err}
	}
	got, err := devarray.ToHost[uint64](out)
	if err != nil {
		return outcome{kind: "refused", err: fmt.Errorf("read back: %w", err)}
	}
	want := c.Expected()
	for i := range want {
		if got[i] != want[i] {
			return outcome{kind: "wrong", got: got}
		}
	}
	return outcome{kind: "match", got: got}
}

// words writes output words as hex.
func words(ws []uint64) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = fmt.Sprintf("%#x", w)
	}
	return strings.Join(s, " ")
}

// disagreement is one row of the JSON a GPU run writes: a case whose
// result differs from the ISA's reading.
type disagreement struct {
	Name   string   `json:"name"`
	Class  string   `json:"class"`
	ISA    string   `json:"isa"`
	Open   bool     `json:"open,omitempty"`
	Known  string   `json:"known,omitempty"` // the interpreter's mark
	Result string   `json:"result"`          // wrong or refused
	Want   []string `json:"want"`
	Got    []string `json:"got,omitempty"`
	Error  string   `json:"error,omitempty"`
	PTX    string   `json:"ptx"`
}

func hexes(ws []uint64) []string {
	if ws == nil {
		return nil
	}
	return strings.Fields(words(ws))
}

// TestISA runs every case on the test device. On sim and the emulated
// driver each case must match, or fail as its Known mark says (and a
// marked case that matches fails the test: its mark is out of date). On a
// GPU it asserts nothing: it logs every case and writes the
// disagreements to the file CUARRAY_ISA_JSON names.
func TestISA(t *testing.T) {
	dev := testdev.OpenOwned(t)
	defer func() { dev.Close() }()
	info := dev.Info()
	gpu := info.Backend != "sim" && !info.Emulated()
	cases := isacases.Cases()
	names := map[string]bool{}
	type count struct{ match, wrong, refused int }
	perClass := map[string]*count{}
	var total count
	var rows []disagreement
	for _, c := range cases {
		if names[c.Name] {
			t.Errorf("%s: two cases of this name", c.Name)
		}
		names[c.Name] = true
		o := run(dev, c)
		if o.kind == "refused" && gpu && o.err != nil && !strings.Contains(o.err.Error(), "load") {
			// a launch that failed may leave the context unusable: go on
			// with a fresh device
			dev.Close()
			dev = testdev.OpenOwned(t)
		}
		cc := perClass[c.Class]
		if cc == nil {
			cc = &count{}
			perClass[c.Class] = cc
		}
		switch o.kind {
		case "match":
			cc.match++
			total.match++
		case "wrong":
			cc.wrong++
			total.wrong++
		default:
			cc.refused++
			total.refused++
		}
		line := fmt.Sprintf("%s: %s", c.Name, o.kind)
		switch o.kind {
		case "wrong":
			line += fmt.Sprintf(": got %s, want %s", words(o.got), words(c.Expected()))
		case "refused":
			line += fmt.Sprintf(": %v", o.err)
		}
		if gpu || testing.Verbose() {
			t.Log(line)
		}
		if o.kind != "match" {
			d := disagreement{Name: c.Name, Class: c.Class, ISA: c.ISA, Open: c.Open, Known: c.Known, Result: o.kind,
				Want: hexes(c.Expected()), Got: hexes(o.got), PTX: c.PTX()}
			if o.err != nil {
				d.Error = o.err.Error()
			}
			rows = append(rows, d)
		}
		if gpu {
			continue
		}
		switch {
		case c.Known == "" && o.kind != "match":
			t.Errorf("%s\n  ISA: %s\n  PTX: %s", line, c.ISA, c.Insn+c.Body)
		case c.Known != "" && o.kind == "match":
			t.Errorf("%s: matches now; remove its mark %q", c.Name, c.Known)
		case c.Known != "" && !strings.HasPrefix(c.Known, o.kind):
			t.Errorf("%s: marked %q, now %s", c.Name, c.Known, line)
		}
	}
	classes := make([]string, 0, len(perClass))
	for k := range perClass {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	var sum strings.Builder
	for _, k := range classes {
		c := perClass[k]
		fmt.Fprintf(&sum, "%-8s %d cases: %d match, %d wrong, %d refused\n", k, c.match+c.wrong+c.refused, c.match, c.wrong, c.refused)
	}
	fmt.Fprintf(&sum, "%d cases: %d match, %d wrong, %d refused", len(cases), total.match, total.wrong, total.refused)
	t.Logf("on %s (%s):\n%s", info.Model, info.Backend, sum.String())
	fmt.Println(sum.String())
	if path := os.Getenv(JSONEnv); path != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
