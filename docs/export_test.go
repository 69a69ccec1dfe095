package docs

// The environments of the commands an outside module's test runs, for the
// tests of package docs_test.
var (
	UserEnv   = userEnv
	SampleEnv = sampleEnv
)

// UntaggedBuildsOnly is untaggedBuildsOnly, for the tests of package
// docs_test.
var UntaggedBuildsOnly = untaggedBuildsOnly
