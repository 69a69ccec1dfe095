// The export token the Python module reads without a call (ctypes
// c_int64.in_dll): bit 0 is set while async work may be pending, the other
// bits count the frees. An array's descriptor, described once, is exported
// as it is while the token is what it was when the array was last checked
// (nothing freed since, nothing pending); any other value sends the export
// through the library, which checks and synchronizes what it must. Written
// only by the Go side, with atomic stores (export.go).
#include <stdint.h>

int64_t cuarray_export_token;
