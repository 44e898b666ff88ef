// Latency of the collectives homodyne-hpc uses per iteration, between the ranks of
// MPI_COMM_WORLD: MPI_Allreduce (double sum), MPI_Reduce + MPI_Bcast (the normal-equation
// reduction), MPI_Bcast, MPI_Barrier, for payloads from 8 B to 256 KiB. Per size: `reps`
// timed calls after `reps/10` warm-up calls, each started after a barrier and timed on every
// rank (the slowest rank's time counts); the median, minimum and 90th percentile are printed as
// JSON lines (one per operation and size).
//   coll_latency [reps]        (default 400)
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int Cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int reps = argc > 1 ? atoi(argv[1]) : 400;
  const int max_n = 32768;  // doubles: 256 KiB
  double* a = calloc(max_n, sizeof(double));
  double* b = calloc(max_n, sizeof(double));
  double* t = calloc(reps, sizeof(double));
  char host[256];
  gethostname(host, sizeof host);
  char* hosts = rank == 0 ? malloc(256 * (size_t)size) : NULL;
  MPI_Gather(host, 256, MPI_CHAR, hosts, 256, MPI_CHAR, 0, MPI_COMM_WORLD);
  const char* ops[] = {"allreduce", "reduce+bcast", "bcast", "barrier"};
  for (int op = 0; op < 4; ++op) {
    for (int n = 1; n <= max_n; n *= 8) {
      if (op == 3 && n > 1) break;
      const int warm = reps / 10;
      for (int i = -warm; i < reps; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        switch (op) {
          case 0:
            MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            break;
          case 1:
            MPI_Reduce(a, b, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            MPI_Bcast(b, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            break;
          case 2:
            MPI_Bcast(a, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            break;
          default:
            MPI_Barrier(MPI_COMM_WORLD);
            break;
        }
        // The call's time on the slowest rank.
        double dt = MPI_Wtime() - t0, worst = 0;
        MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (i >= 0) t[i] = worst;
      }
      if (rank == 0) {
        qsort(t, reps, sizeof(double), Cmp);
        printf("{\"op\": \"%s\", \"bytes\": %d, \"ranks\": %d, \"hosts\": [", ops[op],
               op == 3 ? 0 : n * 8, size);
        for (int r = 0; r < size; ++r) printf("%s\"%s\"", r ? ", " : "", hosts + 256 * r);
        printf("], \"reps\": %d, \"median_us\": %.3f, \"min_us\": %.3f, \"p90_us\": %.3f}\n", reps,
               1e6 * t[reps / 2], 1e6 * t[0], 1e6 * t[(reps * 9) / 10]);
        fflush(stdout);
      }
    }
  }
  free(a);
  free(b);
  free(t);
  free(hosts);
  MPI_Finalize();
  return 0;
}
