//go:build cgo

package main

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/internal/toolchain"
)

// threadsHarness calls the allocator's C entry points from POSIX threads,
// as PyTorch's and CuPy's threads do. argv: the library, a device spec, the
// limit, a seed. Phase "threads": NTHREADS threads each make one failing
// call of their own (a malloc past the limit of a size no other asks for,
// or a free of an odd address no other frees; through cuarray_torch_* and
// cuarray_allocator_*, whose returned error must be the same message), wait
// for all, read cuarray_allocator_last_error (every fourth clearing it),
// wait for all again, and read it again with clear. Each prints
// "thread<TAB>i<TAB>want<TAB>returned<TAB>first<TAB>second". Then
// "errors<TAB>n": the stats' errors count over the phase. Phase "replace":
// one thread records REPLACE errors; "exit": EXITS threads, one after
// another, each records an error and exits without clearing it; each
// prints the growth of the C heap (mallinfo2, one arena) over its loop.
const threadsHarness = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define NTHREADS 24
#define REPLACE 20000
#define EXITS 2000

static char *(*open_device)(const char *, uint64_t *);
static char *(*use)(uint64_t, int, int64_t, int *);
static void *(*torch_malloc)(ssize_t, int, void *);
static void (*torch_free)(void *, ssize_t, int, void *);
static char *(*alloc_malloc)(int64_t, int, uintptr_t, uintptr_t *);
static char *(*alloc_free)(uintptr_t, int64_t, int, uintptr_t);
static char *(*last_error)(int);
static char *(*stats)(char **);
static void (*free_string)(char *);

static int device_index;
static int64_t limit;
static pthread_barrier_t failed, cleared;

struct job {
	int i;
	int64_t size;
	uintptr_t ptr;
	char want[128], returned[1024], first[1024], second[1024];
};

static void take(char *dst, char *msg) {
	dst[0] = 0;
	if (msg != NULL) {
		snprintf(dst, 1024, "%s", msg);
		free_string(msg);
	}
}

static void fail(struct job *j) {
	uintptr_t out = 0;
	switch (j->i % 4) {
	case 0:
		if (torch_malloc(j->size, device_index, NULL) != NULL) printf("malloc past the limit succeeded\n");
		break;
	case 1:
		torch_free((void *)j->ptr, j->size, device_index, NULL);
		break;
	case 2:
		take(j->returned, alloc_malloc(j->size, device_index, 0, &out));
		break;
	case 3:
		take(j->returned, alloc_free(j->ptr, j->size, device_index, 0));
		break;
	}
}

static void *run(void *arg) {
	struct job *j = arg;
	fail(j);
	pthread_barrier_wait(&failed);
	take(j->first, last_error(j->i % 4 == 0));
	pthread_barrier_wait(&cleared);
	take(j->second, last_error(1));
	return NULL;
}

static long long errors(void) {
	char *json = NULL;
	char *err = stats(&json);
	if (err != NULL) { printf("stats: %s\n", err); exit(1); }
	char *at = strstr(json, "\"errors\":");
	long long n = at ? strtoll(at + 9, NULL, 10) : -1;
	free_string(json);
	return n;
}

static int replace_report;

static void *replace(void *arg) {
	uintptr_t base = *(uintptr_t *)arg;
	for (int k = 0; k < REPLACE; k++) torch_free((void *)(base + 2 * (uintptr_t)k), 64, device_index, NULL);
	char *msg = last_error(1);
	char want[64];
	snprintf(want, sizeof want, "free %#" PRIxPTR " (", base + 2 * (uintptr_t)(REPLACE - 1));
	if (replace_report) printf("replace_last\t%d\n", msg != NULL && strstr(msg, want) != NULL);
	if (msg != NULL) free_string(msg);
	return NULL;
}

static void *record_and_exit(void *arg) {
	torch_malloc(*(int64_t *)arg, device_index, NULL);
	return NULL;
}

static size_t heap(void) { return mallinfo2().uordblks; }

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IONBF, 0);
	mallopt(M_ARENA_MAX, 1); // every thread's malloc in the arena mallinfo2 reports
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
	*(void **)&open_device = dlsym(h, "cuarray_device");
	*(void **)&use = dlsym(h, "cuarray_allocator_use");
	*(void **)&torch_malloc = dlsym(h, "cuarray_torch_malloc");
	*(void **)&torch_free = dlsym(h, "cuarray_torch_free");
	*(void **)&alloc_malloc = dlsym(h, "cuarray_allocator_malloc");
	*(void **)&alloc_free = dlsym(h, "cuarray_allocator_free");
	*(void **)&last_error = dlsym(h, "cuarray_allocator_last_error");
	*(void **)&stats = dlsym(h, "cuarray_allocator_stats");
	*(void **)&free_string = dlsym(h, "cuarray_free_string");
	limit = strtoll(argv[3], NULL, 10);
	srand((unsigned)strtoul(argv[4], NULL, 10));
	uint64_t dev = 0;
	if (open_device(argv[2], &dev) || use(dev, 0, limit, &device_index)) { printf("setup failed\n"); return 1; }

	static struct job jobs[NTHREADS];
	pthread_t threads[NTHREADS];
	pthread_barrier_init(&failed, NULL, NTHREADS);
	pthread_barrier_init(&cleared, NULL, NTHREADS);
	long long errors0 = errors();
	for (int i = 0; i < NTHREADS; i++) {
		struct job *j = &jobs[i];
		j->i = i;
		j->size = limit + 1 + (int64_t)i * (1 << 20) + rand() % (1 << 20); // each its own
		j->ptr = ((uintptr_t)rand() << 32 | (uintptr_t)rand() << 8 | (uintptr_t)i << 1) | 1; // odd: never handed out
		if (i % 2 == 0) snprintf(j->want, sizeof j->want, "malloc %" PRId64 " bytes", j->size);
		else snprintf(j->want, sizeof j->want, "free %#" PRIxPTR " (%" PRId64 " bytes", j->ptr, j->size);
		pthread_create(&threads[i], NULL, run, j);
	}
	for (int i = 0; i < NTHREADS; i++) pthread_join(threads[i], NULL);
	for (int i = 0; i < NTHREADS; i++) {
		struct job *j = &jobs[i];
		printf("thread\t%d\t%s\t%s\t%s\t%s\n", i, j->want, j->returned, j->first, j->second);
	}
	printf("errors\t%lld\n", errors() - errors0);

	pthread_t t;
	uintptr_t base = ((uintptr_t)rand() << 24) | 1, warm = base + (1 << 20);
	pthread_create(&t, NULL, replace, &warm); // the first thread's setup, outside the figure
	pthread_join(t, NULL);
	size_t before = heap();
	replace_report = 1;
	pthread_create(&t, NULL, replace, &base);
	pthread_join(t, NULL);
	printf("replace_growth\t%zd\n", (ssize_t)(heap() - before));

	int64_t size = limit + 1 + rand() % (1 << 20);
	for (int k = 0; k < 50; k++) { pthread_create(&t, NULL, record_and_exit, &size); pthread_join(t, NULL); }
	before = heap();
	for (int k = 0; k < EXITS; k++) { pthread_create(&t, NULL, record_and_exit, &size); pthread_join(t, NULL); }
	printf("exit_growth\t%zd\n", (ssize_t)(heap() - before));
	return 0;
}
`

// TestAllocatorLastErrorFromCThreads builds the library (or takes the one
// $CUARRAY_LIB names: the bundle's on the GPU machine, which has no go
// command) and a C program whose POSIX threads call the entry points at once, as PyTorch's and CuPy's do: every thread reads the
// message of its own failure from cuarray_allocator_last_error, never
// another's, and one thread's clear leaves the others' messages; the
// errors count is the process's. A thread that records many errors, and
// threads that exit without reading theirs, leave the C heap as it was:
// each message frees the one it replaces, and a thread's is freed when the
// thread exits. The library is built without -race: ThreadSanitizer in a
// c-shared library that a C program loads fails to map its shadow of the
// sim device's memory here ("failed to allocate ... errno: 12");
// TestAllocatorLastErrorPerThread runs the same calls under -race in
// process, on goroutines locked to their threads.
func TestAllocatorLastErrorFromCThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C library and a C program: not in -short")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build the C caller: " + err.Error())
	}
	lib := toolchain.Library(t, ".", "")
	dir := t.TempDir()
	src := filepath.Join(dir, "threads.c")
	require.NoError(t, os.WriteFile(src, []byte(threadsHarness), 0o644))
	bin := filepath.Join(dir, "threads")
	out, err := exec.Command(cc, "-O1", "-Wall", "-o", bin, src, "-pthread", "-ldl").CombinedOutput()
	require.NoError(t, err, "building the C caller:\n%s", out)

	limit := int64(1<<20) + rand.Int64N(1<<20)
	out, err = exec.Command(bin, lib, "sim:56?mem=1GiB", strconv.FormatInt(limit, 10), strconv.FormatUint(rand.Uint64N(1<<31), 10)).CombinedOutput()
	require.NoError(t, err, "the C caller:\n%s", out)
	got := string(out)
	require.NotContains(t, got, "malloc past the limit succeeded")

	threads, figures := 0, map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		f := strings.Split(line, "\t")
		if f[0] != "thread" {
			require.Len(t, f, 2, "a line of the C caller: %q", line)
			n, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err, line)
			figures[f[0]] = n
			continue
		}
		require.Len(t, f, 6, "a thread's line: %q", line)
		threads++
		i, err := strconv.Atoi(f[1])
		require.NoError(t, err)
		want, returned, first, second := f[2], f[3], f[4], f[5]
		assert.Contains(t, first, want, "thread %d reads its own failure's message", i)
		if i%2 == 1 {
			assert.Contains(t, first, "not allocated by cuarray's allocator", "thread %d", i)
		} else {
			assert.Contains(t, first, "limit is "+accounting.FormatBytes(limit), "thread %d: with the figures", i)
		}
		if i%4 >= 2 {
			assert.Equal(t, returned, first, "thread %d: cuarray_allocator_* returned the message it recorded", i)
		}
		if i%4 == 0 {
			assert.Empty(t, second, "thread %d cleared its message", i)
		} else {
			assert.Contains(t, second, want, "thread %d: the others' clears left its message", i)
		}
	}
	assert.Equal(t, 24, threads, "every thread reported:\n%s", got)
	assert.Equal(t, int64(threads), figures["errors"], "the errors count is every thread's")
	assert.Equal(t, int64(1), figures["replace_last"], "a thread that recorded many errors reads the last")
	t.Logf("C heap growth: %d bytes over 20000 errors on one thread, %d over 2000 threads that exit with one",
		figures["replace_growth"], figures["exit_growth"])
	assert.Less(t, figures["replace_growth"], int64(64<<10), "each message frees the one it replaces (20000 messages of ~130 bytes)")
	assert.Less(t, figures["exit_growth"], int64(64<<10), "a thread's message is freed when it exits (2000 messages of ~250 bytes)")
}
