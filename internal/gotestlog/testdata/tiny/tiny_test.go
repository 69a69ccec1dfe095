package tiny

import (
	"os"
	"testing"
	"time"
)

var mode = os.Getenv("TINY_CASE")

func TestPass(t *testing.T) { t.Log("passes") }

func TestFail(t *testing.T) {
	if mode == "" {
		t.Fatal("fails on purpose")
	}
}

func TestSkip(t *testing.T) { t.Skip("skips on purpose") }

func TestSub(t *testing.T) {
	for _, n := range []string{"a", "b"} {
		t.Run(n, func(t *testing.T) {})
	}
}

// TestHang blocks in a subtest: in the C call on its own goroutine, and in
// a goroutine it started that waits for nothing.
func TestHang(t *testing.T) {
	if mode != "hang" {
		t.Skip("TINY_CASE=hang")
	}
	t.Run("inner", func(t *testing.T) {
		go func() { select {} }()
		t.Log("blocking in cuTinyBlock")
		Block()
	})
}

// TestCrash dies of a panic on a goroutine of its own: the binary ends
// with this test running and no FAIL line.
func TestCrash(t *testing.T) {
	if mode != "crash" {
		t.Skip("TINY_CASE=crash")
	}
	go func() { panic("a goroutine of TestCrash panics") }()
	time.Sleep(time.Minute)
}

// TestPanic panics itself: testing prints its FAIL line, then the panic.
func TestPanic(t *testing.T) {
	if mode != "panic" {
		t.Skip("TINY_CASE=panic")
	}
	panic("TestPanic panics")
}

// TestSleep sleeps where the binary is killed from outside (TINY_CASE=kill).
func TestSleep(t *testing.T) {
	if mode != "kill" {
		t.Skip("TINY_CASE=kill")
	}
	time.Sleep(time.Minute)
}

// TestParallelBlock and TestParallelWait hang together (TINY_CASE=parallel):
// one in the C call, one on a channel.
func TestParallelBlock(t *testing.T) {
	t.Parallel()
	if mode == "parallel" {
		Block()
	}
}

func TestParallelWait(t *testing.T) {
	t.Parallel()
	if mode == "parallel" {
		select {}
	}
}

func TestAfter(t *testing.T) { t.Log("runs after the others") }
