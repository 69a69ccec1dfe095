//go:build !unix

package main

import "os/exec"

// ownProcessGroup leaves cmd as it is where process groups are not Unix's:
// its cancellation kills the go command only, and the test binary ends at
// its own -timeout.
func ownProcessGroup(*exec.Cmd) {}
