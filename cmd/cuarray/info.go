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
}

func runInfo(args []string, stdout, stderr io.Writer) error {
	var f commonFlags
	if err := parseFlags("info", args, &f); err != nil {
		return err
	}
	dev, err := openDevice(f.device)
	if err != nil {
		return err
	}
	defer dev.Close()
	free, total, err := dev.MemInfo()
	if err != nil {
		return err
	}
	r := infoReport{Device: dev.Info(), Free: free, Total: total, Ledger: dev.Ledger().Snapshot()}
	if f.json {
		return writeJSON(stdout, r)
	}
	i := r.Device
	fmt.Fprintf(stdout, "device      %s (%s backend)\n", i.Name, i.Backend)
	fmt.Fprintf(stdout, "model       %s\n", i.Model)
	if i.Driver != "" {
		fmt.Fprintf(stdout, "driver      %s\n", i.Driver)
	}
	fmt.Fprintf(stdout, "memory      %s free of %s\n", accounting.FormatBytes(free), accounting.FormatBytes(total))
	fmt.Fprintf(stdout, "alignment   %d bytes\n", i.Alignment)
	fmt.Fprintf(stdout, "map host    %v\n", i.CanMapHost)
	if i.ContextFlags != "" {
		fmt.Fprintf(stdout, "context     %s\n", i.ContextFlags)
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, dev.Ledger().Report())
	return nil
}

// openDevice opens spec; a malformed spec is a usage error.
func openDevice(spec string) (device.Device, error) {
	dev, err := device.Open(spec)
	if errors.Is(err, device.ErrBadSpec) {
		return nil, usageError{err.Error()}
	}
	return dev, err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
