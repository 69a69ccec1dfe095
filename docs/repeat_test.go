package docs

import "testing"

// untaggedBuildsOnly skips, in a -tags cuda run of the docs tests (make
// cuda-test, the emulated driver's pass), a test whose work is programs
// that the go command builds without tags and runs on sim: that run would
// build and run the same programs as make test's, and test nothing new.
func untaggedBuildsOnly(t *testing.T) {
	t.Helper()
	if cudaBuild {
		t.Skip("its programs are built without tags and run on sim, as make test runs them: a -tags cuda run would only repeat them")
	}
}
