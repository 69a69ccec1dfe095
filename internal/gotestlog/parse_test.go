package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseFile(t *testing.T, name string) *Log {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	l, err := Parse(f)
	require.NoError(t, err)
	return l
}

// wantCall is what a stuck test's call must say: its driver function, and
// text its description holds (the frame that called it).
type wantCall struct {
	api      string
	contains []string
	inside   bool
	callback bool
}

type wantStuck struct {
	status  Status
	running []string
	calls   []wantCall
}

// Every fixture is a real output (testdata/capture.sh says how each was made).
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		log                    string
		pass, fail, skip       int
		done                   bool
		timeout, died, culprit string
		dumped                 bool
		stuck                  map[string]wantStuck
	}{
		{log: "tiny-pass.log", pass: 6, skip: 5, done: true},
		{log: "tiny-fail.log", pass: 5, fail: 1, skip: 5, done: true},
		{
			// Tests before the hang ended; TestParallel* were paused (never ran), TestAfter never started.
			log: "tiny-hang.log", pass: 3, skip: 1, timeout: "3s", dumped: true,
			stuck: map[string]wantStuck{"TestHang": {status: Hung, running: []string{"TestHang (3s)", "TestHang/inner (3s)"},
				calls: []wantCall{{api: "cuTinyBlock", contains: []string{
					"[goroutine 26, syscall]", "called from tiny.Block (tiny/tiny.go:15)", "in tiny.TestHang.func1 (tiny/tiny_test.go:36)"}}}}},
		},
		{log: "tiny-hang-rerun.log", pass: 3, skip: 3, done: true},
		{
			// Two parallel tests hang: each call goes to the test on whose goroutine it is.
			log: "tiny-parallel.log", pass: 4, skip: 5, timeout: "3s", dumped: true,
			stuck: map[string]wantStuck{
				"TestParallelBlock": {status: Hung, running: []string{"TestParallelBlock (3s)"},
					calls: []wantCall{{api: "cuTinyBlock", contains: []string{"in tiny.TestParallelBlock (tiny/tiny_test.go:71)"}}}},
				"TestParallelWait": {status: Hung, running: []string{"TestParallelWait (3s)"}},
			},
		},
		{
			log: "tiny-crash.log", pass: 3, skip: 2, died: "panic: a goroutine of TestCrash panics", dumped: true,
			stuck: map[string]wantStuck{"TestCrash": {status: Crash}},
		},
		{log: "tiny-panic.log", pass: 3, fail: 1, skip: 3, died: "panic: TestPanic panics [recovered, repanicked]",
			culprit: "TestPanic", dumped: true},
		{
			// Killed from outside (SIGKILL): no panic, no dump; the test that had started is hung.
			log: "tiny-killed.log", pass: 3, skip: 4,
			stuck: map[string]wantStuck{"TestSleep": {status: Hung}},
		},
		{
			// The emulated driver: the planted hang, and the host function that holds its stream.
			log: "cuda-emulated-hang.log", pass: 21, skip: 1, timeout: "16s", dumped: true,
			stuck: map[string]wantStuck{"TestPlantedHang": {status: Hung, running: []string{"TestPlantedHang (15s)"},
				calls: []wantCall{
					{api: "cuStreamSynchronize", contains: []string{
						"called from device/cuda.(*stream).Synchronize.func1 (device/cuda/stream.go:290)",
						"in device/cuda.TestPlantedHang (device/cuda/plant_test.go:30)"}},
					{api: "cuLaunchHostFunc", inside: true, contains: []string{
						"a host function (cuLaunchHostFunc)", "waiting in device/cuda.cuarrayHoldWait (device/cuda/hold.go:48)"}},
				}}},
		},
		{log: "cuda-emulated-rerun.log", pass: 1, done: true},
		{
			// An H100: interop's test waits in a pageable cuMemcpyDtoHAsync while a host function holds the stream.
			log: "h100-interop-hang.log", pass: 19, skip: 4, timeout: "1m55s", dumped: true,
			stuck: map[string]wantStuck{"TestImportCAIOnConsumerStream": {status: Hung,
				running: []string{"TestImportCAIOnConsumerStream (1m49s)"},
				calls: []wantCall{
					{api: "cuMemcpyDtoHAsync", contains: []string{
						"[goroutine 783, syscall, locked to thread]",
						"called from device/cuda.(*stream).CopyDtoHAsync.func1 (device/cuda/stream.go:205)",
						"in interop_test.TestImportCAIOnConsumerStream (interop/stream_test.go:58)"}},
					{callback: true, contains: []string{"waiting in device/cuda.cuarrayHoldWait (device/cuda/hold.go:48)"}},
				}}},
		},
		{
			// kernels on an H100: cuarray's own C (cuarray_peek, a cuMemcpyDtoH into a Go slice).
			log: "h100-kernels-hang.log", pass: 15, timeout: "1m55s", dumped: true,
			stuck: map[string]wantStuck{"TestAsyncKernelsReturnBeforeTheWorkIsDone": {status: Hung,
				running: []string{"TestAsyncKernelsReturnBeforeTheWorkIsDone (1m54s)"},
				calls: []wantCall{
					{api: "cuarray_peek", contains: []string{"called from device/cuda.peek.func1 (device/cuda/peek_driver.go:34)",
						"in kernels_test.TestAsyncKernelsReturnBeforeTheWorkIsDone (kernels/complete_test.go:88)"}},
					{callback: true},
				}}},
		},
		{
			// The same under compute-sanitizer, which adds its own lines.
			log: "h100-kernels-memcheck-hang.log", pass: 15, timeout: "1m35s", dumped: true,
			stuck: map[string]wantStuck{"TestAsyncKernelsReturnBeforeTheWorkIsDone": {status: Hung,
				running: []string{"TestAsyncKernelsReturnBeforeTheWorkIsDone (1m34s)"},
				calls:   []wantCall{{api: "cuModuleGetFunction"}, {callback: true}}}},
		},
		{
			// Slow, not hung: the timeout names the running test and subtest; no driver call.
			log: "h100-cmd-cuarray-cut.log", pass: 8, timeout: "1m0s", dumped: true,
			stuck: map[string]wantStuck{"TestFaultCommands": {status: Hung,
				running: []string{"TestFaultCommands (51s)", "TestFaultCommands/bench_calibrate (16s)"}}},
		},
	} {
		t.Run(tc.log, func(t *testing.T) {
			l := parseFile(t, tc.log)
			assert.Equal(t, tc.pass, l.Count(Pass), "passed")
			assert.Equal(t, tc.fail, l.Count(Fail), "failed")
			assert.Equal(t, tc.skip, l.Count(Skip), "skipped")
			assert.Equal(t, tc.done, l.Done, "done")
			assert.Equal(t, tc.timeout, l.Timeout, "timeout")
			assert.Equal(t, tc.died, l.Died, "died")
			assert.Equal(t, tc.culprit, l.Culprit, "culprit")
			assert.Equal(t, tc.dumped, l.Dumped, "dumped")
			assert.Empty(t, l.Other, "calls no test's")
			got := map[string]*Test{}
			for _, tt := range l.Tests {
				if tt.Status == Hung || tt.Status == Crash {
					got[tt.Name] = tt
				}
			}
			require.Len(t, got, len(tc.stuck), "hung or crashed tests")
			for name, want := range tc.stuck {
				tt := got[name]
				require.NotNil(t, tt, name)
				assert.Equal(t, want.status, tt.Status, name)
				assert.Equal(t, want.running, tt.Running, name)
				require.Len(t, tt.Calls, len(want.calls), "%s: %v", name, tt.Calls)
				for i, wc := range want.calls {
					c := tt.Calls[i]
					assert.Equal(t, wc.api, c.API, "%s call %d", name, i)
					assert.Equal(t, wc.inside, c.Inside, "%s call %d: inside", name, i)
					assert.Equal(t, wc.callback, c.Callback, "%s call %d: callback", name, i)
					for _, s := range wc.contains {
						assert.Contains(t, c.String(), s, "%s call %d", name, i)
					}
				}
			}
		})
	}
}

// The runs of one package: what the shell gets, and the pattern that
// leaves out what ran, which must match every name it lists and no other.
func TestRunsAgain(t *testing.T) {
	for _, tc := range []struct {
		logs  []string
		shell string
		skip  []string
		stuck string
	}{
		{
			logs: []string{"tiny-hang.log"},
			shell: "pass=3\nfail=0\nskip=1\nhung=1\ncrash=0\ndone=0\nended=1\n" +
				"skip_re='^(TestPass|TestFail|TestSkip|TestSub|TestHang)$'\nstuck_re='^(TestHang)$'\n",
			skip:  []string{"TestPass", "TestFail", "TestSkip", "TestSub", "TestHang"},
			stuck: "hung\tTestHang\tcuTinyBlock [goroutine 26, syscall], called from tiny.Block (tiny/tiny.go:15), in tiny.TestHang.func1 (tiny/tiny_test.go:36)\n",
		},
		{
			// The rerun ran the rest: done, and the hung test still counted.
			logs: []string{"tiny-hang.log", "tiny-hang-rerun.log"},
			shell: "pass=6\nfail=0\nskip=4\nhung=1\ncrash=0\ndone=1\nended=0\n" +
				"skip_re='^(TestPass|TestFail|TestSkip|TestSub|TestHang|TestCrash|TestPanic|TestSleep|TestAfter|TestParallelBlock|TestParallelWait)$'\n" +
				"stuck_re='^(TestHang)$'\n",
			stuck: "hung\tTestHang\tcuTinyBlock [goroutine 26, syscall], called from tiny.Block (tiny/tiny.go:15), in tiny.TestHang.func1 (tiny/tiny_test.go:36)\n",
		},
		{
			logs: []string{"cuda-emulated-hang.log", "cuda-emulated-rerun.log"},
			shell: "pass=22\nfail=0\nskip=1\nhung=1\ncrash=0\ndone=1\nended=0\n" +
				"skip_re='^(TestOpenAndInfo|TestDriverOutOfMemoryIsTheLedgersType|TestPointerInfo|TestRegisterMmapMemory|TestIPCHandle|" +
				"TestModuleLoadedOncePerDevice|TestModuleLoadErrorShowsJITLog|TestPrimaryContextActiveAfterOpen|TestPerThreadDefaultStream|" +
				"TestClosedEventIsErrClosed|TestErrorMapping|TestStickyFault|TestFinding08MappedMemoryWithoutTheFlag|" +
				"TestFinding10MissingDriverFunction|TestFinding11AsyncCopyKeepsGoMemory|TestFinding12RefusedIPCCloseKeepsTheLedgerRight|" +
				"TestFinding05ClosedDeviceRefusesEveryCall|TestFinding06Async2DCopiesTakeThePitchesTheSynchronousOnesTake|" +
				"TestFinding07PerThreadDefaultStreamBuildIsRefused|TestFinding10ErrorMapping|TestFormatBounded|TestStartsWithoutGPU|" +
				"TestPlantedHang|TestStreamRaceCheckerOnTheEmulatedDriver)$'\nstuck_re='^(TestPlantedHang)$'\n",
			stuck: "hung\tTestPlantedHang\tcuStreamSynchronize [goroutine 132, chan receive, locked to thread], called from " +
				"device/cuda.(*stream).Synchronize.func1 (device/cuda/stream.go:290), in device/cuda.TestPlantedHang " +
				"(device/cuda/plant_test.go:30) (and 1 more)\n",
		},
		{
			// A test's own panic ends the binary: it failed, and ended the run.
			logs: []string{"tiny-panic.log"},
			shell: "pass=3\nfail=1\nskip=3\nhung=0\ncrash=0\ndone=0\nended=1\n" +
				"skip_re='^(TestPass|TestFail|TestSkip|TestSub|TestHang|TestCrash|TestPanic)$'\nstuck_re='^(TestPanic)$'\n",
			stuck: "crash\tTestPanic\tpanic: TestPanic panics [recovered, repanicked]\n",
		},
		{
			logs: []string{"tiny-killed.log"},
			shell: "pass=3\nfail=0\nskip=4\nhung=1\ncrash=0\ndone=0\nended=1\n" +
				"skip_re='^(TestPass|TestFail|TestSkip|TestSub|TestHang|TestCrash|TestPanic|TestSleep)$'\nstuck_re='^(TestSleep)$'\n",
			stuck: "hung\tTestSleep\tno goroutine dump (killed before it printed one)\n",
		},
	} {
		t.Run(strings.Join(tc.logs, "+"), func(t *testing.T) {
			var runs []*Log
			for _, name := range tc.logs {
				runs = append(runs, parseFile(t, name))
			}
			var sh, stuck bytes.Buffer
			writeShell(&sh, runs)
			assert.Equal(t, tc.shell, sh.String())
			writeStuck(&stuck, runs)
			assert.Equal(t, tc.stuck, stuck.String())
			re := regexp.MustCompile(SkipPattern(runs))
			for _, n := range tc.skip {
				assert.True(t, re.MatchString(n), n)
			}
			for _, n := range []string{"TestPas", "TestPassX", "TestHang/inner", "XTestHang"} {
				assert.False(t, re.MatchString(n), n)
			}
		})
	}
}

func TestDriverFrames(t *testing.T) {
	for _, tc := range []struct {
		fn                string
		api               string
		cgo, inside, isIn bool
	}{
		{"gorgonia.org/cu._Cfunc_cuStreamSynchronize", "cuStreamSynchronize", true, false, true},
		{"github.com/cuarray/cuarray/device/cuda._Cfunc_cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2", true, false, true},
		{"github.com/cuarray/cuarray/device/cuda._Cfunc_cuarray_peek", "cuarray_peek", true, false, true},
		{"github.com/cuarray/cuarray/device/cuda/emulated.cuemu_cuStreamSynchronize", "cuStreamSynchronize", false, false, true},
		{"github.com/cuarray/cuarray/device/cuda/emulated.cuemu_cuLaunchHostFunc.func1.1", "cuLaunchHostFunc", false, true, true},
		{"gorgonia.org/cu.Stream.Synchronize", "", false, false, true},
		{"gorgonia.org/cu.(*Ctx).Run", "", false, false, true},
		// The emulated driver's own C, calling a host function: not a driver call.
		{"github.com/cuarray/cuarray/device/cuda/emulated._Cfunc_cuemu_call_host", "", false, false, false},
		{"gorgonia.org/cudnn.Foo", "", false, false, false},
		{"github.com/cuarray/cuarray/device/cuda.(*stream).Synchronize", "", false, false, false},
		{"runtime.cgocall", "", false, false, false},
	} {
		api, cgo, inside, ok := driverAPI(tc.fn)
		assert.Equal(t, tc.isIn, ok, tc.fn)
		assert.Equal(t, tc.api, api, tc.fn)
		assert.Equal(t, tc.cgo, cgo, tc.fn)
		assert.Equal(t, tc.inside, inside, tc.fn)
	}
}
