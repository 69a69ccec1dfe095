//go:build cuda && linux

// The half of the CUPTI loader that runs in C: dlopen and dlsym, and the activity buffer
// callbacks, which CUPTI calls on threads of its own (its worker, or the thread in
// cuptiActivityFlushAll). They copy the unified-memory counter records of each completed
// buffer into one growing buffer that Go takes (cuarray_cupti_take).

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load_linux.h"

struct cuarray_cupti_fns cuarray_cupti;
static void *loaded; // the dlopen handle whose functions cuarray_cupti holds, or NULL

#define CUARRAY_CUPTI_BUFFER (1 << 20)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *acc;          // the unified-memory records delivered and not yet taken
static size_t accLen, accCap;
static int64_t other;         // records of other kinds, skipped
static int64_t dropped;       // records CUPTI dropped, or that no memory was left to keep

int cuarray_cupti_load(const char *path, char *err, size_t n) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, n, "%s", e ? e : "dlopen failed");
		return -1;
	}
	if (loaded != NULL) {
		if (h != loaded) {
			dlclose(h);
			snprintf(err, n, "%s is another libcupti than the one this process loaded first", path);
			return -1;
		}
		dlclose(h); // one reference is enough: the first load keeps it
		return 0;
	}
	struct cuarray_cupti_fns f;
#define CUARRAY_SYM(field, name)                                                 \
	*(void **)&f.field = dlsym(h, name);                                         \
	if (f.field == NULL) {                                                       \
		const char *e = dlerror();                                               \
		snprintf(err, n, "%s: %s", path, e ? e : name " not found");             \
		dlclose(h);                                                              \
		return -1;                                                               \
	}
	CUARRAY_SYM(enable, "cuptiActivityEnable")
	CUARRAY_SYM(disable, "cuptiActivityDisable")
	CUARRAY_SYM(configure, "cuptiActivityConfigureUnifiedMemoryCounter")
	CUARRAY_SYM(registerCallbacks, "cuptiActivityRegisterCallbacks")
	CUARRAY_SYM(flushAll, "cuptiActivityFlushAll")
	CUARRAY_SYM(nextRecord, "cuptiActivityGetNextRecord")
	CUARRAY_SYM(numDropped, "cuptiActivityGetNumDroppedRecords")
	CUARRAY_SYM(resultString, "cuptiGetResultString")
#undef CUARRAY_SYM
	cuarray_cupti = f;
	loaded = h;
	return 0;
}

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *maxNumRecords) {
	*buffer = aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, CUARRAY_CUPTI_BUFFER);
	*size = *buffer ? CUARRAY_CUPTI_BUFFER : 0;
	*maxNumRecords = 0;
}

// keep appends one record to acc; mu is held. It returns 0 where no memory was left.
static int keep(const uint8_t *rec) {
	if (accLen + sizeof(CUpti_ActivityUnifiedMemoryCounter2) > accCap) {
		size_t c = accCap ? 2 * accCap : CUARRAY_CUPTI_BUFFER;
		uint8_t *p = realloc(acc, c);
		if (p == NULL) return 0;
		acc = p;
		accCap = c;
	}
	memcpy(acc + accLen, rec, sizeof(CUpti_ActivityUnifiedMemoryCounter2));
	accLen += sizeof(CUpti_ActivityUnifiedMemoryCounter2);
	return 1;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t streamId, uint8_t *buffer, size_t size, size_t validSize) {
	(void)size;
	pthread_mutex_lock(&mu);
	CUpti_Activity *rec = NULL;
	while (cuarray_cupti.nextRecord(buffer, validSize, &rec) == CUPTI_SUCCESS) {
		size_t left = validSize - (size_t)((uint8_t *)rec - buffer);
		if (rec->kind != CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) {
			other++;
		} else if (left < sizeof(CUpti_ActivityUnifiedMemoryCounter2) || !keep((uint8_t *)rec)) {
			dropped++;
		}
	}
	size_t d = 0;
	if (cuarray_cupti.numDropped(ctx, streamId, &d) == CUPTI_SUCCESS) dropped += (int64_t)d;
	pthread_mutex_unlock(&mu);
	free(buffer);
}

CUptiResult cuarray_cupti_start(const uint32_t *kinds, int n, const char **op) {
	CUpti_ActivityUnifiedMemoryCounterConfig cfg[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_COUNT];
	if (n < 0 || n > CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_COUNT) {
		*op = "cuptiActivityConfigureUnifiedMemoryCounter";
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
	for (int i = 0; i < n; i++) {
		memset(&cfg[i], 0, sizeof cfg[i]);
		cfg[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
		cfg[i].kind = (CUpti_ActivityUnifiedMemoryCounterKind)kinds[i];
		cfg[i].deviceId = 0;
		cfg[i].enable = 1;
	}
	CUptiResult r;
	*op = "cuptiActivityConfigureUnifiedMemoryCounter";
	if ((r = cuarray_cupti.configure(cfg, (uint32_t)n)) != CUPTI_SUCCESS) return r;
	*op = "cuptiActivityRegisterCallbacks";
	if ((r = cuarray_cupti.registerCallbacks(requested, completed)) != CUPTI_SUCCESS) return r;
	*op = "cuptiActivityEnable";
	return cuarray_cupti.enable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
}

CUptiResult cuarray_cupti_flush(void) {
	return cuarray_cupti.flushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

CUptiResult cuarray_cupti_stop(void) {
	return cuarray_cupti.disable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
}

void cuarray_cupti_take(uint8_t **buf, size_t *len, int64_t *otherOut, int64_t *droppedOut) {
	pthread_mutex_lock(&mu);
	*buf = acc;
	*len = accLen;
	*otherOut = other;
	*droppedOut = dropped;
	acc = NULL;
	accLen = accCap = 0;
	other = dropped = 0;
	pthread_mutex_unlock(&mu);
}

const char *cuarray_cupti_result_name(CUptiResult r) {
	const char *s = NULL;
	if (cuarray_cupti.resultString == NULL || cuarray_cupti.resultString(r, &s) != CUPTI_SUCCESS) return NULL;
	return s;
}
