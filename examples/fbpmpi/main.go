//go:build mpi

// Command fbpmpi is the FBP example across MPI ranks, as httomo runs a
// beamline's reconstruction: one rank per device, the projections split
// across the ranks by angle, resliced to sinograms with an Alltoallv of
// device arrays, each rank's slices reconstructed in the chunks the
// planner picks for its own device's memory, and the volume written with
// MPI-IO, each rank its slab of one file:
//
//	mpirun -np N fbpmpi [-device SPEC] [-size N] [-angles A] [-slices S] [-in FILE] [-dir DIR]
//	                    [-mem LIMIT] [-chunk BYTES] [-fault-rank R] [-fault-after K] [-compare] [-json] [-q]
//
// Rank r runs on its own device: cuda:(local rank mod GPUs) in a cuda build
// with GPUs, else sim:0 in each process. Without -in, rank 0 scans the
// Shepp–Logan phantom (as fbp does) and writes the projections, (angles,
// slices, size) float32, to DIR/projections.f32, which every rank then
// reads its angles of with MPI-IO; the volume goes to DIR/volume.f32,
// (slices, size, size) float32. With -compare, rank 0 then reconstructs
// the same sinograms in one process and says whether the two volumes are
// equal bit for bit. At the end rank 0 prints every rank's ledger and
// their total (with -json: one line of JSON). A failure on any rank ends
// the whole job (MPI_Abort) with one line naming the rank; bad flags, or
// more ranks than slices, exit with status 2 and one line from rank 0.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/errline"
	"github.com/cuarray/cuarray/mpi"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usage is the command's usage line.
const usage = "usage: mpirun -np N fbpmpi [-device SPEC] [-size N] [-angles A] [-slices S] [-in FILE] [-dir DIR] [-mem LIMIT] [-chunk BYTES] [-fault-rank R] [-fault-after K] [-compare] [-json] [-q]"

// config is the command line.
type config struct {
	device     string
	geom       tomo.Geometry
	in, dir    string
	mem        int64
	chunk      int64
	faultRank  int
	faultAfter int64
	compare    bool
	json       bool
	quiet      bool
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// jobError is a failure every rank saw alike (a bad input file): rank 0
// says it, every rank exits 1 without aborting.
type jobError struct{ err error }

func (e jobError) Error() string { return e.err.Error() }
func (e jobError) Unwrap() error { return e.err }

func parse(args []string, ranks int) (config, error) {
	c := config{faultRank: -1}
	fs := flag.NewFlagSet("fbpmpi", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.device, "device", "", "device spec of every rank (sim:0, sim:0?mem=1GiB); empty: cuda:(local rank mod GPUs) with GPUs, else sim:0")
	fs.IntVar(&c.geom.Size, "size", 64, "image size N: N×N pixels a slice, N detector bins")
	fs.IntVar(&c.geom.Angles, "angles", 90, "projection angles over [0, π)")
	fs.IntVar(&c.geom.Slices, "slices", 16, "slices in the stack")
	fs.StringVar(&c.in, "in", "", "projections to reconstruct, (angles, slices, size) float32 little-endian; empty: rank 0 scans the phantom into DIR/projections.f32")
	fs.StringVar(&c.dir, "dir", "build/mpi", "directory of the projections and the volume (one every rank sees)")
	mem := fs.String("mem", "", "a device memory limit for every rank, as 64MiB: the plan fits each chunk under it")
	fs.Int64Var(&c.chunk, "chunk", mpi.DefaultChunkBytes, "bytes of a derived datatype's block: MPI buffers longer than this go as derived datatypes (as those of more than 2^31 elements must)")
	fs.IntVar(&c.faultRank, "fault-rank", -1, "make this rank's device fault part-way (a sim device; -1: none)")
	fs.Int64Var(&c.faultAfter, "fault-after", 4, "with -fault-rank: the device operation (copy, memset, kernel) of the run that faults")
	fs.BoolVar(&c.compare, "compare", true, "rank 0 also reconstructs in one process and compares the volumes bit for bit")
	fs.BoolVar(&c.json, "json", false, "print the summary as one line of JSON")
	fs.BoolVar(&c.quiet, "q", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if err := c.geom.Check(); err != nil {
		return c, usageError{err.Error()}
	}
	if ranks > c.geom.Slices || ranks > c.geom.Angles {
		return c, usageError{fmt.Sprintf("%d ranks for %d slices and %d angles: every rank needs at least one of each (-np at most %d)",
			ranks, c.geom.Slices, c.geom.Angles, min(c.geom.Slices, c.geom.Angles))}
	}
	if *mem != "" {
		n, err := accounting.ParseBytes(*mem)
		if err != nil || n <= 0 {
			return c, usageError{fmt.Sprintf("mem %q: want a positive size, as 64MiB", *mem)}
		}
		c.mem = n
	}
	if c.chunk < 1 || c.chunk > mpi.MaxCount {
		return c, usageError{fmt.Sprintf("chunk %d: want 1 to %d bytes", c.chunk, mpi.MaxCount)}
	}
	if c.faultRank >= ranks || c.faultRank < -1 {
		return c, usageError{fmt.Sprintf("fault-rank %d: want -1 (none) or a rank below %d", c.faultRank, ranks)}
	}
	if c.faultAfter < 1 {
		return c, usageError{fmt.Sprintf("fault-after %d: want 1 or more", c.faultAfter)}
	}
	if c.dir == "" {
		return c, usageError{"dir: want a directory"}
	}
	return c, nil
}

// run runs the job on this rank and returns its exit status. A failure of
// this rank alone aborts the job; it returns only if MPI cannot abort.
func run(args []string, stdout, stderr io.Writer) int {
	if err := mpi.Init(); err != nil {
		fmt.Fprintf(stderr, "fbpmpi: %v\n", err)
		return 1
	}
	world, err := mpi.World()
	if err != nil {
		return abort(stderr, -1, err)
	}
	rank := world.Rank()
	c, err := parse(args, world.Size())
	var ue usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		if rank == 0 {
			fmt.Fprintln(stdout, usage)
		}
		return finalize(stderr, 0)
	case errors.As(err, &ue):
		if rank == 0 {
			fmt.Fprintf(stderr, "fbpmpi: %v\n%s\n", err, usage)
		}
		return finalize(stderr, 2)
	}
	if err := mpi.SetChunkBytes(c.chunk); err != nil {
		return abort(stderr, rank, err)
	}
	sum, err := job(c, world, stderr)
	var je jobError
	switch {
	case errors.As(err, &je):
		if rank == 0 {
			fmt.Fprintf(stderr, "fbpmpi: %s\n", errline.Of(err))
		}
		return finalize(stderr, 1)
	case errors.As(err, &ue):
		if rank == 0 {
			fmt.Fprintf(stderr, "fbpmpi: %v\n%s\n", err, usage)
		}
		return finalize(stderr, 2)
	case errors.Is(err, mpi.ErrPeerFailed):
		// another rank failed a collective call and is ending the job with its own line:
		// wait for it, and end the job here only if it does not
		time.Sleep(peerWait)
		return abort(stderr, rank, err)
	case err != nil:
		return abort(stderr, rank, err)
	}
	if rank == 0 {
		if err := sum.write(stdout, c.json); err != nil {
			return abort(stderr, rank, err)
		}
	}
	return finalize(stderr, 0)
}

// peerWait is how long a rank whose collective call another rank failed
// waits for that rank to end the job before it ends it itself.
const peerWait = 10 * time.Second

// abort says why this rank failed, in one line, and ends every rank of
// the job.
func abort(stderr io.Writer, rank int, err error) int {
	fmt.Fprintf(stderr, "fbpmpi: rank %d: %s\n", rank, errline.Of(err))
	if aerr := mpi.Abort(1); aerr != nil {
		fmt.Fprintf(stderr, "fbpmpi: rank %d: %v\n", rank, aerr)
	}
	return 1
}

// finalize ends MPI and returns code (1 if MPI cannot end).
func finalize(stderr io.Writer, code int) int {
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintf(stderr, "fbpmpi: %v\n", err)
		if code == 0 {
			return 1
		}
	}
	return code
}
