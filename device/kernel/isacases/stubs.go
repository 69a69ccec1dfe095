package isacases

func approxCases() []Case  { return nil }
func warpCases() []Case    { return nil }
func barrierCases() []Case { return nil }
func atomicCases() []Case  { return nil }
func memoryCases() []Case  { return nil }
