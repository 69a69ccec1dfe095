package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"

	"github.com/cuarray/cuarray/examples/fbp/tomo"
)

// savedScan is PREFIX.json of -save: what the raw files hold, for a peer
// (bench/peers/torch_fbp.py) that reconstructs the same data.
type savedScan struct {
	Geometry      tomo.Geometry `json:"geometry"`
	DType         string        `json:"dtype"` // NumPy's name: little-endian float32
	SinogramFile  string        `json:"sinogram_file"`
	SinogramShape [3]int        `json:"sinogram_shape"`
	PhantomFile   string        `json:"phantom_file"`
	PhantomShape  [3]int        `json:"phantom_shape"`
}

// saveScan writes the scan as PREFIX.sino.f32, PREFIX.phantom.f32 (raw,
// little-endian, C order) and PREFIX.json.
func saveScan(prefix string, scan *tomo.Scan) error {
	g := scan.Geometry
	meta := savedScan{Geometry: g, DType: "<f4",
		SinogramFile: prefix + ".sino.f32", SinogramShape: g.SinogramShape(),
		PhantomFile: prefix + ".phantom.f32", PhantomShape: g.VolumeShape()}
	if err := writeFloats(meta.SinogramFile, scan.Sinograms); err != nil {
		return err
	}
	if err := writeFloats(meta.PhantomFile, scan.Phantom); err != nil {
		return err
	}
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(prefix+".json", append(b, '\n'), 0o644)
}

func writeFloats(path string, v []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(binary.Write(f, binary.LittleEndian, v), f.Close())
}
