/* cuda_common: small device helpers shared by the decode kernels (warp reductions, launch-status
 * mapping). Header-only; included by kernels/NAME.cu only. */
#ifndef LLM170_BACKENDS_CUDA_CUDA_COMMON_CUH
#define LLM170_BACKENDS_CUDA_CUDA_COMMON_CUH

#include <cuda_runtime.h>

#include "backends/cuda/kernels.h"

static __device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
static __device__ __forceinline__ int warp_sum_int(int v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static __device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* sum over a block of up to 1024 threads (every thread gets the result); sh: 32 floats of shared memory */
static __device__ __forceinline__ float block_sum(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads(); /* sh may still be read by a previous call */
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : 0.0f;
    return warp_sum(v);
}

/* the status of the launch just enqueued */
static inline int launch_status(void) { return cudaGetLastError() == cudaSuccess ? CUDA_KERR_OK : CUDA_KERR_LAUNCH; }

#endif
