/* norm: rms_norm over rows, for the norms that feed no GEMV directly (q/k per-head norms of qwen3 and
 * gemma3, gemma's post-norms, and the norms before the GEMM of a prompt); norms before a GEMV use the fused
 * rms_norm_q8_1 (quantize.cu). Grid: one block per row of x[R][C]; 256 threads (C <= 256: 32 * ceil(C / 32))
 * reduce sum(x^2) in float, then scale. With yb (cuda_rms_norm_bf16) each output is also written as bf16
 * (round to nearest even, as cuda_f32_to_bf16 would make it from y): the GEMM's input without its own
 * conversion launch. */
#include <cuda_bf16.h>

#include "backends/cuda/kernels/cuda_common.cuh"

__global__ void __launch_bounds__(256) k_rms_norm(const float *__restrict__ x, const float *__restrict__ w,
                                                  float *y, __nv_bfloat16 *yb, int C, float eps) {
    pdl_enter();
    __shared__ float sh[32];
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;
    __nv_bfloat16 *ybr = yb ? yb + (size_t)blockIdx.x * C : NULL;
    float ss = 0.0f;
#pragma unroll 8 /* the loads of 8 iterations in flight at once: a row is latency-bound, not bandwidth-bound */
    for (int i = threadIdx.x; i < C; i += blockDim.x) ss = __fadd_rn(ss, __fmul_rn(xr[i], xr[i]));
    ss = block_sum(ss, sh);
    float inv = 1.0f / sqrtf(__fadd_rn(ss / (float)C, eps));
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float h = __fmul_rn(xr[i], inv);
        h = w ? __fmul_rn(h, w[i]) : h;
        yr[i] = h;
        if (ybr) ybr[i] = __float2bfloat16_rn(h);
    }
}

extern "C" int cuda_rms_norm(const float *x, const float *w, float *y, int R, int C, float eps, cudaStream_t s) {
    if (!x || !y || R < 1 || C < 1 || !(eps >= 0.0f)) return CUDA_KERR_ARGS;
    int threads = C >= 256 ? 256 : 32 * ((C + 31) / 32);
    kl(k_rms_norm, R, threads, 0, s, x, w, y, (__nv_bfloat16 *)NULL, C, eps);
    return launch_status();
}

extern "C" int cuda_rms_norm_bf16(const float *x, const float *w, float *y, uint16_t *yb, int R, int C, float eps,
                                  cudaStream_t s) {
    if (!x || !y || !yb || R < 1 || C < 1 || !(eps >= 0.0f)) return CUDA_KERR_ARGS;
    int threads = C >= 256 ? 256 : 32 * ((C + 31) / 32);
    kl(k_rms_norm, R, threads, 0, s, x, w, y, (__nv_bfloat16 *)yb, C, eps);
    return launch_status();
}
