package tomo

import "github.com/cuarray/cuarray/accounting"

// Traffic is what a run moved and held, from its ledger scope: bytes across
// host↔device per transfer path, in all, and the device's peak above what
// was in use before the run.
type Traffic struct {
	HtoD          int64            `json:"htod_bytes"`
	DtoH          int64            `json:"dtoh_bytes"`
	HtoDCopies    int64            `json:"htod_copies"`
	DtoHCopies    int64            `json:"dtoh_copies"`
	HtoDByPath    map[string]int64 `json:"htod_bytes_by_path"`
	DtoHByPath    map[string]int64 `json:"dtoh_bytes_by_path"`
	DtoD          int64            `json:"dtod_bytes"`
	DevicePeak    int64            `json:"device_peak_bytes"`
	DeviceAllocs  int64            `json:"device_allocations"`
	DeviceCurrent int64            `json:"device_current_bytes"` // net change: 0 when the run freed all it allocated
	// Managed is, for a run in managed memory, its managed memory and what
	// the driver did with its pages; nil for other runs. Its bytes moved
	// are among HtoD and DtoH too, on the paths "prefetch" and "migrated".
	Managed *ManagedTraffic `json:"managed,omitempty"`
}

// Crossed is the bytes moved across host↔device, both ways.
func (t Traffic) Crossed() int64 { return t.HtoD + t.DtoH }

// trafficOf reads a scope's snapshot.
func trafficOf(s accounting.Snapshot) Traffic {
	t := Traffic{
		HtoDByPath: map[string]int64{}, DtoHByPath: map[string]int64{},
		DevicePeak:    s.Kinds[accounting.Device].Peak,
		DeviceAllocs:  s.Kinds[accounting.Device].Allocs,
		DeviceCurrent: s.Kinds[accounting.Device].Current,
		DtoD:          s.CopyTotal(accounting.DtoD).Bytes,
	}
	h, d := s.CopyTotal(accounting.HtoD), s.CopyTotal(accounting.DtoH)
	t.HtoD, t.HtoDCopies, t.DtoH, t.DtoHCopies = h.Bytes, h.Count, d.Bytes, d.Count
	for p := range accounting.NumPaths {
		path := accounting.Path(p).String()
		if b := s.Copies[accounting.HtoD][p].Bytes; b > 0 {
			t.HtoDByPath[path] = b
		}
		if b := s.Copies[accounting.DtoH][p].Bytes; b > 0 {
			t.DtoHByPath[path] = b
		}
	}
	return t
}
