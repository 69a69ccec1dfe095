// Package fmtcheck holds the check that every value a cuarray user can
// hold is held to: printed every usual way (%v, %+v, %#v, %s, Print,
// Println), it takes at most MaxBytes and does not panic. A sim device
// keeps its 4 GiB of memory in a byte slice, and fmt prints a byte slice
// byte by byte: a device, or anything that holds one, printed without a
// String method ran for minutes and took tens of gigabytes.
package fmtcheck

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// MaxBytes is the most bytes one printing of a value may take.
const MaxBytes = 4 << 10

// Verbs are the verbs Bounded prints with; "Print" and "Println" stand
// for fmt.Sprint and fmt.Sprintln.
var Verbs = []string{"%v", "%+v", "%#v", "%s", "Print", "Println"}

// Bounded prints v every way in Verbs and fails t when a result is longer
// than MaxBytes or shows that a String, GoString or Error method
// panicked. It returns the results by verb.
func Bounded(t testing.TB, v any) map[string]string {
	t.Helper()
	out := make(map[string]string, len(Verbs))
	for _, verb := range Verbs {
		var s string
		switch verb {
		case "Print":
			s = fmt.Sprint(v)
		case "Println":
			s = fmt.Sprintln(v)
		default:
			s = fmt.Sprintf(verb, v)
		}
		out[verb] = s
		assert.LessOrEqual(t, len(s), MaxBytes, "%s of %T takes at most %d bytes; it starts %.200q", verb, v, MaxBytes, s)
		assert.NotContains(t, s, "PANIC=", "%s of %T: no String, GoString or Error method panics", verb, v)
	}
	return out
}
