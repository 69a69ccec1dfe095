package bench

import (
	"fmt"
	"math"
	"time"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

// FitCost fits time = latency + bytes/bandwidth to copies of sizes[i]
// bytes that took times[i], by least squares on the relative error (each
// point weighted by 1/time², so small copies fix the latency and large
// ones the bandwidth). A latency that fits below zero is taken as zero
// and the bandwidth fitted alone. It returns the cost and the largest
// relative error of the fit at the points.
func FitCost(sizes []int64, times []time.Duration) (transfer.Cost, float64, error) {
	if len(sizes) != len(times) || len(sizes) == 0 {
		return transfer.Cost{}, 0, fmt.Errorf("bench: fit %d sizes to %d times: %w", len(sizes), len(times), driver.ErrInvalidValue)
	}
	var sw, sx, sy, sxx, sxy float64
	for i, n := range sizes {
		y := float64(times[i]) // ns
		if n <= 0 || y <= 0 {
			return transfer.Cost{}, 0, fmt.Errorf("bench: fit: %d bytes in %v: want positive sizes and times: %w", n, times[i], driver.ErrInvalidValue)
		}
		w := 1 / (y * y)
		x := float64(n)
		sw, sx, sy, sxx, sxy = sw+w, sx+w*x, sy+w*y, sxx+w*x*x, sxy+w*x*y
	}
	det := sw*sxx - sx*sx
	var a, b float64 // ns, ns per byte
	if det > 0 && len(sizes) > 1 {
		b = (sw*sxy - sx*sy) / det
		a = (sy - b*sx) / sw
	}
	if det <= 0 || len(sizes) == 1 || a < 0 || b <= 0 {
		a, b = 0, sxy/sxx // through the origin
	}
	if b <= 0 || math.IsNaN(b) || math.IsInf(b, 0) {
		return transfer.Cost{}, 0, fmt.Errorf("bench: fit: no bandwidth fits these times: %w", driver.ErrInvalidValue)
	}
	c := transfer.Cost{Latency: time.Duration(a), GBps: 1 / b}
	worst := 0.0
	for i, n := range sizes {
		y := float64(times[i])
		worst = max(worst, math.Abs(float64(c.Time(n))-y)/y)
	}
	return c, worst, nil
}
