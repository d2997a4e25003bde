/* gemv_common: what the T = 1 GEMV kernels share (k_gemv_q in gemv.cu, a block per row group;
 * k_gemv_stream in gemv_stream.cu, a persistent grid streaming row groups; k_gemv_lean in gemv_lean.cu, a
 * warp a row group): the matrices of one launch, the
 * warp reduction, the per-unit float term. A row's bits are fixed by
 * these and by which lane sums which units (K alone decides), so the kernels give the same bits.
 * Header-only; included by kernels/gemv*.cu only. */
#ifndef LLM170_BACKENDS_CUDA_GEMV_COMMON_CUH
#define LLM170_BACKENDS_CUDA_GEMV_COMMON_CUH

#include <stdint.h>

#include <type_traits>

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
 * blocks [b[m], b[m + 1]) of the grid's x; bias[m] (NULL: none) is added to each of its outputs before they are
 * written; res (member 0 only) gets y added */
struct gemv_mats {
    const uint8_t *qs[GEMV_GROUP], *hi[GEMV_GROUP], *meta[GEMV_GROUP];
    float *y[GEMV_GROUP];
    const float *bias[GEMV_GROUP];
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
        P.y[i] = y[i], P.N[i] = (int)W[i].N, P.bias[i] = W[i].bias;
        P.b[i + 1] = P.b[i] + (unsigned)((W[i].N + rows_per_block - 1) / rows_per_block);
    }
    return P;
}

/* member m's output bias (NULL: none) */
static __device__ __forceinline__ const float *gemv_bias_of(const gemv_mats &P, unsigned m) {
    return m == 0 ? P.bias[0] : m == 1 ? P.bias[1] : P.bias[2];
}

/* output row r's value: s + b[r] rounded once (cuda_add_bias's operation after the product), or s */
static __device__ __forceinline__ float gemv_biased(const float *__restrict__ b, int r, float s) {
    return b ? __fadd_rn(s, b[r]) : s;
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

/* blocks of KERN (GEMV_MAX_WARPS warps, no shared memory) that fit on the current device at once (occupancy x
 * multiprocessors), per kernel and device; 0 on error. A persistent grid's size: a row's bits never depend on it */
template <auto KERN> static unsigned gemv_capacity(void) {
    static unsigned cap[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 0;
    if (!cap[dev]) {
        int per_sm = 0, sms = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, KERN, 32 * GEMV_MAX_WARPS, 0) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || per_sm < 1)
            return 0;
        cap[dev] = (unsigned)(per_sm * sms);
    }
    return cap[dev];
}

/* f(std::integral_constant<enum qtype, TYPE>{}) for a GEMV weight type (the seven the kernels take), else
 * CUDA_KERR_UNSUPPORTED: the launchers' one switch over the types */
template <typename F> static int gemv_by_type(enum qtype t, F f) {
    switch (t) {
    case QT_Q4_0: return f(std::integral_constant<enum qtype, QT_Q4_0>{});
    case QT_Q4_1: return f(std::integral_constant<enum qtype, QT_Q4_1>{});
    case QT_Q5_0: return f(std::integral_constant<enum qtype, QT_Q5_0>{});
    case QT_Q8_0: return f(std::integral_constant<enum qtype, QT_Q8_0>{});
    case QT_Q4_K: return f(std::integral_constant<enum qtype, QT_Q4_K>{});
    case QT_Q5_K: return f(std::integral_constant<enum qtype, QT_Q5_K>{});
    case QT_Q6_K: return f(std::integral_constant<enum qtype, QT_Q6_K>{});
    default: return CUDA_KERR_UNSUPPORTED;
    }
}

/* The T = 1 plain, residual and grouped forms (no experts) through k_gemv_stream (gemv_stream.cu): the same
 * bits as k_gemv_q's; rows: rows per warp group (2, 4 or 8). CUDA_KERR_* status. */
int gemv_stream_run(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                    int rows, cudaStream_t s);

/* The same forms through gemv_lean.cu, by cuda_gemv_q1_form's numbers: 11 / 12 / 14 k_gemv_lean (one warp a row
 * group of 1 / 2 / 4 rows), 122 / 142 k_gemv_pipe (a persistent grid, 2 / 4 rows a warp, 2 items' loads in
 * flight); others CUDA_KERR_ARGS. */
int gemv_lean_run(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res, int form,
                  cudaStream_t s);

#endif
