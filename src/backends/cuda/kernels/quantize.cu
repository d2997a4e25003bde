/* quantize: activations to q8_1 for the integer GEMV, optionally fused with the rms norm that precedes
 * every projection of a decode step, or with the SwiGLU gate before the down projection (one launch
 * instead of two; the executor keeps the q8_1 rows for the matmuls that read them, cuda_matmul.c).
 *
 * Grid (ceil(K/256), T); block of 256 threads = 8 warps, warp w quantizing unit 8 * blockIdx.x + w (lane l
 * holding value l: amax and sum(q) are warp reductions, no shared memory). With the norm, every block
 * first reduces sum(x^2) over its whole row (the row is read from L2 once per block: K * 4 bytes, small
 * next to the weights of the projection that follows), so all of a row's units run in parallel.
 *   d = amax / 127, q = round(h / d) (0 when amax == 0), ds = (d, d * sum(q))
 * with IEEE division and round-half-away (roundf), the same operations as the host reference in the check,
 * so an unnormalised row quantizes bit-identically. */
#include <stdint.h>

#include "backends/cuda/kernels/cuda_common.cuh"

/* x[T][K] -> xq[T][K], ds[T][K/32][2] of h, where h is (MODE) Q_PLAIN: x; Q_NORM: x / sqrt(mean(x^2) + eps)
 * * w (w may be NULL), Q_NORM4 the same for rows on a 16-byte boundary (float4 loads; its own order of the
 * sum of squares); Q_SWIGLU: silu(x) * w with w[T][K] (x the gate, w the up projection; the same
 * operations as eltwise.cu's k_swiglu). h is also written to y[T][K] when y is not NULL (not Q_PLAIN). */
enum { Q_PLAIN, Q_NORM, Q_SWIGLU, Q_NORM4 };
template <int MODE>
__global__ void __launch_bounds__(256) k_quantize_q8_1(const float *__restrict__ x, const float *__restrict__ w,
                                                        float eps, int8_t *__restrict__ xq, float *__restrict__ ds,
                                                        float *__restrict__ y, int K) {
    pdl_enter();
    __shared__ float sh[32];
    const int t = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float *xr = x + (size_t)t * K;
    float inv = 1.0f;
    if (MODE == Q_NORM4) {
        /* the row's sum of squares from 16-byte loads, all in flight at once up to K = 8192: on the H200 the
         * kernel takes 2.2-2.4 us at K = 4096 / 5120 against 4.1-4.7 with one float a load (2026-12-06) */
        float ss = 0.0f;
        const float4 *x4 = (const float4 *)xr;
#pragma unroll 8
        for (int i = threadIdx.x; i < K / 4; i += blockDim.x) {
            const float4 v = x4[i];
            ss = __fadd_rn(ss, __fmul_rn(v.x, v.x));
            ss = __fadd_rn(ss, __fmul_rn(v.y, v.y));
            ss = __fadd_rn(ss, __fmul_rn(v.z, v.z));
            ss = __fadd_rn(ss, __fmul_rn(v.w, v.w));
        }
        ss = block_sum(ss, sh);
        inv = 1.0f / sqrtf(__fadd_rn(ss / (float)K, eps));
    }
    if (MODE == Q_NORM) {
        float ss = 0.0f;
#pragma unroll 8 /* the loads of 8 iterations in flight at once: a row is latency-bound, not bandwidth-bound */
        for (int i = threadIdx.x; i < K; i += blockDim.x) ss = __fadd_rn(ss, __fmul_rn(xr[i], xr[i]));
        ss = block_sum(ss, sh);
        inv = 1.0f / sqrtf(__fadd_rn(ss / (float)K, eps));
    }
    const int u = blockIdx.x * (blockDim.x >> 5) + warp;
    if (u < K / 32) {
        int i = u * 32 + lane;
        float h = xr[i];
        if (MODE == Q_NORM || MODE == Q_NORM4) {
            h = __fmul_rn(h, inv);
            if (w) h = __fmul_rn(h, w[i]);
        }
        if (MODE == Q_SWIGLU) h = __fmul_rn(h / __fadd_rn(1.0f, expf(-h)), w[(size_t)t * K + i]);
        if (MODE != Q_PLAIN && y) y[(size_t)t * K + i] = h;
        q8_1_unit(h, xq + (size_t)t * K + (size_t)u * 32, ds + ((size_t)t * (K / 32) + u) * 2);
    }
}

static int check_q8_args(const float *x, const int8_t *xq, const float *ds, int T, int K) {
    if (!x || !xq || !ds || T < 1 || K < 32 || K % 32 || ((uintptr_t)xq & 15)) return CUDA_KERR_ARGS;
    return CUDA_KERR_OK;
}

extern "C" int cuda_quantize_q8_1(const float *x, int8_t *xq, float *ds, int T, int K, cudaStream_t s) {
    int rc = check_q8_args(x, xq, ds, T, K);
    if (rc) return rc;
    kl(k_quantize_q8_1<Q_PLAIN>, dim3((K + 255) / 256, T), 256, 0, s, x, nullptr, 0.0f, xq, ds, nullptr, K);
    return launch_status();
}

extern "C" int cuda_rms_norm_q8_1(const float *x, const float *w, float eps, int8_t *xq, float *ds, float *y, int T,
                                  int K, cudaStream_t s) {
    int rc = check_q8_args(x, xq, ds, T, K);
    if (rc) return rc;
    if (!(eps >= 0.0f)) return CUDA_KERR_ARGS;
    /* rows on a 16-byte boundary (every executor buffer): the sum of squares from 16-byte loads */
    if (!((uintptr_t)x & 15)) kl(k_quantize_q8_1<Q_NORM4>, dim3((K + 255) / 256, T), 256, 0, s, x, w, eps, xq, ds, y, K);
    else kl(k_quantize_q8_1<Q_NORM>, dim3((K + 255) / 256, T), 256, 0, s, x, w, eps, xq, ds, y, K);
    return launch_status();
}

extern "C" int cuda_swiglu_q8_1(const float *g, const float *u, int8_t *xq, float *ds, float *y, int T, int K,
                                cudaStream_t s) {
    int rc = check_q8_args(g, xq, ds, T, K);
    if (rc) return rc;
    if (!u || !y) return CUDA_KERR_ARGS;
    kl(k_quantize_q8_1<Q_SWIGLU>, dim3((K + 255) / 256, T), 256, 0, s, g, u, 0.0f, xq, ds, y, K);
    return launch_status();
}
