// Package stridedcase holds the strided views whose copies the tests of
// devarray, transfer and the C library count in the ledger:
// a 2-D and a 3-D view that one pitched copy moves, and a 2-D and a 3-D
// view that need a pack kernel, each with its NumPy-style reference.
package stridedcase

import (
	"github.com/cuarray/cuarray/devarray"
)

// Case is a view of a C-contiguous parent: axis a sliced to
// [Start[a], Stop[a]), then the axes permuted by Perm (view axis i is
// sliced axis Perm[i]), like parent[start:stop, ...].transpose(perm).
type Case struct {
	Name        string
	Parent      []int
	Start, Stop []int
	Perm        []int
	// Pitched: one pitched driver copy moves it; else one pack kernel
	// and one contiguous copy.
	Pitched bool
}

// Cases are the views the ledger tests count.
func Cases() []Case {
	return []Case{
		{Name: "2-D pitched", Parent: []int{64, 256}, Start: []int{4, 16}, Stop: []int{60, 208}, Perm: []int{0, 1}, Pitched: true},
		{Name: "3-D pitched", Parent: []int{8, 32, 256}, Start: []int{1, 2, 64}, Stop: []int{7, 30, 192}, Perm: []int{0, 1, 2}, Pitched: true},
		{Name: "2-D transposed", Parent: []int{64, 256}, Start: []int{0, 0}, Stop: []int{64, 256}, Perm: []int{1, 0}},
		{Name: "3-D permuted", Parent: []int{8, 32, 256}, Start: []int{1, 0, 3}, Stop: []int{8, 32, 250}, Perm: []int{2, 0, 1}},
	}
}

// View makes the case's view of parent.
func (c Case) View(parent *devarray.DevArray) (*devarray.DevArray, error) {
	v := parent
	for a := range c.Parent {
		var err error
		if v, err = v.Slice(a, c.Start[a], c.Stop[a], 1); err != nil {
			return nil, err
		}
	}
	return v.Permute(c.Perm...)
}

// Shape returns the view's shape.
func (c Case) Shape() []int {
	s := make([]int, len(c.Perm))
	for i, p := range c.Perm {
		s[i] = c.Stop[p] - c.Start[p]
	}
	return s
}

// ParentIndex returns, for each element of the view in C order, the
// flat index of the parent element it is: the reference a NumPy copy of
// the view gives.
func (c Case) ParentIndex() []int {
	shape := c.Shape()
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := make([]int, 0, n)
	v := make([]int, len(shape))
	for range n {
		flat := 0
		for a := range c.Parent {
			s := 0
			for i, p := range c.Perm {
				if p == a {
					s = v[i]
				}
			}
			flat = flat*c.Parent[a] + c.Start[a] + s
		}
		out = append(out, flat)
		for i := len(v) - 1; i >= 0; i-- {
			if v[i]++; v[i] < shape[i] {
				break
			}
			v[i] = 0
		}
	}
	return out
}

// Gather returns the view's elements of parent (C order) by ParentIndex.
func Gather[T any](c Case, parent []T) []T {
	idx := c.ParentIndex()
	out := make([]T, len(idx))
	for i, p := range idx {
		out[i] = parent[p]
	}
	return out
}
