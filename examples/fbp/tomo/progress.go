package tomo

// Progress is told, after each chunk of a long run, the stage ("acquire",
// "resident", "staged"), the slices done and the slices in all. It may be nil.
type Progress func(stage string, done, total int)

func (p Progress) report(stage string, done, total int) {
	if p != nil {
		p(stage, done, total)
	}
}
