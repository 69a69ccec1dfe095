//go:build cgo

package main

import "testing"

func BenchmarkExportDLPack(b *testing.B) {
	dev, err := openDevice("sim:0")
	if err != nil {
		b.Fatal(err)
	}
	h, err := empty(dev, "float32", []int{1024, 1024}, false)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		t, err := toDLPack(h, true, false, consumerHost)
		if err != nil {
			b.Fatal(err)
		}
		deleteDLPack(t)
	}
}
