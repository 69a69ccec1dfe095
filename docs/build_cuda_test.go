//go:build cuda

package docs

// cudaBuild: these tests were built with -tags cuda.
const cudaBuild = true
