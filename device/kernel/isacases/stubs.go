package isacases

func barrierCases() []Case { return nil }
func atomicCases() []Case  { return nil }
func memoryCases() []Case  { return nil }
