// Command printall prints one of every value a cuarray program can hold —
// the device, its streams and events, arrays and views, pinned buffers and
// pools, the copier and its async copies, the ledger and its snapshots,
// plans, kernels, interop exports and errors — with %v, %+v and %#v, as a
// Go programmer's first fmt.Println would. Every line is bounded whatever
// the device's size: the default sim device holds 4 GiB, and a value that
// printed its bytes would print them all.
//
//	go run ./examples/printall            # the default device: sim:0, or cuda:0 in a -tags cuda build with a GPU
//	go run ./examples/printall sim:0?mem=1GiB
package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/interop"
	"github.com/cuarray/cuarray/interop/gorgonia"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/pool"
	"github.com/cuarray/cuarray/transfer"
)

func main() {
	spec := ""
	if len(os.Args) > 1 {
		spec = os.Args[1]
	}
	n, err := run(os.Stdout, spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "printall:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "printall: %d values, %d bytes printed\n", n, written)
}

// written counts the bytes printed, for the closing line.
var written int

// named is a value to print and what to call it.
type named struct {
	name string
	v    any
}

// printAll prints each value with the three verbs a user reaches for and
// returns how many it printed.
func printAll(w io.Writer, values []named) (int, error) {
	for _, nv := range values {
		for _, verb := range []string{"%v", "%+v", "%#v"} {
			n, err := fmt.Fprintf(w, "%-16s %-4s "+verb+"\n", nv.name, verb, nv.v)
			written += n
			if err != nil {
				return 0, err
			}
		}
	}
	return len(values), nil
}

// run opens the device that spec names ("" for the default), makes one of
// each value, prints them, frees them and returns how many it printed.
// (The values once freed or closed print as bounded: each package's
// TestFormatBounded checks that.)
func run(w io.Writer, spec string) (count int, err error) {
	dev, fallback, err := device.OpenDefault()
	if spec != "" {
		dev, err = device.Open(spec)
		fallback = nil
	}
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, dev.Close()) }()
	led := dev.Ledger()

	data := make([]float32, 256*256)
	for i := range data {
		data[i] = rand.Float32()
	}
	a, err := devarray.FromHost(dev, data, 256, 256)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, a.Free()) }()
	view, err := a.Slice(1, 0, 128)
	if err != nil {
		return 0, err
	}
	desc, err := a.Descriptor()
	if err != nil {
		return 0, err
	}
	s, err := dev.NewStream()
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	ev, err := dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, ev.Close()) }()
	buf, err := pinned.Alloc(dev, 1<<20, 0)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, buf.Free()) }()
	hostPool, err := pinned.NewPool(dev, 0)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, hostPool.Close()) }()
	devPool := pool.New(dev)
	defer func() { err = errors.Join(err, devPool.Release()) }()
	block, err := devPool.Alloc(1 << 20)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, devPool.Free(block)) }()
	copier, err := transfer.New(dev)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, copier.Close()) }()
	back := make([]float32, len(data))
	op, err := copier.CopyAsync(s, transfer.Host(back, 256, 256), transfer.Dev(a))
	if err != nil {
		return 0, err
	}
	if err := op.Wait(); err != nil {
		return 0, err
	}
	k, err := kernels.New(dev)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, k.Close()) }()
	method, err := plan.Default.Lookup("identity")
	if err != nil {
		return 0, err
	}
	p, err := plan.ForDevice(dev, method, [3]int{1800, 2560, 2560}, 0, devarray.Float32, nil)
	if err != nil {
		return 0, err
	}
	cai, err := interop.ExportCAI(a, 0)
	if err != nil {
		return 0, err
	}
	_, oom := devarray.Empty(dev, devarray.Float32, 1<<50)
	ws := accounting.NewWorkspace(dev)
	defer func() { err = errors.Join(err, ws.Free()) }()
	_, release, err := ws.Borrow(1 << 20)
	if err != nil {
		return 0, err
	}
	defer release()

	values := []named{
		{"device", dev}, {"info", dev.Info()}, {"fallback", fallback},
		{"stream", s}, {"event", ev},
		{"array", a}, {"view", view}, {"descriptor", desc},
		{"pinned", buf}, {"pinned pool", hostPool}, {"pool", devPool},
		{"copier", copier}, {"async copy", op}, {"kernels", k},
		{"plan", p}, {"plan registry", plan.Default}, {"array iface", cai},
		{"tensor engine", gorgonia.NewDeviceEngine(dev)}, {"workspace", ws},
		{"ledger", led}, {"snapshot", led.Snapshot()}, {"out of memory", oom},
	}
	return printAll(w, values)
}
