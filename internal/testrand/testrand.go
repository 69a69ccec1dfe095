// Package testrand is where cuarray's tests draw random values: the
// functions of math/rand/v2 that they use, drawn from one generator per
// test binary whose seed the binary prints when it starts, so that a
// failure can be replayed:
//
//	CUARRAY_TEST_SEED=N go test ./transfer/            // the package's draws again
//	CUARRAY_TEST_SEED=N go test -run 'TestX$' ./tomo/  // one test's, where it draws with For(t)
//
// go test shows a package's output only when it fails (or with -v), so the
// seed line is seen where it is needed. A test imports it under the name
// rand, in place of math/rand/v2:
//
//	import rand "github.com/cuarray/cuarray/internal/testrand"
//
// The top-level functions follow the order the tests run in: a package's
// tests run again with the same seed draw the same values, as long as the
// draws are not spread over goroutines racing each other. For(t) gives a
// test a stream of its own, derived from the seed and the test's name,
// which replays with -run too, and logs the seed if the test fails.
package testrand

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// EnvVar names the environment variable that sets the seed.
const EnvVar = "CUARRAY_TEST_SEED"

// printedVar is set in the environment of the processes a test binary
// starts (child test binaries, MPI ranks), so that only the first prints.
const printedVar = "CUARRAY_TEST_SEED_PRINTED"

// seed is this binary's seed.
var seed = pickSeed()

// global is the generator behind the top-level functions.
var global = New(&locked{src: rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)})

func pickSeed() uint64 {
	s := os.Getenv(EnvVar)
	if s == "" {
		n := rand.Uint64() >> 1 // a positive decimal, easy to paste
		if os.Getenv(printedVar) == "" && !listing() {
			fmt.Printf("testrand: random draws from seed %d: %s=%d replays them\n", n, EnvVar, n)
			os.Setenv(printedVar, "1")
		}
		return n
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		// A test binary only: no test could draw what was asked for.
		panic(fmt.Sprintf("testrand: %s=%q: want a decimal seed such as a failing run printed: %v", EnvVar, s, err))
	}
	return n
}

// listing reports whether the binary only lists its tests (-test.list),
// whose output is a name a line for tools to read: no seed line there.
func listing() bool {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(strings.TrimLeft(a, "-"), "test.list") {
			return true
		}
	}
	return false
}

// Seed returns the seed of this test binary's draws.
func Seed() uint64 { return seed }

// locked makes a source safe for the goroutines of a test to share.
type locked struct {
	mu  sync.Mutex
	src rand.Source
}

func (l *locked) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src.Uint64()
}

// For returns a generator for t alone, seeded from the binary's seed and
// t's name, safe for t's goroutines to share; if t fails, its log says how
// to replay it.
func For(t testing.TB) *Rand {
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	s := h.Sum64()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("random draws from seed %d: %s=%d go test -run '^%s$' replays them", seed, EnvVar, seed, t.Name())
		}
	})
	return New(&locked{src: rand.NewPCG(seed, s)})
}

// Rand, Source, New, NewPCG and NewChaCha8 are math/rand/v2's, so that a
// test seeds a generator of its own as before.
type (
	Rand   = rand.Rand
	Source = rand.Source
)

// New returns a generator that draws from src.
func New(src Source) *Rand { return rand.New(src) }

// NewPCG returns a PCG source seeded with seed1 and seed2.
func NewPCG(seed1, seed2 uint64) *rand.PCG { return rand.NewPCG(seed1, seed2) }

// NewChaCha8 returns a ChaCha8 source seeded with s.
func NewChaCha8(s [32]byte) *rand.ChaCha8 { return rand.NewChaCha8(s) }

// IntN returns a value in [0, n).
func IntN(n int) int { return global.IntN(n) }

// Int64N returns a value in [0, n).
func Int64N(n int64) int64 { return global.Int64N(n) }

// Uint64N returns a value in [0, n).
func Uint64N(n uint64) uint64 { return global.Uint64N(n) }

// Uint64 returns a random 64-bit value.
func Uint64() uint64 { return global.Uint64() }

// Uint32 returns a random 32-bit value.
func Uint32() uint32 { return global.Uint32() }

// Float64 returns a value in [0, 1).
func Float64() float64 { return global.Float64() }

// Float32 returns a value in [0, 1).
func Float32() float32 { return global.Float32() }

// NormFloat64 returns a normally distributed value (mean 0, deviation 1).
func NormFloat64() float64 { return global.NormFloat64() }

// Perm returns a random permutation of [0, n).
func Perm(n int) []int { return global.Perm(n) }

// Shuffle shuffles n elements with swap.
func Shuffle(n int, swap func(i, j int)) { global.Shuffle(n, swap) }
