package main

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCopyModule(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	src := t.TempDir()
	files := map[string][]byte{}
	for _, name := range []string{"go.mod", "a.go", "sub/b.go", "sub/deep/c.txt", ".hidden/d.go"} {
		data := make([]byte, 1+r.IntN(4096))
		for i := range data {
			data[i] = byte(1 + r.IntN(255))
		}
		files[name] = data
		require.NoError(t, os.MkdirAll(filepath.Join(src, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, name), data, 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(src, "a.go"), 0o444), "a read-only file")
	require.NoError(t, os.MkdirAll(filepath.Join(src, ".git", "objects"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, ".git", "HEAD"), []byte("ref: x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sub", ".git"), []byte("gitdir: /elsewhere\n"), 0o644))
	require.NoError(t, os.Symlink("../a.go", filepath.Join(src, "sub", "link.go")))

	dst := t.TempDir()
	require.NoError(t, CopyModule(src, dst))
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		require.NoError(t, err, name)
		assert.Equal(t, data, got, "%s is copied byte for byte", name)
	}
	assert.NoDirExists(t, filepath.Join(dst, ".git"), "the .git folder is left out")
	assert.NoFileExists(t, filepath.Join(dst, "sub", ".git"), "a .git file is left out")
	target, err := os.Readlink(filepath.Join(dst, "sub", "link.go"))
	require.NoError(t, err, "a link stays a link")
	assert.Equal(t, "../a.go", target)
	require.NoError(t, os.WriteFile(filepath.Join(dst, "a.go"), []byte("x"), 0o644), "the copy of a read-only file can be written")
	orig, err := os.ReadFile(filepath.Join(src, "a.go"))
	require.NoError(t, err)
	assert.Equal(t, files["a.go"], orig, "the source is untouched")
}

func TestCopyModuleRefusesAFilledDestination(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.go"), []byte("package a\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "a.go"), []byte("package b\n"), 0o644))
	assert.Error(t, CopyModule(src, dst), "a file already there is not overwritten")
}
