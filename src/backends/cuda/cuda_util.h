/* cuda_util: host helpers over the CUDA runtime shared by the CUDA backend's C code and its checks:
 * errors as values, device buffers, device selection, and kernel timing for the benchmarks.
 *
 * Every function returns 0 or a negative err code with a message naming the call and the CUDA error. */
#ifndef LLM170_BACKENDS_CUDA_CUDA_UTIL_H
#define LLM170_BACKENDS_CUDA_CUDA_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "base/err.h"

/* rc != cudaSuccess: sets e ("WHAT: cuda error NAME (message)") and returns ERR_IO; else 0 */
int cu_check(cudaError_t rc, err *e, const char *what);

/* Selects device `dev` and writes its name, compute capability and memory into info (may be NULL). */
int cu_select_device(int dev, char *info, size_t info_size, err *e);

/* Device buffers. cu_alloc zeroes nothing; *p is NULL on failure. cu_free(NULL) is a no-op. */
int cu_alloc(void **p, size_t bytes, err *e);
int cu_upload(void **p, const void *host, size_t bytes, err *e); /* cu_alloc + copy */
int cu_download(void *host, const void *dev, size_t bytes, err *e); /* synchronous */
void cu_free(void *p);

/* Times a launch sequence for a benchmark: `launch(ctx, i)` enqueues one run on stream s using input set
 * i (callers rotate several copies of their inputs so that the timed runs read DRAM, not L2). The runs are
 * captured into one CUDA graph of `per_graph` launches (so host launch cost is not counted; what remains
 * is the kernel's time plus the graph's small gap between kernels), replayed after a warm-up, and the
 * median over `reps` replays divided by per_graph is written to *us. */
typedef int (*cu_launch_fn)(void *ctx, int i, cudaStream_t s);
int cu_time(cu_launch_fn launch, void *ctx, int n_inputs, double *us, err *e);

#endif
