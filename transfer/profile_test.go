package transfer_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

func goodProfile(model string) *transfer.Profile {
	p := transfer.DefaultProfile(driver.Info{Name: "cuda:0", Backend: "cuda", Model: model})
	p.Source, p.Date = "cuarray bench -calibrate", time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	p.Ring = &transfer.RingShape{ChunkBytes: 2 << 20, Chunks: 9, Streams: 2}
	return p
}

// A saved profile reads back as it was written, and says its format,
// version, device and date.
func TestProfileSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "profile.json")
	p := goodProfile("NVIDIA H100 80GB HBM3")
	require.NoError(t, p.SetCost(transfer.PathMapped, accounting.DtoH, transfer.Cost{Latency: 3 * time.Microsecond, GBps: 21.5}, 0.04))
	require.NoError(t, p.Save(path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, s := range []string{`"format": "cuarray-transfer-profile"`, `"version": 1`, `"device": "cuda:0"`, `"date": "2026-11-23T10:00:00Z"`, `"fit_error": 0.04`} {
		assert.Contains(t, string(data), s)
	}
	q, err := transfer.LoadProfile(path)
	require.NoError(t, err)
	assert.Equal(t, p, q)
	c, ok := q.Cost(transfer.PathMapped, accounting.DtoH)
	require.True(t, ok)
	assert.Equal(t, 3*time.Microsecond, c.Latency)
	assert.Equal(t, 3*time.Microsecond+time.Millisecond, transfer.Cost{Latency: 3 * time.Microsecond, GBps: 1}.Time(1e6), "latency + bytes/bandwidth")
	_, ok = q.Cost(transfer.PathMapped, accounting.HtoD)
	assert.False(t, ok, "no figure, no cost")
	r, ok := q.RegistrationCost()
	require.True(t, ok, "the registration cost travels with the profile")
	assert.Equal(t, 50*time.Microsecond, r.Latency)
	q.Registration = nil
	_, ok = q.RegistrationCost()
	assert.False(t, ok)
	p.Version = 7
	assert.ErrorIs(t, p.Save(path), transfer.ErrProfile, "a bad profile is not saved")
}

// Every way a profile can be wrong is an error that says what, matching
// ErrProfile; none panics.
func TestParseProfileRefuses(t *testing.T) {
	good, err := goodProfile("M").JSON()
	require.NoError(t, err)
	_, err = transfer.ParseProfile(good)
	require.NoError(t, err)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(good, &m))
		f(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	cost := func(i int, k string, v any) func(m map[string]any) {
		return func(m map[string]any) { m["costs"].([]any)[i].(map[string]any)[k] = v }
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "EOF"},
		{"not JSON", []byte("profile"), "invalid character"},
		{"an array", []byte("[]"), "cannot unmarshal"},
		{"trailing data", append(append([]byte{}, good...), []byte(`{}`)...), "data after"},
		{"huge", make([]byte, 2<<20), "more than a profile's"},
		{"unknown field", edit(func(m map[string]any) { m["speed"] = 1 }), `unknown field "speed"`},
		{"other format", edit(func(m map[string]any) { m["format"] = "x" }), `format "x"`},
		{"newer version", edit(func(m map[string]any) { m["version"] = 2 }), "version 2: this cuarray reads version 1"},
		{"no model", edit(func(m map[string]any) { m["model"] = "" }), "no device model"},
		{"no costs", edit(func(m map[string]any) { m["costs"] = []any{} }), "no costs"},
		{"unknown path", edit(cost(0, "path", "teleport")), `path "teleport"`},
		{"auto", edit(cost(0, "path", "auto")), `path "auto"`},
		{"d2d HtoD", edit(cost(0, "path", "d2d")), `d2d path does not move "HtoD"`},
		{"bad direction", edit(cost(0, "direction", "sideways")), `"sideways"`},
		{"read-mostly DtoH", edit(cost(1, "path", "managed-read-mostly")), `managed-read-mostly path does not move "DtoH"`},
		{"pageable-in-place DtoD", edit(func(m map[string]any) { cost(0, "path", "pageable-in-place")(m); cost(0, "direction", "DtoD")(m) }),
			`pageable-in-place path does not move "DtoD"`},
		{"managed twice", edit(func(m map[string]any) {
			cost(0, "path", "managed")(m)
			cost(1, "path", "managed")(m)
			cost(1, "direction", "HtoD")(m)
		}),
			"managed HtoD given twice"},
		{"twice", edit(cost(1, "direction", "HtoD")), "given twice"},
		{"negative latency", edit(cost(0, "latency_us", -1)), "latency -1"},
		{"zero bandwidth", edit(cost(0, "GB_per_s", 0)), "0 GB/s"},
		{"huge bandwidth", edit(cost(0, "GB_per_s", 1e9)), "GB/s"},
		{"negative fit error", edit(cost(0, "fit_error", -0.5)), "fit error"},
		{"string latency", edit(cost(0, "latency_us", "fast")), "cannot unmarshal"},
		{"zero threads", edit(func(m map[string]any) { m["host_memcpy"] = []any{map[string]any{"threads": 0, "GB_per_s": 1}} }), "0 threads"},
		{"threads twice", edit(func(m map[string]any) {
			m["host_memcpy"] = []any{map[string]any{"threads": 2, "GB_per_s": 1}, map[string]any{"threads": 2, "GB_per_s": 3}}
		}), "each once"},
		{"ring of 0 chunks", edit(func(m map[string]any) { m["staged_ring"].(map[string]any)["chunks"] = 0 }), "ring of 0 chunks"},
		{"tiny chunks", edit(func(m map[string]any) { m["staged_ring"].(map[string]any)["chunk_bytes"] = 16 }), "chunks of 4 KiB"},
		{"more streams than chunks", edit(func(m map[string]any) { m["staged_ring"].(map[string]any)["streams"] = 10 }), "one per chunk"},
		{"zero registration rate", edit(func(m map[string]any) { m["registration"].(map[string]any)["GB_per_s"] = 0 }), "registration"},
		{"negative registration latency", edit(func(m map[string]any) { m["registration"].(map[string]any)["latency_us"] = -1 }), "registration"},
		{"registration with a stray field", edit(func(m map[string]any) { m["registration"].(map[string]any)["pages"] = 3 }), "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := transfer.ParseProfile(tc.data)
			assert.Nil(t, p)
			require.ErrorIs(t, err, transfer.ErrProfile)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The bounds ParseProfile checks are inclusive: a figure at a bound is
// read, one past it is refused (ErrProfile); every default profile passes.
func TestParseProfileBounds(t *testing.T) {
	good, err := goodProfile("M").JSON()
	require.NoError(t, err)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(good, &m))
		f(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	threads := func(n int) []byte {
		return edit(func(m map[string]any) { m["host_memcpy"] = []any{map[string]any{"threads": n, "GB_per_s": 1}} })
	}
	ring := func(chunkBytes int64, chunks, streams int) []byte {
		return edit(func(m map[string]any) {
			m["staged_ring"] = map[string]any{"chunk_bytes": chunkBytes, "chunks": chunks, "streams": streams}
		})
	}
	peer := func(dir string) []byte {
		return edit(func(m map[string]any) {
			m["costs"] = append(m["costs"].([]any), map[string]any{"path": "peer", "direction": dir, "latency_us": 5, "GB_per_s": 20})
		})
	}
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"65536 threads", threads(1 << 16), true},
		{"65537 threads", threads(1<<16 + 1), false},
		{"1 thread", threads(1), true},
		{"smallest ring", ring(4<<10, 1, 1), true},
		{"largest ring", ring(1<<30, 1024, 1024), true},
		{"chunks a byte under 4 KiB", ring(4<<10-1, 1, 1), false},
		{"chunks a byte over 1 GiB", ring(1<<30+1, 1, 1), false},
		{"no chunks", ring(4<<10, 0, 1), false},
		{"1025 chunks", ring(4<<10, 1025, 1), false},
		{"no streams", ring(4<<10, 3, 0), false},
		{"a stream per chunk", ring(4<<10, 3, 3), true},
		{"a stream more than chunks", ring(4<<10, 3, 4), false},
		{"a peer cost", peer("peer"), true},
		{"a peer cost HtoD", peer("HtoD"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := transfer.ParseProfile(tc.data)
			if tc.ok {
				require.NoError(t, err)
				assert.NotNil(t, p)
			} else {
				assert.ErrorIs(t, err, transfer.ErrProfile)
				assert.Nil(t, p)
			}
		})
	}
	for _, info := range []driver.Info{
		{Backend: "sim", Model: "sim"},
		{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"},
		{Backend: "cuda", Model: "a GPU"},
	} {
		p := transfer.DefaultProfile(info)
		require.NoError(t, p.Validate(), "the %s default", info.Model)
		data, err := p.JSON()
		require.NoError(t, err)
		q, err := transfer.ParseProfile(data)
		require.NoError(t, err, "the %s default reads back", info.Model)
		assert.Equal(t, p.Costs, q.Costs)
	}
}

// A profile applies to devices of its model and backend; one saved
// without a backend applies to its model on any.
func TestProfileMatches(t *testing.T) {
	p := goodProfile("NVIDIA H100 80GB HBM3")
	noBackend := goodProfile("NVIDIA H100 80GB HBM3")
	noBackend.Backend = ""
	for _, tc := range []struct {
		name string
		p    *transfer.Profile
		info driver.Info
		ok   bool
	}{
		{"same model and backend", p, driver.Info{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"}, true},
		{"another model", p, driver.Info{Backend: "cuda", Model: "NVIDIA A100"}, false},
		{"another backend", p, driver.Info{Backend: "sim", Model: "NVIDIA H100 80GB HBM3"}, false},
		{"no backend saved", noBackend, driver.Info{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"}, true},
		{"no backend saved, another model", noBackend, driver.Info{Backend: "cuda", Model: "NVIDIA A100"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Matches(tc.info)
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, transfer.ErrProfile)
			}
		})
	}
}

// Copier.Profile returns a copy: changing it, its ring and registration
// cost included, changes neither the copier's profile nor its plans; a
// profile without a ring or registration cost is copied too.
func TestCopierProfileIsACopy(t *testing.T) {
	dev := testdev.Open(t)
	bare := transfer.DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"})
	bare.Registration, bare.Ring, bare.HostCopy = nil, nil, nil
	for _, given := range []*transfer.Profile{goodProfile("a GPU"), bare} {
		c, err := transfer.New(dev, transfer.WithProfile(given))
		require.NoError(t, err)
		p, notice := c.Profile()
		require.NoError(t, notice)
		assert.Equal(t, given, p)
		want, err := p.JSON()
		require.NoError(t, err)
		p.Costs[0].GBps = 1e-3
		if p.Ring != nil {
			p.Ring.Chunks = 1000
		}
		if p.Registration != nil {
			p.Registration.GBps = 1e-6
		}
		q, _ := c.Profile()
		got, err := q.JSON()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "the copier's profile is unchanged")
		require.NoError(t, c.Close())
	}
}

// The Copier plans with the profile at CUARRAY_PROFILE, or the one saved
// in the user's config dir; a bad, unreadable or foreign one is a notice,
// and the planner uses the defaults; copies work either way.
func TestCopierProfile(t *testing.T) {
	dev := testdev.Open(t)
	info := dev.Info()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		return path
	}
	mine := goodProfile(info.Model)
	mine.Backend = info.Backend
	require.NoError(t, mine.SetCost(transfer.PathStaged, accounting.HtoD, transfer.Cost{Latency: time.Microsecond, GBps: 1000}, 0)) // staged always wins
	mineJSON, err := mine.JSON()
	require.NoError(t, err)
	foreign, err := goodProfile("another GPU").JSON()
	require.NoError(t, err)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config")) // os.UserConfigDir on Linux
	t.Setenv("HOME", dir)
	defaultPath := filepath.Join(dir, "config", "cuarray", "profile-"+slugOf(info.Model)+".json")
	for _, tc := range []struct {
		name   string
		env    string // "-": unset
		saved  []byte // in the config dir
		mine   bool   // the planner uses mine
		notice string
	}{
		{"nothing saved", "-", nil, false, ""},
		{"saved in the config dir (not read on sim)", "-", mineJSON, !testdev.IsSim(dev), ""},
		{"CUARRAY_PROFILE", write("mine.json", mineJSON), nil, true, ""},
		{"off", "off", mineJSON, false, ""},
		{"missing", filepath.Join(dir, "nope.json"), nil, false, "no such file"},
		{"not JSON", write("bad.json", []byte("{")), nil, false, "bad transfer profile"},
		{"another device", write("foreign.json", foreign), nil, false, `made for "another GPU"`},
		{"bad in the config dir", "-", []byte(`{"version": 99}`), false, map[bool]string{true: "", false: "bad transfer profile"}[testdev.IsSim(dev)]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == "-" {
				t.Setenv(transfer.ProfileEnv, "")
				require.NoError(t, os.Unsetenv(transfer.ProfileEnv))
			} else {
				t.Setenv(transfer.ProfileEnv, tc.env)
			}
			os.Remove(defaultPath)
			if tc.saved != nil {
				require.NoError(t, os.MkdirAll(filepath.Dir(defaultPath), 0o755))
				require.NoError(t, os.WriteFile(defaultPath, tc.saved, 0o644))
			}
			c, err := transfer.New(dev)
			require.NoError(t, err, "a bad profile never fails New")
			defer c.Close()
			p, notice := c.Profile()
			require.NotNil(t, p)
			if tc.notice == "" {
				assert.NoError(t, notice)
			} else {
				require.Error(t, notice)
				assert.Contains(t, notice.Error(), tc.notice)
				assert.Contains(t, notice.Error(), "planning with")
			}
			assert.Equal(t, tc.mine, p.Source == mine.Source, "profile %s", p.Name())
			a, err := devarray.Empty(dev, devarray.Uint8, 1<<20)
			require.NoError(t, err)
			defer a.Free()
			src := testdev.RandomBytes(1 << 20)
			ch, err := c.Plan(transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8))
			require.NoError(t, err)
			assert.Equal(t, tc.mine, ch.Path == transfer.PathStaged, ch.String())
			require.NoError(t, c.Copy(transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8)))
			back, err := devarray.ToHost[uint8](a)
			require.NoError(t, err)
			assert.Equal(t, src, back)
		})
	}
	_, err = transfer.New(dev, transfer.WithProfile(&transfer.Profile{}))
	assert.ErrorIs(t, err, transfer.ErrProfile, "a bad profile given explicitly is an error")
}

// A profile with no figure for any path a host copy can take (here only
// a device-to-device one): the planner takes the first path that fits,
// direct for pageable memory and pinned for a pinned buffer, and the
// copy moves the data along it.
func TestProfileWithoutHostFigures(t *testing.T) {
	dev := testdev.Open(t)
	p := transfer.DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"})
	var d2d []transfer.PathCost
	for _, c := range p.Costs {
		if c.Path == transfer.PathD2D.String() {
			d2d = append(d2d, c)
		}
	}
	require.NotEmpty(t, d2d)
	p.Costs = d2d
	c, err := transfer.New(dev, transfer.WithProfile(p))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	const n = 64 << 10
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	buf, err := pinned.Alloc(dev, n, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	copy(buf.Bytes(), testdev.RandomBytes(n))
	pageable := testdev.RandomBytes(n)
	for _, tc := range []struct {
		name     string
		dst, src transfer.Endpoint
		dir      accounting.Direction
		want     transfer.Path
		data     func() []byte // what dst must hold after
	}{
		{"pageable HtoD", transfer.Dev(a), transfer.HostBytes(pageable, devarray.Uint8), accounting.HtoD, transfer.PathDirect, func() []byte { return pageable }},
		{"pinned HtoD", transfer.Dev(a), transfer.Pinned(buf, devarray.Uint8), accounting.HtoD, transfer.PathPinned, buf.Bytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := c.Plan(tc.dst, tc.src)
			require.NoError(t, err)
			assert.Equal(t, tc.want, ch.Path, ch.Reason)
			before := dev.Ledger().Snapshot()
			require.NoError(t, c.Copy(tc.dst, tc.src))
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, int64(n), diff.Copies[tc.dir][tc.want.Ledger()].Bytes, "the copy took %v", tc.want)
			got, err := devarray.ToHost[uint8](a)
			require.NoError(t, err)
			assert.Equal(t, tc.data(), got)
		})
	}
	back := testdev.RandomBytes(n)
	ch, err := c.Plan(transfer.HostBytes(back, devarray.Uint8), transfer.Dev(a))
	require.NoError(t, err)
	assert.Equal(t, transfer.PathDirect, ch.Path, "pageable DtoH: %s", ch.Reason)
	require.NoError(t, c.Copy(transfer.HostBytes(back, devarray.Uint8), transfer.Dev(a)))
	assert.Equal(t, buf.Bytes(), back)
}

// ProfileFor reads a profile file once, and again when it changes: also
// when it is rewritten within the file system's time granularity (the
// same modification time) with another size.
func TestProfileForRereadsAChangedFile(t *testing.T) {
	info := driver.Info{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"}
	path := filepath.Join(t.TempDir(), "profile.json")
	t.Setenv(transfer.ProfileEnv, path)
	when := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	save := func(gbps float64) {
		t.Helper()
		p := goodProfile(info.Model)
		p.Backend = info.Backend
		require.NoError(t, p.SetCost(transfer.PathStaged, accounting.HtoD, transfer.Cost{Latency: time.Microsecond, GBps: gbps}, 0))
		require.NoError(t, p.Save(path))
		require.NoError(t, os.Chtimes(path, when, when))
	}
	staged := func() float64 {
		t.Helper()
		p, notice := transfer.ProfileFor(info)
		require.NoError(t, notice)
		c, ok := p.Cost(transfer.PathStaged, accounting.HtoD)
		require.True(t, ok)
		return c.GBps
	}
	save(12)
	assert.Equal(t, 12.0, staged())
	assert.Equal(t, 12.0, staged(), "read again, the same")
	save(12.5) // one more character, the same time
	assert.Equal(t, 12.5, staged(), "the file changed")
}

func slugOf(model string) string {
	f := strings.FieldsFunc(model, func(r rune) bool {
		return !(r == '.' || r == '_' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	})
	return strings.Join(f, "-")
}

// ParseProfile never panics; what it accepts is valid, and reads back the
// same after being written out.
func FuzzParseProfile(f *testing.F) {
	for _, model := range []string{"NVIDIA H100 80GB HBM3", "x"} {
		b, err := goodProfile(model).JSON()
		require.NoError(f, err)
		f.Add(b)
	}
	b, _ := transfer.DefaultProfile(driver.Info{Backend: "sim", Model: "sim"}).JSON()
	f.Add(b)
	f.Add([]byte(`{"format":"cuarray-transfer-profile","version":1,"model":"m","costs":[{"path":"d2d","direction":"DtoD","latency_us":1e-300,"GB_per_s":1e-6}]}`))
	f.Add([]byte(`{"costs":null}`))
	// a file of before the managed routes had costs, and one with a managed cost
	f.Add([]byte(`{"format":"cuarray-transfer-profile","version":1,"model":"m","costs":[{"path":"pinned","direction":"HtoD","latency_us":9.7,"GB_per_s":55.3}]}`))
	f.Add([]byte(`{"format":"cuarray-transfer-profile","version":1,"model":"m","costs":[{"path":"managed-read-mostly","direction":"HtoD","latency_us":10,"GB_per_s":7}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := transfer.ParseProfile(data)
		if err != nil {
			require.ErrorIs(t, err, transfer.ErrProfile)
			require.Nil(t, p)
			return
		}
		require.NoError(t, p.Validate())
		for _, c := range p.Costs {
			dirs := []accounting.Direction{accounting.HtoD, accounting.DtoH, accounting.DtoD, accounting.Peer}
			path, err := transfer.ParsePath(c.Path)
			if err != nil { // a route no copy call takes: a managed one, pageable-in-place
				route, err := transfer.ParseRoute(c.Path)
				require.NoError(t, err)
				_, copied := route.Path()
				require.False(t, copied)
				require.True(t, route.Moves(dirs[0]))
				for _, dir := range dirs {
					cost, ok := p.RouteCost(route, dir)
					require.True(t, ok || c.Direction != dir.String(), "%s %s", c.Path, dir)
					require.True(t, !ok || route.Moves(dir), "%s %s", c.Path, dir)
					require.True(t, !ok || cost.GBps > 0)
				}
				continue
			}
			for _, dir := range dirs {
				if cost, ok := p.Cost(path, dir); ok {
					require.Positive(t, cost.GBps)
					require.GreaterOrEqual(t, cost.Time(1<<30), cost.Latency)
				}
			}
		}
		out, err := p.JSON()
		require.NoError(t, err)
		q, err := transfer.ParseProfile(out)
		require.NoError(t, err)
		require.Equal(t, p.Costs, q.Costs)
		require.Equal(t, p.Ring, q.Ring)
		require.Equal(t, p.Registration, q.Registration)
		if r, ok := p.RegistrationCost(); ok {
			require.Positive(t, r.GBps)
		}
	})
}

// PlanHost plans by the kind of host memory alone, as Plan does for real
// endpoints (an empty copy too, and with a profile given to the call),
// and refuses what no copy could be.
func TestPlanHost(t *testing.T) {
	dev := testdev.Open(t)
	h100 := transfer.DefaultProfile(driver.Info{Backend: "cuda", Model: "NVIDIA H100"})
	generic := transfer.DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"})
	c, err := transfer.New(dev, transfer.WithProfile(h100))
	require.NoError(t, err)
	defer c.Close()
	a, err := devarray.Empty(dev, devarray.Uint8, 8<<20)
	require.NoError(t, err)
	defer a.Free()
	for _, opts := range [][]transfer.Option{nil, {transfer.WithProfile(generic)}} {
		for _, n := range []int{0, 4 << 10, 1 << 20, 8 << 20} {
			v, err := a.Slice(0, 0, n)
			require.NoError(t, err)
			host := transfer.HostBytes(testdev.RandomBytes(n), devarray.Uint8)
			for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
				dst, src := transfer.Dev(v), host
				if dir == accounting.DtoH {
					dst, src = host, transfer.Dev(v)
				}
				want, err := c.Plan(dst, src, opts...)
				require.NoError(t, err)
				got, err := c.PlanHost(transfer.InPageable, false, dir, int64(n), opts...)
				require.NoError(t, err)
				assert.Equal(t, want, got, "%v %d, %d options", dir, n, len(opts))
			}
		}
	}
	for _, bad := range []struct {
		side   transfer.Side
		mapped bool
		dir    accounting.Direction
		n      int64
	}{
		{transfer.OnDevice, false, accounting.HtoD, 1},
		{transfer.InPageable, true, accounting.HtoD, 1},
		{transfer.InPinned, false, accounting.DtoD, 1},
		{transfer.InPinned, false, accounting.HtoD, -1},
		{0, false, accounting.HtoD, 1},
	} {
		_, err := c.PlanHost(bad.side, bad.mapped, bad.dir, bad.n)
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "%+v", bad)
	}
	var nilCopier *transfer.Copier
	_, err = nilCopier.PlanHost(transfer.InPageable, false, accounting.HtoD, 1)
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
	_, err = nilCopier.Profile()
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
}

// Save never replaces what is not a regular file: a FIFO (as a device
// such as /dev/null would be) or a directory stays as it was and Save
// says why; through a symbolic link, the file it names is written and
// the link stays a link.
func TestProfileSaveRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	p := goodProfile("NVIDIA H100 80GB HBM3")
	fifo := filepath.Join(dir, "fifo.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	sub := filepath.Join(dir, "sub.json")
	require.NoError(t, os.Mkdir(sub, 0o755))
	for _, path := range []string{fifo, sub} {
		before, err := os.Lstat(path)
		require.NoError(t, err)
		err = p.Save(path)
		assert.ErrorIs(t, err, fs.ErrInvalid, "Save(%s) refuses a %v", path, before.Mode().Type())
		after, err := os.Lstat(path)
		require.NoError(t, err)
		assert.Equal(t, before.Mode().Type(), after.Mode().Type(), "%s is still a %v", path, before.Mode().Type())
	}
	target := filepath.Join(dir, "real.json")
	require.NoError(t, os.WriteFile(target, []byte("an older profile"), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(target, link))
	require.NoError(t, p.Save(link))
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, st.Mode().Type(), "the link is still a link")
	q, err := transfer.LoadProfile(target)
	require.NoError(t, err, "the profile went to the file the link names")
	assert.Equal(t, p, q)
}
