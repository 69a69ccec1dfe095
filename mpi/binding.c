//go:build mpi

// binding.c: the C side of package mpi, one small function per MPI call
// (macros such as MPI_COMM_WORLD are not reachable from cgo).

#include "binding.h"

int cu_init(int *provided) { return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided); }
MPI_Comm cu_world(void) { return MPI_COMM_WORLD; }
int cu_errors_return(MPI_Comm c) { return MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN); }
int cu_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
	return MPIX_Query_cuda_support();
#else
	return 0;
#endif
}
int cu_local_comm(MPI_Comm c, MPI_Comm *out) {
	return MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, out);
}
int cu_barrier(MPI_Comm c) { return MPI_Barrier(c); }
int cu_abort(MPI_Comm c, int code) { return MPI_Abort(c, code); }

// cu_type_span builds the datatype of a Layout: chunks blocks of chunk
// bytes at byte off, then rest bytes.
int cu_type_span(long long off, int chunk, int chunks, int rest, MPI_Datatype *out) {
	MPI_Datatype chunkT = MPI_DATATYPE_NULL;
	int lens[2], n = 0, err;
	MPI_Aint disps[2];
	MPI_Datatype types[2];
	if (chunks > 0) {
		err = MPI_Type_contiguous(chunk, MPI_BYTE, &chunkT);
		if (err != MPI_SUCCESS) return err;
		lens[n] = chunks; disps[n] = (MPI_Aint)off; types[n] = chunkT; n++;
	}
	if (rest > 0) {
		lens[n] = rest; disps[n] = (MPI_Aint)off + (MPI_Aint)chunk * (MPI_Aint)chunks; types[n] = MPI_BYTE; n++;
	}
	err = MPI_Type_create_struct(n, lens, disps, types, out);
	if (chunkT != MPI_DATATYPE_NULL) MPI_Type_free(&chunkT);
	if (err != MPI_SUCCESS) return err;
	return MPI_Type_commit(out);
}
int cu_type_free(MPI_Datatype *t) { return MPI_Type_free(t); }
MPI_Datatype cu_byte(void) { return MPI_BYTE; }

int cu_send(uintptr_t p, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
	return MPI_Send((void *)p, count, t, dest, tag, c);
}
int cu_recv(uintptr_t p, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, long long *got) {
	MPI_Status st;
	MPI_Count n = 0;
	int err = MPI_Recv((void *)p, count, t, src, tag, c, &st);
	if (err != MPI_SUCCESS) return err;
	err = MPI_Get_elements_x(&st, t, &n);
	*got = (long long)n;
	return err;
}
int cu_alltoallv(uintptr_t s, int *sc, int *sd, uintptr_t r, int *rc, int *rd, MPI_Comm c) {
	return MPI_Alltoallv((void *)s, sc, sd, MPI_BYTE, (void *)r, rc, rd, MPI_BYTE, c);
}
int cu_alltoallw(uintptr_t s, int *sc, int *sd, MPI_Datatype *st, uintptr_t r, int *rc, int *rd, MPI_Datatype *rt, MPI_Comm c) {
	return MPI_Alltoallw((void *)s, sc, sd, st, (void *)r, rc, rd, rt, c);
}
int cu_allreduce_i64(long long *in, long long *out, int n, int max, MPI_Comm c) {
	return MPI_Allreduce(in, out, n, MPI_LONG_LONG, max ? MPI_MAX : MPI_SUM, c);
}
int cu_allgather_i64(long long v, long long *out, MPI_Comm c) {
	return MPI_Allgather(&v, 1, MPI_LONG_LONG, out, 1, MPI_LONG_LONG, c);
}
int cu_gatherv(uintptr_t s, int n, uintptr_t r, int *rc, int *rd, int root, MPI_Comm c) {
	return MPI_Gatherv((void *)s, n, MPI_BYTE, (void *)r, rc, rd, MPI_BYTE, root, c);
}
int cu_bcast(uintptr_t p, int n, int root, MPI_Comm c) { return MPI_Bcast((void *)p, n, MPI_BYTE, root, c); }
void cu_error_string(int code, char *buf) {
	int n = 0;
	if (MPI_Error_string(code, buf, &n) != MPI_SUCCESS) n = 0;
	buf[n] = 0;
}

int cu_file_open(MPI_Comm c, const char *path, int write, MPI_File *fh) {
	int amode = write ? (MPI_MODE_CREATE | MPI_MODE_WRONLY) : MPI_MODE_RDONLY;
	return MPI_File_open(c, path, amode, MPI_INFO_NULL, fh);
}
int cu_file_write_at_all(MPI_File fh, long long off, uintptr_t p, int count, MPI_Datatype t) {
	MPI_Status st;
	return MPI_File_write_at_all(fh, (MPI_Offset)off, (void *)p, count, t, &st);
}
int cu_file_read_at_all(MPI_File fh, long long off, uintptr_t p, int count, MPI_Datatype t, long long *got) {
	MPI_Status st;
	MPI_Count n = 0;
	int err = MPI_File_read_at_all(fh, (MPI_Offset)off, (void *)p, count, t, &st);
	if (err != MPI_SUCCESS) return err;
	err = MPI_Get_elements_x(&st, t, &n);
	*got = (long long)n;
	return err;
}
int cu_file_set_size(MPI_File fh, long long n) { return MPI_File_set_size(fh, (MPI_Offset)n); }
int cu_file_size(MPI_File fh, long long *n) {
	MPI_Offset s;
	int err = MPI_File_get_size(fh, &s);
	*n = (long long)s;
	return err;
}
int cu_file_close(MPI_File *fh) { return MPI_File_close(fh); }

int cu_type_span_info(long long off, int chunk, int chunks, int rest, long long *size, long long *lb, long long *extent) {
	MPI_Datatype t;
	MPI_Count s, l, e;
	int err = cu_type_span(off, chunk, chunks, rest, &t);
	if (err != MPI_SUCCESS) return err;
	err = MPI_Type_size_x(t, &s);
	if (err == MPI_SUCCESS) err = MPI_Type_get_true_extent_x(t, &l, &e);
	MPI_Type_free(&t);
	*size = (long long)s; *lb = (long long)l; *extent = (long long)e;
	return err;
}
