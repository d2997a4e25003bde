/* flash_attn_prefill: causal GQA softmax attention of T new queries over an f16 KV cache, on tensor cores,
 * without a T x S score matrix (FlashAttention-2: online softmax over key tiles, scores in registers).
 *
 * Shapes: q f32 [T][Hq][D] (rounded to f16 on load), k/v f16 [S][Hkv][D] (the cache: slot s holds position
 * s), out f32 [T][Hq][D]. Query t sits at position pos0 + t; key s is visible to it iff s <= pos0 + t and,
 * with a sliding window (window > 0), pos0 + t - s < window: ref_attention with qpos[t] = pos0 + t,
 * kpos[s] = s. Query head h reads kv head h / (Hq / Hkv). D = 64, 128 or 256.
 *
 * Mapping (fa_prefill_kernel<D, NW>): one block of NW warps per (16 NW-query tile, query head); warp w owns
 * query rows 16w..16w+15 of the tile. NW = 8 (128 queries share each K/V tile) for D = 256 where shared
 * memory allows (sm_90), else 4. Key/value tiles of 64 rows stream through shared memory double-buffered
 * by cp.async; per tile a warp computes its 16 x 64 scores with mma.sync m16n8k16 (f16 in, f32 out),
 * masks them, updates the running max and sum in the log2 domain, turns the probabilities into f16
 * A fragments in registers (the accumulator layout of m16n8 is the A layout of m16n8k16) and accumulates
 * P.V into its 16 x D f32 output. Query tiles are issued last-first so the long causal rows start early.
 * Only the key tiles a query tile can see are visited (the causal bound, and the window's lower bound).
 * Shared rows are D f16 wide and swizzled in 16-byte chunks (chunk c of row r at c ^ (r & 7)). */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "backends/cuda/kernels.h"
#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/prefill_mma.cuh"

#define FA_BKV 64

/* byte offset of 16-byte chunk c of row r in a tile of rows of D halves */
template <int D> __device__ __forceinline__ uint32_t fa_swz(int r, int c) {
    return (uint32_t)(r * (D * 2) + ((c ^ (r & 7)) << 4));
}

__device__ __forceinline__ uint32_t fa_pack_h2(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    return *(uint32_t *)&h;
}

template <int D, int NT>
__device__ __forceinline__ void fa_load_kv(uint8_t *ks, uint8_t *vs, const __half *k, const __half *v, int kv0, int S,
                                           int Hkv, int kvh) {
    const uint32_t kb = pf_smem_addr(ks), vb = pf_smem_addr(vs);
    for (int i = threadIdx.x; i < FA_BKV * (D / 8); i += NT) {
        const int r = i / (D / 8), c = i % (D / 8), s = kv0 + r;
        const size_t off = ((size_t)s * Hkv + kvh) * D + 8 * c;
        pf_cp_async16(kb + fa_swz<D>(r, c), s < S ? k + off : k, s < S ? 16 : 0);
        pf_cp_async16(vb + fa_swz<D>(r, c), s < S ? v + off : v, s < S ? 16 : 0);
    }
}

/* grid (ceil(T / (16 NW)), Hq), 32 NW threads, (16 NW + 2 * 2 * 64) * D * 2 bytes of dynamic shared memory */
template <int D, int NW>
__global__ void __launch_bounds__(NW * 32)
    fa_prefill_kernel(const float *__restrict__ q, const __half *__restrict__ k, const __half *__restrict__ v,
                      float *__restrict__ out, int T, int S, int Hq, int Hkv, int pos0, int window, float scale_log2,
                      const int32_t *__restrict__ pos0_p) {
    pdl_enter();
    enum { BQ = 16 * NW, NT = 32 * NW };
    extern __shared__ __align__(128) uint8_t smem[];
    uint8_t *qs = smem, *kvs = smem + BQ * D * 2; /* kvs: [stage][K | V][64][D] */
    const int m0 = (gridDim.x - 1 - blockIdx.x) * BQ, h = blockIdx.y, kvh = h / (Hq / Hkv);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (pos0_p) pos0 = *pos0_p; /* the first query's position on the device (the executor's calls) */

    /* the key range this tile can see */
    const int last_pos = pos0 + min(T, m0 + BQ) - 1;
    const int kv_end = min(S, last_pos + 1);
    int kv_begin = window > 0 ? max(0, pos0 + m0 - window + 1) : 0;
    kv_begin -= kv_begin % FA_BKV;
    const int ntiles = kv_end > kv_begin ? (kv_end - kv_begin + FA_BKV - 1) / FA_BKV : 0;

    if (ntiles > 0) fa_load_kv<D, NT>(kvs, kvs + FA_BKV * D * 2, k, v, kv_begin, S, Hkv, kvh);
    pf_cp_async_commit();

    /* the query tile, f32 -> f16 */
    for (int i = threadIdx.x; i < BQ * (D / 8); i += NT) {
        const int r = i / (D / 8), c = i % (D / 8), t = m0 + r;
        uint4 pk = make_uint4(0, 0, 0, 0);
        if (t < T) {
            const float4 *src = (const float4 *)(q + ((size_t)t * Hq + h) * D + 8 * c);
            float4 a = src[0], b = src[1];
            pk = make_uint4(fa_pack_h2(a.x, a.y), fa_pack_h2(a.z, a.w), fa_pack_h2(b.x, b.y), fa_pack_h2(b.z, b.w));
        }
        *(uint4 *)(qs + fa_swz<D>(r, c)) = pk;
    }

    float o[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    float mrow[2] = {-INFINITY, -INFINITY}, lrow[2] = {0.f, 0.f};
    const int g = lane >> 2, c4 = lane & 3;
    const int qpos[2] = {pos0 + m0 + warp * 16 + g, pos0 + m0 + warp * 16 + g + 8};
    const uint32_t q_base = pf_smem_addr(qs);

    for (int j = 0; j < ntiles; j++) {
        const int kv0 = kv_begin + j * FA_BKV;
        uint8_t *kst = kvs + (j & 1) * 2 * FA_BKV * D * 2, *vst = kst + FA_BKV * D * 2;
        pf_cp_async_wait<0>();
        __syncthreads(); /* tile j resident, and every warp done with tile j-1 (its buffer is refilled now) */
        if (j + 1 < ntiles) {
            uint8_t *kn = kvs + ((j + 1) & 1) * 2 * FA_BKV * D * 2;
            fa_load_kv<D, NT>(kn, kn + FA_BKV * D * 2, k, v, kv0 + FA_BKV, S, Hkv, kvh);
        }
        pf_cp_async_commit();

        /* scores s = q . k for the warp's 16 rows x 64 keys */
        float s[FA_BKV / 8][4];
#pragma unroll
        for (int i = 0; i < FA_BKV / 8; i++) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
        const uint32_t k_base = pf_smem_addr(kst), v_base = pf_smem_addr(vst);
#pragma unroll
        for (int kd = 0; kd < D / 16; kd++) {
            uint32_t a[4];
            pf_ldmatrix_x4(a, q_base + fa_swz<D>(warp * 16 + (lane & 15), kd * 2 + (lane >> 4)));
#pragma unroll
            for (int nj = 0; nj < FA_BKV / 16; nj++) {
                uint32_t b[4];
                pf_ldmatrix_x4(b, k_base + fa_swz<D>(nj * 16 + (lane & 7) + ((lane >> 4) << 3), kd * 2 + ((lane >> 3) & 1)));
                pf_mma_f16(s[2 * nj], a, b[0], b[1]);
                pf_mma_f16(s[2 * nj + 1], a, b[2], b[3]);
            }
        }

        /* mask, scale to the log2 domain, online softmax (rows g and g+8 of the warp, 2 columns per tile) */
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float mx = mrow[hr];
#pragma unroll
            for (int ni = 0; ni < FA_BKV / 8; ni++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int key = kv0 + ni * 8 + 2 * c4 + e;
                    const bool vis = key < S && key <= qpos[hr] && (window <= 0 || qpos[hr] - key < window);
                    float x = vis ? s[ni][2 * hr + e] * scale_log2 : -INFINITY;
                    s[ni][2 * hr + e] = x;
                    mx = fmaxf(mx, x);
                }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float base = mx == -INFINITY ? 0.f : mx; /* a row with nothing visible yet stays at 0 */
            const float corr = exp2f(mrow[hr] - base);
            mrow[hr] = mx;
            float sum = 0.f;
#pragma unroll
            for (int ni = 0; ni < FA_BKV / 8; ni++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float p = exp2f(s[ni][2 * hr + e] - base);
                    s[ni][2 * hr + e] = p;
                    sum += p;
                }
            lrow[hr] = lrow[hr] * corr + sum;
#pragma unroll
            for (int i = 0; i < D / 8; i++) {
                o[i][2 * hr] *= corr;
                o[i][2 * hr + 1] *= corr;
            }
        }

        /* o += p . v */
#pragma unroll
        for (int kk = 0; kk < FA_BKV / 16; kk++) {
            uint32_t a[4] = {fa_pack_h2(s[2 * kk][0], s[2 * kk][1]), fa_pack_h2(s[2 * kk][2], s[2 * kk][3]),
                             fa_pack_h2(s[2 * kk + 1][0], s[2 * kk + 1][1]), fa_pack_h2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int dn = 0; dn < D / 16; dn++) {
                uint32_t b[4];
                pf_ldmatrix_x4_trans(b, v_base + fa_swz<D>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, dn * 2 + (lane >> 4)));
                pf_mma_f16(o[2 * dn], a, b[0], b[1]);
                pf_mma_f16(o[2 * dn + 1], a, b[2], b[3]);
            }
        }
    }
    pf_cp_async_wait<0>();

    /* normalise and store: the row sums were kept per thread over its columns, reduce them over the quad */
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        float l = lrow[hr];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const float inv = l > 0.f ? 1.f / l : 0.f; /* no visible key: 0, as ref_attention */
        const int t = m0 + warp * 16 + g + 8 * hr;
        if (t >= T) continue;
        float *orow = out + ((size_t)t * Hq + h) * D;
#pragma unroll
        for (int i = 0; i < D / 8; i++)
            *(float2 *)(orow + i * 8 + 2 * c4) = make_float2(o[i][2 * hr] * inv, o[i][2 * hr + 1] * inv);
    }
}

template <int D, int NW>
static int fa_launch_nw(const float *q, const __half *k, const __half *v, float *out, int T, int S, int Hq, int Hkv,
                        int pos0, const int32_t *pos0_p, int window, float scale, cudaStream_t st) {
    const int bytes = (16 * NW + 2 * 2 * FA_BKV) * D * 2;
    if (cudaFuncSetAttribute(fa_prefill_kernel<D, NW>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) != cudaSuccess)
        return CUDA_KERR_LAUNCH;
    dim3 grid((T + 16 * NW - 1) / (16 * NW), Hq);
    kl(fa_prefill_kernel<D, NW>, grid, NW * 32, bytes, st, q, k, v, out, T, S, Hq, Hkv, pos0, window,
       scale * 1.4426950408889634f, pos0_p);
    return pf_launched();
}

template <int D>
static int fa_launch(const float *q, const __half *k, const __half *v, float *out, int T, int S, int Hq, int Hkv,
                     int pos0, const int32_t *pos0_p, int window, float scale, cudaStream_t st) {
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
        return CUDA_KERR_LAUNCH;
    /* measured on the H200: D = 256 runs 17% faster with 8 warps (one block of 8 per SM instead of one of 4);
     * D = 128 10% slower (4-warp blocks already fit two per SM), so smaller heads keep 4 */
    if (D >= 256 && optin >= (16 * 8 + 4 * FA_BKV) * D * 2)
        return fa_launch_nw<D, 8>(q, k, v, out, T, S, Hq, Hkv, pos0, pos0_p, window, scale, st);
    return fa_launch_nw<D, 4>(q, k, v, out, T, S, Hq, Hkv, pos0, pos0_p, window, scale, st);
}

static int fa_entry(const float *q, const uint16_t *k, const uint16_t *v, float *out, int T, int S, int Hq, int Hkv,
                    int D, int pos0, const int32_t *pos0_p, int window, float scale, cudaStream_t st) {
    if (!q || !k || !v || !out || T < 1 || S < 1 || Hq < 1 || Hkv < 1 || Hq % Hkv || pos0 < 0 || window < 0 ||
        Hq > 65535 || ((uintptr_t)q & 15) || ((uintptr_t)k & 15) || ((uintptr_t)v & 15) || ((uintptr_t)out & 7) ||
        !(scale > 0.f))
        return CUDA_KERR_ARGS;
    const __half *kh = (const __half *)k, *vh = (const __half *)v;
    switch (D) {
    case 64: return fa_launch<64>(q, kh, vh, out, T, S, Hq, Hkv, pos0, pos0_p, window, scale, st);
    case 128: return fa_launch<128>(q, kh, vh, out, T, S, Hq, Hkv, pos0, pos0_p, window, scale, st);
    case 256: return fa_launch<256>(q, kh, vh, out, T, S, Hq, Hkv, pos0, pos0_p, window, scale, st);
    default: return CUDA_KERR_UNSUPPORTED;
    }
}

extern "C" int cuda_flash_attn_prefill(const float *q, const uint16_t *k, const uint16_t *v, float *out, int T, int S,
                                       int Hq, int Hkv, int D, int pos0, int window, float scale, cudaStream_t st) {
    return fa_entry(q, k, v, out, T, S, Hq, Hkv, D, pos0, NULL, window, scale, st);
}

extern "C" int cuda_flash_attn_prefill_qpos(const float *q, const uint16_t *k, const uint16_t *v, float *out, int T,
                                            int S, int Hq, int Hkv, int D, const int32_t *qpos, int window,
                                            float scale, cudaStream_t st) {
    if (!qpos) return CUDA_KERR_ARGS;
    return fa_entry(q, k, v, out, T, S, Hq, Hkv, D, 0, qpos, window, scale, st);
}
