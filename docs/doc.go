// Package docs holds the user guide (guide.md). Its code is this package's
// Example functions, which `go test` runs and checks against their Output,
// and guide_test.go checks that every Go block of the guide is the body of
// the Example it names; the guide's Python block runs in python/python_test.go.
package docs
