package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
)

// infoReport is what `cuarray info -json` prints.
type infoReport struct {
	Device device.Info         `json:"device"`
	Free   int64               `json:"free_bytes"`
	Total  int64               `json:"total_bytes"`
	Ledger accounting.Snapshot `json:"ledger"`
	// Fallback is why the default device (no -device) is sim:0 and not
	// cuda:0: the CUDA backend is not part of this build, or no GPU answered.
	Fallback string `json:"fallback,omitempty"`
}

func runInfo(args []string, stdout, stderr io.Writer) error {
	var f commonFlags
	if err := parseFlags("info", args, &f); err != nil {
		return err
	}
	dev, fallback, err := openDeviceNoting(f.device, stderr)
	if err != nil {
		return err
	}
	defer dev.Close()
	free, total, err := dev.MemInfo()
	if err != nil {
		return err
	}
	r := infoReport{Device: dev.Info(), Free: free, Total: total, Ledger: dev.Ledger().Snapshot()}
	if fallback != nil {
		r.Fallback = fallback.Error()
	}
	if f.json {
		return writeJSON(stdout, r)
	}
	text, err := device.Describe(dev)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, text)
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, dev.Ledger().Report())
	return nil
}

// openDeviceNoting opens spec as openDevice does. For the default device
// (spec "") it also returns why that is sim:0 rather than cuda:0, and in a
// cuda build, where cuda:0 was wanted, says so in one line on stderr:
// "cuarray: cuda:0: no CUDA GPU answered (cuInit: CUDA_ERROR_NO_DEVICE ...); using sim:0".
func openDeviceNoting(spec string, stderr io.Writer) (dev device.Device, fallback, err error) {
	if spec != "" {
		dev, err = openDevice(spec)
		return dev, nil, err
	}
	dev, fallback, err = device.OpenDefault()
	if err == nil && fallback != nil && device.CUDABuilt {
		fmt.Fprintf(stderr, "cuarray: %v; using %s\n", fallback, dev.Info().Name)
	}
	return dev, fallback, err
}

// opened is told of every device a command opens (tests watch the
// device's fault and ledger through it).
var opened = func(device.Device) {}

// openDevice opens spec; a malformed spec is a usage error.
func openDevice(spec string) (device.Device, error) {
	dev, err := device.Open(spec)
	if errors.Is(err, device.ErrBadSpec) {
		return nil, usageError{err.Error()}
	}
	if err == nil {
		opened(dev)
	}
	return dev, err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
