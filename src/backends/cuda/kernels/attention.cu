/* attention: causal GQA softmax attention over a cache of any of the engine's cache types (F32, F16, BF16,
 * Q8_0), with arbitrary query and key positions (ref_attention). The executor's general path: decode over
 * an F16 cache goes to the split-K kernel (attn_decode.cu) and prefill over an F16 cache to flash attention
 * (flash_attn_prefill.cu); this kernel serves the other cache types and shapes.
 *
 * Grid: one warp per (query t, head h), 4 warps a block. The warp walks the S keys once with an online
 * softmax (running max m, sum l, output acc rescaled by exp(m_old - m_new)); lane l holds dims l, l + 32,
 * ... (D <= 256: at most 8 per lane). Keys are converted to f32 as they are read (Q8_0: a row of Hkv * D
 * values is blocks of 32: 2 bytes of f16 scale, then 32 int8). No visible key: output 0, as the
 * reference. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "backends/cuda/kernels/cuda_common.cuh"

#define ATT_MAXD 256

template <int CT>
static __device__ __forceinline__ float cache_at(const void *c, int64_t row, int64_t rowlen, int64_t e) {
    if (CT == QT_F32) return ((const float *)c)[row * rowlen + e];
    if (CT == QT_F16) return __half2float(((const __half *)c)[row * rowlen + e]);
    if (CT == QT_BF16) return __bfloat162float(((const __nv_bfloat16 *)c)[row * rowlen + e]);
    /* Q8_0 */
    const uint8_t *blk = (const uint8_t *)c + row * (rowlen / 32) * 34 + (e / 32) * 34;
    return __half2float(*(const __half *)blk) * (float)(int8_t)blk[2 + e % 32];
}

template <int CK, int CV>
__global__ void __launch_bounds__(128)
    k_attention(const float *__restrict__ q, const void *__restrict__ k, const void *__restrict__ v,
                float *__restrict__ out, const int32_t *__restrict__ qpos, const int32_t *__restrict__ kpos, int T,
                int S, int Hq, int Hkv, int D, float scale, int window) {
    pdl_enter();
    const int lane = threadIdx.x & 31;
    const int64_t w = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (w >= (int64_t)T * Hq) return;
    const int t = (int)(w / Hq), h = (int)(w % Hq), kvh = h / (Hq / Hkv);
    const int64_t rowlen = (int64_t)Hkv * D, base = (int64_t)kvh * D;
    const float *qh = q + w * D;
    float qv[ATT_MAXD / 32], acc[ATT_MAXD / 32];
#pragma unroll
    for (int i = 0; i < ATT_MAXD / 32; i++) {
        const int d = lane + 32 * i;
        qv[i] = d < D ? qh[d] : 0.0f;
        acc[i] = 0.0f;
    }
    const int qp = qpos[t];
    float m = -INFINITY, l = 0.0f;
    for (int s = 0; s < S; s++) {
        const int kp = kpos[s];
        if (kp > qp || (window > 0 && qp - kp >= window)) continue; /* warp-uniform */
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < ATT_MAXD / 32; i++) {
            const int d = lane + 32 * i;
            if (d < D) dot = fmaf(qv[i], cache_at<CK>(k, s, rowlen, base + d), dot);
        }
        const float sc = warp_sum(dot) * scale;
        const float mn = fmaxf(m, sc), corr = expf(m - mn), p = expf(sc - mn);
        l = l * corr + p;
#pragma unroll
        for (int i = 0; i < ATT_MAXD / 32; i++) {
            const int d = lane + 32 * i;
            if (d < D) acc[i] = fmaf(p, cache_at<CV>(v, s, rowlen, base + d), acc[i] * corr);
        }
        m = mn;
    }
    float *oh = out + w * D;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (int i = 0; i < ATT_MAXD / 32; i++) {
        const int d = lane + 32 * i;
        if (d < D) oh[d] = acc[i] * inv;
    }
}

template <int CK>
static int launch_v(int tv, dim3 g, const float *q, const void *k, const void *v, float *out, const int32_t *qpos,
                    const int32_t *kpos, int T, int S, int Hq, int Hkv, int D, float scale, int window,
                    cudaStream_t s) {
#define AV(CV) kl(k_attention<CK, CV>, g, 128, 0, s, q, k, v, out, qpos, kpos, T, S, Hq, Hkv, D, scale, window)
    switch (tv) {
    case QT_F32: AV(QT_F32); break;
    case QT_F16: AV(QT_F16); break;
    case QT_BF16: AV(QT_BF16); break;
    case QT_Q8_0: AV(QT_Q8_0); break;
    default: return CUDA_KERR_UNSUPPORTED;
    }
#undef AV
    return launch_status();
}

extern "C" int cuda_attention(const float *q, const void *k, const void *v, int tk, int tv, float *out,
                              const int32_t *qpos, const int32_t *kpos, int T, int S, int Hq, int Hkv, int D,
                              float scale, int window, cudaStream_t s) {
    if (!q || !k || !v || !out || !qpos || !kpos || T < 0 || S < 0 || Hq < 1 || Hkv < 1 || Hq % Hkv || D < 1 ||
        D > ATT_MAXD || window < 0 || ((tk == QT_Q8_0 || tv == QT_Q8_0) && ((int64_t)Hkv * D) % 32))
        return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    const int64_t warps = (int64_t)T * Hq;
    if ((warps + 3) / 4 > 0x7fffffff) return CUDA_KERR_ARGS;
    dim3 g((unsigned)((warps + 3) / 4));
    switch (tk) {
    case QT_F32: return launch_v<QT_F32>(tv, g, q, k, v, out, qpos, kpos, T, S, Hq, Hkv, D, scale, window, s);
    case QT_F16: return launch_v<QT_F16>(tv, g, q, k, v, out, qpos, kpos, T, S, Hq, Hkv, D, scale, window, s);
    case QT_BF16: return launch_v<QT_BF16>(tv, g, q, k, v, out, qpos, kpos, T, S, Hq, Hkv, D, scale, window, s);
    case QT_Q8_0: return launch_v<QT_Q8_0>(tv, g, q, k, v, out, qpos, kpos, T, S, Hq, Hkv, D, scale, window, s);
    default: return CUDA_KERR_UNSUPPORTED;
    }
}
