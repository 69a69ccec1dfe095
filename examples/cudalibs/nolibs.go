//go:build !(cuda && cudalibs)

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "cudalibs: built without cuBLAS and cuFFT: build it with -tags cuda,cudalibs (they come with make cuda-deps), and run it on a GPU")
	os.Exit(2)
}
