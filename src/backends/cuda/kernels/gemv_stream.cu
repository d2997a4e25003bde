/* gemv_stream: the T = 1 GEMV (y[N] = x[K] . W^T, one activation row; plain, residual and grouped forms)
 * as a persistent grid that streams row groups, the same bits as k_gemv_q (gemv.cu).
 *
 * Why: k_gemv_q gives each block one group of rows and one short pass over it (at K = 4096 a lane reads one
 * 16-byte unit of each of its 8 rows, then the block reduces and exits). Its blocks run in waves: every wave
 * starts with a full DRAM latency during which the wave's loads are only being issued, and ends with a
 * reduction while no loads are in flight, so a layer-sized matrix reached 51-65% of the read ceiling on the
 * H200 for the 4-bit types (docs/cuda.md "The GEMV"). Here a block stays resident and takes row groups
 * vb = blockIdx.x, + gridDim.x, ... (the virtual blocks of k_gemv_q's grid, in k_gemv_q's row order), and
 * each lane issues the loads of its next unit (of the next row group, across the boundary) before it
 * computes on the current one: the reduction of a group overlaps the loads of the next.
 *
 * Same bits: a lane of warp w (of the WPR warps a row group has) takes units w*32 + l + i*32*WPR in i order
 * from 0.0f, as in k_gemv_q, with WPR from K alone (4 from K = 4096, else 1); the butterfly (warp_sum_many)
 * and the warps' order are k_gemv_q's. R (rows a group) does not enter a row's arithmetic, so any R gives
 * the one-row launch's bits (cuda-check compares them, form by form).
 *
 * Loads: the unit's raw bytes, decoded after they arrive (gemv_raw): 16 bytes of quants (Q8_0 32), the high
 * bits, and the scale bytes this lane needs. The unit index within a K-quant super-block is u % 8 = lane % 8
 * for every unit a lane takes (32 and 32*WPR are multiples of 8), so each lane reads one fixed part of the
 * scales. Weights are streamed (evict-first); the activations (K int8 + K/32 float2) come from L1. */
#include <stdint.h>

#include "backends/cuda/kernels/gemv_common.cuh"

/* the raw bytes of one unit of one row: q (Q8_0: q and q2) the quants; h the high bits (Q5_0/Q5_K: h.x;
 * Q6_K: h); m the scales: Q4_K/Q5_K the super-block's 16 bytes; Q6_K x = the word holding this unit's two
 * int8 scales, y = the word holding d; Q4_1 x = (d, m); Q4_0/Q5_0/Q8_0 x = d */
template <enum qtype TYPE> struct gemv_raw {
    uint4 q, q2;
    uint2 h;
    uint4 m;
};

template <enum qtype TYPE>
static __device__ __forceinline__ void load_raw(const uint8_t *__restrict__ qs, const uint8_t *__restrict__ hi,
                                                const uint8_t *__restrict__ meta, size_t row, int U, int u, int j,
                                                gemv_raw<TYPE> &r) {
    const size_t unit = row * (size_t)U + (size_t)u;
    if (TYPE == QT_Q8_0) {
        const uint4 *p = (const uint4 *)(qs + unit * 32);
        r.q = __ldcs(p), r.q2 = __ldcs(p + 1);
    } else {
        r.q = __ldcs((const uint4 *)(qs + unit * 16));
    }
    if (TYPE == QT_Q5_0 || TYPE == QT_Q5_K) r.h.x = __ldcs((const unsigned *)(hi + unit * 4));
    if (TYPE == QT_Q6_K) r.h = __ldcs((const uint2 *)(hi + unit * 8));
    const size_t sb = row * (size_t)(U / 8) + (size_t)(u / 8); /* K-quant super-block */
    if (TYPE == QT_Q4_K || TYPE == QT_Q5_K) {
        r.m = __ldcs((const uint4 *)(meta + sb * 16));
    } else if (TYPE == QT_Q6_K) {
        const uint8_t *g = meta + sb * 20; /* 16 int8 scales, f16 d, 2 zero bytes: 4-byte aligned */
        r.m.x = __ldcs((const unsigned *)(g + 4 * (j >> 1)));
        r.m.y = __ldcs((const unsigned *)(g + 16));
    } else if (TYPE == QT_Q4_1) {
        r.m.x = __ldcs((const unsigned *)(meta + unit * 4));
    } else {
        r.m.x = __ldcs((const unsigned short *)(meta + unit * 2));
    }
}

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

/* the raw bytes of unit u of the R rows of row group grp of virtual block vb (rows past a member's N repeat its
 * last row: loaded, never written) */
template <enum qtype TYPE, int R, int GPB>
static __device__ __forceinline__ void load_item(const gemv_mats &P, unsigned vb, int grp, int U, int u, int j,
                                                 gemv_raw<TYPE> *r) {
    const unsigned m = gemv_member(P, vb);
    const uint8_t *qs = m == 0 ? P.qs[0] : m == 1 ? P.qs[1] : P.qs[2];
    const uint8_t *hi = m == 0 ? P.hi[0] : m == 1 ? P.hi[1] : P.hi[2];
    const uint8_t *meta = m == 0 ? P.meta[0] : m == 1 ? P.meta[1] : P.meta[2];
    const int N = m == 0 ? P.N[0] : m == 1 ? P.N[1] : P.N[2];
    const int row0 = (int)((vb - P.b[m]) * GPB + (unsigned)grp) * R;
#pragma unroll
    for (int i = 0; i < R; i++) load_raw<TYPE>(qs, hi, meta, (size_t)min(row0 + i, N - 1), U, u, j, r[i]);
}

/* Block of 4 warps, GPB = 4 / WPR row groups of R rows each per virtual block (k_gemv_q's block); grid: at most
 * as many blocks as fit on the device at once (launch_stream). */
template <enum qtype TYPE, int R, int WPR>
__global__ void __launch_bounds__(32 * GEMV_MAX_WARPS)
    k_gemv_stream(const gemv_mats P, const int8_t *__restrict__ xq, const float2 *__restrict__ ds, int K) {
    pdl_enter();
    constexpr int GPB = GEMV_MAX_WARPS / WPR, NV = pow2_ceil<R>::v;
    __shared__ float part[2][GEMV_MAX_WARPS][R]; /* by the parity of the block's row group: one barrier a group */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, grp = warp / WPR, wig = warp % WPR;
    const int U = K / 32, stride = 32 * WPR, u0 = wig * 32 + lane, j = lane & 7;
    const unsigned nb = P.b[P.n];
    gemv_raw<TYPE> cur[R];
    if (u0 < U) load_item<TYPE, R, GPB>(P, blockIdx.x, grp, U, u0, j, cur);
    int par = 0;
    for (unsigned vb = blockIdx.x; vb < nb; vb += gridDim.x, par ^= 1) {
        const unsigned m = gemv_member(P, vb);
        const int N = m == 0 ? P.N[0] : m == 1 ? P.N[1] : P.N[2];
        const int row0 = (int)((vb - P.b[m]) * GPB + (unsigned)grp) * R;
        float acc[NV];
#pragma unroll
        for (int i = 0; i < NV; i++) acc[i] = 0.0f;
        for (int u = u0; u < U; u += stride) {
            /* the next item's loads first: the next unit of this group, or the first of the next group */
            gemv_raw<TYPE> nxt[R];
            const bool last = u + stride >= U;
            const unsigned vn = last ? vb + gridDim.x : vb;
            if (vn < nb) load_item<TYPE, R, GPB>(P, vn, grp, U, last ? u0 : u + stride, j, nxt);
            const int4 *xp = (const int4 *)(xq + (size_t)u * 32);
            const int4 x0 = __ldg(xp), x1 = __ldg(xp + 1);
            const float2 d = __ldg(ds + u);
#pragma unroll
            for (int r = 0; r < R; r++) {
                const uint32_t q[8] = {cur[r].q.x, cur[r].q.y, cur[r].q.z, cur[r].q.w,
                                       cur[r].q2.x, cur[r].q2.y, cur[r].q2.z, cur[r].q2.w};
                const uint32_t h[2] = {cur[r].h.x, cur[r].h.y};
                uint32_t v[8];
                gemv_unpack_unit(TYPE, q, h, v);
                acc[r] = __fadd_rn(acc[r], gemv_term<TYPE>(v, x0, x1, d, raw_scale<TYPE>(cur[r], j)));
            }
            if (vn < nb) {
#pragma unroll
                for (int r = 0; r < R; r++) cur[r] = nxt[r];
            }
        }
        warp_sum_many<NV>(acc, lane);
        /* lane l holds value idx = l >> (5 - log2 NV); the first lane of each idx reports it (k_gemv_q's rule) */
        const int idx = lane >> (5 - log2_of<NV>::v);
        const bool reporter = (lane & ((32 >> log2_of<NV>::v) - 1)) == 0 && idx < R;
        float *__restrict__ y = m == 0 ? P.y[0] : m == 1 ? P.y[1] : P.y[2];
        float *__restrict__ res = m == 0 ? P.res : NULL;
        if (WPR > 1) {
            if (reporter) part[par][warp][idx] = acc[0];
            __syncthreads(); /* part[par] is written again two groups later, after the next group's barrier */
            if (wig == 0)
                for (int i = lane; i < R; i += 32) {
                    float s = part[par][warp][i];
                    for (int w = 1; w < WPR; w++) s = __fadd_rn(s, part[par][warp + w][i]);
                    if (row0 + i < N) {
                        s = gemv_biased(gemv_bias_of(P, m), row0 + i, s);
                        y[row0 + i] = s;
                        if (res) res[row0 + i] = __fadd_rn(res[row0 + i], s);
                    }
                }
        } else if (reporter && row0 + idx < N) {
            const float v = gemv_biased(gemv_bias_of(P, m), row0 + idx, acc[0]);
            y[row0 + idx] = v;
            if (res) res[row0 + idx] = __fadd_rn(res[row0 + idx], v);
        }
    }
}

template <enum qtype TYPE, int R, int WPR>
static int launch_stream(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                         cudaStream_t s) {
    constexpr int rows_per_block = R * (GEMV_MAX_WARPS / WPR);
    const gemv_mats P = gemv_mats_of(W, nW, y, res, rows_per_block);
    const unsigned cap = gemv_capacity<k_gemv_stream<TYPE, R, WPR>>();
    if (!cap) return CUDA_KERR_LAUNCH;
    const unsigned grid = P.b[nW] < cap ? P.b[nW] : cap;
    kl(k_gemv_stream<TYPE, R, WPR>, grid, 32 * GEMV_MAX_WARPS, 0, s, P, xq, (const float2 *)ds, (int)W->K);
    return launch_status();
}

template <enum qtype TYPE, int WPR>
static int launch_stream_r(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y,
                           float *res, int rows, cudaStream_t s) {
    switch (rows) {
    case 2: return launch_stream<TYPE, 2, WPR>(W, nW, xq, ds, y, res, s);
    case 4: return launch_stream<TYPE, 4, WPR>(W, nW, xq, ds, y, res, s);
    case 8: return launch_stream<TYPE, 8, WPR>(W, nW, xq, ds, y, res, s);
    default: return CUDA_KERR_ARGS;
    }
}

template <enum qtype TYPE>
static int launch_stream_type(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y,
                              float *res, int rows, cudaStream_t s) {
    /* warps a row group from K alone, as k_gemv_q (launch_r): the same lanes sum the same units */
    return W->K / 32 >= 128 ? launch_stream_r<TYPE, 4>(W, nW, xq, ds, y, res, rows, s)
                            : launch_stream_r<TYPE, 1>(W, nW, xq, ds, y, res, rows, s);
}

/* Preconditions are gemv_run's (gemv.cu), which calls this only for T = 1 without experts. */
int gemv_stream_run(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                    int rows, cudaStream_t s) {
    return gemv_by_type(W->type, [&](auto t) { return launch_stream_type<t.value>(W, nW, xq, ds, y, res, rows, s); });
}
