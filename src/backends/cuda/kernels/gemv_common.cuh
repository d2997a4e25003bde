/* gemv_common: what the two T = 1 GEMV kernels share (k_gemv_q in gemv.cu, a block per row group;
 * k_gemv_stream in gemv_stream.cu, a persistent grid streaming row groups): the matrices of one launch, the
 * warp reduction, the per-unit float term. A row's bits are fixed by
 * these and by which lane sums which units (K alone decides), so both kernels give the same bits.
 * Header-only; included by kernels/gemv*.cu only. */
#ifndef LLM170_BACKENDS_CUDA_GEMV_COMMON_CUH
#define LLM170_BACKENDS_CUDA_GEMV_COMMON_CUH

#include <stdint.h>

#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/gemv_unpack.h"

#define GEMV_MAX_WARPS 4
#define GEMV_GROUP CUDA_GEMV_GROUP
static_assert(GEMV_GROUP == 3, "k_gemv_q selects among exactly three members");

/* Sums each of the NV values v[] over the warp's 32 lanes in 31 shuffles for NV = 32 (instead of 5 per
 * value): each step halves the values a lane holds, lanes exchanging the half they give away. Afterwards
 * lane l holds, in v[0], the sum of value l >> (5 - log2 NV) (lanes that agree on those bits hold the
 * same sum). NV: a power of two <= 32. */
template <int NV>
static __device__ __forceinline__ void warp_sum_many(float *v, int lane) {
    int n = NV;
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) {
        if (n > 1) {
            n >>= 1;
            bool upper = lane & off;
#pragma unroll
            for (int i = 0; i < NV / 2; i++)
                if (i < n) {
                    float send = upper ? v[i] : v[i + n], keep = upper ? v[i + n] : v[i];
                    v[i] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, off));
                }
        } else {
            v[0] = __fadd_rn(v[0], __shfl_xor_sync(0xffffffffu, v[0], off));
        }
    }
}

template <int X> struct pow2_ceil { static constexpr int v = X <= 1 ? 1 : X <= 2 ? 2 : X <= 4 ? 4 : X <= 8 ? 8 : X <= 16 ? 16 : 32; };
template <int X> struct log2_of { static constexpr int v = X <= 1 ? 0 : X <= 2 ? 1 : X <= 4 ? 2 : X <= 8 ? 3 : X <= 16 ? 4 : 5; };

/* up to GEMV_GROUP matrices of one type and width K over the same activations, one launch: member m owns
 * blocks [b[m], b[m + 1]) of the grid's x; res (member 0 only) gets y added */
struct gemv_mats {
    const uint8_t *qs[GEMV_GROUP], *hi[GEMV_GROUP], *meta[GEMV_GROUP];
    float *y[GEMV_GROUP];
    float *res;
    int N[GEMV_GROUP];
    unsigned b[GEMV_GROUP + 1];
    int n;
};

/* the launch parameters of nW matrices (one group) whose virtual blocks take rows_per_block rows each */
static inline gemv_mats gemv_mats_of(const cuda_qmat *W, int nW, float *const *y, float *res, int rows_per_block) {
    gemv_mats P = {};
    P.n = nW, P.res = res;
    for (int i = 0; i < nW; i++) {
        P.qs[i] = (const uint8_t *)W[i].qs, P.hi[i] = (const uint8_t *)W[i].hi, P.meta[i] = (const uint8_t *)W[i].meta;
        P.y[i] = y[i], P.N[i] = (int)W[i].N;
        P.b[i + 1] = P.b[i] + (unsigned)((W[i].N + rows_per_block - 1) / rows_per_block);
    }
    return P;
}

/* the member of the launch that virtual block vb (a block's index in the grid of k_gemv_q) belongs to */
static __device__ __forceinline__ unsigned gemv_member(const gemv_mats &P, unsigned vb) {
    return P.n > 1 && vb >= P.b[1] ? (P.n > 2 && vb >= P.b[2] ? 2 : 1) : 0;
}

/* One unit's float term a * (dx * isum) + b * sx: w the unit's eight lane words (gemv_unpack_unit), x0 / x1
 * the activation unit's 32 int8, d = (dx, sx). isum is an exact int32 (eight dp4a); the float operations
 * are __fmul_rn / __fadd_rn so that nvcc never contracts them into FFMA (1/32 rate on the CMP 170HX). */
template <enum qtype TYPE>
static __device__ __forceinline__ float gemv_term(const uint32_t *w, int4 x0, int4 x1, float2 d, const gemv_scale &sc) {
    constexpr bool HAS_B = TYPE == QT_Q4_1 || TYPE == QT_Q4_K || TYPE == QT_Q5_K;
    int lo = __dp4a((int)w[0], x0.x, 0);
    lo = __dp4a((int)w[1], x0.y, lo);
    lo = __dp4a((int)w[2], x0.z, lo);
    lo = __dp4a((int)w[3], x0.w, lo);
    int hi = __dp4a((int)w[4], x1.x, 0);
    hi = __dp4a((int)w[5], x1.y, hi);
    hi = __dp4a((int)w[6], x1.z, hi);
    hi = __dp4a((int)w[7], x1.w, hi);
    const int isum = TYPE == QT_Q6_K ? sc.sc0 * lo + sc.sc1 * hi : lo + hi;
    float p = __fmul_rn(sc.a, __fmul_rn(d.x, (float)isum));
    if (HAS_B) p = __fadd_rn(p, __fmul_rn(sc.b, d.y));
    return p;
}

/* the raw bytes of one unit of one row: q (Q8_0: q and q2) the quants; h the high bits (Q5_0/Q5_K: h.x;
 * Q6_K: h); m the scales: Q4_K/Q5_K the super-block's 16 bytes; Q6_K x = the word holding this unit's two
 * int8 scales, y = the word holding d; Q4_1 x = (d, m); Q4_0/Q5_0/Q8_0 x = d */
template <enum qtype TYPE> struct gemv_raw {
    uint4 q, q2;
    uint2 h;
    uint4 m;
};

/* gemv_unit_scale of the raw scale bytes, the same float operations (so the same a, b, sc0, sc1); j = u % 8 */
template <enum qtype TYPE>
static __device__ __forceinline__ gemv_scale raw_scale(const gemv_raw<TYPE> &r, int j) {
    gemv_scale s;
    s.b = 0.0f;
    s.sc0 = s.sc1 = 1;
    if (TYPE == QT_Q4_K || TYPE == QT_Q5_K) {
        /* bytes 4..15 of the super-block are the 6-bit scales and mins sc[0..11]: sc[j'] is byte j' & 3 of word
         * 1 + (j' >> 2); for j < 4 the scale is sc[j] and the min sc[j + 4], for j >= 4 they are built from
         * sc[j + 4], sc[j - 4] and sc[j] (gemv_unit_scale) */
        const int sh = 8 * (j & 3);
        const int b1 = (int)((r.m.y >> sh) & 255), b2 = (int)((r.m.z >> sh) & 255), b3 = (int)((r.m.w >> sh) & 255);
        int sc, mn;
        if (j < 4) {
            sc = b1 & 63;
            mn = b2 & 63;
        } else {
            sc = (b3 & 15) | ((b1 >> 2) & 0x30);
            mn = (b3 >> 4) | ((b2 >> 2) & 0x30);
        }
        s.a = gemv_f16((uint16_t)(r.m.x & 0xffff)) * (float)sc;
        s.b = -(gemv_f16((uint16_t)(r.m.x >> 16)) * (float)mn);
    } else if (TYPE == QT_Q6_K) {
        const int sh = 16 * (j & 1);
        s.a = gemv_f16((uint16_t)(r.m.y & 0xffff));
        s.sc0 = (int)(int8_t)(r.m.x >> sh);
        s.sc1 = (int)(int8_t)(r.m.x >> (sh + 8));
    } else {
        s.a = gemv_f16((uint16_t)(r.m.x & 0xffff));
        if (TYPE == QT_Q4_1) s.b = gemv_f16((uint16_t)(r.m.x >> 16));
    }
    return s;
}

/* One unit u of R rows (their raw bytes c[]) against the activations: acc[r] += the unit's term, in the
 * streaming kernels' order; j = u % 8 */
template <enum qtype TYPE, int R>
static __device__ __forceinline__ void gemv_item_terms(const gemv_raw<TYPE> *c, const int8_t *__restrict__ xq,
                                                       const float2 *__restrict__ ds, int u, int j, float *acc) {
    const int4 *xp = (const int4 *)(xq + (size_t)u * 32);
    const int4 x0 = __ldg(xp), x1 = __ldg(xp + 1);
    const float2 d = __ldg(ds + u);
#pragma unroll
    for (int r = 0; r < R; r++) {
        const uint32_t q[8] = {c[r].q.x, c[r].q.y, c[r].q.z, c[r].q.w, c[r].q2.x, c[r].q2.y, c[r].q2.z, c[r].q2.w};
        const uint32_t h[2] = {c[r].h.x, c[r].h.y};
        uint32_t v[8];
        gemv_unpack_unit(TYPE, q, h, v);
        acc[r] = __fadd_rn(acc[r], gemv_term<TYPE>(v, x0, x1, d, raw_scale<TYPE>(c[r], j)));
    }
}

/* The end of a row group in the streaming T = 1 kernel (k_gemv_stream): acc[] (a lane's sums
 * of the group's R rows) through the butterfly, then, with WPR warps a group, the warps' sums in warp order
 * through part (this group's parity half of the block's [2][4][R]; one barrier a group: a half is written
 * again two groups later, after the next group's barrier), and row0 + i < N written to member m's y (and
 * added to res for member 0) -- k_gemv_q's order, so the same bits. */
template <int R, int WPR>
static __device__ __forceinline__ void gemv_group_end(const gemv_mats &P, unsigned m, float *acc,
                                                      float (*part)[R], int lane, int warp, int wig, int row0, int N) {
    constexpr int NV = pow2_ceil<R>::v;
    warp_sum_many<NV>(acc, lane);
    /* lane l holds value idx = l >> (5 - log2 NV); the first lane of each idx reports it (k_gemv_q's rule) */
    const int idx = lane >> (5 - log2_of<NV>::v);
    const bool reporter = (lane & ((32 >> log2_of<NV>::v) - 1)) == 0 && idx < R;
    float *__restrict__ y = m == 0 ? P.y[0] : m == 1 ? P.y[1] : P.y[2];
    float *__restrict__ res = m == 0 ? P.res : NULL;
    if (WPR > 1) {
        if (reporter) part[warp][idx] = acc[0];
        __syncthreads();
        if (wig == 0)
            for (int i = lane; i < R; i += 32) {
                float s = part[warp][i];
                for (int w = 1; w < WPR; w++) s = __fadd_rn(s, part[warp + w][i]);
                if (row0 + i < N) {
                    y[row0 + i] = s;
                    if (res) res[row0 + i] = __fadd_rn(res[row0 + i], s);
                }
            }
    } else if (reporter && row0 + idx < N) {
        y[row0 + idx] = acc[0];
        if (res) res[row0 + idx] = __fadd_rn(res[row0 + idx], acc[0]);
    }
}

/* the persistent T = 1 kernel's signature (k_gemv_stream) */
typedef void (*gemv_persistent_fn)(const gemv_mats, const int8_t *, const float2 *, int);

/* Launches such a kernel k (4 warps a block, smem bytes of dynamic shared memory, virtual blocks of
 * rows_per_block rows): as many blocks as fit on the device at once, at most one per virtual block. cap:
 * the instantiation's per-device cache of that count (64 entries, zeroed). CUDA_KERR_* status. */
static inline int gemv_launch_persistent(gemv_persistent_fn k, unsigned *cap, size_t smem, int rows_per_block,
                                         const cuda_qmat *W, int nW, const int8_t *xq, const float *ds,
                                         float *const *y, float *res, cudaStream_t s) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return CUDA_KERR_LAUNCH;
    if (!cap[dev]) {
        int per_sm = 0, sms = 0;
        if ((smem > 0 &&
             cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 32 * GEMV_MAX_WARPS, smem) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || per_sm < 1)
            return CUDA_KERR_LAUNCH;
        cap[dev] = (unsigned)(per_sm * sms);
    }
    const gemv_mats P = gemv_mats_of(W, nW, y, res, rows_per_block);
    const unsigned grid = P.b[nW] < cap[dev] ? P.b[nW] : cap[dev];
    kl(k, grid, 32 * GEMV_MAX_WARPS, smem, s, P, xq, (const float2 *)ds, (int)W->K);
    return launch_status();
}

/* The T = 1 plain, residual and grouped forms (no experts) through k_gemv_stream (gemv_stream.cu): the same
 * bits as k_gemv_q's; rows: rows per warp group (2, 4 or 8). CUDA_KERR_* status. */
int gemv_stream_run(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                    int rows, cudaStream_t s);


#endif
