// binding.h: the C functions of package mpi (binding.c).
#ifndef CUARRAY_MPI_BINDING_H
#define CUARRAY_MPI_BINDING_H
#include <stdint.h>
#include <stdlib.h>
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

int cu_init(int *provided);
MPI_Comm cu_world(void);
int cu_errors_return(MPI_Comm c);
int cu_cuda_aware(void);
int cu_local_comm(MPI_Comm c, MPI_Comm *out);
int cu_barrier(MPI_Comm c);
int cu_abort(MPI_Comm c, int code);
int cu_type_span(long long off, int chunk, int chunks, int rest, MPI_Datatype *out);
int cu_type_free(MPI_Datatype *t);
MPI_Datatype cu_byte(void);
int cu_send(uintptr_t p, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c);
int cu_recv(uintptr_t p, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, long long *got);
int cu_alltoallv(uintptr_t s, int *sc, int *sd, uintptr_t r, int *rc, int *rd, MPI_Comm c);
int cu_alltoallw(uintptr_t s, int *sc, int *sd, MPI_Datatype *st, uintptr_t r, int *rc, int *rd, MPI_Datatype *rt, MPI_Comm c);
int cu_allreduce_i64(long long *in, long long *out, int n, int max, MPI_Comm c);
int cu_allgather_i64(long long v, long long *out, MPI_Comm c);
int cu_gatherv(uintptr_t s, int n, uintptr_t r, int *rc, int *rd, int root, MPI_Comm c);
int cu_bcast(uintptr_t p, int n, int root, MPI_Comm c);
void cu_error_string(int code, char *buf);
int cu_file_open(MPI_Comm c, const char *path, int write, MPI_File *fh);
int cu_file_write_at_all(MPI_File fh, long long off, uintptr_t p, int count, MPI_Datatype t);
int cu_file_read_at_all(MPI_File fh, long long off, uintptr_t p, int count, MPI_Datatype t, long long *got);
int cu_file_set_size(MPI_File fh, long long n);
int cu_file_size(MPI_File fh, long long *n);
int cu_file_close(MPI_File *fh);
int cu_type_span_info(long long off, int chunk, int chunks, int rest, long long *size, long long *lb, long long *extent);

#endif
