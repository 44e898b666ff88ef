// Counts, per rank, the MPI calls a program makes and the payload they carry, through the
// MPI profiling interface (PMPI): LD_PRELOAD=libmpi_count.so mpiexec ... The counts are
// written at MPI_Finalize to $MPI_COUNT_DIR/rank_<world rank>.json.
//
// "bytes" is the payload handed to the call by this rank (count × type size of its send
// buffer; for Bcast the root's buffer counts on the root only, receivers count 0): what
// the program asks to move, not what the library's algorithm puts on the wire (a tree
// Allreduce sends its payload log2(P) times, a ring one ~2×). Receives are not counted.
// Calls made inside the MPI library itself (MPI-IO's internal collectives) are not seen.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  kAllreduce,
  kReduce,
  kBcast,
  kBarrier,
  kIbarrier,
  kGather,
  kGatherv,
  kAllgather,
  kAllgatherv,
  kSend,
  kSendrecv,
  kFetchAndOp,
  kCount
};
static const char* kNames[kCount] = {"Allreduce",  "Reduce", "Bcast",    "Barrier",
                                     "Ibarrier",   "Gather", "Gatherv",  "Allgather",
                                     "Allgatherv", "Send",   "Sendrecv", "Fetch_and_op"};
static long long g_calls[kCount];
static long long g_bytes[kCount];

static long long Bytes(int count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  return (long long)count * size;
}
static void Note(int which, long long bytes) {
  g_calls[which] += 1;
  g_bytes[which] += bytes;
}

int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  Note(kAllreduce, Bytes(n, t));
  return PMPI_Allreduce(s, r, n, t, op, c);
}
int MPI_Reduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  Note(kReduce, Bytes(n, t));
  return PMPI_Reduce(s, r, n, t, op, root, c);
}
int MPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  int rank = 0;
  PMPI_Comm_rank(c, &rank);
  Note(kBcast, rank == root ? Bytes(n, t) : 0);
  return PMPI_Bcast(b, n, t, root, c);
}
int MPI_Barrier(MPI_Comm c) {
  Note(kBarrier, 0);
  return PMPI_Barrier(c);
}
int MPI_Ibarrier(MPI_Comm c, MPI_Request* q) {
  Note(kIbarrier, 0);
  return PMPI_Ibarrier(c, q);
}
int MPI_Gather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, int root,
               MPI_Comm c) {
  Note(kGather, Bytes(sn, st));
  return PMPI_Gather(s, sn, st, r, rn, rt, root, c);
}
int MPI_Gatherv(const void* s, int sn, MPI_Datatype st, void* r, const int* rn, const int* d,
                MPI_Datatype rt, int root, MPI_Comm c) {
  Note(kGatherv, Bytes(sn, st));
  return PMPI_Gatherv(s, sn, st, r, rn, d, rt, root, c);
}
int MPI_Allgather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt,
                  MPI_Comm c) {
  Note(kAllgather, Bytes(sn, st));
  return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}
int MPI_Allgatherv(const void* s, int sn, MPI_Datatype st, void* r, const int* rn, const int* d,
                   MPI_Datatype rt, MPI_Comm c) {
  Note(kAllgatherv, Bytes(sn, st));
  return PMPI_Allgatherv(s, sn, st, r, rn, d, rt, c);
}
int MPI_Send(const void* b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  Note(kSend, Bytes(n, t));
  return PMPI_Send(b, n, t, dest, tag, c);
}
int MPI_Sendrecv(const void* s, int sn, MPI_Datatype st, int dest, int stag, void* r, int rn,
                 MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status* status) {
  Note(kSendrecv, Bytes(sn, st));
  return PMPI_Sendrecv(s, sn, st, dest, stag, r, rn, rt, src, rtag, c, status);
}
int MPI_Fetch_and_op(const void* o, void* r, MPI_Datatype t, int rank, MPI_Aint disp, MPI_Op op,
                     MPI_Win w) {
  Note(kFetchAndOp, Bytes(1, t));
  return PMPI_Fetch_and_op(o, r, t, rank, disp, op, w);
}

int MPI_Finalize(void) {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char* dir = getenv("MPI_COUNT_DIR");
  if (dir != NULL) {
    char path[4096];
    snprintf(path, sizeof path, "%s/rank_%d.json", dir, rank);
    FILE* f = fopen(path, "w");
    if (f != NULL) {
      fprintf(f, "{\"rank\": %d, \"calls\": {", rank);
      for (int i = 0; i < kCount; ++i) {
        fprintf(f, "%s\"%s\": [%lld, %lld]", i ? ", " : "", kNames[i], g_calls[i], g_bytes[i]);
      }
      fprintf(f, "}}\n");
      fclose(f);
    }
  }
  return PMPI_Finalize();
}
