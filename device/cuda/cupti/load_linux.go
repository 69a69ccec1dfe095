//go:build cuda && linux

package cupti

/*
#cgo CFLAGS: -I/usr/include -I/usr/local/cuda/include
#cgo LDFLAGS: -ldl -lpthread
#include <stdlib.h>
#include "load_linux.h"
*/
import "C"

import (
	"os"
	"strings"
	"sync"
	"unsafe"
)

// EnvLibrary names the environment variable that gives the libcupti file to load; set, Open
// tries that file alone, and set to "" it loads none (CUPTI turned off).
const EnvLibrary = "CUARRAY_CUPTI"

// searchPath is where Open looks for libcupti without EnvLibrary: the dynamic linker's path
// by the library's names (Debian's libcupti-dev installs libcupti.so, libcupti11.8 the
// versioned name), then the CUDA toolkit's folders.
var searchPath = []string{
	"libcupti.so",
	"libcupti.so.13",
	"libcupti.so.12",
	"libcupti.so.11.8",
	"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
	"/usr/local/cuda/lib64/libcupti.so",
	"/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so",
}

// The record layout the parser reads (record.go) is the header's: each line fails to compile
// where an offset differs (a negative or non-zero constant index into a one-element array).
var (
	_ = [1]int{}[RecordSize-C.cuarray_cupti_record_size]
	_ = [1]int{}[C.cuarray_cupti_record_size-RecordSize]
	_ = [1]int{}[offKind-C.cuarray_cupti_off_kind]
	_ = [1]int{}[offCounterKind-C.cuarray_cupti_off_counter_kind]
	_ = [1]int{}[offValue-C.cuarray_cupti_off_value]
	_ = [1]int{}[offStart-C.cuarray_cupti_off_start]
	_ = [1]int{}[offEnd-C.cuarray_cupti_off_end]
	_ = [1]int{}[offAddress-C.cuarray_cupti_off_address]
	_ = [1]int{}[offSrcID-C.cuarray_cupti_off_src_id]
	_ = [1]int{}[offDstID-C.cuarray_cupti_off_dst_id]
	_ = [1]int{}[offStreamID-C.cuarray_cupti_off_stream_id]
	_ = [1]int{}[offProcessID-C.cuarray_cupti_off_process_id]
	_ = [1]int{}[offFlags-C.cuarray_cupti_off_flags]
)

// openMu serializes loading.
var openMu sync.Mutex

// Open loads libcupti: the file $CUARRAY_CUPTI names (none where it is set and empty), or the first of searchPath that loads
// and has every function the counters need. It returns an error matching ErrUnavailable, with
// the dynamic linker's messages, where none does. The library stays loaded for the life of
// the process, and every Open returns it (a second, different libcupti is refused).
func Open() (*Library, error) {
	paths := searchPath
	if p, ok := os.LookupEnv(EnvLibrary); ok {
		if p == "" {
			return nil, unavailable("%s is set and empty: CUPTI is turned off", EnvLibrary)
		}
		paths = []string{p}
	}
	openMu.Lock()
	defer openMu.Unlock()
	var why []string
	for _, p := range paths {
		if err := load(p); err != "" {
			why = append(why, err)
			continue
		}
		return &Library{path: p, be: libcupti{}}, nil
	}
	return nil, unavailable("load libcupti: %s", strings.Join(why, "; "))
}

// load dlopens path and takes its functions; it returns the reason it could not, or "".
func load(path string) string {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	const n = 1024
	buf := (*C.char)(C.malloc(n))
	defer C.free(unsafe.Pointer(buf))
	if C.cuarray_cupti_load(cpath, buf, n) != 0 {
		return C.GoString(buf)
	}
	return ""
}

// libcupti is the backend that calls the loaded library.
type libcupti struct{}

func (libcupti) start(kinds []CounterKind) error {
	ck := make([]C.uint32_t, len(kinds)+1) // +1: never a pointer to nothing
	for i, k := range kinds {
		ck[i] = C.uint32_t(k)
	}
	var op *C.char
	r := C.cuarray_cupti_start(&ck[0], C.int(len(kinds)), &op)
	return resultError(C.GoString(op), r)
}

func (libcupti) flush() ([]byte, int64, int64, error) {
	if err := resultError("cuptiActivityFlushAll", C.cuarray_cupti_flush()); err != nil {
		return nil, 0, 0, err
	}
	var buf *C.uint8_t
	var n C.size_t
	var other, dropped C.int64_t
	C.cuarray_cupti_take(&buf, &n, &other, &dropped)
	defer C.free(unsafe.Pointer(buf))
	raw := append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))...)
	return raw, int64(other), int64(dropped), nil
}

func (libcupti) stop() error {
	return resultError("cuptiActivityDisable", C.cuarray_cupti_stop())
}

// resultError is nil for CUPTI_SUCCESS, else an *Error named by cuptiGetResultString.
func resultError(op string, r C.CUptiResult) error {
	if r == C.CUPTI_SUCCESS {
		return nil
	}
	e := &Error{Op: op, Result: Result(r), Name: "CUptiResult"}
	if s := C.cuarray_cupti_result_name(r); s != nil {
		e.Name = C.GoString(s)
	}
	return e
}

// cLayout is the record layout and enum values as the C header gives them, for the tests.
func cLayout() map[string]int {
	return map[string]int{
		"size": C.cuarray_cupti_record_size, "kind": C.cuarray_cupti_off_kind,
		"counterKind": C.cuarray_cupti_off_counter_kind, "value": C.cuarray_cupti_off_value,
		"start": C.cuarray_cupti_off_start, "end": C.cuarray_cupti_off_end,
		"address": C.cuarray_cupti_off_address, "srcId": C.cuarray_cupti_off_src_id,
		"dstId": C.cuarray_cupti_off_dst_id, "streamId": C.cuarray_cupti_off_stream_id,
		"processId": C.cuarray_cupti_off_process_id, "flags": C.cuarray_cupti_off_flags,
		"activityKind": C.CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER,
		"HtoD":         C.CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
		"DtoH":         C.CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
		"CPUPageFault": C.CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT,
		"GPUPageFault": C.CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
		"thrashing":    C.CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
		"throttling":   C.CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING,
		"remoteMap":    C.CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP,
		"DtoD":         C.CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD,
		"kindCount":    C.CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_COUNT,
		"cpuDevice":    C.CUPTI_UNIFIED_MEMORY_CPU_DEVICE_ID,
	}
}
