// Package hostile runs the tables of bad input that every cuarray package's
// hostile_test.go keeps: each call must return an error matching its want
// (errors.Is), or nil when want is nil, and must neither panic nor hang.
package hostile

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Timeout is how long one call may take before the case fails as hung.
const Timeout = 10 * time.Second

// Case is one bad input to an exported function. It is an alias of a
// struct type without a name, so that tables can list cases positionally,
// {"nil array", call, devarray.ErrNil}, as go vet allows for such types.
type Case = struct {
	Name string
	Call func() error
	Want error
}

// Run runs each case as a subtest.
func Run(t *testing.T, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				var err error
				assert.NotPanics(t, func() { err = tc.Call() }, "a library call never panics on bad input")
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(Timeout):
				t.Fatalf("the call did not return within %v", Timeout)
			}
			if tc.Want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tc.Want)
		})
	}
}

// Second returns the error of a call that returns a value and an error, so
// that it fits Case.Call: hostile.Second(f(x)).
func Second[T any](_ T, err error) error { return err }
