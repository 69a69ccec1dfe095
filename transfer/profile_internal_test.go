package transfer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// ParseProfile and LoadProfile read a profile of up to maxProfileBytes
// (here padded with spaces to exactly that) and refuse one a byte longer,
// even when what lies past the limit is only white space.
func TestProfileSizeLimit(t *testing.T) {
	data, err := DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"}).JSON()
	require.NoError(t, err)
	require.Less(t, len(data), maxProfileBytes)
	full := append(data, bytes.Repeat([]byte{' '}, maxProfileBytes-len(data))...)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"exactly the limit", full, true},
		{"a byte more", append(full[:len(full):len(full)], ' '), false},
		{"twice the limit", append(full[:len(full):len(full)], full...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "profile.json")
			require.NoError(t, os.WriteFile(path, tc.data, 0o644))
			for name, read := range map[string]func() (*Profile, error){
				"ParseProfile": func() (*Profile, error) { return ParseProfile(tc.data) },
				"LoadProfile":  func() (*Profile, error) { return LoadProfile(path) },
			} {
				p, err := read()
				if tc.ok {
					require.NoError(t, err, name)
					assert.Equal(t, "a GPU", p.Model, name)
				} else {
					assert.ErrorIs(t, err, ErrProfile, name)
					assert.Nil(t, p, name)
				}
			}
		})
	}
}

// The default profiles of every kind of device are valid, and their
// setters accepted every figure (DefaultProfile drops a refused one): a
// copy path's cost both ways, and the managed and in-place routes' guesses
// where the pinned path has a figure.
func TestDefaultProfileFiguresAccepted(t *testing.T) {
	for _, info := range []driver.Info{
		{Name: "sim:0", Backend: "sim", Model: "sim"},
		{Name: "cuda:0", Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"},
		{Name: "cuda:0", Backend: "cuda", Model: "NVIDIA H200"},
		{Name: "cuda:0", Backend: "cuda"},
	} {
		t.Run(info.Backend+" "+info.Model, func(t *testing.T) {
			p, err := defaultProfile(info)
			require.NoError(t, err)
			require.NoError(t, p.Validate())
			for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
				for _, path := range []Path{PathDirect, PathPinned, PathStaged, PathRegistered} {
					_, ok := p.Cost(path, dir)
					assert.True(t, ok, "%v %v", path, dir)
				}
				for _, r := range []Route{RouteManaged, RouteManagedPrefetch, RoutePageableInPlace} {
					_, ok := p.RouteCost(r, dir)
					assert.True(t, ok, "%v %v", r, dir)
				}
			}
			_, ok := p.RegistrationCost()
			assert.True(t, ok)
		})
	}
}
