package transfer_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

// ProfilePath names one file per GPU model in the user's config dir: the
// model's letters, digits, '.', '_' and '-' kept, every other run of
// characters one '-', none at either end; a name that would be empty, "."
// or ".." (a path that leaves the folder) is "unknown". CUARRAY_PROFILE
// overrides it, and "off" turns the saved profile off.
func TestProfilePath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir) // os.UserConfigDir on Linux
	t.Setenv("HOME", dir)
	inConfig := func(name string) string { return filepath.Join(dir, "cuarray", "profile-"+name+".json") }
	for _, tc := range []struct {
		name, env, model, want string
	}{
		{"an H100", "-", "NVIDIA H100 80GB HBM3", inConfig("NVIDIA-H100-80GB-HBM3")},
		{"every kept class at its ends", "-", "-._09azAZ", inConfig("-._09azAZ")},
		{"a dash at the end is dropped", "-", "H100-", inConfig("H100")},
		{"the characters beside each class", "-", "a/b:c`d{e@f[g", inConfig("a-b-c-d-e-f-g")},
		{"a run of others is one dash", "-", "RTX  (A4000)", inConfig("RTX-A4000")},
		{"none at the start or the end", "-", "  Tesla V100!! ", inConfig("Tesla-V100")},
		{"letters outside ASCII", "-", "Gerät Ü1", inConfig("Ger-t-1")},
		{"a path that climbs out", "-", "../../etc/passwd", inConfig("..-..-etc-passwd")},
		{"empty", "-", "", inConfig("unknown")},
		{"only others", "-", " /// ", inConfig("unknown")},
		{"dot", "-", ".", inConfig("unknown")},
		{"dot dot", "-", "..", inConfig("unknown")},
		{"three dots are a name", "-", "...", inConfig("...")},
		{"CUARRAY_PROFILE", filepath.Join(dir, "mine.json"), "NVIDIA H100 80GB HBM3", filepath.Join(dir, "mine.json")},
		{"CUARRAY_PROFILE empty", "", "x", inConfig("x")},
		{"off", "off", "NVIDIA H100 80GB HBM3", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setProfileEnv(t, tc.env)
			got, err := transfer.ProfilePath(driver.Info{Backend: "cuda", Model: tc.model})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "model %q", tc.model)
		})
	}

	// Any model gives one file in the folder, named from kept characters.
	setProfileEnv(t, "-")
	alphabet := []rune("aZ09._-/\\: \t\x00é€.")
	for range 500 {
		model := make([]rune, rand.IntN(12))
		for i := range model {
			model[i] = alphabet[rand.IntN(len(alphabet))]
		}
		got, err := transfer.ProfilePath(driver.Info{Model: string(model)})
		require.NoError(t, err)
		require.Equal(t, filepath.Join(dir, "cuarray"), filepath.Dir(got), "model %q", string(model))
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(got), "profile-"), ".json")
		require.NotContains(t, []string{"", ".", ".."}, name, "model %q", string(model))
		require.Equal(t, -1, strings.IndexFunc(name, func(r rune) bool {
			return !(r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}), "model %q gives %q", string(model), name)
	}
}

// Without a config dir and without CUARRAY_PROFILE there is no path: the
// error says which variable to set.
func TestProfilePathWithoutConfigDir(t *testing.T) {
	setProfileEnv(t, "-")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "")
	got, err := transfer.ProfilePath(driver.Info{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"})
	require.Error(t, err)
	assert.Empty(t, got)
	assert.Contains(t, err.Error(), transfer.ProfileEnv)
}

// setProfileEnv sets CUARRAY_PROFILE for the test, or unsets it for "-".
func setProfileEnv(t *testing.T, v string) {
	t.Setenv(transfer.ProfileEnv, v)
	if v == "-" {
		require.NoError(t, os.Unsetenv(transfer.ProfileEnv))
	}
}

// ProfileFor a GPU that was never calibrated plans with the defaults and
// says nothing; a file named by CUARRAY_PROFILE that is not there is
// worth a notice, since the user asked for it.
func TestProfileForUncalibrated(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	info := driver.Info{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"}
	for _, tc := range []struct {
		name, env, notice string
	}{
		{"nothing saved in the config dir", "-", ""},
		{"CUARRAY_PROFILE names no file", filepath.Join(dir, "nope.json"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setProfileEnv(t, tc.env)
			p, notice := transfer.ProfileFor(info)
			require.NotNil(t, p)
			assert.Equal(t, transfer.DefaultProfile(info).Name(), p.Name())
			if tc.notice == "" {
				assert.NoError(t, notice)
			} else {
				assert.ErrorContains(t, notice, tc.notice)
			}
		})
	}
}
