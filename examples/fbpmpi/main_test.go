//go:build mpi

package main

import (
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/mpijob"
)

// asCommand makes the test binary run as fbpmpi: mpirun starts it so.
const asCommand = "CUARRAY_FBPMPI_AS_COMMAND"

// jobToken marks the processes of one test's job, to find any left running.
const jobToken = "CUARRAY_FBPMPI_TEST_JOB"

func TestMain(m *testing.M) {
	if os.Getenv(asCommand) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// result is what a job left.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
	token          string
}

// runJob runs this binary as fbpmpi on np ranks with args, in a session
// directory of its own, or skips the test when mpirun is absent.
func runJob(t *testing.T, np int, args ...string) result {
	t.Helper()
	cmd := mpijob.Command(t, np, append([]string{os.Args[0]}, args...)...)
	token := fmt.Sprint(os.Getpid(), "-", rand.Uint64()) // two test binaries replaying one seed draw the same numbers
	cmd.Env = append(cmd.Env, asCommand+"=1", jobToken+"="+token)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the job ran past 3 minutes:\n%s\n%s", stdout.String(), stderr.String())
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start), token: token}
}

// lastJSON decodes the last line of a job's output.
func lastJSON(t *testing.T, r result) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &out), "the last line is JSON:\n%s\n%s", r.stdout, r.stderr)
	return out
}

// left lists the processes of job token still running.
func left(token string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err == nil && strings.Contains(string(env), jobToken+"="+token+"\x00") {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

func num(m map[string]any, keys ...string) float64 {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return 0
		}
		v = mm[k]
	}
	f, _ := v.(float64)
	return f
}

func TestJobEqualsOneProcessAndItsLedgerAddsUp(t *testing.T) {
	tests := []struct {
		np                   int
		size, angles, slices int
		chunk                int64
		derived              bool
		mem                  string // a device limit on every rank
		minChunks            int    // the fewest chunks a rank's plan has
	}{
		{1, 32, 24, 8, 1 << 30, false, "", 1},
		{2, 32, 24, 8, 1 << 30, false, "", 1},
		{3, 33, 37, 13, 1 << 30, false, "", 1},
		{4, 32, 30, 10, 1 << 30, false, "", 1},
		{3, 33, 37, 13, 1000, true, "", 1},          // every block past the chunk: derived datatypes, MPI_Alltoallw
		{3, 33, 37, 13, 1 << 30, false, "64KiB", 2}, // each rank's planner cuts its slices to fit
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("np=%d,%dx%dx%d,chunk=%d,mem=%s", tt.np, tt.size, tt.angles, tt.slices, tt.chunk, tt.mem), func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"-size", fmt.Sprint(tt.size), "-angles", fmt.Sprint(tt.angles), "-slices", fmt.Sprint(tt.slices),
				"-chunk", fmt.Sprint(tt.chunk), "-dir", dir, "-q", "-json"}
			if tt.mem != "" {
				args = append(args, "-mem", tt.mem)
			}
			r := runJob(t, tt.np, args...)
			require.Zero(t, r.code, "the job failed:\n%s", r.stderr)
			s := lastJSON(t, r)
			assert.Equal(t, float64(tt.np), s["ranks"])
			assert.Equal(t, true, s["same_as_one_process"], "the volume equals the one-process run's bit for bit")
			assert.Equal(t, true, s["compared"])
			assert.Equal(t, tt.derived, s["derived_datatypes"])
			assert.Equal(t, "mpi-staged", s["mpi_path"], "sim goes through page-locked buffers")
			for _, c := range []string{"bytes_add_up", "host_device_only_input_output", "staging_matches_path"} {
				assert.Equal(t, true, s["checks"].(map[string]any)[c], c)
			}
			led := s["ledger"].(map[string]any)
			ranks := led["ranks"].([]any)
			require.Len(t, ranks, tt.np, "one ledger entry per rank")
			total := led["total"].(map[string]any)
			// the ranks' bytes sum to the total's, in every direction and path
			sums := map[string]float64{}
			for _, e := range ranks {
				for d, ps := range e.(map[string]any)["copies"].(map[string]any) {
					for p, c := range ps.(map[string]any) {
						sums[d+"/"+p] += c.(map[string]any)["bytes"].(float64)
					}
				}
			}
			n := 0
			for d, ps := range total["copies"].(map[string]any) {
				for p, c := range ps.(map[string]any) {
					assert.Equal(t, sums[d+"/"+p], c.(map[string]any)["bytes"].(float64), "%s on %s: the ranks' bytes sum to the total", d, p)
					n++
				}
			}
			assert.Len(t, sums, n)
			// resident: each rank moves its projections in and its slab out, and the reslice's staging
			var slices, net float64
			for i, x := range ranks {
				e := x.(map[string]any)
				sl, an := e["slices"].([]any), e["angles"].([]any)
				assert.Equal(t, slices, sl[0].(float64), "rank %d's slices follow rank %d's", i, i-1)
				slices = sl[1].(float64)
				in := (an[1].(float64) - an[0].(float64)) * float64(tt.slices*tt.size*4)
				out := (sl[1].(float64) - sl[0].(float64)) * float64(tt.size*tt.size*4)
				assert.Equal(t, in, num(e, "input_bytes"))
				assert.Equal(t, out, num(e, "output_bytes"))
				assert.Equal(t, in, num(e, "host_device", "htod_bytes")-num(e, "host_device", "reslice_htod_bytes"), "rank %d: host to device, only its projections", i)
				assert.Equal(t, out, num(e, "host_device", "dtoh_bytes")-num(e, "host_device", "reslice_dtoh_bytes"), "rank %d: device to host, only its slab", i)
				assert.Equal(t, in, num(e, "host_device", "reslice_dtoh_bytes"), "rank %d: its send buffer staged out once", i)
				assert.Equal(t, float64(tt.angles)*(sl[1].(float64)-sl[0].(float64))*float64(tt.size*4), num(e, "host_device", "reslice_htod_bytes"), "rank %d: its receive buffer staged in once", i)
				assert.Zero(t, num(e, "memory", "device", "current_bytes"), "rank %d freed its device memory", i)
				assert.Positive(t, num(e, "seconds", "kernels"))
				assert.GreaterOrEqual(t, num(e, "chunks"), float64(tt.minChunks), "rank %d's plan", i)
				net += num(e, "copies", "net", "mpi-staged", "bytes")
			}
			assert.Equal(t, float64(tt.slices), slices, "the ranks' slices cover the stack")
			// every byte between two ranks is counted by its sender and its receiver
			cross := float64(tt.angles*tt.slices*tt.size*4) - selfBytes(t, tt.np, tt.angles, tt.slices, tt.size)
			assert.Equal(t, 2*cross, net, "net bytes: each crossing counted once sent, once received")
			vol, err := os.ReadFile(filepath.Join(dir, "volume.f32"))
			require.NoError(t, err)
			assert.Len(t, vol, tt.slices*tt.size*tt.size*4, "the volume file")
			var nonzero int
			for _, v := range bytesFloats(vol) {
				require.False(t, math.IsNaN(float64(v)))
				if v != 0 {
					nonzero++
				}
			}
			assert.Greater(t, nonzero, len(vol)/8, "a reconstruction, not an empty file")
		})
	}
}

// selfBytes is the bytes each rank keeps for itself in the reslice.
func selfBytes(t *testing.T, np, angles, slices, size int) float64 {
	a, err := tomo.Shares(angles, np)
	require.NoError(t, err)
	s, err := tomo.Shares(slices, np)
	require.NoError(t, err)
	var b float64
	for r := range np {
		b += float64(a[r].Len * s[r].Len * size * 4)
	}
	return b
}

func TestFaultingRankEndsTheJob(t *testing.T) {
	for _, tt := range []struct{ np, rank int }{{3, 1}, {2, 0}, {4, 3}} {
		t.Run(fmt.Sprintf("np=%d,rank=%d", tt.np, tt.rank), func(t *testing.T) {
			r := runJob(t, tt.np, "-size", "32", "-angles", "24", "-slices", "8", "-dir", t.TempDir(), "-q", "-json", "-fault-rank", fmt.Sprint(tt.rank))
			assert.NotZero(t, r.code, "a faulting rank ends the job non-zero")
			assert.Less(t, r.took, 30*time.Second, "within seconds")
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			require.Len(t, lines, 1, "one line:\n%s", r.stderr)
			assert.True(t, strings.HasPrefix(lines[0], fmt.Sprintf("fbpmpi: rank %d: ", tt.rank)), lines[0])
			assert.Contains(t, lines[0], "illegal memory access")
			assert.Empty(t, r.stdout, "no summary")
			assert.Empty(t, left(r.token), "no rank left running")
		})
	}
}

func TestBadInputEndsTheJob(t *testing.T) {
	g := tomo.Geometry{Size: 16, Angles: 12, Slices: 6}
	proj := make([]float32, g.Angles*g.Slices*g.Size)
	for i := range proj {
		proj[i] = rand.Float32()
	}
	tests := []struct {
		name   string
		values []float32
		code   int
		line   string
	}{
		{"NaN in rank 2's projections", withNaN(proj, (9*g.Slices+4)*g.Size+3), 1, "fbpmpi: rank 2: input"},
		{"a file of the wrong size", proj[:len(proj)-5], 1, "fbpmpi: input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.f32")
			require.NoError(t, os.WriteFile(in, floatBytes(tt.values), 0o644))
			r := runJob(t, 3, "-size", "16", "-angles", "12", "-slices", "6", "-in", in, "-dir", dir, "-q", "-json")
			assert.Equal(t, tt.code, r.code, r.stderr)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			require.Len(t, lines, 1, "one line:\n%s", r.stderr)
			assert.True(t, strings.HasPrefix(lines[0], tt.line), lines[0])
			assert.Empty(t, left(r.token), "no rank left running")
		})
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.f32")
	require.NoError(t, os.WriteFile(in, floatBytes(proj), 0o644))
	r := runJob(t, 3, "-size", "16", "-angles", "12", "-slices", "6", "-in", in, "-dir", dir, "-q", "-json")
	require.Zero(t, r.code, r.stderr)
	assert.Equal(t, true, lastJSON(t, r)["same_as_one_process"], "a given input file, compared with its one-process run")
	if nan := strings.Contains(r.stderr, "NaN"); nan {
		t.Fatal(r.stderr)
	}
}

func withNaN(v []float32, i int) []float32 {
	out := append([]float32(nil), v...)
	out[i] = float32(math.NaN())
	return out
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		np   int
		args []string
		want string
	}{
		{"more ranks than slices", 3, []string{"-slices", "2"}, "3 ranks for 2 slices"},
		{"a bad flag", 2, []string{"-size", "x"}, "invalid value"},
		{"a fault rank past the last", 2, []string{"-fault-rank", "2"}, "fault-rank 2"},
		{"a bad device", 2, []string{"-device", "tpu:0"}, "tpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runJob(t, tt.np, append(tt.args, "-q", "-dir", t.TempDir())...)
			assert.Equal(t, 2, r.code, "a usage error:\n%s", r.stderr)
			assert.Equal(t, 1, strings.Count(r.stderr, "fbpmpi: "), "said once, by rank 0:\n%s", r.stderr)
			assert.Contains(t, r.stderr, tt.want)
			assert.Contains(t, r.stderr, "usage: mpirun -np N fbpmpi")
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("-size 64 -angles 90 -slices 16", 3)
	f.Add("-slices 2", 3)
	f.Add("-mem 1KiB -chunk 0", 1)
	f.Add("-fault-rank 5 -fault-after -1", 4)
	f.Fuzz(func(t *testing.T, line string, ranks int) {
		if ranks < 1 || ranks > 1<<16 {
			return
		}
		c, err := parse(strings.Fields(line), ranks)
		if err != nil {
			return
		}
		require.NoError(t, c.geom.Check())
		assert.LessOrEqual(t, ranks, c.geom.Slices, "every rank has a slice")
		assert.LessOrEqual(t, ranks, c.geom.Angles, "and an angle")
		assert.True(t, c.chunk >= 1 && c.chunk <= math.MaxInt32)
		assert.True(t, c.faultRank >= -1 && c.faultRank < ranks)
		assert.Positive(t, c.faultAfter)
		assert.GreaterOrEqual(t, c.mem, int64(0))
		assert.NotEmpty(t, c.dir)
	})
}
