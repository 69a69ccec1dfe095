//go:build cgo

package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/device"
)

// driverLike prints the driver's words and unwraps to the kind, as the
// cuda backend's DriverError does.
type driverLike struct{}

func (driverLike) Error() string {
	return "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"
}
func (driverLike) Unwrap() error { return device.ErrContextFailed }

func TestMessage(t *testing.T) {
	simFault := fmt.Errorf("sim: copy HtoD: %w", device.ErrContextFailed)
	for _, tt := range []struct {
		name   string
		err    error
		prefix bool
		want   []string // in the message
		once   string   // appears once
	}{
		{"plain", fmt.Errorf("view: %w", device.ErrInvalidValue), false, []string{"view: invalid value"}, ""},
		{"sim fault", simFault, true, []string{"sim: copy HtoD"}, ""},
		{"gpu fault with cleanup repeats", errors.Join(
			fmt.Errorf("to host: %w", driverLike{}),
			fmt.Errorf("free: %w", driverLike{}),
			fmt.Errorf("stream release: %w", driverLike{})), true, []string{"to host"}, "CUDA_ERROR_ILLEGAL_ADDRESS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := message(tt.err)
			assert.Equal(t, tt.prefix, strings.HasPrefix(m, faultPrefix), m)
			assert.NotContains(t, m, "\n")
			for _, w := range tt.want {
				assert.Contains(t, m, w)
			}
			if tt.once != "" {
				assert.Equal(t, 1, strings.Count(m, tt.once), m)
			}
		})
	}
}

// A stream race (check=streams) reaches C with racePrefix in front and its
// report's lines, both operations named: python/cuarray.py raises
// StreamRaceError for it.
func TestMessageStreamRace(t *testing.T) {
	dev, err := device.Open("sim:3?check=streams&mem=1MiB")
	if !assert.NoError(t, err) {
		return
	}
	defer dev.Close()
	p, err := dev.Malloc(4096)
	assert.NoError(t, err)
	a, err := dev.NewStream()
	assert.NoError(t, err)
	defer a.Close()
	b, err := dev.NewStream()
	assert.NoError(t, err)
	defer b.Close()
	assert.NoError(t, a.MemsetAsync(p, 1, 4096))
	race := b.MemsetAsync(p+64, 2, 64)
	assert.ErrorIs(t, race, device.ErrStreamRace)
	m := message(fmt.Errorf("copy_async: %w", race))
	assert.True(t, strings.HasPrefix(m, racePrefix+"copy_async: "), m)
	assert.False(t, strings.HasPrefix(m, faultPrefix), m)
	assert.Contains(t, m, fmt.Sprintf("stream %#x", a.Handle()))
	assert.Contains(t, m, fmt.Sprintf("stream %#x", b.Handle()))
	assert.Contains(t, m, "message_test.go", "where each was queued")
	assert.NoError(t, dev.Synchronize())
}
