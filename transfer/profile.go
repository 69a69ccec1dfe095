package transfer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// ProfileFormat and ProfileVersion mark a saved profile; a file of another
// format or version is refused (ErrProfile).
const (
	ProfileFormat  = "cuarray-transfer-profile"
	ProfileVersion = 1
)

// maxProfileBytes is the largest profile file read: a real one is a few KiB.
const maxProfileBytes = 1 << 20

// ErrProfile is what every error about a profile's content matches (errors.Is).
var ErrProfile = errors.New("bad transfer profile")

// Profile is the planner's cost model for one kind of device: for each
// path and direction a latency and a bandwidth (Cost), the host's own
// memory copy on a number of goroutines (the ceiling of the staged path),
// and the staging ring that measured fastest. DefaultProfile has figures
// for known devices; `cuarray bench -calibrate` measures one on this
// machine and saves it as JSON where the Copier finds it (ProfilePath).
type Profile struct {
	Format  string     `json:"format"`  // ProfileFormat
	Version int        `json:"version"` // ProfileVersion
	Device  string     `json:"device"`  // the device it was measured on, "cuda:0"
	Model   string     `json:"model"`   // the device's model (driver.Info.Model): a profile applies to devices of this model
	Backend string     `json:"backend"` // "cuda" or "sim"
	Date    time.Time  `json:"date"`
	Source  string     `json:"source"` // how the figures were made
	Costs   []PathCost `json:"costs"`
	// HostCopy is the host's pageable→pinned memory copy on a number of
	// goroutines: what a staged copy's gather or scatter can reach.
	HostCopy []HostCopy `json:"host_memcpy,omitempty"`
	// Ring is the staging ring that measured fastest, used when a Copier
	// is not given one (WithRing); nil sizes it from HostCopy.
	Ring *RingShape `json:"staged_ring,omitempty"`
	// Registration is what registering Go memory for the registered path
	// costs (cuMemHostRegister, and the unregistering later), paid once
	// per buffer the Copier keeps registered; the registered path's DMA
	// is its PathCost. Without it the planner picks the registered path
	// only for memory registered already.
	Registration *RegistrationCost `json:"registration,omitempty"`
}

// RegistrationCost is the cost of registering memory: a latency plus the
// bytes over a rate.
type RegistrationCost struct {
	LatencyUS float64 `json:"latency_us"`
	GBps      float64 `json:"GB_per_s"`
}

// RegistrationCost returns the cost of registering memory, and false when
// the profile has none.
func (p *Profile) RegistrationCost() (Cost, bool) {
	if p == nil || p.Registration == nil {
		return Cost{}, false
	}
	return Cost{Latency: time.Duration(p.Registration.LatencyUS * 1e3), GBps: p.Registration.GBps}, true
}

// SetRegistrationCost sets the cost of registering memory. A nil profile
// or a figure outside what Validate accepts is an error matching
// ErrProfile, and the profile is left as it was.
func (p *Profile) SetRegistrationCost(c Cost) error {
	r := &RegistrationCost{LatencyUS: float64(c.Latency) / 1e3, GBps: c.GBps}
	if p == nil {
		return fmt.Errorf("%w: registration cost set on a nil profile", ErrProfile)
	}
	if msg := r.check(); msg != "" {
		return fmt.Errorf("%w: registration: %s", ErrProfile, msg)
	}
	p.Registration = r
	return nil
}

// check says what is wrong with a registration cost, or "".
func (r *RegistrationCost) check() string {
	if !inRange(r.LatencyUS, 0, 10e6) || !inRange(r.GBps, 1e-6, 1e5) {
		return fmt.Sprintf("%v µs + bytes at %v GB/s, want a latency of 0 to 10 s and a positive rate up to 100000", r.LatencyUS, r.GBps)
	}
	return ""
}

// PathCost is one path's cost in one direction, as saved.
type PathCost struct {
	Path      string  `json:"path"`      // "direct", "pinned", "staged", "mapped", "d2d", "peer", "registered", or a route no copy call takes: "managed", "managed-prefetch", "managed-read-mostly", "pageable-in-place"
	Direction string  `json:"direction"` // "HtoD", "DtoH", "DtoD", "peer"
	LatencyUS float64 `json:"latency_us"`
	GBps      float64 `json:"GB_per_s"`
	// FitError is the largest relative error of the fitted line at the
	// sizes measured (0 when not fitted).
	FitError float64 `json:"fit_error,omitempty"`
}

// HostCopy is the host's memory copy rate on Threads goroutines.
type HostCopy struct {
	Threads int     `json:"threads"`
	GBps    float64 `json:"GB_per_s"`
}

// RingShape is a staging ring: Chunks pinned chunks of ChunkBytes, their
// DMA spread over Streams streams.
type RingShape struct {
	ChunkBytes int64 `json:"chunk_bytes"`
	Chunks     int   `json:"chunks"`
	Streams    int   `json:"streams"`
}

// Cost returns the cost of path p in direction dir, and false when the
// profile has none.
func (p *Profile) Cost(path Path, dir accounting.Direction) (Cost, bool) {
	return p.costNamed(path.String(), dir)
}

// RouteCost returns the cost of route r in direction dir, and false when
// the profile has none: a Copier's path's cost for the routes that are
// one (Cost), else the cost saved under the route's name.
func (p *Profile) RouteCost(r Route, dir accounting.Direction) (Cost, bool) {
	return p.costNamed(r.String(), dir)
}

func (p *Profile) costNamed(name string, dir accounting.Direction) (Cost, bool) {
	if p == nil {
		return Cost{}, false
	}
	for _, c := range p.Costs {
		if c.Path == name && c.Direction == dir.String() {
			return Cost{Latency: time.Duration(c.LatencyUS * 1e3), GBps: c.GBps}, true
		}
	}
	return Cost{}, false
}

// SetCost sets the cost of path p in direction dir (with the fit's
// largest relative error, 0 when not fitted), replacing any it had. A nil
// profile, a path that is not saved (PathAuto) or does not move in dir,
// and a figure outside what Validate accepts are errors matching
// ErrProfile, and the profile is left as it was.
func (p *Profile) SetCost(path Path, dir accounting.Direction, c Cost, fitError float64) error {
	return p.setCostNamed(path.String(), dir, c, fitError)
}

// SetRouteCost sets the cost of route r in direction dir as SetCost does
// for a path.
func (p *Profile) SetRouteCost(r Route, dir accounting.Direction, c Cost, fitError float64) error {
	return p.setCostNamed(r.String(), dir, c, fitError)
}

func (p *Profile) setCostNamed(name string, dir accounting.Direction, c Cost, fitError float64) error {
	pc := PathCost{Path: name, Direction: dir.String(), LatencyUS: float64(c.Latency) / 1e3, GBps: c.GBps, FitError: fitError}
	if p == nil {
		return fmt.Errorf("%w: %s %s cost set on a nil profile", ErrProfile, pc.Path, pc.Direction)
	}
	if msg := pc.check(); msg != "" {
		return fmt.Errorf("%w: %s", ErrProfile, msg)
	}
	for i := range p.Costs {
		if p.Costs[i].Path == pc.Path && p.Costs[i].Direction == pc.Direction {
			p.Costs[i] = pc
			return nil
		}
	}
	p.Costs = append(p.Costs, pc)
	return nil
}

// check says what is wrong with one cost on its own, or "": a path or
// route that no profile saves, a direction it does not move, a figure out
// of range.
func (c PathCost) check() string {
	switch {
	case !costNameKnown(c.Path):
		return fmt.Sprintf("path %q is not one of %s", c.Path, strings.Join(costNames(), ", "))
	case !dirFits(c.Path, c.Direction):
		return fmt.Sprintf("the %v path does not move %q", c.Path, c.Direction)
	case !inRange(c.LatencyUS, 0, 10e6):
		return fmt.Sprintf("%s %s: latency %v µs, want 0 to 10 s", c.Path, c.Direction, c.LatencyUS)
	case !inRange(c.GBps, 1e-6, 1e5):
		return fmt.Sprintf("%s %s: %v GB/s, want a positive figure up to 100000", c.Path, c.Direction, c.GBps)
	case !inRange(c.FitError, 0, 1e6):
		return fmt.Sprintf("%s %s: fit error %v, want a non-negative figure", c.Path, c.Direction, c.FitError)
	}
	return ""
}

// Name says what the profile is, for the planner's reasons: its source
// and model.
func (p *Profile) Name() string {
	if p == nil {
		return "no profile"
	}
	return fmt.Sprintf("%s profile (%s)", p.Model, p.Source)
}

// ParseProfile reads a profile from JSON and checks it: format and
// version, a model, every path and direction known and given once, every
// figure finite and in range. Every error matches ErrProfile.
func ParseProfile(data []byte) (*Profile, error) {
	if len(data) > maxProfileBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than a profile's %d", ErrProfile, len(data), maxProfileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProfile, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the profile's JSON object", ErrProfile)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks a profile as ParseProfile does.
func (p *Profile) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrProfile, fmt.Sprintf(format, args...))
	}
	switch {
	case p == nil:
		return bad("nil profile")
	case p.Format != ProfileFormat:
		return bad("format %q, want %q", p.Format, ProfileFormat)
	case p.Version != ProfileVersion:
		return bad("version %d: this cuarray reads version %d (calibrate again: cuarray bench -calibrate)", p.Version, ProfileVersion)
	case p.Model == "":
		return bad("no device model")
	case len(p.Costs) == 0:
		return bad("no costs")
	}
	seen := map[[2]string]bool{}
	for i, c := range p.Costs {
		if msg := c.check(); msg != "" {
			return bad("cost %d: %s", i, msg)
		}
		key := [2]string{c.Path, c.Direction}
		if seen[key] {
			return bad("cost %d: %s %s given twice", i, c.Path, c.Direction)
		}
		seen[key] = true
	}
	threads := map[int]bool{}
	for i, h := range p.HostCopy {
		if h.Threads < 1 || h.Threads > 1<<16 || threads[h.Threads] {
			return bad("host memcpy %d: %d threads, want 1 to 65536, each once", i, h.Threads)
		}
		threads[h.Threads] = true
		if !inRange(h.GBps, 1e-6, 1e5) {
			return bad("host memcpy %d: %v GB/s, want a positive figure up to 100000", i, h.GBps)
		}
	}
	if r := p.Registration; r != nil {
		if msg := r.check(); msg != "" {
			return bad("registration: %s", msg)
		}
	}
	if r := p.Ring; r != nil {
		if r.ChunkBytes < 4<<10 || r.ChunkBytes > 1<<30 || r.Chunks < 1 || r.Chunks > 1024 || r.Streams < 1 || r.Streams > r.Chunks {
			return bad("staged ring of %d chunks of %d bytes on %d streams: want chunks of 4 KiB to 1 GiB, 1 to 1024 of them, 1 stream to one per chunk",
				r.Chunks, r.ChunkBytes, r.Streams)
		}
	}
	return nil
}

func inRange(v, lo, hi float64) bool {
	return !math.IsNaN(v) && v >= lo && v <= hi
}

// costNames are the names a profile's costs are saved under: the
// Copier's paths but auto, and the routes that are not one of them.
func costNames() []string {
	var names []string
	for _, p := range Paths() {
		names = append(names, p.String())
	}
	for _, r := range Routes() {
		if _, ok := r.Path(); !ok {
			names = append(names, r.String())
		}
	}
	return names
}

func costNameKnown(name string) bool {
	return slices.Contains(costNames(), name)
}

// dirFits reports whether the path or route of the given name moves in
// the direction named dir.
func dirFits(name, dir string) bool {
	if r, err := ParseRoute(name); err == nil {
		return (dir == accounting.HtoD.String() && r.Moves(accounting.HtoD)) || (dir == accounting.DtoH.String() && r.Moves(accounting.DtoH))
	}
	switch name {
	case PathD2D.String():
		return dir == accounting.DtoD.String()
	case PathPeer.String():
		return dir == accounting.Peer.String()
	}
	return dir == accounting.HtoD.String() || dir == accounting.DtoH.String()
}

// Matches checks that the profile was made for devices like the one info
// describes: the same backend and model.
func (p *Profile) Matches(info driver.Info) error {
	if p.Model != info.Model || (p.Backend != "" && p.Backend != info.Backend) {
		return fmt.Errorf("%w: made for %q (%s), this device is %q (%s)", ErrProfile, p.Model, p.Backend, info.Model, info.Backend)
	}
	return nil
}

// JSON returns the profile as indented JSON, as Save writes it.
func (p *Profile) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// clone returns a deep copy.
func (p *Profile) clone() *Profile {
	q := *p
	q.Costs = append([]PathCost(nil), p.Costs...)
	q.HostCopy = append([]HostCopy(nil), p.HostCopy...)
	if p.Ring != nil {
		r := *p.Ring
		q.Ring = &r
	}
	if p.Registration != nil {
		r := *p.Registration
		q.Registration = &r
	}
	return &q
}
