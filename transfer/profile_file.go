package transfer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cuarray/cuarray/device/driver"
)

// ProfileEnv names the environment variable that gives the path of the
// profile the planner uses (ProfilePath); "off" makes it use the defaults.
const ProfileEnv = "CUARRAY_PROFILE"

// ProfilePath returns where the profile of devices like info is read from
// and saved to: $CUARRAY_PROFILE when set, else
// os.UserConfigDir()/cuarray/profile-<model>.json. It returns "" when
// CUARRAY_PROFILE is "off".
func ProfilePath(info driver.Info) (string, error) {
	if p, ok := os.LookupEnv(ProfileEnv); ok && p != "" {
		if p == "off" {
			return "", nil
		}
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("transfer: profile: no user config directory (set %s): %w", ProfileEnv, err)
	}
	return filepath.Join(dir, "cuarray", "profile-"+slug(info.Model)+".json"), nil
}

// slug turns a model name into a file name's part: letters, digits, '.',
// '_' and '-', other runs as one '-'.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r == '.' || r == '_' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if out == "" || out == "." || out == ".." {
		return "unknown"
	}
	return out
}

// LoadProfile reads and checks the profile saved at path (ParseProfile).
func LoadProfile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transfer: profile: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("transfer: profile %s: %w", path, err)
	}
	p, err := ParseProfile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Save checks the profile and writes it to path as JSON, making the
// directory if needed; the file is replaced whole (written beside it and
// renamed), so a reader never sees half of it. A symbolic link is
// followed: the file it names is replaced. A path that is there and is
// not a regular file (a device such as /dev/null, a FIFO, a directory) is
// an error wrapping fs.ErrInvalid: renaming over it would replace it.
func (p *Profile) Save(path string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("transfer: save profile %s: not a regular file (%v): %w", path, st.Mode().Type(), fs.ErrInvalid)
	}
	data, err := p.JSON()
	if err != nil {
		return fmt.Errorf("transfer: profile: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("transfer: save profile: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".profile-*.json")
	if err != nil {
		return fmt.Errorf("transfer: save profile: %w", err)
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("transfer: save profile %s: %w", path, err)
	}
	return nil
}

// ProfileFor returns the profile a Copier on a device like info plans
// with: the one saved at ProfilePath when there is one for this model,
// else DefaultProfile(info). notice, when not nil, says why a saved
// profile was not used (unreadable, bad, or made for another device);
// the defaults are used then. A file is read once, and again when it
// changes. sim, which tests run on, reads only the profile that
// CUARRAY_PROFILE names: one calibrated earlier in the user's config dir
// does not change what tests see.
func ProfileFor(info driver.Info) (p *Profile, notice error) {
	if env := os.Getenv(ProfileEnv); info.Backend == "sim" && env == "" {
		return DefaultProfile(info), nil
	}
	path, err := ProfilePath(info)
	if err != nil {
		return DefaultProfile(info), err
	}
	if path == "" {
		return DefaultProfile(info), nil
	}
	_, explicit := os.LookupEnv(ProfileEnv)
	saved, err := cachedProfile(path)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist) && !explicit:
		return DefaultProfile(info), nil // not calibrated: no notice
	case err == nil:
		err = saved.Matches(info)
	}
	if err != nil {
		return DefaultProfile(info), fmt.Errorf("transfer: profile %s not used, planning with %s: %w", path, DefaultProfile(info).Name(), err)
	}
	return saved, nil
}

var profileCache struct {
	sync.Mutex
	m map[string]cachedFile
}

type cachedFile struct {
	mod  time.Time
	size int64
	p    *Profile
	err  error
}

// cachedProfile loads the profile at path, or returns the one loaded
// before if the file has not changed since.
func cachedProfile(path string) (*Profile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("transfer: profile: %w", err)
	}
	profileCache.Lock()
	defer profileCache.Unlock()
	if c, ok := profileCache.m[path]; ok && c.mod.Equal(st.ModTime()) && c.size == st.Size() {
		return c.p, c.err
	}
	p, err := LoadProfile(path)
	if profileCache.m == nil {
		profileCache.m = map[string]cachedFile{}
	}
	profileCache.m[path] = cachedFile{mod: st.ModTime(), size: st.Size(), p: p, err: err}
	return p, err
}
