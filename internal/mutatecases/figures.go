package main

// Counts are the outcomes of the mutants mutatecases ran, and how many of
// gremlins' NOT COVERED mutants it left not covered.
type Counts struct {
	Killed, Lived, TimedOut, NotViable int
	NotCoveredLeft                     int
}

// Figures are test efficacy and mutator coverage, in percent, with the counts
// they come from.
type Figures struct {
	Killed, Lived, NotCovered int
	Efficacy, Coverage        float64
}

// figures computes the two figures as gremlins does: efficacy is killed /
// (killed + lived), coverage (killed + lived) / (killed + lived + not
// covered); each is 0 where its denominator is.
func figures(killed, lived, notCovered int) Figures {
	f := Figures{Killed: killed, Lived: lived, NotCovered: notCovered}
	if killed+lived > 0 {
		f.Efficacy = 100 * float64(killed) / float64(killed+lived)
		f.Coverage = 100 * float64(killed+lived) / float64(killed+lived+notCovered)
	}
	return f
}

// Combined returns the figures of gremlins' run and mutatecases' together:
// the killed and lived of both, and of the NOT COVERED mutants only those
// mutatecases left (a mutant it ran that timed out or did not compile counts
// in neither figure, as in gremlins).
func Combined(g Report, c Counts) Figures {
	return figures(g.Killed+c.Killed, g.Lived+c.Lived, c.NotCoveredLeft)
}

// GremlinsAlone returns gremlins' figures recomputed from its counts.
func GremlinsAlone(g Report) Figures {
	return figures(g.Killed, g.Lived, g.NotCovered)
}
