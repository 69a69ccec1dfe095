// The C half of the CUPTI loader (load_linux.c), as load_linux.go calls it.

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

// cuarray_cupti_fns are the libcupti functions the loader takes with dlsym.
struct cuarray_cupti_fns {
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*disable)(CUpti_ActivityKind);
	CUptiResult (*configure)(CUpti_ActivityUnifiedMemoryCounterConfig *, uint32_t);
	CUptiResult (*registerCallbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*flushAll)(uint32_t);
	CUptiResult (*nextRecord)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*numDropped)(CUcontext, uint32_t, size_t *);
	CUptiResult (*resultString)(CUptiResult, const char **);
};

int cuarray_cupti_load(const char *path, char *err, size_t n);
CUptiResult cuarray_cupti_start(const uint32_t *kinds, int n, const char **op);
CUptiResult cuarray_cupti_flush(void);
CUptiResult cuarray_cupti_stop(void);
void cuarray_cupti_take(uint8_t **buf, size_t *len, int64_t *other, int64_t *dropped);
const char *cuarray_cupti_result_name(CUptiResult r);

// The layout of CUpti_ActivityUnifiedMemoryCounter2 and the enum values the Go parser uses,
// for load_linux.go to check its constants against at compile time.
enum {
	cuarray_cupti_record_size = sizeof(CUpti_ActivityUnifiedMemoryCounter2),
	cuarray_cupti_off_kind = offsetof(CUpti_ActivityUnifiedMemoryCounter2, kind),
	cuarray_cupti_off_counter_kind = offsetof(CUpti_ActivityUnifiedMemoryCounter2, counterKind),
	cuarray_cupti_off_value = offsetof(CUpti_ActivityUnifiedMemoryCounter2, value),
	cuarray_cupti_off_start = offsetof(CUpti_ActivityUnifiedMemoryCounter2, start),
	cuarray_cupti_off_end = offsetof(CUpti_ActivityUnifiedMemoryCounter2, end),
	cuarray_cupti_off_address = offsetof(CUpti_ActivityUnifiedMemoryCounter2, address),
	cuarray_cupti_off_src_id = offsetof(CUpti_ActivityUnifiedMemoryCounter2, srcId),
	cuarray_cupti_off_dst_id = offsetof(CUpti_ActivityUnifiedMemoryCounter2, dstId),
	cuarray_cupti_off_stream_id = offsetof(CUpti_ActivityUnifiedMemoryCounter2, streamId),
	cuarray_cupti_off_process_id = offsetof(CUpti_ActivityUnifiedMemoryCounter2, processId),
	cuarray_cupti_off_flags = offsetof(CUpti_ActivityUnifiedMemoryCounter2, flags),
};
