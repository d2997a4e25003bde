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

/* q8_1 of one 32-value unit, value `lane` in each lane of the calling warp (all 32 lanes call it):
 * d = amax / 127, q = round(h / d) (0 when amax == 0), xq[lane] = q, ds2 = (d, d * sum(q)); IEEE division and
 * round-half-away, the operations of the host reference in the check */
static __device__ __forceinline__ void q8_1_unit(float h, int8_t *xq, float *ds2) {
    const int lane = threadIdx.x & 31;
    float amax = warp_max(fabsf(h));
    float d = amax / 127.0f, id = amax != 0.0f ? 1.0f / d : 0.0f;
    int q = (int)roundf(__fmul_rn(h, id));
    xq[lane] = (int8_t)q;
    int sq = warp_sum_int(q);
    if (lane == 0) {
        ds2[0] = d;
        ds2[1] = __fmul_rn(d, (float)sq);
    }
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

/* Programmatic dependent launch (sm_90 and later; docs/cuda.md, "Programmatic dependent launch"). Every
 * kernel is launched through kl(), which on such a device (unless LLM170_CUDA_PDL=0) lets the stream start
 * the next kernel's blocks before this one has finished, and every kernel begins with pdl_enter(): it waits
 * until the grid before it in the stream has completed and its writes are visible (so no kernel reads an
 * input or overwrites a buffer before its predecessor is done, and by induction before any earlier one),
 * then allows the kernel after it to be launched. What this saves is the launch latency between dependent
 * kernels, which in a decode step of ~1,000 small kernels is a large part of the step. On sm_80, and for a
 * kernel launched without the attribute, both instructions are no-ops. A kernel that reads memory before
 * pdl_enter() would race with its predecessor: tests/cuda/cli_cuda_kernels_covered.sh checks that every
 * kernel's first statement is pdl_enter() and that no kernel is launched with <<< >>>. */
static __device__ __forceinline__ void pdl_enter(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* The first statement of a kernel that loads weights before its pdl_enter(), so that their DRAM latency overlaps
 * the kernel before it: weights are written only when a model loads, before any pass, never by a kernel of a
 * pass, so no predecessor can be writing them. Such a kernel reads nothing else and writes nothing before it
 * reaches pdl_enter() (tests/cuda/cli_cuda_kernels_covered.sh accepts this marker in place of pdl_enter(), and
 * then wants pdl_enter() in the kernel too). Generates no code. */
static __device__ __forceinline__ void pdl_weights_first(void) {}

/* whether kl() launches with programmatic stream serialization on the current device (ops_misc.cu) */
int cuda_pdl_on(void);

/* launch kern<<<g, b, smem, s>>>(args...), with programmatic stream serialization where cuda_pdl_on() */
template <typename... P, typename... A>
static inline void kl(void (*kern)(P...), dim3 g, dim3 b, size_t smem, cudaStream_t s, A &&...args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = g;
    cfg.blockDim = b;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    if (cuda_pdl_on()) {
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
    }
    (void)cudaLaunchKernelEx(&cfg, kern, static_cast<A &&>(args)...); /* launch_status() reads the error */
}

/* the status of the launch just enqueued */
static inline int launch_status(void) { return cudaGetLastError() == cudaSuccess ? CUDA_KERR_OK : CUDA_KERR_LAUNCH; }

#endif
