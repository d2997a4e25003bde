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
            gemv_item_terms<TYPE, R>(cur, xq, ds, u, j, acc);
            if (vn < nb) {
#pragma unroll
                for (int r = 0; r < R; r++) cur[r] = nxt[r];
            }
        }
        gemv_group_end<R, WPR>(P, m, acc, part[par], lane, warp, wig, row0, N);
    }
}

template <enum qtype TYPE, int R, int WPR>
static int launch_stream(const cuda_qmat *W, int nW, const int8_t *xq, const float *ds, float *const *y, float *res,
                         cudaStream_t s) {
    static unsigned cap[64];
    return gemv_launch_persistent(k_gemv_stream<TYPE, R, WPR>, cap, 0, R * (GEMV_MAX_WARPS / WPR), W, nW, xq, ds, y,
                                  res, s);
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
    switch (W->type) {
    case QT_Q4_0: return launch_stream_type<QT_Q4_0>(W, nW, xq, ds, y, res, rows, s);
    case QT_Q4_1: return launch_stream_type<QT_Q4_1>(W, nW, xq, ds, y, res, rows, s);
    case QT_Q5_0: return launch_stream_type<QT_Q5_0>(W, nW, xq, ds, y, res, rows, s);
    case QT_Q8_0: return launch_stream_type<QT_Q8_0>(W, nW, xq, ds, y, res, rows, s);
    case QT_Q4_K: return launch_stream_type<QT_Q4_K>(W, nW, xq, ds, y, res, rows, s);
    case QT_Q5_K: return launch_stream_type<QT_Q5_K>(W, nW, xq, ds, y, res, rows, s);
    case QT_Q6_K: return launch_stream_type<QT_Q6_K>(W, nW, xq, ds, y, res, rows, s);
    default: return CUDA_KERR_UNSUPPORTED;
    }
}
