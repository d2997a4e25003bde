/* eltwise: the element-wise ops of a decode step: SwiGLU and GeGLU gates, the sigmoid output gate of
 * qwen35 attention, and the residual add. Grid-stride loops over n values, 256 threads a block, float4
 * loads where n and the pointers allow (the launchers pick). Float products are written with
 * __fmul_rn/__fadd_rn (no FFMA contraction). */
#include <cuda_bf16.h>
#include <stdint.h>

#include "backends/cuda/kernels/cuda_common.cuh"

static __device__ __forceinline__ float silu(float g) { return g / __fadd_rn(1.0f, expf(-g)); }
static __device__ __forceinline__ float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi), as ref_geglu */
    float in = __fmul_rn(k, __fadd_rn(x, __fmul_rn(__fmul_rn(__fmul_rn(0.044715f, x), x), x)));
    return __fmul_rn(__fmul_rn(0.5f, x), __fadd_rn(1.0f, tanhf(in)));
}
static __device__ __forceinline__ float sigmoid(float g) { return 1.0f / __fadd_rn(1.0f, expf(-g)); }

/* yb (cuda_swiglu_bf16): each output also as bf16, round to nearest even (cuda_f32_to_bf16's of y) */
__global__ void k_swiglu(const float *g, const float *u, float *y, __nv_bfloat16 *yb, int64_t n) {
    pdl_enter();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = __fmul_rn(silu(g[i]), u[i]);
        y[i] = v;
        if (yb) yb[i] = __float2bfloat16_rn(v);
    }
}
__global__ void k_geglu(const float *g, const float *u, float *y, int64_t n) {
    pdl_enter();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fmul_rn(gelu_tanh(g[i]), u[i]);
}
__global__ void k_sigmoid_mul(float *y, const float *gate, int64_t n) {
    pdl_enter();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fmul_rn(y[i], sigmoid(gate[i]));
}
/* y += x, four values a thread (n4 = n / 4 float4s; the tail of n % 4 by the first threads) */
__global__ void k_add(float *__restrict__ y, const float *__restrict__ x, int64_t n) {
    pdl_enter();
    int64_t n4 = n / 4;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 a = ((float4 *)y)[i], b = ((const float4 *)x)[i];
        a.x = __fadd_rn(a.x, b.x), a.y = __fadd_rn(a.y, b.y), a.z = __fadd_rn(a.z, b.z), a.w = __fadd_rn(a.w, b.w);
        ((float4 *)y)[i] = a;
    }
    int64_t i = n4 * 4 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = __fadd_rn(y[i], x[i]);
}

static unsigned grid_for(int64_t n) {
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

extern "C" int cuda_swiglu(const float *g, const float *u, float *y, int64_t n, cudaStream_t s) {
    if (!g || !u || !y || n < 1) return CUDA_KERR_ARGS;
    kl(k_swiglu, grid_for(n), 256, 0, s, g, u, y, (__nv_bfloat16 *)NULL, n);
    return launch_status();
}
extern "C" int cuda_swiglu_bf16(const float *g, const float *u, float *y, uint16_t *yb, int64_t n, cudaStream_t s) {
    if (!g || !u || !y || !yb || n < 1) return CUDA_KERR_ARGS;
    kl(k_swiglu, grid_for(n), 256, 0, s, g, u, y, (__nv_bfloat16 *)yb, n);
    return launch_status();
}
extern "C" int cuda_geglu(const float *g, const float *u, float *y, int64_t n, cudaStream_t s) {
    if (!g || !u || !y || n < 1) return CUDA_KERR_ARGS;
    kl(k_geglu, grid_for(n), 256, 0, s, g, u, y, n);
    return launch_status();
}
extern "C" int cuda_sigmoid_mul(float *y, const float *gate, int64_t n, cudaStream_t s) {
    if (!y || !gate || n < 1) return CUDA_KERR_ARGS;
    kl(k_sigmoid_mul, grid_for(n), 256, 0, s, y, gate, n);
    return launch_status();
}
extern "C" int cuda_add(float *y, const float *x, int64_t n, cudaStream_t s) {
    if (!y || !x || n < 1 || ((uintptr_t)y & 15) || ((uintptr_t)x & 15)) return CUDA_KERR_ARGS;
    kl(k_add, grid_for((n + 3) / 4), 256, 0, s, y, x, n);
    return launch_status();
}
