package transfer_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/transfer"
)

// Cost.Time is the latency plus the bytes over the bandwidth; a path
// with no bandwidth never finishes, not even an empty copy, so the planner
// never picks it; a time past what a Duration holds is the longest one.
func TestCostTime(t *testing.T) {
	const never = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		name string
		cost transfer.Cost
		n    int64
		want time.Duration
	}{
		{"latency plus bytes at 1 GB/s", transfer.Cost{Latency: 3 * time.Microsecond, GBps: 1}, 1e6, 3*time.Microsecond + time.Millisecond},
		{"bytes at 25 GB/s", transfer.Cost{GBps: 25}, 1e9, 40 * time.Millisecond},
		{"no bytes: the latency", transfer.Cost{Latency: 7 * time.Microsecond, GBps: 12}, 0, 7 * time.Microsecond},
		{"no bandwidth", transfer.Cost{Latency: time.Microsecond}, 1 << 20, never},
		{"no bandwidth, no bytes", transfer.Cost{Latency: time.Microsecond}, 0, never},
		{"no bandwidth, no latency, no bytes", transfer.Cost{}, 0, never},
		{"negative bandwidth", transfer.Cost{GBps: -1}, 1 << 20, never},
		{"longer than a Duration holds", transfer.Cost{GBps: 1e-12}, 1 << 40, never},
		{"2^63 ns of bytes, one past the longest Duration", transfer.Cost{GBps: 0.5}, 1 << 62, never},
		{"the longest latency", transfer.Cost{Latency: never, GBps: 1}, 0, never},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.cost.Time(tc.n))
		})
	}
}
