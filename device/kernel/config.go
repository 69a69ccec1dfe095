package kernel

import (
	"fmt"

	"github.com/cuarray/cuarray/device/driver"
)

// Dim3 is a grid or block size in x, y and z, as CUDA's dim3: a y or z
// left zero means 1, as the dimensions a dim3 is made without, so
// Dim3{256} is 256×1×1 and Dim3{16, 16} is 16×16×1. x is never left
// out: a grid whose x is 0 has no blocks (a launch of it does nothing, as
// Grid1D of no elements), a block whose x is 0 no threads (refused).
type Dim3 [3]uint32

// Dims returns the size in x, y and z as the launch uses it: a zero y or
// z is 1.
func (d Dim3) Dims() [3]uint32 {
	for i := 1; i < 3; i++ {
		if d[i] == 0 {
			d[i] = 1
		}
	}
	return d
}

// String writes the size as the launch uses it: "256×1×1".
func (d Dim3) String() string {
	d = d.Dims()
	return fmt.Sprintf("%d×%d×%d", d[0], d[1], d[2])
}

// Config is a launch's shape: the grid of blocks, the threads of a block,
// and the bytes of dynamic shared memory (extern __shared__) each block
// gets.
type Config struct {
	Grid, Block Dim3
	SharedBytes uint32
}

// The limits a launch is checked against before it reaches the driver:
// those of every GPU from compute capability 7.0 on.
const (
	MaxThreadsPerBlock = 1024
	MaxGridX           = 1<<31 - 1
	MaxGridYZ          = 65535
	MaxBlockZ          = 64
)

// Grid1D is a one-dimensional launch of blocks of block threads that
// covers n elements, one thread each: ceil(n/block) blocks. n = 0 gives
// a grid of no blocks, which launches nothing.
func Grid1D(n int64, block int) Config {
	if block <= 0 || n < 0 {
		return Config{Block: Dim3{uint32(max(block, 0)), 1, 1}}
	}
	g := (n + int64(block) - 1) / int64(block)
	if g > MaxGridX {
		g = MaxGridX + 1 // refused by check, naming n
	}
	return Config{Grid: Dim3{uint32(g), 1, 1}, Block: Dim3{uint32(block), 1, 1}}
}

// Tiles2D is a two-dimensional launch of tileX×tileY-thread blocks that
// covers a width×height grid of elements, one thread each.
func Tiles2D(width, height int64, tileX, tileY int) Config {
	if tileX <= 0 || tileY <= 0 {
		return Config{} // a block of no threads: refused
	}
	c := Config{Block: Dim3{uint32(tileX), uint32(tileY), 1}}
	if width <= 0 || height <= 0 {
		return c // a grid of no blocks
	}
	gx := (width + int64(tileX) - 1) / int64(tileX)
	gy := (height + int64(tileY) - 1) / int64(tileY)
	c.Grid = Dim3{uint32(min(gx, MaxGridX+1)), uint32(min(gy, MaxGridYZ+1)), 1}
	return c
}

// WithShared returns c with bytes of dynamic shared memory per block.
func (c Config) WithShared(bytes uint32) Config {
	c.SharedBytes = bytes
	return c
}

// empty reports whether the grid has no blocks: a launch of it does nothing.
func (c Config) empty() bool { return c.Grid[0] == 0 }

// check refuses a block or grid no GPU launches, before the driver does.
func (c Config) check(name string) error {
	b, g := c.Block.Dims(), c.Grid.Dims()
	threads := uint64(b[0]) * uint64(b[1]) * uint64(b[2])
	switch {
	case threads == 0:
		return fmt.Errorf("kernel: launch %s: block %v has no threads: %w", name, c.Block, driver.ErrInvalidValue)
	case threads > MaxThreadsPerBlock || b[2] > MaxBlockZ:
		return fmt.Errorf("kernel: launch %s: block %v has %d threads: at most %d (z at most %d): %w",
			name, c.Block, threads, MaxThreadsPerBlock, MaxBlockZ, driver.ErrInvalidValue)
	case g[0] > MaxGridX || g[1] > MaxGridYZ || g[2] > MaxGridYZ:
		return fmt.Errorf("kernel: launch %s: grid %v is too large (x at most %d, y and z at most %d): %w",
			name, c.Grid, MaxGridX, MaxGridYZ, driver.ErrInvalidValue)
	}
	return nil
}
