//go:build mpi

package mpi

import (
	"bytes"
	"encoding/gob"
	"fmt"
)

// GatherValues collects every rank's v on root, in rank order, through
// encoding/gob (a ledger's Snapshot, a rank's report); other ranks get nil.
func GatherValues[T any](c Comm, v T, root int) ([]T, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, fmt.Errorf("mpi: gather: encode: %w", err)
	}
	parts, err := c.Gather(buf.Bytes(), root)
	if err != nil || parts == nil {
		return nil, err
	}
	out := make([]T, len(parts))
	for i, p := range parts {
		if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&out[i]); err != nil {
			return nil, fmt.Errorf("mpi: gather: decode rank %d's part: %w", i, err)
		}
	}
	return out, nil
}
