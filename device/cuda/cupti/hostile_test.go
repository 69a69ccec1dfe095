package cupti

import (
	"testing"

	"github.com/cuarray/cuarray/internal/hostile"
)

func TestHostile(t *testing.T) {
	var nilLib *Library
	var nilCounter *Counter
	stopped := func() *Counter {
		c, err := (&Library{be: &fakeCUPTI{}}).Start()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		return c
	}()
	hostile.Run(t, []hostile.Case{
		{"Start on a nil library", func() error { return hostile.Second(nilLib.Start()) }, ErrNil},
		{"Start on a library never opened", func() error { return hostile.Second((&Library{}).Start()) }, ErrNil},
		{"Flush on a nil counter", func() error { return hostile.Second(nilCounter.Flush()) }, ErrNil},
		{"Stop on a nil counter", func() error { return hostile.Second(nilCounter.Stop()) }, ErrNil},
		{"Flush after Stop", func() error { return hostile.Second(stopped.Flush()) }, ErrStopped},
		{"Stop after Stop", func() error { return hostile.Second(stopped.Stop()) }, nil},
		{"Path of a nil library", func() error { _ = nilLib.Path(); return nil }, nil},
		{"Kinds of a nil counter", func() error { _ = nilCounter.Kinds(); return nil }, nil},
		{"Records of a nil counter", func() error { _ = nilCounter.Records(); return nil }, nil},
		{"ParseRecords of a piece", func() error { return hostile.Second(ParseRecords(make([]byte, RecordSize-1))) }, ErrBadRecord},
	})
}
