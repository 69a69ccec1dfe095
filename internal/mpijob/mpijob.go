// Package mpijob starts mpirun for the tests of the mpi build, each job with
// a session directory of its own.
//
// Open MPI 4.1 puts every job's session directory under one top directory
// per user and host in the temporary directory, and a job that ends may
// remove that top directory while another job is creating its own beside it
// ("ORTE_ERROR_LOG: Error in file ../../../orte/util/session_dir.c"). go test
// runs packages' test binaries at the same time, and each starts mpirun, so
// each job here gets a fresh temporary directory as TMPDIR and as
// OMPI_MCA_orte_tmpdir_base (PMIx's rendezvous files follow TMPDIR too).
package mpijob

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/cuarray/cuarray/internal/testrand"
)

// SessionDirEnv returns the environment entries that give a job the
// session directory dir.
func SessionDirEnv(dir string) []string {
	return []string{"TMPDIR=" + dir, "OMPI_MCA_orte_tmpdir_base=" + dir}
}

// Command returns an mpirun command that runs argv on np ranks, with the
// flags the tests need (--oversubscribe, --quiet, --allow-run-as-root as
// root) and a session directory of its own that is removed when the test
// ends. It skips the test when mpirun is not installed. The ranks draw
// from the test binary's seed (testrand.EnvVar), the one it printed, so
// that CUARRAY_TEST_SEED replays their draws too: without it each rank
// drew from a seed of its own that no one saw.
//
// The directory is made under os.TempDir with a short name, not with
// t.TempDir: Open MPI's unix sockets live in it, and a socket's path may
// not be longer than 107 bytes.
func Command(t testing.TB, np int, argv ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not installed (make mpi-deps installs Open MPI)")
	}
	dir, err := os.MkdirTemp("", "ompi")
	if err != nil {
		t.Fatalf("mpijob: a session directory for mpirun: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	args := []string{"--oversubscribe", "--quiet"}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	args = append(args, "-np", fmt.Sprint(np))
	cmd := exec.Command(path, append(args, argv...)...)
	cmd.Env = append(os.Environ(), SessionDirEnv(dir)...)
	cmd.Env = append(cmd.Env, testrand.EnvVar+"="+strconv.FormatUint(testrand.Seed(), 10))
	return cmd
}
