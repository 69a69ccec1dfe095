// Package tiny is a test binary that hangs, crashes or panics on demand
// (TINY_CASE), to capture real outputs for gotestlog's tests (capture.sh).
// cuTinyBlock stands for a driver call that never returns: its cgo frame,
// tiny._Cfunc_cuTinyBlock, is what a blocked cuStreamSynchronize looks like
// in a goroutine dump.
package tiny

/*
#include <unistd.h>
static void cuTinyBlock(void) { for (;;) sleep(1); }
*/
import "C"

// Block calls the C function that never returns.
func Block() { C.cuTinyBlock() }
