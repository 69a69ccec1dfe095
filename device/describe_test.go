package device_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
)

// Describe gives the device's lines of `cuarray info`, each fact from the
// device's Info and MemInfo.
func TestDescribe(t *testing.T) {
	dev, err := device.Open("sim:7?mem=64MiB")
	require.NoError(t, err)
	defer dev.Close()
	text, err := device.Describe(dev)
	require.NoError(t, err)
	i := dev.Info()
	free, total, err := dev.MemInfo()
	require.NoError(t, err)
	want := fmt.Sprintf("device      sim:7 (sim backend)\nmodel       %s\nmemory      %s free of %s\nalignment   %d bytes\nmap host    %v\n",
		i.Model, accounting.FormatBytes(free), accounting.FormatBytes(total), i.Alignment, i.CanMapHost)
	if i.ContextFlags != "" {
		want += "context     " + i.ContextFlags + "\n"
	}
	assert.Equal(t, want, text)
	assert.True(t, strings.HasSuffix(text, "\n"))

	require.NoError(t, dev.Close())
	_, err = device.Describe(dev)
	assert.Error(t, err, "a closed device")
}
