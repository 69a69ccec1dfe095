package main

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
)

// demoStep is one step of the demo with what the ledger counted during it.
type demoStep struct {
	Name        string `json:"name"`
	Allocations int64  `json:"allocations"`
	CopyBytes   int64  `json:"copy_bytes"`
	Copies      int64  `json:"copies"`
	HtoDBytes   int64  `json:"htod_bytes"`
	DtoHBytes   int64  `json:"dtoh_bytes"`
	PeakDevice  int64  `json:"device_peak_bytes"`
	Note        string `json:"note"`
}

// demoReport is what `cuarray demo -json` prints.
type demoReport struct {
	Device string              `json:"device"`
	Steps  []demoStep          `json:"steps"`
	Ledger accounting.Snapshot `json:"ledger"`
}

const demoN = 512

func runDemo(args []string, stdout, stderr io.Writer) error {
	var f commonFlags
	if err := parseFlags("demo", args, &f); err != nil {
		return err
	}
	dev, err := openDevice(f.device)
	if err != nil {
		return err
	}
	defer dev.Close()
	led := dev.Ledger()
	rep := demoReport{Device: dev.Info().Name}

	step := func(name string, fn func() (string, error)) error {
		var note string
		snap, err := led.Measure(name, func() error {
			var err error
			note, err = fn()
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		c := snap.Copied()
		rep.Steps = append(rep.Steps, demoStep{
			Name: name, Allocations: snap.Allocations(), CopyBytes: c.Bytes, Copies: c.Count,
			HtoDBytes: snap.CopyTotal(accounting.HtoD).Bytes, DtoHBytes: snap.CopyTotal(accounting.DtoH).Bytes,
			PeakDevice: snap.Kinds[accounting.Device].Peak, Note: note,
		})
		return nil
	}

	host := make([]float32, demoN*demoN)
	for i := range host {
		host[i] = rand.Float32()
	}
	var a, v *devarray.DevArray
	err = step("upload 512x512 float32", func() (string, error) {
		var err error
		a, err = devarray.FromHost(dev, host, demoN, demoN)
		return "one allocation, one host-to-device copy", err
	})
	if err != nil {
		return err
	}
	defer a.Free()

	err = step("views: slice, permute, reshape, broadcast", func() (string, error) {
		top, err := a.Slice(0, 0, demoN/2)
		if err != nil {
			return "", err
		}
		if v, err = top.Permute(1, 0); err != nil {
			return "", err
		}
		flat, err := a.Reshape(-1)
		if err != nil {
			return "", err
		}
		row, err := flat.Slice(0, 0, demoN)
		if err != nil {
			return "", err
		}
		if _, err = row.Broadcast(4, demoN); err != nil {
			return "", err
		}
		return fmt.Sprintf("view %v strides %v, contiguous %v: no allocation, no copy", v.Shape(), v.Strides(), v.IsContiguous()), nil
	})
	if err != nil {
		return err
	}

	err = step("download the strided view", func() (string, error) {
		got, err := devarray.ToHost[float32](v)
		if err != nil {
			return "", err
		}
		for i := 0; i < demoN; i++ {
			for j := 0; j < demoN/2; j++ {
				if got[i*demoN/2+j] != host[j*demoN+i] {
					return "", fmt.Errorf("element [%d,%d] of the transposed view is %v, want %v", i, j, got[i*demoN/2+j], host[j*demoN+i])
				}
			}
		}
		return fmt.Sprintf("%d elements checked against the host data; only their bytes crossed", len(got)), nil
	})
	if err != nil {
		return err
	}

	err = step("free", func() (string, error) { return "device memory back to zero", a.Free() })
	if err != nil {
		return err
	}
	rep.Ledger = led.Snapshot()
	if f.json {
		return writeJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "cuarray demo on %s\n\n", rep.Device)
	for _, s := range rep.Steps {
		// each direction apart: a strided download is a pack on the device, then a copy down
		fmt.Fprintf(stdout, "%-44s allocs %d  copies %d (%s up, %s down, %s on the device)\n    %s\n", s.Name, s.Allocations, s.Copies,
			accounting.FormatBytes(s.HtoDBytes), accounting.FormatBytes(s.DtoHBytes),
			accounting.FormatBytes(s.CopyBytes-s.HtoDBytes-s.DtoHBytes), s.Note)
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, led.Report())
	return nil
}
