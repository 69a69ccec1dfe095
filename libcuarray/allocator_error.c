// The allocator's last error, one per calling thread, as errno is: PyTorch
// and CuPy call the allocator's entry points from many threads, and a
// thread reads the message of its own failure, never another thread's.
// The Go side sets it from inside the exported entry points, which run on
// the calling C thread, as does every cgo call they make.
//
// The message lives under a pthread key, not a __thread variable, so that
// the key's destructor frees it when the thread exits: a thread pool whose
// threads come and go leaks nothing. Both functions are hidden: they are
// libcuarray's own, not part of its C interface.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_key_t error_key;
static pthread_once_t error_once = PTHREAD_ONCE_INIT;
static int error_key_ok;

static void make_error_key(void) { error_key_ok = pthread_key_create(&error_key, free) == 0; }

// cuarray_allocator_set_error makes msg (malloc'd; the thread's key owns
// it from here, NULL forgets the message) the calling thread's last error,
// and frees the one it replaces.
__attribute__((visibility("hidden"))) void cuarray_allocator_set_error(char *msg) {
	pthread_once(&error_once, make_error_key);
	if (!error_key_ok) {
		free(msg);
		return;
	}
	char *old = pthread_getspecific(error_key);
	if (old == msg) {
		return;
	}
	if (pthread_setspecific(error_key, msg) != 0) {
		free(msg); // the old message stays the thread's
		return;
	}
	free(old);
}

// cuarray_allocator_get_error returns the calling thread's last error, a
// malloc'd string the caller frees, or NULL for none; clear forgets it for
// this thread (and hands over the thread's own copy).
__attribute__((visibility("hidden"))) char *cuarray_allocator_get_error(int clear) {
	pthread_once(&error_once, make_error_key);
	if (!error_key_ok) {
		return NULL;
	}
	char *msg = pthread_getspecific(error_key);
	if (msg == NULL) {
		return NULL;
	}
	if (clear) {
		if (pthread_setspecific(error_key, NULL) == 0) {
			return msg;
		}
	}
	return strdup(msg);
}
