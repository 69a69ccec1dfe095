package main

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFigures(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		killed, lived, notCovered int
		efficacy, coverage        float64
	}{
		{"plan at 0c6cd1f, as gremlins printed it", 195, 1, 8, 99.4898, 96.0784},
		{"accounting at bb53e16, as gremlins printed it", 538, 29, 41, 94.8854, 93.2566},
		{"all killed, none uncovered", 7, 0, 0, 100, 100},
		{"none killed", 0, 5, 5, 0, 50},
		{"nothing ran", 0, 0, 12, 0, 0},
		{"nothing at all", 0, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := figures(tc.killed, tc.lived, tc.notCovered)
			assert.InDelta(t, tc.efficacy, f.Efficacy, 1e-4, "efficacy")
			assert.InDelta(t, tc.coverage, f.Coverage, 1e-4, "coverage")
			assert.Equal(t, Figures{tc.killed, tc.lived, tc.notCovered, f.Efficacy, f.Coverage}, f, "the counts are kept")
		})
	}
}

func TestCombined(t *testing.T) {
	g := Report{Killed: 195, Lived: 1, NotCovered: 8, TimedOut: 7}
	for _, tc := range []struct {
		name               string
		c                  Counts
		killed, lived, nc  int
		efficacy, coverage float64
	}{
		{"every case mutant ran: 6 killed, 2 lived", Counts{Killed: 6, Lived: 2, NotCoveredLeft: 0}, 201, 3, 0, 98.5294, 100},
		{"one timed out, one not viable, two not reached", Counts{Killed: 3, Lived: 1, TimedOut: 1, NotViable: 1, NotCoveredLeft: 2}, 198, 2, 2, 99, 99.0099},
		{"none ran", Counts{NotCoveredLeft: 8}, 195, 1, 8, 99.4898, 96.0784},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Combined(g, tc.c)
			assert.Equal(t, [3]int{tc.killed, tc.lived, tc.nc}, [3]int{f.Killed, f.Lived, f.NotCovered})
			assert.InDelta(t, tc.efficacy, f.Efficacy, 1e-4, "efficacy")
			assert.InDelta(t, tc.coverage, f.Coverage, 1e-4, "coverage")
		})
	}
}

// TestCombinedWithNothingRunIsGremlins: when mutatecases runs nothing, the
// combined figures are gremlins' own, whatever the counts.
func TestCombinedWithNothingRunIsGremlins(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for range 100 {
		g := Report{Killed: 1 + r.IntN(1000), Lived: r.IntN(100), NotCovered: r.IntN(100)}
		assert.Equal(t, GremlinsAlone(g), Combined(g, Counts{NotCoveredLeft: g.NotCovered}), "%+v", g)
	}
}

func TestCountsAdd(t *testing.T) {
	c := Counts{NotCoveredLeft: 9}
	for _, s := range []string{StatusKilled, StatusKilled, StatusLived, StatusTimedOut, StatusNotViable} {
		c.add(s)
	}
	assert.Equal(t, Counts{Killed: 2, Lived: 1, TimedOut: 1, NotViable: 1, NotCoveredLeft: 4}, c)
}
